"""The model description: bodies, joints, frames and gravity, as plain frozen records.

Units SI. Each body frame sits at its joint's attach point (No writes the body equations
about P_j); ``com`` and ``inertia`` (about the CoM) are in body axes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..spatial import Array, rpy_to_R

WORLD = "world"


@dataclass(frozen=True)
class Origin:
    """A pose: translation xyz [m] and URDF roll-pitch-yaw rpy [rad] in the parent frame."""

    xyz: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def R(self) -> Array:
        return rpy_to_R(np.asarray(self.rpy, dtype=float))

    @property
    def p(self) -> Array:
        return np.asarray(self.xyz, dtype=float)


@dataclass(frozen=True)
class Spring:
    """Joint spring-damper: tau = -k (q - q0) - d qd [N m or N]; PE = 1/2 k (q - q0)^2 (MBS Energy Testing
    Eq. 2). Only for 1-DoF joints."""

    k: float = 0.0
    d: float = 0.0
    q0: float = 0.0


@dataclass(frozen=True)
class Joint:
    """Joint from the parent body's frame (through ``origin``) to this body's frame."""

    name: str
    type: str
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    origin: Origin = field(default_factory=Origin)
    spring: Spring | None = None
    actuated: bool | None = None

    @property
    def is_actuated(self) -> bool:
        """Has actuator inputs: as set, else every joint but a free one (a floating base is
        driven by forces on bodies, not by a joint motor)."""
        return self.type != "free" if self.actuated is None else self.actuated


@dataclass(frozen=True)
class Wheel:
    """A reaction wheel (MBS Momentum/Energy Testing): a symmetric rotor spinning about ``axis`` (unit, body
    axes) through ``position`` [m] with spin inertia ``inertia`` I_w [kg m^2], driven by a motor
    torque input ``<name>.torque``. Its mass and transverse inertia belong to the host body's
    mass properties; I_w about the spin axis is the wheel's own. h = g I_w thetadot."""

    name: str
    axis: tuple[float, float, float]
    inertia: float
    position: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class Body:
    """A rigid body: mass [kg], CoM [m] and inertia about the CoM [kg m^2] in body axes,
    named frames (endpoints) fixed on it, reaction wheels carried by it."""

    name: str
    parent: str
    joint: Joint
    mass: float = 0.0
    com: tuple[float, float, float] = (0.0, 0.0, 0.0)
    inertia: tuple[tuple[float, float, float], ...] = ((0.0, 0.0, 0.0),) * 3
    frames: dict[str, Origin] = field(default_factory=dict)
    wheels: tuple[Wheel, ...] = ()


@dataclass(frozen=True)
class Anchor:
    """A point [m] fixed on a body (body axes), or on the world (world axes)."""

    body: str
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class SpringDamper:
    """Point-to-point linear spring-damper between anchors a and b: tension
    k (l - l0) + d ldot [N] along the line; PE = 1/2 k (l - l0)^2."""

    name: str
    a: Anchor
    b: Anchor
    k: float = 0.0
    d: float = 0.0
    l0: float = 0.0


@dataclass(frozen=True)
class Thruster:
    """Force of magnitude given by input ``<name>.thrust`` [N] along the body-fixed unit
    ``direction`` at ``point`` (body axes)."""

    name: str
    body: str
    point: tuple[float, float, float]
    direction: tuple[float, float, float]


@dataclass(frozen=True)
class BodyWrench:
    """External force and torque on a body from inputs ``<name>.f[1..3]`` [N] (applied at
    ``point``, body axes) and ``<name>.torque[1..3]`` [N m], both in ``axes`` ("world" or "body")."""

    name: str
    body: str
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    axes: str = "world"


@dataclass(frozen=True)
class LoopSide:
    """One side of a cut joint: the cut-joint frame fixed on ``body`` ("world" for the inertial
    frame), with origin ``point`` [m] and axes rotated by URDF roll-pitch-yaw ``rpy`` [rad], both
    in body axes; or the named body frame ``frame`` (its origin and axes; ``body`` then only
    repeats its host)."""

    body: str = WORLD
    point: tuple[float, float, float] = (0.0, 0.0, 0.0)
    rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)
    frame: str | None = None


@dataclass(frozen=True)
class Loop:
    """A loop-closure (cut) joint between frames a and b of two bodies, Phi(q) = 0:

    ball: the origins coincide (3 rows); revolute: the origins coincide and ``axis`` (unit,
    components in frame a and, the same components, in frame b) stays common (5 rows); prismatic:
    the frames keep a common orientation and origin b stays on the line through origin a along
    ``axis`` (frame a axes) (5 rows); planar: origin b stays in the plane through origin a normal
    to ``axis`` and the two ``axis`` vectors stay parallel (3 rows). ``independent`` names the
    joints whose values are held when the loop is assembled and which are the independent
    coordinates u when the loop is reduced by coordinate partitioning (PyMbs Background)."""

    name: str
    type: str
    a: LoopSide
    b: LoopSide
    axis: tuple[float, float, float] = (0.0, 0.0, 1.0)
    independent: tuple[str, ...] = ()


@dataclass(frozen=True)
class Coupling:
    """A joint coupling (URDF ``<mimic>``): the follower joint's coordinate is
    q_f = multiplier q_l + offset [rad or m] in the leader's coordinate q_l (1-DoF joints both).
    A holonomic constraint, closed by the loop machinery (mbsfmu/engine/dynamics/closed_loops.py)
    with the leader as the independent coordinate; the follower has no actuator of its own."""

    follower: str
    leader: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class NamedPose:
    """A named joint configuration (MoveIt's SRDF ``group_state``): values q by joint name [rad or m;
    nq per joint, quaternions (w, x, y, z) last], the joints not named keeping their initial values;
    ``group``: the SRDF planning group it was given for ("" in a model file)."""

    q: dict[str, tuple[float, ...]]
    group: str = ""


@dataclass(frozen=True)
class ModelSpec:
    """Everything a model file says: bodies in any order, gravity [m/s^2] in world axes,
    initial joint values by joint (or wheel) name, named joint configurations (``named_poses``),
    force elements, loop-closure joints, joint couplings (URDF mimic joints); ``notes``: the
    reader's remarks (e.g. URDF elements read but not modelled, inertia repairs)."""

    name: str
    bodies: tuple[Body, ...]
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    initial_q: dict[str, tuple[float, ...]] = field(default_factory=dict)
    initial_qd: dict[str, tuple[float, ...]] = field(default_factory=dict)
    named_poses: dict[str, NamedPose] = field(default_factory=dict)
    forces: tuple[SpringDamper | Thruster | BodyWrench, ...] = ()
    loops: tuple[Loop, ...] = ()
    couplings: tuple[Coupling, ...] = ()
    notes: tuple[str, ...] = ()  # what the reader did or left out that a user should know (one line each)
