"""The equations of motion and the fixed-step RK4 loop, compiled (``Simulator.rhs``,
``integrators.rk4_step`` and ``Simulator.step`` for "rk4", line for line).

State x = [q (nq), qd (nv), W_in, W_diss]: W_in [J] the work of the inputs, W_diss [J] (<= 0)
the work of the dampers, integrated with the motion. Inputs u (n_u,) in the order of
``ForceElements.layout``: joint actuators and wheel motors (ACT elements) map to tau; thrusters,
body wrenches and point-to-point spring-dampers give external wrenches f_ext (body axes, about
each body origin) at the state's body poses and velocities (``ForceElements.body_wrenches``).
"""
from __future__ import annotations

import math

from ..forces import LENGTH_EPS
from ..joints import FREE, SPHERICAL
from ._jit import inline_kernel, kernel
from .algorithms import aba, forward_kinematics, joint_transforms
from .layout import (ACT, IQ, IV, JSPRING, JTYPE, NQ, QUAT, S_VEC, SPRING, THRUSTER, W_FEXT, W_P, W_R, W_V, WRENCH,
                     X_K1, X_K2, X_K3, X_K4, X_TAU, X_TAU_U, X_XN, X_XS)


@inline_kernel
def point_velocity_to(R, v, rp, out):
    """out = R (v_o + w x rp): world-axes velocity [m/s] of the point rp (body axes) of a body
    with axes R and spatial velocity v = [w; v_o] (body coordinates)."""
    t0 = v[3] + (v[1] * rp[2] - v[2] * rp[1])
    t1 = v[4] + (v[2] * rp[0] - v[0] * rp[2])
    t2 = v[5] + (v[0] * rp[1] - v[1] * rp[0])
    for k in range(3):
        out[k] = R[k, 0] * t0 + R[k, 1] * t1 + R[k, 2] * t2


@inline_kernel
def add_force(R, f, rp, F0, F1, F2):
    """f += [rp x fb; fb] with fb = R^T F: a world-axes force F [N] at the point rp of a body."""
    b0 = R[0, 0] * F0 + R[1, 0] * F1 + R[2, 0] * F2
    b1 = R[0, 1] * F0 + R[1, 1] * F1 + R[2, 1] * F2
    b2 = R[0, 2] * F0 + R[1, 2] * F1 + R[2, 2] * F2
    f[3] += b0
    f[4] += b1
    f[5] += b2
    f[0] += rp[1] * b2 - rp[2] * b1
    f[1] += rp[2] * b0 - rp[0] * b2
    f[2] += rp[0] * b1 - rp[1] * b0


