"""Benchmark (not a test): a Monte Carlo campaign of short runs on a 2-worker LocalCluster versus
the same campaign serially in this process (issue 16).

The campaign is tests/data/campaign_spring.yaml (the Analytical Tests for MBSlib spring pendulum, 0.1 s, dop853,
three dispersions, energy-balance check): 200 runs by default. Measured, each as the median of
``--repeat`` campaigns:

- serial: the campaign on ``Serial()`` (one process, no scheduler);
- dask: the campaign on ``Dask(workers=2)``, cluster start and shutdown included, and the
  cluster's start + shutdown alone (no runs), so the campaign's own time is their difference;
- scheduler overhead per run: ``--runs`` no-op tasks through the same submission window
  (client.submit(pure=False), as_completed), i.e. what each run pays for being a Dask task.

Prints the speed-up (serial / dask, with and without the cluster start) and the per-run overhead.

    python benchmarks/bench_campaign.py [--runs 200] [--workers 2] [--repeat 1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SCENARIO = ROOT / "tests" / "data" / "campaign_spring.yaml"


def noop(spec):
    return spec


def campaign(execution, runs: int) -> tuple[float, float]:
    """(campaign wall time [s], median of the runs' own wall times [s])."""
    from mbsfmu.campaign import montecarlo_design, run_campaign

    design, outputs = montecarlo_design(SCENARIO, runs, seed=1)
    with tempfile.TemporaryDirectory() as out:
        t0 = time.perf_counter()
        result = run_campaign(SCENARIO, design, out, execution=execution, outputs=outputs, progress=False)
        wall = time.perf_counter() - t0
    assert len(result.rows) == runs and not result.failed, [r["error"] for r in result.failed][:3]
    return wall, statistics.median(r["wall_time_s"] for r in result.rows)


def cluster_start_stop(workers: int) -> float:
    from mbsfmu.campaign import Dask

    t0 = time.perf_counter()
    with Dask(workers=workers):
        pass
    return time.perf_counter() - t0


def noop_overhead(workers: int, runs: int) -> float:
    """Seconds per no-op task through the campaign's submission window (cluster already up)."""
    from mbsfmu.campaign import Dask

    with Dask(workers=workers) as ex:
        list(ex.imap_unordered(noop, iter(range(4 * workers))))  # warm the workers
        t0 = time.perf_counter()
        n = sum(1 for _ in ex.imap_unordered(noop, iter(range(runs))))
        return (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    from mbsfmu.campaign import Dask, Serial

    campaign(Serial(), 4)  # warm caches (numba, imports)
    s_runs = [campaign(Serial(), a.runs) for _ in range(a.repeat)]
    d_runs = [campaign(Dask(workers=a.workers), a.runs) for _ in range(a.repeat)]
    serial, dask = statistics.median(w for w, _ in s_runs), statistics.median(w for w, _ in d_runs)
    start = statistics.median(cluster_start_stop(a.workers) for _ in range(a.repeat))
    over = statistics.median(noop_overhead(a.workers, a.runs) for _ in range(a.repeat))
    per_run = serial / a.runs
    print(f"{a.runs} runs of {SCENARIO.name} (0.1 s simulated each), median of {a.repeat}")
    print(
        f"serial (this process):        {serial:8.2f} s   {per_run * 1e3:7.1f} ms per run, "
        f"a run's own median {statistics.median(m for _, m in s_runs) * 1e3:.1f} ms"
    )
    print(
        f"dask, {a.workers} workers (LocalCluster): {dask:8.2f} s   incl. cluster start + shutdown {start:.2f} s, "
        f"a run's own median on a worker {statistics.median(m for _, m in d_runs) * 1e3:.1f} ms"
    )
    print(f"machine load average during the benchmark: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(
        f"speed-up serial / dask:       {serial / dask:8.2f} x   without the cluster start: "
        f"{serial / max(dask - start, 1e-9):.2f} x   (ideal {a.workers} x)"
    )
    print(f"scheduler overhead per task:  {over * 1e3:8.2f} ms  ({100 * over / per_run:.1f} % of a run)")


if __name__ == "__main__":
    main()
