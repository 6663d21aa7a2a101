"""Spatial algebra: 3-D rotations, unit quaternions and 6-D motion/force vectors.

Conventions (Featherstone, *Rigid Body Dynamics Algorithms* (RBDA), ch. 2):
spatial vectors are [angular; linear]; a Plucker transform ``X`` from frame A to frame B is
``[[E, 0], [-E skew(r), E]]`` with ``E`` the rotation taking A coordinates to B coordinates and
``r`` the origin of B in A coordinates (RBDA Eq. 2.24). Quaternions are scalar first (w, x, y, z).
A rotation matrix ``R`` "of a frame" has that frame's axes as columns in the parent frame, so
``E = R.T``.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]


def cross(a: Array, b: Array) -> Array:
    """a x b of 3-vectors (np.cross costs ~10x more per call on single vectors)."""
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def cross_rows(a: Array, b: Array) -> Array:
    """Row-wise a x b of (n, 3) arrays (np.cross's axis handling costs ~10x more on small n)."""
    out = np.empty_like(a)
    out[:, 0] = a[:, 1] * b[:, 2] - a[:, 2] * b[:, 1]
    out[:, 1] = a[:, 2] * b[:, 0] - a[:, 0] * b[:, 2]
    out[:, 2] = a[:, 0] * b[:, 1] - a[:, 1] * b[:, 0]
    return out


def skew(v: Array) -> Array:
    """Cross-product matrix: skew(a) @ b == a x b; a stack v (..., 3) gives (..., 3, 3)."""
    if np.ndim(v) == 1:
        return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])
    v = np.asarray(v, dtype=float)
    out = np.zeros(v.shape[:-1] + (3, 3))
    out[..., 0, 1], out[..., 0, 2] = -v[..., 2], v[..., 1]
    out[..., 1, 0], out[..., 1, 2] = v[..., 2], -v[..., 0]
    out[..., 2, 0], out[..., 2, 1] = -v[..., 1], v[..., 0]
    return out


def rot_axis(axis: Array, angle: float) -> Array:
    """Rotation matrix of angle [rad] about a unit axis (Rodrigues)."""
    K = skew(axis)
    return np.eye(3) + np.sin(angle) * K + (1.0 - np.cos(angle)) * (K @ K)


def z_to(n: Array) -> Array:
    """The smallest rotation taking z onto the unit vector n (MuJoCo's mjuu_z2quat): about z x n by
    the angle between them; about x by pi when n = -z."""
    s = cross(np.array([0.0, 0.0, 1.0]), n)
    sn = float(np.linalg.norm(s))
    axis = s / sn if sn >= 1e-10 else np.array([1.0, 0.0, 0.0])
    return rot_axis(axis, math.atan2(sn, n[2]))


QUARTER_TURN_CS = ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0))  # (cos, sin) of k pi/2, k mod 4


def cos_sin(angle: float) -> tuple[float, float]:
    """(cos, sin) of an angle [rad], exact (0, +-1) at the doubles k * (pi/2) for |k| <= 4 (the
    doubles nearest the quarter turns, within half an ulp of k pi/2): np.cos(1.5707963267948966) is
    6.1e-17, the cosine of that double, not of the quarter turn a URDF's rpy means by it. The exact
    zeros let the core leave them out of its products (crba.c); elsewhere np.cos, np.sin."""
    k = round(float(angle) / (math.pi / 2)) if math.isfinite(angle) else 0
    if abs(k) <= 4 and angle == k * (math.pi / 2):
        return QUARTER_TURN_CS[k % 4]
    return float(np.cos(angle)), float(np.sin(angle))


def rpy_to_R(rpy: Array) -> Array:
    """URDF roll-pitch-yaw [rad] to rotation matrix: R = Rz(yaw) Ry(pitch) Rx(roll) (quarter turns
    exact, cos_sin)."""
    r, p, y = rpy
    (cr, sr), (cp, sp), (cy, sy) = cos_sin(r), cos_sin(p), cos_sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def R_to_rpy(R: Array) -> Array:
    """URDF roll-pitch-yaw [rad] of a rotation matrix (the inverse of ``rpy_to_R``), pitch in
    [-pi/2, pi/2]. R = Rz(y) Ry(p) Rx(r): cos p = hypot(R00, R10) and yaw from the first column;
    roll from the second and third columns turned back by yaw, whose middle row is (cos r, -sin r)
    whatever p: exact to round-off also at and near gimbal lock (cos p -> 0), where the first
    column no longer fixes yaw and roll absorbs its error."""
    cp = math.hypot(R[0, 0], R[1, 0])
    yaw = math.atan2(R[1, 0], R[0, 0])
    cy, sy = math.cos(yaw), math.sin(yaw)
    roll = math.atan2(sy * R[0, 2] - cy * R[1, 2], cy * R[1, 1] - sy * R[0, 1])
    return np.array([roll, math.atan2(-R[2, 0], cp), yaw])


