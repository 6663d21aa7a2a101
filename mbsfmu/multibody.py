"""Deprecated import path (0.2.0): Model moved to ``mbsfmu.engine.model``. This module is that module, with a
DeprecationWarning, for one release; it goes in 0.3.0."""

import sys
import warnings

from .engine import model as moved

warnings.warn(
    "mbsfmu.multibody is deprecated since 0.2.0 and goes in 0.3.0: import from mbsfmu.engine.model",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = moved
