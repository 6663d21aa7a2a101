"""Deprecated import path (0.2.0): the checker moved to ``mbsfmu.checker.checks``. This module is that module, with a
DeprecationWarning, for one release; it goes in 0.3.0."""

import sys
import warnings

from .checker import checks as moved

warnings.warn(
    "mbsfmu.invariants is deprecated since 0.2.0 and goes in 0.3.0: import from mbsfmu.checker.checks",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = moved
