"""Lint runs as a test (as in ros2/demos): ``ruff check`` and ``ruff format --check`` over the
repository with the configuration in pyproject.toml, so style drift fails the suite, not a review."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args", [["check", "--no-cache", "."], ["format", "--check", "--no-cache", "."]])
def test_ruff_is_clean(args):
    pytest.importorskip("ruff")
    r = subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
