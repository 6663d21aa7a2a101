"""``campaign.png``: histograms of the drawn values and of each check's error (log10 of the
quantity its bound is on, max_rel or max_abs, with the bound drawn as a dashed line), a scatter of
each drawn value against the outcome (the first check's error, the bound dashed; errored runs,
which have no error value, on a row of their own below), and time envelopes (median, 5-95 % band)
of the chosen outputs over the runs that passed. Runs that completed and failed are red, runs that
errored (raised, timed out, lost their worker) are black; in the scatter each is numbered with its
run index (the first MAX_LABELS of each), so a reader can rerun them (``--rerun``)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .statistics import envelope, errored

MAX_PANELS = 12
MAX_LABELS = 20  # run numbers written in a scatter, per outcome


def _finite(rows: list[dict], column: str, log: bool = False) -> np.ndarray:
    vals = [r.get(column) for r in rows]
    x = np.array(
        [
            v
            for v in vals
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and (not log or v > 0)
        ],
        dtype=float,
    )
    return np.log10(x) if log else x


def plot_campaign(
    out: Path,
    title: str,
    rows: list[dict],
    series: list[dict],
    paths: list[str],
    outputs: list[str],
    bounds: dict | None = None,
) -> Path:
    """Write ``out/campaign.png``; returns its path. bounds: {check: (kind "abs"|"rel", bound)}
    (invariants.parse_bound); a check without one is plotted by max_rel."""
    bounds = bounds or {}
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ok = [r for r in rows if r.get("passed")]
    bad = [r for r in rows if not r.get("passed")]
    failed = [r for r in bad if not errored(r)]
    err = [r for r in bad if errored(r)]
    columns = list(dict.fromkeys(c for r in rows for c in r))
    names = [c[len("check.") : -len(".max_rel")] for c in columns if c.startswith("check.") and c.endswith(".max_rel")]
    checks = [f"check.{n}.max_{bounds.get(n, ('rel', None))[0]}" for n in names]
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
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.6 * ncol, 3.3 * nrow + 0.6), squeeze=False)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    ok_series = [s for r, s in zip(rows, series) if r.get("passed")]
    bad_series = [s for r, s in zip(rows, series) if not r.get("passed")]
    for ax, (kind, col, log) in zip(axes.flat, panels):
        if kind == "hist":
            if log:  # a check's panel: coloured by that check's own verdict, not by the run's (a run that
                # failed a reference passed its engine_agreement, and is blue here)
                key = f"check.{col[len('check.') :].rsplit('.', 1)[0]}.passed"
                groups = ([r for r in rows if r.get(key)], [r for r in rows if not r.get(key)])
                labels = ("passed this check", "failed this check")
            else:
                groups, labels = (ok, failed, err), ("runs passed", "runs failed", "runs errored")
            xs = [_finite(g, col, log) for g in groups]
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
            _scatter(ax, col, outcome, ok, failed, err, bounds)
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
                ax.plot([], [], color="tab:red", lw=0.6, label=f"failed runs ({len(bad_series)})")
            ax.legend(fontsize=7, loc="best")
            ax.set_xlabel("t [s]", fontsize=8)
            ax.set_ylabel(col, fontsize=8)
        else:
            ax.text(0.5, 0.5, "nothing to plot", ha="center", va="center", transform=ax.transAxes)
        ax.tick_params(labelsize=7)
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"{title}: {len(rows)} runs, {len(failed)} failed, {len(err)} errored", fontsize=10)
    fig.tight_layout()
    path = out / "campaign.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _scatter(ax, col: str, outcome: str | None, ok: list, failed: list, err: list, bounds: dict) -> None:
    """Drawn value ``col`` (x) against the outcome ``outcome`` (y: log10 of a check's error; the run
    index without a check); errored runs on a row below the rest; failed and errored runs numbered."""
    ylabel = f"log10 {outcome[len('check.') :]}" if outcome else "run"

    def y_of(r):
        if outcome is None:
            return float(r["run"])
        v = r.get(outcome)
        return math.log10(v) if isinstance(v, (int, float)) and math.isfinite(v) and v > 0 else math.nan

    def xy(group):
        pts = [(r.get(col), y_of(r), r["run"]) for r in group]
        return [(x, y, i) for x, y, i in pts if isinstance(x, (int, float)) and math.isfinite(x)]

    done = xy(ok) + xy(failed)
    ys = [y for _, y, _ in done if math.isfinite(y)]
    floor = (min(ys) - 0.1 * (max(ys) - min(ys) or 1.0)) if ys else 0.0
    for group, colour, marker, label in ((ok, "tab:blue", ".", "passed"), (failed, "tab:red", "o", "failed")):
        pts = [(x, y, i) for x, y, i in xy(group) if math.isfinite(y)]
        ax.scatter(
            [p[0] for p in pts], [p[1] for p in pts], s=8, c=colour, marker=marker, label=f"{label} ({len(group)})"
        )
        if label == "failed":
            for x, y, i in pts[:MAX_LABELS]:
                ax.annotate(str(i), (x, y), fontsize=6, color=colour, xytext=(2, 2), textcoords="offset points")
    pts = xy(err)
    ax.scatter([p[0] for p in pts], [floor] * len(pts), s=14, c="k", marker="x", label=f"errored ({len(err)})")
    for x, _, i in pts[:MAX_LABELS]:
        ax.annotate(str(i), (x, floor), fontsize=6, color="k", xytext=(2, 2), textcoords="offset points")
    if outcome is not None:
        name, _ = outcome[len("check.") :].rsplit(".", 1)
        bound = bounds.get(name, ("rel", None))[1]
        if bound is not None and bound > 0:
            ax.axhline(math.log10(bound), color="k", ls="--", lw=1, label=f"bound {bound:.3g}")
    ax.legend(fontsize=7, loc="best")
    ax.set_xlabel(col, fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
