"""The FMI 3.0 FMU in fmpy (issue 36 item 5): fmpy's validation (fmpy.validation.validate_fmu:
the FMI 3.0 XML schema, variable names, ModelStructure, start values, causality/variability
combinations, units) of the FMI 3.0 FMU of every bundled model, and fmpy's runs of its
Co-Simulation and Model Exchange interfaces (CVode, Euler) against the FMI 2.0 FMU's."""

from __future__ import annotations

import numpy as np
import pytest

from tests.support.native_fmu import description, state_names
from tests.support.paths import MODELS

pytestmark = pytest.mark.integration

BUNDLED = sorted(p.name for p in MODELS.iterdir() if p.suffix in (".yaml", ".urdf"))


@pytest.mark.parametrize("model", BUNDLED)
def test_fmpy_finds_no_problem_in_the_fmi3_fmu(native, model):
    """Each bundled model's ``--fmi-version 3`` FMU: an FMI 3.0 modelDescription with both
    interfaces, and fmpy's validation returns no problem."""
    from fmpy.validation import validate_fmu

    fmu = native.fmu(model, fmi_version=3)
    root = description(fmu)
    assert root.get("fmiVersion") == "3.0"
    assert root.find("ModelExchange") is not None and root.find("CoSimulation") is not None
    assert validate_fmu(str(fmu)) == []


@pytest.mark.parametrize("model", ["spacecraft", "scara", "fourbar", "urdf_arm7.urdf"])
def test_fmpy_runs_fmi3_co_simulation_and_model_exchange_like_fmi2(native, model):
    """fmpy over 1 s: FMI 3.0 Co-Simulation (1 ms steps) equals FMI 2.0 Co-Simulation bit for bit
    (one core, one value table: the arrays q, qd are the FMI 2.0 scalars in state order); FMI 3.0
    Model Exchange under CVode (rtol 1e-10) agrees with Co-Simulation (RK4 at 1 ms) within 1e-6
    of each state's scale (RK4's global error C h^4 ~ 1e-9 to 1e-7 on these models, CVode's set
    by rtol), and under explicit Euler (h = 1 ms) equals FMI 2.0 Model Exchange under the same
    Euler to 1e-12 of each state's scale (the same derivatives and projections)."""
    from fmpy import simulate_fmu

    fmu2, fmu3 = native.fmu(model), native.fmu(model, fmi_version=3)
    s2, s3 = state_names(fmu2), state_names(fmu3)

    def run(fmu, names, fmi_type, output_interval=1e-2, **kw):
        r = simulate_fmu(
            str(fmu), fmi_type=fmi_type, stop_time=1.0, output=names, output_interval=output_interval, **kw
        )
        return np.hstack([np.asarray(r[n], float).reshape(len(r), -1) for n in names])

    cs3 = run(fmu3, s3, "CoSimulation", step_size=1e-3, record_events=False)
    np.testing.assert_array_equal(cs3, run(fmu2, s2, "CoSimulation", step_size=1e-3, record_events=False))
    scale = np.maximum(1.0, np.abs(cs3).max(axis=0))
    me3 = run(fmu3, s3, "ModelExchange", solver="CVode", relative_tolerance=1e-10, record_events=False)
    assert me3.shape == cs3.shape and (np.abs(me3 - cs3) / scale).max() <= 1e-6
    # fmpy's Euler steps by the output interval; record_events=False: one row per step
    euler3 = run(fmu3, s3, "ModelExchange", 1e-3, solver="Euler", step_size=1e-3, record_events=False)
    euler2 = run(fmu2, s2, "ModelExchange", 1e-3, solver="Euler", step_size=1e-3, record_events=False)
    assert euler3.shape == (1001, cs3.shape[1])
    assert (np.abs(euler3 - euler2) / scale).max() <= 1e-12
