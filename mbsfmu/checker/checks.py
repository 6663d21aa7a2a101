"""The independent checker: p_sys, H_sys, R, Rdot ("MBS Momentum Testing", Concurrent Dynamics
International 2017, Eqs. 9, 10) and KE, PE ("MBS Energy Testing", ibid., Eqs. 1, 2) recomputed from
body records alone, by their Procedures 1-4, and a conservation report on a trajectory (``mbsfmu check``).

This module reads only a trajectory's columns (format: ``mbsfmu/trajectory.py``); it imports
neither the dynamics nor the model, so it can judge this engine and any other simulator alike.
Bodies, wheels and springs are discovered from the column names (``<body>.m``, ``<wheel>.Iw``,
``<spring>.k``). Axes: world unless stated; arrays are (T, ...) over the T rows.

Procedures (which records the simulation outputs, per body j and wheel k). The two documents
number them differently for momentum and energy: inertial absolute records are momentum Procedure 2 but
energy Procedure 1, so ``conservation_report`` takes an optional ``energy_procedure``.

| N | momentum, MBS Momentum Testing | energy, MBS Energy Testing |
|---|---|---|
| 1 | I, omega, rhat, rhatdot, h (world axes, CM-centric); R, Rdot | I, omega, rbar, rbardot, h (world axes, absolute) |
| 2 | I, omega, rbar, rbardot, h (world axes, absolute) | I, omega, rhat, rhatdot, h (world axes), R, Rdot |
| 3 | I^1, omega^1, rhat^1, rhatdot^1, h^1 (body-1 axes, CM-centric), C1; R, Rdot | the same |
| 4 | I^1, omega^1, r^1, rdot^1, h^1 (body-1 axes, joint(1)-centric), C1; eta1, etadot1 | I, omega, r, rdot, h (world axes, joint(1)-centric), eta1, etadot1 |

Every procedure needs ``<body>.m``; energy needs the wheels' ``Iw``, ``g`` and the springs' ``k``,
``x``. MBS Momentum Testing computes R, Rdot itself only in Procedure 2; Procedures 1 and 3 take them from
the ``R``, ``Rdot`` columns ("(R, Rdot) should also be an output of the simulation"), Procedure 4
from joint 1: R = eta1 + C1 c^1, Rdot = etadot1 + C1 cdot^1. ``momentum(..., with_R=False)`` and
the report's checks that do not use R, Rdot do not need those columns.
"""  # noqa: E501 - a markdown table

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from ..errors import MbsError, brief
from ..trajectory import Trajectory, TrajectoryError, read_run, read_trajectory

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


# ---- the documents' equations ------------------------------------------------------------------
def eq9_p_sys(m: Array, rhatdot: Array) -> Array:
    """p_sys = sum_j m_j rhatdot_j (MBS Momentum Testing Eq. 9): (T, 3) [N s]; m (T, N), rhatdot (T, N, 3)."""
    return np.einsum("tn,tni->ti", m, rhatdot)


def eq10_H_sys(m: Array, I: Array, omega: Array, rhat: Array, rhatdot: Array, h: Array) -> Array:
    """H_sys = sum_j (I_j omega_j + m_j rhat_j x rhatdot_j) + sum_k h_k (MBS Momentum Testing Eq. 10): (T, 3)
    [N m s]; I (T, N, 3, 3), omega, rhat, rhatdot (T, N, 3), h (T, Nw, 3), all world axes."""
    return np.einsum("tnij,tnj->ti", I, omega) + np.einsum("tn,tni->ti", m, np.cross(rhat, rhatdot)) + h.sum(axis=1)


def eq1_KE(m: Array, I: Array, omega: Array, rbardot: Array, h: Array, Iw: Array) -> Array:
    """KE = 1/2 (sum_i (omega_i^T I_i omega_i + m_i |rbardot_i|^2) + sum_k |h_k|^2 / I_k^w)
    (MBS Energy Testing Eq. 1): (T,) [J]; Iw (T, Nw) [kg m^2]."""
    return 0.5 * (
        np.einsum("tni,tnij,tnj->t", omega, I, omega)
        + np.einsum("tn,tni,tni->t", m, rbardot, rbardot)
        + np.einsum("tki,tki,tk->t", h, h, 1.0 / Iw)
    )


def eq2_PE(k: Array, x: Array, m: Array, g: Array, rbar: Array) -> Array:
    """PE = 1/2 sum_s k_s x_s^2 - sum_i m_i g^T rbar_i (MBS Energy Testing Eq. 2): (T,) [J]; k, x (T, Ns),
    g (T, 3) [m/s^2], rbar (T, N, 3) [m]."""
    return 0.5 * np.einsum("ts,ts,ts->t", k, x, x) - np.einsum("tn,ti,tni->t", m, g, rbar)


def _rot(C1: Array, v: Array) -> Array:
    """C1 v for every row and item: (T, 3, 3) x (T, n, 3) -> (T, n, 3)."""
    return np.einsum("tij,tnj->tni", C1, v)


def _rot_I(C1: Array, I1: Array) -> Array:
    """C1 I^1 C1^T: (T, 3, 3) x (T, n, 3, 3) -> (T, n, 3, 3)."""
    return np.einsum("tij,tnjk,tlk->tnil", C1, I1, C1)


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


def discover(traj: Trajectory) -> System:
    """Bodies (``<body>.m``), wheels (``<wheel>.Iw``), springs (``<spring>.k``) in column order."""
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


def _require(traj: Trajectory, columns: Iterable[str], what: str) -> None:
    missing = traj.missing(columns)
    if missing:
        raise CheckError(
            f"{traj.source}: {what} needs {len(missing)} column(s) missing from the file: {', '.join(missing)}"
        )


