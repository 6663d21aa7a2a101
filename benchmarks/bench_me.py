"""The native FMU's Model Exchange interface against its peers, in one run.

    python benchmarks/bench_me.py [--repeats 7] [--calls 20000] [--json out.json]

1. One right-hand side per call: ``fmi2SetContinuousStates`` + ``fmi2GetDerivatives`` of the ME FMU
   (linux64, built from the URDF) against MuJoCo's ``mj_forward`` (the same robot through MuJoCo's own
   URDF compiler, contacts and limits off, as bench_robots.py) on UR5 and the Unitree G1 humanoid.
   Both are called from Python (ctypes on prepared arguments for the FMU: two foreign calls per
   evaluation; MuJoCo's binding: one), each at a state changed before every call so that no cache
   answers; medians of --repeats runs of --calls calls [us per call] and their ratio (issue 36 asks
   <= 1.0).
2. The spacecraft (free base, four wheels, two sprung arrays) over 50 s, 10 output points per s: the
   Co-Simulation FMU (RK4, solver.h_max 0.1 ... 0.01 s, 0.1 s communication steps) and the Model
   Exchange FMU under fmpy's CVode (BDF) at relative tolerances 1e-6 ... 1e-12, each run's wall time
   and its error, the largest difference of the states from a reference run (the Co-Simulation FMU
   with DOP853 at rtol 1e-13). ``at equal accuracy``: for each CS run, the cheapest ME run at least
   as accurate, its wall time over the CS run's (issue 36 asks <= 2).
Every time is the process's CPU time (all in this one thread), steadier than wall time on a loaded
machine; the load average is printed.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_robots import ROBOTS, mujoco_model, robots_dir  # noqa: E402


def build(model: Path, folder: Path) -> Path:
    from mbsfmu.fmu.native import build_native_fmu

    out = folder / f"{model.stem}.fmu"
    if not out.exists():
        build_native_fmu(model, out, platforms=("linux64",), progress=None)
    return out


class MeCalls:
    """The ME interface of an FMU in continuous-time mode, with the two per-evaluation calls
    prepared (function pointers, argument objects), so a timed call is the FMU's work plus ctypes."""

    def __init__(self, fmu: Path, folder: Path):
        from fmpy import extract, read_model_description
        from fmpy.fmi2 import FMU2Model

        md = read_model_description(str(fmu))
        self.f = FMU2Model(
            guid=md.guid,
            unzipDirectory=extract(str(fmu), str(folder / fmu.stem)),
            modelIdentifier=md.modelExchange.modelIdentifier,
            instanceName="bench",
        )
        self.f.instantiate()
        self.f.setupExperiment(startTime=0.0)
        self.f.enterInitializationMode()
        self.f.exitInitializationMode()
        self.f.newDiscreteStates()
        self.f.enterContinuousTimeMode()
        self.nx = md.numberOfContinuousStates
        self.x = np.zeros(self.nx)
        self.dx = np.zeros(self.nx)
        self.px = self.x.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        self.pdx = self.dx.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        self.f.getContinuousStates(self.px, self.nx)
        lib = self.f.dll
        self.set_x = lib.fmi2SetContinuousStates
        self.get_dx = lib.fmi2GetDerivatives
        self.c = ctypes.c_void_p(self.f.component)
        self.n = ctypes.c_size_t(self.nx)

    def time(self, calls: int) -> float:
        """Seconds per SetContinuousStates + GetDerivatives, the state moved by 1e-9 each call."""
        set_x, get_dx, c, px, pdx, n, x = self.set_x, self.get_dx, self.c, self.px, self.pdx, self.n, self.x
        j = len(x) - 3  # a rate, not a quaternion entry
        t0 = time.process_time()
        for k in range(calls):
            x[j] += 1e-9 if k & 1 else -1e-9
            set_x(c, px, n)
            get_dx(c, pdx, n)
        return (time.process_time() - t0) / calls


def mujoco_time(m, calls: int) -> float:
    import mujoco

    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    d.qpos[:] = rng.uniform(-0.5, 0.5, m.nq)
    d.qvel[:] = rng.uniform(-0.5, 0.5, m.nv)
    forward, qvel = mujoco.mj_forward, d.qvel
    t0 = time.process_time()
    for k in range(calls):
        qvel[0] += 1e-9 if k & 1 else -1e-9
        forward(m, d)
    return (time.process_time() - t0) / calls


