"""The public reader of parsed YAML/JSON documents: typed access that records every problem,
with its path and file line, instead of raising at the first one (so a file's problems come in one
round). Model files (model_file.py), URDF overlays (urdf.py), scenario files and their cosim
sections all read through it."""

from __future__ import annotations

import difflib
import math
import numbers

from ..engine.spec.validation import locate
from ..errors import Problem, brief

MAX_EXACT_INT = 2**53  # integers up to this size are floats exactly (float64's 53-bit significand)


class Reader:
    """Typed access to the parsed document that records problems instead of raising."""

    def __init__(self, lines: dict):
        self.lines = lines
        self.problems: list[Problem] = []

    def problem(self, path: tuple, message: str) -> None:
        self.problems += locate([Problem(path, message)], self.lines)

    def mapping(self, value, path, keys, required=()) -> dict:
        if not isinstance(value, dict):
            self.problem(path, f"expected a mapping with keys {', '.join(keys)}, got {describe(value)}")
            return {}
        for key in value:
            if key not in keys:
                close = difflib.get_close_matches(str(key), keys, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; allowed: {', '.join(keys)}"
                self.problem(path + (key,), f"unknown key {key!r}{hint}")
        for key in required:
            if key not in value:
                self.problem(path + (key,), f"missing required key {key!r}")
        return value

    def number(self, value, path) -> float:
        if type(value) is float and math.isfinite(value):  # the common cases, without the ABC check
            return value
        if type(value) is int and -MAX_EXACT_INT <= value <= MAX_EXACT_INT:
            return float(value)
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            self.problem(path, f"expected a number, got {describe(value)}")
            return 0.0
        try:
            x = float(value)
        except OverflowError:
            self.problem(path, "expected a finite number, got one beyond the float range (1.8e308)")
            return 0.0
        if not math.isfinite(x):
            self.problem(path, f"expected a finite number, got {x}")
            return 0.0
        return x

    def vector(self, value, path, n) -> tuple:
        if not isinstance(value, (list, tuple)) or len(value) != n:
            got = f"{len(value)} entries" if isinstance(value, (list, tuple)) else describe(value)
            self.problem(path, f"expected a list of {n} numbers, got {got}")
            return (0.0,) * n
        return tuple(self.number(x, path + (k,)) for k, x in enumerate(value))

    def string(self, value, path) -> str:
        if not isinstance(value, str) or not value:
            self.problem(path, f"expected a non-empty name, got {describe(value)}")
            return f"<invalid {path[-1]}>"
        return value


def describe(value) -> str:
    """A value as an error message names it: "the text 'x'", "the number 3", "a mapping"."""
    if value is None:
        return "nothing"
    if isinstance(value, str):
        return f"the text {brief(value)}"
    if isinstance(value, bool):
        return f"the boolean {value}"
    if isinstance(value, numbers.Real):
        return f"the number {value!r}" if not isinstance(value, int) or value.bit_length() < 64 else "a huge integer"
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    return f"{type(value).__name__} {brief(value, 40)}"
