"""The C engine core (mbsfmu/native) against the numpy reference it transcribes: ABA, RNEA, CRBA,
forward kinematics, the equations of motion with every force element, the invariants, RK4 and
DOP853 runs, on random trees of every joint type and every bundled model; its parameters and
their validation; several instances and state copies; malformed tables and arguments; the
library's build and staleness; the C sources under -Wall -Wextra -Werror -pedantic with the
address and undefined-behaviour sanitizers (integration).

Tolerance RTOL = 1e-12 relative (to the largest entry of the reference result, at least 1): each
result entry is a sum of at most a few hundred products (N <= 25 bodies, 6x6 blocks), computed by
the same formulas but summed in another order than numpy's BLAS; the difference of two such sums
is a few eps (2.2e-16) times the largest term, ~1e-13, so 1e-12 leaves a factor 10 of margin and
still catches any wrong term (an error of one term is at least ~1e-8 of the result).
"""

import shutil
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.dynamics.aba import aba
from mbsfmu.engine.dynamics.crba import crba
from mbsfmu.engine.dynamics.rnea import rnea
from mbsfmu.engine.kinematics import forward_kinematics
from mbsfmu.engine.native import build
from mbsfmu.engine.native.core import (
    P_COM,
    P_GRAVITY,
    P_INERTIA,
    P_MASS,
    P_SPRING_D,
    P_SPRING_K,
    P_WHEEL_IW,
    Core,
    model_core,
)
from mbsfmu.engine.native.tables import Tables, c_source
from mbsfmu.engine.spec.description import Anchor, BodyWrench, SpringDamper, Thruster, Wheel
from mbsfmu.sim.outputs import angular_momentum_scale
from mbsfmu.sim.simulator import SimulationError, Simulator
from tests.support.paths import MODELS, ROOT
from tests.support.trees import random_tree

RTOL = 1e-12
BUNDLED = (
    sorted(p.name for p in MODELS.glob("*.yaml") if "overlay" not in p.name)
    + sorted(p.name for p in MODELS.glob("*.urdf"))
    + ["urdf_quadruped_overlay.yaml"]
)


def close(got, ref, rtol=RTOL):
    """|got - ref| <= rtol |ref| entry-wise, with rtol max(1, max|ref|) as the absolute floor
    (entries that cancel to ~0 carry the round-off of the large terms they came from)."""
    ref = np.asarray(ref, dtype=float)
    np.testing.assert_allclose(got, ref, rtol=rtol, atol=rtol * max(1.0, float(np.abs(ref).max(initial=0.0))))


def random_trees(rng):
    """Trees of every joint type: free base, fixed base, springs; and each type alone."""
    yield random_tree(rng, 9)
    yield random_tree(rng, 7, free_base=False, springs=True)
    for jt in ("revolute", "prismatic", "spherical"):
        yield random_tree(rng, 5, free_base=jt != "revolute", types=(jt,))
    yield random_tree(rng, 6, types=("fixed", "revolute"))


def forced_model(rng):
    """A free-floating tree with joint springs, a reaction wheel and every force element:
    thruster, body wrenches in world and body axes, point spring-dampers (one to the world)."""
    base = random_tree(rng, 6, springs=True)
    b = base.body_names
    bodies = tuple(
        replace(body, wheels=(Wheel("rw", (0.0, 0.6, 0.8), 0.2, (0.1, 0.0, 0.0)),)) if body.name == b[2] else body
        for body in base.spec.bodies
    )
    forces = (
        Thruster("thr", b[1], (0.1, 0.2, 0.0), (0.0, 0.0, 1.0)),
        BodyWrench("pw", b[3], (0.0, 0.1, 0.2), "world"),
        BodyWrench("pb", b[4], (0.2, 0.0, 0.1), "body"),
        SpringDamper("s1", Anchor(b[1], (0.2, 0, 0)), Anchor("world", (0.5, 0.5, 0.5)), k=30.0, d=0.5, l0=0.3),
        SpringDamper("s2", Anchor(b[0], (0, 0.1, 0)), Anchor(b[5], (0.1, 0, 0)), k=20.0, d=0.2, l0=0.1),
    )
    return mbsfmu.Model(replace(base.spec, bodies=bodies, forces=forces))


def check_dynamics(model, rng, n_states=3):
    """Every algorithm of the core (the tree of a loop model) against the numpy reference."""
    core = Core(model, Tables(model, tree_only=True))
    t = model.tree
    for _ in range(n_states):
        q, qd = model.random_state(rng)
        tau, qdd = rng.normal(size=model.nv), rng.normal(size=model.nv)
        f_ext = rng.normal(size=(model.N + 1, 6))
        close(core.aba(q, qd, tau), aba(t, q, qd, tau))
        close(core.aba(q, qd, tau, f_ext), aba(t, q, qd, tau, f_ext))
        close(core.rnea(q, qd, qdd), rnea(t, q, qd, qdd))
        close(core.rnea(q, qd, qdd, f_ext), rnea(t, q, qd, qdd, f_ext))
        close(core.crba(q), crba(t, q))
        close(
            core.forward_dynamics(q, qd, tau, f_ext[1:]),
            model.forward_dynamics(q, qd, tau, f_ext[1:], backend="python"),
        )
        close(core.inverse_dynamics(q, qd, qdd), model.inverse_dynamics(q, qd, qdd, backend="python"))
        R, p, v, a = core.kinematics(q, qd, qdd)
        ref = forward_kinematics(t, q, qd, qdd)
        for got, name in ((R, "R"), (p, "p"), (v, "v"), (a, "a")):
            close(got, getattr(ref, name))
        _R0, p0, v0, a0 = core.kinematics(q)
        close(p0, forward_kinematics(t, q).p)
        assert not v0.any() and not a0.any()


