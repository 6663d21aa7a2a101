"""Misuse of the native FMU through its C API (ctypes with fmpy's FMI 2.0 types), each case in
its own process: the host survives, gets the documented status and a log message saying why.

Statuses: 0 fmi2OK, 1 fmi2Warning, 2 fmi2Discard, 3 fmi2Error."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import SUPPORT

pytestmark = pytest.mark.integration
OK, DISCARD, ERROR = 0, 2, 3
RUNNER = SUPPORT / "fmu_misuse_runner.py"


@pytest.fixture(scope="module")
def scara(native):
    return native.extracted(native.fmu("scara"))


def run(extracted, case: str) -> tuple[list, str]:
    res = subprocess.run(
        [sys.executable, str(RUNNER), str(extracted), case], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, f"host did not survive {case} ({res.returncode}):\n{res.stderr[-2000:]}"
    out = json.loads(res.stdout.strip().splitlines()[-1])
    return out["status"], "\n".join(m for _s, m in out["log"])


@pytest.mark.parametrize(
    "case, statuses, words",
    [
        ("dostep_before_init", [ERROR], ["fmi2DoStep: not allowed in instantiated"]),
        ("exit_without_enter", [ERROR], ["fmi2ExitInitializationMode: not allowed in instantiated"]),
        ("enter_twice", [OK, ERROR], ["not allowed in initialization mode"]),
        ("dostep_after_terminate", [OK, OK, OK, OK, ERROR], ["fmi2DoStep: not allowed in terminated"]),
        ("setup_after_init", [OK, OK, OK, ERROR], ["fmi2SetupExperiment: not allowed in step mode"]),
        ("unknown_vr", [OK, OK, OK, ERROR, ERROR], ["unknown value reference 99999"]),
        (
            "wrong_type",
            [OK, OK, OK, ERROR, ERROR, ERROR],
            ["KE (value reference", "is of type Real", "solver.n_steps (value reference", "is of type Integer"],
        ),
        (
            "nan_input",
            [OK, OK, OK, OK, ERROR, ERROR, OK, 1, OK],
            ["= nan rejected: values must be finite", "keeps its previous value"],
        ),
        (
            "set_output_and_fixed_parameter",
            [OK, OK, OK, ERROR, ERROR],
            ["is an output and cannot be set", "is fixed: set it before fmi2ExitInitializationMode"],
        ),
        (
            "bad_steps",
            [OK, OK, OK, ERROR, ERROR, ERROR, ERROR, ERROR, ERROR, ERROR, OK],
            [
                "communicationStepSize -0.001 s rejected",
                "must be finite, > 0 and <= 1e+09 s",
                "or more steps of solver.h_max",
                "currentCommunicationPoint nan rejected",
            ],
        ),
        ("negative_mass", [ERROR, OK, OK, OK], ["link1.mass = -1 rejected: must be >= 0;"]),
        (
            "time_mismatch",
            [OK, OK, OK, OK, ERROR, ERROR, ERROR, OK, OK, 1],
            [
                "communication point t = 0 s rejected: the FMU's state is at t = 0.001 s",
                "communication point t = 0.5 s rejected",
                "communication point t = 0.002 s rejected",
                "restore a state with fmi2SetFMUstate",
            ],
        ),
        (
            "log_categories",
            [OK, ERROR, ERROR, OK, OK, 0, OK, OK, 1],
            ["fmi2SetDebugLogging: unknown log category 'logBogus'", "unknown log category NULL"],
        ),
        (
            "tolerance",
            [OK, ERROR, OK, OK, 1, *[OK, OK, OK, OK, OK, 1, OK] * 2, 1],
            ["tolerance 1e-06 stored as solver.rtol, not used by rk4", "used as solver.rtol of dop853", "-1 rejected"],
        ),
        (
            "reset",
            [OK, OK, OK, OK, *[OK] * 10, OK, 1, OK, ERROR, OK, OK, OK, OK, 1, OK, 1, OK],
            ["fmi2DoStep: not allowed in instantiated"],
        ),
        (
            "status_queries",
            [OK, OK, OK, OK, OK, OK, OK, 1, OK, 0, DISCARD, DISCARD, DISCARD, ERROR],
            ["fmi2GetStatus: status kind 1 is not available", "fmi2GetRealStatus: value is NULL"],
        ),
        (
            "no_boolean_or_string",
            [OK, OK, OK, ERROR, ERROR, ERROR, OK, ERROR],
            [
                "fmi2GetString: KE (value reference",
                "fmi2SetBoolean: KE (value reference",
                "fmi2SetString: unknown value reference 99999 (this FMU has no Boolean or String variables)",
            ],
        ),
        ("nonfinite_state", [OK, OK, OK, OK, DISCARD, OK, 1], ["fmi2DoStep: step from t = 0 s by 1 s discarded"]),
        (
            "garbage_blobs",
            [OK, OK, OK, ERROR, ERROR, ERROR, ERROR, ERROR, ERROR, OK],
            [
                "not an mbsfmu FMU state",
                "truncated or another model's state",
                "checksum mismatch",
                "the state is of another model",
                "state format version 99",
            ],
        ),
        (
            "double_free_state",
            [OK, OK, OK, OK, OK, ERROR, ERROR, ERROR],
            [
                "fmi2FreeFMUstate: not a live FMU state of this instance (already freed?)",
                "fmi2SetFMUstate: not a live FMU state of this instance",
            ],
        ),
        ("foreign_state", [OK, OK, OK, OK, OK, OK, OK, ERROR, OK], ["made by another instance"]),
        (
            "null_pointers",
            [OK, OK, OK, ERROR, ERROR, ERROR, ERROR, ERROR, ERROR, OK],
            ["fmi2GetReal: vr is NULL", "fmi2GetReal: value is NULL", "fmi2GetFMUstate: FMUstate is NULL"],
        ),
        (
            "directional_derivative",
            [ERROR, OK, OK, OK, *[ERROR] * 8, 1, OK, OK],
            [
                "fmi2GetDirectionalDerivative: not allowed in instantiated",
                "fmi2GetDirectionalDerivative: unknown value reference 99999",
                "is a parameter: derivatives with respect to parameters are not provided",
                "KE (value reference",
                "is an output (the knowns are the Real inputs)",
                "is not an output (the unknowns are the Real outputs",
                "solver.n_steps (value reference",
                "= nan for",
                "dvKnown is NULL (nUnknown = 1, nKnown = 1)",
            ],
        ),
        ("freed_component", [OK, OK, OK, ERROR], []),
        (
            "bad_instantiate",
            [0, 0, 0, 0, 0, 1],
            [
                "is not a URI",
                "does not match this FMU's",
                "instanceName is NULL or empty",
                "fmuType must be fmi2ModelExchange (0) or fmi2CoSimulation (1)",
            ],
        ),
    ],
)
def test_misuse_is_refused_with_a_reason(scara, case, statuses, words):
    status, log = run(scara, case)
    assert status == statuses, f"{status}\n{log}"
    for w in words:
        assert w in log, f"{w!r} not in the log:\n{log}"
    assert "nan]" not in log and "[nan" not in log, log  # a range names only the bounds that exist


def test_parameters_violating_the_triangle_inequality_fail_initialisation_with_numbers(scara):
    status, log = run(scara, "triangle_inequality")
    assert status == [OK, OK, OK, ERROR], log
    assert "cannot initialise with these parameters" in log and "link1" in log and "triangle" in log
    assert "10" in log, log
