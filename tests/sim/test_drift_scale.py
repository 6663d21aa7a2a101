"""The scale of the FMU's drift.H_sys (``angular_momentum_scale``)
checked against a second formulation: the body records' world inertia, angular velocity and
CM-relative position and velocity (for rigid bodies without wheels the two sums have the same
terms: |I_c,i omega_i| + m_i |rhat_i x rhatdot_i|); the scale of drift.E_balance
(``energy_scale``, the C core's ``E_scale``) against the checker's energy scale of the body
records; and ``relative_drift``'s cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

import mbsfmu
from mbsfmu.fmu.variables import relative_drift
from mbsfmu.sim.outputs import angular_momentum_scale, body_records, energy_scale
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import MODELS


def records_scale(model, kin) -> float:
    r = body_records(model, kin)
    total = 0.0
    for name in model.body_names:
        if f"{name}.m" not in r:
            continue
        I = np.zeros((3, 3))
        for (a, b), lab in zip(((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)), ("xx", "yy", "zz", "xy", "xz", "yz")):
            I[a, b] = I[b, a] = r[f"{name}.I[{lab}]"]
        vec = {k: np.array([r[f"{name}.{k}[{c}]"] for c in (1, 2, 3)]) for k in ("omega", "r_cm", "rdot_cm")}
        total += np.linalg.norm(I @ vec["omega"]) + r[f"{name}.m"] * np.linalg.norm(
            np.cross(vec["r_cm"], vec["rdot_cm"])
        )
    return float(total)


def test_angular_momentum_scale_matches_body_records(rng):
    """chain7 (7 revolute links, no wheels) at 5 random states: the two sums agree to 1e-13
    relative (each is a sum of 2 N = 14 norms of O(1) products: ~N eps of rounding)."""
    model = mbsfmu.load_model(MODELS / "chain7.yaml")
    sim = Simulator(model, backend="python")
    for _ in range(5):
        sim.set_configuration(rng.uniform(-2, 2, model.nq), rng.uniform(-3, 3, model.nv))
        kin = sim.kinematics()
        got, ref = angular_momentum_scale(model, kin), records_scale(model, kin)
        assert ref > 0 and abs(got - ref) <= 1e-13 * ref


def test_scale_is_nonzero_where_H_sys_is_zero():
    """The spacecraft's wheels spin against the hub: |H_sys| may be ~0, the scale is not."""
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    sim = Simulator(model, backend="python")
    assert angular_momentum_scale(model, sim.kinematics()) > 1.0


def test_relative_drift_cases():
    assert relative_drift(0.0, 0.0) == 0.0 and relative_drift(-0.0, 5.0) == 0.0
    assert relative_drift(-2e-15, 4.0) == 5e-16
    assert relative_drift(1e-300, 0.0) == math.inf


@pytest.mark.parametrize("name", ["chain7", "spacecraft", "scara"])
def test_energy_scale_is_the_checkers_and_the_c_cores(name, rng):
    """KE + springs + sum m_i |g| |c_i| three ways at 3 states each: ``energy_scale`` (numpy), the C
    core's mbs_invariants.E_scale, and the checker's energy_constant scale of the same state's
    records (a one-row trajectory, procedure 1), to 1e-13 relative (sums of ~2 N + springs terms
    of one sign: ~N eps). Joint springs (chain7), wheels and springs without gravity (spacecraft),
    gravity (chain7, scara)."""
    from mbsfmu.checker import conservation_report
    from mbsfmu.engine.native.core import Core
    from mbsfmu.sim.rows import records_row
    from mbsfmu.trajectory import Trajectory

    model = mbsfmu.load_model(MODELS / f"{name}.yaml")
    sim, core = Simulator(model, backend="python"), Core(model)
    q0, _ = model.initial_state()
    for _ in range(3):
        sim.set_configuration(q0, rng.uniform(-1, 1, model.nv))
        kin = sim.kinematics()
        got = energy_scale(model, kin, sim.invariants().KE, sim.spring_energy(kin))
        c_core = core.invariants_at(sim.q, sim.qd).E_scale
        row = records_row(sim)
        traj = Trajectory.from_columns({k: [v] for k, v in row.items()})
        checker = conservation_report(traj, ["energy_constant"])["checks"]["energy_constant"]["scale"]
        assert got > 0
        for other in (c_core, checker):
            np.testing.assert_allclose(other, got, rtol=1e-13, atol=0)
