"""Fixtures shared by every test folder (folder-specific ones live in that folder's conftest.py;
helpers that are not fixtures in tests/support)."""
import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
