"""The force elements' generalized force Q(q, qd, u) and its analytic derivatives
(mbsfmu/engine/native/force_derivatives.c, ``Core.force_derivatives``): point spring-dampers,
thrusters and body wrenches.

Oracles. Q against the dynamics that apply it (forces.c mbs_body_wrenches inside the Simulator's
forward dynamics, a second code): Q = ID(q, qd, qdd) - B u with qdd the Simulator's accelerations
and ID the inverse dynamics with the joint springs and dampers (RNEA). Its derivatives against
central differences of Q along q (+) h e_j, qd + h e_j, u + h e_j (h = H_REL = eps^(1/3)).

Tolerances. Q: the RNEA sums ~N terms of the size of M qdd, so ~N eps |M qdd| ~ 1e-14 relative;
compared at 1e-11 x max(1, |B u|, |Q|) (measured worst 2.8e-13 relative). The derivatives:
central differences err ~eps^(2/3) ~ 4e-11 relative to the size of Q and its derivatives
(truncation h^2/6 |Q'''| and round-off eps |Q| / h); measured worst 7.3e-10 relative over these
cases with 10 seeds and the bundled models;
compared at 1e-8 x max(1, largest entry, largest |Q|), as tests/engine/test_derivatives.py.
"""

from dataclasses import replace

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.model import Model
from mbsfmu.engine.native.core import Core, usable
from mbsfmu.engine.spec.description import Anchor, SpringDamper
from mbsfmu.errors import InputError
from mbsfmu.linear.jacobians import Accelerations
from tests.support.differences import central
from tests.support.paths import MODELS
from tests.support.trees import random_tree, with_force_elements

pytestmark = pytest.mark.skipif(not usable(), reason="the C core cannot be built here")
RTOL_Q, RTOL_FD = 1e-11, 1e-8

CASES = [
    (4, True, ("revolute", "prismatic", "spherical", "fixed")),
    (8, True, ("revolute", "prismatic", "spherical", "fixed")),
    (7, False, ("spherical", "prismatic")),
    (10, False, ("revolute", "fixed")),
]


def forces_model(rng, n, free_base, types) -> Model:
    return with_force_elements(random_tree(rng, n, free_base=free_base, types=types, springs=True), rng)


def check_against_central_differences(model: Model, core: Core, q, qd, u):
    Q, dQ_dq, dQ_dqd, dQ_du = core.force_derivatives(q, qd, u)
    nv, nu = model.nv, u.size
    refs = (
        central(lambda x: core.force_derivatives(x, qd, u)[0], q, nv, model.integrate),
        central(lambda x: core.force_derivatives(q, x, u)[0], qd, nv, np.add),
        central(lambda x: core.force_derivatives(q, qd, x)[0], u, nu, np.add),
    )
    for got, ref, what in zip((dQ_dq, dQ_dqd, dQ_du), refs, ("dQ/dq", "dQ/dqd", "dQ/du")):
        scale = max(1.0, float(np.abs(ref).max(initial=0.0)), float(np.abs(Q).max()))
        np.testing.assert_allclose(got, ref, rtol=0, atol=RTOL_FD * scale, err_msg=f"{model.source}: {what}")
    return Q


def check_against_dynamics(model: Model, q, qd, u):
    """Q = ID(q, qd, qdd) - B u at the Simulator's qdd (module docstring)."""
    f = Accelerations(model, "native")
    Bu = f.sim.forces.joint_forces(u)
    Q = f.core.force_derivatives(q, qd, u)[0]
    ref = f.core.inverse_dynamics(q, qd, f(q, qd, u)) - Bu
    scale = max(1.0, float(np.abs(Bu).max(initial=0.0)), float(np.abs(ref).max()))
    np.testing.assert_allclose(Q, ref, rtol=0, atol=RTOL_Q * scale, err_msg=f"{model.source}: Q")


@pytest.mark.parametrize("n, free_base, types", CASES)
def test_random_trees_as_central_differences(rng, n, free_base, types):
    """Random trees (free base or not, every joint type) with point springs between random bodies
    and the world, a thruster and world- and body-axes wrenches, at random states (qd != 0) and
    inputs: Q as the dynamics apply it, its derivatives as central differences."""
    model = forces_model(rng, n, free_base, types)
    core = Core(model)
    for _ in range(3):
        q, qd = model.random_state(rng)
        u = rng.normal(size=core.n_u)
        Q = check_against_central_differences(model, core, q, qd, u)
        assert np.abs(Q).max() > 0.1  # the elements act: the comparison is not of zeros
        check_against_dynamics(model, q, qd, u)


