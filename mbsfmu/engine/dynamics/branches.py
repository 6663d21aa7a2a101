"""Assembly branches of partitioned closed loops: the dependent coordinates v followed along the
branch they start on as the independent ones u move (continuation), and angles kept near guesses.

A loop's equations Phi_p(u, v) = 0 have in general several solutions v for one u (a four-bar's two
assembly modes, "open" and "crossed"). Newton from a guess (``closed_loops.solve_dependent``)
converges to whichever solution its iteration reaches, possibly on the other branch and wound by
multiples of 2 pi. ``follow_branch`` follows the branch instead: the Euler-Newton
predictor-corrector continuation (Allgower & Georg, *Introduction to Numerical Continuation
Methods*, SIAM 2003, Sec. 2.2 and Ch. 3) on the natural parameter s in [0, 1], u(s) = u0 (+) s du:

- predictor (Euler): q <- q (+) ds t, t = J du the tangent of (u, H(u)), J = [I; B_vu],
  B_vu = -Phi_v^+ Phi_u (``closed_loops.reduction``), ds shortened so that no coordinate moves
  more than STEP;
- corrector: Newton on Phi_p(u(s + ds), v) = 0 from the predicted v
  (``closed_loops.newton_dependent``), at most CORRECTOR_ITER iterations, accepted only if it moves
  v by at most half the step's length ds |t|_inf (a corrector that goes further is heading for
  another branch);
- a rejected step is halved, an accepted one doubled for the next (up to the STEP limit).

The branch ends where its tangent does not exist (Phi_v singular: a turning point, where two
assembly branches meet and beyond which the loop does not close on them) or where the corrector
fails on steps shorter than MIN_STEP: ``BranchEndError`` names the point reached.
"""

from __future__ import annotations

import numpy as np

from .. import joints
from ..spatial import Array
from ..spec.tree import Tree
from .closed_loops import (
    LoopSet,
    Partition,
    PartitionError,
    integrate,
    newton_dependent,
    reduction,
    solve_dependent,
)

STEP = 0.1  # [rad or m] largest move of any coordinate in one continuation step
MIN_STEP = 1e-9  # [rad or m] a rejected step of the independent coordinates this short ends the branch
CORRECTOR_ITER = 8  # Newton iterations per corrector (quadratic convergence needs 2-4 from the predictor)
MAX_STEPS = 100_000  # a bound on the steps of one continuation (a guard; ~10 per radian in practice)
TURNING_RATIO = 1e-4  # smallest / largest singular value of Phi_v below which the end is called a turning point


class BranchEndError(PartitionError):
    """The assembly branch ends before the target: ``q`` (nq,) the last configuration reached on
    it, ``fraction`` the part of the way done (0..1)."""

    def __init__(self, message: str, q: Array, fraction: float):
        super().__init__(message)
        self.q, self.fraction = q, fraction


def follow_branch(tree: Tree, loops: LoopSet, part: Partition, q: Array, du: Array) -> Array:
    """q (nq,) at the independent coordinates u (+) du [rad or m; du (len(part.iu),) tangent, in
    part.iu's order], the dependent ones v followed along the assembly branch of q (module
    docstring); q is first closed by Newton from its v (a no-op when it is consistent).
    BranchEndError where the branch ends on the way."""
    q, A = solve_dependent(tree, loops, part, q)
    nv = tree.nv_total
    dv = np.zeros(nv)
    dv[part.iu] = du
    size = float(np.max(np.abs(du), initial=0.0))
    if size == 0.0:
        return q
    q0, indep = q, _independent_entries(tree, part)
    s, h = 0.0, min(1.0, STEP / size)
    for _ in range(MAX_STEPS):
        try:
            J, _ = reduction(A[part.rows], None, part, nv)
        except PartitionError as e:
            raise _end(tree, loops, part, q0, q, dv, s, str(e)) from None
        t = J @ dv[part.iu]  # dq/ds along the branch
        t_max = float(np.max(np.abs(t)))
        ds = min(h, 1.0 - s, STEP / t_max)
        last = ds == 1.0 - s
        q_pred = integrate(tree, q, ds * t)
        q_pred[indep] = integrate(tree, q0, (1.0 if last else s + ds) * dv)[indep]  # u(s) exactly
        q_new, A_new, _r, ok = newton_dependent(tree, loops, part, q_pred, CORRECTOR_ITER)
        if ok and float(np.max(np.abs(q_new - q_pred), initial=0.0)) <= 0.5 * ds * t_max:
            q, A = q_new, A_new
            s = 1.0 if last else s + ds
            if s >= 1.0:
                return q
            h = min(2.0 * ds, 1.0)
            continue
        h = 0.5 * ds
        if h * size < MIN_STEP:
            raise _end(tree, loops, part, q0, q, dv, s, _singular_reason(A, part))
    raise _end(tree, loops, part, q0, q, dv, s, f"no end after {MAX_STEPS} continuation steps")


