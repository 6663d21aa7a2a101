"""Scenario files: the spec and its parser (spec.py), the output time grid (grid.py), the runner
(run.py), its report (report.py) and progress bar (progress.py), expressions for references and
finals (expressions.py), plots (plots.py) and MCAP recording (mcap.py)."""

from __future__ import annotations

from .run import build_simulator, run_scenario
from .spec import Scenario, ScenarioError, load_scenario

__all__ = ["Scenario", "ScenarioError", "build_simulator", "load_scenario", "run_scenario"]
