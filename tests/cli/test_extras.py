"""Every optional feature without its extra: one line that names the extra and the pip command,
exit 2, no traceback (issue 20, item 4). Each test hides the extra's top module from a fresh
interpreter (``sys.modules[name] = None`` makes its import fail as if it were not installed)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.paths import ROOT

BOOT = (
    "import sys, runpy\n"
    "for name in sys.argv[1].split(','): sys.modules[name] = None\n"
    "sys.argv = ['mbsfmu', *sys.argv[2:]]\n"
    "runpy.run_module('mbsfmu', run_name='__main__')\n"
)


def without(hidden: str, *args) -> subprocess.CompletedProcess:
    """`mbsfmu ARGS` in a fresh interpreter in which the modules ``hidden`` (comma-separated) do not import."""
    return subprocess.run(
        [sys.executable, "-c", BOOT, hidden, *map(str, args)], cwd=ROOT, capture_output=True, text=True, timeout=300
    )


def assert_names_the_extra(res: subprocess.CompletedProcess, extra: str, module: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.startswith("mbsfmu: error:")]
    assert len(lines) == 1, res.stderr
    assert f"the {extra!r} extra ({module} is not installed): pip install 'mbsfmu[{extra}]'" in lines[0], lines[0]


@pytest.mark.integration
def test_record_without_the_record_extra(tmp_path):
    res = without(
        "mcap", "run", "scenarios/scara_free.yaml", "-o", tmp_path / "o", "--quick", "--no-progress",
        "--record", tmp_path / "x.mcap",
    )  # fmt: skip
    assert_names_the_extra(res, "record", "mcap")
    assert not (tmp_path / "x.mcap").exists()


@pytest.mark.integration
def test_python_fmu_without_the_fmu_extra(tmp_path):
    res = without(
        "pythonfmu", "build-fmu", "scenarios/models/scara.yaml", "--runtime", "python", "-o", tmp_path / "s.fmu"
    )
    assert_names_the_extra(res, "fmu", "pythonfmu")
    assert not (tmp_path / "s.fmu").exists()


@pytest.mark.integration
@pytest.mark.parametrize("master, module", [("fmpy", "fmpy"), ("libcosim", "libcosimpy")])
def test_cosim_without_the_cosim_extra(tmp_path, master, module):
    res = without(
        module, "cosim", "scenarios/scara_tracking_cosim.yaml", "-o", tmp_path / "o", "--quick", "--master", master,
        "--no-progress",
    )  # fmt: skip
    assert_names_the_extra(res, "cosim", module)


@pytest.mark.integration
def test_campaign_without_the_campaign_extra(tmp_path):
    res = without(
        "distributed", "montecarlo", "tests/data/campaign_spring.yaml", "--runs", 2, "--seed", 1, "-o",
        tmp_path / "mc", "--workers", 1, "--no-progress",
    )  # fmt: skip
    assert_names_the_extra(res, "campaign", "distributed")


@pytest.mark.integration
def test_ros_node_without_the_ros_extra():
    res = without("rclpy", "ros", "scenarios/models/scara.yaml")
    assert_names_the_extra(res, "ros", "rclpy")


@pytest.mark.integration
def test_derive_without_the_symbolic_extra(tmp_path):
    res = without("sympy", "derive", "scenarios/models/scara.yaml", "-o", tmp_path / "d")
    assert_names_the_extra(res, "symbolic", "sympy")
    info = without("sympy,mcap,pythonfmu,fmpy,distributed,rclpy", "info", "scenarios/models/scara.yaml")
    assert info.returncode == 0 and "scara" in info.stdout, info.stderr  # the base install works without any
