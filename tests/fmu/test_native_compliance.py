"""The native FMU in the FMU Compliance Checker (modelica-tools/FMUComplianceChecker, "FMUChk",
issue 24 item 4, issue 36 item 5): the XML check, a Co-Simulation run and a Model Exchange run
(the checker's explicit Euler), each on its own (``-k cs``, ``-k me``), report 0 warnings and 0
errors, with ``providesDirectionalDerivative="true"``; the Model Exchange run equals fmpy's explicit
Euler at the same step and approaches the Co-Simulation run at first order.

FMUChk has no binary on PyPI or Debian: build it from its repository (its CMake fetches the FMI
Library) and point ``MBSFMU_FMUCHK`` at ``fmuCheck.linux64`` (or put it on ``PATH``); without it
these tests skip with that reason. The checker loads ``fmi2GetDirectionalDerivative`` because the
modelDescription sets the flag (a missing symbol is an error and a warning, the control below) but
never calls it; its values are checked in test_native_derivatives.py."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.support.native_fmu import copy_fmu
from tests.support.robots import robots_dir

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# the summary at the end of the checker's log: what the FMU logged, then the checker's own counts
SUMMARY = re.compile(
    r"FMU reported:\s*(\d+) warning\(s\) and error\(s\)\s*"
    r"Checker reported:\s*(\d+) Warning\(s\)\s*(\d+) Error\(s\)"
)


def checker() -> str:
    """The checker's executable: MBSFMU_FMUCHK, else fmuCheck.linux64 on PATH; skip without one."""
    exe = os.environ.get("MBSFMU_FMUCHK") or shutil.which("fmuCheck.linux64")
    if not exe or not Path(exe).is_file():
        pytest.skip("FMUChk not found (build modelica-tools/FMUComplianceChecker, MBSFMU_FMUCHK=its fmuCheck.linux64)")
    return exe


def panda_urdf() -> Path | None:
    """Franka panda from example-robot-data (its fingers: one mimic joint), or None."""
    robots = robots_dir()
    p = robots / "panda_description/urdf/panda.urdf" if robots else None
    return p if p is not None and p.is_file() else None


def run_checker(
    exe: str, fmu: Path, folder: Path, kind: str | None = None, h: float = 1e-3
) -> tuple[int, int, int, int, str, int]:
    """fmuCheck -h H -s 1 -l 4 on ``fmu`` in ``folder``, checking the XML and simulating the
    interface ``kind`` ("cs" or "me"; None: the checker's default, both): (exit code,
    FMU-reported, checker warnings, checker errors, log, CSV rows)."""
    (folder / "tmp").mkdir(parents=True, exist_ok=True)
    for f in ("out.csv", "log.txt"):
        (folder / f).unlink(missing_ok=True)
    only = ["-k", kind] if kind else []
    cmd = [exe, *only, "-h", repr(h), "-s", "1", "-l", "4", "-t", "tmp", "-o", "out.csv", "-e", "log.txt", fmu.name]
    rc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=600).returncode
    log = (folder / "log.txt").read_text()
    m = SUMMARY.search(log)
    assert m, f"no summary in the checker's log:\n{log[-2000:]}"
    rows = len((folder / "out.csv").read_text().splitlines()) if (folder / "out.csv").exists() else 0
    return rc, int(m[1]), int(m[2]), int(m[3]), log, rows


@pytest.mark.parametrize("kind", ["cs", "me"])
@pytest.mark.parametrize("model", ["scara", "spacecraft", "fourbar", "panda"])
def test_the_compliance_checker_reports_no_warning_and_no_error(native, tmp_path, model, kind):
    """Each FMU, alone in a fresh folder, in Co-Simulation and in Model Exchange: exit code 0, the
    FMU logs no warning or error, the checker 0 warnings and 0 errors, and 1 s at 1 ms steps
    (communication steps, or the checker's explicit Euler steps) written (header and the
    checker's default 500 output points plus the start)."""
    exe = checker()
    if model == "panda":
        urdf = panda_urdf()
        if urdf is None:
            pytest.skip("example-robot-data is not installed (test extra)")
        model = str(urdf)
    fmu = copy_fmu(native.fmu(model), tmp_path / "run")
    with zipfile.ZipFile(fmu) as z:
        assert b'providesDirectionalDerivative="true"' in z.read("modelDescription.xml")
    rc, fmu_reported, warnings, errors, log, rows = run_checker(exe, fmu, tmp_path / "run", kind)
    assert (rc, fmu_reported, warnings, errors) == (0, 0, 0, 0), log[-3000:]
    assert rows == 502, log[-3000:]
    assert ("Version returned from ME FMU" in log) == (kind == "me"), log[-3000:]


