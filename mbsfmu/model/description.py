"""The model description: bodies, joints, frames and gravity, as plain frozen records.

Units SI. Each body frame sits at its joint's attach point (seed 003 writes the body equations
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
    """Joint spring-damper: tau = -k (q - q0) - d qd [N m or N]; PE = 1/2 k (q - q0)^2 (seed 002
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
    actuated: bool = True


@dataclass(frozen=True)
class Body:
    """A rigid body: mass [kg], CoM [m] and inertia about the CoM [kg m^2] in body axes,
    named frames (endpoints) fixed on it."""
    name: str
    parent: str
    joint: Joint
    mass: float = 0.0
    com: tuple[float, float, float] = (0.0, 0.0, 0.0)
    inertia: tuple[tuple[float, float, float], ...] = ((0.0, 0.0, 0.0),) * 3
    frames: dict[str, Origin] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelSpec:
    """Everything a model file says: bodies in any order, gravity [m/s^2] in world axes,
    initial joint values by joint name."""
    name: str
    bodies: tuple[Body, ...]
    gravity: tuple[float, float, float] = (0.0, 0.0, -9.81)
    initial_q: dict[str, tuple[float, ...]] = field(default_factory=dict)
    initial_qd: dict[str, tuple[float, ...]] = field(default_factory=dict)