def _needs(
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


def _col(traj: Trajectory, owner: str, field: str) -> Array:
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


def _many(traj: Trajectory, owners: Iterable[str], field: str, shape: tuple) -> Array:
    """(T, n, ...) one record of every owner; an empty (T, 0, ...) when there are none."""
    owners = list(owners)
    if not owners:
        return np.zeros((traj.n_rows, 0, *shape))
    return np.stack([_col(traj, o, field) for o in owners], axis=1)


def _masses(traj: Trajectory, system: System) -> Array:
    m = _many(traj, system.bodies, "m", ())
    M = m.sum(axis=1)
    if np.any(~(M > 0)):
        k = int(np.flatnonzero(~(M > 0))[0])
        raise CheckError(
            f"{traj.source}: row {k + 1}: total mass is {float(M[k])}, must be positive "
            f"(bodies: {', '.join(system.bodies)})"
        )
    return m


@dataclass(frozen=True)
class MomentumTerms:
    """MBS Momentum Testing Eq. 9/10 inputs in world axes: m (T, N) [kg], I (T, N, 3, 3) [kg m^2] about the
    CoMs, omega (T, N, 3) [rad/s], rhat, rhatdot (T, N, 3) [m, m/s] from the system CM, h (T, Nw, 3)
    [N m s]; R, Rdot (T, 3) [m, m/s] (NaN when not asked for)."""

    m: Array
    I: Array
    omega: Array
    rhat: Array
    rhatdot: Array
    h: Array
    R: Array
    Rdot: Array


@dataclass(frozen=True)
class EnergyTerms:
    """MBS Energy Testing Eq. 1/2 inputs in world axes: m, I, omega, rbar, rbardot (inertial CoM position and
    velocity), h (world axes, or body-1 axes for Procedure 3: only |h| enters), Iw (T, Nw), spring
    k, x (T, Ns), g (T, 3)."""

    m: Array
    I: Array
    omega: Array
    rbar: Array
    rbardot: Array
    h: Array
    Iw: Array
    k: Array
    x: Array
    g: Array


def momentum_terms(traj, procedure: int, with_R: bool = True) -> MomentumTerms:
    """Records of MBS Momentum Testing Procedure 1-4 turned into the Eq. 9/10 inputs (world axes, CM-centric)."""
    traj = as_trajectory(traj)
    N = check_procedure(procedure)
    sysm = discover(traj)
    R_fields = MOMENTUM_R[N] if with_R else ()
    _require(
        traj,
        _needs(sysm, MOMENTUM_BODY[N], MOMENTUM_WHEEL[N], False, MOMENTUM_SYSTEM[N] + R_fields, False),
        f"momentum by procedure {N} ({MOMENTUM_PROCEDURES[N]})",
    )
    B, W = sysm.bodies, sysm.wheels
    field_I, field_w, field_r, field_rdot = MOMENTUM_BODY[N]
    m = _masses(traj, sysm)
    I, omega = _many(traj, B, field_I, (3, 3)), _many(traj, B, field_w, (3,))
    r, rdot = _many(traj, B, field_r, (3,)), _many(traj, B, field_rdot, (3,))
    h = _many(traj, W, MOMENTUM_WHEEL[N], (3,))
    nan = np.full((traj.n_rows, 3), np.nan)
    R, Rdot = nan, nan
    if N == 1:  # all given: rhat_j, rhatdot_j, world axes
        rhat, rhatdot = r, rdot
        if with_R:
            R, Rdot = _col(traj, "", "R"), _col(traj, "", "Rdot")
    elif N == 2:  # rbar_j: R = sum m rbar / M, rhat = rbar - R
        M = m.sum(axis=1)
        R = np.einsum("tn,tni->ti", m, r) / M[:, None]
        Rdot = np.einsum("tn,tni->ti", m, rdot) / M[:, None]
        rhat, rhatdot = r - R[:, None], rdot - Rdot[:, None]
    elif N == 3:  # body-1 axes: rhat = C1 rhat^1, I = C1 I^1 C1^T
        C1 = _col(traj, "", "C1")
        rhat, rhatdot = _rot(C1, r), _rot(C1, rdot)
        I, omega, h = _rot_I(C1, I), _rot(C1, omega), _rot(C1, h)
        if with_R:
            R, Rdot = _col(traj, "", "R"), _col(traj, "", "Rdot")
    else:  # body-1 axes from joint 1: c^1 = sum m r^1 / M
        C1 = _col(traj, "", "C1")
        M = m.sum(axis=1)
        c1 = np.einsum("tn,tni->ti", m, r) / M[:, None]
        c1dot = np.einsum("tn,tni->ti", m, rdot) / M[:, None]
        rhat, rhatdot = _rot(C1, r - c1[:, None]), _rot(C1, rdot - c1dot[:, None])
        I, omega, h = _rot_I(C1, I), _rot(C1, omega), _rot(C1, h)
        if with_R:
            R = _col(traj, "", "eta1") + np.einsum("tij,tj->ti", C1, c1)
            Rdot = _col(traj, "", "etadot1") + np.einsum("tij,tj->ti", C1, c1dot)
    return MomentumTerms(m, I, omega, rhat, rhatdot, h, R, Rdot)


def momentum(traj, procedure: int, with_R: bool = True) -> tuple[Array, Array, Array, Array]:
    """(p_sys, H_sys, R, Rdot), each (T, 3), world axes [N s, N m s, m, m/s], by MBS Momentum Testing Procedure
    1-4 and Eqs. 9, 10 from a trajectory's records (a Trajectory, a mapping of columns or a path).
    with_R=False: R, Rdot are not computed (NaN) and their columns are not needed."""
    t = momentum_terms(traj, procedure, with_R)
    return eq9_p_sys(t.m, t.rhatdot), eq10_H_sys(t.m, t.I, t.omega, t.rhat, t.rhatdot, t.h), t.R, t.Rdot


def energy_terms(traj, procedure: int) -> EnergyTerms:
    """Records of MBS Energy Testing Procedure 1-4 turned into the Eq. 1/2 inputs."""
    traj = as_trajectory(traj)
    N = check_procedure(procedure)
    sysm = discover(traj)
    _require(
        traj,
        _needs(sysm, ENERGY_BODY[N], ENERGY_WHEEL[N], True, ENERGY_SYSTEM[N], True),
        f"energy by procedure {N} ({ENERGY_PROCEDURES[N]})",
    )
    B, W, S = sysm.bodies, sysm.wheels, sysm.springs
    field_I, field_w, field_r, field_rdot = ENERGY_BODY[N]
    m = _masses(traj, sysm)
    I, omega = _many(traj, B, field_I, (3, 3)), _many(traj, B, field_w, (3,))
    r, rdot = _many(traj, B, field_r, (3,)), _many(traj, B, field_rdot, (3,))
    h, Iw = _many(traj, W, ENERGY_WHEEL[N], (3,)), _many(traj, W, "Iw", ())
    k, x = _many(traj, S, "k", ()), _many(traj, S, "x", ())
    g = _col(traj, "", "g")
    bad = [f"{w}.Iw" for j, w in enumerate(W) if np.any(~(Iw[:, j] > 0))]
    if bad:
        raise CheckError(f"{traj.source}: wheel spin inertia must be positive in every row: {', '.join(bad)}")
    if N == 1:  # all given: rbar_i, rbardot_i, world axes
        rbar, rbardot = r, rdot
    elif N == 2:  # rbar = rhat + R
        rbar, rbardot = r + _col(traj, "", "R")[:, None], rdot + _col(traj, "", "Rdot")[:, None]
    elif N == 3:  # I = C1 I^1 C1^T, omega = C1 omega^1, rbar = C1 rhat^1 + R
        C1 = _col(traj, "", "C1")
        I, omega = _rot_I(C1, I), _rot(C1, omega)
        rbar = _rot(C1, r) + _col(traj, "", "R")[:, None]
        rbardot = _rot(C1, rdot) + _col(traj, "", "Rdot")[:, None]
    else:  # rbar = r + eta1 (inertial axes, joint(1) centric)
        rbar, rbardot = r + _col(traj, "", "eta1")[:, None], rdot + _col(traj, "", "etadot1")[:, None]
    return EnergyTerms(m, I, omega, rbar, rbardot, h, Iw, k, x, g)


def energy(traj, procedure: int) -> tuple[Array, Array]:
    """(KE, PE), each (T,) [J], by MBS Energy Testing Procedure 1-4 and Eqs. 1, 2 (PE = 1/2 sum k x^2 -
    sum m g^T rbar) from a trajectory's records."""
    t = energy_terms(traj, procedure)
    return eq1_KE(t.m, t.I, t.omega, t.rbardot, t.h, t.Iw), eq2_PE(t.k, t.x, t.m, t.g, t.rbar)


# ---- conservation report -------------------------------------------------------------------
@dataclass(frozen=True)
class CheckSpec:
    """One check: what it measures, its unit, the relative scale, the kind a bare number bounds."""

    quantity: str
    unit: str
    scale: str
    number_bounds: str  # "abs" or "rel": what ``name=1e-6`` bounds
    default: tuple[str, float]  # (kind, bound) when none is given


CHECKS: dict[str, CheckSpec] = {
    "p_sys_zero": CheckSpec(
        "|p_sys| (MBS Momentum Testing Eq. 9, must be 0)",
        "N s",
        "max over rows of sum_j m_j max(|rhatdot_j|, |v_j|), v_j the recorded velocity "
        "rhatdot_j was made from (rbardot_j, rdot_j; + |Rdot| for procedures 1, 3)",
        "abs",
        ("rel", 1e-9),
    ),
    "P_sys_constant": CheckSpec(
        "|P_sys - P_sys(t0)|, P_sys = M Rdot (g = 0 only)",
        "N s",
        "max over rows of sum_j m_j |rbardot_j|",
        "abs",
        ("rel", 1e-6),
    ),
    "H_sys_constant": CheckSpec(
        "|H_sys - H_sys(t0)| (MBS Momentum Testing Eq. 10, about the system CM)",
        "N m s",
        "max over rows of sum_j (|I_j omega_j| + m_j |rhat_j| |rhatdot_j| + the round-off "
        "terms m_j (|r_j| - |rhat_j|) |rhatdot_j| + m_j |rhat_j| (|v_j| - |rhatdot_j|) of the "
        "recorded r_j, v_j) + sum_k |h_k|",
        "abs",
        ("rel", 1e-6),
    ),
    "R_constant": CheckSpec(
        "max(|R - R(t0)|, T |Rdot|) (g = 0: Rdot = 0, R constant)",
        "m",
        "max over rows of the bodies' CoM radius of gyration sqrt(sum_j m_j |rhat_j|^2 / M)",
        "abs",
        ("abs", 1e-6),
    ),
    "R_parabolic": CheckSpec(
        "max(|R - fit|, T |Rdot - Rdot(t0) - g (t - t0)|), fit R0 + V0 t + g t^2 / 2",
        "m",
        "max over rows of the bodies' CoM radius of gyration sqrt(sum_j m_j |rhat_j|^2 / M)",
        "abs",
        ("abs", 1e-6),
    ),
    "energy_constant": CheckSpec(
        "|E - E(t0)|, E = KE + PE (MBS Energy Testing Eqs. 1, 2)",
        "J",
        "max over rows of KE and of |PE - PE(t0)| (independent of the PE datum)",
        "abs",
        ("rel", 1e-6),
    ),
    "energy_balance": CheckSpec(
        "|B - B(t0)|, B = KE + PE - engine.W_in - engine.W_diss",
        "J",
        "max over rows of KE, |PE - PE(t0)|, |W_in|, |W_diss|",
        "abs",
        ("rel", 1e-6),
    ),
    "KE_constant": CheckSpec(
        "|KE - KE(t0)| (MBS Energy Testing Eq. 1)", "J", "max over rows of KE", "abs", ("rel", 1e-6)
    ),
    "engine_agreement": CheckSpec(
        "checker vs engine.* columns, worst quantity",
        "(per quantity)",
        "per quantity, see 'quantities'",
        "rel",
        ("rel", 1e-9),
    ),
}
ENGINE_QUANTITIES = ("p_sys", "P_sys", "H_sys", "R", "Rdot", "KE", "PE", "E")


def parse_bound(name: str, value) -> tuple[str, float]:
    """(kind, bound) from a number (what the check's bare number bounds: abs, or rel for
    engine_agreement), a string "1e-6", "abs:1e-6" or "rel:1e-9", or None (the default)."""
    if name not in CHECKS:
        raise CheckError(f"unknown check {name!r}: expected one of {', '.join(CHECKS)}")
    spec = CHECKS[name]
    if value is None:
        return spec.default
    kind, text = spec.number_bounds, value
    if isinstance(value, str):
        text = value.strip()
        if ":" in text:
            kind, text = (s.strip() for s in text.split(":", 1))
            if kind not in ("abs", "rel"):
                raise CheckError(f"check {name}: bound kind {kind!r} must be 'abs' or 'rel' (e.g. rel:1e-9)")
    try:
        bound = float(text)
    except (TypeError, ValueError):
        raise CheckError(
            f"check {name}: bound {brief(value)} is not a number (e.g. {name}=1e-6 or {name}=rel:1e-9)"
        ) from None
    if not (math.isfinite(bound) and bound >= 0):
        raise CheckError(f"check {name}: bound {brief(value)} must be a finite number >= 0")
    return kind, bound


def drift_slope(t: Array, d: Array) -> Array:
    """Least-squares slope of d(t) = a + b t: b (d's trailing shape) [unit of d per s]; 0 for one row."""
    tc = t - t.mean()
    den = float(tc @ tc)
    if den == 0.0:
        return np.zeros(d.shape[1:])
    return np.tensordot(tc, d - d.mean(axis=0), axes=(0, 0)) / den


def _norm(d: Array) -> Array:
    return np.linalg.norm(d, axis=-1) if d.ndim > 1 else np.abs(d)


def _rel(abs_: float, scale: float) -> float:
    if scale > 0:
        return abs_ / scale
    return 0.0 if abs_ == 0 else math.inf


def _drift(t: Array, d: Array) -> float:
    b = drift_slope(t, d)
    return float(np.linalg.norm(b)) if b.ndim else float(b)


class _Context:
    """Lazy momentum and energy of one trajectory by one procedure, with the report's scales."""

    def __init__(self, traj: Trajectory, procedure: int, energy_procedure: int):
        self.traj, self.N, self.N_E = traj, procedure, energy_procedure
        self.t = traj.time
        self.span = float(self.t[-1] - self.t[0])

    @cached_property
    def mt(self) -> MomentumTerms:
        return momentum_terms(self.traj, self.N, with_R=False)

    @cached_property
    def mR(self) -> tuple[Array, Array]:
        t = momentum_terms(self.traj, self.N, with_R=True)
        return t.R, t.Rdot

    @cached_property
    def p_sys(self) -> Array:
        return eq9_p_sys(self.mt.m, self.mt.rhatdot)

    @cached_property
    def H_sys(self) -> Array:
        t = self.mt
        return eq10_H_sys(t.m, t.I, t.omega, t.rhat, t.rhatdot, t.h)

    @cached_property
    def et(self) -> EnergyTerms:
        return energy_terms(self.traj, self.N_E)

    @cached_property
    def KE(self) -> Array:
        t = self.et
        return eq1_KE(t.m, t.I, t.omega, t.rbardot, t.h, t.Iw)

    @cached_property
    def PE(self) -> Array:
        t = self.et
        return eq2_PE(t.k, t.x, t.m, t.g, t.rbar)

    @cached_property
    def M(self) -> Array:
        return self.mt.m.sum(axis=1)

    @property
    def g(self) -> Array:
        _require(self.traj, field_columns("", "g"), "the gravity vector")
        return _col(self.traj, "", "g")

    # scales (see CHECKS): the size S of the terms a check sums, so that its float64 round-off is
    # ~ N eps S for N terms (the bound of a conserved quantity is relative to S)
    @cached_property
    def recorded(self) -> tuple[Array, Array]:
        """(|r|, |v|) (T, N): the largest position and velocity magnitudes each body's rhat, rhatdot
        went through: the recorded r, rdot of the procedure (rbar for 2, from joint 1 for 4), and
        for the CM-centric procedures 1 and 3 |rhat| + |R|, |rhatdot| + |Rdot| when the R, Rdot
        columns exist (the records were made by subtracting them)."""
        body = MOMENTUM_BODY[self.N]
        r = _norm(_many(self.traj, discover(self.traj).bodies, body[2], (3,)))
        v = _norm(_many(self.traj, discover(self.traj).bodies, body[3], (3,)))
        if self.N in (1, 3) and not self.traj.missing(field_columns("", "R") + field_columns("", "Rdot")):
            r = r + _norm(_col(self.traj, "", "R"))[:, None]
            v = v + _norm(_col(self.traj, "", "Rdot"))[:, None]
        return r, v

    @cached_property
    def p_scale(self) -> float:
        """max_t sum_j m_j max(|rhatdot_j|, |v_j|): p_sys sums the bodies' momenta, each with the
        round-off of the velocity it was made from (in gravity |rbardot| >> |rhatdot|)."""
        v = np.maximum(_norm(self.mt.rhatdot), self.recorded[1])
        return float(np.max(np.einsum("tn,tn->t", self.mt.m, v)))

    @cached_property
    def P_scale(self) -> float:
        rbardot = self.mt.rhatdot + self.mR[1][:, None]
        return float(np.max(np.einsum("tn,tn->t", self.mt.m, _norm(rbardot))))

    @cached_property
    def H_scale(self) -> float:
        """max_t sum_j (|I_j omega_j| + m_j (|rhat_j| |rhatdot_j| + |r_j| |rhatdot_j| + |rhat_j| |v_j|))
        + sum_k |h_k|: the terms of Eq. 10 and the round-off carried into rhat x rhatdot by the
        subtractions rhat = r - R, rhatdot = v - Rdot (r, v: ``recorded``)."""
        t = self.mt
        r, v = self.recorded
        a, b = _norm(t.rhat), _norm(t.rhatdot)
        terms = (
            _norm(np.einsum("tnij,tnj->tni", t.I, t.omega)).sum(axis=1)
            + np.einsum("tn,tn->t", t.m, a * b + np.maximum(r - a, 0) * b + a * np.maximum(v - b, 0))
            + _norm(t.h).sum(axis=1)
        )
        return float(np.max(terms))

    @cached_property
    def L_scale(self) -> float:
        t = self.mt
        return float(np.max(np.sqrt(np.einsum("tn,tni,tni->t", t.m, t.rhat, t.rhat) / self.M)))

    @cached_property
    def E_scale(self) -> float:
        return float(max(np.max(self.KE), np.max(np.abs(self.PE - self.PE[0]))))

    def engine(self, name: str) -> Array | None:
        cols = (
            [f"engine.{name}"]
            if name in ("KE", "PE", "E", "W_in", "W_diss")
            else [f"engine.{name}[{c}]" for c in (1, 2, 3)]
        )
        present = [c for c in cols if c in self.traj]
        if not present:
            return None
        _require(self.traj, cols, f"engine.{name}")
        return self.traj[cols[0]] if len(cols) == 1 else self.traj.stack(cols)


def _entry(ctx: _Context, name: str, d: Array, scale: float, **extra) -> dict:
    """max_abs, max_rel, drift_per_s of a deviation d (T,) or (T, 3) from its target."""
    series = _norm(d)
    max_abs = float(np.max(series))
    return {
        "series_abs": series,
        "quantity": CHECKS[name].quantity,
        "unit": CHECKS[name].unit,
        "max_abs": max_abs,
        "scale": scale,
        "scale_is": CHECKS[name].scale,
        "max_rel": _rel(max_abs, scale),
        "drift_per_s": _drift(ctx.t, d),
        **extra,
    }


def _gravity_note(ctx: _Context, name: str) -> dict:
    if ctx.traj.missing(field_columns("", "g")):
        return {}
    g = ctx.g
    if np.any(g != 0):
        return {"note": f"g = {g[0].tolist()} m/s^2 is not zero: {name} holds only without external force"}
    return {}


def _check_p_sys_zero(ctx: _Context) -> dict:
    return _entry(ctx, "p_sys_zero", ctx.p_sys, ctx.p_scale)


def _check_P_sys_constant(ctx: _Context) -> dict:
    P = ctx.M[:, None] * ctx.mR[1]
    return _entry(ctx, "P_sys_constant", P - P[0], ctx.P_scale, **_gravity_note(ctx, "P_sys_constant"))


def _check_H_sys_constant(ctx: _Context) -> dict:
    return _entry(ctx, "H_sys_constant", ctx.H_sys - ctx.H_sys[0], ctx.H_scale)


def _check_R_constant(ctx: _Context) -> dict:
    R, Rdot = ctx.mR
    dR = R - R[0]
    R_abs, Rdot_abs = float(np.max(_norm(dR))), float(np.max(_norm(Rdot)))
    e = _entry(
        ctx,
        "R_constant",
        dR,
        ctx.L_scale,
        R_max_abs=R_abs,
        Rdot_max_abs=Rdot_abs,
        span_s=ctx.span,
        **_gravity_note(ctx, "R_constant"),
    )
    e["max_abs"] = max(R_abs, ctx.span * Rdot_abs)
    e["max_rel"] = _rel(e["max_abs"], ctx.L_scale)
    e["series_abs"] = np.maximum(_norm(dR), ctx.span * _norm(Rdot))
    return e


def _check_R_parabolic(ctx: _Context) -> dict:
    R, Rdot = ctx.mR
    g = ctx.g
    if np.any(g != g[0]):
        k = int(np.flatnonzero(np.any(g != g[0], axis=1))[0])
        raise CheckError(f"{ctx.traj.source}: R_parabolic needs constant gravity, g changes at row {k + 1}")
    tau = ctx.t - ctx.t[0]
    A = np.column_stack((np.ones_like(tau), tau))
    coef = np.linalg.lstsq(A, R - 0.5 * np.outer(tau * tau, g[0]), rcond=None)[0]  # rows R0, V0
    eR = R - A @ coef - 0.5 * np.outer(tau * tau, g[0])
    eRdot = Rdot - Rdot[0] - np.outer(tau, g[0])
    R_abs, Rdot_abs = float(np.max(_norm(eR))), float(np.max(_norm(eRdot)))
    e = _entry(
        ctx,
        "R_parabolic",
        eRdot,
        ctx.L_scale,
        R_max_abs=R_abs,
        Rdot_max_abs=Rdot_abs,
        span_s=ctx.span,
        R0=coef[0].tolist(),
        V0=coef[1].tolist(),
        V0_minus_Rdot0=(coef[1] - Rdot[0]).tolist(),
        g=g[0].tolist(),
    )
    e["max_abs"] = max(R_abs, ctx.span * Rdot_abs)
    e["max_rel"] = _rel(e["max_abs"], ctx.L_scale)
    e["series_abs"] = np.maximum(_norm(eR), ctx.span * _norm(eRdot))
    e["drift_is"] = "slope of Rdot - Rdot(t0) - g (t - t0): excess acceleration [m/s^2]"
    if np.all(g[0] == 0):
        e["note"] = "g = 0: the parabola is a straight line"
    return e


def _check_energy_constant(ctx: _Context) -> dict:
    E = ctx.KE + ctx.PE
    return _entry(ctx, "energy_constant", E - E[0], ctx.E_scale)


def _check_energy_balance(ctx: _Context) -> dict:
    _require(ctx.traj, ["engine.W_in", "engine.W_diss"], "energy_balance (work of inputs and dampers)")
    W_in, W_diss = ctx.traj["engine.W_in"], ctx.traj["engine.W_diss"]
    B = ctx.KE + ctx.PE - W_in - W_diss
    scale = max(ctx.E_scale, float(np.max(np.abs(W_in))), float(np.max(np.abs(W_diss))))
    return _entry(ctx, "energy_balance", B - B[0], scale)


def _check_KE_constant(ctx: _Context) -> dict:
    return _entry(ctx, "KE_constant", ctx.KE - ctx.KE[0], float(np.max(ctx.KE)))


def _check_engine_agreement(ctx: _Context) -> dict:
    engine = {q: ctx.engine(q) for q in ENGINE_QUANTITIES}
    if all(v is None for v in engine.values()):
        raise CheckError(
            f"{ctx.traj.source}: engine_agreement needs engine columns, e.g. engine.p_sys[1..3], "
            f"engine.H_sys[1..3], engine.KE, engine.PE; none found"
        )
    quantities, series_rel = {}, {}
    for q, ref in engine.items():
        if ref is None:
            continue
        if q == "p_sys":  # p_sys ~ 0 by definition: compare on the scale of the momenta it sums
            mine, scale = ctx.p_sys, max(ctx.p_scale, ctx.P_scale)
        elif q == "P_sys":
            mine, scale = ctx.M[:, None] * ctx.mR[1], ctx.P_scale
        elif q == "H_sys":
            mine, scale = ctx.H_sys, ctx.H_scale
        elif q == "R":
            mine = ctx.mR[0]
            scale = float(max(np.max(_norm(mine)), ctx.L_scale))
        elif q == "Rdot":
            mine, scale = ctx.mR[1], ctx.P_scale / float(np.min(ctx.M))
        elif q == "KE":
            mine, scale = ctx.KE, float(np.max(np.abs(ctx.KE)))
        elif q == "PE":
            mine, scale = ctx.PE, float(max(np.max(np.abs(ctx.PE)), ctx.E_scale))
        else:
            mine = ctx.KE + ctx.PE
            scale = float(max(np.max(np.abs(mine)), ctx.E_scale))
        d = mine - ref
        a = float(np.max(_norm(d)))
        quantities[q] = {"max_abs": a, "scale": scale, "max_rel": _rel(a, scale), "drift_per_s": _drift(ctx.t, d)}
        series_rel[q] = _norm(d) / scale if scale > 0 else np.where(_norm(d) == 0, 0.0, np.inf)
    worst = max(quantities, key=lambda q: quantities[q]["max_rel"])
    w = quantities[worst]
    return {
        "series_rel": np.max(list(series_rel.values()), axis=0),
        "quantity": CHECKS["engine_agreement"].quantity,
        "unit": "(per quantity)",
        "worst": worst,
        "max_abs": w["max_abs"],
        "scale": w["scale"],
        "scale_is": "p_sys: max(sum_j m_j |rhatdot_j|, sum_j m_j |rbardot_j|); P_sys: sum_j m_j |rbardot_j|; "
        "H_sys: as H_sys_constant; R: max(|R|, radius of gyration); Rdot: P_sys scale / M; KE: max KE; "
        "PE, E: max(|value|, energy scale); maxima over rows",
        "max_rel": w["max_rel"],
        "drift_per_s": w["drift_per_s"],
        "quantities": quantities,
    }


CHECK_FUNCTIONS = {
    "p_sys_zero": _check_p_sys_zero,
    "P_sys_constant": _check_P_sys_constant,
    "H_sys_constant": _check_H_sys_constant,
    "R_constant": _check_R_constant,
    "R_parabolic": _check_R_parabolic,
    "energy_constant": _check_energy_constant,
    "energy_balance": _check_energy_balance,
    "KE_constant": _check_KE_constant,
    "engine_agreement": _check_engine_agreement,
}


def default_checks(traj) -> dict[str, None]:
    """engine_agreement (when the file has engine.* columns) and p_sys_zero, default bounds."""
    traj = as_trajectory(traj)
    has_engine = any(c.startswith("engine.") and c not in ("engine.W_in", "engine.W_diss") for c in traj.names)
    return {**({"engine_agreement": None} if has_engine else {}), "p_sys_zero": None}


def _not_computed(e: dict) -> str | None:
    """What a check could not compute, or None: its deviation, scale and drift must be finite
    numbers (an input cell that is NaN or inf, or so large that the products overflow float64,
    makes them NaN or inf; a check must then fail, never pass on what it could not compute).
    max_rel may be inf only where the scale is 0 (a real failure, not a missing number)."""
    parts = {"": e, **{f"{q} ": d for q, d in e.get("quantities", {}).items()}}
    for label, d in parts.items():
        for key in ("max_abs", "scale", "drift_per_s"):
            if key in d and not math.isfinite(d[key]):
                return f"{label or ''}{key} is {d[key]} (not computable)"
    return None


def culprit(traj: Trajectory) -> str:
    """The cell that makes the checker's quantities non-finite: the first NaN or inf cell (row by
    row) of the columns the checker reads, else the cell of largest magnitude (its products
    overflow), named by row, time and column."""
    names = [c for c in traj.names if c != "time" and not c.startswith(("q.", "qd.", "u."))]
    X = traj.stack(names)
    bad = np.argwhere(~np.isfinite(X))
    if bad.size:
        k, j = bad[0]
        what = "is not a finite number"
    else:
        k, j = np.unravel_index(int(np.argmax(np.abs(X))), X.shape)
        what = "is too large: the sums and products of the records overflow float64"
    return f"row {k + 1} (t = {float(traj.time[k]):.6g} s), column {names[j]} = {float(X[k, j])!r} {what}"


def _json_safe(x):
    if isinstance(x, dict):
        return {k: _json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_safe(v) for v in x]
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.bool_):
        return bool(x)
    return x


