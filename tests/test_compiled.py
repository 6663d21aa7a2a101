"""The compiled kernels (mbsfmu/compiled) against the Python reference they transcribe: ABA,
RNEA, CRBA, forward kinematics, the equations of motion and whole RK4 runs, on random trees of
every joint type and the bundled models, to 1e-12; their argument checks; the Simulator's
numba backend; the cold compile in a fresh cache (slow)."""
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

numba = pytest.importorskip("numba")

import mbsfmu  # noqa: E402
from conftest import MODELS, ROOT  # noqa: E402
from mbsfmu.compiled import compile_model  # noqa: E402
from mbsfmu.compiled.kernels import views  # noqa: E402
from mbsfmu.compiled.layout import N_HEADER  # noqa: E402
from mbsfmu.dynamics.aba import aba  # noqa: E402
from mbsfmu.dynamics.crba import crba  # noqa: E402
from mbsfmu.dynamics.rnea import rnea  # noqa: E402
from mbsfmu.kinematics import forward_kinematics  # noqa: E402
from mbsfmu.model.description import Anchor, BodyWrench, SpringDamper, Thruster, Wheel  # noqa: E402
from mbsfmu.simulator import SimulationError, Simulator  # noqa: E402
from trees import random_tree  # noqa: E402

RTOL = 1e-12
BUNDLED = sorted(p.name for p in MODELS.glob("*.yaml") if "overlay" not in p.name) + \
    sorted(p.name for p in MODELS.glob("*.urdf")) + ["urdf_quadruped_overlay.yaml"]


def close(got, ref, rtol=RTOL):
    """|got - ref| <= rtol |ref| entry-wise, and rtol max|ref| as the absolute floor (entries that
    cancel to ~0 carry the round-off of the large terms they came from)."""
    ref = np.asarray(ref)
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
    bodies = tuple(replace(body, wheels=(Wheel("rw", (0.0, 0.6, 0.8), 0.2, (0.1, 0.0, 0.0)),))
                   if body.name == b[2] else body for body in base.spec.bodies)
    forces = (Thruster("thr", b[1], (0.1, 0.2, 0.0), (0.0, 0.0, 1.0)),
              BodyWrench("pw", b[3], (0.0, 0.1, 0.2), "world"),
              BodyWrench("pb", b[4], (0.2, 0.0, 0.1), "body"),
              SpringDamper("s1", Anchor(b[1], (0.2, 0, 0)), Anchor("world", (0.5, 0.5, 0.5)), k=30.0, d=0.5, l0=0.3),
              SpringDamper("s2", Anchor(b[0], (0, 0.1, 0)), Anchor(b[5], (0.1, 0, 0)), k=20.0, d=0.2, l0=0.1))
    return mbsfmu.Model(replace(base.spec, bodies=bodies, forces=forces))


def check_dynamics(model, rng, n_states=3):
    cm = compile_model(model)
    t = model.tree
    for _ in range(n_states):
        q, qd = model.random_state(rng)
        tau, qdd = rng.normal(size=model.nv), rng.normal(size=model.nv)
        f_ext = rng.normal(size=(model.N + 1, 6))
        close(cm.aba(q, qd, tau), aba(t, q, qd, tau))
        close(cm.aba(q, qd, tau, f_ext), aba(t, q, qd, tau, f_ext))
        close(cm.rnea(q, qd, qdd), rnea(t, q, qd, qdd))
        close(cm.rnea(q, qd, qdd, f_ext), rnea(t, q, qd, qdd, f_ext))
        close(cm.crba(q), crba(t, q))
        close(cm.forward_dynamics(q, qd, tau, f_ext[1:]), model.forward_dynamics(q, qd, tau, f_ext[1:]))
        close(cm.inverse_dynamics(q, qd, qdd), model.inverse_dynamics(q, qd, qdd))
        kin, ref = cm.forward_kinematics(q, qd, qdd), forward_kinematics(t, q, qd, qdd)
        for name in ("R", "p", "v", "a", "Xup"):
            close(getattr(kin, name), getattr(ref, name))
        kin0, ref0 = cm.forward_kinematics(q), forward_kinematics(t, q)
        close(kin0.p, ref0.p)
        assert not kin0.v.any() and not kin0.a.any()


