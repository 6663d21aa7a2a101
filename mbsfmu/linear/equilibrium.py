"""Equilibria: q with qdd(q, 0, u) = 0 for given inputs u, by Newton's method on the tangent space
(of the independent coordinates for closed loops: ``Accelerations.iu``).

Newton step (e.g. Nocedal & Wright, *Numerical Optimization*, 2nd ed., Sec. 11.1):
J dq = -qdd(q), J = d(qdd)/d(dq) at qd = 0 (mbsfmu/linear/jacobians.py), solved in the
least-squares sense (minimum norm) and shortened to at most MAX_STEP per coordinate, so that
directions in which qdd does not change (a free-floating base, a trolley on a frictionless rail:
a continuum of equilibria) are left where they start; q <- q (+) dq (``Model.integrate``; with
closed loops along the independent coordinates, the dependent ones followed along the start's
assembly branch, ``Accelerations.move``), halving dq while |qdd| does not decrease or the branch
ends before q (+) dq (backtracking). The equilibrium found is
the one Newton's iteration reaches from the start, stable or not: the eigenvalues of the linear
model tell which.
"""

from __future__ import annotations

import numpy as np

from ..engine.dynamics.closed_loops import PartitionError
from ..engine.spatial import Array
from ..errors import InputError
from .jacobians import Accelerations, check_regular, dynamics_jacobians

QDD_TOL = 1e-9  # [rad/s^2 or m/s^2] |qdd|_inf accepted as zero: ~1e5 x the round-off of O(10) accelerations
MAX_ITER = 50
MAX_HALVINGS = 30
MAX_STEP = np.pi / 2  # [rad or m] largest Newton step per coordinate: a quarter turn (a trust region)
LSTSQ_RCOND = 1e-9  # singular values of J below this x the largest count as zero (FD error ~1e-10 relative)


class EquilibriumError(InputError):
    """Newton's iteration did not reach qdd = 0: names the residual and the iterations."""


def find_equilibrium(f: Accelerations, q: Array, u: Array, tol: float = QDD_TOL, max_iter: int = MAX_ITER) -> Array:
    """q* (nq,) with |qdd(q*, 0, u)|_inf <= tol [rad/s^2 or m/s^2], Newton from q (module docstring);
    EquilibriumError with the residual and iteration count when it does not get there."""
    model = f.model
    qd = np.zeros(model.nv)
    q = f.close(q, qd)[0]
    r = f(q, qd, u)[f.iu]
    for it in range(max_iter + 1):
        res = float(np.max(np.abs(r), initial=0.0))
        if res <= tol:
            return q
        if it == max_iter:
            break
        check_regular(model, q)
        J = dynamics_jacobians(f, q, qd, u, rates_and_inputs=False).dqdd_dq[f.iu]
        dq = np.linalg.lstsq(J, -r, rcond=LSTSQ_RCOND)[0]
        dq *= min(1.0, MAX_STEP / max(float(np.max(np.abs(dq), initial=0.0)), 1e-300))
        for _ in range(MAX_HALVINGS):
            try:
                q_new = f.move(q, dq)
                r_new = f(q_new, qd, u)[f.iu]
            except PartitionError:  # the loop's branch ends before q (+) dq: a shorter step
                dq = 0.5 * dq
                continue
            if np.max(np.abs(r_new), initial=0.0) < res:
                break
            dq = 0.5 * dq
        else:
            raise EquilibriumError(
                f"no equilibrium found for model {model.source}: max |qdd| = {res:.3g} after {it + 1} Newton "
                f"iterations (tolerance {tol:g}), and no step along the Newton direction lowers it: the inputs "
                "may hold no equilibrium (e.g. a constant force on a free body), or start nearer one"
            )
        q, r = q_new, r_new
    raise EquilibriumError(
        f"no equilibrium found for model {model.source}: max |qdd| = {res:.3g} after {max_iter} Newton "
        f"iterations (tolerance {tol:g}); start nearer an equilibrium"
    )


__all__ = ["EquilibriumError", "find_equilibrium"]
