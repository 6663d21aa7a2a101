"""Parameter sweeps: one scenario run per point of a grid, in parallel processes, one summary.

``--param PATH=start:stop:n`` (n points, linspace) or ``PATH=v1,v2,...``; several parameters span
their Cartesian product. PATH is a model parameter (see mbsfmu/model/edits.py) or
``initial.q.<joint>`` / ``initial.qd.<joint>`` (1-DoF joints). Runs go to DIR/run_0000, ... and
the table to DIR/summary.csv. The executor is any ``concurrent.futures.Executor``: a process pool
by default; a Dask cluster's ``distributed.Client(...).get_executor()`` fits the same slot.
"""
from __future__ import annotations

import csv
import itertools
import os
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

import numpy as np

from .errors import InputError, MbsError


def parse_param(text: str) -> tuple[str, list[float]]:
    """'PATH=a:b:n' or 'PATH=v1,v2' -> (PATH, values)."""
    path, sep, spec = text.partition("=")
    if not sep or not path:
        raise InputError(f"--param {text!r}: expected PATH=start:stop:n or PATH=v1,v2,...")
    try:
        if ":" in spec:
            a, b, n = spec.split(":")
            if int(n) < 1:
                raise ValueError("n must be >= 1")
            values = np.linspace(float(a), float(b), int(n)).tolist()
        else:
            values = [float(v) for v in spec.split(",")]
    except ValueError as e:
        raise InputError(f"--param {text!r}: {e}; expected PATH=start:stop:n or PATH=v1,v2,...") from None
    if not all(np.isfinite(values)):
        raise InputError(f"--param {text!r}: values must be finite")
    return path, values


def grid(params: list[tuple[str, list[float]]]) -> list[dict[str, float]]:
    """The Cartesian product of the parameter values, as {path: value} points."""
    names = [p for p, _ in params]
    return [dict(zip(names, combo)) for combo in itertools.product(*(v for _, v in params))]


def _point_scenario(scn, point: dict[str, float]):
    edits, init_q, init_qd = [], dict(scn.initial_q), dict(scn.initial_qd)
    for path, value in point.items():
        if path.startswith("initial.q."):
            init_q[path[len("initial.q."):]] = [value]
        elif path.startswith("initial.qd."):
            init_qd[path[len("initial.qd."):]] = [value]
        else:
            edits.append((path, value))
    return replace(scn, edits=tuple(edits), initial_q=init_q, initial_qd=init_qd, plots=False)


def _run_point(args) -> dict:
    """One grid point (runs in a worker process): its report's headline numbers."""
    scenario_path, k, point, out, duration = args
    from .scenario import load_scenario, run_scenario
    row = {"run": f"run_{k:04d}", **point}
    try:
        report = run_scenario(_point_scenario(load_scenario(scenario_path), point), Path(out) / row["run"],
                              duration=duration, progress=False)
    except MbsError as e:
        return {**row, "passed": False, "error": str(e).splitlines()[0]}
    row.update(passed=report["passed"], error=report.get("error") or "", wall_time_s=round(report["wall_time_s"], 3))
    for name, e in report.get("checks", {}).items():
        row[f"{name}.max_rel"] = e.get("max_rel")
    for name, e in report.get("final", {}).items():
        row[f"final.{name}"] = e.get("value")
    return row


def run_sweep(scenario_path: str | Path, params: list[tuple[str, list[float]]], out: str | Path,
              duration: float | None = None, executor: Executor | None = None) -> list[dict]:
    """Run every grid point (in parallel) and write DIR/summary.csv; returns its rows."""
    from .scenario import build_simulator, load_scenario
    scn = load_scenario(scenario_path)
    points = grid(params)
    build_simulator(_point_scenario(scn, points[0]))        # bad paths fail here, before any process starts
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(str(scenario_path), k, p, str(out), duration) for k, p in enumerate(points)]
    own = executor is None
    executor = executor or ProcessPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1))
    try:
        rows = list(executor.map(_run_point, jobs))
    finally:
        if own:
            executor.shutdown()
    columns = list(dict.fromkeys(c for r in rows for c in r))
    with open(out / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
    return rows


def summary_text(rows: list[dict], params: list[str]) -> str:
    """A fixed-width table of the sweep: run, parameter values, pass/fail, wall time, error."""
    head = f"{'run':<9} " + " ".join(f"{p[-22:]:>22}" for p in params) + f" {'result':>6} {'wall [s]':>9}  error"
    lines = [head]
    for r in rows:
        lines.append(f"{r['run']:<9} " + " ".join(f"{r[p]:>22.6g}" for p in params)
                     + f" {'PASS' if r['passed'] else 'FAIL':>6} {r.get('wall_time_s', float('nan')):>9.3g}  {r.get('error', '')}")
    n_fail = sum(not r["passed"] for r in rows)
    lines.append(f"{len(rows)} runs, {n_fail} failed")
    return "\n".join(lines)
