"""The files of a campaign folder DIR, all written by the client:

- ``campaign.json``: what the campaign is (scenario, design, duration, outputs, file hashes);
  ``--resume`` refuses a DIR that holds another campaign; the same campaign without a finished run
  (e.g. its cluster could not start it) starts again with or without ``--resume``.
- ``runs.jsonl``: the journal, one line per finished run (row and output series) appended and
  flushed as each run arrives, so an interrupted or killed campaign keeps every finished run;
  ``--resume`` runs only the missing indices. A line cut by a kill is dropped on reading. The
  output series live only here: the client keeps the rows, and reads back the series the picture
  draws (``journal_series``), so its memory does not grow with each run's series.
- ``runs.parquet/part-NNNNN.parquet``: the journal's rows (not their series) in Parquet, streamed
  while runs arrive: a part every PART_ROWS rows, after PART_SECONDS, and when the campaign ends or
  is stopped (``Parts``), each written beside and renamed into place. The parts hold a prefix of the
  journal (each part's metadata says up to which byte); rows journaled after the last part (a
  killed client) are written as parts by the next session first (``sync_parts``), and a resume or a
  rerun appends parts.
- ``<stem>.parquet`` and ``<stem>.csv``: the table, one row per run sorted by run index (the last
  journaled row of a run rerun), columns in a fixed order (run, the design's paths, passed, error,
  then the rest as they first appear in run order), so the table does not depend on which worker
  finished first. With pyarrow it is built from the parts CHUNK_RUNS runs at a time
  (``build_table``); without, from the journal's rows (``write_table``, every row at once).
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
import shutil
from pathlib import Path

from ..errors import InputError

MANIFEST, JOURNAL = "campaign.json", "runs.jsonl"


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes (a changed scenario or model makes a resume refuse)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def open_campaign(out: Path, manifest: dict, resume: bool, ignore: tuple[str, ...] = ()) -> dict[int, bool]:
    """Prepare ``out`` for the campaign ``manifest``; the finished runs' outcomes {index: passed} when
    resuming (``read_outcomes``). InputError if ``out`` holds another campaign (the keys ``ignore``
    aside), or a campaign with finished runs without --resume (the same campaign without any is
    started again)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / MANIFEST
    if path.exists():
        old = json.loads(path.read_text())
        if not resume and old == manifest and not read_outcomes(out / JOURNAL):
            resume = True  # nothing ran: starting again loses nothing
        if not resume:
            raise InputError(
                f"{out} already holds a campaign ({MANIFEST}): add --resume to complete it, or choose another --out"
            )
        diff = [k for k in sorted((set(old) | set(manifest)) - set(ignore)) if old.get(k) != manifest.get(k)]
        if diff:
            raise InputError(
                f"{out} holds a different campaign: {', '.join(diff)} differ "
                f"(was {', '.join(repr(old.get(k))[:80] for k in diff)})"
            )
        return read_outcomes(out / JOURNAL)
    if resume and (out / JOURNAL).exists():
        raise InputError(f"--resume: {out} has runs but no {MANIFEST}; cannot tell which campaign they belong to")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=2))
    os.replace(tmp, path)
    (out / JOURNAL).unlink(missing_ok=True)
    shutil.rmtree(out / PARTS, ignore_errors=True)
    return {}


def journal_lines(path: Path):
    """The journal's whole lines as (line, its row) in order, the row decoded alone (a line is
    ``{"row": {...}, "series": {...}}``: the series, most of the line, is skipped unparsed). A last
    line cut mid-write (or not JSON) ends the walk and is cut off the file, so appending continues on
    a clean line."""
    if not path.exists():
        return
    good = 0
    with open(path, "rb") as f:
        for line in f:
            if not line.endswith(b"\n") or not line.startswith(ROW_HEAD):
                break
            try:
                row, _ = ROW_DECODER.raw_decode(line.decode(), len(ROW_HEAD) - 1)
            except ValueError:
                break
            good += len(line)
            yield line, row
    if good != path.stat().st_size:
        with open(path, "r+b") as f:
            f.truncate(good)


ROW_HEAD = b'{"row": {'  # how Journal.append begins a line (json.dumps of {"row": ..., "series": ...})
ROW_DECODER = json.JSONDecoder()


def read_outcomes(path: Path) -> dict[int, bool]:
    """{run index: passed} of the journal's runs (the last line of a run rerun wins): what a resume
    needs, one entry per run, not the rows (``read_journal``) or their series."""
    return {int(row["run"]): bool(row["passed"]) for _, row in journal_lines(path)}


