"""PNG plots of a run: joint states, and momentum, CM and energy deviations on log scales."""
from __future__ import annotations

from pathlib import Path

import numpy as np

TINY = 1e-300   # floor for log axes: an exactly conserved quantity plots at the bottom, not as a gap


def plot_run(traj, out: Path, title: str) -> list[Path]:
    """Write ``joint_states.png`` and ``conservation.png`` into ``out``; return their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = traj.time
    paths = []
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for ax, prefix, unit in ((axes[0], "q.", "q [rad or m]"), (axes[1], "qd.", "qd [rad/s or m/s]")):
        cols = [c for c in traj if c.startswith(prefix)]
        for c in cols[:12]:
            ax.plot(t, traj[c], label=c[len(prefix):])
        ax.set_ylabel(unit)
        ax.grid(True, alpha=0.3)
        if cols:
            ax.legend(fontsize=7, ncol=4, loc="upper right")
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(f"{title}: joint states")
    fig.tight_layout()
    paths.append(out / "joint_states.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(9, 5))
    devs = _deviations(traj)
    for label, dev in devs.items():
        ax.semilogy(t, np.maximum(dev, TINY), label=label)
    ax.set_xlabel("t [s]")
    ax.set_ylabel("deviation")
    top = max((np.nanmax(d) for d in devs.values() if np.isfinite(d).any()), default=1.0)
    ax.set_ylim(1e-17, max(10 * top, 1e-10))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"{title}: momentum, CM and energy (engine values)")
    fig.tight_layout()
    paths.append(out / "conservation.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    return paths


def _vec(traj, name: str) -> np.ndarray:
    return np.column_stack([traj[f"engine.{name}[{k}]"] for k in (1, 2, 3)])


def _deviations(traj) -> dict[str, np.ndarray]:
    """Relative deviations from the initial values of the engine's invariants (H_sys relative to
    its largest magnitude in the run, the energy relative to max(KE, |E0|), with
    the input and damper work taken out), |p_sys| [N s], and the CM's departure from the
    ballistic path R0 + Rdot0 t + g t^2 / 2 [m] when gravity columns exist."""
    t = traj.time - traj.time[0]
    H, P = _vec(traj, "H_sys"), _vec(traj, "P_sys")
    E = traj["engine.E"] - traj["engine.W_in"] - traj["engine.W_diss"]
    scaleE = max(np.abs(traj["engine.KE"]).max(), np.abs(E[0]), TINY)
    scaleH = max(np.linalg.norm(H, axis=1).max(), TINY)
    out = {"|p_sys| [N s]": np.linalg.norm(_vec(traj, "p_sys"), axis=1),
           "|H_sys - H0| / max|H|": np.linalg.norm(H - H[0], axis=1) / scaleH,
           "|P_sys - P0| [N s]": np.linalg.norm(P - P[0], axis=1),
           "|E - W - E0| / scale": np.abs(E - E[0]) / scaleE}
    if all(f"g[{k}]" in traj for k in (1, 2, 3)):
        g = np.array([traj[f"g[{k}]"][0] for k in (1, 2, 3)])
        R, Rdot = _vec(traj, "R"), _vec(traj, "Rdot")
        ballistic = R[0] + np.outer(t, Rdot[0]) + 0.5 * np.outer(t * t, g)
        out["|R - ballistic| [m]"] = np.linalg.norm(R - ballistic, axis=1)
    return out
