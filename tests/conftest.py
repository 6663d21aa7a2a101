"""Fixtures shared by every test folder (folder-specific ones live in that folder's conftest.py;
helpers that are not fixtures in tests/support). Hypothesis profiles: see pytest_configure."""

import os
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# Hypothesis profiles (examples per @given test): "fast" for the fast tier, "thorough" otherwise.
# The fast tier samples each property with 30 examples (the budget of a fast test: a second);
# a run that includes the slow tier (`python -m pytest -q`, CI) or HYPOTHESIS_PROFILE=thorough
# draws 300, the budget the properties were written with.
settings.register_profile("fast", max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("thorough", max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pytest_configure(config):
    markexpr = config.getoption("markexpr", default="") or ""
    default = "fast" if "not slow" in markexpr.replace("  ", " ") else "thorough"
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", default))


def pytest_report_header(config):
    return f"hypothesis profile: {settings.get_current_profile_name()}"


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)


@pytest.fixture
def run_cli(capsys):
    """``mbsfmu ARGS...`` run in this process (``mbsfmu.cli.main``), for tests about what the
    command does rather than about the process (signals, pipes, the environment keep a real
    subprocess): returns a CompletedProcess with the exit code and the captured stdout/stderr."""
    from mbsfmu.cli import main

    def run(*args) -> subprocess.CompletedProcess:
        argv = [str(a) for a in args]
        capsys.readouterr()
        try:
            code = main(argv)
        except SystemExit as e:  # argparse's usage errors exit 2
            code = e.code if isinstance(e.code, int) else 2
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["mbsfmu", *argv], code, out, err)

    return run
