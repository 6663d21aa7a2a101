"""Speed of the dynamics Jacobians of models with force elements (point spring-dampers, thrusters,
body wrenches): the analytic route (derivatives.c plus force_derivatives.c) against the central
differences these models took before it, in one run.

    python benchmarks/bench_force_derivatives.py [--repeats 7] [--json out.json]

Models: the bundled spacecraft (reaction wheels, a thruster; nv 12), the quadruped with its push (a
world-axes body wrench; nv 19), and a random 12-body free-floating tree with 6 point springs, a
thruster and two body wrenches (nv 14; seed 5). Reported per linearization [us]: the medians of
--repeats batches of process CPU time (time.process_time, so that time slices taken by other
processes on a loaded machine are not counted), the routes alternated batch by batch; also
``Core.force_derivatives`` and ``Core.aba_derivatives`` alone.
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

import mbsfmu  # noqa: E402
from mbsfmu.linear.jacobians import Accelerations, dynamics_jacobians  # noqa: E402
from tests.support.trees import random_tree, with_force_elements  # noqa: E402


def per_call(fn, calls: int) -> float:
    """CPU seconds per call of fn over calls calls."""
    t0 = time.process_time()
    for _ in range(calls):
        fn()
    return (time.process_time() - t0) / calls


def bench(model, rng, repeats: int) -> dict:
    f = Accelerations(model, "native")
    q, qd = model.random_state(rng)
    u = rng.normal(size=f.nu)
    tau = f.sim.forces.joint_forces(u)
    runs = {
        "analytic": (lambda: dynamics_jacobians(f, q, qd, u, method="analytic"), 200),
        "central": (lambda: dynamics_jacobians(f, q, qd, u, method="central"), 10),
        "force_derivatives": (lambda: f.core.force_derivatives(q, qd, u), 500),
        "aba_derivatives": (lambda: f.core.aba_derivatives(q, qd, tau), 500),
    }
    times = {k: [] for k in runs}
    for _ in range(repeats):
        for k, (fn, calls) in runs.items():
            times[k].append(per_call(fn, calls))
    row = {k: 1e6 * statistics.median(v) for k, v in times.items()}
    row.update(model=model.source.split("/")[-1], nv=model.nv, nu=f.nu, ratio=row["central"] / row["analytic"])
    return row


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    rng = np.random.default_rng(5)
    models = [
        mbsfmu.load_model(ROOT / "scenarios/models/spacecraft.yaml"),
        mbsfmu.load_model(ROOT / "scenarios/models/urdf_quadruped_overlay.yaml"),
        with_force_elements(random_tree(rng, 12, springs=True), rng, springs=6),
    ]
    rows = [bench(m, rng, a.repeats) for m in models]
    print(f"load average {os.getloadavg()[0]:.2f} (1 min); process CPU time, medians of {a.repeats}")
    for r in rows:
        print(
            f"{r['model']:32s} nv {r['nv']:3d} nu {r['nu']:3d}  analytic {r['analytic']:8.1f} us  "
            f"central {r['central']:9.1f} us  ratio {r['ratio']:5.1f}x  force_derivatives "
            f"{r['force_derivatives']:6.1f} us  aba_derivatives {r['aba_derivatives']:6.1f} us"
        )
    if a.json:
        a.json.write_text(json.dumps({"load": os.getloadavg(), "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
