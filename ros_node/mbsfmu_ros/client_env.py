"""``python -m mbsfmu_ros env``: what a client shell needs to import the interface packages the node
builds (tf2_msgs, simulation_interfaces; ``interface_packages.py``): builds them if missing, then
prints the ``export PYTHONPATH=...`` line that puts their cache folder first, for
``eval "$(python -m mbsfmu_ros env)"`` (docs/guides/ros2.md, "Clients"). Prints only a comment
where they already import (a sourced ROS 2 installation's own)."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from . import interface_packages


def export_line(directory: Path) -> str:
    """The POSIX shell line that puts ``directory`` first on PYTHONPATH, keeping what was there."""
    return f'export PYTHONPATH={shlex.quote(str(directory))}"${{PYTHONPATH:+:$PYTHONPATH}}"'


def main(argv: list[str] | None = None) -> int:
    """Print the line on stdout (progress and errors on stderr); 0, or 2 when they cannot be built."""
    if interface_packages.importable():
        print("# tf2_msgs and simulation_interfaces already import here: nothing to set")
        return 0
    missing = interface_packages.load(build=True, progress=lambda m: print(m, file=sys.stderr, flush=True))
    if missing:
        print(f"mbsfmu ros env: error: {missing}", file=sys.stderr)
        return 2
    print(export_line(interface_packages.build_dir()))
    return 0
