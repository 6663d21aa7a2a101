"""Inverse dynamics by the recursive Newton-Euler algorithm (RBDA Table 5.1)."""

from __future__ import annotations

import numpy as np

from ..spatial import Array, bias_force, crm
from ..spec.tree import Tree, joint_transforms


def rnea(tree: Tree, q: Array, qd: Array, qdd: Array, f_ext: Array | None = None) -> Array:
    """tau = M(q) qdd + C(q, qd) qd + G(q) - J^T f_ext  [N m or N], shape (nv,).

    f_ext: (N+1, 6) external wrench on each body [N m; N], body axes, about the body origin
    (row 0, the world, is ignored). Gravity enters as the base acceleration a_0 = -a_grav.
    """
    Xup, _ = joint_transforms(tree, q)
    n = tree.N
    v = np.zeros((n + 1, 6))
    a = np.zeros((n + 1, 6))
    f = np.zeros((n + 1, 6))
    a[0] = -tree.a_grav
    for i in range(1, n + 1):
        S = tree.S[i, :, : tree.nv[i]]
        sl = slice(tree.iv[i], tree.iv[i] + tree.nv[i])
        vJ = S @ qd[sl]
        v[i] = Xup[i] @ v[tree.parent[i]] + vJ
        a[i] = Xup[i] @ a[tree.parent[i]] + S @ qdd[sl] + crm(v[i]) @ vJ
        f[i] = tree.I[i] @ a[i] + bias_force(tree.I[i], v[i])
        if f_ext is not None:
            f[i] -= f_ext[i]
    tau = np.zeros(tree.nv_total)
    for i in range(n, 0, -1):
        S = tree.S[i, :, : tree.nv[i]]
        tau[tree.iv[i] : tree.iv[i] + tree.nv[i]] = S.T @ f[i]
        f[tree.parent[i]] += Xup[i].T @ f[i]
    return tau
