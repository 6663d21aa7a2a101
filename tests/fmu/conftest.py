"""Fixtures of the FMU tests: the FMUs of each runtime, built on demand into one folder per
test run (the file is the cache: every test that asks for the same FMU gets the same file, on
whichever xdist worker it runs: tests.support.run_folder)."""

from __future__ import annotations

import pytest

from tests.support.native_fmu import NativeFmus
from tests.support.python_fmu import FmuFiles
from tests.support.run_folder import run_folder


@pytest.fixture(scope="session")
def fmus(tmp_path_factory) -> FmuFiles:
    """Python-runtime FMUs (``mbsfmu build-fmu``), their extracted folders and the C host."""
    pytest.importorskip("pythonfmu")
    pytest.importorskip("fmpy")
    return FmuFiles(run_folder(tmp_path_factory, "mbsfmu_fmus"))


@pytest.fixture(scope="session")
def native(tmp_path_factory) -> NativeFmus:
    """Native-runtime FMUs (``--runtime native``), their extracted folders and the zig-built C host."""
    pytest.importorskip("ziglang")
    return NativeFmus(run_folder(tmp_path_factory, "mbsfmu_native_fmus"), tmp_path_factory.getbasetemp())
