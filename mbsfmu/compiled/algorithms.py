"""RNEA, CRBA, ABA and forward kinematics, compiled: the algorithms of ``mbsfmu/dynamics/`` and
``mbsfmu/kinematics.py`` line for line, on the arrays of a packed model.

Every function takes ``model`` and ``data``, the tuples of arrays of ``kernels.views`` (layout.py
lists them), as Pinocchio's ``aba(model, data, ...)``, and first names the rows it uses. The
transforms Xup_i are computed once per state by ``joint_transforms`` and stored as (E_i, r_i)
(spatial.py); the dynamics passes read them. Row 0 is the world; loops run in topological order
with no search inside them. Symbols are RBDA's: Xup, S, vJ, v, a, c, IA, pA, U, D, u (ABA),
f (RNEA), Ic, F (CRBA), M the joint-space inertia.
"""
from __future__ import annotations

from ..joints import FREE, PRISMATIC, REVOLUTE, SPHERICAL
from ._jit import inline_kernel, kernel
from .layout import (G_AXIS, G_P_TREE, IQ, IV, JTYPE, NV, PARENT, S_D, S_F, S_IA, S_L, S_UD, S_VEC,
                     W_A, W_C, W_DINV, W_E, W_F, W_FEXT, W_IA, W_IC, W_P, W_PA, W_R, W_U, W_U6, W_V, W_XR)
from .spatial import (X_motion_to, XT_force_add, XT_force_cols, XT_I_X_add, bias_force_to, crm_to, quat_to_R,
                      rot_axis, spd_inverse_to)


@inline_kernel
def joint_pose(jtype, axis, q, s):
    """(RJ, pJ) as 12 numbers (RJ row by row, then pJ): the child frame in the joint frame for
    the joint's coordinates q[s: s + nq] (``joints.joint_pose``)."""
    if jtype == REVOLUTE:
        R = rot_axis(axis, q[s])
        return R + (0.0, 0.0, 0.0)
    if jtype == PRISMATIC:
        return 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, axis[0] * q[s], axis[1] * q[s], axis[2] * q[s]
    if jtype == SPHERICAL:
        return quat_to_R(q, s) + (0.0, 0.0, 0.0)
    if jtype == FREE:
        return quat_to_R(q, s + 3) + (q[s], q[s + 1], q[s + 2])
    return 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0


@kernel
def joint_transforms(model, data, q):
    """Xup_i = XJ(q_i) Xtree_i (RBDA Table 5.1) as E_i = R_rel^T, r_i = p_rel, with
    R_rel = R_tree RJ and p_rel = p_tree + R_tree pJ: body i's frame in its parent's."""
    topo, _elem, _SI, R_tree, G3, _elem_f, _vec = model
    _W66, _W6, W33, W3, _Wx, _S66 = data
    jtype, iq, p_tree, axis, E, r = topo[JTYPE], topo[IQ], G3[G_P_TREE], G3[G_AXIS], W33[W_E], W3[W_XR]
    for i in range(1, topo.shape[1]):
        J00, J01, J02, J10, J11, J12, J20, J21, J22, p0, p1, p2 = joint_pose(jtype[i], axis[i], q, iq[i])
        Rt = R_tree[i]
        for a in range(3):
            T0, T1, T2 = Rt[a, 0], Rt[a, 1], Rt[a, 2]
            E[i, 0, a] = T0 * J00 + T1 * J10 + T2 * J20          # E = (R_tree RJ)^T
            E[i, 1, a] = T0 * J01 + T1 * J11 + T2 * J21
            E[i, 2, a] = T0 * J02 + T1 * J12 + T2 * J22
            r[i, a] = p_tree[i, a] + (T0 * p0 + T1 * p1 + T2 * p2)


