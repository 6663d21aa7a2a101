"""The campaign engine, one for ``mbsfmu montecarlo`` and ``mbsfmu sweep``: a design gives run
i's point, an execution runs the points (in any order, anywhere), the client journals every
finished run as it arrives and streams its row to Parquet parts (``runs.parquet/``), and at the
end builds the sorted table, the statistics and ``campaign.png`` from those parts, also after
Ctrl-C or SIGTERM (the finished runs; ``resume=True`` completes the rest)."""

from __future__ import annotations

import math
import sys
import time as wallclock
from dataclasses import dataclass, field
from pathlib import Path

from .runner import Runs, RunSpec, run_one
from .table import (
    JOURNAL,
    MANIFEST,
    Journal,
    Parts,
    build_table,
    file_hash,
    journal_series,
    open_campaign,
    read_journal,
    series_runs,
    sync_parts,
    table_columns,
    write_table,
)


def _has_pyarrow() -> bool:
    try:
        import pyarrow.parquet  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass
class CampaignResult:
    """What a campaign left in ``out``: statistics, pass rate, files, and whether it was interrupted
    before every run finished. ``rows`` (sorted by run; a cell the run did not have is absent) and
    ``failed`` are read from the table when asked for: for a large campaign, read the columns you need
    from ``files["table"]`` instead."""

    out: Path
    table_rows: list[dict] | None  # the rows when the table has no Parquet file (no pyarrow); else read on demand
    statistics: list[dict]
    files: dict[str, Path] = field(default_factory=dict)
    n_runs: int = 0
    interrupted: bool = False
    stopped_by: str = ""  # why the cluster stopped the campaign ("" when it did not)
    pass_rate: dict = field(default_factory=dict)  # statistics.pass_rate: n, passed, failed, errored, Wilson interval

    @property
    def rows(self) -> list[dict]:
        return self.table_rows if self.table_rows is not None else self._read()

    @property
    def failed(self) -> list[dict]:
        if self.table_rows is not None:
            return [r for r in self.table_rows if not r["passed"]]
        import pyarrow.compute as pc

        return self._read(lambda t: t.filter(pc.invert(pc.fill_null(t.column("passed"), False))))

    def failed_rows(self, limit: int) -> list[dict]:
        """The first ``limit`` failed rows by run, reading the table a row group at a time."""
        if self.table_rows is not None:
            return self.failed[:limit]
        import pyarrow.compute as pc
        import pyarrow.parquet as pq

        found: list[dict] = []
        f = pq.ParquetFile(self.files["table"])
        for g in range(f.num_row_groups):
            if len(found) >= limit:
                break
            passed = pc.fill_null(f.read_row_group(g, columns=["passed"]).column("passed"), False)
            if pc.all(passed).as_py():
                continue
            t = f.read_row_group(g)
            found += _present(t.filter(pc.invert(pc.fill_null(t.column("passed"), False))).slice(0, limit - len(found)))
        return found

    def head(self, limit: int) -> list[dict]:
        """The first ``limit`` rows by run, reading the table's first row groups only."""
        if self.table_rows is not None:
            return self.table_rows[:limit]
        import pyarrow.parquet as pq

        f = pq.ParquetFile(self.files["table"])
        found: list[dict] = []
        for g in range(f.num_row_groups):
            if len(found) >= limit:
                break
            found += _present(f.read_row_group(g).slice(0, limit - len(found)))
        return found

    def _read(self, select=None) -> list[dict]:
        import pyarrow.parquet as pq

        t = pq.read_table(self.files["table"])
        return _present(select(t) if select else t)


def _present(table) -> list[dict]:
    """The rows of ``table`` as dicts without their null cells (as the runs wrote them)."""
    return [{k: v for k, v in r.items() if v is not None} for r in table.to_pylist()]


def default_outputs(sim, n: int = 4) -> list[str]:
    """The first ``n`` joint position columns (q.<joint> of 1-DoF joints first)."""
    names = [c for c in sim.state_names if c.startswith("q.")]
    return sorted(names, key=lambda c: "[" in c)[:n]


