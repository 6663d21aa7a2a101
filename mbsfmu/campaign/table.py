"""The files of a campaign folder DIR, all written by the client:

- ``campaign.json``: what the campaign is (scenario, design, duration, outputs, file hashes);
  ``--resume`` refuses a DIR that holds another campaign; the same campaign without a finished run
  (e.g. its cluster could not start it) starts again with or without ``--resume``.
- ``runs.jsonl``: the journal, one line per finished run (row and output series) appended and
  flushed as each run arrives, so an interrupted or killed campaign keeps every finished run;
  ``--resume`` runs only the missing indices. A line cut by a kill is dropped on reading. The
  output series live only here: the client keeps the rows, and reads back the series the picture
  draws (``journal_series``), so its memory does not grow with each run's series.
- ``<stem>.parquet`` and ``<stem>.csv``: the table, one row per run sorted by run index, columns
  in a fixed order (run, the design's paths, passed, error, then the rest as they first appear in
  run order), so the table does not depend on which worker finished first.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import os
from pathlib import Path

from ..errors import InputError

MANIFEST, JOURNAL = "campaign.json", "runs.jsonl"


def file_hash(path: Path) -> str:
    """SHA-256 of a file's bytes (a changed scenario or model makes a resume refuse)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def open_campaign(out: Path, manifest: dict, resume: bool, ignore: tuple[str, ...] = ()) -> dict[int, dict]:
    """Prepare ``out`` for the campaign ``manifest``; the finished runs {index: row} when
    resuming. InputError if ``out`` holds another campaign (the keys ``ignore`` aside), or a
    campaign with finished runs without --resume (the same campaign without any is started again)."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / MANIFEST
    if path.exists():
        old = json.loads(path.read_text())
        if not resume and old == manifest and not read_journal(out / JOURNAL):
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
        return read_journal(out / JOURNAL)
    if resume and (out / JOURNAL).exists():
        raise InputError(f"--resume: {out} has runs but no {MANIFEST}; cannot tell which campaign they belong to")
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(manifest, indent=2))
    os.replace(tmp, path)
    (out / JOURNAL).unlink(missing_ok=True)
    return {}


def read_journal(path: Path) -> dict[int, dict]:
    """{run index: row} from the journal (the last line of a run rerun wins); a last line cut
    mid-write is dropped and cut off the file, so appending continues on a clean line."""
    if not path.exists():
        return {}
    records, good = {}, 0
    with open(path, "rb") as f:
        for line in f:
            try:
                rec = json.loads(line)
            except ValueError:
                break
            if not line.endswith(b"\n"):
                break
            records[int(rec["row"]["run"])] = rec["row"]
            good += len(line)
    if good != path.stat().st_size:
        with open(path, "r+b") as f:
            f.truncate(good)
    return records


ENVELOPE_RUNS = 1000  # passed runs' series behind the picture's envelopes (the first by run index)
FAILED_CURVES = 100  # failed runs' series drawn as curves


def journal_series(path: Path, rows: list[dict]) -> list[dict]:
    """The output series of ``rows`` (sorted by run) the picture draws, read back from the journal:
    those of the first ENVELOPE_RUNS passed and FAILED_CURVES failed runs by index, {} for the rest
    (so the picture's memory is bounded whatever the number of runs). A run journaled twice (a
    rerun) gives its last series."""
    passed = [r["run"] for r in rows if r.get("passed")][:ENVELOPE_RUNS]
    failed = [r["run"] for r in rows if not r.get("passed")][:FAILED_CURVES]
    wanted = set(passed) | set(failed)
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
    return [found.get(r["run"], {}) for r in rows]


class Journal:
    """Appends one flushed JSON line per finished run."""

    def __init__(self, path: Path):
        self.f = open(path, "a", encoding="utf-8")

    def append(self, record: dict) -> None:
        self.f.write(json.dumps({"row": record["row"], "series": record["series"]}) + "\n")
        self.f.flush()

    def close(self) -> None:
        self.f.close()


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