@pytest.mark.parametrize("seed", range(3))
def test_random_trees_match_the_reference(seed):
    """ABA, RNEA, CRBA, forward kinematics (with and without f_ext, springs) on random trees of
    every joint type: equal to the numpy reference to 1e-12."""
    rng = np.random.default_rng(seed)
    for model in random_trees(rng):
        check_dynamics(model, rng)


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_models_match_the_reference(name, rng):
    """Every bundled model (closed-loop ones: their spanning tree), URDF ones included."""
    check_dynamics(mbsfmu.load_model(MODELS / name), rng, n_states=2)


def test_fast_bodies_keep_the_exact_bias_force(rng):
    """At 1e6 m/s the bias force must not carry m |v|^2 round-off (spatial.bias_force)."""
    model = random_tree(rng, 4, types=("spherical",))
    q, qd = model.random_state(rng)
    qd[:3] = 1e6
    tau = np.zeros(model.nv)
    close(Core(model).aba(q, qd, tau), aba(model.tree, q, qd, tau))


def test_equations_of_motion_and_invariants_match_the_simulator(rng):
    """rhs (x, u) with every force element, wheel and joint spring equals Simulator.rhs; the
    invariants equal records.engine_invariants."""
    model = forced_model(rng)
    core = Core(model)
    sim = Simulator(model, "rk4", backend="python")
    assert core.input_names == sim.input_names
    for _ in range(3):
        sim.set_configuration(*model.random_state(rng))
        sim.u[:] = rng.normal(size=sim.u.size)
        close(core.rhs(sim.x, sim.u), sim.rhs(sim.x))
        inv, ref = core.invariants_at(sim.q, sim.qd), sim.invariants()
        for key in ("p_sys", "P_sys", "H_sys", "R", "Rdot"):
            close(np.array(getattr(inv, key)), getattr(ref, key))
        close([inv.KE, inv.PE], [ref.KE, ref.PE])
        kin = forward_kinematics(model.tree, sim.q, sim.qd)
        close(inv.H_scale, angular_momentum_scale(model, kin))  # drift.H_sys's scale


def test_model_methods_run_the_core_by_default(rng):
    """Model.forward_dynamics / inverse_dynamics / mass_matrix: backend "auto" (the core) equals
    "python" (the reference), f_ext as (N, 6) or a dict; unknown backends are refused."""
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    q, qd = model.random_state(rng)
    tau = rng.normal(size=model.nv)
    fx = {model.body_names[1]: rng.normal(size=6)}
    for be in ("auto", "native"):
        close(
            model.forward_dynamics(q, qd, tau, fx, backend=be), model.forward_dynamics(q, qd, tau, fx, backend="python")
        )
        close(
            model.inverse_dynamics(q, qd, tau, fx, backend=be), model.inverse_dynamics(q, qd, tau, fx, backend="python")
        )
        close(model.mass_matrix(q, backend=be), model.mass_matrix(q, backend="python"))
    assert model_core(model) is model_core(model)
    with pytest.raises(mbsfmu.InputError, match="backend 'numba'"):
        model.mass_matrix(q, backend="numba")


@pytest.mark.parametrize("which", ["forced", "scara.yaml", "spacecraft.yaml"])
def test_rk4_steps_match_the_python_simulator(which, rng):
    """Simulator steps of several RK4 sub-steps each: native equals python to 1e-12 (same
    operations), with equal statistics; the outputs (kinematics, invariants, records) too."""
    model = forced_model(rng) if which == "forced" else mbsfmu.load_model(MODELS / which)
    fast = Simulator(model, "rk4", h_max=2e-3, backend="native")
    ref = Simulator(model, "rk4", h_max=2e-3, backend="python")
    assert fast.backend == "native" and ref.backend == "python"
    u = rng.normal(size=ref.u.size)
    for sim in (fast, ref):
        sim.u[:] = u
        for _ in range(3):
            sim.step(0.01)
    close(fast.x, ref.x)
    assert fast.t == ref.t and fast.n_steps == ref.n_steps and fast.n_rhs == ref.n_rhs
    ref.set_state(fast.get_state())
    kf, kr = fast.kinematics(), ref.kinematics()
    for key in ("R", "p", "v", "Xup"):
        close(getattr(kf, key), getattr(kr, key))
    inv_f, inv_r = fast.invariants(), ref.invariants()
    for key in ("p_sys", "P_sys", "H_sys", "R", "Rdot", "KE", "PE"):
        close(np.atleast_1d(getattr(inv_f, key)), np.atleast_1d(getattr(inv_r, key)))
    rec_f, rec_r = fast.records(), ref.records()
    assert rec_f.keys() == rec_r.keys()
    close(np.array(list(rec_f.values()), dtype=float), np.array(list(rec_r.values()), dtype=float))
    assert Simulator(model, "rk4").backend == "native" and Simulator(model, "dop853").backend == "native"


