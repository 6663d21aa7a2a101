"""The FMI 2.0 Co-Simulation face. Python runtime: ``build_fmu()`` (``build.py``), packaged by
``package.py`` (staging, pythonfmu, the loader binary of ``loader.py``), run by the slaves on
``slave_base.py`` (``slave.py`` for a model, ``pid_slave.py`` for the PID of ``pid.py``). Native
runtime: ``native.build_native_fmu``. Both: the variable map (``variables.py``), the
modelDescription and build information (``description.py``), the command ``mbsfmu build-fmu``
(``command.py``). Importing this package does not import pythonfmu."""

from __future__ import annotations

from .build import build_fmu
from .command import add_parser
from .description import FmuBuildError, model_identifier
from .variables import FmuVariable, variable_table

__all__ = ["FmuBuildError", "FmuVariable", "add_parser", "build_fmu", "model_identifier", "variable_table"]