def test_the_checker_does_report_a_missing_directional_derivative(native, tmp_path):
    """Control: the same FMU with fmi2GetDirectionalDerivative renamed in its binary's symbol
    table (same length, so the ELF stays valid) gets at least one error from the checker, so the
    clean reports above do show the function is exported."""
    exe = checker()
    src = native.fmu("scara")
    fmu = tmp_path / "run" / "scara.fmu"
    fmu.parent.mkdir()
    name = b"fmi2GetDirectionalDerivative\0"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(fmu, "w", zipfile.ZIP_DEFLATED) as zout:
        for item in zin.infolist():
            data = zin.read(item)
            if item.filename == "binaries/linux64/scara.so":
                assert name in data
                data = data.replace(name, b"fmi2GetDirectionalDerivativX\0")
            zout.writestr(item, data)
    rc, fmu_reported, warnings, errors, log, rows = run_checker(exe, fmu, tmp_path / "run")
    assert errors >= 1, log[-3000:]


def checker_csv(folder: Path) -> dict[str, np.ndarray]:
    """The checker's out.csv as {column name: values} (names unquoted)."""
    rows = list(csv.reader((folder / "out.csv").read_text().splitlines()))
    data = np.array([[float(v) for v in r] for r in rows[1:]])
    return {name.strip('"'): data[:, j] for j, name in enumerate(rows[0])}


@pytest.mark.parametrize("model", ["scara", "spacecraft", "fourbar"])
def test_the_checkers_model_exchange_run_is_fmpys_euler_and_converges_to_co_simulation(native, tmp_path, model):
    """The checker's Model Exchange run (its own explicit Euler at -h) equals fmpy's explicit Euler
    at the same step at every output point to 1e-11 of each state's scale (the same method on the
    same derivatives: 1000 updates x += h dx, each rounding by eps |x|, ~2e-13 relative, with the
    growth of rounding through the dynamics); its distance to the Co-Simulation FMU (RK4 at 1 ms,
    global error ~1e-9, negligible here) halves with the step (first order: ratio 2 +- 0.4 between
    h = 2 ms and 1 ms), so the two interfaces integrate the same equations."""
    from fmpy import simulate_fmu

    from .test_native_me import state_outputs

    exe = checker()
    fmu = copy_fmu(native.fmu(model), tmp_path / "run")
    states = state_outputs(fmu)
    cs = simulate_fmu(str(fmu), fmi_type="CoSimulation", stop_time=1.0, output=states, output_interval=1e-3)
    dist = []
    for h in (2e-3, 1e-3):
        rc, fmu_reported, warnings, errors, log, rows = run_checker(exe, fmu, tmp_path / "run", "me", h)
        assert (rc, warnings, errors) == (0, 0, 0), log[-3000:]
        me = checker_csv(tmp_path / "run")
        euler = simulate_fmu(
            str(fmu),
            fmi_type="ModelExchange",
            stop_time=1.0,
            output=states,
            solver="Euler",
            step_size=h,
            output_interval=h,
            record_events=False,
        )
        at = np.searchsorted(euler["time"], me["time"] - 1e-9)
        assert np.abs(euler["time"][at] - me["time"]).max() <= 1e-12
        at_cs = np.searchsorted(cs["time"], me["time"] - 1e-9)
        d = 0.0
        for name in states:
            scale = max(1.0, float(np.abs(cs[name]).max()))
            assert np.abs(euler[name][at] - me[name]).max() <= 1e-11 * scale, name
            d = max(d, float(np.abs(cs[name][at_cs] - me[name]).max()) / scale)
        dist.append(d)
    assert dist[0] / dist[1] == pytest.approx(2.0, abs=0.4), dist