def conservation_report(
    traj,
    checks: Mapping[str, object] | Iterable[str] | None = None,
    procedure: int = 1,
    energy_procedure: int | None = None,
    series: dict | None = None,
) -> dict:
    """Run the named checks on a trajectory by MBS Momentum/Energy Testing Procedure ``procedure`` (momentum and
    energy; ``energy_procedure`` if given for the energy: the documents number the notations
    differently, e.g. inertial absolute records are momentum Procedure 2 but energy Procedure 1).

    checks: {name: bound} (bound a number, "abs:x", "rel:x" or None for the default; see
    ``parse_bound``), or an iterable of names (default bounds), or None (``default_checks``).
    Each entry: max_abs (max over rows of the deviation from the target: 0 for p_sys, the initial
    value for the constants, the fitted parabola for R), max_rel = max_abs / scale (scale_is says
    which), drift_per_s (least-squares slope of the deviation; the norm for vectors, signed for
    scalars), bound, bound_on ("max_abs" or "max_rel"), passed. Non-finite numbers become None
    (JSON null). Raises CheckError on an unknown check or procedure or missing columns.

    series: a dict to fill with {check name: (T,) the per-row value compared against the bound
    (the deviation's norm, divided by the scale when the bound is relative)}, for plots."""
    traj = as_trajectory(traj)
    N = check_procedure(procedure)
    N_E = N if energy_procedure is None else check_procedure(energy_procedure)
    if checks is None:
        checks = default_checks(traj)
    elif not isinstance(checks, Mapping):
        checks = {name: None for name in checks}
    bounds = {name: parse_bound(name, value) for name, value in checks.items()}
    if not bounds:
        raise CheckError("no checks given: expected at least one of " + ", ".join(CHECKS))
    sysm = discover(traj)
    ctx = _Context(traj, N, N_E)
    results = {}
    for name, (kind, bound) in bounds.items():
        with np.errstate(all="ignore"):  # overflow and NaN are found below and reported, never warned
            e = CHECK_FUNCTIONS[name](ctx)
        why = _not_computed(e)
        if why:
            e = {
                "quantity": CHECKS[name].quantity,
                "unit": CHECKS[name].unit,
                "max_abs": None,
                "scale": None,
                "max_rel": None,
                "drift_per_s": None,
                "not_computable": f"{why}: {culprit(traj)}",
            }
        value = e["max_abs"] if kind == "abs" else e["max_rel"]
        e.update(bound=bound, bound_on=f"max_{kind}", passed=bool(value is not None and value <= bound))
        per_row = e.pop("series_rel", None)
        per_row_abs = e.pop("series_abs", None)
        if series is not None:
            scale = e["scale"]
            if per_row_abs is None:  # engine_agreement: the worst relative difference per row
                series[name] = per_row if kind == "rel" else None
            else:
                series[name] = (
                    per_row_abs
                    if kind == "abs"
                    else (per_row_abs / scale if scale > 0 else np.where(per_row_abs == 0, 0.0, np.inf))
                )
        results[name] = e
    t = traj.time
    g = ctx.g if all(c in traj for c in field_columns("", "g")) else None
    report = {
        "file": traj.source,
        "procedure": N,
        "procedure_is": MOMENTUM_PROCEDURES[N],
        "energy_procedure": N_E,
        "energy_procedure_is": ENERGY_PROCEDURES[N_E],
        "rows": traj.n_rows,
        "t0": float(t[0]),
        "t1": float(t[-1]),
        "bodies": list(sysm.bodies),
        "wheels": list(sysm.wheels),
        "springs": list(sysm.springs),
        "g": None if g is None else g[0].tolist(),
        "checks": results,
        "passed": all(e["passed"] for e in results.values()),
    }
    return _json_safe(report)


