"""The Jacobian of the Model Exchange right-hand side (mbsfmu/engine/native/state_jacobian.c,
``Core.state_jacobian``): A = df/dxh, B = df/du of f(xh, u) = [qdot_h, qdd, P_in, P_diss] in the
host's coordinates (a quaternion's four numbers, of any norm), for trees; refused for closed loops.

Oracle: central differences (tests/support/differences.py, h = H_REL = eps^(1/3)) of f written here
from the core's right-hand side at the normalised state (``Core.rhs``, integrate.c, a second code)
plus the quaternion rows of host_state.c: |qh| times the unit quaternion's rate plus
k (1 - |qh|^2) qh. Tolerance as tests/engine/test_force_derivatives.py: the quotient errs by
~eps^(2/3) ~ 4e-11 relative to the size of f and its derivatives (truncation h^2/6 |f'''|, round-off
eps |f| / h); compared at 1e-8 x max(1, largest entry, largest |f|) (measured worst 4.3e-10 over these models
and random trees, 3 states each).
"""

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.joints import FREE, SPHERICAL
from mbsfmu.engine.native.core import Core, usable
from mbsfmu.errors import InputError
from tests.support.differences import central
from tests.support.paths import MODELS, ROOT
from tests.support.trees import random_tree, with_force_elements

pytestmark = pytest.mark.skipif(not usable(), reason="the C core cannot be built here")
RTOL_FD = 1e-8
K_NORM = 10.0  # [1/s] the FMU's (fmu_instance.c); any value: it is an argument


def quaternions(model) -> list[int]:
    t = model.tree
    return [
        int(t.iq[i]) + (3 if t.jtype[i] == FREE else 0)
        for i in range(1, model.N + 1)
        if t.jtype[i] in (SPHERICAL, FREE)
    ]


def host_rhs(core: Core, model, k_norm: float):
    """f(xh, u) of host_state.c from the core's rhs at the normalised state (module docstring)."""
    at = quaternions(model)

    def f(xh, u):
        x = xh.copy()
        for a in at:
            x[a : a + 4] /= np.linalg.norm(x[a : a + 4])
        xdot = core.rhs(x, u)
        for a in at:
            n = np.linalg.norm(xh[a : a + 4])
            xdot[a : a + 4] = n * xdot[a : a + 4] + k_norm * (1.0 - n * n) * xh[a : a + 4]
        return xdot

    return f


def check(model, rng) -> None:
    core = Core(model)
    f = host_rhs(core, model, K_NORM)
    q, qd = model.random_state(rng)
    xh = np.concatenate([q, qd, rng.normal(size=2)])
    for a in quaternions(model):  # off unit norm: the normalisation and the restoring term count
        xh[a : a + 4] *= rng.uniform(0.9, 1.1)
    u = rng.normal(size=core.n_u)
    A, B = core.state_jacobian(xh, u, K_NORM)
    ref_A = central(lambda x: f(x, u), xh, core.nx, np.add)
    ref_B = central(lambda w: f(xh, w), u, core.n_u, np.add)
    scale = max(1.0, float(np.abs(f(xh, u)).max()), float(np.abs(ref_A).max()), float(np.abs(ref_B).max(initial=0)))
    np.testing.assert_allclose(A, ref_A, rtol=0, atol=RTOL_FD * scale, err_msg=f"{model.source}: df/dx")
    np.testing.assert_allclose(B, ref_B, rtol=0, atol=RTOL_FD * scale, err_msg=f"{model.source}: df/du")
    assert np.all(A[:, -2:] == 0.0)  # nothing depends on W_in, W_diss


@pytest.mark.parametrize("name", ["spacecraft.yaml", "scara.yaml", "branched_robot.yaml", "urdf_arm7.urdf"])
def test_bundled_models_as_central_differences(rng, name):
    """The bundled trees (free base with wheels and a thruster, serial arm, branched robot with
    spherical joints, URDF arm) at random states with quaternions off unit norm and random inputs."""
    check(mbsfmu.load_model(MODELS / name), rng)


def test_stiff_chain_with_every_force_kind(rng):
    """tests/data/stiff_chain.yaml: joint spring-dampers, a point spring-damper, world- and
    body-axes wrenches and a thruster (every term of the P_in and P_diss rows)."""
    check(mbsfmu.load_model(ROOT / "tests" / "data" / "stiff_chain.yaml"), rng)


@pytest.mark.parametrize("free_base, types", [(True, ("revolute", "prismatic", "spherical")), (False, ("spherical",))])
def test_random_trees_with_force_elements(rng, free_base, types):
    """Random trees with point spring-dampers (damped: P_diss's spring terms), a thruster and
    wrenches, spherical joints and a free base."""
    for _ in range(2):
        model = with_force_elements(random_tree(rng, 6, free_base=free_base, types=types, springs=True), rng)
        check(model, rng)


def test_closed_loops_are_refused_with_the_reason():
    """The four-bar: InputError saying that the Jacobian is for trees."""
    model = mbsfmu.load_model(MODELS / "fourbar.yaml")
    core = Core(model)
    with pytest.raises(InputError, match="for trees: this model has 1 closed loop"):
        core.state_jacobian(core.x, np.zeros(core.n_u), K_NORM)
