"""A regular (non-editable) install carries every non-Python file the packages read at run time: the C
core's and the FMU's sources and headers (build-fmu compiles them on the user's machine) and the ROS
interface definitions. pyproject's package-data globs are checked against the files git tracks, so a
new header folder (csrc/fmi3 was one) cannot be left out of the wheel while the editable install of
the tests still finds it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
# package -> its folder, as [tool.setuptools.packages.find] lays them out
PACKAGE_DIRS = {"mbsfmu": ROOT / "mbsfmu", "mbsfmu_ros": ROOT / "ros_node" / "mbsfmu_ros"}


def tracked_data_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "mbsfmu", "ros_node/mbsfmu_ros"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [ROOT / f for f in out.split() if not f.endswith(".py")]


def package_of(path: Path) -> tuple[str, Path]:
    """The dotted package holding path (the deepest folder with an __init__.py) and its folder."""
    for name, top in PACKAGE_DIRS.items():
        if top in path.parents:
            folder = path.parent
            while folder != top and not (folder / "__init__.py").is_file():
                folder = folder.parent
            return ".".join([name, *folder.relative_to(top).parts]), folder
    raise AssertionError(f"{path} is in no package")


def test_every_tracked_data_file_is_package_data():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    missing = []
    for f in tracked_data_files():
        package, folder = package_of(f)
        covered = {p for pattern in globs.get(package, []) for p in folder.glob(pattern)}
        if f not in covered:
            missing.append(f"{f.relative_to(ROOT)} (package {package})")
    assert not missing, "pyproject.toml [tool.setuptools.package-data] leaves these out of a wheel:\n" + "\n".join(
        missing
    )
