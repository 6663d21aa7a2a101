"""The report of a run: the output folder, report.json (written atomically) with the scenario's
conservation checks, references and final values judged on the trajectory, and the plots."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import stops
from ..errors import MbsError
from ..files import make_folder

if TYPE_CHECKING:
    from .spec import Scenario


def make_out_dir(out_dir: str | Path) -> Path:
    """The output folder, created with its parents; MbsError saying why it cannot be."""
    out = Path(out_dir)
    try:
        make_folder(out, f"--out {out}")
    except OSError as e:
        raise MbsError(e.strerror) from None
    if not os.access(out, os.W_OK):
        raise MbsError(f"--out {out}: the output folder is not writable")
    return out


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON atomically: a temporary file in the same folder, then renamed over
    ``path`` (a reader never sees half a file). OSError (e.g. disk full) leaves ``path`` as it was."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=2, default=float))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def finish_run(
    scn: Scenario,
    out: Path,
    T: float,
    wall: float,
    error: str | None,
    solver: dict,
    skip_checks: str | None = None,
    extra: dict | None = None,
    plot_traj=None,
    kinds: dict | None = None,
    written=None,
) -> dict:
    """Check ``out/trajectory.csv`` (joined with ``out/records.csv`` when the run wrote one) and
    write ``out/report.json`` (and the plots): the scenario's
    conservation checks (or, with ``skip_checks`` = the reason, none: each listed as skipped),
    references and final values; ``extra`` entries join the report. plot_traj: a function giving
    the trajectory to plot (default: the file); kinds: joint kinds for the plots
    (``plots.joint_kinds``); written: a function giving the Trajectory of the files as the run wrote
    them (``trajectory.written_trajectory``: the same numbers, bit for bit), checked instead of
    reading them back, or None to read them (called in the first stage, so a stop while it runs
    still writes the report). Returns the report; "passed" says if every check that ran held and
    the run completed; "checked" if anything was checked at all; "t_end" [s] is the time of the
    last row written (what was simulated); "write_error" / "plot_error" say why the report or the
    plots could not be written.

    Ctrl-C or SIGTERM (mbsfmu/stops.py) while this reads, checks or plots: report.json is still
    written, with what was computed, "interrupted" saying during which stage, "passed" false; then
    the interrupt goes on to the caller."""
    first = "reading the trajectory back" if written is None else "gathering the rows written"
    at: dict = {"stage": first, "report": None}
    try:
        return _finish(scn, out, T, wall, error, solver, skip_checks, extra, plot_traj, kinds, written, at)
    except KeyboardInterrupt as e:
        report = at["report"] or {
            "scenario": scn.name,
            "scenario_file": str(scn.path),
            "model": str(scn.model_path),
            "duration": T,
            "t_end": None,  # not read back yet: trajectory.csv holds every row written
            "wall_time_s": wall,
            "error": error,
            **(extra or {}),
        }
        report.update(
            interrupted=f"interrupted by {stops.name(e)} while {at['stage']}",
            interrupted_by=stops.signal_name(e),
            passed=False,
        )
        try:
            write_json(out / "report.json", report)
            report["report_file"] = str(out / "report.json")
        except OSError as w:
            report["write_error"] = f"cannot write {out / 'report.json'}: {w.strerror or w}"
        e.report = report  # for the command line's message
        raise


def _finish(scn, out, T, wall, error, solver, skip_checks, extra, plot_traj, kinds, written, at: dict) -> dict:
    """finish_run's stages; ``at`` tells which stage runs and holds the report once it exists."""
    from ..trajectory import TrajectoryError, join_trajectories, read_trajectory

    t_end = None
    try:
        traj = written() if written is not None else None  # the run's rows, as the files hold them
        if traj is not None:
            t_end = float(traj.time[-1])
        elif not (out / "trajectory.csv").is_file():  # a device or FIFO (e.g. a link to /dev/full) is never read
            raise TrajectoryError(f"{out / 'trajectory.csv'} is not a regular file")
        else:
            traj = read_trajectory(out / "trajectory.csv")
            t_end = float(traj.time[-1])  # what was simulated: records.csv may lack the last row (Ctrl-C)
            if (out / "records.csv").is_file():
                traj = join_trajectories(traj, read_trajectory(out / "records.csv"))
    except TrajectoryError as e:  # the run stopped before its first row
        traj, error = None, error or str(e)
    steps = int(len(traj.time) - 1) if traj is not None else 0
    at["stage"] = "checking the run"
    series: dict = {}  # per-row values the checks bound, for conservation.png
    report = {
        "scenario": scn.name,
        "scenario_file": str(scn.path),
        "model": str(scn.model_path),
        "duration": T,
        "t_end": t_end,
        "dt": scn.dt,
        "integrator": scn.integrator,
        "procedure": scn.procedure,
        "steps": steps,
        "wall_time_s": wall,
        "real_time_factor": (t_end / wall) if wall > 0 and traj is not None else math.inf,
        "solver": solver,
        "error": error,
        **(extra or {}),
    }
    at["report"] = report
    verdict(scn, traj, error, report, skip_checks, series)
    try:
        write_json(out / "report.json", report)
    except OSError as e:
        report["write_error"] = f"cannot write {out / 'report.json'}: {e.strerror or e}"
        return report
    if scn.plots and traj is not None and not report.get("interrupted"):
        from .plots import plot_run

        at["stage"] = "writing the plots (the checks are in this report)"
        checks = {name: (series.get(name), e) for name, e in report["checks"].items()}
        try:
            report["plots"] = [
                str(p) for p in plot_run(plot_traj(traj) if plot_traj else traj, out, scn.name, kinds, checks)
            ]
        except Exception as e:  # noqa: BLE001 - a plot is never worth the report: say why and go on
            stop = stops.wrapped_interrupt(e)
            if stop is not None:  # a signal while the plots were drawn: the run was stopped
                raise stop from None
            report["plot_error"] = f"{type(e).__name__}: {e}"
        try:
            write_json(out / "report.json", report)
        except OSError as e:
            report["write_error"] = f"cannot write {out / 'report.json'}: {e.strerror or e}"
    return report


