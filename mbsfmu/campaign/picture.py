"""``campaign.png``: histograms of the drawn values and of each check's error (log10 of the
quantity its bound is on, max_rel or max_abs, with the bound drawn as a dashed line), a scatter of
each drawn value against the outcome (the first check's error, the bound dashed; errored runs,
which have no error value, on a row of their own below), and time envelopes (median, 5-95 % band)
of the chosen outputs over the runs that passed. Runs that completed and failed are red, runs that
errored (raised, timed out, lost their worker) are black; in the scatter each is numbered with its
run index (the first MAX_LABELS of each), so a reader can rerun them (``--rerun``).

It is drawn from columns (``Columns``: one array per column, one entry per run, sorted by run), read
from the campaign table a column at a time (``table_columns``) or built from rows
(``rows_columns``), so what it holds is a few numbers per run, never the rows; a scatter draws at most
SCATTER_POINTS runs of each outcome (evenly spaced by run index), its legend giving both counts."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .statistics import envelope

MAX_PANELS = 12
MAX_LABELS = 20  # run numbers written in a scatter, per outcome
SCATTER_POINTS = 10_000  # runs drawn in a scatter, per outcome (all when fewer)

Columns = dict  # {"run": int64, "passed": bool, "errored": bool, drawn value or check error: float (NaN: none),
# "check.<name>.passed": bool}, each (runs,), sorted by run


def drawn_names(names: list[str], paths: list[str]) -> list[str]:
    """The columns of a table (``names``) the picture reads: the design's paths and each check's
    errors and verdict."""
    checks = [c for c in names if c.startswith("check.") and c.endswith((".max_rel", ".max_abs", ".passed"))]
    return [c for c in dict.fromkeys([*paths, *checks]) if c in names or c in paths]


def rows_columns(rows: list[dict], paths: list[str]) -> Columns:
    """``Columns`` of ``rows`` (sorted by run): a cell a row lacks, or that is not a finite number, is
    NaN (a verdict: False)."""
    names = drawn_names(list(dict.fromkeys(c for r in rows for c in r)), paths)
    cols: Columns = {
        "run": np.array([int(r["run"]) for r in rows], dtype=np.int64),
        "passed": np.array([bool(r.get("passed")) for r in rows], dtype=bool),
        "errored": np.array([bool(r.get("error")) for r in rows], dtype=bool),
    }
    for c in names:
        if c.endswith(".passed"):
            cols[c] = np.array([bool(r.get(c)) for r in rows], dtype=bool)
        else:
            cols[c] = np.array([_number(r.get(c)) for r in rows], dtype=float)
    return cols


def _number(v) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def table_columns(path: Path, paths: list[str]) -> Columns:
    """``Columns`` of the campaign table ``path`` (Parquet, sorted by run), read a column at a time;
    nulls as in ``rows_columns``."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    f = pq.ParquetFile(path)
    names = f.schema_arrow.names

    def read(c):
        return f.read(columns=[c]).column(c)

    error = read("error")
    cols: Columns = {
        "run": read("run").to_numpy(),
        "passed": pc.fill_null(read("passed"), False).to_numpy(zero_copy_only=False),
        "errored": pc.fill_null(pc.not_equal(error, ""), False).to_numpy(zero_copy_only=False),
    }
    del error
    n = cols["run"].size
    for c in drawn_names(names, paths):
        col = read(c) if c in names else pa.nulls(n, pa.float64())
        if c.endswith(".passed"):
            cols[c] = pc.fill_null(col.cast(pa.bool_()), False).to_numpy(zero_copy_only=False)
        elif pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_null(col.type):
            cols[c] = col.cast(pa.float64()).to_numpy(zero_copy_only=False)  # nulls become NaN
        else:
            cols[c] = np.full(n, np.nan)  # text or verdicts are not drawn as values
    return cols


def _finite(x: np.ndarray, log: bool = False) -> np.ndarray:
    x = x[np.isfinite(x) & (x > 0)] if log else x[np.isfinite(x)]
    return np.log10(x) if log else x


