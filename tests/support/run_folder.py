"""One test run's shared folders and the files built into them once (no tests, no fixtures).

Under pytest-xdist (``-n 2``) each worker process has its own base temporary folder
(``<run>/gw0``, ``<run>/gw1``); ``run_folder`` names a folder of the run itself (``<run>/<name>``),
so the workers share what is built there: an FMU or a host compiled for one worker is the other's
too. ``build_once`` builds each file once per run whichever worker asks first, under an exclusive
``flock`` (the other worker waits for it), in a private folder then renamed into place, so no
process ever sees a half-written file. Without xdist both reduce to the session folder and a
plain build."""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.paths import MODELS


def run_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """The folder ``name`` shared by every process of this test run (created if missing)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # a worker's base temp is <run's base temp>/<worker id>
        base = base.parent
    folder = base / name
    folder.mkdir(exist_ok=True)
    return folder


def build_once(path: Path, build: Callable[[Path], Path]) -> Path:
    """``path``, made on the first call of any process of the run: ``build(folder)`` writes the
    file or folder inside the private ``folder`` and returns it, then it is renamed to ``path``.
    Held meanwhile: an exclusive flock on ``<path>.lock`` (a second caller waits, then finds the
    file). A build that raises leaves nothing at ``path``."""
    if path.exists():  # only ever appears whole (the rename below)
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # released when the file closes
        if not path.exists():
            with tempfile.TemporaryDirectory(dir=path.parent, prefix=f".{path.name}-") as tmp:
                os.replace(build(Path(tmp)), path)
    return path


def model_key(model: Path) -> str:
    """The name of what is built from the model file ``model`` in a run's folder: a bundled
    model's stem; another file's stem and a digest of its full path (two tests' own gripper.yaml,
    each in its tmp_path, are two models: keyed by the stem alone, the first build served both)."""
    model = Path(model)
    if model.parent == MODELS:
        return model.stem
    return f"{model.stem}-{hashlib.sha256(str(model.resolve()).encode()).hexdigest()[:12]}"