def verdict(
    scn: Scenario, traj, error: str | None, report: dict, skip_checks: str | None = None, series: dict | None = None
) -> dict:
    """The judged part of a run's report, added to ``report`` (and returned): "checks" (the
    conservation checks on ``traj``, or with ``skip_checks`` = the reason none, "skipped_checks"
    saying why; "check_error" when they cannot be computed), "references", "final", "passed" (every
    check held and the run completed: ``error`` None) and "checked". traj: the run's trajectory
    (joined with its records), or None when it wrote no row. series: filled with the checks'
    per-row values (for the plots)."""
    from ..checker.conservation import conservation_report

    if skip_checks is not None or traj is None:
        why = skip_checks or "no trajectory rows"
        report.update({"checks": {}, "passed": True, "skipped_checks": {name: why for name in scn.checks}})
    else:
        try:
            report.update(
                conservation_report(traj, scn.checks, scn.procedure, series=series)
                if len(traj.time) > 1 and scn.checks
                else {"checks": {}, "passed": True}
            )
        except MbsError as e:  # the trajectory stays; the report says why it could not be checked
            report.update({"checks": {}, "passed": False, "check_error": str(e)})
    if traj is None:
        report["references"] = {ref.key: {"passed": False, "error": "no trajectory rows"} for ref in scn.references}
        report["final"] = {c: {"passed": False, "error": "no trajectory rows"} for c in scn.final}
    else:
        report["references"] = reference_results(scn, traj)
        report["final"] = final_results(scn, traj, complete=error is None)
    report["passed"] = bool(
        report["passed"]
        and error is None
        and all(e["passed"] for e in (*report["references"].values(), *report["final"].values()))
    )
    report["checked"] = bool(report["checks"] or report["references"] or report["final"])
    return report


def reference_results(scn: Scenario, traj) -> dict:
    """Per reference (``Reference.key``): max |column - expr(t)| over its time window t0 <= t <= t1
    [s] and where, against its tolerance."""
    from .expressions import evaluate

    out = {}
    for ref in scn.references:
        if ref.column not in traj:
            out[ref.key] = {"passed": False, "error": f"no column {ref.column!r} in the trajectory"}
            continue
        sel = (traj.time >= ref.t0) & (traj.time <= ref.t1)
        try:
            with np.errstate(all="ignore"):  # non-finite values are reported below, never warned
                err = np.abs(traj[ref.column][sel] - evaluate(ref.tree, traj.time[sel], ref.params))
        except Exception as e:  # noqa: BLE001 - checked at load; never lose the report over one reference
            out[ref.key] = {"passed": False, "error": f"the expression does not evaluate: {type(e).__name__}: {e}"}
            continue
        if not np.all(np.isfinite(err)):  # a NaN never compares: it must fail, and say where
            k = int(np.flatnonzero(~np.isfinite(err))[0])
            t_k, value = float(traj.time[sel][k]), float(traj[ref.column][sel][k])
            out[ref.key] = {
                "passed": False,
                "error": f"not computable at t = {t_k:.6g} s: {ref.column} = {value!r} or the expression is not finite",
            }
            continue
        worst = float(np.max(err)) if err.size else math.nan
        out[ref.key] = {
            "max_abs": worst,
            "at_t": float(traj.time[sel][np.argmax(err)]) if err.size else None,
            "tol": ref.tol,
            "passed": bool(err.size and worst <= ref.tol),
        }
    return out


def final_results(scn: Scenario, traj, complete: bool) -> dict:
    """Per column of ``final``: |column(T) - value| against tol at the last row (fails if the run
    stopped early: ``complete`` false)."""
    out = {}
    for column, final in scn.final.items():
        if column not in traj:
            out[column] = {"passed": False, "error": f"no column {column!r} in the trajectory"}
            continue
        got = float(traj[column][-1])
        out[column] = {
            "value": got,
            "expected": final.value,
            "tol": final.tol,
            "t": float(traj.time[-1]),
            "passed": bool(complete and abs(got - final.value) <= final.tol),  # False for NaN
        }
        if not math.isfinite(got):
            out[column]["error"] = f"the last value of {column} is {got!r}: not a finite number"
    return out
