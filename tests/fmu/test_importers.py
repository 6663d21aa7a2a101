"""The FMU in importers other than fmpy (integration tier): libcosimpy (Open Simulation
Platform's libcosim, which loads FMUs through the FMI Library like OpenModelica) and a plain C
host compiled here against fmpy's FMI 2.0 headers, run with a clean environment (env -i: no
LD_PRELOAD, no PYTHONPATH). The same unconnected instance gives the same outputs to 1e-12 in
fmpy, libcosimpy and the C host."""

from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.support.python_fmu import close, instance, value_refs

pytestmark = pytest.mark.integration

# one unconnected spacecraft instance: wheel torque and thrust held, 2 s in 40 steps of 50 ms
SETTINGS = {"solver.h_max": 0.01, "rw1.torque": 0.01, "thr1.thrust": 0.2}
OUTPUTS = [f"base.q[{k}]" for k in range(1, 8)] + [
    "hinge_l.q",
    "rw1.qd",
    "H_sys[1]",
    "H_sys[2]",
    "H_sys[3]",
    "KE",
    "E",
    "drift.H_sys",
]
DT, STEPS = 0.05, 40


def atol(ref: np.ndarray) -> float:
    return 1e-12 * max(1.0, float(np.abs(ref).max()))


def run_fmpy(fmus, fmu) -> np.ndarray:
    f = instance(
        fmus,
        fmu,
        params={"solver.h_max": SETTINGS["solver.h_max"]},
        inputs={k: v for k, v in SETTINGS.items() if k != "solver.h_max"},
    )
    out, rows = [f.vr[n] for n in OUTPUTS], []
    for k in range(STEPS):
        f.doStep(k * DT, DT)
        rows.append(f.getReal(out))
    close(f)
    return np.array(rows)


def run_libcosim(fmu) -> np.ndarray:
    pytest.importorskip("libcosimpy")
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave

    vr = value_refs(fmu)
    log_output_level(CosimLogLevel.WARNING)
    ex = CosimExecution.from_step_size(step_size=round(DT * 1e9))  # nanoseconds
    slave = CosimLocalSlave(fmu_path=str(fmu), instance_name="spacecraft")
    assert slave.ptr(), "libcosim could not load the FMU"
    idx = ex.add_local_slave(local_slave=slave)
    assert idx >= 0
    for name, value in SETTINGS.items():
        assert ex.real_initial_value(idx, vr[name], value)
    observer = CosimObserver.create_last_value()
    ex.add_observer(observer=observer)
    rows = []
    for _ in range(STEPS):
        assert ex.step(1)
        rows.append(observer.last_real_values(idx, [vr[n] for n in OUTPUTS]))
    status = ex.status()
    assert status.error_code == 0 and status.current_time == round(STEPS * DT * 1e9)
    return np.array(rows)


def host_args(fmus, fmu, steps: int, dt: float, outputs, settings: dict, extra=()) -> list[str]:
    vr = value_refs(fmu)
    with zipfile.ZipFile(fmu) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    x = fmus.extracted(fmu)
    lib = x / "binaries" / "linux64" / f"{root.find('CoSimulation').get('modelIdentifier')}.so"
    args = [
        str(fmus.c_host()),
        str(lib),
        root.get("guid"),
        f"file://{x}/resources",
        str(steps),
        repr(dt),
        "--tag",
        "--real",
        ",".join(str(vr[n]) for n in outputs),
    ]
    for n, v in settings.items():
        args += ["--set", f"{vr[n]}={v!r}"]
    return args + list(extra)


def execution_tool() -> dict[str, str]:
    """The environment that names the FMU's execution tool (documentation/externalDependencies.txt):
    this test's Python, whose libpython is not on the library search path (the FMU ships no path
    of the machine that built it)."""
    import sysconfig

    lib = Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("INSTSONAME")
    return {"MBSFMU_LIBPYTHON": str(lib), "MBSFMU_PYTHON": sys.executable}