@kernel
def body_wrenches(model, data, u):
    """f_ext (in data) from thrusters, body wrenches and spring-dampers at the poses and
    velocities of ``forward_kinematics``; returns (input power [W], damper power [W])."""
    _topo, elem, _SI, _R_tree, _G3, elem_f, _vec = model
    _W66, W6, W33, W3, _Wx, S66 = data
    R, p, v, f_ext = W33[W_R], W3[W_P], W6[W_V], W6[W_FEXT]
    Va, Vb = S66[S_VEC, 3, :3], S66[S_VEC, 3, 3:]
    p_in = 0.0
    p_damp = 0.0
    for e in range(elem.shape[0]):
        kind, ia, ib, iu, num = elem[e, 0], elem[e, 1], elem[e, 2], elem[e, 3], elem_f[e]
        if kind == THRUSTER:                    # F = R_i (u d) at the point r
            i, rp, s = ia, num[:3], u[iu]
            F0 = R[i, 0, 0] * (s * num[3]) + R[i, 0, 1] * (s * num[4]) + R[i, 0, 2] * (s * num[5])
            F1 = R[i, 1, 0] * (s * num[3]) + R[i, 1, 1] * (s * num[4]) + R[i, 1, 2] * (s * num[5])
            F2 = R[i, 2, 0] * (s * num[3]) + R[i, 2, 1] * (s * num[4]) + R[i, 2, 2] * (s * num[5])
            add_force(R[i], f_ext[i], rp, F0, F1, F2)
            point_velocity_to(R[i], v[i], rp, Va)
            p_in += F0 * Va[0] + F1 * Va[1] + F2 * Va[2]
        elif kind == WRENCH:                    # F at the point r and torque T, world (ib = 1) or body axes
            i, rp = ia, num[:3]
            F0, F1, F2, T0, T1, T2 = u[iu], u[iu + 1], u[iu + 2], u[iu + 3], u[iu + 4], u[iu + 5]
            if ib == 0:
                F0, F1, F2 = (R[i, 0, 0] * F0 + R[i, 0, 1] * F1 + R[i, 0, 2] * F2,
                              R[i, 1, 0] * F0 + R[i, 1, 1] * F1 + R[i, 1, 2] * F2,
                              R[i, 2, 0] * F0 + R[i, 2, 1] * F1 + R[i, 2, 2] * F2)
                T0, T1, T2 = (R[i, 0, 0] * T0 + R[i, 0, 1] * T1 + R[i, 0, 2] * T2,
                              R[i, 1, 0] * T0 + R[i, 1, 1] * T1 + R[i, 1, 2] * T2,
                              R[i, 2, 0] * T0 + R[i, 2, 1] * T1 + R[i, 2, 2] * T2)
            add_force(R[i], f_ext[i], rp, F0, F1, F2)
            for k in range(3):                  # f_i[:3] += R_i^T T
                f_ext[i, k] += R[i, 0, k] * T0 + R[i, 1, k] * T1 + R[i, 2, k] * T2
            point_velocity_to(R[i], v[i], rp, Va)
            w = v[i]
            W0 = R[i, 0, 0] * w[0] + R[i, 0, 1] * w[1] + R[i, 0, 2] * w[2]    # omega, world axes
            W1 = R[i, 1, 0] * w[0] + R[i, 1, 1] * w[1] + R[i, 1, 2] * w[2]
            W2 = R[i, 2, 0] * w[0] + R[i, 2, 1] * w[1] + R[i, 2, 2] * w[2]
            p_in += (F0 * Va[0] + F1 * Va[1] + F2 * Va[2]) + (T0 * W0 + T1 * W1 + T2 * W2)
        elif kind == SPRING:                    # tension T = k (l - l0) + d ldot pulls a and b together
            ra, rb, k_s, d_s, l0 = num[:3], num[3:6], num[6], num[7], num[8]
            d0 = p[ib, 0] + (R[ib, 0, 0] * rb[0] + R[ib, 0, 1] * rb[1] + R[ib, 0, 2] * rb[2]) \
                - (p[ia, 0] + (R[ia, 0, 0] * ra[0] + R[ia, 0, 1] * ra[1] + R[ia, 0, 2] * ra[2]))
            d1 = p[ib, 1] + (R[ib, 1, 0] * rb[0] + R[ib, 1, 1] * rb[1] + R[ib, 1, 2] * rb[2]) \
                - (p[ia, 1] + (R[ia, 1, 0] * ra[0] + R[ia, 1, 1] * ra[1] + R[ia, 1, 2] * ra[2]))
            d2 = p[ib, 2] + (R[ib, 2, 0] * rb[0] + R[ib, 2, 1] * rb[1] + R[ib, 2, 2] * rb[2]) \
                - (p[ia, 2] + (R[ia, 2, 0] * ra[0] + R[ia, 2, 1] * ra[1] + R[ia, 2, 2] * ra[2]))
            for k in range(3):
                Va[k] = 0.0
                Vb[k] = 0.0
            if ia > 0:
                point_velocity_to(R[ia], v[ia], ra, Va)
            if ib > 0:
                point_velocity_to(R[ib], v[ib], rb, Vb)
            l = math.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if l < LENGTH_EPS:
                e0 = e1 = e2 = ldot = 0.0
            else:
                e0, e1, e2 = d0 / l, d1 / l, d2 / l
                ldot = e0 * (Vb[0] - Va[0]) + e1 * (Vb[1] - Va[1]) + e2 * (Vb[2] - Va[2])
            T = k_s * (l - l0) + d_s * ldot
            if ia > 0:
                add_force(R[ia], f_ext[ia], ra, T * e0, T * e1, T * e2)
            if ib > 0:
                add_force(R[ib], f_ext[ib], rb, -T * e0, -T * e1, -T * e2)
            p_damp -= d_s * ldot * ldot
    return p_in, p_damp


