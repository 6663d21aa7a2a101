"""The progress bar of a run on stderr (``mbsfmu run``, ``mbsfmu cosim``)."""

from __future__ import annotations

import sys

ETA_AFTER_PCT = 5  # the progress bar extrapolates the time left from 5 % of the run on


class Progress:
    """A progress bar on stderr, shown once a run has taken longer than a second."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.shown, self.last = total, enabled, False, -1
        self.ref: tuple[int, float] | None = None  # (step, elapsed) where the pace is measured from

    def update(self, k: int, elapsed: float) -> None:
        if self.ref is None and k >= 1:  # after the first step: imports, compilation, first step size
            self.ref = (k, elapsed)
        if not self.enabled or elapsed < 1.0:
            return
        pct = int(100 * (k + 1) / (self.total + 1))
        if pct == self.last:
            return
        self.last, self.shown = pct, True
        # the time left is extrapolated only once 5 % of the run has shown its pace, from the pace
        # since the first step (the start-up before it says nothing about the rest)
        left = "time left: after 5 %"
        if pct >= ETA_AFTER_PCT and self.ref is not None and k > self.ref[0]:
            pace = (elapsed - self.ref[1]) / (k - self.ref[0])  # wall time per step [s]
            left = f"~{pace * (self.total - k):5.1f} s left"
        bar = "#" * (pct // 4) + "-" * (25 - pct // 4)
        end = "" if sys.stderr.isatty() else "\n"
        if sys.stderr.isatty() or pct % 10 == 0:
            print(f"\r[{bar}] {pct:3d}%  {elapsed:6.1f} s elapsed, {left}", end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown and sys.stderr.isatty():
            print(file=sys.stderr)