def quat_to_R(quat: Array) -> Array:
    """Rotation matrix (body axes as columns in the parent) of the quaternion (w, x, y, z) of any
    nonzero norm: the rotation of quat / |quat|, I + s (w [v]x + [v]x^2) with v = (x, y, z) and
    s = 2 / |quat|^2 (the unit quaternion's I + 2 w [v]x + 2 [v]x^2, Sola, arXiv:1711.02508, is not
    homogeneous in quat). A spherical or free joint's configuration is its quaternion's direction:
    between RK4's stages |quat| != 1 (MuJoCo's mj_kinematics normalises the same way); the C
    core's quat_to_R (spatial.h) has the same operations in the same order."""
    w, x, y, z = quat
    s = 2.0 / (w * w + x * x + y * y + z * z)
    return np.array(
        [
            [1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)],
            [s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)],
            [s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)],
        ]
    )


def R_to_quat(R: Array) -> Array:
    """Rotation matrix to unit quaternion (w, x, y, z) with w >= 0 (Shepperd's method)."""
    t = np.trace(R)
    if t > 0:
        s = 2.0 * np.sqrt(1.0 + t)
        q = np.array([0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s])
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + R[i, i] - R[j, j] - R[k, k])
        q = np.empty(4)
        q[0] = (R[k, j] - R[j, k]) / s
        q[1 + i] = 0.25 * s
        q[1 + j] = (R[j, i] + R[i, j]) / s
        q[1 + k] = (R[k, i] + R[i, k]) / s
    return q if q[0] >= 0 else -q


# Shepperd's method case by case for R_to_quat_many: case 0 (trace > 0) and 1 + i (R_ii the largest
# diagonal entry); per case and quaternion slot (w, x, y, z) either 0.25 s (QUAT_QUARTER) or the
# numerator R[A] + SIGN R[B] (flat indices 3 row + column; SIGN -1: R[A] - R[B], bit for bit)
QUAT_A = np.array([[0, 7, 2, 3], [7, 0, 1, 2], [2, 1, 0, 5], [3, 2, 5, 0]])
QUAT_B = np.array([[0, 5, 6, 1], [5, 0, 3, 6], [6, 3, 0, 7], [1, 6, 7, 0]])
QUAT_SIGN = np.array([[0, -1, -1, -1], [-1, 0, 1, 1], [-1, 1, 0, 1], [-1, 1, 1, 0]], dtype=np.float64)
QUAT_QUARTER = np.eye(4, dtype=bool)
NEXT_TWO = np.array([[1, 2], [2, 0], [0, 1]])  # j, k = i + 1, i + 2 (mod 3)


def R_to_quat_many(R: Array) -> Array:
    """``R_to_quat`` of each rotation matrix of R (n, 3, 3): (n, 4) quaternions (w, x, y, z), w >= 0,
    by the same formulas in the same order (so equal bit for bit), as array operations: where
    every trace is positive by its first case alone, else every row's case picked from tables
    (``QUAT_A``...), without a mask per case."""
    R = np.asarray(R, dtype=np.float64)
    t = R[:, 0, 0] + R[:, 1, 1] + R[:, 2, 2]
    if (t > 0).all():  # the common case
        s = 2.0 * np.sqrt(1.0 + t)
        q = np.stack(
            (0.25 * s, (R[:, 2, 1] - R[:, 1, 2]) / s, (R[:, 0, 2] - R[:, 2, 0]) / s, (R[:, 1, 0] - R[:, 0, 1]) / s),
            axis=1,
        )
        return q
    n = len(R)
    rows = np.arange(n)
    f = R.reshape(n, 9)
    d = f[:, [0, 4, 8]]
    i = np.argmax(d, axis=1)
    jk = NEXT_TWO[i]
    positive = t > 0
    case = np.where(positive, 0, i + 1)
    s = 2.0 * np.sqrt(np.where(positive, 1.0 + t, ((1.0 + d[rows, i]) - d[rows, jk[:, 0]]) - d[rows, jk[:, 1]]))
    r = rows[:, None]
    q = (f[r, QUAT_A[case]] + QUAT_SIGN[case] * f[r, QUAT_B[case]]) / s[:, None]
    q = np.where(QUAT_QUARTER[case], (0.25 * s)[:, None], q)
    q[q[:, 0] < 0] *= -1.0
    return q