def _fmt(x) -> str:
    return "-" if x is None else f"{x:.3e}"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def summary_table(report: dict, verdict: str = "overall") -> str:
    """The report as a fixed-width text table, one line per check, and the verdict of these
    checks (``verdict`` names it: a scenario's run calls it "conservation checks", since its
    references and final values are judged on lines of their own)."""
    r = report
    head = (
        f"{r['file']}: momentum procedure {r['procedure']} ({r['procedure_is']}), energy procedure "
        f"{r['energy_procedure']} ({r['energy_procedure_is']}); {r['rows']} rows, "
        f"t = {r['t0']:.6g} .. {r['t1']:.6g} s; {_count(len(r['bodies']), 'body', 'bodies')}"
        f"{' and ' + _count(len(r['wheels']), 'reaction wheel', 'reaction wheels') if r['wheels'] else ''}, "
        f"{_count(len(r['springs']), 'spring', 'springs')}; g = {r['g']}"
    )
    lines = [head, f"{'check':<18} {'max_abs':>10} {'unit':<8} {'max_rel':>10} {'drift/s':>10}  {'bound':<18} result"]
    for name, e in r["checks"].items():
        unit = "" if e["unit"].startswith("(") else e["unit"]
        worst = f" (worst: {e['worst']})" if "worst" in e else ""
        lines.append(
            f"{name:<18} {_fmt(e['max_abs']):>10} {unit:<8} {_fmt(e['max_rel']):>10} "
            f"{_fmt(e['drift_per_s']):>10}  {e['bound_on'][4:] + ' <= ' + format(e['bound'], '.3g'):<18} "
            f"{'PASS' if e['passed'] else 'FAIL'}{worst}"
        )
        for q, d in e.get("quantities", {}).items():
            lines.append(
                f"  {q:<16} {_fmt(d['max_abs']):>10} {'':<8} {_fmt(d['max_rel']):>10} {_fmt(d['drift_per_s']):>10}"
            )
        if "note" in e:
            lines.append(f"  note: {e['note']}")
        if "not_computable" in e:
            lines.append(f"  not computable: {e['not_computable']}")
    n_fail = sum(not e["passed"] for e in r["checks"].values())
    lines.append(f"{verdict}: {'FAIL' if n_fail else 'PASS'} ({len(r['checks'])} checks, {n_fail} failed)")
    return "\n".join(lines)


