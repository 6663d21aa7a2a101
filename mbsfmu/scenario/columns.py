"""The columns a scenario's run will write, and the check that its ``references:`` and ``final:``
name only those, made when the scenario is loaded (before the run): a misspelt column is a
problem of the file, with its line, instead of a failed comparison after the whole run."""

from __future__ import annotations

import difflib

from ..engine.model import Model
from ..errors import MbsError
from ..sim.rows import Rows
from ..sim.simulator import Simulator
from ..trajectory import RECORDS_FILE, TRAJECTORY_FILE


def run_columns(model: Model, simulator_options: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(trajectory.csv columns, records.csv columns) a run of ``model`` writes (``sim.rows.Rows``:
    the names come from the same place as the files' headers), or ((), ()) when the model cannot
    be simulated (the run reports why)."""
    try:
        rows = Rows(Simulator(model, **simulator_options))
    except MbsError:
        return (), ()
    return rows.trajectory_columns, rows.records_columns


def check_columns(r, raw_references, raw_final, trajectory: tuple, records: tuple, writes_records: bool, fmus) -> None:
    """Report to the reader ``r`` every ``references[k].column`` and ``final`` key that names no
    column of the run: not in ``trajectory`` (trajectory.csv), nor in ``records`` (records.csv,
    which counts only when the scenario writes it: ``writes_records``), nor ``<fmu>.<variable>`` of
    a co-simulated FMU in ``fmus`` (its variables are checked against the FMU by ``mbsfmu cosim``).
    Each problem suggests the closest column (difflib) when one is near."""
    if not trajectory:
        return
    named = []  # (path of the field in the file, column)
    if isinstance(raw_references, list):
        for k, ref in enumerate(raw_references):
            if isinstance(ref, dict) and isinstance(ref.get("column"), str):
                named.append((("references", k, "column"), ref["column"]))
    if isinstance(raw_final, dict):
        named += [(("final", column), str(column)) for column in raw_final]
    known = set(trajectory) | (set(records) if writes_records else set())
    own = [c for c in trajectory if not c.startswith("engine.")]
    listing = f"{TRAJECTORY_FILE} has {', '.join(own[:16])}{', ...' if len(own) > 16 else ''} and the engine.* columns"
    if writes_records:
        listing += f"; {RECORDS_FILE} adds {len(set(records) - set(trajectory))} body, wheel and spring records"
    listing += " (docs/reference/trajectory-format.md)"
    prefixes = tuple(f"{name}." for name in fmus or ())
    for path, column in named:
        if column in known or (prefixes and column.startswith(prefixes)):
            continue
        if column in records:
            r.problem(
                path,
                f"column {column!r} is in {RECORDS_FILE}, which this scenario does not write: "
                "set outputs: {records: true}",
            )
            continue
        close = difflib.get_close_matches(column, sorted(known), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        r.problem(path, f"unknown column {column!r}{hint}; {listing}")
