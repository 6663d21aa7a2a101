"""Analytic derivatives of RNEA and ABA (mbsfmu/engine/native/derivatives.c, Carpentier & Mansard,
RSS 2018) against Pinocchio's computeRNEADerivatives / computeABADerivatives (test-only oracle,
the same algorithm and the same first-order tangent perturbation at dq = 0) and against central
differences of the engine's own inverse and forward dynamics.

Tolerances. Pinocchio: 1e-10 relative to the largest entry of each matrix (both codes sum the
same ~N terms per entry, ~N eps ~ 1e-14; ABA's derivatives are multiplied by M^-1, which amplifies
round-off by cond(M)). Central differences with step h = eps^(1/3) ~ 6.1e-6 (H_REL): truncation
h^2/6 |f'''| ~ 6e-12 and round-off eps |f| / h ~ 4e-11 relative to the size of f and its
derivatives, grown ~N-fold by the tree's round-off in f: compared at 1e-8 x max(1, largest entry)
(the bound tests/linear/test_jacobians.py measured with 20x headroom).
"""

from dataclasses import replace

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.model import Model
from mbsfmu.engine.native.core import model_core, usable
from mbsfmu.errors import InputError
from mbsfmu.io.urdf import load_urdf
from mbsfmu.linear.jacobians import H_REL, Accelerations, dynamics_jacobians
from tests.support.differences import central
from tests.support.paths import MODELS
from tests.support.robots import robots_dir
from tests.support.trees import random_tree, with_force_elements

pytestmark = pytest.mark.skipif(not usable(), reason="the C core cannot be built here")
RTOL_PIN, RTOL_FD = 1e-10, 1e-8


def close(actual, desired, rtol, what):
    """|actual - desired| <= rtol x max(1, largest |desired|) entrywise (rtol 0 on each entry)."""
    scale = max(1.0, float(np.abs(desired).max(initial=0.0)))
    np.testing.assert_allclose(actual, desired, rtol=0, atol=rtol * scale, err_msg=what)


def without_springs(model: Model) -> Model:
    """The model without joint springs and dampers (Pinocchio has none)."""
    spec = model.spec
    bodies = tuple(replace(b, joint=replace(b.joint, spring=None)) for b in spec.bodies)
    return Model(replace(spec, bodies=bodies), source=model.source)


# ---- central differences of the engine's own dynamics ------------------------------------------
def fd_rate_columns(g, x0):
    cols = []
    for j in range(x0.size):
        h = H_REL * max(1.0, abs(x0[j]))
        xp, xm = x0.copy(), x0.copy()
        xp[j] += h
        xm[j] -= h
        cols.append((g(xp) - g(xm)) / (xp[j] - xm[j]))
    return np.column_stack(cols)


@pytest.mark.parametrize(
    "n, free_base, types",
    [(4, True, None), (9, False, None), (7, True, ("spherical", "prismatic", "revolute")), (6, False, ("spherical",))],
)
def test_derivatives_as_central_differences_with_springs_and_dampers(rng, n, free_base, types):
    """Every joint type, joint springs and dampers: RNEA and ABA derivatives equal central
    differences of Model.inverse_dynamics and Model.forward_dynamics, M and M^-1 equal CRBA's."""
    model = random_tree(rng, n, free_base=free_base, springs=True, **({} if types is None else {"types": types}))
    for _ in range(2):
        q, qd = model.random_state(rng)
        check_against_central_differences(model, q, qd, rng.normal(size=model.nv), rng.normal(size=model.nv))


def test_fixed_joints_and_urdf_damping_as_central_differences(rng):
    """A URDF quadruped loaded link by link (fixed joints kept as bodies), on a free joint, with
    its joints' damping: the same checks as above."""
    model = load_urdf(MODELS / "urdf_quadruped.urdf", floating_base=True, lump_fixed=False)
    assert 0 in set(model.tree.jtype[1:].tolist()) and model.nv >= 12
    q, qd = model.random_state(rng)
    check_against_central_differences(model, q, qd, rng.normal(size=model.nv), rng.normal(size=model.nv))


