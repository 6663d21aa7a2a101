"""tests/support/run_folder.py: the folders a test run's xdist workers share, and one build of each
file in them whichever worker asks first."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support.paths import MODELS, ROOT
from tests.support.run_folder import build_once, model_key, run_folder

LOCKS = Path("/proc/locks")
# a process that asks build_once for PATH; its build writes MARK.started, waits for MARK.go (so
# the test holds it mid-build), logs its name to LOG and writes the file; the process prints the
# path it got and the file's text
ASKER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from tests.support.run_folder import build_once

    path, mark, log, name = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4]

    def build(folder):
        (mark.parent / (mark.name + ".started")).touch()
        while not (mark.parent / (mark.name + ".go")).exists():
            time.sleep(0.01)
        with open(log, "a") as f:
            f.write(name + "\\n")
        out = folder / path.name
        out.write_text("built by " + name)
        return out

    got = build_once(path, build)
    print(got, got.read_text())
    """
)


def _ask(path, mark, log, name) -> subprocess.Popen:
    args = [sys.executable, "-c", ASKER, str(path), str(mark), str(log), name]
    return subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _waits_on_a_lock(pid: int) -> bool:
    """Whether process ``pid`` is blocked in flock (Linux: a "->" entry of /proc/locks)."""
    return any(f.split()[:2] == ["->", "FLOCK"] and f.split()[4] == str(pid) for f in _proc_locks())


def _proc_locks() -> list[str]:
    return [line.split(":", 1)[1] for line in LOCKS.read_text().splitlines()]


def _wait_for(condition, proc: subprocess.Popen) -> None:
    """Until condition() (the state the test waits on), failing if ``proc`` exits first."""
    while not condition():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)


@pytest.mark.integration
@pytest.mark.skipif(not LOCKS.exists(), reason="needs Linux's /proc/locks to see a process wait on a lock")
def test_a_file_asked_for_by_two_processes_is_built_once(tmp_path):
    """The second process asking while the first builds waits for it and gets its file: one
    build, both see the whole file (without the lock the second one builds too)."""
    path, log = tmp_path / "shared" / "thing.fmu", tmp_path / "builds.log"
    (tmp_path / "second.go").touch()  # were the second one to build, nothing would hold it back
    procs = [_ask(path, tmp_path / "first", log, "first")]
    try:
        _wait_for((tmp_path / "first.started").exists, procs[0])
        procs.append(_ask(path, tmp_path / "second", log, "second"))
        _wait_for(lambda: _waits_on_a_lock(procs[1].pid), procs[1])  # blocked, not building
    except BaseException:  # no process left waiting for first.go
        for proc in procs:
            proc.kill()
        raise
    (tmp_path / "first.go").touch()
    first, second = procs
    outs = [p.communicate(timeout=120) for p in (first, second)]
    assert [p.returncode for p in (first, second)] == [0, 0], outs
    assert log.read_text() == "first\n"
    assert [out for out, _ in outs] == [f"{path} built by first\n"] * 2
    assert path.read_text() == "built by first"


def test_a_failed_build_leaves_nothing_and_the_next_call_builds(tmp_path):
    path = tmp_path / "thing.txt"

    def broken(folder):
        (folder / path.name).write_text("half")
        raise RuntimeError("compiler failed")

    with pytest.raises(RuntimeError, match="compiler failed"):
        build_once(path, broken)
    assert not path.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["thing.txt.lock"]  # the private folder is gone

    def build(folder):
        (folder / path.name).write_text("whole")
        return folder / path.name

    assert build_once(path, build) == path and path.read_text() == "whole"
    assert build_once(path, broken) == path  # built: not built again


def test_run_folder_is_the_runs_not_the_workers(tmp_path, monkeypatch):
    """Under xdist (PYTEST_XDIST_WORKER set) the folder is beside the worker's own base temp
    folder (<run>/gw1), so every worker gets the same one; without it, inside the session's."""

    class Factory:  # a TempPathFactory whose base temp folder is a worker's
        def getbasetemp(self):
            return tmp_path / "gw1"

    (tmp_path / "gw1").mkdir()
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    assert run_folder(Factory(), "shared") == tmp_path / "gw1" / "shared"
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    assert run_folder(Factory(), "shared") == tmp_path / "shared"
    assert (tmp_path / "shared").is_dir()


def test_two_tests_models_of_one_name_are_two_builds(tmp_path):
    """A model file of a test's own (tmp_path/gripper.yaml) is keyed by its path, so another test's
    gripper (a URDF of the same stem, with other options) is not served its FMU; a bundled model
    by its name, as the FMU file names always were."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a, b = model_key(tmp_path / "a" / "gripper.yaml"), model_key(tmp_path / "b" / "gripper.urdf")
    assert a != b and a.startswith("gripper-") and b.startswith("gripper-")
    assert model_key(tmp_path / "a" / "gripper.yaml") == a
    assert model_key(MODELS / "scara.yaml") == "scara" and model_key(MODELS / "urdf_arm7.urdf") == "urdf_arm7"