def read_journal(path: Path) -> dict[int, dict]:
    """{run index: row} from the journal (the last line of a run rerun wins); a cut last line as in
    ``journal_lines``."""
    return {int(row["run"]): row for _, row in journal_lines(path)}


ENVELOPE_RUNS = 1000  # passed runs' series behind the picture's envelopes (the first by run index)
FAILED_CURVES = 100  # failed runs' series drawn as curves


def series_runs(run, passed) -> list[int]:
    """The runs whose output series the picture draws, from the arrays ``run`` and ``passed`` (sorted
    by run): the first ENVELOPE_RUNS passed and the first FAILED_CURVES not passed, by index, so the
    picture's memory is bounded whatever the number of runs."""
    return [int(i) for i in run[passed][:ENVELOPE_RUNS]] + [int(i) for i in run[~passed][:FAILED_CURVES]]


def journal_series(path: Path, runs: list[int]) -> dict[int, dict]:
    """{run: output series} of ``runs`` read back from the journal, a line at a time (only those lines
    are decoded whole); a run journaled twice (a rerun) gives its last series, a run without a line
    none."""
    wanted = set(runs)
    found: dict[int, dict] = {}
    with open(path, "rb") as f:
        for line in f:
            head = line[:80]  # "row" comes first: {"row": {"run": i, ...
            i = int(head.split(b'"run": ', 1)[1].split(b",", 1)[0].rstrip(b"}")) if b'"run": ' in head else -1
            if i in wanted:
                try:
                    found[i] = json.loads(line)["series"]
                except ValueError:
                    break
    return found


class Journal:
    """Appends one flushed JSON line per finished run; with ``parts`` (a ``Parts``) each row goes on to
    the Parquet parts too, which ``close`` flushes."""

    def __init__(self, path: Path, parts: Parts | None = None):
        self.f = open(path, "ab")
        self.parts = parts

    def append(self, record: dict) -> None:
        self.f.write((json.dumps({"row": record["row"], "series": record["series"]}) + "\n").encode())
        self.f.flush()
        if self.parts is not None:
            self.parts.add(record["row"], self.f.tell())

    def close(self) -> None:
        self.f.close()
        if self.parts is not None:
            self.parts.flush()


def table_columns(rows: list[dict], paths: list[str]) -> list[str]:
    """run, the design's paths, passed, error, then every other column in order of first
    appearance over the rows sorted by run."""
    head = ["run", *paths, "passed", "error"]
    rest = dict.fromkeys(c for r in rows for c in r if c not in head)
    return head + list(rest)


