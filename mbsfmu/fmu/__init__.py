"""The FMI 2.0 Co-Simulation face: ``build_fmu()`` and the ``mbsfmu build-fmu`` command
(``build.py``), the variable map (``variables.py``), the pythonfmu slave (``slave.py``) and the
Linux loader binary's source (``loader.c``). Importing this package does not import pythonfmu."""
from __future__ import annotations

from .build import FmuBuildError, add_parser, build_fmu, model_identifier
from .variables import FmuVariable, variable_table

__all__ = ["FmuBuildError", "FmuVariable", "add_parser", "build_fmu", "model_identifier", "variable_table"]
