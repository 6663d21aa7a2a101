"""``campaign.png``: histograms of the drawn values and of each check's error (log10 of the
quantity its bound is on, max_rel or max_abs, with the bound drawn as a dashed line), and time
envelopes (median, 5-95 % band) of the chosen outputs over the runs that passed; failed runs are
stacked in red on the histograms and drawn as thin red curves over the envelopes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .statistics import envelope

MAX_PANELS = 12


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
    columns = list(dict.fromkeys(c for r in rows for c in r))
    names = [c[len("check.") : -len(".max_rel")] for c in columns if c.startswith("check.") and c.endswith(".max_rel")]
    checks = [f"check.{n}.max_{bounds.get(n, ('rel', None))[0]}" for n in names]
    panels = (
        [("hist", p, False) for p in paths] + [("hist", c, True) for c in checks] + [("env", o, False) for o in outputs]
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
                groups, labels = (ok, bad), ("runs passed", "runs failed")
            xs = [_finite(groups[0], col, log), _finite(groups[1], col, log)]
            allx = np.concatenate(xs)
            if allx.size:
                lo, hi = float(allx.min()), float(allx.max())
                bins = np.linspace(lo, hi, 21) if hi > lo else np.array([lo - 0.5, lo + 0.5])
                ax.hist(
                    xs,
                    bins=bins,
                    stacked=True,
                    color=["tab:blue", "tab:red"],
                    label=[f"{labels[0]} ({xs[0].size})", f"{labels[1]} ({xs[1].size})"],
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
    fig.suptitle(f"{title}: {len(rows)} runs, {len(bad)} failed", fontsize=10)
    fig.tight_layout()
    path = out / "campaign.png"
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
