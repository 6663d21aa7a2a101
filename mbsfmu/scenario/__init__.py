"""Scenario files: the spec and its parser, the runner and its report (run.py), expressions for
references and finals (expressions.py), plots (plots.py) and MCAP recording (mcap.py)."""
from __future__ import annotations

from .run import Scenario, ScenarioError, build_simulator, load_scenario, run_scenario

__all__ = ["Scenario", "ScenarioError", "build_simulator", "load_scenario", "run_scenario"]
