"""Tangent coordinates: ``difference`` inverts ``Model.integrate``; ``rate_jacobian`` is the
derivative of d(dq)/dt at dq = 0, checked by nested central differences of the manifold motion.

Tolerances: difference(integrate(q, v)) = v to 1e-12 (quaternion log/exp round-off on |v| <= 1).
The nested differences (inner step 1e-6, outer 1e-4) err by ~eps/1e-6/1e-4 ~ 2e-6 (round-off) plus
~1e-8 (truncation): compared at 2e-5 on entries O(1); a wrong sign or factor errs by O(1).
"""

import numpy as np

from mbsfmu.engine import joints
from mbsfmu.linear.tangent import difference, rate_jacobian, tangent_names
from tests.support.trees import random_tree


def test_difference_inverts_integrate(rng):
    for free_base in (True, False):
        model = random_tree(rng, 6, free_base=free_base, types=("spherical", "revolute", "prismatic"))
        for _ in range(5):
            q, _ = model.random_state(rng)
            v = rng.uniform(-1, 1, model.nv)
            np.testing.assert_allclose(difference(model, q, model.integrate(q, v)), v, rtol=0, atol=1e-12)


def test_rate_jacobian_by_differences(rng):
    model = random_tree(rng, 4, free_base=True, types=("spherical", "revolute"))
    q0, qd = model.random_state(rng)
    inner, outer = 1e-6, 1e-4

    def dq_rate(dq):
        """d(dq)/dt at q0 (+) dq moving with rates qd (central difference along the motion)."""
        q = model.integrate(q0, dq)
        ahead, behind = model.integrate(q, inner * qd), model.integrate(q, -inner * qd)
        return (difference(model, q0, ahead) - difference(model, q0, behind)) / (2 * inner)

    np.testing.assert_allclose(dq_rate(np.zeros(model.nv)), qd, rtol=0, atol=1e-8)
    E = np.column_stack([(dq_rate(outer * e) - dq_rate(-outer * e)) / (2 * outer) for e in np.eye(model.nv)])
    np.testing.assert_allclose(E, rate_jacobian(model, qd), rtol=0, atol=2e-5)
    assert np.abs(rate_jacobian(model, qd)).max() > 0.1  # the free and spherical blocks are there
    assert model.tree.jtype[1] == joints.FREE


def test_names(rng):
    model = random_tree(rng, 3, free_base=True, types=("revolute",))
    pos, vel = tangent_names(model)
    assert len(pos) == len(vel) == model.nv
    assert pos[:6] == [f"dq.j0[{k}]" for k in range(1, 7)] and vel[0] == "qd.j0[1]"
    assert {p.split(".")[0] for p in pos[6:]} == {"q"}
