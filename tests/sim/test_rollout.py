"""mbsfmu.rollout (mbsfmu/sim/rollout.py, engine/native/rollout.c): N runs in one call of the C core
give the states and outputs of N Simulators stepped one by one, bit for bit (the same core calls in
the same order: the tolerance is zero), on any number of threads; one run's failure is its own;
bad arguments are InputErrors naming what is wrong; Ctrl-C keeps what was computed."""

from __future__ import annotations

import os
import signal
import threading

import numpy as np
import pytest

import mbsfmu
from mbsfmu.errors import InputError
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import ROOT

MODELS = ROOT / "scenarios" / "models"


@pytest.fixture
def rng():
    return np.random.default_rng(39)


def _states(model, rng, n):
    pairs = [model.random_state(rng) for _ in range(n)]
    return np.array([q for q, _ in pairs]), np.array([qd for _, qd in pairs])


def _one_by_one(sim_args, model, q0, qd0, u, n_steps, dt, names, times=None):
    """States (n_steps + 1, nx) and outputs (n_steps + 1, len(names)) of one Simulator stepped alone,
    reading every output at every row as a scenario run does."""
    sim = Simulator(model, **sim_args)
    sim.set_configuration(q0, qd0)
    where = [sim.output_names().index(n) for n in names]
    xs, ys = [], []
    for k in range(n_steps + 1):
        if u is not None:
            sim.u = u[min(k, n_steps - 1)]
        xs.append(sim.x.copy())
        ys.append(sim.outputs()[where].copy())
        if k < n_steps:
            if times is None:
                sim.step(dt)
            else:
                sim.advance_to(times[k + 1])
    return np.array(xs), np.array(ys), sim


@pytest.mark.parametrize(
    "name, sim_args",
    [
        ("spacecraft", {"integrator": "rk4", "h_max": 2e-3}),  # a free joint (quaternion), wheels, thrusters
        ("branched_robot", {"integrator": "rk4", "h_max": 1e-3}),  # a spherical joint, a tree
        ("chain7", {"integrator": "dop853", "h_max": 0.0, "rtol": 1e-9, "atol": 1e-11}),
    ],
)
def test_rollout_equals_simulators_one_by_one(name, sim_args, rng):
    model = mbsfmu.load_model(MODELS / f"{name}.yaml")
    template = Simulator(model, **sim_args)
    n, n_steps, dt = 4, 12, 5e-3
    q0, qd0 = _states(model, rng, n)
    u = rng.uniform(-0.5, 0.5, (n, n_steps, len(template.input_names)))
    names = ["qdd." + template.state_names[0].split(".", 1)[1], "engine.E", "engine.W_in", template.record_names()[-1]]
    r = mbsfmu.rollout(template, n_steps, dt, q0=q0, qd0=qd0, u=u, outputs=names, threads=2)
    assert r.status == ("ok",) * n
    for i in range(n):
        x, y, sim = _one_by_one(sim_args, model, q0[i], qd0[i], u[i], n_steps, dt, names)
        np.testing.assert_array_equal(r.x[i], x)  # bit for bit: rtol = atol = 0
        np.testing.assert_array_equal(r.y[i], y)
        assert (r.n_int_steps[i], r.n_rhs[i]) == (sim.n_steps, sim.n_rhs)
    np.testing.assert_array_equal(r.time, np.cumsum([0.0] + [dt] * n_steps))


def test_thread_count_does_not_change_results(rng):
    model = mbsfmu.load_model(MODELS / "branched_robot.yaml")
    sim = Simulator(model, integrator="rk4", h_max=1e-3)
    q0, qd0 = _states(model, rng, 7)
    u = rng.uniform(-1, 1, (20, len(sim.input_names)))  # one control sequence for every run
    runs = [mbsfmu.rollout(sim, 20, 2e-3, q0=q0, qd0=qd0, u=u, outputs=["engine.KE"], threads=k) for k in (1, 2, 5)]
    for r in runs[1:]:
        np.testing.assert_array_equal(r.x, runs[0].x)
        np.testing.assert_array_equal(r.y, runs[0].y)


def test_parameter_sets_one_simulator_per_run_and_a_time_grid(rng):
    """N parameter sets: one Simulator per run (its own model's numbers), stepped over a time grid as
    Simulator.advance_to; the templates are left as they were."""
    base = mbsfmu.load_model(MODELS / "spring_pendulum.yaml")
    from mbsfmu.engine.model import Model
    from mbsfmu.engine.spec.edits import edit_spec

    masses = [0.5, 0.7, 0.9]
    models = [Model(edit_spec(base.spec, "body.mass.mass", m), source=base.source) for m in masses]
    args = {"integrator": "dop853", "rtol": 1e-12, "atol": 1e-12}
    sims = [Simulator(m, **args) for m in models]
    for s in sims:
        s.set_configuration([0.1], [0.0])
    sims[1].u = [0.25]  # held over every step of run 1 (u not given: each Simulator's own inputs)
    before = [s.x.copy() for s in sims]
    times = [0.0, 0.01, 0.02, 0.035, 0.05]
    r = mbsfmu.rollout(sims, times=times, outputs=["engine.E"], threads=2)
    for i, m in enumerate(models):
        u = [[0.25]] * 4 if i == 1 else None
        x, y, _sim = _one_by_one(args, m, [0.1], [0.0], u, 4, None, ["engine.E"], times)
        np.testing.assert_array_equal(r.x[i], x)
        np.testing.assert_array_equal(r.output("engine.E")[i], y[:, 0])
        np.testing.assert_array_equal(sims[i].x, before[i])
    assert len({r.x[i, -1, 0] for i in range(3)}) == 3  # the masses made three different runs


