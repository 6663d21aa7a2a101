"""A LinearModel as a file, by suffix: NumPy ``.npz``, MATLAB ``.mat`` (scipy.io.savemat, format 5)
or ``.json``; the same keys in each (docs/guides/linearization.md):

A, B, C, D; state_names, input_names, output_names; q0, qd0, u0, y0, qdd0 (the operating point
and the accelerations there); q_names, u_names; model, equilibrium, method.
In .mat files the name lists are cell arrays of char (MATLAB: ``ss(s.A, s.B, s.C, s.D,
'StateName', s.state_names, 'InputName', s.input_names, 'OutputName', s.output_names)``);
in .json the matrices are lists of rows.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..errors import InputError

if TYPE_CHECKING:  # annotations only: the command line imports this module for SUFFIXES at start-up
    from .statespace import LinearModel

SUFFIXES = (".npz", ".mat", ".json")
MATRICES = ("A", "B", "C", "D", "q0", "qd0", "u0", "y0", "qdd0")
NAMES = ("state_names", "input_names", "output_names", "q_names", "u_names")


def contents(lin: LinearModel) -> dict:
    """The file's keys (module docstring) as numpy arrays, lists of str, str and bool."""
    out = {k: np.asarray(getattr(lin, k), dtype=float) for k in MATRICES}
    out |= {k: list(getattr(lin, k)) for k in NAMES}
    out |= {"model": lin.model, "equilibrium": bool(lin.equilibrium), "method": lin.method}
    return out


def write_linear_model(lin: LinearModel, path: str | Path) -> Path:
    """Write ``lin`` to ``path`` in the format its suffix names; InputError for another suffix."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(f"output file {str(path)!r}: suffix must be one of {', '.join(SUFFIXES)}")
    data = contents(lin)
    if suffix == ".npz":
        arrays = {k: (np.array(v, dtype=str) if k in NAMES else v) for k, v in data.items()}
        with path.open("wb") as fh:
            np.savez(fh, **arrays)
    elif suffix == ".mat":
        from scipy.io import savemat

        cells = {k: _cell(v) for k, v in data.items() if k in NAMES}
        savemat(path, {**{k: v for k, v in data.items() if k not in NAMES}, **cells}, oned_as="column")
    else:
        text = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in data.items()}
        path.write_text(json.dumps(text, indent=1) + "\n", encoding="utf-8")
    return path


def _cell(names: list[str]) -> np.ndarray:
    """A column cell array of char for savemat."""
    cell = np.empty((len(names), 1), dtype=object)
    for k, n in enumerate(names):
        cell[k, 0] = n
    return cell


__all__ = ["SUFFIXES", "contents", "write_linear_model"]