def test_dop853_matches_the_python_simulator(rng):
    """DOP853 (rtol 1e-10, atol 1e-12): the same method, error norm and step-size control as
    scipy's solve_ivp, so on a smooth run the step sequence is the same (equal rhs counts) and the
    states agree far inside the tolerance (1e-12)."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    sims = [Simulator(model, "dop853", h_max=0.0, backend=be) for be in ("native", "python")]
    u = rng.normal(size=sims[0].u.size)
    for sim in sims:
        sim.u[:] = u
        for _ in range(2):
            sim.step(0.02)
    close(sims[0].x, sims[1].x)
    assert sims[0].n_rhs == sims[1].n_rhs and sims[0].n_steps == sims[1].n_steps
    assert sims[0].h_last == pytest.approx(sims[1].h_last, rel=1e-9)


def test_failure_leaves_the_state(rng):
    """A non-finite state: SimulationError naming time and component; state kept at the start."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    sim = Simulator(model, "rk4", h_max=1e-3, backend="native")
    sim.set_input("q2.tau", 1e300)
    with pytest.raises(SimulationError, match=r"non-finite state at t = [0-9.e-]+ s in .*q\.q[12]"):
        for _ in range(100):
            before = (sim.t, sim.x.copy())
            sim.step(0.01)
    assert sim.t == before[0] and np.array_equal(sim.x, before[1])


@pytest.mark.parametrize("name", ["fourbar.yaml", "crank_slider.yaml", "rssr.yaml"])
@pytest.mark.parametrize("integrator", ["rk4", "dop853"])
def test_closed_loops_match_the_python_simulator(name, integrator, rng):
    """Loops by multipliers (No's method, Eq. 24) with each stabilisation (Baumgarte, projection,
    both, none): native steps equal the reference to 1e-12 with the same rhs counts, and the
    multipliers equal loop_outputs' lambda."""
    model = mbsfmu.load_model(MODELS / name)
    for stab in ("both", "baumgarte", "projection", "none"):
        sims = [
            Simulator(model, integrator, h_max=2e-3, loop_stabilisation=stab, backend=be) for be in ("native", "python")
        ]
        assert [s.backend for s in sims] == ["native", "python"]
        u = rng.normal(size=sims[0].u.size)
        for sim in sims:
            sim.u[:] = u
            for _ in range(3):
                sim.step(0.01)
        close(sims[0].x, sims[1].x)
        assert sims[0].n_rhs == sims[1].n_rhs
    core = sims[0]._native
    core.set_state(sims[1].x)
    core.set_inputs(sims[1].u)
    lam = np.concatenate([v["lambda"] for v in sims[1].loop_outputs().values()])
    close(core.loop_lambda(), lam, rtol=1e-10)  # minimum-norm multipliers: an eigen-solve apart


def test_partitioned_loops_run_on_python():
    """loop_method "partitioning" (PyMbs Background) stays in the reference; "native" says why."""
    model = mbsfmu.load_model(MODELS / "fourbar.yaml")
    if not any(c.held for c in model.loops.closures):
        pytest.skip("fourbar declares no independent joints")
    assert Simulator(model, loop_method="partitioning").backend == "python"
    with pytest.raises(mbsfmu.InputError, match="multipliers only"):
        Simulator(model, loop_method="partitioning", backend="native")


def test_arguments_are_checked_and_converted(rng):
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    core = Core(model)
    q, qd = model.random_state(rng)
    tau = np.zeros(model.nv)
    ref = core.aba(q, qd, tau)
    close(core.aba(list(q), qd, tau.tolist()), ref)  # lists: converted
    close(core.aba(q, qd.astype(np.float32), tau), core.aba(q, qd.astype(np.float32).astype(float), tau))
    close(core.aba(np.asfortranarray(np.c_[q, q])[:, 0], qd, tau), ref)  # strided: converted
    out = np.empty(model.nv)
    assert core.aba(q, qd, tau, out=out) is out
    with pytest.raises(mbsfmu.InputError, match=r"q has shape \(3,\), model .*scara.yaml has nq = 2"):
        core.aba(np.zeros(3), qd, tau)
    with pytest.raises(mbsfmu.InputError, match=r"q has shape \(1,\)"):
        core.aba(np.zeros(1), qd, tau)  # no broadcasting
    with pytest.raises(mbsfmu.InputError, match="qd has non-finite entries at indices"):
        core.aba(q, np.array([np.nan, 0.0]), tau)
    with pytest.raises(mbsfmu.InputError, match=r"f_ext has shape \(2, 6\), expected \(3, 6\)"):
        core.aba(q, qd, tau, np.zeros((2, 6)))
    with pytest.raises(mbsfmu.InputError, match="f_ext has non-finite"):
        core.aba(q, qd, tau, np.full((3, 6), np.inf))
    with pytest.raises(mbsfmu.InputError, match="state entry 0 is nan: the state must be finite"):
        core.set_state(np.full(core.nx, np.nan))
    with pytest.raises(mbsfmu.InputError, match="integrator"):
        core.set_solver("euler")
    with pytest.raises(mbsfmu.InputError, match="h_max"):
        core.set_solver("rk4", h_max=0.0)
    assert core.step(-1.0) == 2 and "dt must be a positive" in core.message