def test_a_failed_run_is_its_own(rng):
    """A run whose state becomes non-finite stops with its status and the Simulator's message; the
    other runs complete with the numbers they have alone."""
    model = mbsfmu.load_model(MODELS / "chain7.yaml")
    sim = Simulator(model, integrator="rk4", h_max=1e-3)
    q0, qd0 = _states(model, rng, 3)
    qd0[1] = 1e160  # qd^2 overflows in the first step
    r = mbsfmu.rollout(sim, 5, 1e-3, q0=q0, qd0=qd0, threads=2)
    assert r.status == ("ok", "failed", "ok")
    assert r.n_done.tolist() == [5, 0, 5]
    alone = Simulator(model, integrator="rk4", h_max=1e-3)
    alone.set_configuration(q0[1], qd0[1])
    with pytest.raises(mbsfmu.MbsError) as e:
        alone.step(1e-3)
    assert r.messages[1] == str(e.value)
    np.testing.assert_array_equal(r.x[1, 0], alone.x)  # the row before the failed step is kept
    assert np.isnan(r.x[1, 1:]).all()
    x, _y, _s = _one_by_one({"integrator": "rk4", "h_max": 1e-3}, model, q0[2], qd0[2], None, 5, 1e-3, [])
    np.testing.assert_array_equal(r.x[2], x)


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"q0": np.zeros((2, 6))}, ["q0 must be (n_runs, 7)", "(2, 6)"]),
        ({"q0": np.zeros((2, 7)), "qd0": np.zeros((3, 7))}, ["qd0 must be (2, 7)"]),
        ({"x0": np.zeros((2, 16)), "u": np.zeros((3, 5, 7))}, ["number of runs differs", "initial states 2", "u 3"]),
        ({"u": np.zeros((4, 7))}, ["u must be (5, 7)", "q1.tau"]),
        ({"x0": np.full((2, 16), np.nan)}, ["x0[0, 0] (q.q1) is nan", "must be finite"]),
        ({"u": np.full((5, 7), np.inf)}, ["u[0, 0] (q1.tau) is inf"]),
        ({"outputs": ["engine.EE"]}, ["no output 'engine.EE'", "did you mean 'engine.E'"]),
        ({"threads": 0}, ["threads must be a positive integer"]),
        ({"x0": "abc"}, ["x0 must be an array of numbers"]),
    ],
)
def test_bad_arguments_are_named(kwargs, words):
    model = mbsfmu.load_model(MODELS / "chain7.yaml")
    sim = Simulator(model)
    with pytest.raises(InputError) as e:
        mbsfmu.rollout(sim, 5, 1e-3, **kwargs)
    for w in words:
        assert w in str(e.value)


def test_bad_steps_and_quaternions_are_named():
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    sim = Simulator(model)
    for kwargs, word in (
        ({"n_steps": 5, "dt": -1.0}, "dt must be a positive"),
        ({"n_steps": 5}, "give n_steps and dt"),
        ({"times": [0.0, 0.2, 0.1]}, "strictly increasing"),
        ({"n_steps": 5, "dt": 0.1, "times": [0, 1]}, "not both"),
    ):
        with pytest.raises(InputError, match=word):
            mbsfmu.rollout(sim, **kwargs)
    x0 = np.tile(sim.x, (3, 1))
    x0[2, 3:7] *= 2.0  # the free joint's quaternion (after its position) of norm 2
    with pytest.raises(InputError, match=r"run 2: q\[3:7\] is a quaternion of norm 2"):
        mbsfmu.rollout(sim, 3, 0.01, x0=x0)
    python = Simulator(model, backend="python")
    with pytest.raises(InputError, match="python backend"):
        mbsfmu.rollout(python, 3, 0.01)


def test_ctrl_c_keeps_what_was_computed():
    """SIGINT while the core runs: every run ends after its current step, and the KeyboardInterrupt
    carries the rollout of what was computed. The runs have 2^31 - 2 steps: only the stop ends them."""
    model = mbsfmu.load_model(MODELS / "spring_pendulum.yaml")
    sim = Simulator(model, integrator="rk4", h_max=1e-3)

    earlier = set(threading.enumerate())  # a thread of an earlier call may not have ended yet

    def interrupt() -> None:
        while not any(t.name == "mbsfmu-rollout" and t not in earlier for t in threading.enumerate()):
            threading.Event().wait(0.001)
        os.kill(os.getpid(), signal.SIGINT)

    # Python's own handler, also where SIGINT came in ignored (a job started in the background
    # without job control inherits SIG_IGN: the runs would then never end)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    helper = threading.Thread(target=interrupt)
    helper.start()
    try:
        with pytest.raises(KeyboardInterrupt) as e:
            mbsfmu.rollout(sim, 2**31 - 2, 1e-3, q0=[[0.1], [0.2], [0.3]], threads=2, states=False)
    finally:
        helper.join()
        signal.signal(signal.SIGINT, previous)
    got = e.value.rollout  # the signal may come before a thread took its first run: then none began
    assert set(got.status) <= {"stopped", "not run"}
    for status, n_done, n_int in zip(got.status, got.n_done, got.n_int_steps):
        assert n_done < 2**31 - 2 and n_int == n_done  # h_max = dt: one internal step per step
        assert status == "stopped" or n_done == 0
