"""Cost of a run's stages against model size: chains of N bodies, N = 100, 1,000, 3,000 (10,000 on request).

    python benchmarks/bench_scale.py [--sizes 100 1000 3000] [--format yaml|json] [--cpu-time] [--json out.json]

Each model is a chain of revolute joints with joint springs, written here as a YAML (or JSON) file; the run is
0.01 s at dt = 1 ms (11 rows), RK4 at h = 1 ms, as ``mbsfmu run`` does it, stage by stage through
the public API: load (parse + validate + compile), simulate (10 steps), rows (the trajectory and
body-record rows of the 11 samples), write (both CSV files), stack (the rows written, as the run
checks them: ``written_trajectory`` of both, joined; the numbers the files hold, not read back), check (the
energy check, procedure 1) and plots (joint_states.png, conservation.png). Reported: time [s]
per stage and size (one run each: the stages take seconds, not microseconds), the whole run, and
the fitted exponent of each stage between the smallest and the largest size (1.0 = linear).
``--cpu-time``: the process's CPU time (time.process_time, user + sys) instead of wall time, the
measure that holds on a shared, loaded machine.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

import yaml

import mbsfmu
from mbsfmu.checker import conservation_report
from mbsfmu.engine.native.core import value_formatter
from mbsfmu.scenario.plots import joint_kinds, plot_run
from mbsfmu.sim.rows import Rows
from mbsfmu.sim.simulator import Simulator
from mbsfmu.trajectory import TrajectoryWriter, join_trajectories, written_trajectory

STAGES = ("load", "simulate", "rows", "write", "stack", "check", "plots")


def chain(n: int) -> dict:
    bodies = [
        {
            "name": f"b{k}",
            "parent": "world" if k == 0 else f"b{k - 1}",
            "joint": {
                "name": f"j{k}",
                "type": "revolute",
                "axis": [0, k % 2, 1 - k % 2],
                "origin": {"xyz": [0.1, 0, 0]},
                "spring": {"k": 5.0, "d": 0.0, "q0": 0.0},
            },
            "mass": 1.0,
            "com": [0.05, 0, 0],
            "inertia": {"Ixx": 0.01, "Iyy": 0.01, "Izz": 0.01},
        }
        for k in range(n)
    ]
    return {"version": 1, "name": f"chain{n}", "bodies": bodies, "gravity": [0, 0, -9.81]}


def run(n: int, tmp: Path, fmt: str = "yaml", clock=time.perf_counter) -> dict[str, float]:
    path = tmp / f"chain{n}.{fmt}"
    path.write_text(yaml.safe_dump(chain(n)) if fmt == "yaml" else json.dumps(chain(n)), encoding="utf-8")
    out = {}
    t = clock()
    model = mbsfmu.load_model(path)
    out["load"] = clock() - t
    sim = Simulator(model, integrator="rk4", h_max=1e-3)
    rows, recs, step = [], [], 0.0
    t = clock()
    table = Rows(sim)
    out["rows"] = clock() - t
    for k in range(11):
        t = clock()
        traj_row, rec_row = table.values()
        rows.append(traj_row)
        recs.append(rec_row)
        out["rows"] = out.get("rows", 0.0) + clock() - t
        if k < 10:
            t = clock()
            sim.advance_to((k + 1) * 1e-3)
            step += clock() - t
    out["simulate"] = step
    t = clock()
    fmt = value_formatter()
    for name, data, cols in (
        ("trajectory.csv", rows, table.trajectory_columns),
        ("records.csv", recs, table.records_columns),
    ):
        with TrajectoryWriter(tmp / name, cols, format_values=fmt) as w:
            for r in data:
                w.write(r)
    out["write"] = clock() - t
    t = clock()
    traj = join_trajectories(
        written_trajectory(tmp / "trajectory.csv", table.trajectory_columns, rows),
        written_trajectory(tmp / "records.csv", table.records_columns, recs),
    )
    out["stack"] = clock() - t
    t = clock()
    report = conservation_report(traj, {"energy_constant": "rel:1e-6"}, 1)
    out["check"] = clock() - t
    assert report["passed"], report
    t = clock()
    plot_run(traj, tmp, f"chain{n}", joint_kinds(model))
    out["plots"] = clock() - t
    out["total"] = sum(out[s] for s in STAGES)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 3000])
    ap.add_argument("--format", choices=("yaml", "json"), default="yaml", help="the model file's format")
    ap.add_argument("--cpu-time", action="store_true", help="process CPU time instead of wall time")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    clock = time.process_time if args.cpu_time else time.perf_counter
    print(f"load average {os.getloadavg()[0]:.1f}; {'CPU' if args.cpu_time else 'wall'} time")
    results = {}
    with tempfile.TemporaryDirectory() as d:
        for n in args.sizes:
            sub = Path(d) / str(n)
            sub.mkdir()
            results[n] = run(n, sub, args.format, clock)
            line = ", ".join(f"{s} {results[n][s]:.3f}" for s in (*STAGES, "total"))
            print(f"N = {n:>6}: {line} s", flush=True)
    lo, hi = min(args.sizes), max(args.sizes)
    if hi > lo:
        slopes = {
            s: math.log(max(results[hi][s], 1e-9) / max(results[lo][s], 1e-9)) / math.log(hi / lo)
            for s in (*STAGES, "total")
        }
        print(f"exponents N = {lo} -> {hi}: " + ", ".join(f"{s} {v:.2f}" for s, v in slopes.items()))
        results["exponents"] = slopes
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