def check_against_central_differences(model, q, qd, qdd, tau):
    dtau_dq, dtau_dqd, M = model.rnea_derivatives(q, qd, qdd)
    close(
        dtau_dq,
        central(lambda x: model.inverse_dynamics(x, qd, qdd), q, model.nv, model.integrate),
        RTOL_FD,
        "dtau/dq",
    )
    close(dtau_dqd, fd_rate_columns(lambda x: model.inverse_dynamics(q, x, qdd), qd), RTOL_FD, "dtau/dqd")
    close(M, model.mass_matrix(q), 1e-12, "M")
    dqdd_dq, dqdd_dqd, Minv = model.aba_derivatives(q, qd, tau)
    close(
        dqdd_dq,
        central(lambda x: model.forward_dynamics(x, qd, tau), q, model.nv, model.integrate),
        RTOL_FD,
        "dqdd/dq",
    )
    close(dqdd_dqd, fd_rate_columns(lambda x: model.forward_dynamics(q, x, tau), qd), RTOL_FD, "dqdd/dqd")
    close(Minv @ model.mass_matrix(q), np.eye(model.nv), 1e-10, "M^-1 M")


def test_springs_and_dampers_enter_the_derivatives(rng):
    """The joint springs' stiffness and the dampers appear on the diagonals: removing them changes
    dtau/dq by diag(k) and dtau/dqd by diag(d) exactly (a test that fails if they are dropped)."""
    model = random_tree(rng, 5, free_base=False, springs=True, types=("revolute", "prismatic"))
    bare = without_springs(model)
    q, qd = model.random_state(rng)
    qdd = rng.normal(size=model.nv)
    a, b = model.rnea_derivatives(q, qd, qdd), bare.rnea_derivatives(q, qd, qdd)
    k = np.zeros(model.nv)
    d = np.zeros(model.nv)
    for i, body in enumerate(model.bodies, start=1):  # tree order
        if body.joint.spring is not None:
            k[model.tree.iv[i]], d[model.tree.iv[i]] = body.joint.spring.k, body.joint.spring.d
    assert np.abs(k).max() > 0 and np.abs(d).max() > 0
    close(a[0] - b[0], np.diag(k), 1e-12, "dtau/dq springs")
    close(a[1] - b[1], np.diag(d), 1e-12, "dtau/dqd dampers")


# ---- Pinocchio ------------------------------------------------------------------------------
def pin_cases(rng):
    """(model, twin) pairs: random trees (free, spherical, prismatic, revolute) and URDF robots."""
    pytest.importorskip("pinocchio")
    from tests.support.pin_twin import UrdfTwin

    cases = [(random_tree(rng, n, free_base=fb), None) for n, fb in ((3, True), (12, True), (10, False))]
    cases.append((random_tree(rng, 10, free_base=False, types=("spherical", "prismatic")), None))
    paths = [(MODELS / "urdf_arm7.urdf", False), (MODELS / "urdf_quadruped.urdf", True)]
    robots = robots_dir()
    if robots is not None:
        paths += [
            (robots / "xarm_description/urdf/xarm7.urdf", False),
            (robots / "solo_description/robots/solo12.urdf", True),
        ]
    for path, floating in paths:
        model = without_springs(load_urdf(path, floating_base=floating))
        cases.append((model, UrdfTwin(model, path, floating)))
    return cases


