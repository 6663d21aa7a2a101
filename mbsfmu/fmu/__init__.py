"""The FMI 2.0 Co-Simulation face. Python runtime: ``build_fmu()`` (``build.py``), packaged by
``package.py`` (staging, pythonfmu, the loader binary of ``loader.py``), run by the slaves on
``slave_base.py`` (``slave.py`` for a model, ``pid_slave.py`` for the PID of ``pid.py``). Native
runtime: ``native.build_native_fmu``. Both: the variable map (``variables.py``), the
modelDescription and build information (``description.py``), the command ``mbsfmu build-fmu``
(``command.py``). Importing this package does not import pythonfmu."""

from __future__ import annotations

from ..lazy import lazy_names

# imported on first use: the command line imports ``command`` for its subparser, which must not
# load the builders (a run's start-up)
LAZY = {
    "build_fmu": ".build",
    "add_parser": ".command",
    "FmuBuildError": ".description",
    "model_identifier": ".description",
    "FmuVariable": ".variables",
    "variable_table": ".variables",
}


__getattr__ = lazy_names(__name__, LAZY)


__all__ = ["FmuBuildError", "FmuVariable", "add_parser", "build_fmu", "model_identifier", "variable_table"]
