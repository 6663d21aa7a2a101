"""Checks of the arrays a caller passes to the engine's public entry points (Model, Simulator,
linearize), shared by the Python and native paths."""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .spatial import Array


def real_array(name: str, x) -> Array:
    """``x`` as a float array; InputError naming ``name`` for complex values (numpy would drop their
    imaginary parts with a ComplexWarning: a silent wrong answer), TypeError/ValueError for values
    that are no numbers."""
    a = np.asarray(x)
    if np.iscomplexobj(a):
        raise InputError(f"{name} has complex entries: expected real numbers")
    return np.asarray(a, dtype=float)