@inline_kernel
def passive_forces_to(model, q, qd, out):
    """out = -d qd - k (q - q0): joint spring-dampers [N m or N] (``Model.passive_forces``)."""
    _topo, elem, _SI, _R_tree, _G3, elem_f, vec = model
    for j in range(out.shape[0]):
        out[j] = -vec[6 + j] * qd[j]
    for e in range(elem.shape[0]):
        if elem[e, 0] == JSPRING:
            out[elem[e, 2]] -= elem_f[e, 0] * (q[elem[e, 1]] - elem_f[e, 1])


@inline_kernel
def quat_rate_to(q, s, qd, t, out):
    """out[s: s + 4] = 1/2 q (x) (0, w): quaternion rate from body angular velocity qd[t: t + 3]."""
    w1, x1, y1, z1 = q[s], q[s + 1], q[s + 2], q[s + 3]
    x2, y2, z2 = qd[t], qd[t + 1], qd[t + 2]
    out[s] = 0.5 * (w1 * 0.0 - x1 * x2 - y1 * y2 - z1 * z2)
    out[s + 1] = 0.5 * (w1 * x2 + x1 * 0.0 + y1 * z2 - z1 * y2)
    out[s + 2] = 0.5 * (w1 * y2 - x1 * z2 + y1 * 0.0 + z1 * x2)
    out[s + 3] = 0.5 * (w1 * z2 + x1 * y2 - y1 * x2 + z1 * 0.0)


@kernel
def config_rate_to(model, q, qd, out):
    """out[:nq] = dq/dt from qd: quaternion kinematics q' = 1/2 q (x) (0, w), the free joint's
    position moving with R(quat) v (``joints.config_rate``)."""
    topo = model[0]
    jtype, iq, nq, iv = topo[JTYPE], topo[IQ], topo[NQ], topo[IV]
    for i in range(1, topo.shape[1]):
        s, t = iq[i], iv[i]
        if jtype[i] == SPHERICAL:
            quat_rate_to(q, s, qd, t, out)
        elif jtype[i] == FREE:
            w, x, y, z = q[s + 3], q[s + 4], q[s + 5], q[s + 6]
            v0, v1, v2 = qd[t], qd[t + 1], qd[t + 2]
            out[s] = (1 - 2 * (y * y + z * z)) * v0 + 2 * (x * y - w * z) * v1 + 2 * (x * z + w * y) * v2
            out[s + 1] = 2 * (x * y + w * z) * v0 + (1 - 2 * (x * x + z * z)) * v1 + 2 * (y * z - w * x) * v2
            out[s + 2] = 2 * (x * z - w * y) * v0 + 2 * (y * z + w * x) * v1 + (1 - 2 * (x * x + y * y)) * v2
            quat_rate_to(q, s + 3, qd, t + 3, out)
        else:
            for k in range(nq[i]):
                out[s + k] = qd[t + k]