def run_host(args, env: dict | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    """The C host with a clean environment (env -i) but for the two variables naming the
    execution tool: nothing else from this Python process."""
    run = subprocess.run(args, env={**execution_tool(), **(env or {})}, capture_output=True, text=True, timeout=300)
    if ok:
        assert run.returncode == 0, f"C host failed ({run.returncode}):\n{run.stderr}"
    return run


def parse_host(stdout: str) -> dict[tuple[int, int], np.ndarray]:
    """{(load, instance): (steps, 1 + n_out) array [t, outputs...]}"""
    rows: dict[tuple[int, int], list] = {}
    for line in stdout.splitlines():
        if line.startswith("nan-status"):
            continue
        load, inst, *vals = line.split(",")
        rows.setdefault((int(load), int(inst)), []).append([float(v) for v in vals])
    return {k: np.array(v) for k, v in rows.items()}


def test_libcosim_matches_fmpy(fmus):
    fmu = fmus.fmu("spacecraft")
    ref = run_fmpy(fmus, fmu)
    np.testing.assert_allclose(run_libcosim(fmu), ref, rtol=0.0, atol=atol(ref))


def test_c_host_clean_environment_matches_fmpy(fmus):
    fmu = fmus.fmu("spacecraft")
    ref = run_fmpy(fmus, fmu)
    out = parse_host(run_host(host_args(fmus, fmu, STEPS, DT, OUTPUTS, SETTINGS)).stdout)
    np.testing.assert_allclose(out[0, 0][:, 1:], ref, rtol=0.0, atol=atol(ref))


def test_three_importers_agree(fmus):
    """fmpy, libcosimpy and the C host: the same outputs to 1e-12 for one unconnected instance."""
    fmu = fmus.fmu("spacecraft")
    runs = {
        "fmpy": run_fmpy(fmus, fmu),
        "libcosim": run_libcosim(fmu),
        "c_host": parse_host(run_host(host_args(fmus, fmu, STEPS, DT, OUTPUTS, SETTINGS)).stdout)[0, 0][:, 1:],
    }
    for a in runs:
        for b in runs:
            np.testing.assert_allclose(runs[a], runs[b], rtol=0.0, atol=atol(runs["fmpy"]), err_msg=f"{a} vs {b}")


def test_c_host_two_instances_and_reload(fmus):
    """Two instances with different parameters in one C process; unload (dlclose) and load the
    FMU again three times: every load gives the same trajectories."""
    fmu = fmus.fmu("scara")
    vr = value_refs(fmu)
    args = host_args(
        fmus,
        fmu,
        25,
        0.004,
        ["q1.q", "q2.q", "q1.qd"],
        {"q1.tau": 0.5, "q2.tau": -0.2},
        extra=["--instances", "2", "--param2", f"{vr['link2.mass']}=3.0", "--loads", "3"],
    )
    out = parse_host(run_host(args).stdout)
    assert set(out) == {(load, k) for load in range(3) for k in range(2)}
    for load in (1, 2):
        for k in (0, 1):
            np.testing.assert_array_equal(out[load, k], out[0, k])
    assert np.abs(out[0, 0] - out[0, 1]).max() > 1e-4
    f = instance(fmus, fmu, params={"link2.mass": 3.0}, inputs={"q1.tau": 0.5, "q2.tau": -0.2})
    ref = []
    for k in range(25):
        f.doStep(k * 0.004, 0.004)
        ref.append(f.getReal([f.vr[n] for n in ("q1.q", "q2.q", "q1.qd")]))
    close(f)
    np.testing.assert_allclose(out[0, 1][:, 1:], ref, rtol=0.0, atol=1e-12)


def test_c_host_nan_rejected(fmus):
    fmu = fmus.fmu("scara")
    vr = value_refs(fmu)
    run = run_host(host_args(fmus, fmu, 2, 0.01, ["q1.q"], {}, extra=["--nan", str(vr["q1.tau"])]))
    assert "nan-status,3" in run.stdout
    assert "q1.tau = nan rejected" in run.stderr


def test_without_the_loader_the_fmu_keeps_pythonfmu_s_binary_and_says_so(fmus):
    """loader=False: binaries/linux64/<id>.so is pythonfmu's binary as pythonfmu built it (no
    loader, no second copy) and resources/mbsfmu_build.json records "loader": false, which
    documentation/externalDependencies.txt's C-host route depends on; with the loader (the
    default) pythonfmu's binary moves beside it as <id>.pythonfmu.so and the record says true."""
    import json

    for loader, expected in ((False, False), (None, True)):
        fmu = fmus.fmu("scara", loader=loader)
        with zipfile.ZipFile(fmu) as z:
            names = set(z.namelist())
            info = json.loads(z.read("resources/mbsfmu_build.json"))
        assert info["loader"] is expected, info
        assert "binaries/linux64/scara.so" in names
        assert ("binaries/linux64/scara.pythonfmu.so" in names) is expected, sorted(names)
        assert not [n for n in names if n.startswith("binaries/") and not n.startswith("binaries/linux64/")]


def test_loader_reports_missing_python(fmus):
    """Without the Python it needs, instantiation fails with a message that says what is missing
    and how to point the FMU at a Python."""
    fmu = fmus.fmu("scara")
    run = run_host(
        host_args(fmus, fmu, 1, 0.01, ["q1.q"], {}), env={"MBSFMU_LIBPYTHON": "/nonexistent/libpython.so"}, ok=False
    )
    assert run.returncode != 0
    assert "cannot load the Python library /nonexistent/libpython.so" in run.stderr and "MBSFMU_LIBPYTHON" in run.stderr


def test_loader_ignores_host_python_variables(fmus):
    """PYTHONPATH/PYTHONHOME of the host environment (e.g. pointing at another Python) do not
    break the FMU: the loader starts Python with an isolated configuration."""
    fmu = fmus.fmu("scara")
    env = {"PYTHONHOME": "/nonexistent", "PYTHONPATH": "/nonexistent", "PATH": os.environ.get("PATH", "")}
    out = parse_host(run_host(host_args(fmus, fmu, 3, 0.01, ["q1.q"], {"q1.tau": 1.0}), env=env).stdout)
    clean = parse_host(run_host(host_args(fmus, fmu, 3, 0.01, ["q1.q"], {"q1.tau": 1.0})).stdout)
    np.testing.assert_array_equal(out[0, 0], clean[0, 0])


def test_c_host_exit_leaves_a_sound_heap(fmus):
    """pythonfmu 0.7's binary released its interpreter-state holder twice at process exit (a
    static destructor, then its library destructor), writing into freed memory: with the
    spacecraft FMU the C host aborted at exit in 5 of 5 runs ("free(): corrupted unsorted
    chunks", raised in libgfortran's exit handler). The loader empties the holder from an exit
    handler that runs first (loader.c, release_pythonfmu_state): 3 runs, each exits 0."""
    fmu = fmus.fmu("spacecraft")
    for _ in range(3):
        run = run_host(host_args(fmus, fmu, 3, 0.01, ["rw1.qd"], {"rw1.torque": 0.01}), ok=False)
        assert run.returncode == 0 and "corrupted" not in run.stderr, run.stderr
