"""Co-simulation of a scenario's model FMU with other FMUs (``mbsfmu cosim``): the FMUs' variables
and the checks of the scenario's ``cosim:`` section against them (interface.py), the FMUs it builds
and caches (fmus.py), the plan (plan.py), the fmpy and libcosim masters (fmpy_master.py,
libcosim_master.py) and the run that writes the trajectory and report (run.py). The section itself
is parsed with the scenario (mbsfmu/scenario/cosim_section.py)."""

from __future__ import annotations

from .errors import CosimError
from .fmus import build_fmus, default_fmu_dir, model_files
from .interface import check_cosim
from .run import MASTERS, run_cosim

__all__ = ["MASTERS", "CosimError", "build_fmus", "check_cosim", "default_fmu_dir", "model_files", "run_cosim"]
