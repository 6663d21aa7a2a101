"""Input schedules u(t) for scenarios: constant, step, pulse, ramp, sine, piecewise-linear
tables and CSV files (read into a table). Each is a pure function of time [s]; the runner samples
it at the start of every communication step and holds it (zero-order hold)."""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import brief
from ..files import open_regular

KINDS = {
    "constant": ("value",),
    "step": ("t0", "value", "before"),
    "pulse": ("t0", "t1", "value"),
    "ramp": ("t0", "t1", "start", "end"),
    "sine": ("amplitude", "frequency", "phase", "offset"),
    "table": ("t", "value"),
    "csv": ("file", "time", "value"),
}
REQUIRED = {
    "constant": ("value",),
    "step": ("t0", "value"),
    "pulse": ("t0", "t1", "value"),
    "ramp": ("t0", "t1", "end"),
    "sine": ("amplitude", "frequency"),
    "table": ("t", "value"),
    "csv": ("file", "value"),
}


@dataclass(frozen=True)
class Schedule:
    """u(t) of one input; ``params`` as in the scenario file (SI units, frequency in Hz,
    phase in rad)."""

    kind: str
    params: dict

    def __call__(self, t: float) -> float:
        p = self.params
        if self.kind == "constant":
            return p["value"]
        if self.kind == "step":
            return p["value"] if t >= p["t0"] else p.get("before", 0.0)
        if self.kind == "pulse":
            return p["value"] if p["t0"] <= t < p["t1"] else 0.0
        if self.kind == "ramp":
            start = p.get("start", 0.0)
            s = min(max((t - p["t0"]) / (p["t1"] - p["t0"]), 0.0), 1.0)
            return start + s * (p["end"] - start)
        if self.kind == "sine":
            return p.get("offset", 0.0) + p["amplitude"] * math.sin(
                2 * math.pi * p["frequency"] * t + p.get("phase", 0.0)
            )
        return float(np.interp(t, p["t"], p["value"]))


def parse_schedule(r, raw, at, base: Path = Path(".")) -> Schedule | None:
    """A number (constant) or {type: kind, ...}; problems go to the reader r. A csv schedule
    {type: csv, file, time: column (default "time"), value: column} reads a piecewise-linear table
    from ``file`` (relative to ``base``)."""
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        return Schedule("constant", {"value": r.number(raw, at)})
    kind = raw.get("type") if isinstance(raw, dict) else None
    if not isinstance(kind, str) or kind not in KINDS:
        r.problem(
            at,
            f"expected a number or a schedule {{type: {'|'.join(KINDS)}, ...}}"
            + (f", got type {brief(kind)}" if kind is not None else ""),
        )
        return None
    kind = raw["type"]
    m = r.mapping(raw, at, ("type",) + KINDS[kind], required=REQUIRED[kind])
    if kind == "csv":
        return _csv_table(r, m, at, base)
    params = {}
    for key in KINDS[kind]:
        if key not in m:
            continue
        if kind == "table":
            vals = m[key]
            if not isinstance(vals, list) or len(vals) < 1:
                r.problem(at + (key,), "expected a non-empty list of numbers")
                return None
            params[key] = [r.number(v, at + (key, k)) for k, v in enumerate(vals)]
        else:
            params[key] = r.number(m[key], at + (key,))
    if kind == "table" and "t" in params and "value" in params:
        if len(params["t"]) != len(params["value"]):
            r.problem(at + ("value",), f"table has {len(params['t'])} times but {len(params['value'])} values")
        elif np.any(np.diff(params["t"]) <= 0):
            r.problem(at + ("t",), "table times must increase strictly")
    if kind in ("pulse", "ramp") and "t0" in params and "t1" in params and params["t1"] <= params["t0"]:
        r.problem(at + ("t1",), f"t1 = {params['t1']} must be after t0 = {params['t0']}")
    return Schedule(kind, params)


def _csv_table(r, m: dict, at: tuple, base: Path) -> Schedule | None:
    """A table schedule from two columns of a CSV file with a header row."""
    texts = {key: m.get(key, default) for key, default in (("file", ""), ("time", "time"), ("value", ""))}
    for key, val in texts.items():
        if not isinstance(val, str):
            r.problem(at + (key,), f"expected text, got {brief(val)}")
    if not all(isinstance(v, str) for v in texts.values()):
        return None
    path, tcol, vcol = base / texts["file"], texts["time"], texts["value"]
    try:
        with open_regular(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        r.problem(at + ("file",), f"cannot read input file {str(path)!r}: {e}")
        return None
    missing = [c for c in (tcol, vcol) if not rows or c not in rows[0]]
    if missing:
        r.problem(
            at,
            f"input file {str(path)!r} has no column(s) {', '.join(map(repr, missing))}"
            + (f"; columns: {', '.join(rows[0])}" if rows else " (no data rows)"),
        )
        return None
    t, v = [], []
    for k, row in enumerate(rows, start=2):
        try:
            t.append(float(row[tcol]))
            v.append(float(row[vcol]))
        except (TypeError, ValueError):
            r.problem(at + ("file",), f"{path}:{k}: {row[tcol]!r}, {row[vcol]!r} are not numbers")
            return None
    if not all(map(math.isfinite, t + v)) or np.any(np.diff(t) <= 0):
        r.problem(at + ("file",), f"{path}: times must be finite and strictly increasing, values finite")
        return None
    return Schedule("table", {"t": t, "value": v})
