"""Names of a package imported on first use (PEP 562: a module-level ``__getattr__``), so that
importing the package for one light name does not load its heavy modules (start-up of the command
line)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_names(package: str, where: dict[str, str]) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``package``: ``name`` in ``where`` is taken from the submodule
    ``where[name]`` (relative to the package), imported on first use and then kept in the
    package's namespace; AttributeError for any other name."""

    def __getattr__(name: str):
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(where[name], package), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
