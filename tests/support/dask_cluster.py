"""A real dask.distributed cluster on loopback for tests: an external ``dask scheduler`` and
``dask worker`` processes (as a user starts them), on free ports, with their local directories and
Dask config in the test's tmp dir, ended by the test (their own process group each)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

from tests.support.paths import ROOT


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dask_env(tmp: Path, pythonpath: str | None = str(ROOT)) -> dict:
    """The environment of a scheduler, worker or client process: Dask's config and temporary
    folders in ``tmp``; PYTHONPATH (None: removed)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_") and k != "PYTHONPATH"}
    env["DASK_CONFIG"] = str(tmp / "dask-config")
    env["DASK_TEMPORARY_DIRECTORY"] = str(tmp / "dask-tmp")
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    return env


class Cluster:
    """A scheduler at ``address`` and the workers started with ``add_worker``."""

    def __init__(self, tmp: Path):
        self.tmp, self.workers = tmp, []
        (tmp / "dask-tmp").mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.address = f"tcp://127.0.0.1:{self.port}"
        self.scheduler = self.spawn(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dashboard-address",
                ":0",
            ],
            dask_env(tmp),
        )
        wait_listening(self.port, self.scheduler)

    def spawn(self, cmd: list[str], env: dict, cwd: Path | None = None) -> subprocess.Popen:
        log = open(self.tmp / f"dask-{len(self.workers)}-{time.monotonic_ns()}.log", "w")
        return subprocess.Popen(
            cmd, env=env, cwd=cwd or self.tmp, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def add_worker(self, env: dict | None = None, python: tuple[str, ...] = (sys.executable,)) -> subprocess.Popen:
        """A single-threaded worker (no nanny: a process that ends stays ended)."""
        args = ["-m", "distributed.cli.dask_worker", self.address, "--nthreads", "1", "--no-nanny"]
        args += ["--dashboard-address", ":0", "--local-directory", str(self.tmp / "dask-tmp")]
        w = self.spawn([*python, *args], env or dask_env(self.tmp))
        self.workers.append(w)
        return w

    def wait_workers(self, n: int, deadline_s: float = 180) -> None:
        """Wait (on the scheduler's state) until ``n`` workers have joined."""
        from distributed import Client

        with Client(self.address, timeout=deadline_s) as client:
            client.wait_for_workers(n, timeout=deadline_s)

    def kill_scheduler(self) -> None:
        end(self.scheduler)

    def close(self) -> None:
        for p in (*self.workers, self.scheduler):
            end(p)


def end(p: subprocess.Popen) -> None:
    """SIGKILL the process group of ``p`` (started in its own session) and reap it."""
    if p.poll() is None:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait(timeout=60)


def wait_listening(port: int, proc: subprocess.Popen, deadline_s: float = 120) -> None:
    """Wait (on state) until something accepts connections on ``port``."""
    end_at = time.monotonic() + deadline_s
    while time.monotonic() < end_at:
        assert proc.poll() is None, f"the scheduler exited with {proc.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on port {port} after {deadline_s} s")


def python_without_mbsfmu(tmp: Path) -> tuple[tuple[str, ...], dict]:
    """(command, env) of a Python with this one's installed packages (dask, numpy...) but no
    mbsfmu: ``-S`` skips the site hooks (.pth files, where an editable install of mbsfmu hooks in),
    PYTHONPATH gives back the site-packages folders themselves: this interpreter's, and those of
    the base Python that a venv made with --system-site-packages also reads."""
    folders = [sysconfig.get_paths()[k] for k in ("purelib", "platlib")]
    folders += [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    site = os.pathsep.join(dict.fromkeys(folders))
    return (sys.executable, "-S"), dask_env(tmp, site)


def mbsfmu_copy(tmp: Path, version: str) -> Path:
    """A copy of this checkout's mbsfmu whose pyproject.toml says ``version``: the folder to put
    on PYTHONPATH."""
    root = tmp / f"mbsfmu-{version}"
    shutil.copytree(ROOT / "mbsfmu", root / "mbsfmu", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    import re

    text = re.sub(r'^version\s*=\s*"[^"]+"', f'version = "{version}"', text, count=1, flags=re.M)
    (root / "pyproject.toml").write_text(text, encoding="utf-8")
    return root
