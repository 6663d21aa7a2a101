"""The native FMU in the FMU Compliance Checker (modelica-tools/FMUComplianceChecker, "FMUChk",
issue 24 item 4): XML check and a co-simulation run report 0 warnings and 0 errors, with
``providesDirectionalDerivative="true"``.

FMUChk has no binary on PyPI or Debian: build it from its repository (its CMake fetches the FMI
Library) and point ``MBSFMU_FMUCHK`` at ``fmuCheck.linux64`` (or put it on ``PATH``); without it
these tests skip with that reason. The checker loads ``fmi2GetDirectionalDerivative`` because the
modelDescription sets the flag (a missing symbol is an error and a warning, the control below) but
never calls it; its values are checked in test_native_derivatives.py."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

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


def run_checker(exe: str, fmu: Path, folder: Path) -> tuple[int, int, int, int, str, int]:
    """fmuCheck -h 1e-3 -s 1 -l 4 on ``fmu`` in ``folder``: (exit code, FMU-reported, checker
    warnings, checker errors, log, CSV rows)."""
    (folder / "tmp").mkdir(parents=True, exist_ok=True)
    cmd = [exe, "-h", "1e-3", "-s", "1", "-l", "4", "-t", "tmp", "-o", "out.csv", "-e", "log.txt", fmu.name]
    rc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=600).returncode
    log = (folder / "log.txt").read_text()
    m = SUMMARY.search(log)
    assert m, f"no summary in the checker's log:\n{log[-2000:]}"
    rows = len((folder / "out.csv").read_text().splitlines()) if (folder / "out.csv").exists() else 0
    return rc, int(m[1]), int(m[2]), int(m[3]), log, rows


@pytest.mark.parametrize("model", ["scara", "spacecraft", "fourbar", "panda"])
def test_the_compliance_checker_reports_no_warning_and_no_error(native, tmp_path, model):
    """Each FMU, alone in a fresh folder: exit code 0, the FMU logs no warning or error, the
    checker 0 warnings and 0 errors, and 1 s of co-simulation at 1 ms steps written (header and
    the checker's default 500 output points plus the start)."""
    exe = checker()
    if model == "panda":
        urdf = panda_urdf()
        if urdf is None:
            pytest.skip("example-robot-data is not installed (test extra)")
        model = str(urdf)
    fmu = copy_fmu(native.fmu(model), tmp_path / "run")
    with zipfile.ZipFile(fmu) as z:
        assert b'providesDirectionalDerivative="true"' in z.read("modelDescription.xml")
    rc, fmu_reported, warnings, errors, log, rows = run_checker(exe, fmu, tmp_path / "run")
    assert (rc, fmu_reported, warnings, errors) == (0, 0, 0, 0), log[-3000:]
    assert rows == 502, log[-3000:]


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
