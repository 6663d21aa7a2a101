"""Helpers of the native FMU's tests (no tests, no fixtures: the ``native`` fixture of
tests/fmu/conftest.py hands out a NativeFmus): native FMUs built once per session, the portable C
hosts (tests/support/c_host/fmu_run.c for FMI 2.0, fmu3_run.c for FMI 3.0) compiled by zig for
Linux and Windows, and runs through fmpy's FMU2Slave."""

from __future__ import annotations

import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np

from tests.support.paths import MODELS, ROOT, SUPPORT
from tests.support.run_folder import build_once, model_key

HOST_SOURCE = SUPPORT / "c_host" / "fmu_run.c"
HEADERS = ROOT / "mbsfmu" / "fmu" / "csrc" / "fmi2"
HOST_TARGETS = {
    "linux64": ("x86_64-linux-gnu.2.17", "fmu_run", ["-ldl"]),
    "win64": ("x86_64-windows-gnu", "fmu_run.exe", []),
}
HOST3_SOURCE = SUPPORT / "c_host" / "fmu3_run.c"
HEADERS3 = ROOT / "mbsfmu" / "fmu" / "csrc" / "fmi3"
# the FMI 3.0 host; on Linux it exports its counting malloc/calloc/realloc to the FMU (-rdynamic)
HOST3_TARGETS = {
    "linux64": ("x86_64-linux-gnu.2.17", "fmu3_run", ["-rdynamic", "-ldl"]),
    "win64": ("x86_64-windows-gnu", "fmu3_run.exe", []),
}
# FMI 3.0's binaries folder of an FMI 2.0 platform name
PLATFORM3 = {"linux64": "x86_64-linux", "win64": "x86_64-windows"}


def model_file(model: str) -> Path:
    """A bundled model by name ("scara", "urdf_arm7.urdf") or a path."""
    p = Path(model)
    if p.is_absolute():
        return p
    return MODELS / (model if p.suffix else f"{model}.yaml")


class NativeFmus:
    """Native FMUs built on demand into one folder of the run (the file is the cache: one build per
    model and options for the whole run, shared by its xdist workers, ``run_folder.build_once``; a
    test that changes an FMU works on a copy, ``copy_fmu``)."""

    def __init__(self, base: Path, own: Path):
        """base: the run's folder (shared by its xdist workers); own: this process's folder."""
        self.base, self.own = base, own

    def wine_prefix(self) -> Path:
        """The WINEPREFIX of this process's wine runs: one per xdist worker (wine sets a prefix up
        on its first run; two workers never do that in one folder at once)."""
        prefix = self.own / "wineprefix"
        prefix.mkdir(exist_ok=True)
        return prefix

    def fmu(self, model: str, platforms=("linux64",), **options) -> Path:
        """The FMU of ``model`` for ``platforms`` with ``build_native_fmu``'s ``options`` (solver
        settings, fmi_version): built into a folder of its own that is then deleted (the FMU holds
        nothing of where it was built), kept in the run's folder."""
        from mbsfmu.fmu.native import build_native_fmu

        tag = "-".join(f"{k}{v}" for k, v in sorted(options.items()))
        path = self.base / f"{model_key(model_file(model))}-{'+'.join(platforms)}{tag}.fmu"
        return build_once(
            path,
            lambda folder: build_native_fmu(
                model_file(model), folder / path.name, platforms=platforms, progress=None, **options
            ),
        )

    def extracted(self, fmu: Path) -> Path:
        return build_once(self.base / "x" / fmu.stem, lambda folder: extract(fmu, folder / fmu.stem))

    def host(self, platform: str = "linux64", fmi_version: int = 2) -> Path:
        """The C host for ``fmi_version`` (fmu_run or fmu3_run) compiled by zig for ``platform``."""
        target, name, libs = (HOST_TARGETS if fmi_version == 2 else HOST3_TARGETS)[platform]
        source, headers = (HOST_SOURCE, HEADERS) if fmi_version == 2 else (HOST3_SOURCE, HEADERS3)

        def compile_host(folder: Path) -> Path:
            exe = folder / name
            cmd = [sys.executable, "-m", "ziglang", "cc", "-target", target, "-O2", f"-I{headers}", str(source)]
            run = subprocess.run([*cmd, "-o", str(exe), *libs], capture_output=True, text=True)
            assert run.returncode == 0, run.stderr
            return exe

        return build_once(self.base / name, compile_host)


def extract(fmu: Path, folder: Path) -> Path:
    """The FMU's files extracted into ``folder``."""
    with zipfile.ZipFile(fmu) as z:
        z.extractall(folder)
    return folder


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
    """The binary of an extracted FMU (FMI 2.0 or 3.0) for an FMI 2.0 platform name."""
    ident = extracted_identifier(extracted)
    suffix = {"linux64": ".so", "win64": ".dll", "darwin64": ".dylib"}[platform]
    if ET.parse(extracted / "modelDescription.xml").getroot().get("fmiVersion") != "2.0":
        platform = PLATFORM3[platform]
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


def state_names(fmu: Path) -> list[str]:
    """The continuous states' variable names in the state vector's order (FMI 2.0: scalars such
    as q1.q; FMI 3.0: arrays such as q, qd, and the scalars W_in, W_diss)."""
    root = description(fmu)
    svs = list(root.find("ModelVariables"))
    if root.get("fmiVersion") == "2.0":
        ders = [svs[int(u.get("index")) - 1] for u in root.find("ModelStructure/Derivatives")]
        return [svs[int(d[0].get("derivative")) - 1].get("name") for d in ders]
    by_vr = {sv.get("valueReference"): sv for sv in svs}
    ders = [by_vr[u.get("valueReference")] for u in root.find("ModelStructure").iter("ContinuousStateDerivative")]
    return [by_vr[d.get("derivative")].get("name") for d in ders]


def fmi3_sizes(fmu: Path) -> dict[str, tuple[int, int]]:
    """{name: (value reference, number of values)} of an FMI 3.0 FMU's variables (an array's
    size from its Dimension start; the FMU's dimensions are all fixed)."""
    out = {}
    for sv in description(fmu).find("ModelVariables"):
        dims = sv.findall("Dimension")
        size = 1
        for d in dims:
            size *= int(d.get("start"))
        out[sv.get("name")] = (int(sv.get("valueReference")), size)
    return out


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
