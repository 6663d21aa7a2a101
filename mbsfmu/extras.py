"""The optional features and the extras that install them: one message, one exit code (2), when a
feature's extra is missing, whichever command needs it."""

from __future__ import annotations

import importlib

from .errors import MbsError

EXTRAS = {  # extra: the modules whose import proves it is installed
    "record": ("mcap", "mcap_ros2"),
    "fmu": ("pythonfmu", "fmpy"),
    "cosim": ("fmpy", "libcosimpy"),
    "campaign": ("distributed",),
    "ros": ("rclpy",),
    "docs": ("mkdocs",),
    "symbolic": ("sympy",),
}


class MissingExtra(MbsError):
    """An optional feature whose extra is not installed; the message says what to install."""

    def __init__(self, feature: str, extra: str, module: str, reason: str = ""):
        """reason: why the import failed when the module is there but broken (empty: not installed)."""
        self.feature, self.extra, self.module = feature, extra, module
        why = f" does not import: {reason}" if reason else " is not installed"
        super().__init__(f"{feature} needs the {extra!r} extra ({module}{why}): pip install 'mbsfmu[{extra}]'")


def require(extra: str, feature: str, *modules: str) -> None:
    """MissingExtra unless every module (default: the extra's) imports; ``feature`` says what
    needs it, e.g. "--record" or "mbsfmu derive"."""
    for name in modules or EXTRAS[extra]:
        try:
            importlib.import_module(name)
        except ImportError as e:
            absent = e.name is not None and name.split(".")[0] == e.name.split(".")[0]
            raise MissingExtra(feature, extra, name, "" if absent else str(e)) from None
