"""``mbsfmu montecarlo SCENARIO --runs N --seed S --out DIR [--scheduler ADDRESS | --workers K]
[--resume]`` and the shared command-line handling of campaigns (SIGTERM, exit codes, summary)."""

from __future__ import annotations

import sys

from .. import stops
from ..arguments import positive_time
from .runner import failure_reason


def exit_code(result, state: dict) -> int:
    """130 after Ctrl-C, 143 after SIGTERM, 2 when the cluster stopped the campaign, 1 if a run
    failed, 0 when every run passed."""
    if result.stopped_by:
        return 2
    if result.interrupted:
        return stops.EXIT_CODES.get(state["signal"], 130)
    return 0 if result.pass_rate["passed"] == result.pass_rate["n"] else 1


def interrupted_note(kind: str, result, argv: list[str] | None = None) -> str:
    """Why the campaign stopped, what it kept, and the command that completes it."""
    why = f"{result.stopped_by}: stopped" if result.stopped_by else "interrupted"
    return (
        f"mbsfmu {kind}: {why}: {result.pass_rate['n']} of {result.n_runs} runs finished and written to "
        f"{result.out}; to complete the campaign: {resume_command(sys.argv[1:] if argv is None else argv)}"
    )


def resume_command(argv: list[str]) -> str:
    """The command line ``argv`` (after ``mbsfmu``) with ``--resume`` (a ``--rerun`` as it was: it
    reruns its runs again), quoted for a POSIX shell."""
    import shlex

    again = any(a == "--resume" or a.split("=")[0] == "--rerun" for a in argv)
    return shlex.join(["mbsfmu", *argv, *(() if again else ("--resume",))])


def _montecarlo(args) -> int:
    from . import run_montecarlo
    from .statistics import statistics_text

    with stops.stoppable() as state:
        result = run_montecarlo(
            args.scenario,
            args.runs,
            args.seed,
            args.out,
            campaign_file=args.campaign,
            scheduler=args.scheduler,
            workers=args.workers,
            serial=args.serial,
            cluster_timeout=args.cluster_timeout,
            run_timeout=args.run_timeout,
            batch=args.batch,
            rerun=args.rerun,
            resume=args.resume,
            duration=args.duration,
            outputs=args.output or None,
            trajectories=args.trajectories,
            progress=not args.no_progress,
            stop=lambda: state["signal"] is not None,
        )
    n_fail = result.pass_rate["n"] - result.pass_rate["passed"]
    print(statistics_text(result.statistics, result.pass_rate))
    for r in result.failed_rows(10):
        print(f"run {r['run']:>6}: FAIL  {failure_reason(r)}")
    if n_fail > 10:
        print(f"... {n_fail - 10} more failed runs in {result.files['csv']}")
    print(f"montecarlo: {result.pass_rate['n']} of {result.n_runs} runs, {n_fail} failed; {files_text(result.files)}")
    if result.interrupted:
        print(interrupted_note("montecarlo", result), file=sys.stderr)
    return exit_code(result, state)


def add_execution_arguments(p) -> None:
    """--scheduler / --workers / --serial / --cluster-timeout / --run-timeout / --batch / --rerun /
    --resume / --no-progress (montecarlo and sweep)."""
    from .execution import DEFAULT_TIMEOUT

    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on an existing dask.distributed cluster "
        "(e.g. tcp://host:8786); its workers need this mbsfmu and the scenario and model files at the same paths",
    )
    how.add_argument(
        "--workers",
        type=positive_int,
        metavar="K",
        help="worker processes of the local cluster (default: the CPU count)",
    )
    how.add_argument("--serial", action="store_true", help="run in this process, one run after another (no Dask)")
    p.add_argument(
        "--cluster-timeout",
        type=positive_time,
        default=DEFAULT_TIMEOUT,
        metavar="S",
        help=f"seconds to wait for the scheduler to answer and for a worker to be there, at the start "
        f"or when every worker left (default {DEFAULT_TIMEOUT:g})",
    )
    p.add_argument(
        "--run-timeout",
        type=positive_time,
        metavar="S",
        help="wall-time limit [s] of each run: each run executes in its own Python process, killed after S "
        "seconds, and is a row with a Timeout error (default: no limit, runs execute in the worker)",
    )
    p.add_argument(
        "--batch",
        type=positive_int,
        metavar="N",
        help="runs per Dask task (default: about 16 tasks per worker thread, at most 64 runs each, "
        "at most 10,000 tasks)",
    )
    again = p.add_mutually_exclusive_group()
    again.add_argument(
        "--rerun",
        type=runs_list,
        metavar="RUNS",
        help="run again, with their full trajectories, runs of the campaign in --out (same arguments): "
        "'failed', or run numbers such as 3,7,12; their new rows replace the old",
    )
    again.add_argument(
        "--resume", action="store_true", help="complete an interrupted campaign in --out (same arguments)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress line")


def runs_list(text: str) -> str | tuple[int, ...]:
    """argparse type of --rerun: "failed", or comma-separated run numbers (>= 0)."""
    import argparse

    if text.strip() == "failed":
        return "failed"
    try:
        runs = tuple(int(w) for w in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected 'failed' or run numbers such as 3,7,12, got {text!r}") from None
    if any(i < 0 for i in runs):
        raise argparse.ArgumentTypeError(f"run numbers are >= 0, got {text!r}")
    return runs


def positive_int(text: str) -> int:
    import argparse

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return v


def _seed(text: str) -> int:
    import argparse

    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return v


def add_parser(sub) -> None:
    """The ``montecarlo`` subcommand."""
    p = sub.add_parser(
        "montecarlo",
        help="a Monte Carlo campaign: dispersed parameters and initial states, runs on "
        "dask.distributed, one table with statistics and campaign.png",
    )
    p.add_argument("scenario", help="scenario file; dispersions in its campaign: section and/or --campaign FILE")
    p.add_argument("--runs", type=positive_int, required=True, metavar="N", help="number of runs")
    p.add_argument("--seed", type=_seed, required=True, metavar="S", help="campaign seed: run i draws from (S, i)")
    p.add_argument(
        "--out",
        "-o",
        required=True,
        metavar="DIR",
        help="output folder: campaign.parquet, campaign.csv, statistics.csv, campaign.png",
    )
    p.add_argument("--campaign", metavar="FILE", help="campaign file (dispersions:, outputs:), added to the scenario's")
    p.add_argument("--duration", type=float, help="simulated time [s] of every run instead of the scenario's")
    p.add_argument(
        "--output",
        action="append",
        metavar="COLUMN",
        help="trajectory column to summarise and plot as a time envelope (repeat; default: joint angles)",
    )
    p.add_argument(
        "--trajectories", action="store_true", help="also write every run's trajectory to DIR/trajectories/run_NNNN.csv"
    )
    add_execution_arguments(p)
    p.set_defaults(func=_montecarlo)


def files_text(files: dict) -> str:
    """ "table X.parquet, X.csv; statistics S; picture P", each file named once (without pyarrow
    the table is the CSV: it was listed twice)."""
    tables = list(dict.fromkeys(str(files[k]) for k in ("table", "csv") if k in files))
    out = f"table {', '.join(tables)}; statistics {files['statistics']}"
    return out + (f"; picture {files['picture']}" if "picture" in files else "")
