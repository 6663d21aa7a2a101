"""Forward dynamics in O(N) by the articulated-body algorithm (RBDA Table 7.1)."""

from __future__ import annotations

import numpy as np

from ..spatial import Array, bias_force, crm
from ..spec.tree import Tree, joint_transforms


def aba(tree: Tree, q: Array, qd: Array, tau: Array, f_ext: Array | None = None) -> Array:
    """qdd = M^-1 (tau - C qd - G + J^T f_ext): (nv,) joint accelerations.

    tau: (nv,) joint forces [N m or N]; f_ext: (N+1, 6) external wrench per body [N m; N],
    body axes, about the body origin (row 0 ignored). Multi-DoF joints use the matrix form
    U = IA S, D = S^T U, u = tau - S^T pA (RBDA Eqs. 7.43-7.45).
    """
    Xup, _ = joint_transforms(tree, q)
    n = tree.N
    v = np.zeros((n + 1, 6))
    c = np.zeros((n + 1, 6))
    IA = tree.I.copy()
    pA = np.zeros((n + 1, 6))
    for i in range(1, n + 1):
        S = tree.S[i, :, : tree.nv[i]]
        vJ = S @ qd[tree.iv[i] : tree.iv[i] + tree.nv[i]]
        v[i] = Xup[i] @ v[tree.parent[i]] + vJ
        c[i] = crm(v[i]) @ vJ
        pA[i] = bias_force(tree.I[i], v[i])
        if f_ext is not None:
            pA[i] -= f_ext[i]
    U = [None] * (n + 1)
    Dinv = [None] * (n + 1)
    u = [None] * (n + 1)
    for i in range(n, 0, -1):
        S = tree.S[i, :, : tree.nv[i]]
        U[i] = IA[i] @ S
        D = S.T @ U[i]
        Dinv[i] = 1.0 / D if D.shape == (1, 1) else np.linalg.inv(D)
        u[i] = tau[tree.iv[i] : tree.iv[i] + tree.nv[i]] - S.T @ pA[i]
        p = tree.parent[i]
        if p > 0:
            Ia = IA[i] - U[i] @ Dinv[i] @ U[i].T
            pa = pA[i] + Ia @ c[i] + U[i] @ (Dinv[i] @ u[i])
            IA[p] += Xup[i].T @ Ia @ Xup[i]
            pA[p] += Xup[i].T @ pa
    a = np.zeros((n + 1, 6))
    a[0] = -tree.a_grav
    qdd = np.zeros(tree.nv_total)
    for i in range(1, n + 1):
        S = tree.S[i, :, : tree.nv[i]]
        a_p = Xup[i] @ a[tree.parent[i]] + c[i]
        qdd_i = Dinv[i] @ (u[i] - U[i].T @ a_p)
        qdd[tree.iv[i] : tree.iv[i] + tree.nv[i]] = qdd_i
        a[i] = a_p + S @ qdd_i
    return qdd