@inline_kernel
def S_times_to(S, n, x, s, out):
    """out = S[:, :n] x[s: s + n]: joint motion S qd_i (or S qdd_i).

    Here and below, loops over a joint's n DoF run outside the fixed 6-loops, which LLVM then
    unrolls once instead of around every copy of a variable-length loop (compile time)."""
    for k in range(6):
        out[k] = 0.0
    for j in range(n):
        for k in range(6):
            out[k] += S[k, j] * x[s + j]


@kernel
def aba(model, data, qd, tau, qdd):
    """qdd = M^-1 (tau - C qd - G + J^T f_ext) by the articulated-body algorithm (RBDA Table 7.1),
    Xup from ``joint_transforms``, f_ext in data. Multi-DoF joints use U = IA S, D = S^T U,
    u = tau - S^T pA (RBDA Eqs. 7.43-7.45); 1-DoF joints (``articulate_1dof``) the same
    equations with D a number."""
    topo, _elem, SI, _R_tree, _G3, _elem_f, vec = model
    W66, W6, W33, W3, _Wx, S66 = data
    parent, iv, nv, S, I, E, r = topo[PARENT], topo[IV], topo[NV], SI[0], SI[1], W33[W_E], W3[W_XR]
    IA, U, Dinv = W66[W_IA], W66[W_U], W66[W_DINV]
    v, c, a, pA, u, f_ext = W6[W_V], W6[W_C], W6[W_A], W6[W_PA], W6[W_U6], W6[W_FEXT]
    Ia, vJ, pa = S66[S_IA], S66[S_VEC, 0], S66[S_VEC, 1]
    N = topo.shape[1] - 1
    for k in range(6):
        v[0, k] = 0.0
    for i in range(1, N + 1):
        S_times_to(S[i], nv[i], qd, iv[i], vJ)                  # vJ = S qd_i
        X_motion_to(E[i], r[i], v[parent[i]], v[i])             # v_i = Xup_i v_lambda + vJ
        for k in range(6):
            v[i, k] += vJ[k]
        crm_to(v[i], vJ, c[i])                                  # c_i = v_i x vJ
        copy66(I[i], IA[i])                                     # IA_i = I_i
        bias_force_to(I[i], v[i], pA[i])                        # pA_i = v_i x* I_i v_i - f_ext_i
        for k in range(6):
            pA[i, k] -= f_ext[i, k]
    for i in range(N, 0, -1):
        lam = parent[i]
        if nv[i] == 1:                                          # U_i, D_i^-1, u_i; Ia, pa if lam > 0
            articulate_1dof(IA[i], S[i], c[i], pA[i], tau[iv[i]], U[i], Dinv[i], u[i], Ia, pa, lam > 0)
        else:
            articulate(IA[i], S[i], nv[i], c[i], pA[i], tau, iv[i], U[i], Dinv[i], u[i], Ia, pa, lam > 0, S66)
        if lam > 0:
            XT_I_X_add(E[i], r[i], Ia, IA[lam])                 # IA_lambda += Xup_i^T Ia Xup_i
            XT_force_add(E[i], r[i], pa, pA[lam])               # pA_lambda += Xup_i^T pa
    for k in range(6):
        a[0, k] = -vec[k]                                       # a_0 = -a_grav
    for i in range(1, N + 1):
        X_motion_to(E[i], r[i], a[parent[i]], a[i])             # a' = Xup_i a_lambda + c_i
        for k in range(6):
            a[i, k] += c[i, k]
        accelerate(S[i], nv[i], U[i], Dinv[i], u[i], a[i], qdd, iv[i], S66[S_VEC, 2])   # qdd_i, a_i


@inline_kernel
def copy66(A, B):
    """B = A, (6, 6) (a loop: numba's slice assignment checks overlap at run time)."""
    for k in range(6):
        for l in range(6):
            B[k, l] = A[k, l]


