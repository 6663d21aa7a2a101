"""The native FMU in Reference-FMUs' fmusim (modelica/Reference-FMUs, the FMI project's own
reference importer; issue 36 item 5) beside fmpy: FMI 2.0 Model Exchange (CVode and explicit
Euler) and FMI 3.0 Co-Simulation and Model Exchange (CVode and explicit Euler), on the bundled
models of the issue. Each fmusim run equals fmpy's run of the same interface and integrator within
the tolerance stated per test, and every Model Exchange run agrees with the Co-Simulation FMU.

fmusim has no binary on PyPI or Debian and left the Reference-FMUs repository after v0.0.39:
build it from that tag's fmusim/ folder (it needs SUNDIALS' CVODE, libxml2, zlib and minizip) and
point ``MBSFMU_FMUSIM`` at the executable (or put ``fmusim`` on ``PATH``); without it the tests
skip with that reason."""

from __future__ import annotations

import csv
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from tests.support.native_fmu import copy_fmu, state_names

pytestmark = [pytest.mark.integration, pytest.mark.slow]

# the bundled models of the issue: free base with wheels, serial arm, closed loop, URDF arm with a
# mimic coupling
MODELS = ("spacecraft", "scara", "fourbar", "urdf_arm7.urdf")

# CVode's relative tolerance in both importers, and the agreement asked of two runs that integrate
# the same equations to it (or of one of them and the Co-Simulation FMU's RK4 at h = 1 ms, global
# error C h^4 ~ 1e-9 to 1e-7 on these models): 1e-6 of each state's scale over 1 s
RTOL = 1e-10
AGREE = 1e-6
# two explicit Euler runs at the same step on the same derivatives: 1000 updates x += h dx, each
# rounding by eps |x| (~2e-13 relative in all), grown by the dynamics' sensitivity over 1 s
SAME_EULER = 1e-11


def fmusim() -> str:
    """fmusim's executable: MBSFMU_FMUSIM, else fmusim on PATH; skip without one."""
    exe = os.environ.get("MBSFMU_FMUSIM") or shutil.which("fmusim")
    if not exe or not Path(exe).is_file():
        pytest.skip("fmusim not found (build Reference-FMUs v0.0.39's fmusim/, MBSFMU_FMUSIM=its executable)")
    return exe


def run_fmusim(fmu: Path, interface: str, outputs: list[str], h: float, solver: str = "cvode") -> dict[str, np.ndarray]:
    """fmusim over 1 s with output (and Co-Simulation communication, and Euler) step ``h``:
    {name: (rows, size) values} with a "time" column, one row per output point (after any
    event); the run must exit 0."""
    exe = fmusim()
    out = fmu.parent / f"fmusim-{interface}-{solver}.csv"
    cmd = [exe, "--interface-type", interface, "--solver", solver, "--tolerance", repr(RTOL)]
    cmd += ["--stop-time", "1", "--output-interval", repr(h), "--output-file", str(out), "--log-level", "warning"]
    for name in outputs:
        cmd += ["--output-variable", name]
    run = subprocess.run([*cmd, str(fmu)], capture_output=True, text=True, timeout=900, cwd=fmu.parent)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = list(csv.reader(out.read_text().splitlines()))
    assert sorted(n.strip('"') for n in rows[0]) == sorted(["time", *outputs]), rows[0]  # in the FMU's order
    # at a step event fmusim records the values before and after it: keep the last row per time
    body = [r for r, after in zip(rows[1:], rows[2:] + [None]) if after is None or after[0] != r[0]]
    cols = list(zip(*body))
    return {n.strip('"'): np.array([[float(v) for v in x.split()] for x in c]) for n, c in zip(rows[0], cols)}


def run_fmpy(fmu: Path, interface: str, outputs: list[str], h: float, solver: str = "CVode") -> dict[str, np.ndarray]:
    """fmpy's simulate_fmu over 1 s, the same shape as run_fmusim (one row per output point, after
    any event; CVode at RTOL, Euler and Co-Simulation at step ``h``)."""
    from fmpy import simulate_fmu

    kw = dict(solver=solver, relative_tolerance=RTOL) if interface == "me" else {}
    if interface == "me" and solver == "Euler":
        kw["step_size"] = h
    fmi_type = {"me": "ModelExchange", "cs": "CoSimulation"}[interface]
    r = simulate_fmu(
        str(fmu), fmi_type=fmi_type, stop_time=1.0, output=outputs, output_interval=h, record_events=False, **kw
    )
    return {n: np.asarray(r[n], float).reshape(len(r), -1) for n in ["time", *outputs]}


