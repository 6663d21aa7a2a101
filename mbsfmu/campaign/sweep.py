"""Parameter sweeps: one scenario run per point of a grid, on the campaign engine
(mbsfmu/campaign), one summary.

``--param PATH=start:stop:n`` (n points, linspace) or ``PATH=v1,v2,...``; several parameters span
their Cartesian product, enumerated lazily (a 20000 x 20000 grid holds two lists of 20000 values,
never its 4e8 points). PATH is any campaign parameter path (mbsfmu/campaign/points.py: model
parameters, ``initial.q.<joint>``, ``initial.qd.<joint>``, ``inputs.<input>.<param>``). Runs
execute on dask.distributed (a LocalCluster by default); the client writes DIR/summary.csv and
DIR/summary.parquet (one row per finished run), DIR/run_NNNN/trajectory.csv, statistics.csv and
campaign.png. Ctrl-C or SIGTERM stop the workers and write the finished rows; ``--resume``
completes the sweep.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..errors import InputError
from .runner import failure_reason

MAX_POINTS_PER_PARAM = 10_000_000  # 80 MB of values for one parameter: beyond, a typo more likely than a plan


FORMS = "expected PATH=start:stop:n (n points from start to stop) or PATH=v1,v2,..."


def _number(word: str, what: str) -> float:
    try:
        value = float(word)
    except ValueError:
        raise ValueError(f"{what} {word.strip()!r} is not a number") from None
    if not np.isfinite(value):
        raise ValueError(f"{what} {word.strip()!r} is not a finite number")
    return value


def parse_param(text: str) -> tuple[str, list[float]]:
    """'PATH=a:b:n' or 'PATH=v1,v2' -> (PATH, values); InputError saying what is wrong."""
    path, sep, spec = text.partition("=")
    if not sep or not path.strip():
        raise InputError(f"--param {text!r}: {FORMS}")
    try:
        if ":" in spec:
            parts = spec.split(":")
            if len(parts) != 3:
                raise ValueError(f"{len(parts)} fields in {spec!r}, expected start:stop:n")
            a, b = _number(parts[0], "start"), _number(parts[1], "stop")
            try:
                n = int(parts[2])
            except ValueError:
                raise ValueError(f"n {parts[2].strip()!r} is not a whole number") from None
            if not 1 <= n <= MAX_POINTS_PER_PARAM:
                raise ValueError(f"n = {n} must be in 1..{MAX_POINTS_PER_PARAM}")
            values = np.linspace(a, b, n).tolist()
        else:
            values = [_number(v, f"value {k + 1}") for k, v in enumerate(spec.split(","))]
    except ValueError as e:
        raise InputError(f"--param {text!r}: {e}; {FORMS}") from None
    return path, values


def parse_params(texts) -> list[tuple[str, list[float]]]:
    """Every --param parsed; InputError listing every one that is wrong (one round)."""
    out, problems = [], []
    for text in texts:
        try:
            out.append(parse_param(text))
        except InputError as e:
            problems.append(str(e))
    if len(problems) == 1:
        raise InputError(problems[0])
    if problems:
        raise InputError(f"{len(problems)} --param problems:\n  " + "\n  ".join(problems))
    return out


def grid(params: list[tuple[str, list[float]]], runs: int | None = None):
    """The Cartesian product of the parameter values as a lazy design (``n_runs``,
    ``point(i)``; mbsfmu/campaign/dispersions.py Grid), the first ``runs`` points when given."""
    from .dispersions import Grid

    return Grid(tuple((p, tuple(v)) for p, v in params), runs)


def run_sweep(
    scenario_path: str | Path,
    params: list[tuple[str, list[float]]],
    out: str | Path,
    duration: float | None = None,
    execution=None,
    runs: int | None = None,
    resume: bool = False,
    progress: bool = False,
    stop=None,
    run_timeout: float | None = None,
    rerun: str | tuple[int, ...] | None = None,
):
    """Run the grid (its first ``runs`` points) on ``execution`` (mbsfmu/campaign/execution.py;
    default a LocalCluster) and write DIR; returns the CampaignResult (rows sorted by run).
    run_timeout [s], rerun: see ``run_campaign``."""
    from .engine import run_campaign

    return run_campaign(
        scenario_path,
        grid(params, runs),
        out,
        duration=duration,
        trajectories="run_{run:04d}/trajectory.csv",
        execution=execution,
        resume=resume,
        progress=progress,
        stem="summary",
        kind="sweep",
        stop=stop,
        run_timeout=run_timeout,
        rerun=rerun,
    )


def summary_text(rows: list[dict], params: list[str], limit: int = 50, rate: dict | None = None) -> str:
    """A fixed-width table of the sweep (the first ``limit`` rows): run, parameter values,
    pass/fail, wall time and, for a failed run, why (``failure_reason``). rate: the campaign's
    ``pass_rate`` when ``rows`` are only the first rows (the counts are then its)."""
    head = f"{'run':<9} " + " ".join(f"{p[-22:]:>22}" for p in params) + f" {'result':>6} {'wall [s]':>9}  why"
    lines = [head]
    for r in rows[:limit]:
        verdict, wall = "PASS" if r["passed"] else "FAIL", r.get("wall_time_s", float("nan"))
        lines.append(
            f"run_{r['run']:04d} "
            + " ".join(f"{r[p]:>22.6g}" for p in params)
            + f" {verdict:>6} {wall:>9.3g}  {failure_reason(r)}"
        )
    n = len(rows) if rate is None else rate["n"]
    n_fail = sum(not r["passed"] for r in rows) if rate is None else n - rate["passed"]
    if n > limit:
        lines.append(f"... {n - limit} more rows in summary.csv")
    lines.append(f"{n} runs, {n_fail} failed")
    return "\n".join(lines)


def _sweep(args) -> int:
    from .. import stops
    from .command import exit_code, interrupted_note
    from .execution import Dask, Serial

    params = parse_params(args.param)
    execution = Serial() if args.serial else Dask(args.scheduler, args.workers, args.cluster_timeout, args.batch)
    with stops.stoppable() as state:
        result = run_sweep(
            args.scenario,
            params,
            args.out,
            duration=args.duration,
            execution=execution,
            runs=args.runs,
            resume=args.resume,
            progress=not args.no_progress,
            stop=lambda: state["signal"] is not None,
            run_timeout=args.run_timeout,
            rerun=args.rerun,
        )
    print(summary_text(result.head(50), [p for p, _ in params], 50, result.pass_rate))
    print(f"summary: {result.files['csv']}")
    if result.interrupted:
        print(interrupted_note("sweep", result), file=sys.stderr)
    return exit_code(result, state)


def add_parser(sub) -> None:
    """The ``sweep`` subcommand."""
    from .command import add_execution_arguments, positive_int

    p = sub.add_parser("sweep", help="run a scenario over a parameter grid on the campaign engine; one summary table")
    p.add_argument("scenario", help="scenario file")
    p.add_argument(
        "--param",
        action="append",
        required=True,
        metavar="PATH=start:stop:n",
        help="e.g. body.link1.mass=0.8:1.2:5, gravity[3]=-9.81,-1.62, joint.q2.spring.k=1:10:4, "
        "initial.q.q1=0:0.5:3 (repeat for a Cartesian product)",
    )
    p.add_argument("--out", "-o", required=True, metavar="DIR", help="output directory: run_0000/..., summary.csv")
    p.add_argument("--duration", type=float, help="simulated time [s] of every run instead of the scenario's")
    p.add_argument("--runs", type=positive_int, metavar="N", help="run only the first N points of the grid")
    add_execution_arguments(p)
    p.set_defaults(func=_sweep)
