"""One run of a campaign, as a worker executes it: apply the point, run the scenario in a scratch
folder of the worker, and send back what the client keeps (the worker's disk holds nothing after).

The result is {"row": {...}, "series": {...}, "trajectory": {...} | None}:

- row: ``run`` (index), the point's values (one column per path), ``passed``, ``error`` ("" when
  the run completed; the exception's type and first line otherwise: a failed or diverged run is a
  row), ``t_end`` [s], ``n_steps``, ``wall_time_s`` (the only column that differs between two
  executions of the same campaign), ``failed_checks`` (the checks, references and final values
  that failed, "; "-separated); per conservation check ``check.<name>.max_abs``,
  ``.max_rel``, ``.drift_per_s`` (the summary statistics of its error series,
  mbsfmu/checker/) and ``.passed``; the final state ``final.<state column>`` (every q and
  qd); per chosen output ``output.<column>.final``, ``.min``, ``.max``.
- series: ``time`` and the chosen outputs at every trajectory row (for the time envelopes).
- trajectory: every trajectory column, when asked for.

With a ``timeout``, the run executes in a child Python process (``python -m
mbsfmu.campaign.runner``, the spec and the result as JSON through its pipes) that is killed after
``timeout`` seconds of wall time: a run stuck anywhere, in the C core included, becomes a row
whose error starts with "Timeout" and frees its worker's slot; a child whose worker ended ends
too. The child costs a Python start-up (the imports) per run.
"""

from __future__ import annotations

import functools
import json
import math
import os
import subprocess
import sys
import tempfile
import time as wallclock
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class RunSpec:
    """What a worker needs for run ``index``: the scenario file (read on the worker: a shared
    filesystem or the same checkout on every node), the point, the simulated time [s] (None: the
    scenario's), the output columns to keep, and whether to send the whole trajectory."""

    scenario: str
    index: int
    point: dict
    duration: float | None
    outputs: tuple
    trajectory: bool = False
    timeout: float | None = None  # [s] of wall time; None: no limit, the run executes in this process


@functools.lru_cache(maxsize=8)
def _scenario(path: str, mtime_ns: int):
    from ..scenario.spec import load_scenario

    return load_scenario(path)


def load_cached(path: str):
    """The parsed scenario, parsed once per worker process (and again if the file changes)."""
    return _scenario(path, Path(path).stat().st_mtime_ns)


def failed_row(spec: RunSpec, error: str, wall: float = math.nan) -> dict:
    """The row of a run that produced nothing but an error."""
    return {
        "row": {"run": spec.index, **spec.point, "passed": False, "error": error, "wall_time_s": wall},
        "series": {},
        "trajectory": None,
    }


def run_one(spec: RunSpec) -> dict:
    """Run one point (in a child process killed after ``spec.timeout`` s, when given); never raises
    for a problem of the run itself (that is its row's error)."""
    return run_here(spec) if spec.timeout is None else run_in_child(spec)


def run_in_child(spec: RunSpec) -> dict:
    """``run_here`` in a child Python running this mbsfmu, killed after ``spec.timeout`` s."""
    root = str(Path(__file__).resolve().parents[2])  # the folder holding this mbsfmu package
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (root, os.environ.get("PYTHONPATH"))))}
    start = wallclock.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mbsfmu.campaign.runner", str(os.getpid())],
            input=json.dumps({**spec.__dict__, "timeout": None}),
            capture_output=True,
            text=True,
            env=env,
            cwd=root,  # python -m puts the working folder first on sys.path: this mbsfmu's, not another
            timeout=spec.timeout,
        )
    except subprocess.TimeoutExpired:
        wall = wallclock.perf_counter() - start
        return failed_row(spec, f"Timeout: the run took more than {spec.timeout:g} s of wall time; stopped", wall)
    try:
        if done.returncode == 0:
            return json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        pass
    last = (done.stderr.strip().splitlines() or [""])[-1]
    why = f"RunProcessError: the run's process ended with exit code {done.returncode}: {last}"
    return failed_row(spec, why[:500], wallclock.perf_counter() - start)


