"""The independent checker: momentum and energy recomputed from a trajectory's body records alone
(MBS Momentum Testing Procedures 1-4, MBS Energy Testing Procedures 1-4) and the conservation
report (checks.py). It imports numpy, the standard library and the base modules (errors, files,
trajectory) only, never the engine or the simulator: tests/test_architecture.py holds it to that.
``import mbsfmu.checker`` loads neither the engine nor scipy."""

from __future__ import annotations

from .checks import CHECKS, CheckError, conservation_report, energy, momentum, run_check, summary_table

__all__ = ["CHECKS", "CheckError", "conservation_report", "energy", "momentum", "run_check", "summary_table"]