def output_columns(sim) -> set[str]:
    """The trajectory columns a run of ``sim`` writes (what ``outputs`` may name)."""
    inv = ("p_sys", "P_sys", "H_sys", "R", "Rdot")
    return {
        "time",
        *sim.state_names,
        *(f"u.{n}" for n in sim.input_names),
        *sim.records(),
        *(f"engine.{k}[{c}]" for k in inv for c in (1, 2, 3)),
        *(f"engine.{k}" for k in ("KE", "PE", "E", "W_in", "W_diss")),
    }


def run_campaign(
    scenario: str | Path,
    design,
    out: str | Path,
    *,
    duration: float | None = None,
    outputs: list[str] | None = None,
    trajectories: str | None = None,
    execution=None,
    resume: bool = False,
    progress: bool = True,
    stem: str = "campaign",
    picture: bool = True,
    kind: str = "campaign",
    stop=None,
    run_timeout: float | None = None,
    rerun: str | tuple[int, ...] | None = None,
    batched: bool = True,
) -> CampaignResult:
    """Run every point of ``design`` (mbsfmu/campaign/dispersions.py) on ``execution``
    (mbsfmu/campaign/execution.py; default: a LocalCluster, one worker per CPU) and write ``out``
    (mbsfmu/campaign/table.py). trajectories: None, or a path template relative to ``out`` such as
    ``"trajectories/run_{run:04d}.csv"`` for every run's whole trajectory. KeyboardInterrupt (Ctrl-C,
    or SIGTERM through the command line) stops the campaign: finished runs are kept and written,
    the result says ``interrupted``. A cluster lost mid-campaign (scheduler gone, no worker left)
    ends it the same way, the result's ``stopped_by`` saying why; a cluster that cannot start the
    campaign (unreachable, no worker, a worker that cannot run it) raises ClusterError. stop: a
    function returning True once the campaign must end (the command line's signal state: a run
    that caught the interrupt itself and returned is dropped, not journaled, so a resume reruns
    it). run_timeout [s]: each run's wall-time limit (mbsfmu/campaign/runner.py); a run over it is
    a row with a Timeout error. rerun: ``"failed"`` or run indices: run those runs of the campaign
    in ``out`` again (the same points: run i's point depends on i and the design only), writing their
    trajectories; their new rows replace the old. batched: the runs that can run batched in the C core
    (runner.run_batch: no input schedules, controller, co-simulation, run timeout or closed loops; the
    same rows bit for bit), False: every run by itself (runner.run_one)."""
    from ..errors import InputError
    from ..scenario.spec import load_scenario
    from ..trajectory import save_trajectory
    from .execution import ClusterError, Dask
    from .points import apply_point, check_paths

    if duration is not None and not (isinstance(duration, (int, float)) and math.isfinite(duration) and duration > 0):
        raise InputError(f"duration must be a positive finite time [s], got {duration!r}")
    if run_timeout is not None and not (isinstance(run_timeout, (int, float)) and run_timeout > 0):
        raise InputError(f"run_timeout must be a positive time [s], got {run_timeout!r}")
    scenario = Path(scenario)
    scn = load_scenario(scenario)
    check_paths(scn, design.paths)
    from ..scenario.run import build_simulator

    sim = build_simulator(apply_point(scn, {}))
    known = output_columns(sim)
    outputs = list(outputs) if outputs else default_outputs(sim)
    unknown = [o for o in outputs if o not in known]
    if unknown:
        import difflib

        hints = [
            f"{o!r}" + (f" (did you mean {c[0]!r}?)" if (c := difflib.get_close_matches(o, known, n=1)) else "")
            for o in unknown
        ]
        raise InputError(f"outputs: no trajectory column {', '.join(hints)} in a run of {scenario}")
    out = Path(out)
    hashes = {str(p): file_hash(p) for p in dict.fromkeys((scn.path, scn.model_path)) if Path(p).is_file()}
    manifest = {
        "kind": kind,
        "scenario": str(scenario),
        "files_sha256": hashes,
        **design.describe(),
        "duration": duration,
        "outputs": outputs,
        "trajectories": trajectories,
    }
    n = design.n_runs
    if rerun is None:
        done = open_campaign(out, manifest, resume)
        chosen = None
    else:
        if trajectories is None:
            raise InputError("rerun: the runs are rerun to write their trajectories; give a trajectories template")
        if not (out / MANIFEST).is_file():
            raise InputError(f"rerun: {out} holds no campaign ({MANIFEST}); run the campaign first")
        done = open_campaign(out, manifest, True, ignore=("trajectories",))
        chosen = rerun_runs(rerun, done, n, out)
    # What the client keeps while runs arrive: counts, and on a resume the set of runs journaled before;
    # the rows and series are in the journal, read back at the end, so memory is flat in the runs.
    rerunning = set(chosen or ())
    skip = {i for i in done if i not in rerunning}
    n_done = len(skip)
    n_failed = sum(not ok for i, ok in done.items() if i in skip)
    del done
    if chosen is None:
        chosen = (i for i in range(n) if i not in skip)
    n_todo = n - n_done
    where = str(scenario.resolve())  # workers may run in another folder (or on another node)
    todo = (
        RunSpec(where, i, design.point(i), duration, tuple(outputs), trajectories is not None, run_timeout)
        for i in chosen
    )
    execution = execution if execution is not None else Dask()
    bar = Progress(kind, n, n_done, n_failed, progress)
    parquet = _has_pyarrow()
    if parquet:
        sync_parts(out)  # rows journaled by a client killed before it wrote their part
    journal = Journal(out / JOURNAL, Parts(out) if parquet else None)
    interrupted, failure, stopped_by, started = False, None, "", False
    try:
        with execution:
            bar.slots = execution.slots
            execution.check_workers({str(Path(p).resolve()): h for p, h in hashes.items()})
            started = True
            for spec, record in execution.imap_unordered(Runs() if batched else run_one, todo, n_todo):
                if stop is not None and stop():
                    raise KeyboardInterrupt
                if trajectories is not None and record.get("trajectory"):
                    path = out / trajectories.format(run=spec.index)
                    path.parent.mkdir(parents=True, exist_ok=True)
                    save_trajectory(path, record["trajectory"])
                journal.append(record)
                bar.update(not record["row"]["passed"])
    except KeyboardInterrupt:
        interrupted = True
    except ClusterError as e:
        if not started:  # the cluster could not start the campaign: nothing ran
            raise
        interrupted, stopped_by = True, str(e)
    except OSError as e:  # the client cannot write DIR (disk full, permissions)
        interrupted, failure = True, e
    finally:
        try:
            journal.close()  # writes the last rows' part
        except OSError as e:
            interrupted, failure = True, failure or e
        bar.close()
    from ..checker.conservation import parse_bound

    bounds = {name: parse_bound(name, b) for name, b in scn.checks.items()}
    try:
        if parquet:
            result = finish_streamed(out, design, outputs, stem, scn.name, n, interrupted, picture, bounds)
        else:
            result = finish_campaign(
                out, read_journal(out / JOURNAL), design, outputs, stem, scn.name, n, interrupted, picture, bounds
            )
        result.stopped_by = stopped_by
    except OSError as e:
        failure = failure or e
    if failure is not None:
        from ..errors import MbsError

        raise MbsError(
            f"campaign stopped: cannot write {out}: {failure}; the runs journaled in {out / JOURNAL} "
            "are kept and --resume continues once DIR is writable"
        ) from None
    return result


