"""The documentation site (mkdocs.yml, docs/) builds with every warning an error: broken links and
anchors between pages, API objects that no longer exist (mkdocstrings), missing snippets. The
command-line reference names every subcommand and option the parser has."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mbsfmu.cli import build_parser

ROOT = Path(__file__).resolve().parent.parent
# the folders whose comments, docstrings and messages cite docs pages and tests: the package, the ROS
# package (ros_node/: mbsfmu_ros, launch, config, setup.py), the tests, scenarios and benchmarks
SOURCE_FOLDERS = ("mbsfmu", "ros_node", "tests", "scenarios", "benchmarks")


def source_files() -> list[Path]:
    """The files of SOURCE_FOLDERS that can cite (.py, .yaml, .yml, .c, .h, .xml); every folder must
    exist (a moved folder would otherwise leave its citations unchecked)."""
    gone = [f for f in SOURCE_FOLDERS if not (ROOT / f).is_dir()]
    assert not gone, f"folders scanned for citations do not exist: {gone}"
    suffixes = (".py", ".yaml", ".yml", ".c", ".h", ".xml")
    return [p for f in SOURCE_FOLDERS for p in sorted((ROOT / f).rglob("*")) if p.suffix in suffixes and p.is_file()]


@pytest.mark.integration
def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    for page in ("index.html", "reference/api/index.html", "explanation/errata/index.html", "changelog/index.html"):
        assert (site / page).is_file(), page
    api = (site / "reference/api/index.html").read_text(encoding="utf-8")
    assert "forward_dynamics" in api and "Simulator" in api  # rendered from the docstrings
    leaked = [p for p in site.rglob("*.html") if str(ROOT) in p.read_text(encoding="utf-8")]
    assert not leaked, f"build machine path in {leaked[:3]}"


def test_cli_reference_names_every_command_and_option():
    text = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    sub = next(a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction")
    missing = []
    for name, parser in sub.choices.items():
        if f"## mbsfmu {name}\n" not in text:
            missing.append(f"section '## mbsfmu {name}'")
        for action in parser._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help") and f"`{opt}" not in text and f" {opt}" not in text:
                    missing.append(f"mbsfmu {name} {opt}")
    assert not missing, f"docs/reference/cli.md lacks: {missing}"


@pytest.mark.integration
def test_getting_started_example_runs():
    """The Python example of docs/getting-started.md runs as printed (from the repository root)."""
    text = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr
    assert "KE=" in res.stdout and "H_sys=" in res.stdout


def test_docs_pages_cited_in_the_code_exist():
    """Every docs page (docs/<page>.md) that comments, docstrings or messages cite exists."""
    cited = {}
    for path in source_files():
        for ref in re.findall(r"docs/[\w./-]+?\.md", path.read_text(encoding="utf-8", errors="replace")):
            cited.setdefault(ref, path.relative_to(ROOT))
    assert cited, "no docs page cited"
    missing = {ref: str(where) for ref, where in cited.items() if not (ROOT / ref).is_file()}
    assert not missing, missing


def test_test_files_cited_anywhere_exist():
    """Every test file or folder (tests/<path>) that the docs, README, changelog, comments and
    docstrings cite exists: the tests mirror the packages, and a moved test takes its citations along."""
    cited = {}
    texts = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "pyproject.toml", *(ROOT / "docs").rglob("*.md")]
    texts += source_files()
    for path in texts:
        if path.is_file():
            for ref in re.findall(r"\btests/[\w./-]*[\w/]", path.read_text(encoding="utf-8", errors="replace")):
                cited.setdefault(ref.rstrip("/"), path.relative_to(ROOT))
    assert cited, "no test file cited"
    missing = {ref: str(where) for ref, where in cited.items() if not (ROOT / ref).exists()}
    assert not missing, missing


def test_the_test_timings_have_one_source():
    """README.md and docs/getting-started.md gave different wall times for the same test tiers (issue
    37): a line naming a pytest tier's command with a measured time (s or min) is in getting-started
    only; the README links to it."""
    tier = re.compile(r"python -m pytest -q( -m \"not slow[^\"]*\")?`.*\d\s*(s|min)\b")
    holding = {
        str(path.relative_to(ROOT))
        for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
        if path.name != "changelog.md" and any(tier.search(line) for line in path.read_text().splitlines())
    }
    assert holding == {"docs/getting-started.md"}, holding
    assert "(docs/getting-started.md#the-tests)" in (ROOT / "README.md").read_text()
