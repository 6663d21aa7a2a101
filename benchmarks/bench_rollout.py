"""Batched rollouts: ``mbsfmu.rollout`` against ``mujoco.rollout`` on the same URDF files, in one run.

    python benchmarks/bench_rollout.py [--runs 64] [--steps 1000] [--threads 2] [--repeats 5] [--json out.json]

Robots: UR5 (6 DoF) and the Unitree G1 humanoid (29 DoF) of ``example-robot-data``, loaded as
bench_robots.py loads them (mbsfmu's URDF reader; MuJoCo's URDF compiler with visuals, collisions,
contacts, limits, damping, friction loss and armature off), RK4 at h = 1 ms, fixed base, zero
torques. Both sides: --runs rollouts of --steps steps from random initial states, on --threads
threads, every step's state kept (ours: x = [q, qd, W_in, W_diss]; MuJoCo: its full physics state),
thread pools made once (MuJoCo: ``rollout.Rollout(nthread=...)``; ours: threads started per call,
counted in its time). Reported per step of one rollout [us]: wall time of a batch / (runs x steps),
medians of --repeats batches, the two timed alternately in the same minutes; the ratio ours /
MuJoCo (issue 39 asks <= 0.5) and the load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_robots import ROBOTS, mujoco_model, robots_dir  # noqa: E402

import mbsfmu  # noqa: E402
from mbsfmu.sim.simulator import Simulator  # noqa: E402


def bench(name: str, urdf: Path, runs: int, steps: int, threads: int, repeats: int) -> dict:
    import mujoco
    from mujoco import rollout as mj_rollout

    model = mbsfmu.load_model(urdf)
    rng = np.random.default_rng(5)
    states = [model.random_state(rng) for _ in range(runs)]
    q0 = np.array([q for q, _ in states])
    qd0 = np.array([qd for _, qd in states])
    sim = Simulator(model, integrator="rk4", h_max=1e-3)

    m = mujoco_model(urdf)
    datas = [mujoco.MjData(m) for _ in range(threads)]
    spec = mujoco.mjtState.mjSTATE_FULLPHYSICS
    init = np.zeros((runs, mujoco.mj_stateSize(m, spec)))
    d = mujoco.MjData(m)
    for r in range(runs):  # MuJoCo's own random state of the same kind: joint angles and rates U(-1, 1)
        d.qpos[:] = rng.uniform(-1.0, 1.0, m.nq)
        d.qvel[:] = rng.uniform(-1.0, 1.0, m.nv)
        mujoco.mj_getState(m, d, init[r], spec)
    control = np.zeros((runs, steps, m.nu))
    out_state = np.empty((runs, steps, init.shape[1]))

    def ours() -> float:
        t = time.perf_counter()
        r = mbsfmu.rollout(sim, n_steps=steps, dt=1e-3, q0=q0, qd0=qd0, threads=threads)
        wall = time.perf_counter() - t
        assert all(s == "ok" for s in r.status), r.messages
        return wall

    pool = mj_rollout.Rollout(nthread=threads)

    def theirs() -> float:
        t = time.perf_counter()
        pool.rollout(m, datas, init, control, nstep=steps, state=out_state)
        return time.perf_counter() - t

    ours(), theirs()  # warm-up: the library loaded, the pools started
    a, b = [], []
    for _ in range(repeats):
        a.append(ours())
        b.append(theirs())
    pool.close()
    n = runs * steps
    row = {
        "robot": name,
        "nv_ours": model.nv,
        "nv_mujoco": int(m.nv),
        "runs": runs,
        "steps": steps,
        "threads": threads,
        "ours_us": statistics.median(a) / n * 1e6,
        "mujoco_us": statistics.median(b) / n * 1e6,
    }
    row["ratio"] = row["ours_us"] / row["mujoco_us"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=64)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    import mujoco

    load0 = os.getloadavg()[0]
    print(
        f"MuJoCo {mujoco.__version__}; {args.runs} rollouts x {args.steps} steps of 1 ms RK4 on {args.threads} "
        f"thread(s), medians of {args.repeats}; wall time per step of one rollout; load average {load0:.1f}"
    )
    print(f"{'robot':6s} {'nv':>4s} {'mbsfmu [us]':>12s} {'MuJoCo [us]':>12s} {'ratio':>6s}")
    rows = []
    for name in ("UR5", "G1"):
        r = bench(name, robots_dir() / ROBOTS[name], args.runs, args.steps, args.threads, args.repeats)
        rows.append(r)
        print(
            f"{name:6s} {r['nv_ours']:4d} {r['ours_us']:12.3f} {r['mujoco_us']:12.3f} {r['ratio']:6.2f}"
            + ("" if r["nv_ours"] == r["nv_mujoco"] else f"  (MuJoCo nv {r['nv_mujoco']})"),
            flush=True,
        )
    load1 = os.getloadavg()[0]
    print(f"load average before {load0:.1f}, after {load1:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "load": [load0, load1]}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
