"""C literals of Python values, for the C files the FMU builds generate (the native runtime's
``mbsfmu_model.c``, the loader's ``mbsfmu_loader_config.h``)."""

from __future__ import annotations

import math


def c_string(s: str) -> str:
    """A C string literal of s (UTF-8, every byte outside printable ASCII escaped in octal)."""
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        out.append(f"\\{b:03o}" if b < 32 or b > 126 or c in '"\\?' else c)
    return '"' + "".join(out) + '"'


def c_double(x) -> str:
    """x as an exact C99 double literal (NAN for None; needs <math.h>)."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "NAN"
    x = float(x)
    if math.isinf(x):
        return "INFINITY" if x > 0 else "(-INFINITY)"
    return x.hex() if x != 0 else ("-0.0" if math.copysign(1.0, x) < 0 else "0.0")


__all__ = ["c_double", "c_string"]
