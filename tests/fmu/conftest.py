"""Fixtures of the FMU tests: the FMUs of each runtime, built on demand into one folder per
session (the file is the cache: every test that asks for the same FMU gets the same file)."""

from __future__ import annotations

import pytest

from tests.support.native_fmu import NativeFmus
from tests.support.python_fmu import FmuFiles


@pytest.fixture(scope="session")
def fmus(tmp_path_factory) -> FmuFiles:
    """Python-runtime FMUs (``mbsfmu build-fmu``), their extracted folders and the C host."""
    pytest.importorskip("pythonfmu")
    pytest.importorskip("fmpy")
    base = tmp_path_factory.getbasetemp() / "mbsfmu_fmus"
    base.mkdir(exist_ok=True)
    return FmuFiles(base)


@pytest.fixture(scope="session")
def native(tmp_path_factory) -> NativeFmus:
    """Native-runtime FMUs (``--runtime native``), their extracted folders and the zig-built C host."""
    pytest.importorskip("ziglang")
    base = tmp_path_factory.getbasetemp() / "mbsfmu_native_fmus"
    base.mkdir(exist_ok=True)
    return NativeFmus(base)