def test_views_are_the_packed_layout(rng):
    """kernels.views (compiled) reads the same arrays as layout.Packed writes: every word of the
    buffer numbered, then each view compared."""
    cm = compile_model(forced_model(rng))
    p = cm.packed
    saved = p.buf.copy()
    try:
        p.buf[:] = np.arange(p.buf.size)
        p.buf[:N_HEADER] = saved[:N_HEADER]       # the header keeps the sizes
        model, data, _hdr = views(p.buf)
        names = ("topo", "elem", "SI", "R_tree", "G3", "elem_f", "vec", "W66", "W6", "W33", "W3", "Wx", "S66")
        for name, arr in zip(names, tuple(model) + tuple(data)):
            assert arr.shape == p[name].shape, name
            assert np.array_equal(arr, p[name]), name
    finally:
        p.buf[:] = saved


@pytest.mark.parametrize("seed", range(3))
def test_random_trees_match_the_reference(seed):
    """ABA, RNEA, CRBA, forward kinematics (with and without f_ext, springs) on random trees of
    every joint type: equal to the Python reference to 1e-12."""
    rng = np.random.default_rng(seed)
    for model in random_trees(rng):
        check_dynamics(model, rng)


@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_models_match_the_reference(name, rng):
    check_dynamics(mbsfmu.load_model(MODELS / name), rng, n_states=2)


def test_fast_bodies_keep_the_exact_bias_force(rng):
    """At 1e6 m/s the bias force must not carry m |v|^2 round-off (spatial.bias_force): the
    compiled ABA equals the reference's at high speed too."""
    model = random_tree(rng, 4, types=("spherical",))
    q, qd = model.random_state(rng)
    qd[:3] = 1e6
    tau = np.zeros(model.nv)
    close(compile_model(model).aba(q, qd, tau), aba(model.tree, q, qd, tau))


def test_equations_of_motion_match_the_simulator(rng):
    """rhs (x, u) with every force element, wheel and joint spring: equal to Simulator.rhs."""
    model = forced_model(rng)
    cm = compile_model(model)
    sim = Simulator(model, "rk4", backend="python")
    assert cm.input_names == sim.input_names
    for _ in range(3):
        sim.set_configuration(*model.random_state(rng))
        sim.u[:] = rng.normal(size=sim.u.size)
        close(cm.rhs(sim.x, sim.u), sim.rhs(sim.x))


@pytest.mark.parametrize("which", ["forced", "spacecraft.yaml", "branched_robot.yaml", "chain7.yaml"])
def test_rk4_run_matches_the_python_simulator(which, rng):
    """0.2 s of RK4 at h = 1 ms in one compiled call: the state (q, qd, W_in, W_diss) equals the
    Python Simulator's to 1e-12 (same operations; only summation order may differ)."""
    model = forced_model(rng) if which == "forced" else mbsfmu.load_model(MODELS / which)
    sim = Simulator(model, "rk4", h_max=1e-3, backend="python")
    sim.set_configuration(*model.random_state(rng))
    sim.u[:] = rng.normal(size=sim.u.size)
    x0 = sim.x.copy()
    x, X = compile_model(model).simulate(x0, 1e-3, 200, sim.u, record_every=50)
    for k in range(4):
        sim.step(0.05)
        close(X[k + 1], sim.x)
    close(x, sim.x)
    assert np.array_equal(X[0], x0) and np.array_equal(X[-1], x)


def test_inputs_given_per_step(rng):
    """u (n, n_u): row k acts during step k, as n Simulator steps with set inputs."""
    model = forced_model(rng)
    sim = Simulator(model, "rk4", h_max=1e-3, backend="python")
    U = rng.normal(size=(20, len(sim.input_names)))
    x = compile_model(model).simulate(sim.x, 1e-3, 20, U)
    for k in range(20):
        sim.u[:] = U[k]
        sim.step(1e-3)
    close(x, sim.x)


@pytest.mark.parametrize("name", ["scara.yaml", "spacecraft.yaml", "urdf_quadruped_overlay.yaml"])
def test_simulator_backends_agree(name, rng):
    """Simulator(backend="numba") steps (several sub-steps per call) equal backend="python"."""
    model = mbsfmu.load_model(MODELS / name)
    fast = Simulator(model, "rk4", h_max=2e-3, backend="numba")
    ref = Simulator(model, "rk4", h_max=2e-3, backend="python")
    assert fast.backend == "numba" and ref.backend == "python"
    u = rng.normal(size=ref.u.size)
    for sim in (fast, ref):
        sim.u[:] = u
        for _ in range(5):
            sim.step(0.01)
    close(fast.x, ref.x)
    assert fast.t == ref.t and fast.n_steps == ref.n_steps and fast.n_rhs == ref.n_rhs
    # outputs from the compiled kinematics and mass matrix equal the reference ones
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
    assert Simulator(model, "rk4").backend == "numba" and Simulator(model, "dop853").backend == "python"


