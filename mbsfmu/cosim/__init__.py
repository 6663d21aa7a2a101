"""Co-simulation of a scenario's model FMU with other FMUs (``mbsfmu cosim``): the FMUs it builds
and caches, the interface checks, the plan, and the fmpy and libcosim masters (fmpy_master.py)."""
from __future__ import annotations

from mbsfmu.cosim.fmpy_master import CosimError, run_cosim

__all__ = ["CosimError", "run_cosim"]
