"""Joint models: configuration size nq, velocity size nv, joint transform, motion subspace.

Each joint connects a parent frame (the joint frame, fixed in the parent body) to the child body
frame. The joint transform ``XJ(q)`` and the motion subspace ``S`` follow RBDA Table 4.1; every
subspace here is constant in the child frame, so the velocity-product term cJ is zero.

| type      | q                                   | qd                                    |
|-----------|-------------------------------------|---------------------------------------|
| fixed     | -                                   | -                                     |
| revolute  | angle [rad] about axis              | rate [rad/s]                          |
| prismatic | displacement [m] along axis         | rate [m/s]                            |
| spherical | unit quaternion (w, x, y, z)        | angular velocity, child axes [rad/s]  |
| free      | position of child origin in parent  | linear velocity of the child origin,  |
|           | axes [m], unit quaternion (w,x,y,z) | child axes [m/s]; angular velocity,   |
|           |                                     | child axes [rad/s]                    |

The free joint's velocity order (linear, angular) is Pinocchio's, so results compare directly.
A quaternion stands for its direction: the joint's rotation is that of q / |q| (spatial.quat_to_R),
so the dynamics at a quaternion of any nonzero norm (RK4's stages, where |q| != 1) are those at the
unit one, as in MuJoCo's mj_kinematics and the C core.
"""

from __future__ import annotations

import numpy as np

from .spatial import Array, quat_exp, quat_mul, quat_rate, quat_to_R, rot_axis

FIXED, REVOLUTE, PRISMATIC, SPHERICAL, FREE = range(5)
JOINT_TYPES = {"fixed": FIXED, "revolute": REVOLUTE, "prismatic": PRISMATIC, "spherical": SPHERICAL, "free": FREE}
NQ = {FIXED: 0, REVOLUTE: 1, PRISMATIC: 1, SPHERICAL: 4, FREE: 7}
NV = {FIXED: 0, REVOLUTE: 1, PRISMATIC: 1, SPHERICAL: 3, FREE: 6}


def motion_subspace(jtype: int, axis: Array) -> Array:
    """S: (6, nv) motion subspace in child coordinates (RBDA Table 4.1)."""
    S = np.zeros((6, NV[jtype]))
    if jtype == REVOLUTE:
        S[:3, 0] = axis
    elif jtype == PRISMATIC:
        S[3:, 0] = axis
    elif jtype == SPHERICAL:
        S[:3, :] = np.eye(3)
    elif jtype == FREE:
        S[3:, :3] = np.eye(3)
        S[:3, 3:] = np.eye(3)
    return S


def joint_pose(jtype: int, axis: Array, q: Array) -> tuple[Array, Array]:
    """(R, p): orientation of the child frame in the joint frame (a quaternion's: the rotation of
    q / |q|) and its origin [m] there."""
    if jtype == REVOLUTE:
        return rot_axis(axis, q[0]), np.zeros(3)
    if jtype == PRISMATIC:
        return np.eye(3), axis * q[0]
    if jtype == SPHERICAL:
        return quat_to_R(q), np.zeros(3)
    if jtype == FREE:
        return quat_to_R(q[3:7]), q[:3].copy()
    return np.eye(3), np.zeros(3)


def neutral(jtype: int) -> Array:
    """Neutral configuration: zero angles and offsets, identity quaternions."""
    q = np.zeros(NQ[jtype])
    if jtype == SPHERICAL:
        q[0] = 1.0
    elif jtype == FREE:
        q[3] = 1.0
    return q


def config_rate(jtype: int, q: Array, qd: Array) -> Array:
    """dq/dt (nq,) from joint rates qd (nv,): quaternion kinematics q' = 1/2 q (x) (0, w)."""
    if jtype == SPHERICAL:
        return quat_rate(q, qd)
    if jtype == FREE:
        return np.concatenate((quat_to_R(q[3:7]) @ qd[:3], quat_rate(q[3:7], qd[3:])))
    return qd.copy()


def integrate(jtype: int, q: Array, dv: Array) -> Array:
    """q (+) dv: move along the joint's manifold by the velocity increment dv (nv,).

    Quaternions compose with exp(dv) on the right (child-frame increment); the free joint's
    position moves by R(q) dv_linear (the decoupled R3 x SO(3) retraction).
    """
    if jtype == SPHERICAL:
        return quat_mul(q, quat_exp(dv))
    if jtype == FREE:
        return np.concatenate((q[:3] + quat_to_R(q[3:7]) @ dv[:3], quat_mul(q[3:7], quat_exp(dv[3:]))))
    return q + dv