def rerun_runs(rerun: str | tuple[int, ...], done: dict, n: int, out: Path) -> list[int]:
    """The run indices ``rerun`` names: ``"failed"`` (the finished runs that failed) or indices in
    0..n-1; InputError naming the ones out of range."""
    from ..errors import InputError

    if rerun == "failed":
        return sorted(i for i, ok in done.items() if not ok)
    bad = [i for i in rerun if not 0 <= i < n]
    if bad:
        raise InputError(f"rerun: no run {', '.join(map(str, bad))} in the campaign of {out} (runs 0..{n - 1})")
    return sorted(set(rerun))


def finish_campaign(
    out: Path,
    done: dict,
    design,
    outputs: list[str],
    stem: str,
    title: str,
    n: int,
    interrupted: bool,
    picture: bool = True,
    bounds: dict | None = None,
) -> CampaignResult:
    """Write the table (CSV; Parquet with pyarrow), ``statistics.csv`` and ``campaign.png`` from the
    finished runs ``done`` {index: row}: the path without pyarrow, which holds every row at once
    (``finish_streamed`` is the one with pyarrow)."""
    from .statistics import pass_rate, stat_columns, statistics

    rows = [done[i] for i in sorted(done)]
    paths = design.paths
    parquet, text = write_table(out, stem, rows, paths)
    stats = statistics(rows, stat_columns(table_columns(rows, paths), paths))
    rate = pass_rate(rows)
    files = {"table": parquet or text, "csv": text, "statistics": _write_statistics(out, stats, rate)}
    if picture and rows:
        from .picture import plot_campaign, rows_columns

        cols = rows_columns(rows, paths)
        series = journal_series(out / JOURNAL, series_runs(cols["run"], cols["passed"]))
        files["picture"] = plot_campaign(out, title, cols, series, paths, outputs, bounds)
    return CampaignResult(
        out=out, table_rows=rows, statistics=stats, files=files, n_runs=n, interrupted=interrupted, pass_rate=rate
    )