def run_here(spec: RunSpec) -> dict:
    """Run one point in this process."""
    from ..scenario.run import run_scenario
    from ..trajectory import TrajectoryError, read_trajectory
    from .points import apply_point

    start = wallclock.perf_counter()
    try:
        scn = apply_point(load_cached(spec.scenario), spec.point)
        with tempfile.TemporaryDirectory(prefix="mbsfmu-run-") as scratch:
            report = run_scenario(scn, scratch, duration=spec.duration, progress=False)
            try:
                traj = read_trajectory(Path(scratch) / "trajectory.csv")
            except TrajectoryError:
                traj = None
    # A campaign boundary: whatever one run raises (an invalid drawn model, a solver failure, a
    # bug met only at some parameter values) becomes that run's row, never a lost campaign.
    except Exception as e:  # noqa: BLE001 - the campaign boundary above
        text = str(e).strip().splitlines()
        return failed_row(spec, f"{type(e).__name__}: {' / '.join(text[:3])}"[:500], wallclock.perf_counter() - start)
    return result_of(spec, report, traj, wallclock.perf_counter() - start)


def result_of(spec: RunSpec, report: dict, traj, wall: float) -> dict:
    """The result of run ``spec`` from its report (report.py: "passed", "error", "check_error",
    "solver", "checks", "references", "final") and its trajectory (None: no row written), ``wall`` [s]
    of wall time."""
    error = report.get("error") or report.get("check_error") or ""
    row = {
        "run": spec.index,
        **spec.point,
        "passed": bool(report["passed"]),
        "error": error,
        "wall_time_s": wall,
        "t_end": float(traj.time[-1]) if traj is not None else math.nan,
        "n_steps": report["solver"]["n_steps"],
    }
    for name, e in report.get("checks", {}).items():
        for key in ("max_abs", "max_rel", "drift_per_s"):
            row[f"check.{name}.{key}"] = _num(e.get(key))
        row[f"check.{name}.passed"] = bool(e["passed"])
    failing = [f"check {n}" for n, e in report.get("checks", {}).items() if not e["passed"]]
    failing += [f"reference {n}" for n, e in report.get("references", {}).items() if not e["passed"]]
    failing += [f"final {n}" for n, e in report.get("final", {}).items() if not e["passed"]]
    row["failed_checks"] = "; ".join(failing)
    series, trajectory = {}, None
    if traj is not None:
        for name in traj.names:
            if name.startswith(("q.", "qd.")):
                row[f"final.{name}"] = float(traj[name][-1])
        series["time"] = traj.time.tolist()
        for col in spec.outputs:
            if col in traj:
                x = traj[col]
                row[f"output.{col}.final"], row[f"output.{col}.min"], row[f"output.{col}.max"] = (
                    float(x[-1]),
                    float(x.min()),
                    float(x.max()),
                )
                series[col] = x.tolist()
        if spec.trajectory:
            trajectory = {name: traj[name].tolist() for name in traj.names}
    return {"row": row, "series": series, "trajectory": trajectory}


class Runs:
    """What a campaign's execution calls (execution.run_each): one run as ``run_one``, a batch of
    runs as ``run_batch`` (the batched path)."""

    def __call__(self, spec: RunSpec) -> dict:
        return run_one(spec)

    def batch(self, specs: tuple) -> list[dict]:
        return run_batch(specs)


def batch_reason(scn, spec: RunSpec) -> str:
    """Why run ``spec`` of scenario ``scn`` (its point applied) cannot take the batched path of
    ``run_batch``, or "" if it can (docs/guides/campaigns.md lists the same)."""
    if spec.timeout is not None:
        return "a run time limit (run_timeout) runs each run in a process of its own"
    if scn.cosim is not None:
        return "co-simulation"
    if scn.controller:
        return "a sampled controller (computed in Python at every output step)"
    if scn.inputs:
        return "input schedules"
    return ""


