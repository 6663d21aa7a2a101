"""Campaign statistics: per numeric column of the table (drawn values, every check's error,
final states, chosen outputs) the count of finite values and their min, 5th, 50th and 95th
percentile (numpy's default linear interpolation between order statistics), max and mean; and the
time envelopes (median and 5-95 % band) of the chosen outputs across runs."""

from __future__ import annotations

import math

import numpy as np

PERCENTILES = (5.0, 50.0, 95.0)
PREFIXES = ("check.", "final.", "output.")


def stat_columns(columns: list[str], paths: list[str]) -> list[str]:
    """The columns summarised: the design's paths, then checks' errors, final states, outputs."""
    return list(paths) + [c for c in columns if c.startswith(PREFIXES) and not c.endswith(".passed")]


def statistics(rows: list[dict], columns: list[str]) -> list[dict]:
    """One entry per column: n (finite values over all rows, failed runs included where they
    have the value), min, p5, p50, p95, max, mean (NaN when n = 0)."""
    out = []
    for c in columns:
        x = np.array(
            [
                r[c]
                for r in rows
                if isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) and math.isfinite(r[c])
            ],
            dtype=float,
        )
        if x.size:
            p = np.percentile(x, PERCENTILES)
            e = {
                "column": c,
                "n": int(x.size),
                "min": float(x.min()),
                "p5": float(p[0]),
                "p50": float(p[1]),
                "p95": float(p[2]),
                "max": float(x.max()),
                "mean": float(x.mean()),
            }
        else:
            e = {"column": c, "n": 0, **{k: math.nan for k in ("min", "p5", "p50", "p95", "max", "mean")}}
        out.append(e)
    return out


def envelope(series: list[dict], column: str, t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(p5, p50, p95) of ``column`` over the runs' series at times ``t`` (linear interpolation in
    each run; a run that stopped early counts only up to its last time); NaN where no run has data."""
    Y = np.full((len(series), len(t)), np.nan)
    for k, s in enumerate(series):
        if column in s and len(s["time"]) > 1:
            ts, ys = np.asarray(s["time"]), np.asarray(s[column])
            inside = t <= ts[-1]
            Y[k, inside] = np.interp(t[inside], ts, ys)
    ok = np.any(np.isfinite(Y), axis=0)
    P = np.full((3, len(t)), np.nan)
    if ok.any():
        P[:, ok] = np.nanpercentile(Y[:, ok], PERCENTILES, axis=0)
    return P[0], P[1], P[2]


def statistics_text(stats: list[dict]) -> str:
    """The statistics as a fixed-width table."""
    lines = [f"{'column':<44} {'n':>6} {'min':>11} {'p5':>11} {'p50':>11} {'p95':>11} {'max':>11}"]
    for e in stats:
        lines.append(
            f"{e['column'][-44:]:<44} {e['n']:>6} "
            + " ".join(f"{e[k]:>11.4g}" for k in ("min", "p5", "p50", "p95", "max"))
        )
    return "\n".join(lines)
