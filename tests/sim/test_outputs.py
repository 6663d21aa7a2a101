"""The body records (mbsfmu/sim/outputs.py), computed for all bodies at once, against the
definitions body by body: the CoM rbar_i = p_i + R_i c_i and its velocity from the Kinematics'
point velocity (RBDA Sec. 2.11), I_i = R_i I_c,i R_i^T, the four notations of MBS Momentum
Testing Figs. 1-2 and the wheel momenta h = R_i I_c,i omega_i."""

from __future__ import annotations

import numpy as np
import pytest

import mbsfmu
from mbsfmu.sim.outputs import body_record_names, body_record_values, body_records
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import MODELS

LABELS = dict(zip(("xx", "yy", "zz", "xy", "xz", "yz"), ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))))


def records_body_by_body(model, kin) -> dict[str, float]:
    t = model.tree
    idx = model.rigid_bodies
    m = {i: t.mass[i] for i in idx}
    rbar = {i: kin.p[i] + kin.R[i] @ t.com[i] for i in idx}
    rbardot = {i: kin.point_velocity(i, t.com[i]) for i in idx}
    M = sum(m.values())
    R = sum(m[i] * rbar[i] for i in idx) / M
    Rdot = sum(m[i] * rbardot[i] for i in idx) / M
    C1, eta1, etadot1 = kin.R[1], kin.p[1], kin.point_velocity(1, np.zeros(3))
    out = {}
    for i in idx:
        name = model.body_names[i - 1]
        I_w = kin.R[i] @ t.I_c[i] @ kin.R[i].T
        out[f"{name}.m"] = m[i]
        for key, I in (("I", I_w), ("I_b1", C1.T @ I_w @ C1)):
            for lab, (a, b) in LABELS.items():
                out[f"{name}.{key}[{lab}]"] = I[a, b]
        w = kin.omega_world[i]
        vec = {
            "omega": w,
            "omega_b1": C1.T @ w,
            "r_abs": rbar[i],
            "rdot_abs": rbardot[i],
            "r_cm": rbar[i] - R,
            "rdot_cm": rbardot[i] - Rdot,
            "r_cm_b1": C1.T @ (rbar[i] - R),
            "rdot_cm_b1": C1.T @ (rbardot[i] - Rdot),
            "r_j1": rbar[i] - eta1,
            "rdot_j1": rbardot[i] - etadot1,
            "r_j1_b1": C1.T @ (rbar[i] - eta1),
            "rdot_j1_b1": C1.T @ (rbardot[i] - etadot1),
        }
        for key, v in vec.items():
            for c in range(3):
                out[f"{name}.{key}[{c + 1}]"] = v[c]
    for wname, (i, _w) in model.wheels.items():
        h = kin.R[i] @ t.I_c[i] @ kin.v[i, :3]  # rotor angular velocity in rotor axes, to world
        g = t.axis[i]
        for c in range(3):  # the file's order since version 1: h[c], h_b1[c] by component
            out[f"{wname}.h[{c + 1}]"] = h[c]
            out[f"{wname}.h_b1[{c + 1}]"] = (C1.T @ h)[c]
        out[f"{wname}.Iw"] = g @ t.I_c[i] @ g
    for c in range(9):
        out[f"C1[{c + 1}]"] = C1.flat[c]
    for key, val in (("R", R), ("Rdot", Rdot), ("eta1", eta1), ("etadot1", etadot1), ("g", model.gravity)):
        for c in range(3):
            out[f"{key}[{c + 1}]"] = val[c]
    return out


@pytest.mark.parametrize("name", ["spacecraft.yaml", "branched_robot.yaml", "urdf_quadruped.urdf", "fourbar.yaml"])
def test_body_records_equal_body_by_body(name, rng):
    """Same names in the same order, values equal to 1e-14 of the largest record: each value is
    a product of a few O(1)-O(10) factors, a few eps of rounding either way (the spacecraft has
    reaction wheels, the quadruped a free base, the four-bar a closed loop)."""
    model = mbsfmu.load_model(MODELS / name)
    sim = Simulator(model, backend="python")
    q, _ = model.initial_state()
    sim.set_configuration(q, rng.standard_normal(model.nv))
    kin = sim.kinematics()
    ref = records_body_by_body(model, kin)
    names = body_record_names(model)
    assert names == tuple(ref)
    got = body_record_values(model, kin)
    want = np.array(list(ref.values()))
    assert np.max(np.abs(got - want)) <= 1e-14 * max(1.0, np.max(np.abs(want)))
    assert body_records(model, kin) == dict(zip(names, got.tolist()))
    assert {k: sim.records()[k] for k in names} == dict(zip(names, got.tolist()))


