"""The documents' equations: p_sys (MBS Momentum Testing Eq. 9), H_sys (Eq. 10), KE (MBS Energy
Testing Eq. 1), PE (Eq. 2), and the records of Procedures 1-4 turned into their inputs (world axes)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .records import (
    ENERGY_BODY,
    ENERGY_PROCEDURES,
    ENERGY_SYSTEM,
    ENERGY_WHEEL,
    MOMENTUM_BODY,
    MOMENTUM_PROCEDURES,
    MOMENTUM_R,
    MOMENTUM_SYSTEM,
    MOMENTUM_WHEEL,
    Array,
    CheckError,
    as_trajectory,
    check_procedure,
    discover,
    masses,
    needed_columns,
    record,
    records_of,
    require_columns,
)


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


def rotate(C1: Array, v: Array) -> Array:
    """C1 v for every row and item: (T, 3, 3) x (T, n, 3) -> (T, n, 3)."""
    return np.einsum("tij,tnj->tni", C1, v)


def rotate_inertia(C1: Array, I1: Array) -> Array:
    """C1 I^1 C1^T: (T, 3, 3) x (T, n, 3, 3) -> (T, n, 3, 3)."""
    return np.einsum("tij,tnjk,tlk->tnil", C1, I1, C1)


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
    require_columns(
        traj,
        needed_columns(sysm, MOMENTUM_BODY[N], MOMENTUM_WHEEL[N], False, MOMENTUM_SYSTEM[N] + R_fields, False),
        f"momentum by procedure {N} ({MOMENTUM_PROCEDURES[N]})",
    )
    B, W = sysm.bodies, sysm.wheels
    field_I, field_w, field_r, field_rdot = MOMENTUM_BODY[N]
    m = masses(traj, sysm)
    I, omega = records_of(traj, B, field_I, (3, 3)), records_of(traj, B, field_w, (3,))
    r, rdot = records_of(traj, B, field_r, (3,)), records_of(traj, B, field_rdot, (3,))
    h = records_of(traj, W, MOMENTUM_WHEEL[N], (3,))
    nan = np.full((traj.n_rows, 3), np.nan)
    R, Rdot = nan, nan
    if N == 1:  # all given: rhat_j, rhatdot_j, world axes
        rhat, rhatdot = r, rdot
        if with_R:
            R, Rdot = record(traj, "", "R"), record(traj, "", "Rdot")
    elif N == 2:  # rbar_j: R = sum m rbar / M, rhat = rbar - R
        M = m.sum(axis=1)
        R = np.einsum("tn,tni->ti", m, r) / M[:, None]
        Rdot = np.einsum("tn,tni->ti", m, rdot) / M[:, None]
        rhat, rhatdot = r - R[:, None], rdot - Rdot[:, None]
    elif N == 3:  # body-1 axes: rhat = C1 rhat^1, I = C1 I^1 C1^T
        C1 = record(traj, "", "C1")
        rhat, rhatdot = rotate(C1, r), rotate(C1, rdot)
        I, omega, h = rotate_inertia(C1, I), rotate(C1, omega), rotate(C1, h)
        if with_R:
            R, Rdot = record(traj, "", "R"), record(traj, "", "Rdot")
    else:  # body-1 axes from joint 1: c^1 = sum m r^1 / M
        C1 = record(traj, "", "C1")
        M = m.sum(axis=1)
        c1 = np.einsum("tn,tni->ti", m, r) / M[:, None]
        c1dot = np.einsum("tn,tni->ti", m, rdot) / M[:, None]
        rhat, rhatdot = rotate(C1, r - c1[:, None]), rotate(C1, rdot - c1dot[:, None])
        I, omega, h = rotate_inertia(C1, I), rotate(C1, omega), rotate(C1, h)
        if with_R:
            R = record(traj, "", "eta1") + np.einsum("tij,tj->ti", C1, c1)
            Rdot = record(traj, "", "etadot1") + np.einsum("tij,tj->ti", C1, c1dot)
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
    require_columns(
        traj,
        needed_columns(sysm, ENERGY_BODY[N], ENERGY_WHEEL[N], True, ENERGY_SYSTEM[N], True),
        f"energy by procedure {N} ({ENERGY_PROCEDURES[N]})",
    )
    B, W, S = sysm.bodies, sysm.wheels, sysm.springs
    field_I, field_w, field_r, field_rdot = ENERGY_BODY[N]
    m = masses(traj, sysm)
    I, omega = records_of(traj, B, field_I, (3, 3)), records_of(traj, B, field_w, (3,))
    r, rdot = records_of(traj, B, field_r, (3,)), records_of(traj, B, field_rdot, (3,))
    h, Iw = records_of(traj, W, ENERGY_WHEEL[N], (3,)), records_of(traj, W, "Iw", ())
    k, x = records_of(traj, S, "k", ()), records_of(traj, S, "x", ())
    g = record(traj, "", "g")
    bad = [f"{w}.Iw" for j, w in enumerate(W) if np.any(~(Iw[:, j] > 0))]
    if bad:
        raise CheckError(f"{traj.source}: wheel spin inertia must be positive in every row: {', '.join(bad)}")
    if N == 1:  # all given: rbar_i, rbardot_i, world axes
        rbar, rbardot = r, rdot
    elif N == 2:  # rbar = rhat + R
        rbar, rbardot = r + record(traj, "", "R")[:, None], rdot + record(traj, "", "Rdot")[:, None]
    elif N == 3:  # I = C1 I^1 C1^T, omega = C1 omega^1, rbar = C1 rhat^1 + R
        C1 = record(traj, "", "C1")
        I, omega = rotate_inertia(C1, I), rotate(C1, omega)
        rbar = rotate(C1, r) + record(traj, "", "R")[:, None]
        rbardot = rotate(C1, rdot) + record(traj, "", "Rdot")[:, None]
    else:  # rbar = r + eta1 (inertial axes, joint(1) centric)
        rbar, rbardot = r + record(traj, "", "eta1")[:, None], rdot + record(traj, "", "etadot1")[:, None]
    return EnergyTerms(m, I, omega, rbar, rbardot, h, Iw, k, x, g)


def energy(traj, procedure: int) -> tuple[Array, Array]:
    """(KE, PE), each (T,) [J], by MBS Energy Testing Procedure 1-4 and Eqs. 1, 2 (PE = 1/2 sum k x^2 -
    sum m g^T rbar) from a trajectory's records."""
    t = energy_terms(traj, procedure)
    return eq1_KE(t.m, t.I, t.omega, t.rbardot, t.h, t.Iw), eq2_PE(t.k, t.x, t.m, t.g, t.rbar)
