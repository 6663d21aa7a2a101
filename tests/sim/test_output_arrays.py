"""The Simulator's outputs as arrays with a names table (issue 39, item 2): ``invariant_values``
(``invariant_names``), ``record_values`` (``record_names``) and ``outputs`` with ``output_slices``,
the dict API (``invariants``, ``records``) on top, both backends; on the native backend the arrays
come from the core (binding.c: one C call each) and equal what the dict API and the ctypes calls
give, bit for bit."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.spec.description import Anchor, SpringDamper
from mbsfmu.sim.rows import ENGINE_COLUMNS, engine_values, records_row
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import MODELS
from tests.support.trees import random_tree


def sprung_model(rng):
    """A free-floating tree with joint springs and point spring-dampers (records end with k, x)."""
    base = random_tree(rng, 5, springs=True)
    b = base.body_names
    forces = (
        SpringDamper("s1", Anchor(b[1], (0.2, 0, 0)), Anchor("world", (0.5, 0.5, 0.5)), k=30.0, d=0.5, l0=0.3),
        SpringDamper("s2", Anchor(b[0], (0, 0.1, 0)), Anchor(b[4], (0.1, 0, 0)), k=20.0, d=0.2, l0=0.1),
    )
    return mbsfmu.Model(replace(base.spec, forces=forces))


def models(rng):
    yield mbsfmu.load_model(MODELS / "spacecraft.yaml")
    yield mbsfmu.load_model(MODELS / "scara.yaml")
    yield sprung_model(rng)


def stepped(model, backend: str, rng_seed: int = 7) -> Simulator:
    sim = Simulator(model, backend=backend)
    rng = np.random.default_rng(rng_seed)
    q, qd = model.random_state(rng)
    sim.set_configuration(q, qd)
    sim.u[:] = rng.normal(size=sim.u.size)
    for _ in range(3):
        sim.step(1e-3)
    return sim


@pytest.mark.parametrize("backend", ["native", "python"])
def test_the_arrays_and_their_names_agree_with_the_dict_api(backend, rng):
    for model in models(rng):
        sim = stepped(model, backend)
        inv = sim.invariants()
        values = sim.invariant_values()
        assert sim.invariant_names == ENGINE_COLUMNS and values.shape == (len(ENGINE_COLUMNS),)
        want = [*inv.p_sys, *inv.P_sys, *inv.H_sys, *inv.R, *inv.Rdot, inv.KE, inv.PE, inv.E, *sim.work]
        np.testing.assert_array_equal(values, want)
        assert engine_values(sim) == values.tolist()
        records = sim.records()
        assert list(records) == list(sim.record_names())
        np.testing.assert_array_equal(sim.record_values(), list(records.values()))
        row = records_row(sim)
        np.testing.assert_array_equal([row[c] for c in ENGINE_COLUMNS], values)


@pytest.mark.parametrize("backend", ["native", "python"])
def test_output_slices_cut_outputs_into_the_named_groups(backend, rng):
    for model in models(rng):
        sim = stepped(model, backend)
        out, names, sl = sim.outputs(), sim.output_names(), sim.output_slices
        assert sl["records"].stop == len(names) == out.size
        assert names[sl["engine"]] == sim.invariant_names
        assert names[sl["records"]] == sim.record_names()
        assert names[sl["q"]] + names[sl["qd"]] == tuple(sim.state_names[: model.nq + model.nv])
        np.testing.assert_array_equal(out[sl["q"]], sim.q)
        np.testing.assert_array_equal(out[sl["qd"]], sim.qd)
        np.testing.assert_array_equal(out[sl["u"]], sim.u)
        np.testing.assert_array_equal(out[sl["engine"]], sim.invariant_values())
        np.testing.assert_array_equal(out[sl["records"]], sim.record_values())


def test_native_arrays_equal_the_ctypes_calls_bit_for_bit(rng):
    """invariant_values: the core's lazy invariants of the state = mbs_invariants_at(q, qd);
    record_values: mbs_sim_outputs' records = mbs_records_at plus the springs' k and x, which the
    numpy reference (spring_records) gives to within rounding (rtol 1e-12: a spring length of a few
    O(1) products)."""
    for model in models(rng):
        sim = stepped(model, "native")
        core = sim._native
        q, qd = sim.q, sim.qd
        ref = core.invariants_at(q, qd)
        want = [*ref.p_sys, *ref.P_sys, *ref.H_sys, *ref.R, *ref.Rdot, ref.KE, ref.PE, ref.KE + ref.PE, *sim.work]
        np.testing.assert_array_equal(sim.invariant_values(), want)
        bodies, wheels = np.asarray(model.rigid_bodies, np.int32), np.zeros(0, np.int32)
        if model.wheels:
            wheels = np.asarray([i for i, _w in model.wheels.values()], np.int32)
        n = 49 * bodies.size + 7 * wheels.size + 24
        body = core.records_at(q, qd, bodies, wheels, np.empty(n))
        got = sim.record_values()
        np.testing.assert_array_equal(got[:n], body)
        np.testing.assert_allclose(got[n:], list(sim.spring_records().values()), rtol=1e-12, atol=1e-14)


def test_invariant_values_follow_the_state(rng):
    sim = stepped(mbsfmu.load_model(MODELS / "scara.yaml"), "native")
    before = sim.invariant_values()
    sim.step(1e-2)
    after = sim.invariant_values()
    assert not np.array_equal(before, after)
    python = stepped(mbsfmu.load_model(MODELS / "scara.yaml"), "python")
    python.step(1e-2)
    # the same RK4 steps in C and numpy: ~1e-12 apart after 13 steps of O(1) values
    np.testing.assert_allclose(after, python.invariant_values(), rtol=1e-9, atol=1e-9)


def test_a_failing_outputs_call_names_the_problem():
    sim = Simulator(mbsfmu.load_model(MODELS / "scara.yaml"), backend="native")
    sim.outputs()
    sim.u[0] = np.nan
    with pytest.raises(mbsfmu.InputError, match="inputs must be finite"):
        sim.outputs()
    with pytest.raises(mbsfmu.InputError, match="inputs must be finite"):
        sim.step(1e-3)


@pytest.mark.parametrize("backend", ["python", "native"])
def test_body_poses_are_the_kinematics_poses(backend, rng):
    """``body_poses`` (what /tf takes each cycle) gives ``kinematics()``'s R and p bit for bit, on both
    backends, at a moving state of a free-floating tree."""
    sim = Simulator(sprung_model(rng), backend=backend)
    sim.advance_to(0.05)
    R, p = sim.body_poses()
    kin = sim.kinematics()
    assert np.array_equal(R, kin.R) and np.array_equal(p, kin.p)
    assert R.shape == (sim.model.N + 1, 3, 3) and not np.allclose(R[1:], np.eye(3))