BUNDLED = sorted(p.name for p in MODELS.iterdir() if p.suffix in (".yaml", ".urdf") and "overlay" not in p.name)


@pytest.mark.parametrize("name", BUNDLED)
def test_core_records_equal_numpy_reference(name, rng):
    """The C core's records (records.c) equal outputs.body_record_values on the numpy kinematics
    at random states of every bundled model: both evaluate the same products of O(1)-O(10) terms
    in another order and from independently computed poses (the core's and numpy's outward
    passes, each ~N eps of round-off over the N bodies of a path), so 1e-12 of the largest record."""
    from mbsfmu.engine.native import core as native

    if not native.available():
        pytest.skip("the C core cannot be built here")
    model = mbsfmu.load_model(MODELS / name)
    fast, ref = Simulator(model, backend="native"), Simulator(model, backend="python")
    assert fast.record_names() == ref.record_names()
    for _ in range(3):
        q, _ = model.random_state(rng)
        qd = rng.standard_normal(model.nv)
        fast.set_configuration(q, qd)
        ref.set_configuration(q, qd)
        got, want = fast.record_values(), ref.record_values()
        assert got.shape == want.shape
        assert np.max(np.abs(got - want)) <= 1e-12 * max(1.0, np.max(np.abs(want))), name


@pytest.mark.parametrize("name", BUNDLED)
def test_every_output_from_the_core_equals_the_numpy_reference(name, rng):
    """Simulator.outputs (one call of the C core: mbs_sim_outputs) equals the numpy reference's
    q, qd, u, qdd, engine values, body, wheel and spring records at random states and inputs of
    every bundled model, loops closed (1e-12 of the largest output: ABA's and the loop solve's
    round-off, ~N eps of the O(1)-O(10) terms, as above). Names once, the same on both backends."""
    from mbsfmu.engine.native import core as native

    if not native.available():
        pytest.skip("the C core cannot be built here")
    model = mbsfmu.load_model(MODELS / name)
    fast, ref = Simulator(model, backend="native"), Simulator(model, backend="python")
    names = fast.output_names()
    assert names == ref.output_names() and len(set(names)) == len(names)
    assert names[-len(fast.record_names()) :] == fast.record_names()
    for _ in range(3):
        q, _ = model.random_state(rng)
        qd = rng.standard_normal(model.nv)
        u = rng.standard_normal(len(fast.input_names))
        for sim in (fast, ref):
            sim.set_configuration(q, qd)
            sim.u = u
        n_rhs = fast.n_rhs
        got, want = fast.outputs(), ref.outputs()
        assert got.shape == want.shape == (len(names),)
        err = np.abs(got - want)
        assert np.max(err) <= 1e-12 * max(1.0, np.max(np.abs(want))), (name, names[int(np.argmax(err))])
        assert fast.n_rhs == n_rhs  # an output, not a step
    fast.step(1e-3)
    ref.step(1e-3)
    assert np.max(np.abs(fast.outputs() - ref.outputs())) <= 1e-9 * max(1.0, np.max(np.abs(ref.outputs())))


def test_native_state_is_the_cores(rng):
    """On the native backend x is the core's state, read-only (assign it to change it), and the
    step's fast path takes exactly what the checked path takes."""
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    sim = Simulator(model, backend="native")
    x0 = sim.x.copy()
    with pytest.raises(ValueError):
        sim.x[0] = 1.0
    sim.step(1e-3)
    assert not np.array_equal(sim.x, x0) and sim.t == 1e-3 and sim.n_steps == 1
    state = sim.get_state()
    sim.step(1e-3)  # a float in range: the fast path
    fast = (sim.x.copy(), sim.t, sim.n_steps)
    sim.set_state(state)
    sim.step(np.float64(1e-3))  # not a float: the checked path, from the same state
    assert np.array_equal(sim.x, fast[0]) and sim.t == fast[1] and sim.n_steps == fast[2]
    assert not np.array_equal(sim.x, state.x)
    sim.set_state(state)
    assert np.array_equal(sim.x, state.x) and sim.t == state.t and sim.n_steps == 1
    for bad in (0.0, -1e-3, float("nan"), float("inf"), 1e-3 * 1e13):
        with pytest.raises(mbsfmu.InputError):
            sim.step(bad)
    assert np.array_equal(sim.x, state.x)
    sim.u[0] = float("nan")  # an input edited in place, not checked by set_input
    with pytest.raises(mbsfmu.InputError, match="inputs must be finite"):
        sim.step(1e-3)
    assert np.array_equal(sim.x, state.x) and sim.t == state.t
