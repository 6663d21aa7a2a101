"""ROS 2 message contents of one simulator state, as plain Python values: the one place both the
ROS 2 node (``mbsfmu_ros``, rclpy) and the MCAP recorder (``mbsfmu.scenario.mcap``, mcap-ros2-support,
no ROS) take their message fields from, so a recording and a live node carry the same content
for the same state (docs/reference/ros-interface.md). No rclpy here.

Each content is a dict shaped like the ROS message (field name -> value; nested messages as dicts,
message arrays as lists of dicts), which is what ``mcap_ros2.writer`` encodes and what
``mbsfmu_ros.node`` copies into rclpy messages field by field.

Joint states follow the ROS message definitions:

- ``sensor_msgs/JointState`` (/joint_states) holds "revolute or prismatic" joints, each with one
  position [rad or m], velocity [rad/s or m/s] and effort [N m or N] (the message's own
  definition). So it carries every 1-DoF joint (revolute, prismatic, reaction wheel) in the
  model's tree order, named like the joint (a wheel like the wheel: spin angle and rate relative
  to its host). Fixed joints have no entry.
- ``sensor_msgs/MultiDOFJointState`` (/mbs/multi_dof_joint_states, only for models with
  spherical or free joints) holds the spherical and free joints, each as the joint's own motion:
  ``transforms[k]`` = child body frame in the joint frame (translation [m]: the free joint's
  q[0:3], parent axes, zero for a spherical joint; rotation: the joint quaternion, message order
  x, y, z, w); ``twist[k]`` = the joint rates qd in child (body) axes (linear: velocity of the
  body origin [m/s], zero for a spherical joint; angular: omega [rad/s]); ``wrench[k]`` = the
  actuator forces tau of its DoFs (force [N], torque [N m], child axes, same order as twist).
  Joint pose and rate conventions: ``mbsfmu.engine.joints`` (RBDA Table 4.1), Pinocchio's velocity
  order for the free joint.
- effort (and wrench) is the applied actuator input per DoF, tau = ``Simulator.forces.
  joint_forces(u)`` (joint actuators ``<joint>.tau``, wheel motors ``<wheel>.torque``): exactly
  0.0 for a DoF no actuator drives, never a constraint or spring force. Thrusters and body
  wrenches act on bodies, not joints, and appear in no effort.

Every value is the engine's float64 copied unchanged, so ``state_from_joint_state`` gives q and
qd back bit for bit.

Momentum, centre of mass and energy are the engine's own (``mbsfmu.sim.outputs.engine_invariants``:
the spatial momenta of RBDA Sec. 2.13 summed about the system CM, *MBS Momentum Testing* Eqs. 9
and 10; PE of *MBS Energy Testing* Eq. 2; KE = 1/2 qd^T M qd with M from CRBA).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..engine.joints import FREE, SPHERICAL
from ..engine.kinematics import RelativePoses
from ..engine.spatial import R_to_quat
from ..errors import InputError

Array = NDArray[np.float64]

# ---- topics and types (absolute names; a launch file or a test remaps them) -------------------
CLOCK = "/clock"
JOINT_STATES = "/joint_states"
MULTI_DOF_JOINT_STATES = "/mbs/multi_dof_joint_states"
CENTROIDAL_MOMENTUM = "/mbs/centroidal_momentum"
COM = "/mbs/com"
COM_VELOCITY = "/mbs/com_velocity"
ENERGY = "/mbs/energy"
TF = "/tf"
TF_STATIC = "/tf_static"  # the named frames on their bodies (URDF links lumped into a body): fixed
ROBOT_DESCRIPTION = "/robot_description"  # the model's URDF (std_msgs/String), once, transient local
STATE_TOPICS = {  # topic -> message type of every state output, in publishing order
    CLOCK: "rosgraph_msgs/msg/Clock",
    JOINT_STATES: "sensor_msgs/msg/JointState",
    MULTI_DOF_JOINT_STATES: "sensor_msgs/msg/MultiDOFJointState",
    CENTROIDAL_MOMENTUM: "geometry_msgs/msg/WrenchStamped",
    COM: "geometry_msgs/msg/PointStamped",
    COM_VELOCITY: "geometry_msgs/msg/Vector3Stamped",
    ENERGY: "std_msgs/msg/Float64MultiArray",
    TF: "tf2_msgs/msg/TFMessage",
}
INVARIANT_TOPICS = (CENTROIDAL_MOMENTUM, COM, COM_VELOCITY, ENERGY, TF)  # every invariants_decimation-th cycle
LATCHED_TOPICS = {  # topic -> type of what is published once (transient local: late subscribers get it)
    ROBOT_DESCRIPTION: "std_msgs/msg/String",
    TF_STATIC: "tf2_msgs/msg/TFMessage",
}
# history depths the node's publishers offer (all reliable, keep last): the latched topics keep their
# one message, transient local; the state topics are volatile; the MCAP recorder writes the same QoS
LATCHED_DEPTH = 1
STATE_DEPTH = 10
TF_DEPTH = 100

ENERGY_LABELS = ("KE", "PE", "E", "W_in", "W_diss")
ENERGY_LAYOUT_LABEL = ",".join(ENERGY_LABELS)  # Float64MultiArray layout.dim[0].label of /mbs/energy
NS = 1_000_000_000
WORLD = "world"  # the root bodies' parent in /tf (renamed to frame_id)


# ---- time ----------------------------------------------------------------------------------
def time_to_ns(t: float) -> int:
    """Sim time t [s] -> integer nanoseconds (rounded to nearest)."""
    return int(round(float(t) * NS))


def ns_to_stamp(ns: int) -> tuple[int, int]:
    """Integer nanoseconds -> builtin_interfaces/Time (sec, nanosec)."""
    return int(ns // NS), int(ns % NS)


def stamp_to_ns(sec: int, nanosec: int) -> int:
    return int(sec) * NS + int(nanosec)


def stamp(ns: int) -> dict:
    """builtin_interfaces/Time of ns >= 0 nanoseconds."""
    sec, nanosec = ns_to_stamp(ns)
    return {"sec": sec, "nanosec": nanosec}


def header(ns: int, frame_id: str) -> dict:
    """std_msgs/Header."""
    return {"stamp": stamp(ns), "frame_id": frame_id}


# ---- joint states --------------------------------------------------------------------------
@dataclass(frozen=True)
class JointLayout:
    """Where each joint's values sit in q (nq,) and qd, tau (nv,).

    names, q_index, v_index: the 1-DoF joints of /joint_states (entry e has q[q_index[e]],
    qd[v_index[e]], tau[v_index[e]]); multi_names, multi_q, multi_v, multi_free: the spherical and
    free joints of /mbs/multi_dof_joint_states (first index of each in q and qd, True for free)."""

    names: tuple[str, ...]
    q_index: np.ndarray
    v_index: np.ndarray
    multi_names: tuple[str, ...]
    multi_q: tuple[int, ...]
    multi_v: tuple[int, ...]
    multi_free: tuple[bool, ...]
    nq: int
    nv: int


def joint_layout(model) -> JointLayout:
    """The joint-state layout of a Model (see the module docstring)."""
    names, qi, vi = [], [], []
    multi, mq, mv, mfree = [], [], [], []
    for name in model.joint_names:
        jtype = int(model.tree.jtype[model.joint_index[name]])
        qs, vs = model.q_slice(name), model.v_slice(name)
        if jtype in (SPHERICAL, FREE):
            multi.append(name)
            mq.append(qs.start)
            mv.append(vs.start)
            mfree.append(jtype == FREE)
        elif vs.stop - vs.start == 1:
            names.append(name)
            qi.append(qs.start)
            vi.append(vs.start)
    return JointLayout(
        tuple(names),
        np.array(qi, dtype=np.int64),
        np.array(vi, dtype=np.int64),
        tuple(multi),
        tuple(mq),
        tuple(mv),
        tuple(mfree),
        model.nq,
        model.nv,
    )


def state_topics(layout: JointLayout) -> dict[str, str]:
    """topic -> type of the state outputs for this model: /mbs/multi_dof_joint_states only when
    it has a spherical or free joint."""
    return {t: ty for t, ty in STATE_TOPICS.items() if t != MULTI_DOF_JOINT_STATES or layout.multi_names}


def joint_state(layout: JointLayout, q: Array, qd: Array, tau: Array, ns: int, frame_id: str) -> dict:
    """sensor_msgs/JointState of the 1-DoF joints: position q [rad or m], velocity qd [rad/s or
    m/s], effort = the applied actuator force tau [N m or N] (0.0 where no actuator acts)."""
    q, qd, tau = (np.asarray(x, dtype=np.float64) for x in (q, qd, tau))
    return {
        "header": header(ns, frame_id),
        "name": list(layout.names),
        "position": q[layout.q_index].tolist(),
        "velocity": qd[layout.v_index].tolist(),
        "effort": tau[layout.v_index].tolist(),
    }


def _xyz(v) -> dict:
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


def multi_dof_joint_state(layout: JointLayout, q: Array, qd: Array, tau: Array, ns: int, frame_id: str) -> dict:
    """sensor_msgs/MultiDOFJointState of the spherical and free joints (module docstring): per
    joint the transform child-in-joint frame, the twist qd and the wrench tau, child axes."""
    q, qd, tau = (np.asarray(x, dtype=np.float64) for x in (q, qd, tau))
    zero = {"x": 0.0, "y": 0.0, "z": 0.0}
    transforms, twists, wrenches = [], [], []
    for iq, iv, free in zip(layout.multi_q, layout.multi_v, layout.multi_free):
        if free:  # q = (x, y, z, qw, qx, qy, qz), qd = (v, omega), tau = (force, torque)
            xyz, quat = _xyz(q[iq : iq + 3]), q[iq + 3 : iq + 7]
            lin, ang = _xyz(qd[iv : iv + 3]), _xyz(qd[iv + 3 : iv + 6])
            force, torque = _xyz(tau[iv : iv + 3]), _xyz(tau[iv + 3 : iv + 6])
        else:  # q = (qw, qx, qy, qz), qd = omega, tau = torque
            xyz, quat, lin, ang, force, torque = (
                zero,
                q[iq : iq + 4],
                zero,
                _xyz(qd[iv : iv + 3]),
                zero,
                _xyz(tau[iv : iv + 3]),
            )
        w, x, y, z = (float(c) for c in quat)
        transforms.append({"translation": dict(xyz), "rotation": {"x": x, "y": y, "z": z, "w": w}})
        twists.append({"linear": dict(lin), "angular": ang})
        wrenches.append({"force": dict(force), "torque": torque})
    return {
        "header": header(ns, frame_id),
        "joint_names": list(layout.multi_names),
        "transforms": transforms,
        "twist": twists,
        "wrench": wrenches,
    }


def state_from_joint_state(
    layout: JointLayout,
    names: Sequence[str],
    position: Sequence[float],
    velocity: Sequence[float],
    multi: dict | None = None,
) -> tuple[Array, Array]:
    """(q (nq,), qd (nv,)) from a /joint_states message's name, position, velocity (any entry
    order) and, for a model with spherical or free joints, the /mbs/multi_dof_joint_states
    content of the same state (``multi``: a dict as ``multi_dof_joint_state`` returns, or a
    message with those fields). InputError names what is missing."""
    if len(position) != len(names) or len(velocity) != len(names):
        raise InputError(f"joint state has {len(names)} names, {len(position)} positions, {len(velocity)} velocities")
    names_in_order = tuple(names[: len(layout.names)]) == layout.names  # as the node publishes them
    where = {} if names_in_order else {n: k for k, n in enumerate(names)}
    missing = [] if names_in_order else [n for n in layout.names if n not in where]
    if layout.multi_names and multi is None:
        missing += list(layout.multi_names)
    get = dict.__getitem__ if isinstance(multi, dict) else getattr
    mwhere = {} if multi is None else {n: k for k, n in enumerate(get(multi, "joint_names"))}
    if multi is not None:
        missing += [n for n in layout.multi_names if n not in mwhere]
    if missing:
        raise InputError(f"joint state lacks {', '.join(missing)}")
    q, qd = np.full(layout.nq, math.nan), np.full(layout.nv, math.nan)
    if layout.names:
        order = slice(None, len(layout.names)) if names_in_order else [where[n] for n in layout.names]
        q[layout.q_index] = np.asarray(position, dtype=np.float64)[order]
        qd[layout.v_index] = np.asarray(velocity, dtype=np.float64)[order]
    for n, iq, iv, free in zip(layout.multi_names, layout.multi_q, layout.multi_v, layout.multi_free):
        k = mwhere[n]
        tr, tw = get(multi, "transforms")[k], get(multi, "twist")[k]
        rot = get(tr, "rotation")
        quat = [get(rot, c) for c in "wxyz"]

        def vec(m, key):
            return [get(get(m, key), c) for c in "xyz"]

        if free:
            q[iq : iq + 7] = vec(tr, "translation") + quat
            qd[iv : iv + 6] = vec(tw, "linear") + vec(tw, "angular")
        else:
            q[iq : iq + 4] = quat
            qd[iv : iv + 3] = vec(tw, "angular")
    return q, qd


# ---- momentum, centre of mass, energy, transforms -------------------------------------------
def centroidal_momentum(inv, ns: int, frame_id: str) -> dict:
    """geometry_msgs/WrenchStamped: force = P_sys = M Rdot, total linear momentum, world axes
    [N s]; torque = H_sys, angular momentum about the system CM, world axes, wheels included
    (*MBS Momentum Testing* Eq. 10) [N m s]. (p_sys, the momentum about the CM, Eq. 9, is 0 by
    definition: the node's diagnostics check it.)"""
    return {"header": header(ns, frame_id), "wrench": {"force": _xyz(inv.P_sys), "torque": _xyz(inv.H_sys)}}


def com(inv, ns: int, frame_id: str) -> dict:
    """geometry_msgs/PointStamped: R, the system CM, world axes [m]."""
    return {"header": header(ns, frame_id), "point": _xyz(inv.R)}


def com_velocity(inv, ns: int, frame_id: str) -> dict:
    """geometry_msgs/Vector3Stamped: Rdot, the system CM velocity, world axes [m/s]."""
    return {"header": header(ns, frame_id), "vector": _xyz(inv.Rdot)}


def energy(inv, work: tuple[float, float]) -> dict:
    """std_msgs/Float64MultiArray, data in ENERGY_LABELS order: KE, PE (*MBS Energy Testing*
    Eq. 2: springs + gravity), E = KE + PE, W_in (work of the inputs since the start or reset),
    W_diss (work of the dampers, <= 0) [J]. One dimension: size = stride = 5 (std_msgs/
    MultiArrayLayout: dim[0].stride is the total number of elements)."""
    W_in, W_diss = work
    n = len(ENERGY_LABELS)
    return {
        "layout": {"dim": [{"label": ENERGY_LAYOUT_LABEL, "size": n, "stride": n}], "data_offset": 0},
        "data": [float(inv.KE), float(inv.PE), float(inv.E), float(W_in), float(W_diss)],
    }


def transform_frames(model) -> list[tuple[str, str]]:
    """[(parent frame, child frame)] of every body, in ``transforms`` order: its parent body's
    frame (WORLD for roots) and its own, each named like its body."""
    return [
        (WORLD if int(model.L[i]) == 0 else model.body_names[int(model.L[i]) - 1], model.body_names[i - 1])
        for i in range(1, model.N + 1)
    ]


def relative_poses(model, R: Array, p: Array) -> tuple[Array, Array]:
    """(translation (N, 3) [m], rotation quaternions (N, 4) x, y, z, w) of every body relative to
    its parent body, in ``transform_frames`` order, from the world poses R (N+1, 3, 3), p (N+1, 3)
    of the bodies (entry 0 the world): ``kinematics.RelativePoses``."""
    poses = RelativePoses(model)(R, p)
    return poses[:, :3], poses[:, 3:]


def transforms(model, kin) -> list[tuple[str, str, list[float], list[float]]]:
    """[(parent frame, child frame, translation [m], rotation quaternion x, y, z, w)] of every
    body relative to its parent body (WORLD for roots; ``transform_frames``, ``relative_poses``)."""
    xyz, quat = relative_poses(model, kin.R, kin.p)
    return [
        (parent, child, t, r) for (parent, child), t, r in zip(transform_frames(model), xyz.tolist(), quat.tolist())
    ]


def tf_static(model, ns: int) -> dict:
    """tf2_msgs/TFMessage of the fixed transforms: every named frame relative to its body (the
    links a URDF welds by fixed joints, lumped into one body, and the model's own frames), but a
    body's frame of its own name at the body origin, which /tf already names."""
    out = []
    for name, (i, fr) in model.frames.items():
        body = model.body_names[i - 1]
        if name == body:
            continue
        w, x, y, z = R_to_quat(fr.R)
        out.append(
            {
                "header": header(ns, body),
                "child_frame_id": name,
                "transform": {
                    "translation": dict(zip("xyz", (float(v) for v in fr.p))),
                    "rotation": {"x": float(x), "y": float(y), "z": float(z), "w": float(w)},
                },
            }
        )
    return {"transforms": out}


def robot_description_message(text: str) -> dict:
    """std_msgs/String of the robot description (``mbsfmu.io.urdf_export.robot_description``)."""
    return {"data": text}


def tf(model, kin, ns: int, frame_id: str) -> dict:
    """tf2_msgs/TFMessage: every body relative to its parent (``transforms``), roots relative to
    frame_id."""
    return {
        "transforms": [
            {
                "header": header(ns, frame_id if parent == WORLD else parent),
                "child_frame_id": child,
                "transform": {"translation": dict(zip("xyz", xyz)), "rotation": dict(zip("xyzw", quat))},
            }
            for parent, child, xyz, quat in transforms(model, kin)
        ]
    }


# ---- everything of one state -----------------------------------------------------------------
def state_messages(
    sim, layout: JointLayout, ns: int, frame_id: str = WORLD, invariants: bool = True, with_tf: bool = True
) -> dict[str, dict]:
    """The contents of every state topic (``state_topics(layout)``) for the simulator's current
    state, stamped ns [ns]: /clock, the joint states and, with ``invariants``, momentum, CM, energy
    and (``with_tf``) /tf. The node skips the invariants on cycles between its
    ``invariants_decimation``, and /tf where tf2_msgs does not import."""
    q, qd = sim.q, sim.qd
    tau = sim.forces.joint_forces(sim.u)
    out = {CLOCK: {"clock": stamp(ns)}, JOINT_STATES: joint_state(layout, q, qd, tau, ns, frame_id)}
    if layout.multi_names:
        out[MULTI_DOF_JOINT_STATES] = multi_dof_joint_state(layout, q, qd, tau, ns, frame_id)
    if invariants:
        inv = sim.invariants()
        out[CENTROIDAL_MOMENTUM] = centroidal_momentum(inv, ns, frame_id)
        out[COM] = com(inv, ns, frame_id)
        out[COM_VELOCITY] = com_velocity(inv, ns, frame_id)
        out[ENERGY] = energy(inv, sim.work)
        if with_tf:
            out[TF] = tf(sim.model, sim.kinematics(), ns, frame_id)
    return out
