"""The dynamics Jacobians against Pinocchio's computeABADerivatives (test-only oracle; Carpentier &
Mansard, RSS 2018: analytic derivatives, tangent-space q derivative with q (+) v = q exp(v), the
same first-order perturbation as the engine's Model.integrate, local axes for free joints), and
the C core against the numpy reference.

Tolerance: central differences err ~eps^(2/3) ~ 4e-11 relative to the size of qdd's terms in
the ideal case; ABA's round-off grows with the tree (~N eps in f, divided by 2h ~ 1.2e-5), and
the measured worst error here is 1.8e-9 absolute, at most 5e-10 relative to the largest entry.
Compared at 1e-8 x max(1, largest entry): 20x headroom over the measured worst.
"""

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from mbsfmu.engine.native.core import usable  # noqa: E402
from mbsfmu.linear.jacobians import H_REL, Accelerations, dynamics_jacobians  # noqa: E402
from tests.support.pin_twin import q_to_pin, to_pinocchio  # noqa: E402
from tests.support.trees import random_tree  # noqa: E402

RTOL_J = 1e-8


def close(actual, desired, what):
    scale = max(1.0, float(np.abs(desired).max(initial=0.0)))
    np.testing.assert_allclose(actual, desired, rtol=0, atol=RTOL_J * scale, err_msg=what)


@pytest.mark.parametrize(
    "n, free_base, types",
    [(3, True, None), (12, True, None), (10, False, ("spherical", "prismatic")), (25, True, None)],
)
def test_as_pinocchio_computeABADerivatives(rng, n, free_base, types):
    model = random_tree(rng, n, free_base=free_base, **({} if types is None else {"types": types}))
    pm = to_pinocchio(model)
    pd = pm.createData()
    f = Accelerations(model)
    for _ in range(3):
        q, qd = model.random_state(rng)
        u = rng.normal(size=f.nu)
        J = dynamics_jacobians(f, q, qd, u, method="central")  # the oracle path (analytic: test_derivatives)
        tau = f.sim.forces.joint_forces(u)
        dq, dv, Minv = (np.array(a) for a in pin.computeABADerivatives(pm, pd, q_to_pin(model, q), qd, tau))
        Minv = np.triu(Minv) + np.triu(Minv, 1).T  # Pinocchio fills the upper triangle
        close(J.qdd, pin.aba(pm, pd, q_to_pin(model, q), qd, tau), "qdd")
        close(J.dqdd_dq, dq, "d(qdd)/d(dq)")
        close(J.dqdd_dqd, dv, "d(qdd)/d(qd)")
        close(J.dqdd_du, Minv[:, f.sim.forces.layout.tau_dof], "d(qdd)/du")


@pytest.mark.skipif(not usable(), reason="the C core cannot be built here")
def test_native_and_python_agree(rng):
    """The same differences on the C core and on the numpy reference (two codes of ABA)."""
    model = random_tree(rng, 4, free_base=True, springs=True)
    q, qd = model.random_state(rng)
    fn, fp = Accelerations(model, "native"), Accelerations(model, "python")
    assert fn.core is not None and fp.core is None
    u = rng.normal(size=fn.nu)
    Jn, Jp = dynamics_jacobians(fn, q, qd, u, method="central"), dynamics_jacobians(fp, q, qd, u)
    for a, b, what in zip(
        (Jn.dqdd_dq, Jn.dqdd_dqd, Jn.dqdd_du), (Jp.dqdd_dq, Jp.dqdd_dqd, Jp.dqdd_du), ("dq", "dqd", "du")
    ):
        close(a, b, what)


def test_step_is_eps_cube_root():
    assert H_REL == pytest.approx(6.06e-6, rel=1e-3)
