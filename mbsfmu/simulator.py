"""Deprecated import path (0.2.0): the simulator moved to ``mbsfmu.sim.simulator``. This module is that module, with a
DeprecationWarning, for one release; it goes in 0.3.0."""

import sys
import warnings

from .sim import simulator as moved

warnings.warn(
    "mbsfmu.simulator is deprecated since 0.2.0 and goes in 0.3.0: import from mbsfmu.sim.simulator",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = moved
