import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))  # shared test helpers: trees.py, pin_twin.py

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "scenarios" / "models"


@pytest.fixture
def rng():
    return np.random.default_rng(20261122)
