"""Where the public ``example-robot-data`` package (a test dependency) keeps its robots' URDFs."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path


def robots_dir() -> Path | None:
    """Its ``robots`` folder, or None when the package is not installed."""
    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError:
        return None
    path = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
    return path if path.is_dir() else None