def wind_like(tree: Tree, part: Partition, q: Array, q_ref: Array) -> Array:
    """q with each dependent revolute angle shifted by a multiple of 2 pi to within pi of its value
    in q_ref [rad] (the same configuration: the closure rows see the angles through sin and cos)."""
    q = q.copy()
    dependent = set(part.iv.tolist())
    for i in range(1, tree.N + 1):
        if int(tree.jtype[i]) == joints.REVOLUTE and int(tree.iv[i]) in dependent:
            k = int(tree.iq[i])
            q[k] -= 2.0 * np.pi * np.round((q[k] - q_ref[k]) / (2.0 * np.pi))
    return q


def _independent_entries(tree: Tree, part: Partition) -> Array:
    """Boolean mask (nq,) of the configuration entries of joints not solved from the loops."""
    mask = np.ones(tree.nq_total, dtype=bool)
    dependent = set(part.iv.tolist())
    for i in range(1, tree.N + 1):
        if tree.nv[i] and int(tree.iv[i]) in dependent:
            mask[int(tree.iq[i]) : int(tree.iq[i] + tree.nq[i])] = False
    return mask


def _singular_reason(A: Array, part: Partition) -> str:
    """Why the corrector fails at the last point: Phi_v's conditioning there."""
    sv = np.linalg.svd(A[np.ix_(part.rows, part.iv)], compute_uv=False)
    ratio = float(sv[-1] / sv[0]) if sv.size and sv[0] > 0 else 0.0
    if ratio < TURNING_RATIO:
        return (
            f"Phi_v is nearly singular there (smallest / largest singular value {ratio:.2g}): a turning "
            "point, where this assembly branch meets another one; the loop does not close beyond it "
            "on this branch"
        )
    return (
        f"the loop equations have no solution near it on steps down to {MIN_STEP:g} (Phi_v regular, "
        f"smallest / largest singular value {ratio:.2g})"
    )


def _end(tree, loops, part, q0, q, dv, s, reason: str) -> BranchEndError:
    """BranchEndError naming the moving independent coordinates at the start, end and target."""
    moving = [int(k) for k in part.iu if dv[k] != 0.0]
    target = integrate(tree, q0, dv)

    def at(x):
        return ", ".join(_coordinate(tree, part, x, k) for k in moving)

    dependent = ", ".join(part.dependent) or "all others on the loop"
    return BranchEndError(
        f"loop(s) {', '.join(part.loops)}: the assembly branch through {at(q0)} ends at "
        f"{at(q) if s > 0 else 'that point'} ({100.0 * s:.3g}% of the way to {at(target)}): the dependent "
        f"joints ({dependent}) cannot follow further: {reason}",
        q,
        s,
    )


def _coordinate(tree: Tree, part: Partition, q: Array, k: int) -> str:
    """'name = value' of the velocity coordinate k (1-DoF joints), else 'name[j]'."""
    i = next(i for i in range(1, tree.N + 1) if tree.iv[i] <= k < tree.iv[i] + tree.nv[i])
    name = part.dof_names[k] if part.dof_names else f"coordinate {k}"
    if tree.nq[i] == 1:
        return f"{name} = {float(q[int(tree.iq[i])]):.6g}"
    return f"{name}[{k - int(tree.iv[i]) + 1}]"


__all__ = ["BranchEndError", "follow_branch", "wind_like"]
