"""Joint-space inertia matrix M by the composite-rigid-body algorithm (RBDA Table 6.2)."""

from __future__ import annotations

import numpy as np

from ..spatial import Array
from ..spec.tree import Tree, joint_transforms


def crba(tree: Tree, q: Array) -> Array:
    """M(q): (nv, nv) symmetric positive definite joint-space inertia [kg, kg m, kg m^2]."""
    Xup, _ = joint_transforms(tree, q)
    n = tree.N
    Ic = tree.I.copy()
    for i in range(n, 0, -1):
        if tree.parent[i] > 0:
            Ic[tree.parent[i]] += Xup[i].T @ Ic[i] @ Xup[i]
    M = np.zeros((tree.nv_total, tree.nv_total))
    for i in range(1, n + 1):
        S = tree.S[i, :, : tree.nv[i]]
        si = slice(tree.iv[i], tree.iv[i] + tree.nv[i])
        F = Ic[i] @ S
        M[si, si] = S.T @ F
        j = i
        while tree.parent[j] > 0:
            F = Xup[j].T @ F
            j = tree.parent[j]
            sj = slice(tree.iv[j], tree.iv[j] + tree.nv[j])
            M[si, sj] = F.T @ tree.S[j, :, : tree.nv[j]]
            M[sj, si] = M[si, sj].T
    return M
