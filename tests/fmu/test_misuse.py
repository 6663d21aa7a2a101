"""Misuse of the python-runtime FMU (host crashes, refused calls, bad start values, what the
runtime needs): each case runs in its own host process (tests/support/fmu_probe.py: fmpy's
low-level API and ctypes), and the test asserts that the host survives (exit code 0 and the
probe's last line), the returned fmi2 statuses and the logged message. Integration tier: every
case starts a Python host that loads the FMU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import SUPPORT

pytestmark = pytest.mark.integration
PROBE = SUPPORT / "fmu_probe.py"
OK, WARNING, DISCARD, ERROR, FATAL = range(5)


def probe(fmus, case: str, model: str = "scara") -> tuple[dict, subprocess.CompletedProcess]:
    """Run one case in a fresh host process; assert it survived; its JSON report."""
    d = fmus.extracted(fmus.fmu(model))
    run = subprocess.run(
        [sys.executable, str(PROBE), str(d), case], capture_output=True, text=True, timeout=600, env={**os.environ}
    )
    assert run.returncode == 0, f"host died ({run.returncode}) in {case}:\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    lines = run.stdout.strip().splitlines()
    assert lines[-1] == "PROBE-SURVIVED", run.stdout
    return json.loads(lines[-2]), run


def messages(report: dict, status: int | None = None) -> str:
    return "\n".join(m for s, m in report["log"] if status is None or s == status)


# ---- host crashes ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "case, why",
    [
        ("resources_missing", "/nonexistent/mbsfmu/resources has no slavemodule.txt"),
        ("resources_unrelated", "has no slavemodule.txt"),
        ("resources_unzip_root", "has no slavemodule.txt"),
        ("null_instance_name", "instanceName is NULL"),
        ("null_guid", "does not match the FMU's"),
    ],
)
def test_instantiate_refuses_bad_arguments(fmus, case, why):
    r, _ = probe(fmus, case)
    assert r["result"] is True, "fmi2Instantiate returned an instance"
    assert why in messages(r, ERROR)


def test_free_twice_and_step_after_free(fmus):
    r, run = probe(fmus, "double_free")
    assert "fmi2FreeInstance" in run.stderr and "not a live instance" in run.stderr
    r, run = probe(fmus, "step_after_free")
    assert r["result"] == [ERROR, ERROR]  # fmi2DoStep, fmi2GetReal on the freed component
    assert "fmi2DoStep" in run.stderr and "fmi2GetReal" in run.stderr


@pytest.mark.parametrize(
    "case, text",
    [
        ("get_real_null", "fmi2GetReal: the value reference array vr is NULL (nvr = 3)"),
        ("get_integer_null", "fmi2GetInteger: the value reference array vr is NULL (nvr = 2)"),
    ],
)
def test_null_arrays_refused(fmus, case, text):
    r, _ = probe(fmus, case)
    assert r["result"] == ERROR and text in messages(r, ERROR)


def test_exit_without_free_instance(fmus):
    """The host leaves through the interpreter's normal exit with a live instance and a Python
    logger (it once aborted in 6 of 30 runs): 5 runs, every one exits 0."""
    for _ in range(5):
        r, run = probe(fmus, "exit_without_free")
        assert r["statuses"] == [OK] * 4 and "corrupted" not in run.stderr


# ---- refuse what must be refused, Error where Error is right ----------------------------


@pytest.mark.parametrize(
    "case, status, text",
    [
        ("get_real_unknown_vr", ERROR, "value reference 1000000 does not exist"),
        ("get_integer_on_real", ERROR, "q1.q (value reference 29) is of type Real, not Integer"),
        ("get_boolean_on_real", ERROR, "q1.q (value reference 29) is of type Real, not Boolean"),
        ("step_nan_time", ERROR, "fmi2DoStep(t = nan, dt = 0.01): t must be finite"),
        ("step_negative", ERROR, "dt finite and > 0"),
        ("setup_nan_start", ERROR, "fmi2SetupExperiment: startTime = nan: must be finite"),
        ("step_after_terminate", ERROR, "fmi2DoStep is not allowed in terminated (after fmi2Terminate)"),
        ("step_before_init", ERROR, "fmi2DoStep is not allowed in instantiated"),
        ("step_huge", DISCARD, "needs 1e+303 internal steps of solver.h_max = 0.001 s"),
        ("h_max_tiny", DISCARD, "needs 1e+298 internal steps of solver.h_max = 1e-300 s"),
        ("foreign_state_pointer", ERROR, "is not an FMU state of this instance"),
    ],
)
def test_refused_calls(fmus, case, status, text):
    r, _ = probe(fmus, case)
    assert r["result"] == status, r
    assert FATAL not in r["statuses"]
    assert text in messages(r, status)


@pytest.mark.parametrize(
    "case, text",
    [
        ("random_bytes", "bytes refused: not an mbsfmu FMU state"),
        ("truncated_bytes", "bytes refused: truncated or extended"),
        ("state_nan_x", "sim.x: non-finite entries at [0]"),
        ("state_inf_t", "sim.t = inf: expected a finite number"),
        ("state_short_x", "sim.x: 2 numbers, the model has 6"),
        ("state_wrong_types", "params: expected a mapping"),
        ("state_negative_mass", "params.link1.mass = -2.0: below the minimum 0.0"),
    ],
)
def test_bad_states_refused_and_instance_keeps_running(fmus, case, text):
    """A bad blob or crafted state: fmi2Error with the reason, and the instance still steps (OK)
    from the state it had."""
    r, _ = probe(fmus, case)
    assert r["result"][0] == ERROR and r["result"][-1] == OK, r
    assert FATAL not in r["statuses"]
    assert text in messages(r, ERROR)


# ---- bad start values -------------------------------------------------------------------


def test_bad_parameters_are_errors_with_numbers(fmus):
    r, _ = probe(fmus, "negative_mass")
    assert r["result"] == ERROR
    msg = messages(r, ERROR)
    assert "link1.mass = -1 rejected: below the minimum 0" in msg and "nan" not in msg
    r, _ = probe(fmus, "bad_inertia")
    assert r["result"] == [ERROR, OK, OK], r  # exit init fails, is fixed, then steps
    assert FATAL not in r["statuses"]
    msg = messages(r, ERROR)
    assert "triangle inequality I1 + I2 >= I3 (1 + 1 < 5)" in msg and "unknown error" not in msg


# ---- the python runtime is honest about what it needs ------------------------------------


def test_python_runtime_declares_its_execution_tool(fmus):
    import xml.etree.ElementTree as ET

    fmu = fmus.fmu("scara")
    with zipfile.ZipFile(fmu) as z:
        names = z.namelist()
        cs = ET.fromstring(z.read("modelDescription.xml")).find("CoSimulation")
        deps = z.read("documentation/externalDependencies.txt").decode()
        build = json.loads(z.read("resources/mbsfmu_build.json"))
        slave = next(z.read(n).decode() for n in names if n.startswith("resources/mbsfmu_slave_"))
        shipped = b"".join(z.read(n) for n in names if not n.endswith("/"))
    assert cs.get("needsExecutionTool") == "true"
    assert not [n for n in names if n.startswith("binaries/") and not n.startswith("binaries/linux64/")]
    for needed in ("Python 3.", "numpy", "scipy", "PyYAML", "MBSFMU_LIBPYTHON", "MBSFMU_PYTHON"):
        assert needed in deps
    assert build["python"] == {"version": build["python"]["version"], "abi": build["python"]["abi"]}
    for pushes in ("addsitedir", "site_dirs", "sys.path.insert", "sys.path.append", "sys.path[:"):
        assert pushes not in slave, f"the slave module changes the host's sys.path ({pushes})"
    for path in {sys.prefix, sys.exec_prefix, str(Path(sys.executable).parent), os.path.expanduser("~")}:
        assert path.encode() not in shipped, f"the FMU contains the build machine's path {path}"


def test_fmu_never_imports_numba(fmus, tmp_path):
    """The python-runtime FMU runs the numpy reference engine: stepping it imports no numba."""
    d = fmus.extracted(fmus.fmu("scara"))
    code = (
        f"import runpy, sys; Probe = runpy.run_path({str(PROBE)!r})['Probe']\n"
        f"x = Probe({str(d)!r}); x.init(); x.do_step(0.0, 0.01); x.get_real(['drift.H_sys'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('numba', 'llvmlite')))"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip().splitlines()[-1] == "[]"
