"""Closed loops by coordinate partitioning from the explicit scheme's outputs (PyMbs Background,
"Explicit Handling of Kinematic Loops", Eq. 10), in the independent rates u of q = (u, v):

    vdot = B_vu udot,  vddot = B_vu uddot + b',  B_vu = -A_v^+ A_u,  b' = A_v^+ gamma,
    J = [I; B_vu] (rows in the joint order),  J^T M J uddot = J^T (f - h - M b),  b = [0; b'],

with A = dPhidot/dqd and gamma = -Adot qd of the cut joints (A qdd = gamma on the loops). A^+ is the
least-squares pseudo-inverse, so the redundant rows of a planar loop closed by a spatial cut joint
(a four-bar: 5 rows of rank 2) are handled as rank-deficient rows, not dropped by hand.
"""

from __future__ import annotations

import numpy as np

RCOND = 1e-10  # singular values of A_v below RCOND x the largest are treated as zero


def partitioned_accelerations(M, h, f, A, gamma, iu) -> np.ndarray:
    """qdd (nv,) on the loops, from M (nv, nv), h, f (nv,), A (m, nv), gamma (m,) and the
    independent velocity indices iu; the dependent ones are all the others."""
    nv = M.shape[0]
    iu = np.asarray(iu, dtype=int)
    iv = np.setdiff1d(np.arange(nv), iu)
    Av_pinv = np.linalg.pinv(A[:, iv], rcond=RCOND)
    J = np.zeros((nv, iu.size))
    J[iu, np.arange(iu.size)] = 1.0
    J[iv] = -Av_pinv @ A[:, iu]
    b = np.zeros(nv)
    b[iv] = Av_pinv @ gamma
    udd = np.linalg.solve(J.T @ M @ J, J.T @ (f - h - M @ b))
    return J @ udd + b


def multiplier_accelerations(M, h, f, A, gamma) -> np.ndarray:
    """qdd (nv,) on the loops by Lagrange multipliers (seed 003, No's method Eq. 24, no
    stabilisation): M qdd + A^T lambda = f - h, A qdd = gamma; lambda from the Schur complement
    A M^-1 A^T (pseudo-inverse: minimum-norm multipliers for redundant rows)."""
    Minv_A = np.linalg.solve(M, A.T)
    Minv_r = np.linalg.solve(M, f - h)
    lam = np.linalg.pinv(A @ Minv_A, rcond=RCOND) @ (A @ Minv_r - gamma)
    return Minv_r - Minv_A @ lam