def run_check(
    path: str | os.PathLike,
    procedure: int = 1,
    checks: Mapping[str, object] | Iterable[str] | None = None,
    energy_procedure: int | None = None,
) -> tuple[dict, bool]:
    """Read a run folder or a trajectory file (``trajectory.read_run``: a run's trajectory.csv is
    joined with its records.csv) and run ``conservation_report``: (report, all checks passed)."""
    check_procedure(procedure)
    if energy_procedure is not None:
        check_procedure(energy_procedure)
    report = conservation_report(read_run(path), checks, procedure, energy_procedure)
    return report, report["passed"]


# ---- command line --------------------------------------------------------------------------
CHECK_HELP = (
    """Recompute p_sys, H_sys, R, Rdot (MBS Momentum Testing) and KE, PE (MBS Energy Testing)
from the body records in a trajectory CSV (ours or another simulator's; column format in
mbsfmu/trajectory.py) by Procedure N, and check them. Checks (--expect NAME[=BOUND], BOUND a number, abs:X or rel:X):
"""
    + "\n".join(
        f"  {n}: {s.quantity} [{s.unit}]; default {s.default[0]} <= {s.default[1]:g}" for n, s in CHECKS.items()
    )
    + """
Without --expect: engine_agreement (if engine.* columns exist) and p_sys_zero.
Procedures (records read: momentum, MBS Momentum Testing / energy, MBS Energy Testing):
"""
    + "\n".join(f"  {n}: {MOMENTUM_PROCEDURES[n]} / {ENERGY_PROCEDURES[n]}" for n in PROCEDURES)
    + """
Exit status: 0 all checks pass, 1 a check fails, 2 bad input."""
)


