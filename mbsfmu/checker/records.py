"""Body records in a trajectory: which records each of the documents' Procedures 1-4 needs, the
bodies, wheels and springs discovered from the column names, and the columns as arrays ((T, ...) over
the T rows). The tables of the procedures are in ``mbsfmu/checker/__init__.py``'s docstring and
docs/reference/trajectory-format.md."""

from __future__ import annotations

import os
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import MbsError
from ..trajectory import Trajectory, read_trajectory

Array = NDArray[np.float64]

PROCEDURES = (1, 2, 3, 4)
MOMENTUM_PROCEDURES = {
    1: "inertial axes, system-CM centric",
    2: "inertial axes, absolute",
    3: "body-1 axes, system-CM centric, with C1",
    4: "body-1 axes, joint(1) centric, with C1",
}
ENERGY_PROCEDURES = {
    1: "inertial axes, absolute",
    2: "inertial axes, system-CM centric, with R, Rdot",
    3: "body-1 axes, system-CM centric, with C1, R, Rdot",
    4: "inertial axes, joint(1) centric, with eta1, etadot1",
}
SYM = ("xx", "yy", "zz", "xy", "xz", "yz")
SYM_INDEX = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))
SKIP_PREFIXES = ("engine.", "q.", "qd.", "u.")

# Records each procedure reads: body fields, wheel field, system fields (MBS Momentum/Energy Testing).
MOMENTUM_BODY = {
    1: ("I", "omega", "r_cm", "rdot_cm"),
    2: ("I", "omega", "r_abs", "rdot_abs"),
    3: ("I_b1", "omega_b1", "r_cm_b1", "rdot_cm_b1"),
    4: ("I_b1", "omega_b1", "r_j1_b1", "rdot_j1_b1"),
}
MOMENTUM_WHEEL = {1: "h", 2: "h", 3: "h_b1", 4: "h_b1"}
MOMENTUM_SYSTEM = {1: (), 2: (), 3: ("C1",), 4: ("C1",)}
MOMENTUM_R = {1: ("R", "Rdot"), 2: (), 3: ("R", "Rdot"), 4: ("eta1", "etadot1")}
ENERGY_BODY = {
    1: ("I", "omega", "r_abs", "rdot_abs"),
    2: ("I", "omega", "r_cm", "rdot_cm"),
    3: ("I_b1", "omega_b1", "r_cm_b1", "rdot_cm_b1"),
    4: ("I", "omega", "r_j1", "rdot_j1"),
}
ENERGY_WHEEL = {1: "h", 2: "h", 3: "h_b1", 4: "h"}
ENERGY_SYSTEM = {1: ("g",), 2: ("R", "Rdot", "g"), 3: ("R", "Rdot", "C1", "g"), 4: ("eta1", "etadot1", "g")}


class CheckError(MbsError):
    """The checker cannot run: unknown procedure or check, missing columns, bad bound."""


# ---- records -------------------------------------------------------------------------------
@dataclass(frozen=True)
class System:
    """Names found in a trajectory: rigid bodies, reaction wheels and springs."""

    bodies: tuple[str, ...]
    wheels: tuple[str, ...]
    springs: tuple[str, ...]


def as_trajectory(data) -> Trajectory:
    """A Trajectory from a Trajectory, a mapping of columns (scalars or sequences), or a path."""
    if isinstance(data, Trajectory):
        return data
    if isinstance(data, Mapping):
        return Trajectory.from_columns(data)
    if isinstance(data, (str, os.PathLike)):
        return read_trajectory(data)
    raise CheckError(f"expected a trajectory, a mapping of columns or a file path, got {type(data).__name__}")


_FOUND: dict[int, tuple[weakref.ref, System]] = {}  # id(trajectory) -> (its weak reference, its System)
_BY_NAMES: dict[tuple[str, ...], System] = {}  # column names -> their System, the last BY_NAMES_KEPT sets
BY_NAMES_KEPT = 8


def discover(traj: Trajectory) -> System:
    """Bodies (``<body>.m``), wheels (``<wheel>.Iw``), springs (``<spring>.k``) in column order
    (found once per trajectory, a trajectory's columns never change, and once per set of column
    names: a caller that checks new rows of the same columns each time, as the ROS node's
    diagnostics, finds them once)."""
    key = id(traj)  # a Trajectory is a Mapping: compared by value, not hashable
    entry = _FOUND.get(key)
    if entry is not None and entry[0]() is traj:
        return entry[1]
    found = _BY_NAMES.get(traj.names)
    if found is None:
        found = _discover(traj)
        if len(_BY_NAMES) >= BY_NAMES_KEPT:
            _BY_NAMES.pop(next(iter(_BY_NAMES)))
        _BY_NAMES[traj.names] = found
    _FOUND[key] = (weakref.ref(traj, lambda _ref: _FOUND.pop(key, None)), found)
    return found


