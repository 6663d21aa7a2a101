"""argparse types shared by the command line's subcommands (mbsfmu/cli.py and the packages'
command.py modules), so that each option reads and refuses its values the same way everywhere."""

from __future__ import annotations

import argparse
import math


def positive_time(text: str) -> float:
    """A positive, finite time [s] (e.g. --duration, --run-timeout)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a time in seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive, finite time [s], got {text}")
    return value


def positive_count(text: str) -> int:
    """A whole number >= 1 (e.g. derive's --max-nv, --max-series)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text}")
    return value


FLOATING_BASE_HELP = (
    "a URDF model (.urdf, or an overlay as with its floating_base: true): its root link on a free joint "
    "root_joint instead of fixed to the world"
)  # info, run (the scenario's model) and build-fmu

__all__ = ["FLOATING_BASE_HELP", "positive_count", "positive_time"]
