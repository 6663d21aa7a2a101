"""Every command block of README.md and docs/ runs as written (issue 20, item 5), so a documented
example cannot rot again.

A command block is a fenced block without a language or marked bash, sh, shell or console; a block
of output or of another language is marked ``text`` (or its language) in the source. A block that
cannot run in a test says so, with the reason, in an HTML comment on the line before its fence:
``<!-- doc-test: skip (why) -->``. Every other block is run, line by line, from the repository
root, each ``mbsfmu`` command as ``python -m mbsfmu`` with three rewrites that keep the suite short
and its files in a temporary folder: an output folder (``-o``/``--out``) goes under tmp_path,
``run`` gets ``--quick`` (the scenario's short duration), and a campaign runs at most 3 runs of
at most 2 s. A block whose command fails (exit code != 0) fails this test with its output.

A ``python`` block runs the way a user runs it (issue 37, defect 6): saved as a script file and run
by ``python example.py`` in a new process, from a folder where ``scenarios`` and ``tests`` are the
repository's (the paths the examples name) and its outputs stay; a campaign's ``runs=N`` is capped
at 3 as for the commands. A Python fragment (the continuation of another block, a file the reader
supplies) is marked skip with the reason. A script that fails, or writes a traceback, fails the test."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

COMMAND_BLOCK = {"", "bash", "sh", "shell", "console"}
PYTHON_BLOCK = {"python"}
SLOW_PYTHON = ("workers=",)  # blocks starting a Dask cluster (~5 s): the slow tier
SKIP = re.compile(r"<!--\s*doc-test:\s*skip\s*\((.+)\)\s*-->")
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)


def fenced(languages: set[str]):
    """(file, line, text, skip reason or None) of every fenced block in one of ``languages``."""
    out = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = path.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            if m.group(1).strip() not in languages:
                continue
            line = text[: m.start()].count("\n") + 1
            before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            skip = SKIP.search(before)
            out.append((path.relative_to(ROOT), line, m.group(2), skip.group(1) if skip else None))
    return out


def blocks():
    """(file, line, commands, skip reason or None) of every command block."""
    out = []
    for path, line, text, skip in fenced(COMMAND_BLOCK):
        commands = [c.split("  #")[0].strip() for c in text.splitlines()]
        out.append((path, line, [c for c in commands if c], skip))
    return out


BLOCKS = blocks()
PYTHON = fenced(PYTHON_BLOCK)


def rewrite(command: str, tmp_path) -> list[str]:
    """The argv of a documented mbsfmu command, its outputs under tmp_path, its duration short."""
    argv = shlex.split(command)
    assert argv[0] == "mbsfmu", f"a command block runs mbsfmu commands (mark others text or skip): {command!r}"
    args = argv[1:]
    for k, a in enumerate(args[:-1]):
        if a in ("-o", "--out"):
            args[k + 1] = str(tmp_path / args[k + 1].replace("/", "_"))
        if a == "--runs":
            args[k + 1] = str(min(int(args[k + 1]), 3))
    if args and args[0] == "run" and "--quick" not in args and "--duration" not in args:
        args.append("--quick")
    if args and args[0] in ("montecarlo", "sweep"):
        if "--duration" in args:
            k = args.index("--duration")
            args[k + 1] = str(min(float(args[k + 1]), 2.0))
        else:
            args += ["--duration", "2"]
    return [sys.executable, "-m", "mbsfmu", *args, *(["--no-progress"] if args[0] in ("run", "cosim") else [])]


def test_the_blocks_are_found_and_every_skip_says_why():
    assert len(BLOCKS) >= 8, BLOCKS  # README's set-up block, getting started, the guides
    assert all(why is None or why.strip() for *_, why in BLOCKS)
    assert any(why is None for *_, why in BLOCKS)  # some run


@pytest.mark.integration
@pytest.mark.parametrize("path, line, commands, skip", BLOCKS, ids=[f"{p}:{n}" for p, n, *_ in BLOCKS])
def test_documented_commands_run_as_written(tmp_path, path, line, commands, skip):
    if skip:
        pytest.skip(f"{path}:{line}: {skip}")
    for command in commands:
        res = subprocess.run(
            rewrite(command, tmp_path), cwd=ROOT, capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL
        )
        assert res.returncode == 0, f"{path}:{line}: {command}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"


def test_the_python_blocks_are_found_and_every_skip_says_why():
    assert len(PYTHON) >= 5, PYTHON  # README's example, the first script, campaigns, linearization, ...
    assert all(why is None or why.strip() for *_, why in PYTHON)
    assert sum(why is None for *_, why in PYTHON) >= 4  # most run


def script(text: str) -> str:
    """A python block as the script the test runs: as written, but a campaign's runs capped at 3."""
    return re.sub(r"\bruns=(\d[\d_]*)", lambda m: f"runs={min(int(m[1]), 3)}", text)


@pytest.mark.integration
@pytest.mark.parametrize(
    "path, line, text, skip",
    [
        pytest.param(*block, marks=[pytest.mark.slow] if any(s in block[2] for s in SLOW_PYTHON) else [])
        for block in PYTHON
    ],
    ids=[f"{p}:{n}" for p, n, *_ in PYTHON],
)
def test_documented_python_runs_as_a_script(tmp_path, path, line, text, skip):
    if skip:
        pytest.skip(f"{path}:{line}: {skip}")
    for name in ("scenarios", "tests"):  # the paths the examples name, relative to the repository root
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    (tmp_path / "example.py").write_text(script(text), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    res = subprocess.run(
        [sys.executable, "example.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        stdin=subprocess.DEVNULL,
    )
    assert res.returncode == 0 and "Traceback" not in res.stderr, (
        f"{path}:{line}: python example.py\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    )
