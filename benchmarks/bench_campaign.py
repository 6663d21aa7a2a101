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

Scale (issue 23 item 3), ``--part``:

- ``capacity``: scheduling capacity, runs/s of no-op runs through ``Dask.imap_unordered`` on a
  LocalCluster, batched (the automatic batch size) and one run per task (goal >= 1,000 runs/s);
- ``cpu``: 2 workers against 1 on runs of ~1 s of CPU each (a busy loop on ``time.process_time``),
  one run per task, with the machine's free cores (CPUs minus the 1-minute load average) beside it
  (goal >= 1.8x where 2 cores are free);
- ``memory``: the client's traced peak (tracemalloc, every thread of the client process) over the
  arrival of results, and over the whole campaign from the first result to its return (the end
  included: the table built from the streamed Parquet parts, the statistics), for a 10k- and a
  100k-run campaign of tests/data/campaign_spring.yaml (0.02 s each) on an external scheduler with
  2 workers in their own processes, after a 1k-run campaign that warms the client (its imports and
  caches are traced too, and would count against whichever campaign ran first), with distributed's
  debugging log of the last 1000 messages off
  (goal: 100k within 1.2x of 10k); beside it Arrow's own allocations, which tracemalloc does not
  see (the peak of pyarrow's memory pool over the process so far); also the runs/s, the end's
  time, the journal's bytes per run and the table's;
- ``campaign`` (the default above), or ``all``.

Each figure is the median of ``--repeat`` measurements; the load average is printed beside them.

    python benchmarks/bench_campaign.py [--part capacity|cpu|memory|campaign|all] [--runs 200] [--workers 2]
        [--repeat 1]
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
    """Seconds per no-op task through the campaign's submission window (cluster already up), one run per task."""
    from mbsfmu.campaign import Dask

    with Dask(workers=workers, batch=1) as ex:
        list(ex.imap_unordered(noop, iter(range(4 * workers))))  # warm the workers
        t0 = time.perf_counter()
        n = sum(1 for _ in ex.imap_unordered(noop, iter(range(runs))))
        return (time.perf_counter() - t0) / n


def capacity(workers: int, runs: int, batch: int | None) -> float:
    """No-op runs per second through the campaign's window of batches (cluster up and warm)."""
    from mbsfmu.campaign import Dask

    with Dask(workers=workers, batch=batch) as ex:
        list(ex.imap_unordered(noop, iter(range(4 * workers)), 4 * workers))  # warm the workers
        t0 = time.perf_counter()
        n = sum(1 for _ in ex.imap_unordered(noop, iter(range(runs)), runs))
        return n / (time.perf_counter() - t0)


def busy(seconds: float) -> float:
    """A run of ``seconds`` of CPU time (a busy loop on the process's CPU clock)."""
    t0 = time.process_time()
    x = 0
    while time.process_time() - t0 < seconds:
        x += sum(range(1000))
    return x


def cpu_runs(workers: int, runs: int, seconds: float) -> float:
    """Wall time [s] of ``runs`` runs of ``seconds`` CPU each on ``workers`` workers, one per task."""
    from mbsfmu.campaign import Dask

    with Dask(workers=workers, batch=1) as ex:
        list(ex.imap_unordered(busy, iter([0.01] * workers), workers))
        t0 = time.perf_counter()
        list(ex.imap_unordered(busy, iter([seconds] * runs), runs))
        return time.perf_counter() - t0


def memory(runs: int, address: str) -> dict:
    """The client's traced peak [B] over the arrival of results, and its memory at the first result,
    for a ``runs``-run campaign on the scheduler at ``address``; runs/s; journal and table bytes per run."""
    import tracemalloc

    import dask
    import pyarrow as pa

    from mbsfmu.campaign import Dask, montecarlo_design, run_campaign

    seen = {}

    class Traced(Dask):
        def imap_unordered(self, fn, specs, n=None):
            first = True
            for item in super().imap_unordered(fn, specs, n):
                if first:
                    tracemalloc.reset_peak()
                    seen["base"], seen["t0"], first = tracemalloc.get_traced_memory()[0], time.perf_counter(), False
                yield item
            seen["loop"], seen["t1"] = tracemalloc.get_traced_memory()[1], time.perf_counter()

    design, outputs = montecarlo_design(SCENARIO, runs, seed=1)
    with tempfile.TemporaryDirectory() as out, dask.config.set({"distributed.admin.low-level-log-length": 0}):
        tracemalloc.start()
        try:
            run_campaign(
                SCENARIO,
                design,
                out,
                execution=Traced(address),
                outputs=outputs,
                duration=0.02,
                progress=False,
                picture=False,
            )
            seen["peak"], seen["t2"] = tracemalloc.get_traced_memory()[1], time.perf_counter()
        finally:
            tracemalloc.stop()
        journal = (Path(out) / "runs.jsonl").stat().st_size / runs
        table = (Path(out) / "campaign.parquet").stat().st_size / runs
    return {
        **seen,
        "rate": runs / (seen["t1"] - seen["t0"]),
        "end": seen["t2"] - seen["t1"],
        "arrow": pa.default_memory_pool().max_memory(),
        "journal": journal,
        "table": table,
    }


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load average {one:.2f} (1 min), {five:.2f} (5 min) on {os.cpu_count()} CPUs"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("campaign", "capacity", "cpu", "memory", "all"), default="campaign")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    parts = ("capacity", "cpu", "memory", "campaign") if a.part == "all" else (a.part,)
    if "capacity" in parts:
        n = 20_000
        batched = statistics.median(capacity(a.workers, n, None) for _ in range(a.repeat))
        single = statistics.median(capacity(a.workers, 2_000, 1) for _ in range(a.repeat))
        print(f"capacity, {a.workers} workers, no-op runs, median of {a.repeat}; {load()}")
        print(f"  batched (automatic size):  {batched:9.0f} runs/s over {n} runs")
        print(f"  one run per task:          {single:9.0f} runs/s over 2000 runs")
    if "cpu" in parts:
        free = (os.cpu_count() or 1) - os.getloadavg()[0]
        one = statistics.median(cpu_runs(1, 4, 1.0) for _ in range(a.repeat))
        two = statistics.median(cpu_runs(2, 4, 1.0) for _ in range(a.repeat))
        print(f"cpu, 4 runs of 1.0 s CPU, median of {a.repeat}; free cores before: {free:.2f}; {load()}")
        print(f"  1 worker {one:6.2f} s, 2 workers {two:6.2f} s: {one / two:.2f}x (ideal min(2, free cores))")
    if "memory" in parts:
        sys.path.insert(0, str(ROOT))
        from tests.support.dask_cluster import Cluster

        with tempfile.TemporaryDirectory() as tmp:
            cluster = Cluster(Path(tmp))
            try:
                for _ in range(a.workers):
                    cluster.add_worker()
                cluster.wait_workers(a.workers)
                memory(1_000, cluster.address)  # warm-up, not counted: the first campaign imports and caches
                got = {n: [memory(n, cluster.address) for _ in range(a.repeat)] for n in (10_000, 100_000)}
            finally:
                cluster.close()
        med = {n: {k: statistics.median(m[k] for m in ms) for k in ms[0]} for n, ms in got.items()}
        print(f"client memory, external scheduler + {a.workers} workers, median of {a.repeat}; {load()}")
        for n, m in med.items():
            print(
                f"  {n:>7} runs: peak {m['peak'] / 1e6:7.2f} MB over the campaign, {m['loop'] / 1e6:.2f} MB while "
                f"runs arrive (at the first result {m['base'] / 1e6:.2f} MB), Arrow pool peak so far "
                f"{m['arrow'] / 1e6:.2f} MB; {m['rate']:.0f} runs/s, end {m['end']:.2f} s; "
                f"journal {m['journal']:.0f} B/run, Parquet table {m['table']:.0f} B/run"
            )
        for key, what in (("peak", "over the campaign"), ("loop", "while runs arrive")):
            print(f"  100k / 10k peak {what}: {med[100_000][key] / med[10_000][key]:.3f}x (goal <= 1.2x)")
    if "campaign" not in parts:
        return
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
