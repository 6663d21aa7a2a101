"""Joints whose motion moves no mass: where the joint-space inertia M(q) is singular, in O(N).

M = sum_i J_i^T I_i J_i is positive semi-definite (KE = 1/2 qd^T M qd >= 0), so it is singular
iff some motion qd != 0 has zero kinetic energy. Two O(N) passes find such motions without
forming M (the dense eigendecomposition it replaces was O(N^3) time and O(N^2) memory):

1. Composite inertias Ic_i (RBDA Table 6.2, CRBA pass 1). The diagonal block of joint i is
   M_ii = S_i^T Ic_i S_i (RBDA Table 6.2: ``F = Ic_i S_i; M_ii = S_i^T F``): if it is singular,
   joint i alone moves no mass or inertia (in some direction for a multi-DoF joint).
2. Articulated-body inertias IA_i (RBDA Table 7.1, ABA pass 2 without bias forces):
   U_i = IA_i S_i, D_i = S_i^T U_i, IA_parent += Xup_i^T (IA_i - U_i D_i^+ U_i^T) Xup_i. The D_i
   are the pivots of the block LDL^T factorisation of M eliminating leaves first (RBDA Sec. 6.5,
   the same elimination ABA performs; Featherstone 2005, "Efficient factorization of the joint
   space inertia matrix"), so det M = prod det D_i and M (PSD) is singular iff some D_i is.
   D_i <= M_ii (IA_i <= Ic_i), so a singular M_ii gives a singular D_i; a singular D_i with a
   regular M_ii is a *combination* (e.g. coaxial joints with only massless bodies between).
   D_i^+ is the pseudo-inverse over the eigen-directions above the tolerance (the PSD Schur
   complement with a generalised inverse), so elimination continues past a singular pivot.

Each null direction n of a singular D_i extends to a null vector of M: joint i moves by n, its
descendants respond as articulated bodies with zero joint force (u_c = -D_c^+ U_c^T Xup_c a_p,
a_c = Xup_c a_p + S_c u_c), everything else rests. Then tau_c = 0 below i, tau_i = D_i n = 0 and
the force into i's parent, IA_i S_i n, is 0 (n^T D_i n = 0 with IA_i PSD), so M x = 0. The joints
with a non-negligible entry of that vector are the ones "combined". The walk stops where the
motion dies out (a body with full inertia ends it) or the subtree carries no inertia.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spatial import Array
from ..spec.tree import Tree, joint_transforms

SINGULAR_RTOL = 1e-12  # a pivot eigenvalue of D_i below this x trace(M_ii) counts as zero
SUPPORT_RTOL = 1e-6  # a joint is part of a null motion if its entry exceeds this x |null vector|
MAX_WALKS = 50  # null-motion walks per configuration (bounds the work on pathological models)


@dataclass(frozen=True)
class Singularity:
    """Joints i (1..N) where M(q) is singular. ``joints``: every joint with a non-negligible
    entry in a null vector of M; ``alone``: joints whose own block M_ii is singular;
    ``combined``: {joint: the other joints of the null motions it takes part in};
    ``overflow``: the composite inertias are not finite."""

    joints: frozenset
    alone: frozenset
    combined: dict
    overflow: bool = False


def _children(tree: Tree) -> list[list[int]]:
    kids: list[list[int]] = [[] for _ in range(tree.N + 1)]
    for i in range(1, tree.N + 1):
        kids[tree.parent[i]].append(i)
    return kids


def singular_joints(tree: Tree, q: Array) -> Singularity:
    """The joints that make M(q) singular (see the module docstring), O(N) time and memory."""
    n = tree.N
    Xup, _ = joint_transforms(tree, q)
    S = [tree.S[i, :, : tree.nv[i]] for i in range(n + 1)]
    Ic = tree.I.copy()
    for i in range(n, 0, -1):  # RBDA Table 6.2: Ic_lambda += X^T Ic_i X
        if tree.parent[i] > 0:
            Ic[tree.parent[i]] += Xup[i].T @ Ic[i] @ Xup[i]
    if not np.all(np.isfinite(Ic)):
        return Singularity(frozenset(), frozenset(), {}, overflow=True)
    # per joint, relative to its own block M_ii = S_i^T Ic_i S_i: D_i is formed from the inertias of
    # i's subtree only (IA_i <= Ic_i), so its round-off is ~ eps trace(M_ii), whatever the rest of
    # the model weighs (a relative tolerance on trace(M) called a 1.5 kg link "massless" beside a
    # 1e300 kg m^2 one). trace(M_ii) = sum_k S_i[:, k] . (Ic_i S_i)[:, k], every joint at once (the
    # zero columns of tree.S past nv_i add exact zeros)
    tols = SINGULAR_RTOL * np.maximum(np.einsum("iak,iak->i", tree.S, Ic @ tree.S), 1e-300)
    IA = tree.I.copy()
    U, Dpinv, null = [None] * (n + 1), [None] * (n + 1), {}
    one, zero = np.ones((1, 1)), np.zeros((1, 1))  # the eigenvector of a 1x1 pivot; its pseudo-inverse if 0
    for i in range(n, 0, -1):  # RBDA Table 7.1, pass 2 (no bias terms)
        U[i] = IA[i] @ S[i]
        D = S[i].T @ U[i]
        if D.shape == (1, 1):  # a 1-DoF joint: D is its own eigenvalue, V = [[1]] (what eigh gives)
            if D[0, 0] > tols[i]:
                Dpinv[i] = 1.0 / D
            else:
                Dpinv[i], null[i] = zero, one
        else:
            lam, V = np.linalg.eigh(0.5 * (D + D.T))
            keep = lam > tols[i]
            Dpinv[i] = (V[:, keep] / lam[keep]) @ V[:, keep].T
            if not keep.all():
                null[i] = V[:, ~keep]
        if tree.parent[i] > 0:
            Ia = IA[i] - U[i] @ Dpinv[i] @ U[i].T
            IA[tree.parent[i]] += Xup[i].T @ Ia @ Xup[i]
    alone = frozenset(i for i in null if np.linalg.eigvalsh(S[i].T @ Ic[i] @ S[i])[0] <= tols[i])
    kids = _children(tree)
    combined: dict[int, set] = {}
    for i in sorted(null)[:MAX_WALKS]:
        for col in null[i].T:
            members = _null_motion_support(tree, Xup, S, U, Dpinv, Ic, kids, i, col, tols[i])
            if len(members) > 1:
                for j in members:
                    combined.setdefault(j, set()).update(members - {j})
    return Singularity(frozenset(null) | frozenset(combined), alone, {j: frozenset(v) for j, v in combined.items()})


def _null_motion_support(tree, Xup, S, U, Dpinv, Ic, kids, i, n_i, tol) -> set[int]:
    """Joints with a non-negligible entry in the null vector of M started by direction n_i of
    D_i (module docstring): a walk down i's subtree, stopping where the motion dies out."""
    a_i = S[i] @ n_i
    scale = np.linalg.norm(a_i)
    entries = {i: float(np.linalg.norm(n_i))}
    stack = [(c, a_i) for c in kids[i]]
    while stack:
        c, a_p = stack.pop()
        if np.trace(Ic[c]) <= tol:  # no inertia below: the null motion leaves it alone
            continue
        a = Xup[c] @ a_p
        u = -Dpinv[c] @ (U[c].T @ a)
        a_c = a + S[c] @ u
        entries[c] = float(np.linalg.norm(u))
        if np.linalg.norm(a_c) > 1e-9 * scale:
            stack.extend((g, a_c) for g in kids[c])
    norm = np.sqrt(sum(e * e for e in entries.values()))
    return {j for j, e in entries.items() if e > SUPPORT_RTOL * norm}


__all__ = ["Singularity", "singular_joints"]