@inline_kernel
def articulate_1dof(IA, S, c, pA, tau, U, Dinv, u, Ia, pa, has_parent):
    """One 1-DoF joint of ABA's inward pass (RBDA Table 7.1) on numbers: U = IA s, D = s^T U,
    u = tau - s^T pA and, with a parent, Ia = IA - U U^T / D, pa = pA + Ia c + U u / D."""
    s0, s1, s2, s3, s4, s5 = S[0, 0], S[1, 0], S[2, 0], S[3, 0], S[4, 0], S[5, 0]
    D = 0.0
    sp = s0 * pA[0] + s1 * pA[1] + s2 * pA[2] + s3 * pA[3] + s4 * pA[4] + s5 * pA[5]
    for k in range(6):
        Uk = IA[k, 0] * s0 + IA[k, 1] * s1 + IA[k, 2] * s2 + IA[k, 3] * s3 + IA[k, 4] * s4 + IA[k, 5] * s5
        U[k, 0] = Uk
        D += S[k, 0] * Uk
    Di = 1.0 / D
    ui = tau - sp
    Dinv[0, 0] = Di
    u[0] = ui
    if has_parent:
        U0, U1, U2, U3, U4, U5 = U[0, 0], U[1, 0], U[2, 0], U[3, 0], U[4, 0], U[5, 0]
        c0, c1, c2, c3, c4, c5 = c[0], c[1], c[2], c[3], c[4], c[5]
        for k in range(6):
            UDk = U[k, 0] * Di
            Ia0, Ia1, Ia2 = IA[k, 0] - UDk * U0, IA[k, 1] - UDk * U1, IA[k, 2] - UDk * U2
            Ia3, Ia4, Ia5 = IA[k, 3] - UDk * U3, IA[k, 4] - UDk * U4, IA[k, 5] - UDk * U5
            Ia[k, 0], Ia[k, 1], Ia[k, 2], Ia[k, 3], Ia[k, 4], Ia[k, 5] = Ia0, Ia1, Ia2, Ia3, Ia4, Ia5
            pa[k] = pA[k] + (Ia0 * c0 + Ia1 * c1 + Ia2 * c2 + Ia3 * c3 + Ia4 * c4 + Ia5 * c5) + UDk * ui


@kernel
def articulate(IA, S, n, c, pA, tau, s, U, Dinv, u, Ia, pa, has_parent, S66):
    """One joint of n DoF (0, or 2 to 6) of ABA's inward pass: U = IA S, D = S^T U,
    u = tau - S^T pA and, with a parent, Ia = IA - U D^-1 U^T, pa = pA + Ia c + U D^-1 u."""
    D, UD = S66[S_D], S66[S_UD]
    for j in range(n):                                          # U = IA S
        for k in range(6):
            acc = 0.0
            for l in range(6):
                acc += IA[k, l] * S[l, j]
            U[k, j] = acc
    for j in range(n):                                          # u = tau - S^T pA, D = S^T U
        acc = 0.0
        for l in range(6):
            acc += S[l, j] * pA[l]
        u[j] = tau[s + j] - acc
        for k in range(n):
            acc = 0.0
            for l in range(6):
                acc += S[l, j] * U[l, k]
            D[j, k] = acc
    if n > 1:
        spd_inverse_to(D, n, S66[S_L], Dinv)
    if has_parent:
        for k in range(6):                                      # UD = U D^-1
            for j in range(n):
                UD[k, j] = 0.0
        for j in range(n):
            for l in range(n):
                for k in range(6):
                    UD[k, j] += U[k, l] * Dinv[l, j]
        copy66(IA, Ia)                                          # Ia = IA - U D^-1 U^T
        for j in range(n):
            for k in range(6):
                for l in range(6):
                    Ia[k, l] -= UD[k, j] * U[l, j]
        for k in range(6):                                      # pa = pA + Ia c + U D^-1 u
            acc = 0.0
            for l in range(6):
                acc += Ia[k, l] * c[l]
            pa[k] = pA[k] + acc
        for j in range(n):
            for k in range(6):
                pa[k] += UD[k, j] * u[j]