def plot_campaign(
    out: Path,
    title: str,
    cols: Columns,
    series: dict[int, dict],
    paths: list[str],
    outputs: list[str],
    bounds: dict | None = None,
) -> Path:
    """Write ``out/campaign.png``; returns its path. cols: ``Columns``; series: {run: output series}
    of the runs drawn as envelopes and curves (``table.series_runs``); bounds: {check: (kind
    "abs"|"rel", bound)} (invariants.parse_bound); a check without one is plotted by max_rel."""
    bounds = bounds or {}
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    run, passed, err = cols["run"], cols["passed"], cols["errored"]
    ok, failed, err = passed, ~passed & ~err, ~passed & err
    names = [c[len("check.") : -len(".max_rel")] for c in cols if c.startswith("check.") and c.endswith(".max_rel")]
    checks = [f"check.{n}.max_{bounds.get(n, ('rel', None))[0]}" for n in names]
    checks = [c for c in checks if c in cols]
    outcome = checks[0] if checks else None
    panels = (
        [("hist", p, False) for p in paths]
        + [("scatter", p, False) for p in paths]
        + [("hist", c, True) for c in checks]
        + [("env", o, False) for o in outputs]
    )
    panels = panels[:MAX_PANELS] or [("none", "", False)]
    ncol = min(3, len(panels))
    nrow = math.ceil(len(panels) / ncol)
    fig = Figure(figsize=(4.6 * ncol, 3.3 * nrow + 0.6))
    FigureCanvasAgg(fig)
    axes = fig.subplots(nrow, ncol, squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    ok_series = [series.get(int(i), {}) for i in run[passed] if int(i) in series]
    bad_series = [series.get(int(i), {}) for i in run[~passed] if int(i) in series]
    for ax, (kind, col, log) in zip(axes.flat, panels):
        if kind == "hist":
            if log:  # a check's panel: coloured by that check's own verdict, not by the run's (a run that
                # failed a reference passed its engine_agreement, and is blue here)
                key = f"check.{col[len('check.') :].rsplit('.', 1)[0]}.passed"
                verdict = cols.get(key, np.zeros(run.size, dtype=bool))
                groups = (verdict, ~verdict)
                labels = ("passed this check", "failed this check")
            else:
                groups, labels = (ok, failed, err), ("runs passed", "runs failed", "runs errored")
            x = cols.get(col, np.full(run.size, np.nan))
            xs = [_finite(x[g], log) for g in groups]
            allx = np.concatenate(xs)
            if allx.size:
                lo, hi = float(allx.min()), float(allx.max())
                bins = np.linspace(lo, hi, 21) if hi > lo else np.array([lo - 0.5, lo + 0.5])
                ax.hist(
                    xs,
                    bins=bins,
                    stacked=True,
                    color=["tab:blue", "tab:red", "k"][: len(xs)],
                    label=[f"{lab} ({x.size})" for lab, x in zip(labels, xs)],
                )
                ax.legend(fontsize=7, loc="upper right")
            else:
                ax.text(0.5, 0.5, "no finite values", ha="center", va="center", transform=ax.transAxes)
            del xs, allx
            if log:
                name, on = col[len("check.") :].rsplit(".", 1)
                kind, bound = bounds.get(name, ("rel", None))
                if bound is not None and bound > 0:
                    ax.axvline(np.log10(bound), color="k", ls="--", lw=1, label=f"bound {bound:.3g}")
                    ax.legend(fontsize=7, loc="upper right")
                ax.set_xlabel(f"log10 {on} {name}", fontsize=8)
            else:
                ax.set_xlabel(col, fontsize=8)
            ax.set_ylabel("runs", fontsize=8)
        elif kind == "scatter":
            scatter(ax, col, outcome, cols, bounds)
        elif kind == "env":
            times = [s["time"] for s in ok_series + bad_series if len(s.get("time", [])) > 1]
            t = np.linspace(0.0, max(ts[-1] for ts in times), 200) if times else np.zeros(0)
            for s in bad_series:
                if col in s:
                    ax.plot(s["time"], s[col], color="tab:red", lw=0.6, alpha=0.7)
            if t.size and ok_series:
                p5, p50, p95 = envelope(ok_series, col, t)
                ax.fill_between(t, p5, p95, color="tab:blue", alpha=0.25, label="5-95 %")
                ax.plot(t, p50, color="tab:blue", lw=1.2, label="median")
            if bad_series:
                ax.plot([], [], color="tab:red", lw=0.6, label=f"failed runs ({int((~passed).sum())})")
            ax.legend(fontsize=7, loc="best")
            ax.set_xlabel("t [s]", fontsize=8)
            ax.set_ylabel(col, fontsize=8)
        else:
            ax.text(0.5, 0.5, "nothing to plot", ha="center", va="center", transform=ax.transAxes)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"{title}: {run.size} runs, {int(failed.sum())} failed, {int(err.sum())} errored", fontsize=10)
    fig.tight_layout()
    path = out / "campaign.png"
    fig.savefig(path, dpi=90)
    return path