def run_batch(specs: tuple) -> list[dict]:
    """The results of a batch of runs, in the order of ``specs``: the runs that can (``batch_reason``;
    a simulator on the native backend, a tree: no loop columns) in one rollout of the C core per
    output grid (mbsfmu/engine/native/rollout.c, on this thread), each the same result as ``run_one``
    gives, bit for bit but ``wall_time_s`` (its build, its share of the rollout, its checks); every
    other run, and a run whose rows hold a NaN (the files would say "nan"), by ``run_one``."""
    import numpy as np

    from ..engine.native.rollout import run_rollouts
    from ..scenario.grid import check_run_length, sample_times
    from ..scenario.report import verdict
    from ..scenario.run import build_simulator
    from ..sim.rows import Rows
    from ..trajectory import RECORDS_FILE, TRAJECTORY_FILE, join_trajectories, written_trajectory
    from .points import apply_point

    results: list = [None] * len(specs)
    groups: dict = {}  # (times, model sizes) -> [(k, scn, sim, rows, seconds spent)]
    for k, spec in enumerate(specs):
        start = wallclock.perf_counter()
        try:
            scn = apply_point(load_cached(spec.scenario), spec.point)
            if batch_reason(scn, spec):
                results[k] = run_one(spec)
                continue
            T = scn.duration if spec.duration is None else spec.duration
            check_run_length(T, scn.dt, scn.integrator)
            times = tuple(sample_times(T, scn.dt))
            sim = build_simulator(scn)
        # whatever fails here fails run_one the same way, and its row says so: run it that way
        except Exception:  # noqa: BLE001 - the campaign boundary of run_here
            results[k] = run_one(spec)
            continue
        if sim.core is None or sim.loops:
            results[k] = run_one(spec)
            continue
        key = (times, sim.core.nx, sim.core.n_u, sim.core.N)  # a campaign's points change numbers, not names
        groups.setdefault(key, []).append((k, scn, sim, wallclock.perf_counter() - start))
    for (times, *_sizes), runs in groups.items():
        start = wallclock.perf_counter()
        sim0 = runs[0][2]
        rows = Rows(sim0)  # the columns of every run of the group (the same model but for its numbers)
        bodies, wheels = sim0.record_index
        n_steps = len(times) - 1
        got = run_rollouts(
            [r[2].core for r in runs],
            len(runs),
            n_steps,
            t=np.array(times),
            sel=np.arange(len(sim0.output_names()), dtype=np.int32),
            bodies=bodies,
            wheels=wheels,
            threads=1,  # a worker is one process of one thread (execution.py)
            states=False,
        )
        share = (wallclock.perf_counter() - start) / len(runs)
        for j, (k, scn, _sim, spent) in enumerate(runs):
            start = wallclock.perf_counter()
            n = int(got["n_done"][j]) + 1
            status = int(got["status"][j])
            error = None if status == 0 else got["messages"][j]
            split = [rows.split(got["y"][j, i], times[i]) for i in range(n)]
            traj = written_trajectory(TRAJECTORY_FILE, rows.trajectory_columns, [a for a, _b in split])
            full = traj
            if traj is not None and scn.records:
                rec = written_trajectory(RECORDS_FILE, rows.records_columns, [b for _a, b in split])
                full = None if rec is None else join_trajectories(traj, rec)
            if full is None or status not in (0, 1):  # a NaN in a row (the files keep no NaN's bits), a stop
                results[k] = run_one(specs[k])
                continue
            report = {"error": error, "solver": {"n_steps": int(got["stats"][j, 0])}}
            verdict(scn, full, error, report)
            results[k] = result_of(specs[k], report, traj, spent + share + wallclock.perf_counter() - start)
    return results


def _num(x) -> float:
    return math.nan if x is None else float(x)


def failure_reason(row: dict) -> str:
    """Why a run failed: its error, else the checks, references and final values that failed ("" for a
    run that passed)."""
    if row.get("passed"):
        return ""
    return row.get("error") or row.get("failed_checks") or "failed (no reason recorded)"


def main() -> None:
    """The child of ``run_in_child`` (argument: the worker's pid): a RunSpec as JSON on stdin, its
    result as JSON on stdout. It ends itself when the worker ends, so no run outlives its worker."""
    import threading

    parent = int(sys.argv[1])  # the worker's pid (it may have ended before this line)

    def watch() -> None:
        while os.getppid() == parent:
            wallclock.sleep(0.5)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()
    fields = json.loads(sys.stdin.read())
    result = run_here(RunSpec(**{**fields, "outputs": tuple(fields["outputs"])}))
    sys.stdout.write("\n" + json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