@inline_kernel
def accelerate(S, n, U, Dinv, u, a, qdd, s, t):
    """ABA's outward pass for one joint, a = a' on entry: qdd_i = D^-1 (u - U^T a'),
    then a = a' + S qdd_i. t: (6,) scratch."""
    if n == 1:
        qdd_i = Dinv[0, 0] * (u[0] - (U[0, 0] * a[0] + U[1, 0] * a[1] + U[2, 0] * a[2]
                                      + U[3, 0] * a[3] + U[4, 0] * a[4] + U[5, 0] * a[5]))
        qdd[s] = qdd_i
        for k in range(6):
            a[k] += S[k, 0] * qdd_i
        return
    for j in range(n):
        acc = 0.0
        for l in range(6):
            acc += U[l, j] * a[l]
        t[j] = u[j] - acc
    for j in range(n):
        acc = 0.0
        for l in range(n):
            acc += Dinv[j, l] * t[l]
        qdd[s + j] = acc
    for j in range(n):
        for k in range(6):
            a[k] += S[k, j] * qdd[s + j]


@kernel
def rnea(model, data, qd, qdd, tau):
    """tau = M qdd + C qd + G - J^T f_ext by the recursive Newton-Euler algorithm (RBDA Table
    5.1), Xup from ``joint_transforms``, f_ext in data; gravity as a_0 = -a_grav."""
    topo, _elem, SI, _R_tree, _G3, _elem_f, vec = model
    _W66, W6, W33, W3, _Wx, S66 = data
    parent, iv, nv, S, I, E, r = topo[PARENT], topo[IV], topo[NV], SI[0], SI[1], W33[W_E], W3[W_XR]
    v, a, f, f_ext, vJ, t6 = W6[W_V], W6[W_A], W6[W_F], W6[W_FEXT], S66[S_VEC, 0], S66[S_VEC, 2]
    N = topo.shape[1] - 1
    for k in range(6):
        v[0, k] = 0.0
        a[0, k] = -vec[k]                                       # a_0 = -a_grav
        f[0, k] = 0.0
    for i in range(1, N + 1):
        lam = parent[i]
        S_times_to(S[i], nv[i], qd, iv[i], vJ)                  # vJ = S qd_i
        X_motion_to(E[i], r[i], v[lam], v[i])                   # v_i = Xup_i v_lambda + vJ
        for k in range(6):
            v[i, k] += vJ[k]
        X_motion_to(E[i], r[i], a[lam], a[i])                   # a_i = Xup_i a_lambda + S qdd_i + v_i x vJ
        S_times_to(S[i], nv[i], qdd, iv[i], t6)
        for k in range(6):
            a[i, k] += t6[k]
        crm_to(v[i], vJ, t6)
        for k in range(6):
            a[i, k] += t6[k]
        bias_force_to(I[i], v[i], f[i])                         # f_i = I_i a_i + v_i x* I_i v_i - f_ext_i
        for k in range(6):
            acc = 0.0
            for l in range(6):
                acc += I[i, k, l] * a[i, l]
            f[i, k] += acc - f_ext[i, k]
    for i in range(N, 0, -1):
        for j in range(nv[i]):                                  # tau_i = S_i^T f_i
            acc = 0.0
            for l in range(6):
                acc += S[i, l, j] * f[i, l]
            tau[iv[i] + j] = acc
        XT_force_add(E[i], r[i], f[i], f[parent[i]])            # f_lambda += Xup_i^T f_i


