"""Hostile inputs: YAML alias bombs in typed fields, devices, FIFOs and
directories given as files. Every case runs in a child process with a wall-clock timeout and an
address-space limit, so a regression (an eager repr of a 43-million-item list, a read of
/dev/zero) fails the test instead of hanging the suite or eating the machine's memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support.hostile_yaml import ANCHORS
from tests.support.paths import MODELS, ROOT, SUPPORT

TIMEOUT_S = 30  # a healthy child needs ~1 s (interpreter start); a regression never ends
MEMORY_BYTES = 2 << 30  # RLIMIT_AS of the child: a bomb expanding in memory hits MemoryError


def _limit() -> None:  # runs in the child before exec
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))


def run_child(code: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        preexec_fn=_limit,
    )


MODEL = """version: 1
bodies:
  - name: b
    parent: world
    joint: {type: revolute, axis: [0, 0, 1]}
    mass: MASS
    inertia: {Ixx: 1, Iyy: 1, Izz: 1}
"""


def _files(tmp: Path) -> dict[str, Path]:
    """Hostile model and scenario files under ``tmp``, by case name."""
    good = tmp / "good.yaml"
    good.write_text(MODEL.replace("MASS", "1.0"))
    out = {"model mass": tmp / "bomb_model.yaml"}
    out["model mass"].write_text(ANCHORS + "\n" + MODEL.replace("MASS", "*a8"))
    scenario = "version: 1\nmodel: good.yaml\nduration: 1\ndt: 0.1\n"
    for case, extra in (
        ("scenario check bound", "checks: {energy_balance: *a8}"),
        ("scenario description", "description: *a8"),
        ("scenario input type", "inputs: {b.tau: {type: *a8}}"),
        ("scenario csv columns", "inputs: {b.tau: {type: csv, file: in.csv, value: *a8}}"),
        ("scenario reference", "references: [{column: q.b, expr: *a8, tol: 1}]"),
        ("scenario integrator", "integrator: {method: *a8}"),
        ("scenario version", "version: *a8\nmodel: good.yaml\nduration: 1\ndt: 0.1"),
    ):
        path = tmp / "scn" / f"{case.replace(' ', '_')}.yaml"
        path.parent.mkdir(exist_ok=True)
        moved = scenario.replace("model: good.yaml", "model: ../good.yaml")
        text = extra if case == "scenario version" else moved + extra
        path.write_text(ANCHORS + "\n" + text + "\n")
        out[case] = path
    return out


def test_alias_bombs_give_errors_in_milliseconds(tmp_path):
    """Each bomb is reported as a bounded error (no repr/str of the expanded value); the scenario
    folder with all of them lists in one go (``mbsfmu list``)."""
    files = _files(tmp_path)
    code = f"""
        import json, time
        from mbsfmu import MbsError, load_model
        from mbsfmu.scenario import build_simulator, load_scenario
        for case, path in {json.dumps({k: str(v) for k, v in files.items()})}.items():
            t0 = time.perf_counter()
            try:
                load_model(path) if case.startswith("model") else build_simulator(load_scenario(path))
                msg = None
            except MbsError as e:
                msg = str(e)
            print(json.dumps({{"case": case, "s": time.perf_counter() - t0, "msg": msg}}), flush=True)
        """
    res = run_child(code, tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    results = [json.loads(line) for line in res.stdout.splitlines()]
    assert [r["case"] for r in results] == list(files)
    for r in results:
        assert r["msg"] is not None, f"{r['case']}: a bomb loaded without an error"
        assert r["s"] < 5.0 and len(r["msg"]) < 5000, r  # ms in practice; 5 s leaves room for a loaded machine
    listing = subprocess.run(
        [sys.executable, "-m", "mbsfmu", "list", str(tmp_path / "scn")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        preexec_fn=_limit,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert listing.returncode == 0, listing.stderr[-3000:]
    assert listing.stdout.count("does not load") == len(files) - 1, listing.stdout


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_devices_fifos_and_directories_are_refused(tmp_path):
    """A model, URDF, trajectory or CSV input that is not a regular file gets a clear error at
    once: /dev/zero is not read without bound, a FIFO without writer does not block open()."""
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    (tmp_path / "good.yaml").write_text(MODEL.replace("MASS", "1.0"))
    scn = tmp_path / "csv_zero.yaml"
    scn.write_text(
        "version: 1\nmodel: good.yaml\nduration: 1\ndt: 0.1\ninputs: {b.tau: {type: csv, file: /dev/zero, value: u}}\n"
    )
    code = f"""
        import json
        from mbsfmu import MbsError, load_model
        from mbsfmu.scenario.spec import load_scenario
        from mbsfmu.trajectory import read_trajectory
        cases = [("model", load_model, "/dev/zero"), ("fifo", load_model, {str(fifo)!r}),
                 ("dir", load_model, {str(tmp_path)!r}), ("urdf", load_model, {str(tmp_path / "d.urdf")!r}),
                 ("trajectory", read_trajectory, "/dev/zero"), ("fifo trajectory", read_trajectory, {str(fifo)!r}),
                 ("scenario fifo", load_scenario, {str(fifo)!r}), ("csv input", load_scenario, {str(scn)!r})]
        for case, fn, path in cases:
            try:
                fn(path)
                msg = None
            except MbsError as e:
                msg = str(e)
            print(json.dumps({{"case": case, "msg": msg}}), flush=True)
        """
    (tmp_path / "d.urdf").mkdir()
    res = run_child(code, tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    got = {r["case"]: r["msg"] for r in map(json.loads, res.stdout.splitlines())}
    expect = {
        "model": "character device",
        "fifo": "FIFO",
        "dir": "directory",
        "urdf": "directory",
        "trajectory": "character device",
        "fifo trajectory": "FIFO",
        "scenario fifo": "FIFO",
        "csv input": "character device",
    }
    for case, word in expect.items():
        assert got[case] is not None and word in got[case] and "not a regular file" in got[case], (case, got[case])


@pytest.mark.slow
@pytest.mark.parametrize(
    "kind, rel",
    [("model", p.relative_to(ROOT)) for p in sorted(MODELS.glob("*.yaml"))]
    + [("scenario", p.relative_to(ROOT)) for p in sorted((ROOT / "scenarios").glob("*.yaml"))],
    ids=str,
)
def test_alias_bomb_at_every_field_of_bundled_files(kind, rel):
    """The bomb at every value of every bundled model and scenario: loads or errors, in bounded
    time and memory (tests/support/hostile_yaml.py prints one line per variant)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    res = subprocess.run(
        [sys.executable, str(SUPPORT / "hostile_yaml.py"), kind, str(ROOT / rel)],
        capture_output=True,
        text=True,
        timeout=600,
        preexec_fn=_limit,
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    results = [json.loads(line) for line in res.stdout.splitlines()]
    assert results, "no variants ran"
    slow = [r for r in results if r["s"] > 5.0 or r["outcome"] == "huge error"]
    assert not slow, slow[:5]
