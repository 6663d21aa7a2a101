"""Minimal coordinates of a configuration: the tangent space of each joint's manifold.

A configuration near q0 is q = q0 (+) dq with dq (nv,) the tangent coordinates, (+) the engine's
own ``Model.integrate`` (mbsfmu/engine/joints.py): revolute and prismatic joints add dq;
spherical joints compose the quaternion with exp(dq) on the right, dq a rotation vector in the
child (body) axes [rad]; free joints move the origin by R(q0) dq[:3] (dq[:3] in body axes [m])
and turn by exp(dq[3:]) on the right (body axes [rad]). These are the axes in which the engine
states the rates qd (body axes for spherical and free joints, docs/explanation/conventions.md), so
d(dq)/dt = qd at dq = 0.

Away from dq = 0 the two differ for the multi-DoF joints (rigid-body kinematics, e.g. Sola,
Deray, Atchuthan, "A micro Lie theory for state estimation in robotics", 2018, Eqs. 143-145 for
the right Jacobian of SO(3)): with R = R0 Exp(phi), omega = J_r(phi) phidot and
J_r(phi) = I - 1/2 skew(phi) + O(phi^2), so phidot = omega + 1/2 phi x omega + O(phi^2); the
free joint's origin p = p0 + R0 dq_lin moves with pdot = R v = R0 Exp(phi) v, so
dq_lindot = v + phi x v + O(phi^2). ``rate_jacobian`` is the derivative of these at dq = 0.
"""

from __future__ import annotations

import numpy as np

from ..engine import joints
from ..engine.spatial import Array, quat_log, quat_mul, quat_to_R, skew


def tangent_names(model) -> tuple[list[str], list[str]]:
    """(names of dq (nv,), names of qd (nv,)): ``q.<joint>`` for 1-DoF joints, ``dq.<joint>[k]``
    for the tangent coordinates of spherical and free joints (free: k = 1..3 linear, 4..6
    angular, body axes), ``qd.<joint>`` / ``qd.<joint>[k]`` for the rates (the trajectory's names)."""
    t = model.tree
    pos, vel = [], []
    for i in range(1, model.N + 1):
        n, name = int(t.nv[i]), model.joint_names[i - 1]
        if n == 1:
            pos.append(f"q.{name}")
            vel.append(f"qd.{name}")
        else:
            pos += [f"dq.{name}[{k + 1}]" for k in range(n)]
            vel += [f"qd.{name}[{k + 1}]" for k in range(n)]
    return pos, vel


def difference(model, q0: Array, q1: Array) -> Array:
    """dq (nv,) with q1 = q0 (+) dq: the inverse of ``Model.integrate`` (quaternion logarithm of
    q0^-1 q1; free joints' origins R(q0)^T (p1 - p0))."""
    t = model.tree
    out = np.zeros(model.nv)
    for i in range(1, model.N + 1):
        jt, sq, sv = int(t.jtype[i]), int(t.iq[i]), int(t.iv[i])
        a, b = q0[sq : sq + t.nq[i]], q1[sq : sq + t.nq[i]]
        if jt == joints.SPHERICAL:
            out[sv : sv + 3] = quat_log(quat_mul(_conj(a), b))
        elif jt == joints.FREE:
            out[sv : sv + 3] = quat_to_R(a[3:]).T @ (b[:3] - a[:3])
            out[sv + 3 : sv + 6] = quat_log(quat_mul(_conj(a[3:]), b[3:]))
        else:
            out[sv : sv + t.nv[i]] = b - a
    return out


def rate_jacobian(model, qd: Array) -> Array:
    """d(dq/dt)/d(dq) (nv, nv) at dq = 0 with the rates qd held (module docstring): per spherical
    joint -1/2 skew(omega); per free joint [[0, -skew(v)], [0, -1/2 skew(omega)]] (v, omega body
    axes); zero elsewhere (and everywhere at qd = 0)."""
    t = model.tree
    E = np.zeros((model.nv, model.nv))
    for i in range(1, model.N + 1):
        jt, sv = int(t.jtype[i]), int(t.iv[i])
        if jt == joints.SPHERICAL:
            E[sv : sv + 3, sv : sv + 3] = -0.5 * skew(qd[sv : sv + 3])
        elif jt == joints.FREE:
            E[sv : sv + 3, sv + 3 : sv + 6] = -skew(qd[sv : sv + 3])
            E[sv + 3 : sv + 6, sv + 3 : sv + 6] = -0.5 * skew(qd[sv + 3 : sv + 6])
    return E


def _conj(quat: Array) -> Array:
    return np.array([quat[0], -quat[1], -quat[2], -quat[3]])