def drawn(mask: np.ndarray) -> np.ndarray:
    """The indices of the runs of ``mask`` a scatter draws: all when at most SCATTER_POINTS, else
    SCATTER_POINTS of them evenly spaced by run index (the first and the last included)."""
    idx = np.flatnonzero(mask)
    if idx.size <= SCATTER_POINTS:
        return idx
    return idx[np.round(np.linspace(0, idx.size - 1, SCATTER_POINTS)).astype(np.int64)]


def scatter(ax, col: str, outcome: str | None, cols: Columns, bounds: dict) -> None:
    """Drawn value ``col`` (x) against the outcome ``outcome`` (y: log10 of a check's error; the run
    index without a check); errored runs on a row below the rest; failed and errored runs numbered.
    Each outcome's legend entry gives its number of runs (and how many are drawn, when fewer)."""
    ylabel = f"log10 {outcome[len('check.') :]}" if outcome else "run"
    run, passed, err = cols["run"], cols["passed"], cols["errored"]
    n = run.size
    x_all = cols.get(col, np.full(n, np.nan))
    if outcome is None:
        y_all = run.astype(float)
    else:
        v = cols.get(outcome, np.full(n, np.nan))
        with np.errstate(divide="ignore", invalid="ignore"):
            y_all = np.where(np.isfinite(v) & (v > 0), np.log10(np.where(v > 0, v, 1.0)), np.nan)
    has_x = np.isfinite(x_all)
    done = has_x & np.isfinite(y_all) & ~err
    ys = y_all[done]
    floor = (float(ys.min()) - 0.1 * (float(ys.max() - ys.min()) or 1.0)) if ys.size else 0.0
    groups = (
        (passed, "tab:blue", ".", "passed"),
        (~passed & ~err, "tab:red", "o", "failed"),
    )
    for mask, colour, marker, label in groups:
        k = drawn(mask & has_x & np.isfinite(y_all))
        count = int(mask.sum())
        ax.scatter(x_all[k], y_all[k], s=8, c=colour, marker=marker, label=_legend(label, count, k.size, mask, has_x))
        if label == "failed":
            for j in k[:MAX_LABELS]:
                ax.annotate(
                    str(int(run[j])),
                    (x_all[j], y_all[j]),
                    fontsize=6,
                    color=colour,
                    xytext=(2, 2),
                    textcoords="offset points",
                )
    k = drawn(err & has_x)
    ax.scatter(
        x_all[k],
        np.full(k.size, floor),
        s=14,
        c="k",
        marker="x",
        label=_legend("errored", int(err.sum()), k.size, err, has_x),
    )
    for j in k[:MAX_LABELS]:
        ax.annotate(
            str(int(run[j])), (x_all[j], floor), fontsize=6, color="k", xytext=(2, 2), textcoords="offset points"
        )
    if outcome is not None:
        name, _ = outcome[len("check.") :].rsplit(".", 1)
        bound = bounds.get(name, ("rel", None))[1]
        if bound is not None and bound > 0:
            ax.axhline(math.log10(bound), color="k", ls="--", lw=1, label=f"bound {bound:.3g}")
    ax.legend(fontsize=7, loc="best")
    ax.set_xlabel(col, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)


def _legend(label: str, count: int, shown: int, mask: np.ndarray, has_x: np.ndarray) -> str:
    """ "passed (N)", or "passed (N, K drawn)" when the scatter samples them."""
    plottable = int((mask & has_x).sum())
    return f"{label} ({count})" if shown >= plottable else f"{label} ({count}, {shown} drawn)"