def quat_mul(a: Array, b: Array) -> Array:
    """Hamilton product a (x) b of quaternions (w, x, y, z)."""
    w1, x1, y1, z1 = a
    w2, x2, y2, z2 = b
    return np.array(
        [
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
        ]
    )


def quat_rate(quat: Array, omega_body: Array) -> Array:
    """Quaternion derivative from body-frame angular velocity [rad/s]: dq/dt = 1/2 q (x) (0, w)."""
    return 0.5 * quat_mul(quat, np.array([0.0, omega_body[0], omega_body[1], omega_body[2]]))


def quat_exp(phi: Array) -> Array:
    """Unit quaternion of the rotation vector phi [rad] (exponential map)."""
    angle = np.linalg.norm(phi)
    if angle < 1e-12:
        return np.array([1.0, 0.5 * phi[0], 0.5 * phi[1], 0.5 * phi[2]]) / np.sqrt(1.0 + 0.25 * angle * angle)
    axis = phi / angle
    return np.concatenate(([np.cos(0.5 * angle)], np.sin(0.5 * angle) * axis))


def quat_log(quat: Array) -> Array:
    """Rotation vector phi [rad] of a unit quaternion (the inverse of quat_exp, |phi| <= pi)."""
    w, v = quat[0], quat[1:]
    if w < 0.0:  # q and -q are one rotation: take the one with |phi| <= pi
        w, v = -w, -v
    s = np.linalg.norm(v)
    if s < 1e-12:
        return 2.0 * v / w  # phi = 2 v / w + O(|v|^3)
    return 2.0 * np.arctan2(s, w) * v / s


def plucker(E: Array, r: Array) -> Array:
    """Plucker motion transform X = [[E, 0], [-E skew(r), E]] (RBDA Eq. 2.24); stacks E (..., 3, 3)
    and r (..., 3) give (..., 6, 6), each entry the one of its own E and r, bit for bit."""
    X = np.zeros(np.shape(E)[:-2] + (6, 6))
    X[..., :3, :3] = E
    X[..., 3:, 3:] = E
    X[..., 3:, :3] = -E @ skew(r)
    return X


def crm(v: Array) -> Array:
    """Spatial cross product for motion vectors, v x (RBDA Eq. 2.31)."""
    X = np.zeros((6, 6))
    w = skew(v[:3])
    X[:3, :3] = w
    X[3:, 3:] = w
    X[3:, :3] = skew(v[3:])
    return X


def crf(v: Array) -> Array:
    """Spatial cross product for force vectors, v x* = -crm(v)^T (RBDA Eq. 2.32)."""
    return -crm(v).T


def spatial_inertia(m: float, c: Array, I_c: Array) -> Array:
    """Spatial inertia about the frame origin of a body of mass m [kg], CoM c [m] and inertia
    I_c about the CoM [kg m^2], all in that frame (RBDA Eq. 2.63); stacks m (...,), c (..., 3),
    I_c (..., 3, 3) give (..., 6, 6), each entry the one of its own body, bit for bit."""
    C = skew(c)
    m = np.asarray(m, dtype=float)[..., None, None]
    I = np.zeros(C.shape[:-2] + (6, 6))
    I[..., :3, :3] = I_c + m * C @ C.swapaxes(-1, -2)
    I[..., :3, 3:] = m * C
    I[..., 3:, :3] = m * C.swapaxes(-1, -2)
    I[..., 3:, 3:] = m * np.eye(3)
    return I


def bias_force(I: Array, v: Array) -> Array:
    """v x* (I v): the velocity-product force of a rigid body (RBDA Eq. 2.67).

    Written out so that the linear velocity never multiplies itself: with h = I v and
    v = [w; v_o], the term v_o x h_lin equals v_o x (I[3:, :3] w) exactly, because
    v_o x (m v_o) = 0. The plain product loses m |v_o|^2 eps to round-off, which for a fast
    or free-falling body is a spurious torque large enough to break momentum conservation."""
    w, vo = v[:3], v[3:]
    h = I @ v
    return np.concatenate((cross(w, h[:3]) + cross(vo, I[3:, :3] @ w), cross(w, h[3:])))