def test_simulator_numba_failure_leaves_the_state(rng):
    """A non-finite state: SimulationError naming time and component; state kept at the start."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    sim = Simulator(model, "rk4", h_max=1e-3, backend="numba")
    sim.set_input("q2.tau", 1e300)
    with pytest.raises(SimulationError, match=r"non-finite state at t = [0-9.e-]+ s in .*q\.q[12]"):
        for _ in range(100):
            before = (sim.t, sim.x.copy())
            sim.step(0.01)
    assert sim.t == before[0] and np.array_equal(sim.x, before[1])


def test_arguments_are_checked_and_converted(rng):
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    cm = compile_model(model)
    q, qd = model.random_state(rng)
    tau = np.zeros(model.nv)
    ref = cm.aba(q, qd, tau).copy()
    close(cm.aba(list(q), qd, tau.tolist()), ref)                                  # lists: converted
    qd32 = qd.astype(np.float32)
    close(cm.aba(q, qd32, tau), cm.aba(q, qd32.astype(float), tau))               # float32: converted
    close(cm.aba(np.asfortranarray(np.c_[q, q])[:, 0], qd, tau), ref)             # strided: converted
    out = np.empty(model.nv)
    assert cm.aba(q, qd, tau, out=out) is out
    with pytest.raises(mbsfmu.InputError, match=r"q has shape \(3,\), model .*scara.yaml has nq = 2"):
        cm.aba(np.zeros(3), qd, tau)
    with pytest.raises(mbsfmu.InputError, match="qd has non-finite entries at indices"):
        cm.aba(q, np.array([np.nan, 0.0]), tau)
    with pytest.raises(mbsfmu.InputError, match=r"f_ext has shape \(2, 6\), expected \(3, 6\)"):
        cm.aba(q, qd, tau, np.zeros((2, 6)))
    with pytest.raises(mbsfmu.InputError, match="out must be a C-contiguous float64 array"):
        cm.aba(q, qd, tau, out=np.empty(model.nv, dtype=np.float32))
    with pytest.raises(mbsfmu.InputError, match=r"u has shape \(3,\)"):
        cm.simulate(np.r_[q, qd, 0, 0], 1e-3, 10, np.zeros(3))
    with pytest.raises(SimulationError, match="non-finite state after step"):
        cm.simulate(np.r_[q, qd, 0, 0], 1e-3, 1000, np.array([0.0, 1e300]))


def test_stale_kernels_are_not_loaded():
    """The cache stamp covers every source file of the package (an edit of spatial.py must
    recompile algorithms.py's kernels that inline it)."""
    from mbsfmu.compiled import _jit
    from mbsfmu.compiled.kernels import entry
    assert entry("aba")._cache._cache_file._source_stamp == _jit.package_stamp()


@pytest.mark.slow
@pytest.mark.integration
def test_cold_compile_in_a_fresh_cache_then_cached(tmp_path):
    """A fresh NUMBA_CACHE_DIR compiles (slow, once); a second process loads the cache and
    gets the same numbers."""
    code = ("import numpy as np, mbsfmu, time; from mbsfmu.compiled import compile_model;"
            f"m = mbsfmu.load_model({str(MODELS / 'chain7.yaml')!r}); cm = compile_model(m);"
            "q, qd = m.initial_state(); t = time.perf_counter(); qdd = cm.aba(q, qd, np.zeros(m.nv));"
            "print(time.perf_counter() - t, repr(qdd.tolist()))")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    runs = [subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True)
            for _ in range(2)]
    (t_cold, qdd_cold), (t_cached, qdd_cached) = [r.stdout.split(" ", 1) for r in runs]
    assert qdd_cold == qdd_cached
    assert float(t_cached) < 1.0 and float(t_cached) < float(t_cold)


def test_scenario_start_loads_scipy_fortran_before_numba_and_no_integrate():
    """A fresh process running the first compiled step of a scenario: scipy.linalg (its Fortran
    runtime) is imported before numba (the order that keeps the heap sound at exit in processes
    that also host an FMU, see compiled/kernels.py), and scipy.integrate (DOP853 only, ~0.2 s of
    start-up) is not imported at all. sys.modules keeps import order."""
    code = ("import sys, mbsfmu.scenario as s; scn = s.load_scenario(sys.argv[1]); sim = s.build_simulator(scn);"
            "sim.step(scn.dt); assert sim.backend == 'numba', sim.backend; print(' '.join(sys.modules))")
    res = subprocess.run([sys.executable, "-c", code, str(ROOT / "scenarios" / "scara_tracking.yaml")], cwd=ROOT,
                         capture_output=True, text=True, check=True)
    mods = res.stdout.split()
    assert "scipy.integrate" not in mods
    assert mods.index("scipy.linalg") < mods.index("numba")
