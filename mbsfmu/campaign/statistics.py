"""Campaign statistics a GNC engineer reads:

- the pass rate k/n with its Wilson score interval (Wilson, E. B. (1927), "Probable inference, the
  law of succession, and statistical inference", J. Am. Stat. Assoc. 22(158), 209-212), which,
  unlike the normal approximation p +- z sqrt(p(1-p)/n), stays inside [0, 1] and is not empty at
  k = 0 or k = n; runs that errored (raised, timed out, lost their worker) are counted apart from
  runs that completed and failed a check;
- per numeric column of the table (drawn values, every check's error, final states, chosen
  outputs), for all runs and split by outcome (passed, failed), the count of finite values and
  their min, the 0.135th ("-3 sigma"), 5th, 50th, 95th and 99.865th ("3 sigma") percentiles (the
  one-sided tails of a normal beyond 3 sigma, 1 - Phi(3) = 0.135 %; numpy's default linear
  interpolation between order statistics), max and mean;
- the time envelopes (median and 5-95 % band) of the chosen outputs across runs."""

from __future__ import annotations

import math

import numpy as np

PERCENTILES = (0.135, 5.0, 50.0, 95.0, 99.865)
KEYS = ("p0.135", "p5", "p50", "p95", "p99.865")
PREFIXES = ("check.", "final.", "output.")
OUTCOMES = ("all", "passed", "failed")
Z95 = 1.959963984540054  # the standard normal's 97.5th percentile: a two-sided 95 % interval


def wilson_interval(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval (lo, hi) of a binomial proportion with k successes in n trials:
    (p + z^2/2n -+ z sqrt(p(1-p)/n + z^2/4n^2)) / (1 + z^2/n), p = k/n. (nan, nan) for n = 0."""
    if not (isinstance(k, int) and isinstance(n, int) and 0 <= k <= n):
        raise ValueError(f"wilson_interval: need integers 0 <= k <= n, got k={k!r}, n={n!r}")
    if n == 0:
        return math.nan, math.nan
    p = k / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    d = 1 + z * z / n
    return max(0.0, (centre - half) / d), min(1.0, (centre + half) / d)


def errored(row: dict) -> bool:
    """The run produced no verdict of its own: it raised, timed out or lost its worker (its row has an
    error); a run that completed and failed a check is failed, not errored."""
    return bool(row.get("error"))


def pass_rate(rows: list[dict], z: float = Z95) -> dict:
    """n, passed, failed (completed, a check failed), errored, rate = passed/n and its Wilson
    interval (lo, hi) at ``z`` (default 95 %)."""
    k = sum(bool(r.get("passed")) for r in rows)
    return rate_of(len(rows), k, sum(not r.get("passed") and errored(r) for r in rows), z)


def rate_of(n: int, k: int, n_err: int, z: float = Z95) -> dict:
    """``pass_rate``'s entries from the counts: n runs, k passed, n_err errored."""
    lo, hi = wilson_interval(k, n, z)
    return {
        "n": n,
        "passed": k,
        "failed": n - k - n_err,
        "errored": n_err,
        "rate": k / n if n else math.nan,
        "lo": lo,
        "hi": hi,
        "confidence": math.erf(z / math.sqrt(2)),
    }


def stat_columns(columns: list[str], paths: list[str]) -> list[str]:
    """The columns summarised: the design's paths, then checks' errors, final states, outputs."""
    return list(paths) + [c for c in columns if c.startswith(PREFIXES) and not c.endswith(".passed")]


def _values(rows: list[dict], c: str) -> np.ndarray:
    return np.array(
        [
            r[c]
            for r in rows
            if isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) and math.isfinite(r[c])
        ],
        dtype=float,
    )


def summary(x: np.ndarray) -> dict:
    """n, min, the PERCENTILES (keys KEYS), max, mean of the finite values ``x`` (NaN when empty)."""
    if not x.size:
        return {"n": 0, **{k: math.nan for k in ("min", *KEYS, "max", "mean")}}
    p = np.percentile(x, PERCENTILES)
    return {
        "n": int(x.size),
        "min": float(x.min()),
        **{k: float(v) for k, v in zip(KEYS, p)},
        "max": float(x.max()),
        "mean": float(x.mean()),
    }