def test_malformed_tables_are_refused_with_a_reason():
    """Truncated, foreign-version or altered tables: InputError with the reason, no crash."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    tb = Tables(model)
    for change, reason in (
        (lambda ti, tf: (ti[:-3], tf), "inconsistent"),
        (lambda ti, tf: (ti, tf[:10]), "inconsistent"),
        (lambda ti, tf: (np.r_[np.int32(99), ti[1:]].astype(np.int32), tf), "version 99"),
        (lambda ti, tf: (ti, np.r_[tf[:6], tf[6] + 1, tf[7:]]), "hash"),
        (lambda ti, tf: (ti[:4], tf[:4]), "too short"),
    ):
        ti, tf = change(tb.ti.copy(), tb.tf.copy())
        bad = type(
            "T",
            (),
            {"ti": np.ascontiguousarray(ti, np.int32), "tf": np.ascontiguousarray(tf), "input_names": tb.input_names},
        )()
        with pytest.raises(mbsfmu.InputError, match=reason):
            Core(model, bad)


def test_parameters_change_and_are_validated(rng):
    """Mass, com, inertia, gravity set per instance and applied: the core then equals the
    reference of a model built with those values; bad values: every problem listed, the last good
    parameters stay active and the set values readable."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    core = Core(model)
    b = model.spec.bodies
    changed = replace(
        model.spec,
        gravity=(0.0, -9.81, 0.0),
        bodies=(
            replace(b[0], mass=2.5, com=(0.1, 0.02, 0.0)),
            replace(b[1], inertia=((0.02, 0.001, 0.0), (0.001, 0.03, 0.0), (0.0, 0.0, 0.04))),
        ),
    )
    ref_model = mbsfmu.Model(changed)
    i1, i2 = model.body_index[b[0].name], model.body_index[b[1].name]
    core.set_param(P_MASS, i1, 0, 2.5)
    core.set_param(P_COM, i1, 0, 0.1)
    core.set_param(P_COM, i1, 1, 0.02)
    for comp, val in enumerate((0.02, 0.03, 0.04, 0.001, 0.0, 0.0)):
        core.set_param(P_INERTIA, i2, comp, val)
    for comp, val in enumerate((0.0, -9.81, 0.0)):
        core.set_param(P_GRAVITY, 0, comp, val)
    q, qd = model.random_state(rng)
    tau = rng.normal(size=model.nv)
    with pytest.raises(mbsfmu.InputError, match="not applied"):
        core.aba(q, qd, tau)
    core.apply_params()
    close(core.aba(q, qd, tau), aba(ref_model.tree, q, qd, tau))
    close(core.crba(q), crba(ref_model.tree, q))
    good = core.aba(q, qd, tau)
    core.set_param(P_MASS, i1, 0, -1.0)
    for comp, val in enumerate((1.0, 1.0, 3.0, 0.0, 0.0, 0.0)):  # 1 + 1 < 3: no rigid body
        core.set_param(P_INERTIA, i2, comp, val)
    with pytest.raises(mbsfmu.InputError) as e:
        core.apply_params()
    msg = str(e.value)
    assert f"body {b[0].name}: negative mass -1 kg" in msg and f"body {b[1].name}: principal moments violate" in msg
    close(core.aba(q, qd, tau), good)  # the last good parameters work on
    assert core.get_param(P_MASS, i1) == -1.0 and core.get_param(P_INERTIA, i2, 2) == 3.0
    core.set_param(P_MASS, i2, 0, 0.0)  # a joint that moves nothing
    for comp in range(6):
        core.set_param(P_INERTIA, i2, comp, 0.0)
    core.set_param(P_MASS, i1, 0, 1.0)
    with pytest.raises(mbsfmu.InputError, match=f"joint {model.joint_names[i2 - 1]} moves no mass"):
        core.apply_params()
    with pytest.raises(mbsfmu.InputError, match="no parameter"):
        core.set_param(P_MASS, 99, 0, 1.0)


def test_wheel_and_spring_parameters(rng):
    """The rotor inertia I_w of a reaction wheel and a joint spring's k and d, per instance."""
    model = forced_model(rng)
    core = Core(model)
    i_w = model.wheels["rw"][0]
    assert core.get_param(P_WHEEL_IW, i_w) == pytest.approx(0.2, rel=1e-14)
    i_s = next(i for i, b in enumerate(model.bodies, 1) if b.joint.spring is not None)
    spring = model.bodies[i_s - 1].joint.spring
    assert core.get_param(P_SPRING_K, i_s) == spring.k and core.get_param(P_SPRING_D, i_s) == spring.d
    core.set_param(P_WHEEL_IW, i_w, 0, 0.5)
    core.set_param(P_SPRING_K, i_s, 0, 7.0)
    core.set_param(P_SPRING_D, i_s, 0, 0.25)
    core.apply_params()
    bodies = []
    for body in model.spec.bodies:
        if body.wheels:
            body = replace(body, wheels=(replace(body.wheels[0], inertia=0.5),))
        if body.name == model.body_names[i_s - 1]:
            body = replace(body, joint=replace(body.joint, spring=replace(spring, k=7.0, d=0.25)))
        bodies.append(body)
    ref = Simulator(mbsfmu.Model(replace(model.spec, bodies=tuple(bodies))), backend="python")
    ref.set_configuration(*model.random_state(rng))
    ref.u[:] = rng.normal(size=ref.u.size)
    close(core.rhs(ref.x, ref.u), ref.rhs(ref.x))
    core.set_param(P_WHEEL_IW, i_w, 0, -0.1)
    core.set_param(P_SPRING_K, i_s, 0, -1.0)
    with pytest.raises(mbsfmu.InputError, match="wheel rw: spin inertia must be positive.*spring stiffness"):
        core.apply_params()


