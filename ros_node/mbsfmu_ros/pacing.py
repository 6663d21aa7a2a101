"""Wall-clock pacing statistics (pure, no rclpy).

The node runs cycles of one publish period P of sim time. Paced at real-time factor r > 0, cycle
k is due at wall time w0 + k P / r (its deadline). For each cycle the node records its lateness
(start - deadline) and its work time (step + publish). A cycle overruns when it ends after the
next cycle's deadline (lateness + work > P / r). When the node falls behind by more than
``MAX_LAG`` seconds it does not try to catch up: it re-anchors the schedule at the current time
(a "slip"; sim time then lags wall time for good, and the real-time factor shows it).
"""

from __future__ import annotations

import math

import numpy as np

MAX_LAG = 0.25  # [s] of wall time behind schedule before the schedule is re-anchored


class PacingStats:
    """Per-report-window statistics of the node's cycles (reset by ``summary(reset=True)``)."""

    def __init__(self):
        self.total_cycles = 0
        self.total_overruns = 0
        self.total_slips = 0
        self._reset_window(math.nan, math.nan)

    def _reset_window(self, wall: float, sim: float) -> None:
        self.lateness: list[float] = []
        self.work: list[float] = []
        self.overruns = 0
        self.slips = 0
        self.wall0, self.sim0 = wall, sim

    def start(self, wall: float, sim: float) -> None:
        """Start a window at wall time [s] and sim time [s]."""
        self._reset_window(wall, sim)

    def record(self, lateness: float, work: float, budget: float | None) -> None:
        """One cycle: lateness [s] behind its deadline (0 when not paced), work time [s], and the
        wall time budget of a cycle P / r [s] (None when not paced: no overrun counted)."""
        self.lateness.append(lateness)
        self.work.append(work)
        self.total_cycles += 1
        if budget is not None and lateness + work > budget:
            self.overruns += 1
            self.total_overruns += 1

    def slip(self) -> None:
        self.slips += 1
        self.total_slips += 1

    def summary(self, wall: float, sim: float, reset: bool = True) -> dict[str, float]:
        """cycles, overruns, overrun_fraction, slips, lateness and work p50/p99/max [s] of the
        window, real_time_factor = sim time / wall time elapsed in it, and the totals."""
        n = len(self.work)
        lat = np.asarray(self.lateness) if n else np.zeros(1)
        wk = np.asarray(self.work) if n else np.zeros(1)
        dw = wall - self.wall0
        rtf = (sim - self.sim0) / dw if dw > 0 and math.isfinite(dw) else math.nan
        out = {
            "cycles": float(n),
            "overruns": float(self.overruns),
            "overrun_fraction": self.overruns / n if n else 0.0,
            "slips": float(self.slips),
            "lateness_p50": float(np.percentile(lat, 50)),
            "lateness_p99": float(np.percentile(lat, 99)),
            "lateness_max": float(lat.max()),
            "work_p50": float(np.percentile(wk, 50)),
            "work_p99": float(np.percentile(wk, 99)),
            "work_max": float(wk.max()),
            "real_time_factor": rtf,
            "total_cycles": float(self.total_cycles),
            "total_overruns": float(self.total_overruns),
            "total_slips": float(self.total_slips),
        }
        if reset:
            self._reset_window(wall, sim)
        return out
