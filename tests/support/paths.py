"""The repository's folders the tests read: the root, the bundled models and the test data."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "scenarios" / "models"
DATA = ROOT / "tests" / "data"
SUPPORT = ROOT / "tests" / "support"
