"""Benchmark (not a test): the SCARA FMU driven through fmpy versus the same run in-process.

A 10 s run at 1 ms communication steps (rk4, h_max = 1 ms: one internal step per communication
step) with a PD controller closed in Python around the plant: read q, qd, set the two torques,
step. The same loop runs once through the FMU (fmpy's FMU2Slave, the FMU's loader and pythonfmu's
binary, in this process) and once on the engine's Simulator directly, with the backend the FMU
runs (``mbsfmu.fmu.slave.BACKEND``: the numpy reference). Prints the medians of
several runs, the FMU's overhead ratio, the per-step overhead and both real-time factors.

    python benchmarks/bench_fmu.py [--duration 10] [--dt 0.001] [--repeat 3] [--fmu scara.fmu]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "scenarios" / "models" / "scara.yaml"
KP, KD, Q_REF = (60.0, 30.0), (12.0, 6.0), (0.8, -0.6)


def run_fmu(fmu: Path, unzipdir: str, duration: float, dt: float) -> tuple[float, list[float]]:
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    f = FMU2Slave(guid=md.guid, unzipDirectory=unzipdir, modelIdentifier=md.coSimulation.modelIdentifier,
                  instanceName="bench")
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.setReal([vr["solver.h_max"]], [dt])
    f.enterInitializationMode()
    f.exitInitializationMode()
    state = [vr["q1.q"], vr["q2.q"], vr["q1.qd"], vr["q2.qd"]]
    tau = [vr["q1.tau"], vr["q2.tau"]]
    n = round(duration / dt)
    t0 = time.perf_counter()
    t = 0.0
    for _ in range(n):
        q1, q2, w1, w2 = f.getReal(state)
        f.setReal(tau, [KP[0] * (Q_REF[0] - q1) - KD[0] * w1, KP[1] * (Q_REF[1] - q2) - KD[1] * w2])
        f.doStep(t, dt)
        t += dt
    wall = time.perf_counter() - t0
    final = f.getReal(state)
    f.terminate()
    f.freeInstance()
    return wall, final


def run_engine(duration: float, dt: float, backend: str) -> tuple[float, list[float]]:
    import mbsfmu
    from mbsfmu.simulator import Simulator
    sim = Simulator(mbsfmu.load_model(MODEL), integrator="rk4", h_max=dt, backend=backend)
    n = round(duration / dt)
    t0 = time.perf_counter()
    for _ in range(n):
        x = sim.x
        q1, q2, w1, w2 = x[0], x[1], x[2], x[3]
        sim.set_input("q1.tau", KP[0] * (Q_REF[0] - q1) - KD[0] * w1)
        sim.set_input("q2.tau", KP[1] * (Q_REF[1] - q2) - KD[1] * w2)
        sim.step(dt)
    wall = time.perf_counter() - t0
    return wall, [*sim.q, *sim.qd]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--duration", type=float, default=10.0, help="simulated time per run [s]")
    p.add_argument("--dt", type=float, default=1e-3, help="communication step = rk4 step [s]")
    p.add_argument("--repeat", type=int, default=3, help="runs of each kind (medians are reported)")
    p.add_argument("--fmu", type=Path, help="an existing SCARA FMU (default: build one)")
    args = p.parse_args(argv)
    from fmpy import extract

    from mbsfmu.fmu.slave import BACKEND
    with tempfile.TemporaryDirectory(prefix="mbsfmu_bench_") as tmp:
        fmu = args.fmu
        if fmu is None:
            from mbsfmu.fmu import build_fmu
            t0 = time.perf_counter()
            fmu = build_fmu(MODEL, Path(tmp) / "scara.fmu", h_max=args.dt)
            print(f"built {fmu.name} in {time.perf_counter() - t0:.2f} s")
        unzipdir = extract(str(fmu), unzipdir=str(Path(tmp) / "x"))
        fmu_times, eng_times = [], []
        for k in range(args.repeat):
            w_fmu, x_fmu = run_fmu(fmu, unzipdir, args.duration, args.dt)
            w_eng, x_eng = run_engine(args.duration, args.dt, BACKEND)     # the engine the FMU runs
            fmu_times.append(w_fmu)
            eng_times.append(w_eng)
            same = "identical" if list(x_fmu) == list(map(float, x_eng)) else \
                f"max diff {max(abs(a - b) for a, b in zip(x_fmu, x_eng)):.3g}"
            print(f"run {k + 1}: fmpy + FMU {w_fmu:.3f} s, in-process {w_eng:.3f} s (final state {same})")
    n = round(args.duration / args.dt)
    m_fmu, m_eng = statistics.median(fmu_times), statistics.median(eng_times)
    print(f"\nSCARA, {args.duration:g} s at {args.dt * 1e3:g} ms communication steps ({n} steps, rk4), "
          f"medians of {args.repeat} runs, Python {sys.version.split()[0]}:")
    print(f"  fmpy + FMU   {m_fmu:8.3f} s   real-time factor {args.duration / m_fmu:6.3f}   "
          f"{m_fmu / n * 1e6:7.1f} us/step")
    print(f"  in-process   {m_eng:8.3f} s   real-time factor {args.duration / m_eng:6.3f}   "
          f"{m_eng / n * 1e6:7.1f} us/step")
    print(f"  overhead ratio (FMU / in-process) {m_fmu / m_eng:.3f}, "
          f"FMU overhead {(m_fmu - m_eng) / n * 1e6:.1f} us per communication step")
    return 0


if __name__ == "__main__":
    sys.exit(main())
