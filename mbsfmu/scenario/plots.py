"""PNG plots of a run: every joint's state, grouped (``joint_states.png``), and what each
conservation check bounds against its bound (``conservation.png``).

Joint groups: angles of revolute joints [rad], offsets of prismatic joints [m], rates of both,
wheel (and other spinning joint) rates [rad/s] instead of their angles (a reaction wheel's
angle reaches ~1e4 rad and would flatten every other curve), free-base position [m], attitude
quaternions [-] and base rates. Each panel holds at most PER_PANEL curves with distinct colours
and its legend outside the data; a figure holds at most PANELS_PER_PAGE panels, more go to
``joint_states_2.png``, ... Non-finite values are left out (gaps) and huge finite ones (a
blow-up reaching 1e151) plot as they are: axis limits come from finite data only.

Large models: a group of more than ENVELOPE_ABOVE curves (a 10,000-link chain has 10,000 joint
angles) is one panel instead of hundreds: the band between the smallest and largest value at each
time, the median, and the HIGHLIGHT joints of widest range drawn and named; more than
JOINTS_LISTED spherical or free joints are grouped by kind first. So the number of panels, and the
plotting time, no longer grow with the number of joints, and a person can read the page.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

TINY = 1e-300  # floor for log axes: an exactly conserved quantity plots at the bottom, not as a gap
PER_PANEL = 10  # curves per panel (tab10: ten distinct colours)
PANELS_PER_PAGE = 8  # panels per PNG
SPIN_RAD = 4 * np.pi  # a revolute joint turning more than this over the run plots its rate only
ENVELOPE_ABOVE = 40  # a group with more curves is drawn as one envelope panel
HIGHLIGHT = 3  # joints of widest range drawn and named in an envelope panel
JOINTS_LISTED = 20  # more spherical/free joints than this are grouped by kind


def joint_kinds(model) -> dict[str, str]:
    """{joint name: "revolute" | "prismatic" | "wheel" | "spherical" | "free" | ...} of a Model."""
    from ..engine import joints

    names = {v: k for k, v in joints.JOINT_TYPES.items()}
    out = {name: names.get(int(model.tree.jtype[i]), "other") for i, name in enumerate(model.joint_names, start=1)}
    out.update({w: "wheel" for w in model.wheels})
    return out


def panel_groups(traj, kinds: dict[str, str] | None) -> list[tuple[str, str, list[str]]]:
    """(panel title, y label, columns) in display order."""

    def joint_of(col: str) -> str:
        name = col.split(".", 1)[1]
        return name.rsplit("[", 1)[0] if name.endswith("]") else name

    q_cols = [c for c in traj if c.startswith("q.")]
    qd_cols = [c for c in traj if c.startswith("qd.")]
    kinds = dict(kinds or {})
    for c in q_cols:  # without a model: by the data (multi-DoF by [k])
        j = joint_of(c)
        kinds.setdefault(j, "multi" if c.endswith("]") else "1dof")
    spinning = set()
    for c in q_cols:
        j = joint_of(c)
        if kinds[j] in ("wheel", "revolute", "1dof") and not c.endswith("]"):
            x = traj[c][np.isfinite(traj[c])]
            if kinds[j] == "wheel" or (x.size and np.ptp(x) > SPIN_RAD):
                spinning.add(j)
    groups = [
        (
            "joint angles",
            "q [rad]",
            [c for c in q_cols if kinds[joint_of(c)] == "revolute" and joint_of(c) not in spinning],
        ),
        ("joint offsets", "q [m]", [c for c in q_cols if kinds[joint_of(c)] == "prismatic"]),
        (
            "joint coordinates",
            "q [rad or m]",
            [c for c in q_cols if kinds[joint_of(c)] == "1dof" and joint_of(c) not in spinning],
        ),
        (
            "joint rates",
            "qd [rad/s]",
            [c for c in qd_cols if kinds[joint_of(c)] == "revolute" and joint_of(c) not in spinning],
        ),
        ("joint rates", "qd [m/s]", [c for c in qd_cols if kinds[joint_of(c)] == "prismatic"]),
        (
            "joint rates",
            "qd [rad/s or m/s]",
            [c for c in qd_cols if kinds[joint_of(c)] == "1dof" and joint_of(c) not in spinning],
        ),
        (
            "wheel and spinning joint rates (angles omitted: they grow without bound)",
            "qd [rad/s]",
            [c for c in qd_cols if joint_of(c) in spinning],
        ),
    ]
    multi = list(dict.fromkeys(joint_of(c) for c in q_cols if kinds[joint_of(c)] in ("free", "spherical", "multi")))
    if len(multi) > JOINTS_LISTED:  # grouped by kind: quaternions with quaternions, rates with rates
        for kind in ("free", "spherical", "multi"):
            js = {j for j in multi if kinds[j] == kind}
            if js:
                groups += [
                    (f"{kind} joints: coordinates", "q", [c for c in q_cols if joint_of(c) in js]),
                    (f"{kind} joints: rates", "qd", [c for c in qd_cols if joint_of(c) in js]),
                ]
        multi = []
    for j in multi:
        qs = [c for c in q_cols if joint_of(c) == j]
        vs = [c for c in qd_cols if joint_of(c) == j]
        if kinds[j] == "free":
            groups += [
                (f"{j}: base position", "q [m]", qs[:3]),
                (f"{j}: attitude quaternion (w, x, y, z)", "q [-]", qs[3:]),
                (f"{j}: angular velocity", "qd [rad/s]", vs[:3]),
                (f"{j}: linear velocity", "qd [m/s]", vs[3:]),
            ]
        elif kinds[j] == "spherical":
            groups += [(f"{j}: quaternion (w, x, y, z)", "q [-]", qs), (f"{j}: angular velocity", "qd [rad/s]", vs)]
        else:
            groups += [(f"{j}: coordinates", "q", qs), (f"{j}: rates", "qd", vs)]
    panels = []
    for title, label, cols in groups:
        if len(cols) > ENVELOPE_ABOVE:
            panels.append((f"{title}: {len(cols)} curves, min-max band and median", label, cols))
            continue
        for k in range(0, len(cols), PER_PANEL):
            part = f" ({k // PER_PANEL + 1}/{-(-len(cols) // PER_PANEL)})" if len(cols) > PER_PANEL else ""
            panels.append((title + part, label, cols[k : k + PER_PANEL]))
    return panels


def _finite(y: np.ndarray) -> np.ndarray:
    return np.where(np.isfinite(y), y, np.nan)


def _set_ylim(ax, ys: list[np.ndarray], log: bool = False) -> None:
    """Limits from the finite data (matplotlib's autoscale fails on ranges near 1e308)."""
    vals = np.concatenate([y[np.isfinite(y)] for y in ys] or [np.zeros(0)])
    if log:
        vals = vals[vals > 0]
    if not vals.size:
        return
    lo, hi = float(vals.min()), float(vals.max())
    if log:
        hi = min(hi * 3, 1e290)  # beyond, matplotlib's log ticks overflow
        ax.set_ylim(max(lo / 3, hi * 1e-30, TINY), hi)  # at most 30 decades: a readable axis
    else:
        pad = 0.05 * (hi - lo) if np.isfinite(hi - lo) and hi > lo else max(abs(hi) * 0.05, 1e-12)
        if np.isfinite(lo - pad) and np.isfinite(hi + pad):
            ax.set_ylim(lo - pad, hi + pad)


def plot_run(
    traj, out: Path, title: str, kinds: dict[str, str] | None = None, checks: dict | None = None
) -> list[Path]:
    """Write ``joint_states.png`` (and ``joint_states_<n>.png`` pages) and ``conservation.png``
    into ``out``; return their paths. kinds: ``joint_kinds(model)`` (without it, joints are
    grouped by their data); checks: {name: (series (T,) or None, report entry)} of the
    scenario's conservation checks (``conservation_report(..., series=...)``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = traj.time
    paths = []
    panels = panel_groups(traj, kinds)
    colours = plt.get_cmap("tab10").colors
    for page in range(max(1, -(-len(panels) // PANELS_PER_PAGE))):
        chunk = panels[page * PANELS_PER_PAGE : (page + 1) * PANELS_PER_PAGE]
        fig, axes = plt.subplots(
            max(1, len(chunk)), 1, figsize=(11, 1.0 + 2.1 * max(1, len(chunk))), sharex=True, squeeze=False
        )
        for ax, (ptitle, label, cols) in zip(axes[:, 0], chunk):
            if len(cols) > PER_PANEL:
                ys = _plot_envelope(ax, t, traj, cols, colours)
            else:
                ys = [_finite(traj[c]) for c in cols]
                for k, (c, y) in enumerate(zip(cols, ys)):
                    ax.plot(t, y, color=colours[k % len(colours)], label=c.split(".", 1)[1], lw=1.2)
            _set_ylim(ax, ys)
            ax.set_title(ptitle, fontsize=9, loc="left")
            ax.set_ylabel(label, fontsize=8)
            ax.grid(True, alpha=0.3)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        if not chunk:
            axes[0, 0].text(0.5, 0.5, "no joint columns", ha="center", va="center", transform=axes[0, 0].transAxes)
        axes[-1, 0].set_xlabel("t [s]")
        fig.suptitle(f"{title}: joint states" + (f" (page {page + 1})" if len(panels) > PANELS_PER_PAGE else ""))
        fig.tight_layout()
        paths.append(out / ("joint_states.png" if page == 0 else f"joint_states_{page + 1}.png"))
        fig.savefig(paths[-1], dpi=100)
        plt.close(fig)
    paths.append(_plot_conservation(plt, traj, out, title, checks))
    return paths


def _plot_envelope(ax, t, traj, cols: list[str], colours) -> list[np.ndarray]:
    """Many curves as one band: min and max over the columns at each time, the median, and the
    HIGHLIGHT columns of widest finite range; returns what was drawn (for the y limits)."""
    Y = _finite(traj.stack(cols))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN rows (a blown-up run) give NaN, drawn as gaps
        lo, hi, med = np.nanmin(Y, axis=1), np.nanmax(Y, axis=1), np.nanmedian(Y, axis=1)
        span = np.nanmax(Y, axis=0) - np.nanmin(Y, axis=0)
    ax.fill_between(t, lo, hi, color="0.8", label=f"min..max of {len(cols)}")
    ax.plot(t, med, color="0.3", lw=1.0, label="median")
    ranked = np.argsort(np.where(np.isfinite(span), span, -np.inf))[::-1][:HIGHLIGHT]
    for k, j in enumerate(ranked):
        ax.plot(t, Y[:, j], color=colours[k % len(colours)], lw=1.2, label=cols[j].split(".", 1)[1])
    return [lo, hi]


def _plot_conservation(plt, traj, out: Path, title: str, checks: dict | None) -> Path:
    """One log panel per check: the per-row value it compares with its bound, the bound (dashed),
    the maximum marked, FAIL in red. Without checks: the engine's relative drifts."""
    t = traj.time
    path = out / "conservation.png"
    items = list((checks or {}).items())
    if not items:
        items = [(name, (series, None)) for name, series in _deviations(traj).items()]
    if not items:
        fig, ax = plt.subplots(figsize=(11, 2))
        ax.text(0.5, 0.5, "no checks and no engine columns", ha="center", va="center", transform=ax.transAxes)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return path
    fig, axes = plt.subplots(len(items), 1, figsize=(11, 1.2 + 2.0 * len(items)), sharex=True, squeeze=False)
    for ax, (name, (series, entry)) in zip(axes[:, 0], items):
        if series is None:
            ax.text(0.5, 0.5, "no per-row series (see report.json)", ha="center", va="center", transform=ax.transAxes)
            y = np.zeros(0)
        else:
            y = np.asarray(series, dtype=float)
            shown = np.where(np.isfinite(y), np.clip(y, TINY, 1e290), np.nan)
            ax.semilogy(t, shown, color="tab:blue", lw=1.2, label="per row")
        if entry is None:
            ax.set_title(f"{name} (no check: engine values)", fontsize=9, loc="left")
            _set_ylim(ax, [y], log=True)
        else:
            bound, passed, on = entry["bound"], entry["passed"], entry["bound_on"][4:]
            ax.axhline(max(bound, TINY), color="tab:red", ls="--", lw=1.0, label=f"bound {bound:.3g}")
            if series is not None and np.isfinite(y).any():
                k = int(np.nanargmax(np.where(np.isfinite(y), y, -np.inf)))
                ax.plot(
                    t[k], np.clip(y[k], TINY, 1e290), "o", color="tab:red" if not passed else "tab:green", label="max"
                )
            non_finite = series is not None and not np.isfinite(y).all()
            verdict = "PASS" if passed else "FAIL"
            ax.set_title(
                f"{name}: {entry['quantity']}, {on} <= {bound:.3g}: {verdict}"
                + (" (non-finite values)" if non_finite else ""),
                fontsize=9,
                loc="left",
                color="black" if passed else "tab:red",
            )
            ax.set_ylabel(
                f"{on} [{entry['unit']}]" if on == "abs" and not entry["unit"].startswith("(") else on, fontsize=8
            )
            _set_ylim(ax, [y, np.array([max(bound, TINY)])], log=True)
            if not passed:
                for side in ax.spines.values():
                    side.set_edgecolor("tab:red")
                    side.set_linewidth(2)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    axes[-1, 0].set_xlabel("t [s]")
    fig.suptitle(f"{title}: what each check bounds" if checks else f"{title}: engine drifts (no checks)")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _vec(traj, name: str) -> np.ndarray:
    return np.column_stack([traj[f"engine.{name}[{k}]"] for k in (1, 2, 3)])


def _deviations(traj) -> dict[str, np.ndarray]:
    """Without checks: relative drifts of the engine's invariants (H_sys relative to its largest
    magnitude in the run, the energy balance relative to max(KE, |E0|)), |p_sys| relative to
    the momenta's scale; P_sys only without gravity (with gravity it changes by M g t)."""
    if "engine.E" not in traj:
        return {}
    H = _vec(traj, "H_sys")
    E = traj["engine.E"] - traj["engine.W_in"] - traj["engine.W_diss"]
    with np.errstate(all="ignore"):
        scaleE = max(np.nanmax(np.abs(traj["engine.KE"])), np.abs(E[0]), TINY)
        scaleH = max(np.nanmax(np.linalg.norm(H, axis=1)), TINY)
        P = _vec(traj, "P_sys")
        scaleP = max(np.nanmax(np.linalg.norm(P, axis=1)), TINY)
        out = {
            "|p_sys| / max|P_sys|": np.linalg.norm(_vec(traj, "p_sys"), axis=1) / scaleP,
            "|H_sys - H0| / max|H_sys|": np.linalg.norm(H - H[0], axis=1) / scaleH,
            "|E - W - E0| / max(KE, |E0|)": np.abs(E - E[0]) / scaleE,
        }
        if all(f"g[{k}]" in traj for k in (1, 2, 3)) and not any(traj[f"g[{k}]"][0] for k in (1, 2, 3)):
            out["|P_sys - P0| / max|P_sys|"] = np.linalg.norm(P - P[0], axis=1) / scaleP
    return out