def largest_difference(a: dict, b: dict, names: list[str]) -> float:
    """max over the states (an array's elements each) of max |a - b| / max(1, max |a|), at the
    common output times."""
    t = a["time"][:, 0]
    at = np.searchsorted(b["time"][:, 0], t - 1e-9)
    assert np.abs(b["time"][at, 0] - t).max() <= 1e-12 and len(t) >= 100
    return max(float((np.abs(a[n] - b[n][at]) / np.maximum(1.0, np.abs(a[n]).max(axis=0))).max()) for n in names)


def fmus(native, tmp_path: Path, model: str) -> tuple[Path, Path]:
    """The model's FMI 2.0 and FMI 3.0 FMUs, each alone in a fresh folder."""
    return (
        copy_fmu(native.fmu(model), tmp_path / "fmi2"),
        copy_fmu(native.fmu(model, fmi_version=3), tmp_path / "fmi3"),
    )


@pytest.mark.parametrize("model", MODELS)
def test_fmusim_model_exchange_under_cvode_agrees_with_fmpy_and_co_simulation(native, tmp_path, model):
    """FMI 2.0 and FMI 3.0 Model Exchange under fmusim's CVode (BDF, rtol 1e-10): every state within
    1e-6 of its scale of fmpy's CVode run of the same FMU and of the Co-Simulation FMU (fmpy, RK4
    at h = 1 ms), at 100 output points over 1 s."""
    fmusim()  # skip before building the FMUs when there is none
    for fmu in fmus(native, tmp_path, model):
        states = state_names(fmu)
        sim = run_fmusim(fmu, "me", states, 0.01)
        ref = run_fmpy(fmu, "me", states, 0.01)
        cs = run_fmpy(fmu, "cs", states, 0.01)
        assert largest_difference(sim, ref, states) <= AGREE, fmu
        assert largest_difference(cs, sim, states) <= AGREE, fmu


@pytest.mark.parametrize("model", MODELS)
def test_fmusim_explicit_euler_equals_fmpys(native, tmp_path, model):
    """FMI 2.0 and FMI 3.0 Model Exchange under fmusim's explicit Euler and fmpy's, both at
    h = 1 ms: the same method on the same derivatives (quaternions and loops projected at the
    step events the FMU asks for), equal to 1e-11 of each state's scale."""
    fmusim()  # skip before building the FMUs when there is none
    for fmu in fmus(native, tmp_path, model):
        states = state_names(fmu)
        sim = run_fmusim(fmu, "me", states, 1e-3, solver="euler")
        ref = run_fmpy(fmu, "me", states, 1e-3, solver="Euler")
        assert largest_difference(sim, ref, states) <= SAME_EULER, fmu


@pytest.mark.parametrize("model", MODELS)
def test_fmusim_fmi3_co_simulation_equals_fmpys(native, tmp_path, model):
    """FMI 3.0 Co-Simulation under fmusim and fmpy, 1 ms communication steps: the same FMU taking
    the same RK4 steps gives the same states to 1e-12 of their scale (the importers compute the
    communication points differently, t0 + n h or a running sum, which can move the last bit of a
    step size), and the FMI 3.0 FMU equals the FMI 2.0 one under fmpy bit for bit (one core, one
    value table)."""
    fmusim()  # skip before building the FMUs when there is none
    fmu2, fmu3 = fmus(native, tmp_path, model)
    states = state_names(fmu3)
    sim = run_fmusim(fmu3, "cs", states, 1e-3)
    ref = run_fmpy(fmu3, "cs", states, 1e-3)
    assert largest_difference(sim, ref, states) <= 1e-12
    states2 = state_names(fmu2)
    ref2 = run_fmpy(fmu2, "cs", states2, 1e-3)
    np.testing.assert_array_equal(np.hstack([ref[n] for n in states]), np.hstack([ref2[n] for n in states2]))