def per_call(args, folder: Path) -> list[dict]:
    rows = []
    robots = robots_dir()
    for name in ("UR5", "G1"):
        urdf = robots / ROBOTS[name]
        me = MeCalls(build(urdf, folder), folder)
        m = mujoco_model(urdf)
        me.time(1000)
        mujoco_time(m, 1000)  # warm both
        fmu_t, mj_t = [], []
        for _ in range(args.repeats):
            fmu_t.append(me.time(args.calls))
            mj_t.append(mujoco_time(m, args.calls))
        a, b = statistics.median(fmu_t) * 1e6, statistics.median(mj_t) * 1e6
        rows.append({"robot": name, "nv": m.nv, "GetDerivatives_us": a, "mj_forward_us": b, "ratio": a / b})
        print(
            f"{name:5s} nv {m.nv:2d}: SetContinuousStates + GetDerivatives {a:6.2f} us, mj_forward {b:6.2f} us, "
            f"ratio {a / b:.2f}"
        )
    return rows


STOP = 50.0  # [s] simulated: long enough that the integrators' work, not fmpy's set-up, is timed


def run(fmu: Path, fmi_type: str, **kw):
    from fmpy import simulate_fmu

    t0 = time.process_time()
    r = simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=STOP, output_interval=0.1, record_events=False, **kw)
    return r, time.process_time() - t0


def accuracy(args, folder: Path) -> dict:
    from fmpy import read_model_description

    fmu = build(ROOT / "scenarios/models/spacecraft.yaml", folder)
    md = read_model_description(str(fmu))
    states = []
    for u in md.derivatives:
        states.append(u.variable.derivative.name)
    ref, _ = run(
        fmu,
        "CoSimulation",
        output=states,
        step_size=0.1,
        start_values={"solver.method": 2, "solver.rtol": 1e-13, "solver.atol": 1e-15, "solver.h_max": 0.0},
    )

    def error(r):
        return max(float(np.abs(r[s] - ref[s]).max()) for s in states)

    cs_rows, me_rows = [], []
    print(f"spacecraft, {STOP:g} s, 10 output points per s, CPU time; state error: max |x - x_ref| over the run")
    for h in (1e-1, 5e-2, 2e-2, 1e-2):
        ts = []
        for _ in range(args.repeats):
            cs, t = run(fmu, "CoSimulation", output=states, step_size=0.1, start_values={"solver.h_max": h})
            ts.append(t)
        cs_rows.append({"h_max": h, "wall_s": statistics.median(ts), "error": error(cs)})
        print(f"  CS RK4 h_max {h:.0e} s: CPU {cs_rows[-1]['wall_s']:.3f} s, state error {cs_rows[-1]['error']:.2e}")
    for rtol in (1e-6, 1e-7, 1e-8, 1e-9, 1e-10, 3e-11, 1e-11, 3e-12, 1e-12):
        ts = []
        for _ in range(args.repeats):
            r, t = run(fmu, "ModelExchange", output=states, solver="CVode", relative_tolerance=rtol)
            ts.append(t)
        me_rows.append({"rtol": rtol, "wall_s": statistics.median(ts), "error": error(r)})
        print(f"  ME CVode rtol {rtol:.0e}: CPU {me_rows[-1]['wall_s']:.3f} s, state error {me_rows[-1]['error']:.2e}")
    pairs = []
    for c in cs_rows:  # the cheapest ME run at least as accurate as each CS run
        ok = [m for m in me_rows if m["error"] <= c["error"]]
        if ok:
            m = min(ok, key=lambda m: m["wall_s"])
            pairs.append({"h_max": c["h_max"], "rtol": m["rtol"], "ratio": m["wall_s"] / c["wall_s"]})
            print(
                f"  at CS h_max {c['h_max']:.0e}'s accuracy: ME (rtol {m['rtol']:.0e}) / CS CPU time = "
                f"{m['wall_s'] / c['wall_s']:.2f}"
            )
        else:
            print(f"  at CS h_max {c['h_max']:.0e}'s accuracy ({c['error']:.1e}): no ME run this accurate")
    return {"cs": cs_rows, "me": me_rows, "equal_accuracy": pairs}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--json")
    args = p.parse_args(argv)
    print(f"load average {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        out = {"load": os.getloadavg()[0], "per_call": per_call(args, folder), "spacecraft": accuracy(args, folder)}
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
