"""Wojtusch's four analytic systems (compound pendulum, spring pendulum, compound pendulum on a
trolley, SCARA) against the engine, each loaded from its model file in scenarios/models/.

Reference: J. Wojtusch, "Analytical Tests for MBSlib" (TU Darmstadt), read with the errata in
docs/explanation/errata.md: gravity (0, -g, 0), revolute joints about +z; the compound pendulum's I = m l^2/3
is about the pivot (uniform rod, CoM at l/2); the spring is relaxed at q = 0; SCARA's r_i is
measured from link i's distal end; erratum 1 (trolley tau2: sign of the qdd2 term) and erratum 2
(SCARA M11: sign of the r2y term) are applied to the printed formulas.

Every parameter is read from the model file (``model.tree`` mass properties, named frames, joint
origins, ``model.spec`` springs), never repeated here, so these tests check the files as well as
the engine. Three references meet: the engine, the seed's closed forms (corrected), and an
independent Lagrange derivation from hand-written planar kinematics (derivatives by complex step,
exact to rounding). States avoid the cases that hide the errata: angles with |sin q| >= sin 0.1
(so q2 is not in {0, pi}), accelerations |qdd| >= 0.2.

Tolerances: rtol = RTOL = 1e-10 with atol = ATOL = 1e-12 in the SI unit of the compared quantity
(m, m/s, m/s^2, rad/s, kg, kg m^2, N, N m, ...); every compared quantity is O(1e-2..1e2).
States come from the seeded ``rng`` fixture of conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from types import SimpleNamespace

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine import joints
from tests.support.paths import MODELS

RTOL = 1e-10
ATOL = 1e-12
N_STATES = 40
H_CS = 1e-30  # complex step: f'(x) = Im f(x + i h) / h, free of subtractive cancellation
WORST: dict[tuple[str, str], tuple[float, float]] = {}  # (system, quantity) -> (max |error|, max error / tolerance)


@pytest.fixture(scope="module", autouse=True)
def _report_worst():
    """Print the worst discrepancy per system and quantity (shown with ``pytest -s``)."""
    yield
    for (system, what), (err, use) in sorted(WORST.items()):
        print(f"MBSlib {system:18s} {what:34s} max|err| {err:.2e}  max err/tol {use:.2e}")


def check(actual, desired, system: str, what: str) -> None:
    """assert_allclose at (RTOL, ATOL), recording the worst discrepancy."""
    actual, desired = np.asarray(actual, dtype=float), np.asarray(desired, dtype=float)
    err = np.abs(actual - desired)
    old = WORST.get((system, what), (0.0, 0.0))
    WORST[(system, what)] = (
        max(old[0], float(err.max(initial=0.0))),
        max(old[1], float((err / (ATOL + RTOL * np.abs(desired))).max(initial=0.0))),
    )
    np.testing.assert_allclose(actual, desired, rtol=RTOL, atol=ATOL, err_msg=f"{system}: {what}")


def clearly_differ(a, b) -> bool:
    """a and b differ by more than 1e4 times the comparison tolerance somewhere."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return bool(np.any(np.abs(a - b) > 1e4 * (ATOL + RTOL * np.abs(b))))


# ---- reading the files ----------------------------------------------------------------------
@cache
def load(name: str) -> mbsfmu.Model:
    return mbsfmu.load_model(MODELS / f"{name}.yaml")


def body(model: mbsfmu.Model, name: str):
    """(index in model.tree, spec Body) of a body."""
    return model.body_index[name], next(b for b in model.spec.bodies if b.name == name)


def frame_point(model: mbsfmu.Model, frame: str) -> np.ndarray:
    """(3,) position of a named frame in its body's coordinates [m]."""
    return model.frames[frame][1].p


def gravity_g(model: mbsfmu.Model) -> float:
    """g > 0 of the seed's gravity (0, -g, 0) [m/s^2]."""
    return -float(model.gravity[1])