@pytest.mark.parametrize("name", ["spacecraft.yaml", "urdf_quadruped_overlay.yaml"])
def test_bundled_models(rng, name):
    """The bundled models with force elements: the spacecraft's thruster, the quadruped's push
    (a world-axes body wrench)."""
    model = mbsfmu.load_model(MODELS / name)
    assert model.spec.forces and not model.loops
    core = Core(model)
    for _ in range(3):
        q, qd = model.random_state(rng)
        u = rng.normal(size=core.n_u)
        check_against_central_differences(model, core, q, qd, u)
        check_against_dynamics(model, q, qd, u)


def test_short_spring_has_no_force(rng):
    """A spring shorter than forces.LENGTH_EPS (here: its world anchor placed on its body anchor's
    position at q) has no direction and no force (forces.c), so it adds nothing to Q or to its
    derivatives, and the dynamics agree."""
    bare = random_tree(rng, 5, free_base=True)
    q, qd = bare.random_state(rng)
    body, r = bare.body_names[3], np.array([0.1, -0.2, 0.3])
    P = bare.forward_kinematics(q).point_position(bare.body_index[body], r)  # world axes [m]
    spring = SpringDamper(
        name="short", a=Anchor(body=body, point=tuple(r)), b=Anchor(body="world", point=tuple(P)), k=7.0, l0=0.4
    )
    model = Model(replace(bare.spec, forces=(spring,)), source="short spring")
    core = Core(model)
    u = rng.normal(size=core.n_u)
    Q, dq, dqd, du = core.force_derivatives(q, qd, u)
    assert not Q.any() and not dq.any() and not dqd.any() and not du.any()
    check_against_dynamics(model, q, qd, u)
    moved = replace(spring, b=Anchor(body="world", point=tuple(P + 1e-3)))  # 1.7 mm long: it pulls
    assert np.abs(Core(Model(replace(bare.spec, forces=(moved,)))).force_derivatives(q, qd, u)[0]).max() > 0.1


def test_bad_arguments_are_refused(rng):
    model = forces_model(rng, 3, True, ("revolute",))
    core = Core(model)
    q, qd = model.random_state(rng)
    u = np.zeros(core.n_u)
    with pytest.raises(InputError, match="u"):
        core.force_derivatives(q, qd, np.full(core.n_u, np.nan))
    with pytest.raises(InputError, match="u"):
        core.force_derivatives(q, qd, np.zeros(core.n_u + 1))
    with pytest.raises(InputError, match="qd"):
        core.force_derivatives(q, np.full(model.nv, np.inf), u)


@pytest.mark.parametrize("n, free_base, types", CASES[:3])
def test_external_wrenches_as_central_differences(rng, n, free_base, types):
    """Model.aba_derivatives and rnea_derivatives with f_ext (body axes: it turns with its body)
    against central differences of Model.forward_dynamics and inverse_dynamics with that f_ext
    (the ABA and RNEA with f_ext, a second code); f_ext's generalized force Q against
    inverse_dynamics without and with it. Tolerances as above, scaled by max(1, |qdd|, |tau|) (measured
    worst 4.9e-10 relative, 6 seeds)."""
    model = random_tree(rng, n, free_base=free_base, types=types, springs=True)
    core = Core(model)
    for _ in range(2):
        q, qd = model.random_state(rng)
        tau, qdd0, f_ext = rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=(model.N, 6))
        Q = core.wrench_derivatives(q, f_ext)[0]
        ref = model.inverse_dynamics(q, qd, qdd0) - model.inverse_dynamics(q, qd, qdd0, f_ext)
        np.testing.assert_allclose(Q, ref, rtol=0, atol=RTOL_Q * max(1.0, float(np.abs(ref).max())))
        check_with_f_ext(model, model.forward_dynamics, model.aba_derivatives, q, qd, tau, f_ext)
        check_with_f_ext(model, model.inverse_dynamics, model.rnea_derivatives, q, qd, qdd0, f_ext)
        assert not np.allclose(model.aba_derivatives(q, qd, tau)[0], model.aba_derivatives(q, qd, tau, f_ext)[0])


def check_with_f_ext(model, fn, derivatives, q, qd, b, f_ext):
    """derivatives(q, qd, b, f_ext)'s d/dq, d/dqd against central differences of fn(q, qd, b, f_ext)."""
    got = derivatives(q, qd, b, f_ext)[:2]
    refs = (
        central(lambda x: fn(x, qd, b, f_ext), q, model.nv, model.integrate),
        central(lambda x: fn(q, x, b, f_ext), qd, model.nv, np.add),
    )
    scale = max(1.0, float(np.abs(fn(q, qd, b, f_ext)).max()))
    for g, r, what in zip(got, refs, ("d/dq", "d/dqd")):
        tol = RTOL_FD * max(scale, float(np.abs(r).max()))
        np.testing.assert_allclose(g, r, rtol=0, atol=tol, err_msg=f"{derivatives.__name__} {what}")