def pin_reference(model, twin, q, qd, qdd, tau):
    """Pinocchio's (dtau_dq, dtau_dv, M, ddq_dq, ddq_dv, Minv) in our joint order."""
    import pinocchio as pin

    from tests.support.pin_twin import q_to_pin, to_pinocchio

    if twin is None:
        pm = to_pinocchio(model)
        pd, pq, perm, v = pm.createData(), q_to_pin(model, q), np.arange(model.nv), lambda x: x
    else:
        pm, pd, pq, perm, v = twin.pm, twin.pd, twin.q(q), twin.perm, twin.v
    pin.computeRNEADerivatives(pm, pd, pq, v(qd), v(qdd))
    sym = lambda A: np.triu(A) + np.triu(A, 1).T  # noqa: E731 (Pinocchio fills the upper triangle)
    P = np.ix_(perm, perm)
    rnea = (pd.dtau_dq.copy()[P], pd.dtau_dv.copy()[P], sym(pd.M.copy())[P])
    pin.computeABADerivatives(pm, pd, pq, v(qd), v(tau))
    return rnea + (pd.ddq_dq.copy()[P], pd.ddq_dv.copy()[P], sym(pd.Minv.copy())[P], pd.ddq.copy()[perm])


def test_as_pinocchio(rng):
    """dtau/dq, dtau/dqd, M, dqdd/dq, dqdd/dqd, M^-1 and qdd (which the derivatives compute from M's
    factor, Pinocchio by its ABA) equal Pinocchio's to 1e-10 relative."""
    names = ("dtau/dq", "dtau/dqd", "M", "dqdd/dq", "dqdd/dqd", "Minv", "qdd")
    worst = dict.fromkeys(names, 0.0)
    cases = pin_cases(rng)
    assert any(m.nv >= 12 for m, _ in cases) and any(t is not None for _, t in cases)
    for model, twin in cases:
        for _ in range(3):
            q, qd = model.random_state(rng)
            qdd, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
            ours = model.rnea_derivatives(q, qd, qdd) + model_core(model).aba_derivatives(q, qd, tau)[1:]
            ours += (model_core(model).aba_derivatives(q, qd, tau)[0].copy(),)
            for name, a, b in zip(names, ours, pin_reference(model, twin, q, qd, qdd, tau), strict=True):
                rel = np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)
                worst[name] = max(worst[name], rel)
                assert rel <= RTOL_PIN, (model.source, name, rel)
    print("worst relative discrepancy vs Pinocchio:", {k: f"{v:.2g}" for k, v in worst.items()})


def test_qdd_equals_aba(rng):
    """The qdd that mbs_aba_derivatives returns (M^-1 (tau + passive - RNEA(q, qd, 0)) by M's L^T D L
    factor, no ABA pass) equals mbs_forward_dynamics_tau's (ABA) to float64 rounding: both are
    backward-stable solutions of M qdd = b (each the exact solution for M and b perturbed by
    ~N eps relative, N terms per recursion sum), so they differ by at most ~cond(M) N eps |qdd|;
    compared at nv eps cond(M) max(1, |qdd|) (the worst measured, over these trees, 0.4 eps cond(M) |qdd|)."""
    eps = np.finfo(float).eps
    models = [random_tree(rng, n, free_base=fb, springs=True) for n, fb in ((3, True), (12, True), (10, False))]
    models.append(random_tree(rng, 8, free_base=True, types=("spherical", "prismatic", "revolute")))
    models.append(load_urdf(MODELS / "urdf_quadruped.urdf", floating_base=True))
    for model in models:
        core = model_core(model)
        for _ in range(5):
            q, qd = model.random_state(rng)
            tau = rng.normal(size=model.nv)
            qdd, Minv = (a.copy() for a in core.aba_derivatives(q, qd, tau)[::3])
            ref = core.forward_dynamics(q, qd, tau).copy()
            cond = np.linalg.cond(Minv)
            tol = model.nv * eps * cond * max(1.0, float(np.abs(ref).max()))
            np.testing.assert_allclose(qdd, ref, rtol=0, atol=tol, err_msg=model.source)


# ---- the linearization's Jacobians, and what is refused -------------------------------------
def test_jacobians_analytic_equal_central_differences(rng):
    """dynamics_jacobians takes the analytic path on a tree with actuators, springs and dampers
    ("auto"), and it equals the central-difference oracle, inputs included."""
    model = random_tree(rng, 6, free_base=True, springs=True)
    f = Accelerations(model, "native")
    q, qd = model.random_state(rng)
    u = rng.normal(size=f.nu)
    Ja, Jc = dynamics_jacobians(f, q, qd, u), dynamics_jacobians(f, q, qd, u, method="central")
    assert Ja.method.startswith("analytic") and Jc.method.startswith("central")
    close(Ja.qdd, Jc.qdd, 1e-13, "qdd")
    for name in ("dqdd_dq", "dqdd_dqd", "dqdd_du"):
        close(getattr(Ja, name), getattr(Jc, name), RTOL_FD, name)