def parse_expect(items: Iterable[str] | None) -> dict[str, object] | None:
    """{name: bound text or None} from ["name=bound", "name", ...]; None when no items."""
    if not items:
        return None
    out: dict[str, object] = {}
    for item in items:
        name, sep, bound = item.partition("=")
        name = name.strip()
        if name not in CHECKS:
            raise CheckError(f"--expect {item!r}: unknown check {name!r}; expected one of {', '.join(CHECKS)}")
        out[name] = bound.strip() if sep else None
        parse_bound(name, out[name])
    return out


def main_check(args: argparse.Namespace) -> int:
    """``mbsfmu check``: print the summary table, optionally write the JSON report; return the exit
    code (0 pass, 1 a check failed). Bad input raises MbsError (the CLI prints it, exit 2)."""
    procedure = check_procedure(args.procedure)
    energy_procedure = getattr(args, "energy_procedure", None)
    checks = parse_expect(args.expect)
    report, ok = run_check(args.trajectory, procedure, checks, energy_procedure)
    print(summary_table(report))
    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=2, allow_nan=False)
                f.write("\n")
        except OSError as e:
            raise CheckError(f"cannot write the JSON report {args.json}: {e.strerror or e}") from None
    return 0 if ok else 1


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``check TRAJECTORY.csv --procedure N [--expect NAME=BOUND ...] [--json OUT]``."""
    p = subparsers.add_parser(
        "check",
        help="check momentum and energy conservation in a trajectory CSV",
        description=CHECK_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "trajectory",
        metavar="TRAJECTORY.csv",
        help="trajectory CSV of any simulator (columns: mbsfmu/trajectory.py), or a run folder of `mbsfmu run` "
        "(its trajectory.csv with the records.csv beside it)",
    )
    p.add_argument(
        "--procedure",
        type=int,
        default=1,
        metavar="N",
        help="MBS Momentum/Energy Testing procedure 1-4 (which records to read; default 1)",
    )
    p.add_argument(
        "--energy-procedure",
        type=int,
        metavar="N",
        help="MBS Energy Testing procedure for KE, PE if not the same N (e.g. inertial absolute "
        "records: --procedure 2 --energy-procedure 1)",
    )
    p.add_argument(
        "--expect", action="append", metavar="NAME[=BOUND]", help="a check to run and its bound (repeatable)"
    )
    p.add_argument("--json", metavar="OUT.json", help="also write the report as JSON")
    p.set_defaults(func=main_check)
    return p


def main(argv: list[str] | None = None) -> int:
    """Standalone ``python -m mbsfmu.checker.checks TRAJECTORY.csv ...`` (same as ``mbsfmu check``)."""
    parser = argparse.ArgumentParser(prog="mbsfmu")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["check", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except MbsError as e:
        print(f"mbsfmu: error: {e}", file=sys.stderr)
        return 2


__all__ = [
    "CHECKS",
    "CheckError",
    "ENERGY_PROCEDURES",
    "EnergyTerms",
    "MOMENTUM_PROCEDURES",
    "MomentumTerms",
    "PROCEDURES",
    "System",
    "add_parser",
    "as_trajectory",
    "conservation_report",
    "default_checks",
    "discover",
    "drift_slope",
    "energy",
    "energy_terms",
    "eq10_H_sys",
    "eq1_KE",
    "eq2_PE",
    "eq9_p_sys",
    "main",
    "main_check",
    "momentum",
    "momentum_terms",
    "parse_bound",
    "run_check",
    "summary_table",
    "TrajectoryError",
]

if __name__ == "__main__":
    sys.exit(main())