@kernel
def rhs(model, data, has_forces, x, u, xdot):
    """xdot = [dq/dt, qdd, P_in, P_diss] at state x with inputs u (``Simulator.rhs``)."""
    _topo, elem, _SI, _R_tree, _G3, _elem_f, vec = model
    Wx = data[4]
    nx = x.shape[0]
    nv = vec.shape[0] - 6
    nq = nx - nv - 2
    q, qd, qdd = x[:nq], x[nq: nq + nv], xdot[nq: nq + nv]
    joint_transforms(model, data, q)
    tau_u, tau = Wx[X_TAU_U, :nv], Wx[X_TAU, :nv]
    tau_u[:] = 0.0
    for e in range(elem.shape[0]):                      # actuators and wheel motors: tau_u = u
        if elem[e, 0] == ACT:
            tau_u[elem[e, 2]] = u[elem[e, 1]]
    data[1][W_FEXT, :, :] = 0.0
    p_in, p_damp = 0.0, 0.0
    if has_forces:
        forward_kinematics(model, data, qd, qd, True, False)
        p_in, p_damp = body_wrenches(model, data, u)
    passive_forces_to(model, q, qd, tau)                # tau = tau_u + passive
    for j in range(nv):
        tau[j] = tau_u[j] + tau[j]
    aba(model, data, qd, tau, qdd)
    for j in range(nv):                                 # P_in += tau_u . qd
        p_in += tau_u[j] * qd[j]
    acc = 0.0
    for j in range(nv):                                 # P_diss -= d . qd^2
        acc += vec[6 + j] * (qd[j] * qd[j])
    p_damp -= acc
    config_rate_to(model, q, qd, xdot)
    xdot[nq + nv] = p_in
    xdot[nq + nv + 1] = p_damp


@kernel
def rk4_step(model, data, has_forces, x, u, h, xn):
    """xn = one classical Runge-Kutta step of size h [s] from x (``integrators.rk4_step``), then
    every quaternion renormalised (``Simulator._normalise``)."""
    _topo, elem, _SI, _R_tree, _G3, _elem_f, _vec = model
    Wx = data[4]
    k1, k2, k3, k4, xs = Wx[X_K1], Wx[X_K2], Wx[X_K3], Wx[X_K4], Wx[X_XS]
    n = x.shape[0]
    rhs(model, data, has_forces, x, u, k1)
    for j in range(n):
        xs[j] = x[j] + 0.5 * h * k1[j]
    rhs(model, data, has_forces, xs, u, k2)
    for j in range(n):
        xs[j] = x[j] + 0.5 * h * k2[j]
    rhs(model, data, has_forces, xs, u, k3)
    for j in range(n):
        xs[j] = x[j] + h * k3[j]
    rhs(model, data, has_forces, xs, u, k4)
    for j in range(n):
        xn[j] = x[j] + (h / 6.0) * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j])
    for e in range(elem.shape[0]):
        if elem[e, 0] == QUAT:
            s = elem[e, 1]
            norm = math.sqrt(xn[s] * xn[s] + xn[s + 1] * xn[s + 1] + xn[s + 2] * xn[s + 2] + xn[s + 3] * xn[s + 3])
            for k in range(4):
                xn[s + k] /= norm


@kernel
def run_rk4(model, data, has_forces, x, U, h, n, X_out, stride):
    """n RK4 steps of size h [s] from x, in place; the inputs U[k] (n, n_u) at step k, or U[0]
    held when U has one row. X_out (rows, nx): x at steps 0, stride, 2 stride, ... (as many
    rows as it has). Returns n, or the index k of the step that produced a non-finite state
    (x then holds that state)."""
    xn = data[4][X_XN]
    rows = X_out.shape[0]
    rec = 0
    if rows > 0:
        X_out[0, :] = x
        rec = 1
    for k in range(n):
        u = U[0] if U.shape[0] == 1 else U[k]
        rk4_step(model, data, has_forces, x, u, h, xn)
        finite = True
        for j in range(x.shape[0]):
            x[j] = xn[j]
            if not math.isfinite(xn[j]):
                finite = False
        if not finite:
            return k
        if rec < rows and (k + 1) % stride == 0:
            X_out[rec, :] = x
            rec += 1
    return n
