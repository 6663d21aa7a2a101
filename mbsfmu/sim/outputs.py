"""Per-step outputs: body records in the four notations of MBS Momentum Testing and the engine's own momentum
and energy (MBS Momentum Testing and MBS Energy Testing).

Notations (MBS Momentum Testing Figs. 1-2): inertial absolute (r_abs = rbar_i, the CoM in world axes);
inertial from the system CM (r_cm = rhat_i = rbar_i - R); body-1 axes from the system CM
(r_cm_b1 = C_1^T rhat_i); body-1 axes from joint 1 (r_j1_b1 = C_1^T (rbar_i - etabar_1)); and
for MBS Energy Testing Procedure 4 inertial axes from joint 1 (r_j1). Every rate is the inertial time
derivative expressed in the stated axes (so C_1 rdot^1 is the inertial rate, as MBS Momentum Testing
Procedures 3-4 use it). C_1 rotates body-1 axes to world axes; body 1 is the tree's base body.

The engine's own p_sys, H_sys, KE come from other formulas than the checker's: each body's
spatial momentum I_i v_i (RBDA Sec. 2.13) split into its CoM angular momentum and linear
momentum, summed about the system CM; KE = 1/2 qd^T M qd (CRBA).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.dynamics.crba import crba
from ..engine.kinematics import Kinematics
from ..engine.spatial import Array, cross_rows

VEC3 = (
    "omega",
    "omega_b1",
    "r_abs",
    "rdot_abs",
    "r_cm",
    "rdot_cm",
    "r_cm_b1",
    "rdot_cm_b1",
    "r_j1",
    "rdot_j1",
    "r_j1_b1",
    "rdot_j1_b1",
)
SYM6 = ("I", "I_b1")  # inertia about the CoM: xx, yy, zz, xy, xz, yz
SYM_INDEX = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))


@dataclass(frozen=True)
class Invariants:
    """Engine's system quantities, world axes: p_sys = sum m_i rhatdot_i (MBS Momentum Testing Eq. 9, ~0)
    [N s]; P_sys = M_tot Rdot total linear momentum [N s]; H_sys about the system CM incl.
    wheels (Eq. 10) [N m s]; R, Rdot CM position [m] and velocity [m/s]; KE, PE [J]."""

    p_sys: Array
    P_sys: Array
    H_sys: Array
    R: Array
    Rdot: Array
    KE: float
    PE: float

    @property
    def E(self) -> float:
        return self.KE + self.PE


def engine_invariants(
    model, kin: Kinematics, q: Array, qd: Array, spring_pe: float, M: Array | None = None
) -> Invariants:
    """p_sys, P_sys, H_sys, R, Rdot from spatial momenta; KE by the joint-space inertia M (CRBA
    when not given); PE = springs + gravity (MBS Energy Testing Eq. 2: 1/2 sum k theta^2 - sum m g^T rbar)."""
    t = model.tree
    Rw, com = kin.R[1:], t.com[1:]
    h = np.einsum("nij,nj->ni", t.I[1:], kin.v[1:])  # spatial momenta about the body origins, body axes
    L_c = np.einsum("nij,nj->ni", Rw, h[:, :3] - cross_rows(com, h[:, 3:]))  # about each CoM, world axes
    P = np.einsum("nij,nj->ni", Rw, h[:, 3:])  # linear momenta, world axes
    c = kin.p[1:] + np.einsum("nij,nj->ni", Rw, com)  # CoM positions, world
    m = t.mass[1:]
    m_tot = m.sum()
    R_cm = m @ c / m_tot
    P_sys = P.sum(axis=0)
    Rdot = P_sys / m_tot
    # moments of the CM-relative momenta: sum (c_i - R) x m_i Rdot = 0 drops out exactly, which
    # keeps H_sys accurate when the system is far from the origin or fast (free fall)
    p_rel = P - np.outer(m, Rdot)
    H = L_c.sum(axis=0) + cross_rows(c - R_cm, p_rel).sum(axis=0)
    KE = 0.5 * qd @ (crba(t, q) if M is None else M) @ qd
    PE = spring_pe - float(m @ c @ model.gravity)
    return Invariants(p_sys=p_rel.sum(axis=0), P_sys=P_sys, H_sys=H, R=R_cm, Rdot=Rdot, KE=float(KE), PE=float(PE))


def angular_momentum_scale(model, kin: Kinematics) -> float:
    """The magnitude scale of H_sys [N m s]: sum over bodies (wheel rotors included) of |L_c,i|
    + |(c_i - R) x p_rel,i|, the magnitudes of the terms engine_invariants sums into H_sys (seed
    000 Eq. 10: each body's angular momentum about its CoM and the moment of its CM-relative
    momentum). H_sys of a system at rest with spinning wheels is ~0 while this is not: the drift
    of H_sys relative to it is ~ N eps for exact arithmetic on N terms (the report's H_scale is
    the same sum, taken over the trajectory's rows)."""
    t = model.tree
    Rw, com = kin.R[1:], t.com[1:]
    h = np.einsum("nij,nj->ni", t.I[1:], kin.v[1:])
    L_c = np.einsum("nij,nj->ni", Rw, h[:, :3] - cross_rows(com, h[:, 3:]))
    P = np.einsum("nij,nj->ni", Rw, h[:, 3:])
    c = kin.p[1:] + np.einsum("nij,nj->ni", Rw, com)
    m = t.mass[1:]
    R_cm = m @ c / m.sum()
    p_rel = P - np.outer(m, P.sum(axis=0) / m.sum())
    return float(np.linalg.norm(L_c, axis=1).sum() + np.linalg.norm(cross_rows(c - R_cm, p_rel), axis=1).sum())


def body_records(model, kin: Kinematics) -> dict[str, Array]:
    """Records of every rigid body (wheel rotors excluded) and wheel, as flat named columns:
    ``<body>.m``, ``<body>.I[xx..yz]``, ``<body>.<vec>[1..3]`` for vec in VEC3, ``<wheel>.h``,
    ``<wheel>.h_b1``, ``<wheel>.Iw``, and system ``C1[1..9]`` (row-major), ``R``, ``Rdot``,
    ``eta1``, ``etadot1``, ``g``."""
    t = model.tree
    idx = model.rigid_bodies
    m = t.mass[list(idx)]
    C1 = kin.R[1]
    rbar = np.array([kin.p[i] + kin.R[i] @ t.com[i] for i in idx])
    rbardot = np.array([kin.point_velocity(i, t.com[i]) for i in idx])
    omega = kin.omega_world[list(idx)]
    I_w = np.array([kin.R[i] @ t.I_c[i] @ kin.R[i].T for i in idx])
    M = m.sum()
    R = m @ rbar / M
    Rdot = m @ rbardot / M
    eta1, etadot1 = kin.p[1], kin.point_velocity(1, np.zeros(3))
    vec = {
        "omega": omega,
        "omega_b1": omega @ C1,
        "r_abs": rbar,
        "rdot_abs": rbardot,
        "r_cm": rbar - R,
        "rdot_cm": rbardot - Rdot,
        "r_cm_b1": (rbar - R) @ C1,
        "rdot_cm_b1": (rbardot - Rdot) @ C1,
        "r_j1": rbar - eta1,
        "rdot_j1": rbardot - etadot1,
        "r_j1_b1": (rbar - eta1) @ C1,
        "rdot_j1_b1": (rbardot - etadot1) @ C1,
    }
    inert = {"I": I_w, "I_b1": np.einsum("ji,njk,kl->nil", C1, I_w, C1)}
    out: dict[str, Array] = {}
    for k, i in enumerate(idx):
        name = model.body_names[i - 1]
        out[f"{name}.m"] = m[k]
        for key in SYM6:
            for (a, b), lab in zip(SYM_INDEX, ("xx", "yy", "zz", "xy", "xz", "yz")):
                out[f"{name}.{key}[{lab}]"] = inert[key][k, a, b]
        for key in VEC3:
            for c in range(3):
                out[f"{name}.{key}[{c + 1}]"] = vec[key][k, c]
    for wname, (i, _w) in model.wheels.items():
        g = t.axis[i]
        h = t.I_c[i] @ kin.v[i, :3]  # = g I_w thetadot, rotor axes
        h_world = kin.R[i] @ h
        for c in range(3):
            out[f"{wname}.h[{c + 1}]"] = h_world[c]
            out[f"{wname}.h_b1[{c + 1}]"] = (C1.T @ h_world)[c]
        out[f"{wname}.Iw"] = float(g @ t.I_c[i] @ g)
    for c in range(9):
        out[f"C1[{c + 1}]"] = C1.flat[c]
    for key, val in (("R", R), ("Rdot", Rdot), ("eta1", eta1), ("etadot1", etadot1), ("g", model.gravity)):
        for c in range(3):
            out[f"{key}[{c + 1}]"] = val[c]
    return out
