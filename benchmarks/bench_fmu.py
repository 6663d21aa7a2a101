"""Benchmark (not a test): the FMU per communication step, doStep plus reading every output (all
Real and Integer outputs, as Simulink reads every connected output each step), at 1 ms steps
(rk4, h_max = 1 ms: one internal step per communication step), for the SCARA and the spacecraft:

- native FMU through the plain C host (tests/support/c_host/fmu_run.c compiled by zig, timed in C);
- native FMU through fmpy's FMU2Slave (ctypes calls from Python);
- python-runtime FMU through fmpy (and through the C host when its loader runs here);
- in-process: Simulator.step plus every output (Simulator.outputs: state, inputs, qdd, invariants,
  work and every body, wheel and spring record, more than the FMU offers), one C call each on the
  native backend.

Prints medians of --repeat runs, wall and CPU time (the CPU time is the steadier number on a
loaded machine): us per step, real-time factor (dt / time per step) and the native/python ratios;
with --build, the ``mbsfmu build-fmu`` wall time cold (an empty temporary
ZIG_GLOBAL_CACHE_DIR: zig builds its C library caches for the three targets) and warm.

    python benchmarks/bench_fmu.py [--steps 2000] [--py-steps 300] [--repeat 5] [--build]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "scenarios" / "models"
HOST = ROOT / "tests" / "support" / "c_host" / "fmu_run.c"
HEADERS = ROOT / "mbsfmu" / "fmu" / "csrc" / "fmi2"
DT = 1e-3


def outputs(fmu: Path) -> tuple[list[int], list[int], str, str]:
    with zipfile.ZipFile(fmu) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    reals = [
        int(sv.get("valueReference"))
        for sv in root.find("ModelVariables")
        if sv.get("causality") == "output" and sv.find("Real") is not None
    ]
    ints = [
        int(sv.get("valueReference"))
        for sv in root.find("ModelVariables")
        if sv.get("causality") == "output" and sv.find("Integer") is not None
    ]
    return reals, ints, root.get("guid"), root.find("CoSimulation").get("modelIdentifier")


def extract(fmu: Path, dest: Path) -> Path:
    with zipfile.ZipFile(fmu) as z:
        z.extractall(dest)
    for so in dest.rglob("*.so"):
        so.chmod(0o755)
    return dest


def c_host(work: Path) -> Path:
    exe = work / "fmu_run"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "ziglang",
            "cc",
            "-target",
            "x86_64-linux-gnu.2.17",
            "-O2",
            f"-I{HEADERS}",
            str(HOST),
            "-o",
            str(exe),
            "-ldl",
        ],
        check=True,
    )
    return exe


def via_c_host(exe: Path, x: Path, fmu: Path, steps: int) -> tuple[float, float]:
    """(wall, CPU) seconds per step (doStep + every output), timed inside the C host."""
    reals, ints, guid, ident = outputs(fmu)
    lib = x / "binaries" / "linux64" / f"{ident}.so"
    cmd = [
        str(exe),
        str(lib),
        guid,
        (x / "resources").as_uri(),
        str(steps),
        repr(DT),
        "--real",
        ",".join(map(str, reals)),
        "--bench",
    ]
    if ints:
        cmd += ["--int", ",".join(map(str, ints))]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if run.returncode != 0:
        raise RuntimeError(run.stderr.strip()[-500:])
    line = [ln for ln in run.stdout.splitlines() if ln.startswith("bench,")][-1]
    return float(line.split(",")[2]) / steps, float(line.split(",")[3]) / steps


def via_fmpy(x: Path, fmu: Path, steps: int) -> tuple[float, float]:
    from fmpy.fmi2 import FMU2Slave

    reals, ints, guid, ident = outputs(fmu)
    f = FMU2Slave(guid=guid, unzipDirectory=str(x), modelIdentifier=ident, instanceName="bench")
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    t = 0.0
    t0, c0 = time.perf_counter(), time.process_time()
    for k in range(steps):
        f.doStep(t, DT)
        t = (k + 1) * DT
        f.getReal(reals)
        if ints:
            f.getInteger(ints)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    f.terminate()
    f.freeInstance()
    return wall / steps, cpu / steps


def in_process(model: Path, steps: int) -> tuple[float, float]:
    """Simulator.step plus every output (Simulator.outputs)."""
    import mbsfmu
    from mbsfmu.sim.simulator import Simulator

    sim = Simulator(mbsfmu.load_model(model), integrator="rk4", h_max=DT)
    sim.outputs()
    t0, c0 = time.perf_counter(), time.process_time()
    for _ in range(steps):
        sim.step(DT)
        sim.outputs()
    return (time.perf_counter() - t0) / steps, (time.process_time() - c0) / steps


def build_times(model: Path, work: Path) -> tuple[float, float]:
    """``mbsfmu build-fmu`` wall time [s] with an empty zig cache, then warm."""
    env = {**os.environ, "ZIG_GLOBAL_CACHE_DIR": str(work / "zigcache")}
    times = []
    for k in range(2):
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "mbsfmu", "build-fmu", str(model), "-o", str(work / f"b{k}.fmu")],
            check=True,
            env=env,
            capture_output=True,
        )
        times.append(time.perf_counter() - t0)
    return times[0], times[1]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=2000, help="steps per native / in-process run")
    p.add_argument("--py-steps", type=int, default=300, help="steps per python-runtime run")
    p.add_argument("--repeat", type=int, default=5, help="runs of each kind (medians are reported)")
    p.add_argument("--models", nargs="+", default=["scara", "spacecraft"])
    p.add_argument("--build", action="store_true", help="also time build-fmu cold (empty zig cache) and warm")
    args = p.parse_args(argv)
    from mbsfmu.fmu import build_fmu
    from mbsfmu.fmu.native import build_native_fmu

    with tempfile.TemporaryDirectory(prefix="mbsfmu_bench_") as tmp:
        work = Path(tmp)
        exe = c_host(work)
        print(
            f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs; per step: doStep + every output; dt = 1 ms; "
            f"medians of {args.repeat} runs"
        )
        for name in args.models:
            model = MODELS / f"{name}.yaml"
            nat = build_native_fmu(model, work / f"{name}-native.fmu", platforms=("linux64",), progress=None)
            py = build_fmu(model, work / f"{name}-python.fmu")
            xn, xp = extract(nat, work / f"x-{name}-n"), extract(py, work / f"x-{name}-p")
            n_out = sum(map(len, outputs(nat)[:2]))
            res = {}
            kinds = (
                ("native, C host", via_c_host, (exe, xn, nat, args.steps)),
                ("native, fmpy", via_fmpy, (xn, nat, args.steps)),
                ("python runtime, fmpy", via_fmpy, (xp, py, args.py_steps)),
                ("python runtime, C host", via_c_host, (exe, xp, py, args.py_steps)),
                ("in-process Simulator", in_process, (model, args.steps)),
            )
            for label, fn, fargs in kinds:
                try:
                    runs = [fn(*fargs) for _ in range(args.repeat)]
                    res[label] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
                except Exception as e:  # noqa: BLE001 (a benchmark reports what it could not run)
                    res[label] = None
                    print(f"  {label}: not run ({type(e).__name__}: {str(e)[-300:]})")
            print(f"\n{name}: {n_out} outputs read per step")
            for label, r in res.items():
                if r is not None:
                    print(
                        f"  {label:<24} wall {r[0] * 1e6:9.2f} us/step (real-time factor {DT / r[0]:7.1f})   "
                        f"CPU {r[1] * 1e6:9.2f} us/step (real-time factor {DT / r[1]:7.1f})"
                    )
            for a, b in (
                ("native, C host", "in-process Simulator"),
                ("native, fmpy", "python runtime, fmpy"),
                ("native, C host", "python runtime, C host"),
                ("native, C host", "python runtime, fmpy"),
            ):
                if res.get(a) and res.get(b):
                    print(f"  {b} / {a}: wall {res[b][0] / res[a][0]:.1f}x, CPU {res[b][1] / res[a][1]:.1f}x")
        if args.build:
            cold, warm = build_times(MODELS / "scara.yaml", work)
            print(f"\nbuild-fmu scara (linux64 + win64 + darwin64): cold zig cache {cold:.1f} s, warm {warm:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