def springs(model: mbsfmu.Model) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(k, d, q0), each (nv,), of the joint springs in the file (zeros where a joint has none)."""
    k, d, q0 = np.zeros(model.nv), np.zeros(model.nv), np.zeros(model.nv)
    for b in model.spec.bodies:
        if b.joint.spring is not None:
            sl = model.v_slice(b.joint.name)
            k[sl], d[sl], q0[sl] = b.joint.spring.k, b.joint.spring.d, b.joint.spring.q0
    return k, d, q0


def random_states(rng: np.random.Generator, model: mbsfmu.Model, n: int = N_STATES):
    """n states (q, qd, qdd, tau) of a model with 1-DoF joints: angles |q| in [0.1, pi - 0.1],
    offsets |q| <= 1 m, rates |qd| <= 2, accelerations 0.2 <= |qdd| <= 3, forces |tau| <= 5."""
    nv = model.nv
    revolute = model.tree.jtype[1:] == joints.REVOLUTE
    for _ in range(n):
        sign = rng.choice((-1.0, 1.0), (2, nv))
        q = np.where(revolute, sign[0] * rng.uniform(0.1, np.pi - 0.1, nv), rng.uniform(-1.0, 1.0, nv))
        yield q, rng.uniform(-2.0, 2.0, nv), sign[1] * rng.uniform(0.2, 3.0, nv), rng.uniform(-5.0, 5.0, nv)


# ---- planar helpers (complex-safe, so complex steps go through them) ------------------------
def Rz(theta) -> np.ndarray:
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s, 0 * c], [s, c, 0 * c], [0 * c, 0 * c, 1 + 0 * c]])


def jacobian6(Jxy, Jtheta) -> np.ndarray:
    """(6, nv) [angular; linear] world-axes Jacobian of a planar point: rows wz, vx, vy."""
    Jxy, Jtheta = np.asarray(Jxy), np.asarray(Jtheta)
    J = np.zeros((6, Jtheta.size), dtype=np.result_type(Jxy, Jtheta, float))
    J[2], J[3:5] = Jtheta, Jxy
    return J


def complex_step(f: Callable, x: np.ndarray, dx: np.ndarray) -> np.ndarray:
    """Directional derivative of f at x along dx, exact to rounding for analytic f."""
    return np.imag(f(x + 1j * H_CS * dx)) / H_CS


# ---- the four systems as printed (errata applied) -------------------------------------------
@dataclass(frozen=True)
class System:
    """A seed-001 system: how to read its parameters from its file, what the file must say, and
    the seed's closed forms. ``frames(p, q)`` gives {frame: (xy (2,) [m], Jxy (2, nv), Jtheta (nv,))}
    (printed direct kinematics and their derivatives; the frame's angle is Jtheta . q);
    ``bodies(p, q)`` the planar motion of each body's frame for the Lagrange derivation:
    [(body, theta, Jtheta (nv,), origin (2,), Jorigin (2, nv))]."""

    name: str
    params: Callable
    check_file: Callable
    frames: Callable
    tau: Callable  # printed inverse dynamics (errata applied): tau(p, q, qd, qdd)
    qdd: Callable  # printed direct dynamics: qdd(p, q, qd, tau)
    bodies: Callable


def _rod_file_checks(model, rod: str, joint_origin_zero: bool = True) -> None:
    """The rod is a uniform rod hanging along -y from its joint: tip at (0, -l, 0), CoM at l/2,
    I about the pivot = m l^2/3 (errata: the printed I is about the pivot)."""
    i, b = body(model, rod)
    tip = frame_point(model, "tip")
    l = -tip[1]
    m = model.tree.mass[i]
    assert l > 0 and tip[0] == 0 and tip[2] == 0
    assert b.joint.type == "revolute" and b.joint.axis == (0.0, 0.0, 1.0)
    if joint_origin_zero:
        assert b.joint.origin.xyz == (0.0, 0.0, 0.0) and b.joint.origin.rpy == (0.0, 0.0, 0.0)
    np.testing.assert_allclose(model.tree.com[i], tip / 2, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(model.tree.I_c[i][2, 2] + m * (l / 2) ** 2, m * l**2 / 3, rtol=RTOL, atol=ATOL)


def _gravity_checks(model) -> None:
    assert model.gravity[0] == 0 and model.gravity[2] == 0 and gravity_g(model) > 0


# 1. Compound pendulum ------------------------------------------------------------------------
def _compound_params(model):
    i, _ = body(model, "rod")
    return SimpleNamespace(m=model.tree.mass[i], l=-frame_point(model, "tip")[1], g=gravity_g(model))


def _compound_file(model, p):
    _gravity_checks(model)
    _rod_file_checks(model, "rod")
    assert model.joint_names == ("q1",) and springs(model)[0][0] == 0 and springs(model)[1][0] == 0


COMPOUND = System(
    name="compound_pendulum",
    params=_compound_params,
    check_file=_compound_file,
    frames=lambda p, q: {
        "tip": (
            np.array([p.l * np.sin(q[0]), -p.l * np.cos(q[0])]),
            np.array([[p.l * np.cos(q[0])], [p.l * np.sin(q[0])]]),
            np.array([1.0]),
        )
    },
    tau=lambda p, q, qd, qdd: np.array([p.m * p.l**2 / 3 * qdd[0] + p.m * p.g * p.l / 2 * np.sin(q[0])]),
    qdd=lambda p, q, qd, tau: np.array([3 * (tau[0] - p.m * p.g * p.l / 2 * np.sin(q[0])) / (p.m * p.l**2)]),
    bodies=lambda p, q: [("rod", q[0], np.array([1.0]), np.zeros(2), np.zeros((2, 1)))],
)


# 2. Spring pendulum --------------------------------------------------------------------------
def _spring_params(model):
    i, b = body(model, "mass")
    return SimpleNamespace(m=model.tree.mass[i], k=b.joint.spring.k, d=b.joint.spring.d, g=gravity_g(model))


def _spring_file(model, p):
    _gravity_checks(model)
    i, b = body(model, "mass")
    assert b.parent == "world" and b.joint.type == "prismatic" and b.joint.axis == (0.0, -1.0, 0.0)
    assert b.joint.origin.xyz == (0.0, 0.0, 0.0) and b.joint.spring.q0 == 0.0  # errata: relaxed at q = 0
    assert p.m > 0 and p.k > 0 and p.d > 0
    assert np.all(model.tree.com[i] == 0) and np.all(model.tree.I_c[i] == 0)  # a point mass
    assert np.all(frame_point(model, "endpoint") == 0)


SPRING = System(
    name="spring_pendulum",
    params=_spring_params,
    check_file=_spring_file,
    frames=lambda p, q: {"endpoint": (np.array([0 * q[0], -q[0]]), np.array([[0.0], [-1.0]]), np.array([0.0]))},
    tau=lambda p, q, qd, qdd: np.array([p.m * qdd[0] + p.d * qd[0] + p.k * q[0] - p.m * p.g]),
    qdd=lambda p, q, qd, tau: np.array([(p.m * p.g - p.d * qd[0] - p.k * q[0] + tau[0]) / p.m]),
    bodies=lambda p, q: [("mass", 0 * q[0], np.array([0.0]), np.array([0 * q[0], -q[0]]), np.array([[0.0], [-1.0]]))],
)


# 3. Compound pendulum on a massless trolley -------------------------------------------------
def _trolley_params(model):
    i, b = body(model, "pendulum")
    return SimpleNamespace(
        m=model.tree.mass[i],
        l=-frame_point(model, "tip")[1],
        k=b.joint.spring.k,
        d=b.joint.spring.d,
        g=gravity_g(model),
    )


def _trolley_file(model, p):
    _gravity_checks(model)
    i, b = body(model, "trolley")
    assert b.parent == "world" and b.joint.type == "prismatic" and b.joint.axis == (1.0, 0.0, 0.0)
    assert b.joint.origin.xyz == (0.0, 0.0, 0.0) and b.joint.spring is None
    assert model.tree.mass[i] == 0 and np.all(model.tree.I_c[i] == 0)  # massless trolley
    assert np.all(frame_point(model, "cart") == 0)
    _, pend = body(model, "pendulum")
    assert pend.parent == "trolley" and pend.joint.spring.q0 == 0.0 and p.k > 0 and p.d > 0
    _rod_file_checks(model, "pendulum")
    assert model.joint_names == ("q1", "q2")


def _trolley_tau(p, q, qd, qdd):
    """Printed inverse dynamics with erratum 1 (+1/3 m l^2 qdd2 in tau2)."""
    m, l, g, k, d = p.m, p.l, p.g, p.k, p.d
    s2, c2 = np.sin(q[1]), np.cos(q[1])
    return np.array(
        [
            qdd[0] * m + 0.5 * qdd[1] * m * l * c2 - 0.5 * qd[1] ** 2 * m * l * s2,
            0.5 * qdd[0] * m * l * c2 + 1 / 3 * qdd[1] * m * l**2 + qd[1] * d + q[1] * k + 0.5 * g * m * l * s2,
        ]
    )


def _trolley_tau_printed(p, q, qd, qdd):
    """Inverse dynamics exactly as printed (erratum 1 not applied: -1/3 m l^2 qdd2 in tau2)."""
    return _trolley_tau(p, q, qd, qdd) - np.array([0.0, 2 / 3 * p.m * p.l**2 * qdd[1]])


def _trolley_qdd(p, q, qd, tau):
    """Printed direct dynamics (correct as printed, see the errata)."""
    m, l, g, k, d = p.m, p.l, p.g, p.k, p.d
    s2, c2 = np.sin(q[1]), np.cos(q[1])
    return np.array(
        [
            (
                2 * m * l**2 * s2 * qd[1] ** 2
                + 6 * d * c2 * qd[1]
                + 6 * k * c2 * q[1]
                + 3 * g * m * l * c2 * s2
                + 4 * l * tau[0]
                - 6 * c2 * tau[1]
            )
            / (4 * m * l - 3 * m * l * c2**2),
            (
                3 * m * l**2 * c2 * s2 * qd[1] ** 2
                + 12 * d * qd[1]
                + 12 * k * q[1]
                + 6 * g * m * l * s2
                + 6 * l * c2 * tau[0]
                - 12 * tau[1]
            )
            / (3 * m * l**2 * c2**2 - 4 * m * l**2),
        ]
    )


TROLLEY = System(
    name="trolley_pendulum",
    params=_trolley_params,
    check_file=_trolley_file,
    frames=lambda p, q: {
        "cart": (np.array([q[0], 0 * q[0]]), np.array([[1.0, 0.0], [0.0, 0.0]]), np.array([0.0, 0.0])),
        "tip": (
            np.array([q[0] + p.l * np.sin(q[1]), -p.l * np.cos(q[1])]),
            np.array([[1.0, p.l * np.cos(q[1])], [0.0, p.l * np.sin(q[1])]]),
            np.array([0.0, 1.0]),
        ),
    },
    tau=_trolley_tau,
    qdd=_trolley_qdd,
    bodies=lambda p, q: [
        ("trolley", 0 * q[0], np.array([0.0, 0.0]), np.array([q[0], 0 * q[0]]), np.array([[1.0, 0.0], [0.0, 0.0]])),
        ("pendulum", q[1], np.array([0.0, 1.0]), np.array([q[0], 0 * q[0]]), np.array([[1.0, 0.0], [0.0, 0.0]])),
    ],
)


# 4. SCARA ------------------------------------------------------------------------------------
def _scara_params(model):
    i1, _ = body(model, "link1")
    i2, b2 = body(model, "link2")
    t = model.tree
    l1, l2 = b2.joint.origin.xyz[0], frame_point(model, "tip")[0]
    r1 = t.com[i1] - np.array([l1, 0.0, 0.0])  # errata: r_i from the link's distal end
    r2 = t.com[i2] - np.array([l2, 0.0, 0.0])
    return SimpleNamespace(
        m1=t.mass[i1],
        m2=t.mass[i2],
        l1=l1,
        l2=l2,
        r1x=r1[0],
        r1y=r1[1],
        r2x=r2[0],
        r2y=r2[1],
        I1zz=t.I_c[i1][2, 2],
        I2zz=t.I_c[i2][2, 2],
        g=gravity_g(model),
    )


def _scara_file(model, p):
    _gravity_checks(model)
    (i1, b1), (i2, b2) = body(model, "link1"), body(model, "link2")
    assert b1.parent == "world" and b2.parent == "link1" and model.joint_names == ("q1", "q2")
    for b in (b1, b2):
        assert b.joint.type == "revolute" and b.joint.axis == (0.0, 0.0, 1.0) and b.joint.spring is None
    assert b1.joint.origin.xyz == (0.0, 0.0, 0.0) and b1.joint.origin.rpy == (0.0, 0.0, 0.0)
    assert b2.joint.origin.xyz == (p.l1, 0.0, 0.0) and b2.joint.origin.rpy == (0.0, 0.0, 0.0)
    assert np.all(frame_point(model, "elbow") == [p.l1, 0, 0]) and np.all(frame_point(model, "tip") == [p.l2, 0, 0])
    for i in (i1, i2):
        I = model.tree.I_c[i]
        assert np.all(I == np.diag(np.diag(I)))  # the seed's I_i is diagonal
    assert abs(p.r2y) > 0.01  # makes erratum 2 visible (and r1y != 0 exercises G1's r1y term)
    assert p.r1y != 0


def scara_M(p, q, printed: bool = False) -> np.ndarray:
    """Seed's M(q); erratum 2 (-2 l1 r2y sin q2 in M11) unless printed=True."""
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    sign = 1.0 if printed else -1.0
    M11 = (
        p.m1 * (p.l1**2 + p.r1x**2 + p.r1y**2 + 2 * p.l1 * p.r1x)
        + p.m2
        * (
            p.l1**2
            + p.l2**2
            + p.r2x**2
            + p.r2y**2
            + 2 * p.l2 * p.r2x
            + 2 * p.l1 * p.l2 * c2
            + 2 * p.l1 * p.r2x * c2
            + sign * 2 * p.l1 * p.r2y * s2
        )
        + p.I1zz
        + p.I2zz
    )
    M12 = p.m2 * ((p.r2x + p.l2) ** 2 + p.r2y**2 + p.l1 * p.l2 * c2 + p.l1 * (p.r2x * c2 - p.r2y * s2)) + p.I2zz
    M22 = p.m2 * ((p.r2x + p.l2) ** 2 + p.r2y**2) + p.I2zz
    return np.array([[M11, M12], [M12, M22]])


def scara_C(p, q, qd) -> np.ndarray:
    c2, s2 = np.cos(q[1]), np.sin(q[1])
    return np.array(
        [
            -p.m2 * p.l1 * qd[1] * (2 * qd[0] + qd[1]) * (p.r2y * c2 + p.l2 * s2 + p.r2x * s2),
            p.m2 * p.l1 * ((p.r2x + p.l2) * s2 + p.r2y * c2) * qd[0] ** 2,
        ]
    )


def scara_G(p, q) -> np.ndarray:
    c1, s1, c2, s2 = np.cos(q[0]), np.sin(q[0]), np.cos(q[1]), np.sin(q[1])
    c12, s12 = np.cos(q[0] + q[1]), np.sin(q[0] + q[1])
    return np.array(
        [
            p.m1 * p.g * ((p.l1 + p.r1x) * c1 - p.r1y * s1)
            + p.m2 * p.g * (p.l1 * s2 * s12 + p.l1 * c2 * c12 + (p.r2x + p.l2) * c12 - p.r2y * s12),
            p.m2 * p.g * ((p.r2x + p.l2) * c12 - p.r2y * s12),
        ]
    )


def scara_qdd(p, q, qd, tau, printed: bool = False) -> np.ndarray:
    """Seed 4.2: qdd = 1/det(M) [[M22, -M12], [-M21, M11]] (tau - C - G)."""
    M = scara_M(p, q, printed)
    adj = np.array([[M[1, 1], -M[0, 1]], [-M[1, 0], M[0, 0]]])
    return adj @ (tau - scara_C(p, q, qd) - scara_G(p, q)) / (M[0, 0] * M[1, 1] - M[0, 1] * M[1, 0])


def _scara_frames(p, q):
    c1, s1, c12, s12 = np.cos(q[0]), np.sin(q[0]), np.cos(q[0] + q[1]), np.sin(q[0] + q[1])
    return {
        "elbow": (
            np.array([p.l1 * c1, p.l1 * s1]),
            np.array([[-p.l1 * s1, 0 * c1], [p.l1 * c1, 0 * c1]]),
            np.array([1.0, 0.0]),
        ),
        "tip": (
            np.array([p.l1 * c1 + p.l2 * c12, p.l1 * s1 + p.l2 * s12]),
            np.array([[-p.l1 * s1 - p.l2 * s12, -p.l2 * s12], [p.l1 * c1 + p.l2 * c12, p.l2 * c12]]),
            np.array([1.0, 1.0]),
        ),
    }


SCARA = System(
    name="scara",
    params=_scara_params,
    check_file=_scara_file,
    frames=_scara_frames,
    tau=lambda p, q, qd, qdd: scara_M(p, q) @ qdd + scara_C(p, q, qd) + scara_G(p, q),
    qdd=scara_qdd,
    bodies=lambda p, q: [
        ("link1", q[0], np.array([1.0, 0.0]), np.zeros(2), np.zeros((2, 2))),
        (
            "link2",
            q[0] + q[1],
            np.array([1.0, 1.0]),
            p.l1 * np.array([np.cos(q[0]), np.sin(q[0])]),
            p.l1 * np.array([[-np.sin(q[0]), 0 * q[0]], [np.cos(q[0]), 0 * q[0]]]),
        ),
    ],
)

SYSTEMS = [COMPOUND, SPRING, TROLLEY, SCARA]
IDS = [s.name for s in SYSTEMS]


# ---- independent Lagrange derivation ---------------------------------------------------------
def lagrange_M(model, system: System, p, q) -> np.ndarray:
    """M(q) = sum_i m_i Jc_i^T Jc_i + I_i,zz Jtheta_i Jtheta_i^T, Jc_i the Jacobian of body i's CoM
    c_i = o_i + Rz(theta_i) com_i (mass properties from the file). Complex-safe."""
    M = np.zeros((model.nv, model.nv), dtype=complex)
    for name, theta, Jtheta, _o, Jo in system.bodies(p, q):
        i = model.body_index[name]
        r = model.tree.com[i][:2]
        dR = np.array([[-np.sin(theta), -np.cos(theta)], [np.cos(theta), -np.sin(theta)]])
        Jc = Jo + np.outer(dR @ r, Jtheta)
        M = M + model.tree.mass[i] * Jc.T @ Jc + model.tree.I_c[i][2, 2] * np.outer(Jtheta, Jtheta)
    return M


def lagrange_V(model, system: System, p, q):
    """Gravitational potential energy V(q) = -sum_i m_i gravity . c_i [J]. Complex-safe."""
    V = 0.0
    for name, theta, _Jtheta, o, _Jo in system.bodies(p, q):
        i = model.body_index[name]
        c = o + Rz(theta)[:2, :2] @ model.tree.com[i][:2]
        V = V - model.tree.mass[i] * (model.gravity[:2] @ c)
    return V


def lagrange_MCG(model, system: System, p, q, qd):
    """M, C (Christoffel: C_i = sum_jk (dM_ij/dq_k - 1/2 dM_jk/dq_i) qd_j qd_k) and G = dV/dq."""
    E = np.eye(model.nv)
    dM = np.array([complex_step(lambda x: lagrange_M(model, system, p, x), q, E[k]) for k in range(model.nv)])
    C = np.einsum("kij,j,k->i", dM, qd, qd) - 0.5 * np.einsum("ijk,j,k->i", dM, qd, qd)
    G = np.array([complex_step(lambda x: lagrange_V(model, system, p, x), q, E[k]) for k in range(model.nv)])
    return lagrange_M(model, system, p, q).real, C, G


def lagrange_tau(model, system: System, p, q, qd, qdd) -> np.ndarray:
    """tau = M qdd + C + G + k (q - q0) + d qd (joint springs from the file)."""
    M, C, G = lagrange_MCG(model, system, p, q, qd)
    k, d, q0 = springs(model)
    return M @ qdd + C + G + k * (q - q0) + d * qd


# ---- tests -------------------------------------------------------------------------------------
@pytest.mark.parametrize("system", SYSTEMS, ids=IDS)
def test_file_is_the_seed_system(system):
    """The model file describes the seed's system under the errata conventions."""
    model = load(system.name)
    system.check_file(model, system.params(model))


@pytest.mark.parametrize("system", SYSTEMS, ids=IDS)
def test_direct_kinematics(system, rng):
    """Frame poses, velocities (frame_velocity), Jacobians (frame_jacobian) and accelerations
    (frame_acceleration) against the printed x, y and their time derivatives."""
    model = load(system.name)
    p = system.params(model)
    for q, qd, qdd, _ in random_states(rng, model):
        for frame, (xy, Jxy, Jtheta) in system.frames(p, q).items():
            J = jacobian6(Jxy, Jtheta)
            # d/dt J = directional derivative of J(q) along qd
            Jdot = complex_step(lambda x, frame=frame: jacobian6(*system.frames(p, x)[frame][1:]), q, qd)
            R, pos = model.frame_pose(q, frame)
            check(pos, np.r_[xy, 0.0], system.name, f"{frame} position")
            check(R, Rz(Jtheta @ q), system.name, f"{frame} orientation")
            omega, v = model.frame_velocity(q, qd, frame)
            check(np.r_[omega, v], J @ qd, system.name, f"{frame} velocity")
            check(model.frame_jacobian(q, frame), J, system.name, f"{frame} Jacobian")
            omegadot, a = model.frame_acceleration(q, qd, qdd, frame)
            check(np.r_[omegadot, a], J @ qdd + Jdot @ qd, system.name, f"{frame} acceleration")


@pytest.mark.parametrize("system", SYSTEMS, ids=IDS)
def test_inverse_dynamics(system, rng):
    """model.inverse_dynamics (RNEA with joint springs) against the seed's tau (errata applied)."""
    model = load(system.name)
    p = system.params(model)
    for q, qd, qdd, _ in random_states(rng, model):
        check(model.inverse_dynamics(q, qd, qdd), system.tau(p, q, qd, qdd), system.name, "inverse dynamics")


# every formulation, never skipped: a missing one fails here, it does not hide (No's velocity
# transformation is the second formulation the README names)
METHODS = ["aba", "crba", "transform"]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("system", SYSTEMS, ids=IDS)
def test_direct_dynamics(system, method, rng):
    """model.forward_dynamics against the seed's printed direct dynamics (SCARA with erratum 2)."""
    model = load(system.name)
    p = system.params(model)
    for q, qd, _, tau in random_states(rng, model):
        check(
            model.forward_dynamics(q, qd, tau, method=method),
            system.qdd(p, q, qd, tau),
            system.name,
            f"direct dynamics ({method})",
        )


@pytest.mark.parametrize("system", SYSTEMS, ids=IDS)
def test_mass_matrix(system, rng):
    """CRBA's M against the seed's: columns of d tau / d qdd of the printed inverse dynamics (tau is
    affine in qdd), and for SCARA the printed M11 (erratum 2), M12, M22."""
    model = load(system.name)
    p = system.params(model)
    E = np.eye(model.nv)
    for q, qd, _, _ in random_states(rng, model):
        M_seed = np.column_stack([system.tau(p, q, qd, E[k]) - system.tau(p, q, qd, 0 * E[k]) for k in range(model.nv)])
        M = model.mass_matrix(q)
        check(M, M_seed, system.name, "M (from the seed's tau)")
        if system is SCARA:
            check(M, scara_M(p, q), system.name, "M (printed M11, M12, M22)")


def test_scara_C_and_G(rng):
    """SCARA's printed C(q, qd) and G(q) against the engine: G = ID(q, 0, 0), C = ID(q, qd, 0) - G."""
    model = load("scara")
    p = SCARA.params(model)
    for q, qd, _, _ in random_states(rng, model):
        G = model.inverse_dynamics(q, 0 * qd, 0 * qd)
        check(G, scara_G(p, q), "scara", "G")
        check(model.inverse_dynamics(q, qd, 0 * qd) - G, scara_C(p, q, qd), "scara", "C")


@pytest.mark.parametrize("system", SYSTEMS, ids=IDS)
def test_lagrange(system, rng):
    """An independent Lagrange derivation (M from CoM Jacobians, C from Christoffel symbols, G from
    the potential) agrees with the engine's M, C, G (springs included) and with the seed's
    corrected closed forms, so the errata are confirmed without the engine."""
    model = load(system.name)
    p = system.params(model)
    k, d, q0 = springs(model)
    for q, qd, qdd, _ in random_states(rng, model):
        M, C, G = lagrange_MCG(model, system, p, q, qd)
        G_engine = model.inverse_dynamics(q, 0 * qd, 0 * qd)
        check(model.mass_matrix(q), M, system.name, "M (Lagrange)")
        check(G_engine, G + k * (q - q0), system.name, "G + spring (Lagrange)")
        check(model.inverse_dynamics(q, qd, 0 * qd) - G_engine, C + d * qd, system.name, "C + damper (Lagrange)")
        tau = lagrange_tau(model, system, p, q, qd, qdd)
        check(system.tau(p, q, qd, qdd), tau, system.name, "seed tau (Lagrange)")
        check(model.inverse_dynamics(q, qd, qdd), tau, system.name, "inverse dynamics (Lagrange)")


def test_printed_scara_M11_is_wrong(rng):
    """Erratum 2: the printed M11 (+2 l1 r2y sin q2) exceeds the engine's by exactly
    4 m2 l1 r2y sin q2; it spoils the printed tau1 and direct dynamics, and is invisible at
    sin q2 = 0 (which is why the file needs r2y != 0 and the states q2 not in {0, pi})."""
    model = load("scara")
    p = SCARA.params(model)
    assert p.r2y != 0
    for q, qd, qdd, tau in random_states(rng, model):
        M = model.mass_matrix(q)
        M_printed = scara_M(p, q, printed=True)
        delta = 4 * p.m2 * p.l1 * p.r2y * np.sin(q[1])
        assert clearly_differ(M_printed[0, 0], M[0, 0])
        check(M_printed[0, 0] - M[0, 0], delta, "scara", "printed M11 - engine M11")
        check(M_printed[1:, :], M[1:, :], "scara", "printed M12, M22")
        tau_printed = M_printed @ qdd + scara_C(p, q, qd) + scara_G(p, q)
        tau_engine = model.inverse_dynamics(q, qd, qdd)
        assert clearly_differ(tau_printed[0], tau_engine[0])
        check(tau_printed - tau_engine, [delta * qdd[0], 0.0], "scara", "printed tau - engine tau")
        assert clearly_differ(scara_qdd(p, q, qd, tau, printed=True), model.forward_dynamics(q, qd, tau))
        for q2 in (0.0, np.pi):  # sin q2 = 0: the typo hides
            q0 = np.array([q[0], q2])
            check(scara_M(p, q0, printed=True), model.mass_matrix(q0), "scara", "printed M at sin q2 = 0")


def test_printed_trolley_tau2_is_wrong(rng):
    """Erratum 1: the printed tau2 (-1/3 m l^2 qdd2) differs from the engine's by exactly
    -2/3 m l^2 qdd2, agrees when qdd2 = 0, and the printed direct dynamics are right."""
    model = load("trolley_pendulum")
    p = TROLLEY.params(model)
    for q, qd, qdd, tau in random_states(rng, model):
        tau_engine = model.inverse_dynamics(q, qd, qdd)
        tau_printed = _trolley_tau_printed(p, q, qd, qdd)
        assert clearly_differ(tau_printed[1], tau_engine[1])
        check(
            tau_printed - tau_engine,
            [0.0, -2 / 3 * p.m * p.l**2 * qdd[1]],
            "trolley_pendulum",
            "printed tau - engine tau",
        )
        qdd0 = np.array([qdd[0], 0.0])  # qdd2 = 0: the typo hides
        check(
            _trolley_tau_printed(p, q, qd, qdd0),
            model.inverse_dynamics(q, qd, qdd0),
            "trolley_pendulum",
            "printed tau at qdd2 = 0",
        )
        check(
            _trolley_qdd(p, q, qd, tau),
            model.forward_dynamics(q, qd, tau),
            "trolley_pendulum",
            "printed direct dynamics",
        )
