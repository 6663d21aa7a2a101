"""Helpers of the native FMU's tests (no tests, no fixtures: the ``native`` fixture of
tests/fmu/conftest.py hands out a NativeFmus): native FMUs built once per session, the portable C
host (tests/support/c_host/fmu_run.c) compiled by zig for Linux and Windows, and runs through
fmpy's FMU2Slave."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np

from tests.support.paths import MODELS, ROOT, SUPPORT

HOST_SOURCE = SUPPORT / "c_host" / "fmu_run.c"
HEADERS = ROOT / "mbsfmu" / "fmu" / "csrc" / "fmi2"
HOST_TARGETS = {
    "linux64": ("x86_64-linux-gnu.2.17", "fmu_run", ["-ldl"]),
    "win64": ("x86_64-windows-gnu", "fmu_run.exe", []),
}


def model_file(model: str) -> Path:
    """A bundled model by name ("scara", "urdf_arm7.urdf") or a path."""
    p = Path(model)
    if p.is_absolute():
        return p
    return MODELS / (model if p.suffix else f"{model}.yaml")


class NativeFmus:
    """Native FMUs built on demand into one session folder (the file is the cache)."""

    def __init__(self, base: Path):
        self.base = base

    def fmu(self, model: str, platforms=("linux64",), **solver) -> Path:
        from mbsfmu.fmu.native import build_native_fmu

        tag = "-".join(f"{k}{v}" for k, v in sorted(solver.items()))
        path = self.base / f"{Path(model).stem}-{'+'.join(platforms)}{tag}.fmu"
        if not path.exists():
            build_native_fmu(model_file(model), path, platforms=platforms, progress=None, **solver)
        return path

    def extracted(self, fmu: Path) -> Path:
        d = self.base / "x" / fmu.stem
        if not d.exists():
            with zipfile.ZipFile(fmu) as z:
                z.extractall(d)
        return d

    def host(self, platform: str = "linux64") -> Path:
        target, name, libs = HOST_TARGETS[platform]
        exe = self.base / name
        if not exe.exists():
            run = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "ziglang",
                    "cc",
                    "-target",
                    target,
                    "-O2",
                    f"-I{HEADERS}",
                    str(HOST_SOURCE),
                    "-o",
                    str(exe),
                    *libs,
                ],
                capture_output=True,
                text=True,
            )
            assert run.returncode == 0, run.stderr
        return exe


def description(fmu: Path) -> ET.Element:
    with zipfile.ZipFile(fmu) as z:
        return ET.fromstring(z.read("modelDescription.xml"))


def variables(fmu: Path) -> dict[str, tuple[int, str, str]]:
    """{name: (value reference, type, causality)}"""
    out = {}
    for sv in description(fmu).find("ModelVariables"):
        out[sv.get("name")] = (int(sv.get("valueReference")), sv[0].tag, sv.get("causality"))
    return out


def library(extracted: Path, platform: str = "linux64") -> Path:
    ident = extracted_identifier(extracted)
    suffix = {"linux64": ".so", "win64": ".dll", "darwin64": ".dylib"}[platform]
    return extracted / "binaries" / platform / f"{ident}{suffix}"


def extracted_identifier(extracted: Path) -> str:
    return ET.parse(extracted / "modelDescription.xml").getroot().find("CoSimulation").get("modelIdentifier")


def host_command(
    host: Path,
    extracted: Path,
    steps: int,
    dt: float,
    reals=(),
    ints=(),
    sets: dict | None = None,
    state: bool = False,
    bench: bool = False,
    platform: str = "linux64",
    lib: str | None = None,
) -> list:
    guid = ET.parse(extracted / "modelDescription.xml").getroot().get("guid")
    cmd = [str(host), lib or str(library(extracted, platform)), guid, "file:///resources", str(steps), repr(dt)]
    if reals:
        cmd += ["--real", ",".join(map(str, reals))]
    if ints:
        cmd += ["--int", ",".join(map(str, ints))]
    for vr, x in (sets or {}).items():
        cmd += ["--set", f"{vr}={x!r}"]
    return cmd + (["--state"] if state else []) + (["--bench"] if bench else [])


def parse_rows(stdout: str) -> np.ndarray:
    return np.array([[float(v) for v in line.split(",")] for line in stdout.splitlines() if line and line[0] != "b"])


def fmpy_run(
    fmu: Path,
    extracted: Path,
    dt: float,
    steps: int,
    outputs: list[str],
    settings: dict | None = None,
    ints: list[str] = (),
) -> np.ndarray:
    """Rows [t, outputs..., ints...] after every step of an fmpy FMU2Slave instance; settings by
    name (Integer when the value is an int) set before initialisation."""
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave

    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    f = FMU2Slave(
        guid=md.guid, unzipDirectory=str(extracted), modelIdentifier=md.coSimulation.modelIdentifier, instanceName="run"
    )
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    for name, value in (settings or {}).items():
        if isinstance(value, int) and not isinstance(value, bool):
            f.setInteger([vr[name]], [value])
        else:
            f.setReal([vr[name]], [float(value)])
    f.enterInitializationMode()
    f.exitInitializationMode()
    rvr, ivr, rows = [vr[n] for n in outputs], [vr[n] for n in ints], []
    for k in range(steps):
        f.doStep(k * dt, dt)
        rows.append([(k + 1) * dt, *f.getReal(rvr), *(f.getInteger(ivr) if ivr else [])])
    f.terminate()
    f.freeInstance()
    return np.array(rows)


def copy_fmu(fmu: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / fmu.name
    shutil.copyfile(fmu, out)
    return out