def write_table(out: Path, stem: str, rows: list[dict], paths: list[str]) -> tuple[Path | None, Path]:
    """``stem.parquet`` (pyarrow; None without pyarrow installed) and ``stem.csv`` of ``rows``
    (sorted by run); missing cells are null (Parquet) or empty (CSV). Each file is written beside
    and renamed into place."""
    rows = sorted(rows, key=lambda r: r["run"])
    columns = table_columns(rows, paths)
    text = out / f"{stem}.csv"
    with open(str(text) + ".tmp", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for r in rows:
            w.writerow([_cell(r.get(c)) for c in columns])
    os.replace(str(text) + ".tmp", text)
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None, text
    data = {c: [r.get(c) for r in rows] for c in columns}
    types = {}
    for c, vals in data.items():
        if c == "run":
            types[c] = pa.int64()
        elif c in ("error", "failed_checks"):
            types[c] = pa.string()
        elif all(v is None or isinstance(v, bool) for v in vals) and any(isinstance(v, bool) for v in vals):
            types[c] = pa.bool_()
        elif all(v is None or (isinstance(v, int) and not isinstance(v, bool)) for v in vals):
            types[c] = pa.int64()
        else:
            types[c] = pa.float64()
    table = pa.table({c: pa.array(data[c], type=types[c]) for c in columns})
    parquet = out / f"{stem}.parquet"
    pq.write_table(table, str(parquet) + ".tmp")
    os.replace(str(parquet) + ".tmp", parquet)
    return parquet, text


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else str(v)
    return str(v)


# --- the rows in Parquet: streamed parts while runs arrive, the sorted table built from them ---------

PARTS = "runs.parquet"  # a folder of parts: the journal's rows (without the series) in Parquet, in journal order
PART_ROWS = 512  # rows per part (the client holds at most this many rows before they are in Parquet)
PART_SECONDS = 30.0  # [s]: a part is also written when rows have waited this long (slow runs)
CHUNK_RUNS = 4096  # runs per row group of the sorted table (what the table's build holds at once)
META = b"mbsfmu"  # a part's schema metadata: {"journal_end": byte offset, "order": {column: [run, position]}}


def part_paths(out: Path) -> list[Path]:
    """The parts of ``out/runs.parquet`` in the order they were written."""
    folder = out / PARTS
    if not folder.is_dir():
        return []
    return sorted(folder.glob("part-*.parquet"), key=lambda p: int(p.stem.split("-")[1]))


def _part_meta(path: Path) -> dict:
    import pyarrow.parquet as pq

    return json.loads(pq.read_schema(path).metadata[META])


def _arrow_type(column: str, values: list):
    """A column's Parquet type, the same in every part (so the folder reads as one dataset): run and
    n_steps int64; error and failed_checks strings; verdicts (``passed``, ``check.*.passed``) bool;
    every other number float64 (drawn values and grid points included)."""
    import pyarrow as pa

    if column in ("run", "n_steps"):
        return pa.int64()
    if column in ("error", "failed_checks"):
        return pa.string()
    present = [v for v in values if v is not None]
    if (present and all(isinstance(v, bool) for v in present)) or (not present and column.endswith("passed")):
        return pa.bool_()
    return pa.float64()


def write_part(out: Path, rows: list[dict], journal_end: int, known: dict[str, None]) -> Path:
    """Write ``rows`` (journal order) as the next part of ``out/runs.parquet``, beside and renamed into
    place, so a part is whole or absent. Its columns are ``known`` (the columns of the parts before,
    in order; updated here) and the rows' new ones, null where a row lacks them. Its metadata says up
    to which byte of the journal the parts hold the rows, and where each column first appears
    ((run, position in that run's row), to order the table's columns as the rows sorted by run would)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = out / PARTS
    folder.mkdir(exist_ok=True)
    order: dict[str, list[int]] = {}
    for r in rows:
        for k, c in enumerate(r):
            if c not in order or r["run"] < order[c][0]:
                order[c] = [int(r["run"]), k]
    known.update(dict.fromkeys(order))
    arrays = {c: [r.get(c) for r in rows] for c in known}
    table = pa.table({c: pa.array(v, type=_arrow_type(c, v)) for c, v in arrays.items()})
    table = table.replace_schema_metadata({META: json.dumps({"journal_end": journal_end, "order": order})})
    parts = part_paths(out)
    path = folder / f"part-{int(parts[-1].stem.split('-')[1]) + 1 if parts else 0:05d}.parquet"
    tmp = folder / f".{path.name}.tmp"  # hidden: a folder reader (pyarrow, pandas) skips it if left by a kill
    pq.write_table(table, str(tmp))
    os.replace(tmp, path)
    return path


def sync_parts(out: Path) -> None:
    """Bring ``out/runs.parquet`` up to the journal: the journal's rows after the last part's
    ``journal_end`` (runs journaled by a client killed before it wrote their part, or by a version
    without parts) become parts, PART_ROWS at a time. Parts that claim more than the journal holds
    (another journal) are removed and written again from the journal."""
    path = out / JOURNAL
    size = path.stat().st_size if path.exists() else 0
    parts = part_paths(out)
    end = _part_meta(parts[-1])["journal_end"] if parts else 0
    if end > size:
        shutil.rmtree(out / PARTS)
        parts, end = [], 0
    if end == size:
        return
    known = known_columns(parts)
    rows: list[dict] = []
    with open(path, "rb") as f:
        f.seek(end)
        for line in f:
            if not line.endswith(b"\n"):
                break
            end += len(line)
            rows.append(json.loads(line)["row"])
            if len(rows) == PART_ROWS:
                write_part(out, rows, end, known)
                rows = []
    if rows:
        write_part(out, rows, end, known)


def known_columns(parts: list[Path]) -> dict[str, None]:
    """The columns of the last part (each part holds those of the parts before it)."""
    import pyarrow.parquet as pq

    return dict.fromkeys(pq.read_schema(parts[-1]).names) if parts else {}


class Parts:
    """The rows of journaled runs, written to ``out/runs.parquet`` a part at a time: every PART_ROWS rows,
    after PART_SECONDS, and on ``close`` (the end, Ctrl-C, SIGTERM)."""

    def __init__(self, out: Path):
        self.out, self.rows, self.end, self.since = out, [], 0, 0.0
        self.known = known_columns(part_paths(out))

    def add(self, row: dict, journal_end: int) -> None:
        import time

        if not self.rows:
            self.since = time.monotonic()
        self.rows.append(row)
        self.end = journal_end
        if len(self.rows) >= PART_ROWS or time.monotonic() - self.since >= PART_SECONDS:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            rows, self.rows = self.rows, []
            write_part(self.out, rows, self.end, self.known)


def table_schema(parts: list[Path], paths: list[str]):
    """The sorted table's schema from the parts' own: each column's type promoted over the parts
    (int64 with float64 is float64; a column missing or all-null in a part takes the others' type);
    columns ordered run, the design's paths, passed, error, then as they first appear over the
    rows sorted by run."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schemas = [pq.read_schema(p) for p in parts]
    unified = pa.unify_schemas([s.remove_metadata() for s in schemas], promote_options="permissive")
    first: dict[str, tuple[int, int]] = {}
    for s in schemas:
        for c, key in json.loads(s.metadata[META])["order"].items():
            first[c] = min(first.get(c, tuple(key)), tuple(key))
    head = ["run", *paths, "passed", "error"]
    rest = sorted((c for c in first if c not in head), key=lambda c: first[c])
    fields = []
    for c in head + rest:
        t = unified.field(c).type if c in unified.names else None
        if t is None or pa.types.is_null(t):
            t = {"run": pa.int64(), "passed": pa.bool_(), "error": pa.string()}.get(c, pa.float64())
        fields.append(pa.field(c, t))
    return pa.schema(fields)


def build_table(out: Path, stem: str, paths: list[str]) -> tuple[Path, Path]:
    """``stem.parquet`` and ``stem.csv`` from the parts of ``out/runs.parquet``: one row per run (the
    last journaled row of a run rerun), sorted by run, written CHUNK_RUNS runs at a time (a row group
    each), so the build holds one chunk's rows and two integers per run, never the whole table.
    Each file is written beside and renamed into place."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    parts = part_paths(out)
    schema = (
        table_schema(parts, paths)
        if parts
        else pa.schema(
            [("run", pa.int64()), *((p, pa.float64()) for p in paths), ("passed", pa.bool_()), ("error", pa.string())]
        )
    )
    # which row of each run wins: the last one journaled (parts in journal order), as (part, row) -> True
    runs = [pq.read_table(p, columns=["run"]).column("run").to_numpy() for p in parts]
    top = max((int(r.max()) for r in runs if r.size), default=-1)
    last = np.full(top + 1, -1, dtype=np.int64)
    offset = 0
    for r in runs:
        np.maximum.at(last, r, np.arange(offset, offset + r.size))
        offset += r.size
    spans, offset = [], 0
    for r in runs:
        keep = last[r] == np.arange(offset, offset + r.size)
        spans.append((int(r.min()) if r.size else 0, int(r.max()) if r.size else -1, keep))
        offset += r.size
    del runs, last
    parquet, text = out / f"{stem}.parquet", out / f"{stem}.csv"
    with (
        pq.ParquetWriter(str(parquet) + ".tmp", schema) as writer,
        open(str(text) + ".tmp", "w", newline="", encoding="utf-8") as f,
    ):
        w = csv.writer(f)
        w.writerow(schema.names)
        for lo in range(0, top + 1, CHUNK_RUNS):
            hi = lo + CHUNK_RUNS
            pieces = []
            for part, (rmin, rmax, keep) in zip(parts, spans):
                if rmax < lo or rmin >= hi:
                    continue
                t = pq.read_table(part)
                run = t.column("run")
                mask = pc.and_(pa.array(keep), pc.and_(pc.greater_equal(run, lo), pc.less(run, hi)))
                t = t.filter(mask)
                pieces.append(
                    pa.table(
                        [
                            t.column(c).cast(f.type) if c in t.column_names else pa.nulls(len(t), f.type)
                            for c, f in zip(schema.names, schema)
                        ],
                        schema=schema,
                    )
                )
            if not pieces:
                continue
            chunk = pa.concat_tables(pieces).sort_by("run")
            del pieces
            writer.write_table(chunk, row_group_size=CHUNK_RUNS)
            for batch in chunk.to_batches(max_chunksize=256):
                columns = [batch.column(k).to_pylist() for k in range(batch.num_columns)]
                w.writerows([_cell(v) for v in row] for row in zip(*columns))
        if top < 0:
            writer.write_table(schema.empty_table())
    os.replace(str(parquet) + ".tmp", parquet)
    os.replace(str(text) + ".tmp", text)
    return parquet, text