@kernel
def crba(model, data, M):
    """M(q): (nv, nv) joint-space inertia by the composite-rigid-body algorithm (RBDA Table 6.2),
    Xup from ``joint_transforms``."""
    topo, _elem, SI, _R_tree, _G3, _elem_f, _vec = model
    W66, _W6, W33, W3, _Wx, S66 = data
    parent, iv, nv, S, E, r = topo[PARENT], topo[IV], topo[NV], SI[0], W33[W_E], W3[W_XR]
    Ic, F = W66[W_IC], S66[S_F]
    N = topo.shape[1] - 1
    for i in range(N + 1):                                      # Ic_i = I_i
        copy66(SI[1, i], Ic[i])
    M[:, :] = 0.0
    for i in range(N, 0, -1):
        if parent[i] > 0:
            XT_I_X_add(E[i], r[i], Ic[i], Ic[parent[i]])   # Ic_lambda += Xup_i^T Ic_i Xup_i
    for i in range(1, N + 1):
        n, si = nv[i], iv[i]
        for c in range(n):                                      # F = Ic_i S_i
            for k in range(6):
                acc = 0.0
                for l in range(6):
                    acc += Ic[i, k, l] * S[i, l, c]
                F[k, c] = acc
        for a in range(n):                                      # M_ii = S_i^T F
            for b in range(n):
                acc = 0.0
                for l in range(6):
                    acc += F[l, a] * S[i, l, b]
                M[si + a, si + b] = acc
        j = i
        while parent[j] > 0:
            XT_force_cols(E[j], r[j], F, n)                     # F = Xup_j^T F
            j = parent[j]
            sj = iv[j]
            for a in range(n):                                  # M_ij = F^T S_j, M_ji = M_ij^T
                for b in range(nv[j]):
                    acc = 0.0
                    for l in range(6):
                        acc += F[l, a] * S[j, l, b]
                    M[si + a, sj + b] = acc
                    M[sj + b, si + a] = acc


@kernel
def forward_kinematics(model, data, qd, qdd, with_v, with_a):
    """Body poses (R_i, p_i) in world axes and, with_v / with_a, spatial velocities v_i and
    accelerations a_i (gravity not included) by one outward pass, Xup from ``joint_transforms``
    (``kinematics.forward_kinematics``): R_i = R_lambda R_rel, p_i = p_lambda + R_lambda p_rel."""
    topo, _elem, SI, _R_tree, _G3, _elem_f, _vec = model
    _W66, W6, W33, W3, _Wx, S66 = data
    parent, iv, nv, S, E, r = topo[PARENT], topo[IV], topo[NV], SI[0], W33[W_E], W3[W_XR]
    R, p, v, a, vJ, t6 = W33[W_R], W3[W_P], W6[W_V], W6[W_A], S66[S_VEC, 0], S66[S_VEC, 2]
    for k in range(3):
        p[0, k] = 0.0
        for l in range(3):
            R[0, k, l] = 1.0 if k == l else 0.0
    for k in range(6):
        v[0, k] = 0.0
        a[0, k] = 0.0
    for i in range(1, topo.shape[1]):
        lam = parent[i]
        for k in range(3):
            for l in range(3):                                  # R_i = R_lambda E_i^T
                R[i, k, l] = R[lam, k, 0] * E[i, l, 0] + R[lam, k, 1] * E[i, l, 1] + R[lam, k, 2] * E[i, l, 2]
            p[i, k] = p[lam, k] + (R[lam, k, 0] * r[i, 0] + R[lam, k, 1] * r[i, 1] + R[lam, k, 2] * r[i, 2])
        if with_v:
            S_times_to(S[i], nv[i], qd, iv[i], vJ)              # v_i = Xup_i v_lambda + S qd_i
            X_motion_to(E[i], r[i], v[lam], v[i])
            for k in range(6):
                v[i, k] += vJ[k]
            if with_a:                                          # a_i = Xup_i a_lambda + S qdd_i + v_i x vJ
                X_motion_to(E[i], r[i], a[lam], a[i])
                S_times_to(S[i], nv[i], qdd, iv[i], t6)
                for k in range(6):
                    a[i, k] += t6[k]
                crm_to(v[i], vJ, t6)
                for k in range(6):
                    a[i, k] += t6[k]