def statistics(rows: list[dict], columns: list[str]) -> list[dict]:
    """Per column, one entry per outcome ("all", "passed", "failed": errored runs count as failed
    where they have the value): column, outcome, then ``summary`` of its finite values."""
    groups = {
        "all": rows,
        "passed": [r for r in rows if r.get("passed")],
        "failed": [r for r in rows if not r.get("passed")],
    }
    return [{"column": c, "outcome": o, **summary(_values(groups[o], c))} for c in columns for o in OUTCOMES]


def table_statistics(path, paths: list[str], z: float = Z95) -> tuple[list[dict], dict]:
    """``statistics`` and ``pass_rate`` of the campaign table ``path`` (Parquet, rows sorted by run),
    read a column at a time: ``passed`` and ``error`` first, then each summarised column, so what is
    held is a few arrays of one number per run, never the rows. Equal to the row-wise functions on
    the table's rows (the same values in the same order)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    names = f.schema_arrow.names
    passed = pc.fill_null(f.read(columns=["passed"]).column("passed"), False).to_numpy(zero_copy_only=False)
    error = f.read(columns=["error"]).column("error")
    has_error = pc.fill_null(pc.not_equal(error, ""), False).to_numpy(zero_copy_only=False)
    del error
    n = int(passed.size)
    rate = rate_of(n, int(passed.sum()), int((~passed & has_error).sum()), z)
    stats = []
    for c in stat_columns(names, paths):
        if c not in names:
            x = np.full(n, np.nan)
        else:
            col = f.read(columns=[c]).column(c)
            if pa.types.is_boolean(col.type) or not (
                pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_null(col.type)
            ):
                x = np.full(n, np.nan)  # booleans and text are not summarised (as _values skips them)
            else:
                x = col.cast(pa.float64()).to_numpy(zero_copy_only=False)  # nulls become NaN
            del col
        finite = np.isfinite(x)
        groups = {"all": finite, "passed": finite & passed, "failed": finite & ~passed}
        stats += [{"column": c, "outcome": o, **summary(x[groups[o]])} for o in OUTCOMES]
    return stats, rate


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
        P[:, ok] = np.nanpercentile(Y[:, ok], (5.0, 50.0, 95.0), axis=0)
    return P[0], P[1], P[2]


def pass_rate_text(rate: dict) -> str:
    """ "passed 97 of 100 runs: 97.0 % (95 % Wilson interval 91.5-99.0 %); 2 failed, 1 errored"."""
    if not rate["n"]:
        return "no finished run"
    return (
        f"passed {rate['passed']} of {rate['n']} runs: {100 * rate['rate']:.1f} % "
        f"({100 * rate['confidence']:.0f} % Wilson interval {100 * rate['lo']:.1f}-{100 * rate['hi']:.1f} %); "
        f"{rate['failed']} failed, {rate['errored']} errored"
    )


def statistics_text(stats: list[dict], rate: dict | None = None) -> str:
    """The statistics as a fixed-width table (the "all" rows, and "passed"/"failed" rows of columns
    where some run failed), after the pass-rate line when ``rate`` is given."""
    head = f"{'column':<40} {'runs':<6} {'n':>6} {'min':>10} " + " ".join(f"{k:>10}" for k in (*KEYS, "max"))
    lines = [pass_rate_text(rate)] if rate is not None else []
    lines.append(head)
    failed_any = any(e["outcome"] == "failed" and e["n"] for e in stats)
    for e in stats:
        if e["outcome"] != "all" and not failed_any:
            continue
        lines.append(
            f"{e['column'][-40:]:<40} {e['outcome']:<6} {e['n']:>6} "
            + " ".join(f"{e[k]:>10.4g}" for k in ("min", *KEYS, "max"))
        )
    return "\n".join(lines)
