"""Helpers of the python-runtime FMU's tests (no tests, no fixtures: the ``fmus`` fixture of
tests/fmu/conftest.py hands out an FmuFiles): FMUs built once per session, fmpy instances, the
engine run directly for comparison, and the C host (tests/support/c_host/fmu_run.c)."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import MODELS, ROOT, SUPPORT
from tests.support.run_folder import build_once, model_key

C_HOST = SUPPORT / "c_host" / "fmu_run.c"
FMI_HEADERS = ROOT / "mbsfmu" / "fmu" / "csrc" / "fmi2"


class FmuFiles:
    """FMUs built on demand into one folder of the run (the file is the cache: every test module
    that asks for the same FMU gets the same file, whichever xdist worker runs it:
    ``run_folder.build_once``), and their extracted folders."""

    def __init__(self, base: Path):
        self.base = base

    def fmu(self, model: str, naming: str = "structured", loader: bool | None = None, **solver) -> Path:
        from mbsfmu.fmu import build_fmu

        tag = "-".join(f"{k}{v}" for k, v in sorted(solver.items()))
        src = Path(model) if Path(model).suffix else MODELS / f"{model}.yaml"
        path = self.base / f"{model_key(src)}-{naming}-{'noloader' if loader is False else 'loader'}{tag}.fmu"
        return build_once(
            path, lambda folder: build_fmu(src, folder / path.name, naming=naming, loader=loader, **solver)
        )

    def extracted(self, fmu: Path) -> Path:
        def extract(folder: Path) -> Path:
            d = folder / fmu.stem
            with zipfile.ZipFile(fmu) as z:
                z.extractall(d)
            for so in (d / "binaries").rglob("*.so"):
                so.chmod(0o755)
            return d

        return build_once(self.base / "x" / fmu.stem, extract)

    def c_host(self) -> Path:
        gcc = shutil.which("gcc")
        if gcc is None:
            pytest.skip("no gcc for the C host")

        def compile_host(folder: Path) -> Path:
            exe = folder / "fmu_run"
            run = subprocess.run(
                [gcc, "-Wall", "-O1", f"-I{FMI_HEADERS}", str(C_HOST), "-o", str(exe), "-ldl"],
                capture_output=True,
                text=True,
            )
            assert run.returncode == 0, run.stderr
            return exe

        return build_once(self.base / "fmu_run", compile_host)


def value_refs(fmu: Path) -> dict[str, int]:
    from fmpy import read_model_description

    return {v.name: v.valueReference for v in read_model_description(str(fmu)).modelVariables}


class Logged:
    """fmpy callbacks that keep every logger message as (status, category, message)."""

    def __init__(self):
        from fmpy.fmi2 import (
            fmi2CallbackAllocateMemoryTYPE,
            fmi2CallbackFreeMemoryTYPE,
            fmi2CallbackFunctions,
            fmi2CallbackLoggerTYPE,
        )

        self.messages: list[tuple[int, str, str]] = []

        def log(_env, _name, status, category, message):
            self.messages.append((status, (category or b"").decode(), (message or b"").decode()))

        libc = ctypes.CDLL(None)
        self.callbacks = fmi2CallbackFunctions()
        self.callbacks.logger = fmi2CallbackLoggerTYPE(log)
        self.callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(libc.calloc)
        self.callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(libc.free)

    def text(self) -> str:
        return "\n".join(m for _s, _c, m in self.messages)


def instance(
    fmus: FmuFiles,
    fmu: Path,
    name: str = "inst",
    params: dict | None = None,
    inputs: dict | None = None,
    init: bool = True,
    logged: Logged | None = None,
    logging_on: bool = False,
):
    """An instantiated (and by default initialised) fmpy FMU2Slave; params/inputs by name,
    Real unless the value is an int."""
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave

    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    f = FMU2Slave(
        guid=md.guid,
        unzipDirectory=str(fmus.extracted(fmu)),
        modelIdentifier=md.coSimulation.modelIdentifier,
        instanceName=name,
    )
    f.instantiate(callbacks=logged.callbacks if logged else None, loggingOn=logging_on)
    f.setupExperiment(startTime=0.0)
    for key, value in {**(params or {}), **(inputs or {})}.items():
        if isinstance(value, int) and not isinstance(value, bool):
            f.setInteger([vr[key]], [value])
        else:
            f.setReal([vr[key]], [float(value)])
    if init:
        f.enterInitializationMode()
        f.exitInitializationMode()
    f.vr = vr
    return f


def close(f) -> None:
    f.terminate()
    f.freeInstance()


def engine(model: str, params: dict | None = None, **solver):
    """The Simulator of a bundled model as the FMU builds it (params by FMU variable name; the
    FMU's backend, the numpy reference, unless ``backend`` is given)."""
    import mbsfmu
    from mbsfmu.fmu.slave import BACKEND

    solver.setdefault("backend", BACKEND)
    from mbsfmu.engine.model import Model
    from mbsfmu.fmu.variables import apply_parameters, variable_table
    from mbsfmu.sim.simulator import Simulator

    m = mbsfmu.load_model(MODELS / f"{model}.yaml")
    if params:
        keys = {v.name: v.source[1] for v in variable_table(m) if v.source[0] == "param"}
        m = Model(apply_parameters(m.spec, {keys[k]: v for k, v in params.items()}), source=m.source)
    return Simulator(m, **solver)


def pd_torques(q: np.ndarray, qd: np.ndarray) -> np.ndarray:
    """The test's controller for the SCARA: PD toward q_ref = (0.8, -0.6) rad plus gravity
    compensation by the model's inverse dynamics [N m]."""
    import mbsfmu

    global _SCARA
    if _SCARA is None:
        _SCARA = mbsfmu.load_model(MODELS / "scara.yaml")
    g = _SCARA.inverse_dynamics(q, np.zeros(2), np.zeros(2))
    return np.array([100.0 * (0.8 - q[0]) - 20.0 * qd[0], 60.0 * (-0.6 - q[1]) - 10.0 * qd[1]]) + g


_SCARA = None