def test_instances_are_independent_and_copy(rng):
    """Several instances in one process keep their own state; copy_from makes a bit-equal copy
    that then steps on identically (FMU get/set state)."""
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    a, b = Core(model), Core(model)
    xa = np.r_[np.concatenate(model.random_state(rng)), 0.0, 0.0]
    a.set_state(xa)
    a.set_inputs(rng.normal(size=a.n_u))
    assert a.step(0.01) == 0
    x0 = np.r_[np.concatenate(model.initial_state()), 0.0, 0.0]
    assert np.array_equal(b.x, x0) and not b.u.any()
    b.copy_from(a)
    assert np.array_equal(b.x, a.x) and np.array_equal(b.u, a.u) and b.t == a.t
    assert a.step(0.01) == 0 and b.step(0.01) == 0
    assert np.array_equal(a.x, b.x) and a.stats() == b.stats()
    c = Core(mbsfmu.load_model(MODELS / "scara.yaml"))
    with pytest.raises(mbsfmu.InputError, match="different models"):
        c.copy_from(a)


@pytest.mark.parametrize("integ", ["rk4", "dop853"])
@pytest.mark.parametrize("name", ["fourbar.yaml", "spacecraft.yaml"])
def test_reading_outputs_leaves_the_steps_bit_for_bit(name, integ, rng):
    """The core keeps the rhs f(x, u) it computes for a qdd read and uses it as the next step's
    first stage. A run whose outputs are read before every step equals bit for bit a run that
    never reads them, also when the loop settings (Baumgarte alpha, beta), the inputs or the state
    change between the read and the step (each drops the kept value), and after copy_from. The
    four-bar starts off its constraint manifold, so the Baumgarte terms are not zero."""
    model = mbsfmu.load_model(MODELS / name)
    q, qd = model.initial_state()
    q = q + 1e-3 * rng.normal(size=q.shape) * (name == "fourbar.yaml")
    x0 = np.r_[q, qd, 0.0, 0.0]
    read, plain = Core(model), Core(model)
    for c in (read, plain):
        c.set_solver(integ, h_max=2e-3)
        c.set_state(x0)
        if model.loops:
            c.set_loops(True, False, 5.0, 5.0)
    for k in range(12):
        read.qdd()
        read.invariants()
        for c in (read, plain):
            if k == 3 and model.loops:
                c.set_loops(True, False, 40.0, 20.0)
            if k == 5 and c.n_u:
                c.set_inputs(np.linspace(-0.2, 0.3, c.n_u))
            if k == 7:
                c.set_state(c.x + 1e-6 * (np.arange(c.nx) >= model.nq))  # rates only: quaternions stay unit
        if k == 9:
            other = Core(model)
            other.copy_from(read)
            read = other
        assert read.step(0.01) == 0 and plain.step(0.01) == 0
        assert np.array_equal(read.x, plain.x), f"step {k}"
    fresh = Core(model)
    fresh.copy_from(plain)
    assert np.array_equal(read.qdd(), fresh.qdd())


def test_simulator_state_roundtrip(rng):
    """get_state / set_state on the native backend: a restored run repeats bit for bit (the
    DOP853 step guess h_last restored with it)."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    for integ in ("rk4", "dop853"):
        sim = Simulator(model, integ, backend="native")
        sim.step(0.01)
        saved = sim.get_state()
        sim.step(0.01)
        x1 = sim.x.copy()
        sim.set_state(saved)
        sim.step(0.01)
        assert np.array_equal(sim.x, x1)


def test_tables_hash_and_c_source():
    """The hash depends on the model's numbers; c_source writes every double exactly (hex)."""
    m1 = mbsfmu.load_model(MODELS / "scara.yaml")
    m2 = mbsfmu.Model(replace(m1.spec, gravity=(0.0, 0.0, -9.8)))
    t1, t2 = Tables(m1), Tables(m2)
    assert t1.model_hash == Tables(m1).model_hash != t2.model_hash
    src = c_source(m1, "scara")
    assert f"UINT64_C(0x{t1.model_hash:016x})" in src and f"const double scara_tf[{t1.tf.size}]" in src
    body = src.split("scara_tf[")[1].split("{", 1)[1].split("}", 1)[0]
    assert np.array_equal([float.fromhex(v) if v.strip() != "0.0" else 0.0 for v in body.split(",")], t1.tf)
    with pytest.raises(ValueError, match="identifier"):
        c_source(m1, "not an identifier")