def finish_streamed(
    out: Path,
    design,
    outputs: list[str],
    stem: str,
    title: str,
    n: int,
    interrupted: bool,
    picture: bool = True,
    bounds: dict | None = None,
) -> CampaignResult:
    """Write the table (``stem.parquet``, ``stem.csv``), ``statistics.csv`` and ``campaign.png`` from
    the Parquet parts of ``out/runs.parquet`` (table.build_table: a chunk of runs at a time), the
    statistics from the table a column at a time (statistics.table_statistics): the client holds a few
    numbers per run, never the rows."""
    from .statistics import table_statistics

    sync_parts(out)
    paths = design.paths
    parquet, text = build_table(out, stem, paths)
    stats, rate = table_statistics(parquet, paths)
    files = {"table": parquet, "csv": text, "statistics": _write_statistics(out, stats, rate)}
    if picture and rate["n"]:
        from .picture import plot_campaign, table_columns

        cols = table_columns(parquet, paths)  # a few numbers per run, never the rows
        series = journal_series(out / JOURNAL, series_runs(cols["run"], cols["passed"]))
        files["picture"] = plot_campaign(out, title, cols, series, paths, outputs, bounds)
        del cols, series
    return CampaignResult(
        out=out, table_rows=None, statistics=stats, files=files, n_runs=n, interrupted=interrupted, pass_rate=rate
    )


def _write_statistics(out: Path, stats: list[dict], rate: dict) -> Path:
    """``statistics.csv``: a first row ``passed`` (outcome "rate": n, and the rate as mean with its
    Wilson interval as min and max), then one row per column and outcome."""
    import csv

    from .statistics import KEYS

    path = out / "statistics.csv"
    keys = ("column", "outcome", "n", "min", *KEYS, "max", "mean")
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(keys)
        nan = float("nan")
        w.writerow(
            [
                "passed",
                "rate",
                rate["n"],
                repr(rate["lo"]),
                *[repr(nan)] * len(KEYS),
                repr(rate["hi"]),
                repr(rate["rate"]),
            ]
        )
        for e in stats:
            w.writerow([repr(e[k]) if isinstance(e[k], float) else e[k] for k in keys])
    return path


class Progress:
    """One line on stderr: runs done / total, failed, elapsed, and an ETA once it means something
    (at least one run per worker slot finished in this session and a second elapsed)."""

    def __init__(self, kind: str, total: int, done: int, failed: int, enabled: bool):
        self.kind, self.total, self.done, self.failed, self.enabled = kind, total, done, failed, enabled
        self.start, self.new, self.last, self.slots, self.shown = wallclock.perf_counter(), 0, -math.inf, 1, False

    def update(self, failed: bool) -> None:
        self.done += 1
        self.new += 1
        self.failed += failed
        now = wallclock.perf_counter()
        if not self.enabled or (now - self.last < 1.0 and self.done < self.total):
            return
        self.last, self.shown = now, True
        elapsed = now - self.start
        eta = ""
        if self.new >= self.slots and elapsed >= 1.0 and self.done < self.total:
            eta = f", ~{elapsed / self.new * (self.total - self.done):.0f} s left"
        end = "" if sys.stderr.isatty() else "\n"
        print(
            f"\r{self.kind}: {self.done}/{self.total} runs done, {self.failed} failed, {elapsed:.0f} s{eta}   ",
            end=end,
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        if self.shown and sys.stderr.isatty():
            print(file=sys.stderr)
