"""The analytic dynamics Jacobians (Carpentier & Mansard's derivatives in the C core, the force
elements' in force_derivatives.c; ``dynamics_jacobians``) against the explicit scheme's exact
derivatives (issue 24 item 2: "the symbolic scheme where it applies"): qdd = M^-1 (f - h) (seed 004
Eq. 9), so, differentiating M qdd = f - h,

    dqdd/dq_k = M^-1 (df/dq_k - dh/dq_k - dM/dq_k qdd),  dqdd/dqd = M^-1 (df/dqd - dh/dqd),
    dqdd/du = M^-1 df/du,

with df/dq, dh/dq, dM/dq_k SymPy's derivatives of the scheme's expressions, evaluated in float64.
Where it applies: trees whose coordinates are their own tangent coordinates (revolute and prismatic
joints; a free or spherical joint's quaternion is not), small enough that SymPy's derivatives of M
stay cheap (the seed-001 systems and the SCARA; the 7-link chain's take minutes to lambdify).

Tolerance: each side is a sum of at most a few hundred products, ~n eps S for entries of scale S,
then a solve with M: 1e-12 cond(M) of max(1, the largest entry), as the scheme's own check against
the engine (mbsfmu/symbolic/verify.py RTOL)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import mbsfmu
from mbsfmu.engine.native.core import usable
from mbsfmu.linear.jacobians import Accelerations, dynamics_jacobians
from mbsfmu.symbolic.scheme import derive
from mbsfmu.symbolic.verify import RTOL, random_states

MODELS = "scenarios/models/"


def exact_jacobians(eq):
    """numeric functions (q, qd, u) -> (qdd, dqdd/dq, dqdd/dqd, dqdd/du) from the scheme's M, h, f."""
    q, qd, u = sp.Matrix(eq.q), sp.Matrix(eq.qd), sp.Matrix(eq.u)
    M, h, f = eq.expanded()
    M, r = M.subs(eq.params), (f - h).subs(eq.params)
    args = (list(eq.q), list(eq.qd), list(eq.u))
    fM = sp.lambdify(args, M, "numpy")
    fr = sp.lambdify(args, r, "numpy")
    fdM = [sp.lambdify(args, M.diff(s), "numpy") for s in eq.q]
    fr_q = sp.lambdify(args, r.jacobian(q), "numpy")
    fr_qd = sp.lambdify(args, r.jacobian(qd), "numpy")
    fr_u = sp.lambdify(args, r.jacobian(u) if len(eq.u) else sp.zeros(len(eq.qd), 0), "numpy")

    def at(qv, qdv, uv):
        a = (list(qv), list(qdv), list(uv))
        Mv = np.array(fM(*a), dtype=float)
        qdd = np.linalg.solve(Mv, np.array(fr(*a), dtype=float).ravel())
        dMq = np.column_stack([np.array(d(*a), dtype=float) @ qdd for d in fdM])
        dq = np.linalg.solve(Mv, np.array(fr_q(*a), dtype=float) - dMq)
        dqd = np.linalg.solve(Mv, np.array(fr_qd(*a), dtype=float))
        du = np.linalg.solve(Mv, np.array(fr_u(*a), dtype=float).reshape(len(qdd), -1))
        return qdd, dq, dqd, du, float(np.linalg.cond(Mv))

    return at


def check(name: str, states: int = 4) -> float:
    model = mbsfmu.load_model(MODELS + name)
    assert model.nq == model.nv and not model.loops  # coordinates = tangent coordinates
    eq = derive(model)
    f = Accelerations(model)
    assert tuple(eq.u_names) == tuple(f.input_names)
    exact = exact_jacobians(eq)
    worst = 0.0
    for q, qd, u in random_states(model, states):
        J = dynamics_jacobians(f, q, qd, u, method="analytic")
        qdd, dq, dqd, du, cond = exact(q, qd, u)
        for label, mine, ref in (
            ("qdd", J.qdd, qdd),
            ("dq", J.dqdd_dq, dq),
            ("dqd", J.dqdd_dqd, dqd),
            ("du", J.dqdd_du, du),
        ):
            scale = max(1.0, float(np.abs(ref).max(initial=0.0)))
            err = float(np.abs(mine - ref).max(initial=0.0)) / scale
            worst = max(worst, err / cond)
            assert err <= RTOL * cond, f"{name} {label}: {err:.2g} > {RTOL * cond:.2g} (cond(M) {cond:.3g})"
    return worst


needs_core = pytest.mark.skipif(not usable(), reason="the C core does not build here")


@needs_core
@pytest.mark.parametrize(
    "name", ["compound_pendulum.yaml", "spring_pendulum.yaml", "trolley_pendulum.yaml", "scara.yaml"]
)
def test_analytic_jacobians_equal_the_schemes_exact_derivatives(name):
    check(name)