def test_library_name_follows_the_sources(tmp_path, monkeypatch):
    """A binary of other sources is never used: the library's name carries their hash."""
    name = build.library_name()
    for f in (*build.SOURCES, *build.HEADERS, *build.HOST_SOURCES, *build.HOST_HEADERS):
        shutil.copy(build.HERE / f, tmp_path / f)
    monkeypatch.setattr(build, "HERE", tmp_path)
    assert build.library_name() == name
    (tmp_path / "aba.c").write_text((tmp_path / "aba.c").read_text() + "\n/* edited */\n")
    assert build.library_name() != name
    monkeypatch.setenv("MBSFMU_CACHE_DIR", str(tmp_path / "cache"))
    assert build.cache_dir() == tmp_path / "cache"


@pytest.mark.integration
def test_build_into_an_empty_cache_and_load(tmp_path):
    """zig builds the core into a fresh folder (with a progress message) in a subprocess that
    then loads it and computes the same qdd as this process."""
    code = (
        "import sys, numpy as np, mbsfmu; from mbsfmu.engine.native import build, core;"
        "msgs = []; p = build.build_library(sys.argv[1], progress=msgs.append); assert msgs, 'no progress';"
        "build.library = lambda progress=None: p; m = mbsfmu.load_model(sys.argv[2]);"
        "q, qd = m.initial_state(); print(repr(core.Core(m).aba(q, qd, np.zeros(m.nv)).tolist()))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path), str(MODELS / "chain7.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    m = mbsfmu.load_model(MODELS / "chain7.yaml")
    q, qd = m.initial_state()
    assert res.stdout.strip() == repr(Core(m).aba(q, qd, np.zeros(m.nv)).tolist())
    assert list(tmp_path.glob("libmbs_core-*"))


C_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mbs_core.h"
#include "tables.c"
int main(void) {
    char err[512];
    size_t n = mbs_sim_size(m_ti, m_n_ti, m_tf, m_n_tf, err, sizeof err), k;
    void *a = malloc(n), *b = malloc(n);
    mbs_sim *s, *t;
    int32_t bad[8] = {1, 8, 2, 0, 0, 0, 0, 0};
    if (mbs_sim_size(bad, 8, m_tf, 2, err, sizeof err) != 0 || !err[0]) return 10;   /* refused with a reason */
    s = mbs_sim_init(a, n, m_ti, m_n_ti, m_tf, m_n_tf, err, sizeof err);
    t = mbs_sim_init(b, n, m_ti, m_n_ti, m_tf, m_n_tf, err, sizeof err);
    if (!s || !t) { printf("%s\n", err); return 1; }
    if ((mbs_sim_sizes(s).n_u > 0 && mbs_sim_set_u(s, 0, 0.5)) || mbs_sim_set_u(s, 99, 1.0) == 0) return 2;
    for (k = 0; k < 20; k++) if (mbs_sim_step(s, 0.01)) { printf("%s\n", mbs_sim_message(s)); return 3; }
    if (mbs_sim_copy(t, s) || mbs_sim_step(s, 0.01) || mbs_sim_step(t, 0.01)) return 4;
    if (memcmp(mbs_sim_x(s), mbs_sim_x(t), sizeof(double) * (size_t)mbs_sim_sizes(s).nx)) return 5;
    if (!mbs_sim_invariants(s) || !mbs_sim_qdd(s) || !mbs_sim_kinematics(s) || !mbs_sim_lambda(s)) return 6;
    if (mbs_sim_set_param(s, MBS_P_MASS, 1, 0, -1.0) || mbs_sim_apply_params(s, err, sizeof err) != MBS_ERROR) return 7;
    printf("%s\n", err);
    for (k = 0; k < (size_t)mbs_sim_sizes(s).nx; k++) printf("%.17g\n", mbs_sim_x(s)[k]);
    free(a); free(b);
    return 0;
}
"""


@pytest.mark.integration
@pytest.mark.parametrize("name", ["scara.yaml", "fourbar.yaml"])
def test_c_sources_strict_and_sanitized(name, tmp_path):
    """The core and a small C host on generated tables, compiled with -std=c99 -pedantic -Wall
    -Wextra -Werror and run under the address and undefined-behaviour sanitizers (gcc, when the
    machine has it), on a tree and a closed-loop model: no diagnostics; the state after 21 RK4
    steps equals the Python binding's to 1e-12 (another compiler, same operations: -ffp-contract=off in both)."""
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        pytest.skip("no system C compiler for the sanitizer build (the core itself builds with zig)")
    model = mbsfmu.load_model(MODELS / name)
    (tmp_path / "tables.c").write_text(c_source(model, "m"))
    (tmp_path / "host.c").write_text(C_HOST)
    exe = tmp_path / "host"
    res = subprocess.run(
        [
            cc,
            "-std=c99",
            "-pedantic",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-O1",
            "-g",
            "-ffp-contract=off",
            "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all",
            f"-I{build.HERE}",
            f"-I{tmp_path}",
            str(tmp_path / "host.c"),
            *[str(build.HERE / s) for s in build.SOURCES],
            "-lm",
            "-o",
            str(exe),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stderr == ""
    lines = run.stdout.splitlines()
    assert "negative mass -1 kg" in lines[0]
    core = Core(model)
    if core.n_u:
        core.set_inputs(np.r_[0.5, np.zeros(core.n_u - 1)])
    for _ in range(21):
        assert core.step(0.01) == 0
    close(np.array([float(v) for v in lines[1:]]), core.x)


@pytest.mark.integration
def test_scenario_start_runs_native_without_scipy_integrate():
    """A fresh process running the first step of a scenario: the native backend, and neither
    scipy.integrate (the Python DOP853 path, ~0.2 s of start-up) nor a JIT compiler imported."""
    code = (
        "import sys, mbsfmu.scenario as s; scn = s.load_scenario(sys.argv[1]); sim = s.build_simulator(scn);"
        "sim.step(scn.dt); assert sim.backend == 'native', sim.backend; print(' '.join(sys.modules))"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(ROOT / "scenarios" / "scara_tracking.yaml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert res.returncode == 0, res.stderr
    mods = res.stdout.split()
    assert "scipy.integrate" not in mods and "numba" not in mods and "llvmlite" not in mods


CHAOTIC = {"chain7.yaml": 1e-9, "branched_robot.yaml": 1e-9}  # round-off grows ~e^(lambda t): 5e-11 measured


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in BUNDLED if n not in ("fourbar.yaml", "crank_slider.yaml", "rssr.yaml")])
def test_two_seconds_of_rk4_match_the_python_simulator(name, rng):
    """2 s of RK4 at h = 1 ms (steps of 10 ms) with random inputs: native equals python to 1e-12;
    the chaotic chains (chain7, branched_robot) amplify the first round-off difference (~1e-16)
    exponentially, to 5e-11 after 2 s as measured, so they are held to 1e-9."""
    model = mbsfmu.load_model(MODELS / name)
    sims = [Simulator(model, "rk4", h_max=1e-3, backend=be) for be in ("native", "python")]
    u = rng.normal(size=sims[0].u.size)
    for sim in sims:
        sim.u[:] = u
        for _ in range(200):
            sim.step(0.01)
    close(sims[0].x, sims[1].x, rtol=CHAOTIC.get(name, RTOL))


def test_missing_library_is_built_into_the_cache(tmp_path, monkeypatch):
    """No installed binary of the current sources: library() builds into the per-user cache
    (build_library recorded here, not run), and then finds the cached one without building."""
    for f in (*build.SOURCES, *build.HEADERS, *build.HOST_SOURCES, *build.HOST_HEADERS):
        shutil.copy(build.HERE / f, tmp_path / f)
    monkeypatch.setattr(build, "HERE", tmp_path)
    monkeypatch.setenv("MBSFMU_CACHE_DIR", str(tmp_path / "cache"))
    calls = []

    def fake_build(dest, progress=None):
        calls.append(dest)
        out = build.cache_dir() / build.library_name()
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"")
        return out

    monkeypatch.setattr(build, "build_library", fake_build)
    assert build.library() == tmp_path / "cache" / build.library_name() and calls == [tmp_path / "cache"]
    assert build.library() == tmp_path / "cache" / build.library_name() and len(calls) == 1


def test_a_heavy_link_does_not_make_a_light_joint_massless():
    """Regression: link1's inertia 1e300 kg m^2 beside link2's 1.5 kg once reported "joint q2
    moves no mass" (a tolerance relative to trace(M) ~ 1e300). The tolerance is relative to each
    joint's own M_jj now: loading and the core's parameter check both accept the model. (1e150, the
    largest inertia a model file takes since issue 37, validation.MASS_MAX, is as far from 1.5.)"""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    b = model.spec.bodies
    huge = ((1e150, 0.0, 0.0), (0.0, 1e150, 0.0), (0.0, 0.0, 1e150))
    heavy = replace(model.spec, bodies=(replace(b[0], inertia=huge), b[1]))
    heavy_model = mbsfmu.Model(heavy)  # no "moves no mass" problem
    # and q2 keeps its mass: M_22 sees link2 only, so it equals the light model's (1e-12: CRBA's
    # round-off on link2's own terms)
    q0 = np.zeros(model.nq)
    M_heavy, M_light = heavy_model.mass_matrix(q0), model.mass_matrix(q0)
    assert M_light[1, 1] > 0 and M_heavy[1, 1] == pytest.approx(M_light[1, 1], rel=1e-12, abs=0)
    core = Core(model)
    i1 = model.body_index[b[0].name]
    for comp, val in enumerate((1e150, 1e150, 1e150, 0.0, 0.0, 0.0)):
        core.set_param(P_INERTIA, i1, comp, val)
    core.apply_params()


COAXIAL = """\
version: 1
bodies:
  - name: hub
    parent: world
    joint: {name: outer, type: revolute, axis: [0, 0, 1]}
    mass: 0.5
    inertia: {Ixx: 0.01, Iyy: 0.01, Izz: 0.01}
  - name: disc
    parent: hub
    joint: {name: inner, type: revolute, axis: [0, 0, 1]}
    mass: 1.0
    com: [0, 0, 0.1]
    inertia: {Ixx: 0.1, Iyy: 0.1, Izz: 0.2}
  - name: rod
    parent: disc
    joint: {name: ball, type: spherical, origin: {xyz: [0.3, 0, 0]}}
    mass: 1.0
    com: [0.2, 0, 0]
    inertia: {Ixx: 0.02, Iyy: 0.01, Izz: 0.01}
"""


def test_parameter_check_finds_singular_pivots(tmp_path):
    """The core's parameter check (O(N): the pivots of M's block LDL^T, leaves first, as
    dynamics/singular.py) refuses a joint that moves no mass only in combination with another (the
    hub made massless between two coaxial joints: M = Izz [[1, 1], [1, 1]], the pivot of 'outer'
    is zero) and a spherical joint whose rod has no inertia about its own axis (one zero direction
    of the 3 x 3 pivot); the same parameters on the model file are refused by the numpy reference."""
    (tmp_path / "m.yaml").write_text(COAXIAL)
    model = mbsfmu.load_model(tmp_path / "m.yaml")
    hub, rod = model.body_index["hub"], model.body_index["rod"]
    core = Core(model)
    core.set_param(P_MASS, hub, 0, 0.0)
    for comp in range(6):
        core.set_param(P_INERTIA, hub, comp, 0.0)
    with pytest.raises(mbsfmu.InputError, match="joint outer moves no mass") as e:
        core.apply_params()
    assert "inner" not in str(e.value) and "ball" not in str(e.value)
    massless_hub = COAXIAL.replace("    mass: 0.5\n    inertia: {Ixx: 0.01, Iyy: 0.01, Izz: 0.01}\n", "")
    (tmp_path / "m2.yaml").write_text(massless_hub)
    with pytest.raises(mbsfmu.ModelError, match="'outer' combined with 'inner'"):
        mbsfmu.load_model(tmp_path / "m2.yaml")
    core = Core(model)
    core.set_param(P_INERTIA, rod, 0, 0.0)  # Ixx = 0, the CoM on the rod's x axis
    with pytest.raises(mbsfmu.InputError, match="joint ball moves no mass or inertia in some direction") as e:
        core.apply_params()
    assert "outer" not in str(e.value)
    (tmp_path / "m3.yaml").write_text(COAXIAL.replace("Ixx: 0.02", "Ixx: 0.0"))
    with pytest.raises(mbsfmu.ModelError, match="'ball' moves no mass or inertia"):
        mbsfmu.load_model(tmp_path / "m3.yaml")
    core = Core(model)  # and the good parameters pass
    core.set_param(P_MASS, hub, 0, 0.7)
    core.apply_params()


def test_instance_memory_is_linear_in_the_bodies():
    """An instance of a tree holds no n x n array (the parameter check is O(N), the loop work
    exists only with loops): 2,000 bodies take at most 2.05x the bytes of 1,000 (a dense mass
    matrix would make it 4x and 32 MB at 2,000)."""
    sizes = [Core(random_tree(np.random.default_rng(n), n, types=("revolute",))).nbytes for n in (1000, 2000)]
    assert sizes[1] <= 2.05 * sizes[0], sizes


@pytest.mark.parametrize("speed", [1.0, 1000.0])
def test_rk4_stage_angles_match_the_python_simulator(speed, rng):
    """RK4's later stages take a revolute joint's sin and cos from the step's start by the
    angle-sum formulas when the stage moves the angle by at most 1/16 rad, else from trig.h
    (kinematics.c joint_sincos): both within the 1e-12 of the other steps' tests, at joint rates
    of ~1 rad/s (every stage by the formulas) and ~1000 rad/s (h/2 qd = 0.5 rad: trig.h; the
    formulas' series would be off by 1e-8 there)."""
    model = random_tree(rng, 7, free_base=False, types=("revolute",))
    q, qd = model.random_state(rng)
    fast = Simulator(model, "rk4", h_max=1e-3, backend="native")
    ref = Simulator(model, "rk4", h_max=1e-3, backend="python")
    for sim in (fast, ref):
        sim.x = np.concatenate((q, speed * qd / np.abs(qd).max(), [0.0, 0.0]))
        sim.step(0.005)
    close(fast.x, ref.x)


def test_a_step_does_not_depend_on_what_ran_before(rng):
    """The angle-sum formulas start from a record of the last direct sin and cos of each joint's
    angle. A qdd read keeps the step's first stage (so the step computes no direct sin and cos of
    its start), and a call at another state then leaves other angles in the record: the steps that
    follow are the same bits as without both (the record is checked against the step's start)."""
    model = random_tree(rng, 7, free_base=False, types=("revolute",))
    q, qd = model.random_state(rng)
    x0 = np.concatenate((q, qd, [0.0, 0.0]))
    a, b = Core(model), Core(model)
    for core in (a, b):
        core.set_solver("rk4", h_max=1e-3)
        core.set_state(x0)
    q1, qd1 = model.random_state(rng)
    for _ in range(3):
        b.qdd()
        b.aba(q1, qd1, np.zeros(model.nv))
        for core in (a, b):
            assert core.step(0.004) == 0, core.message
    np.testing.assert_array_equal(a.x, b.x)
