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


def energy_scale(model, kin: Kinematics, KE: float, spring_pe: float) -> float:
    """The magnitude scale of E = KE + PE [J]: KE + |spring_pe| + sum_i m_i |g| |c_i| (wheel rotors
    included), the magnitudes of the terms engine_invariants sums into E (MBS Energy Testing Eqs. 1,
    2: KE's terms are >= 0, each spring's 1/2 k x^2 >= 0, |m_i g . c_i| <= m_i |g| |c_i|). Near an
    equilibrium KE and PE - PE(t0) vanish while each PE term stays: E's rounding is ~ N eps of this
    (the checker's energy scale is the same sum, taken over the trajectory's rows; mbs_invariants'
    E_scale computes it in the C core)."""
    t = model.tree
    c = kin.p[1:] + np.einsum("nij,nj->ni", kin.R[1:], t.com[1:])  # CoM positions, world
    return float(KE + abs(spring_pe) + t.mass[1:] @ np.linalg.norm(c, axis=1) * np.linalg.norm(model.gravity))


SYM_LABELS = ("xx", "yy", "zz", "xy", "xz", "yz")
SYSTEM_VECTORS = ("R", "Rdot", "eta1", "etadot1", "g")


def body_record_names(model) -> tuple[str, ...]:
    """The record columns of ``body_record_values``, in its order (a function of the model only:
    build it once per model). Per rigid body (wheel rotors excluded): ``<body>.m``,
    ``<body>.I[xx..yz]``, ``<body>.I_b1[xx..yz]``, ``<body>.<vec>[1..3]`` for vec in VEC3; per
    wheel ``<wheel>.h[c]``, ``<wheel>.h_b1[c]`` for c = 1..3, ``<wheel>.Iw``; then ``C1[1..9]``
    (row-major), ``R``, ``Rdot``, ``eta1``, ``etadot1``, ``g`` [1..3]."""
    per_body = ["m", *(f"{key}[{lab}]" for key in SYM6 for lab in SYM_LABELS)]
    per_body += [f"{key}[{c + 1}]" for key in VEC3 for c in range(3)]
    names = [f"{model.body_names[i - 1]}.{col}" for i in model.rigid_bodies for col in per_body]
    for wname in model.wheels:
        names += [f"{wname}.{key}[{c + 1}]" for c in range(3) for key in ("h", "h_b1")]
        names.append(f"{wname}.Iw")
    names += [f"C1[{c + 1}]" for c in range(9)]
    names += [f"{key}[{c + 1}]" for key in SYSTEM_VECTORS for c in range(3)]
    return tuple(names)


def body_record_values(model, kin: Kinematics) -> Array:
    """Records of every rigid body and wheel (MBS Momentum Testing Figs. 1-2 notations, see the
    module docstring) as one flat float array in the order of ``body_record_names``."""
    t = model.tree
    idx = np.asarray(model.rigid_bodies, dtype=int)
    m = t.mass[idx]
    Rb = kin.R[idx]
    C1 = kin.R[1]
    rbar = kin.p[idx] + np.einsum("nij,nj->ni", Rb, t.com[idx])
    w, vo = kin.v[idx, :3], kin.v[idx, 3:]
    rbardot = np.einsum("nij,nj->ni", Rb, vo + cross_rows(w, t.com[idx]))  # R (v_o + w x c), RBDA Sec. 2.11
    omega = kin.omega_world[idx]
    I_w = np.einsum("nij,njk,nlk->nil", Rb, t.I_c[idx], Rb)  # R I_c R^T
    M = m.sum()
    R = m @ rbar / M
    Rdot = m @ rbardot / M
    eta1, etadot1 = kin.p[1], kin.point_velocity(1, np.zeros(3))
    I_b1 = np.einsum("ji,njk,kl->nil", C1, I_w, C1)
    a, b = np.array(SYM_INDEX).T
    vec = (
        omega,
        omega @ C1,
        rbar,
        rbardot,
        rbar - R,
        rbardot - Rdot,
        (rbar - R) @ C1,
        (rbardot - Rdot) @ C1,
        rbar - eta1,
        rbardot - etadot1,
        (rbar - eta1) @ C1,
        (rbardot - etadot1) @ C1,
    )  # in VEC3 order
    parts = [np.hstack([m[:, None], I_w[:, a, b], I_b1[:, a, b], *vec]).ravel()]
    for i, _w in model.wheels.values():
        g = t.axis[i]
        h_world = kin.R[i] @ (t.I_c[i] @ kin.v[i, :3])  # = g I_w thetadot, rotor axes, to world
        parts.append(np.append(np.column_stack([h_world, C1.T @ h_world]).ravel(), g @ t.I_c[i] @ g))
    parts.append(np.concatenate([C1.ravel(), R, Rdot, eta1, etadot1, model.gravity]))
    return np.concatenate(parts)


def body_records(model, kin: Kinematics) -> dict[str, float]:
    """``body_record_names`` -> ``body_record_values`` as a mapping (build the names once per
    model where this runs per step: the Simulator does)."""
    return dict(zip(body_record_names(model), body_record_values(model, kin).tolist()))