def close_jacobians(Ja, Jc, what):
    """Analytic Ja against central Jc: qdd and the three matrices at RTOL_FD x max(1, largest entry,
    largest |qdd|) (the differences' round-off is eps |qdd| / h: the light legs of the quadruped
    give |qdd| ~ 1.7e4 and 6e-7 absolute error on entries of ~90)."""
    scale = max(1.0, float(np.abs(Jc.qdd).max()))
    close(Ja.qdd, Jc.qdd, 1e-13, f"{what}: qdd")
    for name in ("dqdd_dq", "dqdd_dqd", "dqdd_du"):
        ref = getattr(Jc, name)
        tol = RTOL_FD * max(scale, float(np.abs(ref).max(initial=0.0)))
        np.testing.assert_allclose(getattr(Ja, name), ref, rtol=0, atol=tol, err_msg=f"{what}: {name}")


def test_wheels_and_thrusters_are_covered(rng):
    """The spacecraft's reaction wheels (rotor bodies, motor torques as inputs) and its thruster are
    differentiated analytically (method "auto" and "analytic"), equal to central differences."""
    craft = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    assert craft.wheels and craft.spec.forces
    g = Accelerations(craft, "native")
    for _ in range(3):
        q, qd = craft.random_state(rng)
        u = rng.normal(size=g.nu)
        Ja, Jc = dynamics_jacobians(g, q, qd, u), dynamics_jacobians(g, q, qd, u, method="central")
        assert Ja.method.startswith("analytic")
        close_jacobians(Ja, Jc, "spacecraft")
        assert dynamics_jacobians(g, q, qd, u, method="analytic").method.startswith("analytic")


@pytest.mark.parametrize("n, free_base", [(5, True), (9, False)])
def test_jacobians_with_force_elements(rng, n, free_base):
    """Trees with point spring-dampers (between bodies and to the world), a thruster and body
    wrenches in world and body axes: the analytic Jacobians (dqdd/du with the thruster's and
    wrenches' columns) equal the central-difference oracle at random states with qd != 0; the
    bundled quadruped's push (a world-axes wrench) likewise."""
    model = with_force_elements(random_tree(rng, n, free_base=free_base, springs=True), rng)
    quadruped = mbsfmu.load_model(MODELS / "urdf_quadruped_overlay.yaml")
    for m in (model, quadruped):
        f = Accelerations(m, "native")
        q, qd = m.random_state(rng)
        u = rng.normal(size=f.nu)
        Ja = dynamics_jacobians(f, q, qd, u, method="analytic")
        close_jacobians(Ja, dynamics_jacobians(f, q, qd, u, method="central"), m.source)


def test_closed_loops_are_refused():
    """Closed loops: Model.aba/rnea_derivatives refuse with a message naming the ways that work
    (Model.partitioned_derivatives, tests/engine/test_loop_derivatives.py; the linearization)."""
    model = mbsfmu.load_model(MODELS / "fourbar.yaml")
    q, qd = model.assemble(*model.random_state(np.random.default_rng(1)))
    z = np.zeros(model.nv)
    with pytest.raises(InputError, match="closed loops"):
        model.aba_derivatives(q, qd, z)
    with pytest.raises(InputError, match="closed loops"):
        model.rnea_derivatives(q, qd, z)


def test_non_finite_arguments_are_refused(rng):
    model = random_tree(rng, 3, free_base=False)
    q, qd = model.random_state(rng)
    tau = np.zeros(model.nv)
    tau[1] = np.nan
    with pytest.raises(InputError, match="tau"):
        model.aba_derivatives(q, qd, tau)