def _discover(traj: Trajectory) -> System:
    names = [c for c in traj.names if not c.startswith(SKIP_PREFIXES)]
    found = System(
        bodies=tuple(c[:-2] for c in names if c.endswith(".m") and len(c) > 2),
        wheels=tuple(c[:-3] for c in names if c.endswith(".Iw") and len(c) > 3),
        springs=tuple(c[:-2] for c in names if c.endswith(".k") and len(c) > 2),
    )
    body_fields = {f for fields in (*MOMENTUM_BODY.values(), *ENERGY_BODY.values()) for f in fields}
    bodies = set(found.bodies)  # membership per column: O(1), not O(bodies)
    orphans: dict[str, None] = {}  # ordered set
    for c in names:
        owner, _dot, fld = c.split("[", 1)[0].rpartition(".")
        if owner and fld in body_fields and owner not in bodies:
            orphans[f"{owner}.m"] = None
    if orphans:
        raise CheckError(
            f"{traj.source}: body record columns without their mass column: {', '.join(orphans)} "
            f"missing (each body is discovered by its '<body>.m' column; format: mbsfmu/trajectory.py)"
        )
    if not found.bodies:
        hint = (
            "; `mbsfmu run` writes the body records to records.csv beside trajectory.csv: check that file"
            if any(c.startswith(("q.", "qd.")) for c in traj.names)
            else ""
        )
        raise CheckError(
            f"{traj.source}: no rigid-body columns: each body needs a '<body>.m' mass column "
            f"(format: mbsfmu/trajectory.py){hint}"
        )
    return found


def field_columns(owner: str, field: str) -> list[str]:
    """Column names of one record: ``I``/``I_b1`` 6 tensor entries, ``C1`` 9, ``m``/``Iw``/``k``/``x``
    one, anything else a 3-vector."""
    prefix = f"{owner}.{field}" if owner else field
    if field in ("I", "I_b1"):
        return [f"{prefix}[{s}]" for s in SYM]
    if field == "C1":
        return [f"{prefix}[{c}]" for c in range(1, 10)]
    if field in ("m", "Iw", "k", "x"):
        return [prefix]
    return [f"{prefix}[{c}]" for c in range(1, 4)]


def check_procedure(procedure) -> int:
    """The procedure number 1..4, or CheckError naming the bad value."""
    if isinstance(procedure, bool) or procedure not in PROCEDURES:
        names = "; ".join(f"{n} = {MOMENTUM_PROCEDURES[n]} / {ENERGY_PROCEDURES[n]}" for n in PROCEDURES)
        raise CheckError(
            f"unknown procedure {procedure!r}: expected 1, 2, 3 or 4 (MBS Momentum Testing / MBS "
            f"Energy Testing Procedures 1-4: {names})"
        )
    return int(procedure)


def require_columns(traj: Trajectory, columns: Iterable[str], what: str) -> None:
    missing = traj.missing(columns)
    if missing:
        raise CheckError(
            f"{traj.source}: {what} needs {len(missing)} column(s) missing from the file: {', '.join(missing)}"
        )


def needed_columns(
    system: System, body: Iterable[str], wheel: str | None, wheel_iw: bool, system_fields: Iterable[str], springs: bool
) -> list[str]:
    cols = []
    for b in system.bodies:
        for f in ("m", *body):
            cols += field_columns(b, f)
    for w in system.wheels:
        cols += field_columns(w, wheel) + (field_columns(w, "Iw") if wheel_iw else [])
    if springs:
        for s in system.springs:
            cols += field_columns(s, "k") + field_columns(s, "x")
    for f in system_fields:
        cols += field_columns("", f)
    return cols


def record(traj: Trajectory, owner: str, field: str) -> Array:
    """(T,) scalar, (T, 3) vector, (T, 3, 3) tensor or C1 of one record."""
    names = field_columns(owner, field)
    if len(names) == 1:
        return traj[names[0]]
    if field == "C1":
        return traj.stack(names).reshape(-1, 3, 3)
    if field in ("I", "I_b1"):
        e = traj.stack(names)
        out = np.empty((len(e), 3, 3))
        for k, (a, b) in enumerate(SYM_INDEX):
            out[:, a, b] = out[:, b, a] = e[:, k]
        return out
    return traj.stack(names)


def records_of(traj: Trajectory, owners: Iterable[str], field: str, shape: tuple) -> Array:
    """(T, n, ...) one record of every owner; an empty (T, 0, ...) when there are none."""
    owners = list(owners)
    if not owners:
        return np.zeros((traj.n_rows, 0, *shape))
    # every owner's columns in one stack (what stacking ``record`` of each gives, copied once)
    e = traj.stack([name for o in owners for name in field_columns(o, field)]).reshape(traj.n_rows, len(owners), -1)
    if e.shape[2] == 1:
        return e[:, :, 0]
    if field == "C1":
        return e.reshape(traj.n_rows, len(owners), 3, 3)
    if field in ("I", "I_b1"):
        out = np.empty((traj.n_rows, len(owners), 3, 3))
        for k, (a, b) in enumerate(SYM_INDEX):
            out[:, :, a, b] = out[:, :, b, a] = e[:, :, k]
        return out
    return e


def masses(traj: Trajectory, system: System) -> Array:
    m = records_of(traj, system.bodies, "m", ())
    M = m.sum(axis=1)
    if np.any(~(M > 0)):
        k = int(np.flatnonzero(~(M > 0))[0])
        raise CheckError(
            f"{traj.source}: row {k + 1}: total mass is {float(M[k])}, must be positive "
            f"(bodies: {', '.join(system.bodies)})"
        )
    return m
