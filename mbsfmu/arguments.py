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


__all__ = ["positive_time"]
