"""The co-simulation's own error (set-up problems that are not a scenario file's)."""

from __future__ import annotations

from ..errors import MbsError


class CosimError(MbsError):
    """A co-simulation that cannot be set up (a master that is not installed, a time grid libcosim
    cannot represent, ...)."""


__all__ = ["CosimError"]
