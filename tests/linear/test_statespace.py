"""Linear models of the seed-001 systems about their equilibria against hand-derived A and B; the
spacecraft's zero rigid-body modes; linear vs nonlinear response; outputs; bad input.

References: J. Wojtusch, "Analytical Tests for MBSlib" (TU Darmstadt), read with the errata in
docs/explanation/errata.md (gravity (0, -g, 0), the compound pendulum's I = m l^2/3 about the
pivot, the spring relaxed at q = 0, SCARA's r_i from the distal end, erratum 2 on M11). Every
parameter is read from the model file. Linearizing M(q) qdd + h(q, qd) = u about an equilibrium
(qd = 0, h(q*, 0) = u0) gives A = [[0, I], [-M^-1 K, -M^-1 Dm]], B = [[0], [M^-1]], with K =
d(h)/dq (springs and gravity: the Hessian of PE) and Dm = d(h)/d(qd) (dampers); the eigenvalues
solve det(lambda^2 M + lambda Dm + K) = 0, i.e. +-i omega for the undamped small oscillations.

Tolerances: the Jacobians are central differences (mbsfmu/linear/jacobians.py) with error
~eps^(2/3) relative to the size of qdd and its derivatives, measured <= 2e-10 x the largest
entry here; entries are compared at ATOL_J = 1e-8 x the largest entry of the reference (50x
headroom). Equilibria: Newton stops at |qdd| <= 1e-9, so q* is within 1e-9 / (smallest
stiffness/inertia ratio ~ 10) ~ 1e-10 of the exact one: compared at 1e-9.
"""

from __future__ import annotations

from dataclasses import replace
from functools import cache

import numpy as np
import pytest
from scipy.linalg import expm

import mbsfmu
from mbsfmu.engine import joints
from mbsfmu.engine.native.core import usable
from mbsfmu.linear.equilibrium import EquilibriumError
from mbsfmu.linear.statespace import linearize, output_names
from mbsfmu.linear.tangent import difference
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import MODELS

RTOL_J = 1e-8  # Jacobian entries, relative to the largest entry of the reference (module docstring)
ATOL_Q = 1e-9  # [rad or m] equilibrium position


@cache
def load(name: str) -> mbsfmu.Model:
    return mbsfmu.load_model(MODELS / f"{name}.yaml")


def assert_matrix(actual, desired, what: str) -> None:
    scale = max(1.0, float(np.abs(desired).max(initial=0.0)))
    np.testing.assert_allclose(actual, desired, rtol=0, atol=RTOL_J * scale, err_msg=what)


def second_order(M, K, Dm) -> tuple[np.ndarray, np.ndarray]:
    """(A, B) of M x'' + Dm x' + K x = u."""
    n = M.shape[0]
    Minv = np.linalg.inv(M)
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-Minv @ K, -Minv @ Dm]])
    return A, np.vstack([np.zeros((n, n)), Minv])


def g_of(model) -> float:
    assert model.gravity[0] == 0 and model.gravity[2] == 0
    return -float(model.gravity[1])


def test_compound_pendulum():
    model = load("compound_pendulum")
    i = model.body_index["rod"]
    m, g = model.tree.mass[i], g_of(model)
    l = -model.frames["tip"][1].p[1]  # the rod's tip, at l along -y
    lin = linearize(model, equilibrium=True)  # Newton from the file's q = 0.5
    np.testing.assert_allclose(lin.q0, [0.0], atol=ATOL_Q)
    # I_p qdd = -m g (l/2) sin q + u  ->  A = [[0, 1], [-m g l / (2 I_p), 0]] = [[0, 1], [-3 g / (2 l), 0]]
    I_p = m * l**2 / 3
    A, B = second_order(np.array([[I_p]]), np.array([[m * g * l / 2]]), np.zeros((1, 1)))
    assert_matrix(lin.A, A, "A")
    assert_matrix(lin.B, B, "B")
    np.testing.assert_allclose(A[1, 0], -3 * g / (2 * l), rtol=1e-14)
    omega = np.sqrt(3 * g / (2 * l))  # small-oscillation frequency [rad/s]
    np.testing.assert_allclose(np.sort(lin.eigenvalues().imag), [-omega, omega], rtol=1e-9)
    np.testing.assert_allclose(lin.eigenvalues().real, 0, atol=1e-8)
    assert lin.state_names == ("q.q1", "qd.q1") and lin.input_names == ("q1.tau",)
    np.testing.assert_array_equal(lin.C, np.eye(2))
    np.testing.assert_array_equal(lin.D, np.zeros((2, 1)))


def test_spring_pendulum():
    model = load("spring_pendulum")
    m, g = model.tree.mass[1], g_of(model)
    spring = model.spec.bodies[0].joint.spring
    k, d = spring.k, spring.d
    lin = linearize(model, equilibrium=True)
    # m qdd = m g - k q - d qd + u (q along -y): equilibrium q* = m g / k
    np.testing.assert_allclose(lin.q0, [m * g / k], atol=ATOL_Q)
    A, B = second_order(np.array([[m]]), np.array([[k]]), np.array([[d]]))
    assert_matrix(lin.A, A, "A")
    assert_matrix(lin.B, B, "B")
    sigma, omega = d / (2 * m), np.sqrt(k / m - (d / (2 * m)) ** 2)  # damped oscillation
    ev = lin.eigenvalues()
    np.testing.assert_allclose(np.sort(ev.imag), [-omega, omega], rtol=1e-9)
    np.testing.assert_allclose(ev.real, [-sigma, -sigma], rtol=1e-8)


def test_trolley_pendulum():
    model = load("trolley_pendulum")
    i = model.body_index["pendulum"]
    m, g = model.tree.mass[i], g_of(model)
    l = -model.frames["tip"][1].p[1]
    spring = next(b for b in model.spec.bodies if b.name == "pendulum").joint.spring
    lin = linearize(model, equilibrium=True)  # from q = (0, 0.4): q1 stays (no force along the rail)
    np.testing.assert_allclose(lin.q0, [0.0, 0.0], atol=ATOL_Q)
    # seed system 3 at q2 = 0: M = [[m, m l/2], [m l/2, m l^2/3]], K = diag(0, k + m g l/2), Dm = diag(0, d)
    M = np.array([[m, m * l / 2], [m * l / 2, m * l**2 / 3]])
    K = np.diag([0.0, spring.k + m * g * l / 2])
    Dm = np.diag([0.0, spring.d])
    A, B = second_order(M, K, Dm)
    assert_matrix(lin.A, A, "A")
    assert_matrix(lin.B, B, "B")
    # eliminating the trolley (m x'' = -m l/2 q2''): I_eff q2'' + d q2' + K22 q2 = 0, I_eff = m l^2/12;
    # the trolley's position is a rigid-body mode: a double zero eigenvalue
    I_eff = m * l**2 / 12
    sigma = spring.d / (2 * I_eff)
    omega = np.sqrt(K[1, 1] / I_eff - sigma**2)
    ev = lin.eigenvalues()
    ev = ev[np.argsort(np.abs(ev))]
    np.testing.assert_allclose(ev[:2], 0, atol=1e-6)
    np.testing.assert_allclose(np.sort(ev[2:].imag), [-omega, omega], rtol=1e-9)
    np.testing.assert_allclose(ev[2:].real, [-sigma, -sigma], rtol=1e-8)


def scara_hand(model):
    """M(q), gravity torques G(q) = dPE/dq and K(q) = d2PE/dq2 of seed system 4 (errata applied;
    a_i = l_i e_x + r_i, link i's CoM in its frame), PE = g (m1 y1 + m2 y2) with
    y1 = a1x sin q1 + a1y cos q1, y2 = l1 sin q1 + a2x sin s + a2y cos s, s = q1 + q2."""
    i1, i2 = model.body_index["link1"], model.body_index["link2"]
    m1, m2 = model.tree.mass[i1], model.tree.mass[i2]
    a1, a2 = model.tree.com[i1][:2], model.tree.com[i2][:2]
    I1, I2 = model.tree.I_c[i1][2, 2], model.tree.I_c[i2][2, 2]
    l1 = model.frames["elbow"][1].p[0]
    g = g_of(model)

    def M(q):
        c = a2[0] * np.cos(q[1]) - a2[1] * np.sin(q[1])
        M11 = m1 * (a1 @ a1) + m2 * (l1**2 + a2 @ a2 + 2 * l1 * c) + I1 + I2
        M12 = m2 * (a2 @ a2 + l1 * c) + I2
        M22 = m2 * (a2 @ a2) + I2
        return np.array([[M11, M12], [M12, M22]])

    def G(q):
        s = q[0] + q[1]
        G2 = g * m2 * (a2[0] * np.cos(s) - a2[1] * np.sin(s))
        G1 = g * m1 * (a1[0] * np.cos(q[0]) - a1[1] * np.sin(q[0])) + g * m2 * l1 * np.cos(q[0]) + G2
        return np.array([G1, G2])

    def K(q):
        s = q[0] + q[1]
        K22 = -g * m2 * (a2[0] * np.sin(s) + a2[1] * np.cos(s))
        K11 = -g * m1 * (a1[0] * np.sin(q[0]) + a1[1] * np.cos(q[0])) - g * m2 * l1 * np.sin(q[0]) + K22
        return np.array([[K11, K22], [K22, K22]])

    return M, G, K


def test_scara_hanging_equilibrium():
    model = load("scara")
    M, G, K = scara_hand(model)
    lin = linearize(model, [-1.5, 0.1], equilibrium=True)  # Newton from near the hanging arm
    q = lin.q0
    np.testing.assert_allclose(G(q), 0, atol=1e-8)  # the hand-derived gravity torques vanish there
    assert np.cos(q[0]) ** 2 < 0.1 and np.sin(q[0]) < 0  # hanging (link 1 near -y)
    A, B = second_order(M(q), K(q), np.zeros((2, 2)))
    assert_matrix(lin.A, A, "A")
    assert_matrix(lin.B, B, "B")
    omega2 = np.linalg.eigvals(np.linalg.solve(M(q), K(q)))  # small oscillations: K v = omega^2 M v
    assert np.all(omega2 > 0)
    ev = lin.eigenvalues()
    np.testing.assert_allclose(np.sort(ev.imag), np.sort(np.r_[np.sqrt(omega2), -np.sqrt(omega2)]), rtol=1e-9)
    np.testing.assert_allclose(ev.real, 0, atol=1e-7)


def test_scara_held_by_inputs():
    """Given inputs u0 = G(q0) (the torques that hold q0), the equilibrium search returns q0."""
    model = load("scara")
    M, G, K = scara_hand(model)
    q_hold = np.array([0.4, -0.9])
    u0 = {"q1.tau": G(q_hold)[0], "q2.tau": G(q_hold)[1]}
    lin = linearize(model, q_hold + [0.05, -0.03], u0=u0, equilibrium=True)
    np.testing.assert_allclose(lin.q0, q_hold, atol=ATOL_Q)
    np.testing.assert_allclose(lin.u0, G(q_hold), rtol=0, atol=0)
    A, B = second_order(M(q_hold), K(q_hold), np.zeros((2, 2)))
    assert_matrix(lin.A, A, "A")
    assert_matrix(lin.B, B, "B")


def test_spacecraft_zero_rigid_body_modes():
    """At rest (hinges relaxed, wheels still, no gravity): the free base's 6 coordinates and the 4
    wheel angles move no spring, so their columns of d(qdd)/d(dq) vanish and A has 2 x 10 zero
    eigenvalues (each a double zero, position and rate); the two arrays oscillate at the
    frequencies of K v = omega^2 M v, M by CRBA (a second formulation), K = diag(k) at the hinges."""
    model = load("spacecraft")
    lin = linearize(model, equilibrium=True)
    nv = model.nv
    hinges = [model.v_slice(j).start for j in ("hinge_l", "hinge_r")]
    np.testing.assert_allclose(lin.q0[[model.q_slice(j).start for j in ("hinge_l", "hinge_r")]], 0, atol=ATOL_Q)
    rigid = [k for k in range(nv) if k not in hinges]
    assert len(rigid) == 10
    np.testing.assert_allclose(lin.A[nv:, rigid], 0, atol=1e-9)  # no restoring force: rigid-body modes
    np.testing.assert_allclose(lin.A[nv:, nv:], 0, atol=1e-9)  # no damping
    ev = lin.eigenvalues()
    ev = ev[np.argsort(np.abs(ev))]
    np.testing.assert_allclose(ev[:20], 0, atol=1e-6)
    Kmat = np.zeros((nv, nv))
    for b in model.spec.bodies:
        if b.joint.name in ("hinge_l", "hinge_r"):
            j = model.v_slice(b.joint.name).start
            Kmat[j, j] = b.joint.spring.k
    M = model.mass_matrix(lin.q0)
    lam = np.linalg.eigvals(np.linalg.solve(M, Kmat))
    omega = np.sqrt(np.sort(lam.real)[-2:])
    np.testing.assert_allclose(np.sort(np.abs(ev[20:].imag)), np.sort(np.r_[omega, omega]), rtol=1e-8)
    assert np.linalg.matrix_rank(lin.A[nv:, :nv], tol=1e-6) == 2


def scara_held(model):
    """SCARA held at q = (0.4, -0.9) by the gravity torques there: no symmetry about it."""
    _M, G, _K = scara_hand(model)
    q_hold = np.array([0.4, -0.9])
    return linearize(model, q_hold, u0=G(q_hold), equilibrium=True)


@pytest.mark.parametrize(
    "name, make, order, h",
    [
        # closed loop in its independent coordinate, the simulation partitioned as the linear model
        ("crank_slider", lambda m: linearize(m, [-1.4, 0.0, 0.0], equilibrium=True), 2, 2e-2),
        # a loop oscillating about its hanging equilibrium (omega ~ 9.8 rad/s: h = 1e-2 s keeps RK4's
        # error eps T omega^5 h^4 / 120 ~ 4e-6 eps below 1% of the smallest error compared)
        ("fourbar", lambda m: linearize(m, equilibrium=True), 2, 1e-2),
        # h(q, qd) is odd about q2 = 0 (sin q2, sin q2 qd2^2): the second-order term vanishes
        ("trolley_pendulum", lambda m: linearize(m, equilibrium=True), 3, 1e-3),
        ("scara", scara_held, 2, 1e-3),
        # no gravity, hinges at their springs' rest: qd^2 terms (Coriolis) are the leading neglect
        ("spacecraft", lambda m: linearize(m, equilibrium=True), 2, 1e-3),
    ],
)
def test_linear_response_converges_with_perturbation_size(name, make, order, h, rng):
    """Nonlinear simulation from x* (+) eps d vs expm(A T) eps d: the error is the first term the
    linear model neglects, O(eps^order), so halving eps divides it by 2^order (measured order
    within 0.2; a wrong A or B leaves an O(eps) error: order 1). States are compared in the
    tangent coordinates (``tangent.difference``), the free base included; the crank-slider's
    dependent joints are compared through its independent one. RK4 at h = 1e-3 s over T = 0.5 s
    errs ~1e-12; the crank-slider's partitioned simulation runs in Python, at h = 2e-2 s: its
    error ~ eps T omega^5 h^4 / 120 ~ 3e-9 (omega ~ 6.3 rad/s) is 1% of the smallest error
    compared there (3e-7)."""
    model = load(name)
    lin = make(model)
    if model.loops and usable():  # the loops' analytic Jacobians (mbsfmu/engine/dynamics/loop_derivatives.py)
        assert lin.method.startswith("analytic"), lin.method
    n, T = lin.A.shape[0] // 2, 0.5
    d = rng.normal(size=2 * n)
    d /= np.linalg.norm(d)
    Phi = expm(lin.A * T)
    errors = []
    for eps in (1e-2, 5e-3, 2.5e-3):
        dx0 = eps * d
        method = "partitioning" if model.loops else "multipliers"
        sim = Simulator(model, integrator="rk4", h_max=h, loop_method=method)
        iu = model.loop_partition().iu if model.loops else np.arange(model.nv)
        dv, dqd = np.zeros(model.nv), np.zeros(model.nv)
        dv[iu], dqd[iu] = dx0[:n], dx0[n:]
        sim.set_configuration(model.integrate(lin.q0, dv), lin.qd0 + dqd)  # the dependent part is closed
        sim.set_inputs(dict(zip(lin.u_names, lin.u0)))
        sim.step(T)
        dx_nl = np.concatenate((difference(model, lin.q0, sim.q), sim.qd - lin.qd0))[np.r_[iu, model.nv + iu]]
        errors.append(np.linalg.norm(dx_nl - Phi @ dx0))
    orders = [np.log2(errors[k] / errors[k + 1]) for k in range(2)]
    assert all(abs(p - order) < 0.2 for p in orders), (errors, orders)


def test_outputs_invariants_and_accelerations():
    """engine.PE's row is dPE/dq = m g (l/2) sin q for the compound pendulum; engine.KE's row
    vanishes at rest and is I_p qd at a moving point; qdd rows are A's lower rows, D = B's."""
    model = load("compound_pendulum")
    i = model.body_index["rod"]
    m, g = model.tree.mass[i], g_of(model)
    l = -model.frames["tip"][1].p[1]
    I_p = m * l**2 / 3
    q, qd = 0.5, 0.7
    outs = ["engine.PE", "engine.KE", "engine.E", "qdd.q1", "q.q1", "engine.H_sys[3]"]
    lin = linearize(model, [q], [qd], [0.3], outputs=outs)
    PE = -m * g * (l / 2) * np.cos(q)  # -m g^T r_c, r_c = (l/2) (sin q, -cos q)
    np.testing.assert_allclose(lin.y0[:3], [PE, 0.5 * I_p * qd**2, PE + 0.5 * I_p * qd**2], rtol=1e-12)
    np.testing.assert_allclose(lin.C[0], [m * g * (l / 2) * np.sin(q), 0], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(lin.C[1], [0, I_p * qd], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(lin.C[2], lin.C[0] + lin.C[1], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(lin.C[3], lin.A[1], rtol=0, atol=0)
    np.testing.assert_allclose(lin.D[3], lin.B[1], rtol=0, atol=0)
    np.testing.assert_allclose(lin.D[[0, 1, 2, 4, 5]], 0, atol=0)
    np.testing.assert_array_equal(lin.C[4], [1, 0])
    assert lin.y0[4] == q
    # H_sys about the system CM, z: I_c qd (the rod's spin about its CoM), world axes
    np.testing.assert_allclose(lin.y0[5], model.tree.I_c[i][2, 2] * qd, rtol=1e-12)
    np.testing.assert_allclose(lin.qdd0, [(-m * g * (l / 2) * np.sin(q) + 0.3) / I_p], rtol=1e-12)
    assert set(outs) <= set(output_names(model))


def test_free_joint_states_are_tangent_coordinates():
    model = load("spacecraft")
    lin = linearize(model)
    assert lin.state_names[:6] == tuple(f"dq.base[{k}]" for k in range(1, 7))
    assert lin.state_names[model.nv : model.nv + 6] == tuple(f"qd.base[{k}]" for k in range(1, 7))
    assert lin.A.shape == (2 * model.nv, 2 * model.nv) and model.nq == model.nv + 1
    assert lin.input_names == ("rw1.torque", "rw2.torque", "rw3.torque", "rw4.torque", "thr1.thrust")
    assert model.tree.jtype[1] == joints.FREE


def test_singular_configuration_names_the_joints():
    """A point mass on joint j2 (about x) at distance 1 along z from joint j1 (about z): at q2 = 0
    the mass sits on j1's axis, so j1 moves no mass and M is singular there (but not elsewhere, so
    the model loads)."""
    spec = mbsfmu.ModelSpec(
        name="on_axis",
        bodies=(
            mbsfmu.Body(name="a", parent="world", joint=mbsfmu.Joint(name="j1", type="revolute", axis=(0, 0, 1))),
            mbsfmu.Body(
                name="b",
                parent="a",
                joint=mbsfmu.Joint(name="j2", type="revolute", axis=(1, 0, 0)),
                mass=1.0,
                com=(0.0, 0.0, 1.0),
            ),
        ),
    )
    model = mbsfmu.Model(spec)
    linearize(model, [0.0, 0.3], [0.0, 0.0])  # regular away from q2 = 0
    with pytest.raises(mbsfmu.InputError, match=r"mass matrix is singular.*'j1'"):
        linearize(model, [0.0, 0.0], [0.0, 0.0])


def test_loops_without_independent_joints_are_refused():
    model = load("fourbar")
    spec = replace(model.spec, loops=tuple(replace(c, independent=()) for c in model.spec.loops))
    with pytest.raises(mbsfmu.InputError, match=r"loop\(s\) closure declare no independent joints"):
        linearize(mbsfmu.Model(spec))


def crank_slider_reference(model, q0):
    """(M_red, K_red, D_red) about q0 in the independent coordinate q1, from a second
    formulation: the configuration q(q1) closed by the engine's assembly (Model.assemble, holding
    q1), J = dq/dq1 by central differences of it; M_red = J^T M J (M by CRBA), D_red = J^T diag(d) J,
    K_red = d2 PE / dq1^2 by second differences of PE = -sum m_i g . c_i (c_i the CoMs by forward
    kinematics; MBS Energy Testing Eq. 2). Steps: h = 1e-5 for J (error ~1e-10), s = 1e-4 for the
    second difference (truncation ~s^2 ~1e-8, round-off ~eps PE / s^2 ~1e-8)."""
    g = model.gravity
    t = model.tree

    def closed(q1):
        q = q0.copy()
        q[0] = q1
        return model.assemble(q)[0]

    def PE(q):
        kin = model.forward_kinematics(q)
        c = kin.p[1:] + np.einsum("nij,nj->ni", kin.R[1:], t.com[1:])
        return -float(np.sum(t.mass[1:] * (c @ g)))

    h, s = 1e-5, 1e-4
    J = (closed(q0[0] + h) - closed(q0[0] - h)) / (2 * h)
    M_red = J @ model.mass_matrix(q0) @ J
    D_red = J @ np.diag(model.damping) @ J
    K_red = (PE(closed(q0[0] + s)) - 2 * PE(q0) + PE(closed(q0[0] - s))) / s**2
    return M_red, K_red, D_red


def test_closed_loop_in_independent_coordinates():
    """The crank-slider (loop partitioned, q1 independent) hanging from its crank: one state pair
    (q1, qd1); A and B against the energy formulation of ``crank_slider_reference`` (tolerance
    1e-6 relative: the reference's second differences)."""
    model = load("crank_slider")
    lin = linearize(model, [-1.4, 0.0, 0.0], equilibrium=True)
    assert lin.state_names == ("q.q1", "qd.q1") and lin.input_names == ("q1.tau",)
    np.testing.assert_allclose(lin.q0[0], -np.pi / 2, atol=ATOL_Q)  # the crank hangs straight down
    M_red, K_red, D_red = crank_slider_reference(model, lin.q0)
    A = np.array([[0.0, 1.0], [-K_red / M_red, -D_red / M_red]])
    np.testing.assert_allclose(lin.A, A, rtol=1e-6, atol=1e-6 * np.abs(A).max())
    np.testing.assert_allclose(lin.B, [[0.0], [1.0 / M_red]], rtol=1e-8)
    assert np.all(lin.eigenvalues().real < 0)  # stable, damped by the slider's damper
    # outputs through the closed loop: a dependent joint's acceleration, and PE, stationary at rest
    out = linearize(model, lin.q0, outputs=["qdd.q3", "engine.PE"])
    assert out.C.shape == (2, 2) and np.abs(out.D[0]).max() > 0  # the crank torque moves the slider
    np.testing.assert_allclose(out.C[1], 0, atol=1e-8)


def test_no_equilibrium_is_reported():
    """A thruster firing on the free-floating spacecraft: qdd = F/m in the base's rate, whatever q."""
    with pytest.raises(EquilibriumError, match=r"no equilibrium .*max \|qdd\| = .* after \d+ "):
        linearize(load("spacecraft"), u0={"thr1.thrust": 10.0}, equilibrium=True)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"outputs": ["engine.KE", "nope"]}, r"unknown output 'nope'; the model has outputs: q.q1"),
        ({"inputs": ["q9.tau"]}, r"unknown input 'q9.tau'"),
        ({"u0": {"q1.tau": "x"}}, r"input 'q1.tau' must be a number"),
        ({"u0": [1.0, 2.0]}, r"u0 has shape \(2,\); the model has 1 inputs: q1.tau"),
        ({"q0": [0.1, 0.2]}, r"q has shape \(2,\)"),
        ({"qd0": [0.1], "equilibrium": True}, r"equilibrium has qd = 0"),
    ],
)
def test_bad_arguments(kwargs, message):
    with pytest.raises(mbsfmu.InputError, match=message):
        linearize(load("compound_pendulum"), **kwargs)


def test_unit_quaternion_required():
    model = load("spacecraft")
    q, _ = model.initial_state()
    q[3] = 2.0
    with pytest.raises(mbsfmu.InputError, match=r"joint 'base': quaternion q\[3:7\] has norm"):
        linearize(model, q)


def test_newton_reaches_an_unstable_equilibrium_too():
    """From the file's q = (0.3, -0.5) Newton reaches the SCARA with link 1 pointing up: an
    equilibrium (hand-derived G = 0) with a positive real eigenvalue."""
    model = load("scara")
    _M, G, _K = scara_hand(model)
    lin = linearize(model, equilibrium=True)
    np.testing.assert_allclose(G(lin.q0), 0, atol=1e-8)
    assert np.sin(lin.q0[0]) > 0.9
    assert lin.eigenvalues().real.max() > 1.0


def test_singular_loop_jacobian_names_the_dependent_joints():
    """The RSSR mechanism with its crank independent: the coupler's spin about its own axis is not
    determined by the crank (Phi_v of the ball and rocker joints has rank 3 < 4)."""
    with pytest.raises(mbsfmu.InputError, match=r"dependent rates \(joints ball, rocker\) are not determined"):
        linearize(mbsfmu.load_model(MODELS / "rssr.yaml"))


def test_spacecraft_spinning_wheels_gyroscopic_coupling():
    """Hub and arrays at rest, hinges relaxed, wheels spinning: still an equilibrium (qdd = 0). The
    only velocity term the rates change is the hub's gyroscopic torque omega x h_w
    (MBS Momentum Testing: h = sum I_w g_k thetadot_k, hub axes), so d(qdd)/d(qd) = M^-1 G with
    G = skew(h_w) in the hub's angular rows and columns (d(-omega x h_w)/d omega = skew(h_w)) and
    zero elsewhere; the base's and wheels' coordinates still move no spring (zero columns)."""
    model = load("spacecraft")
    q = model.neutral()
    qd = np.zeros(model.nv)
    h_w = np.zeros(3)
    for name, (_i, wheel) in model.wheels.items():
        rate = {"rw1": 100.0, "rw2": -80.0, "rw3": 60.0, "rw4": 40.0}[name]
        qd[model.v_slice(name)] = rate
        g = np.asarray(wheel.axis) / np.linalg.norm(wheel.axis)
        h_w += wheel.inertia * g * rate
    lin = linearize(model, q, qd)
    nv = model.nv
    np.testing.assert_allclose(lin.qdd0, 0, atol=1e-12)
    base = model.v_slice("base")
    G = np.zeros((nv, nv))
    G[base.start + 3 : base.stop, base.start + 3 : base.stop] = np.array(
        [[0, -h_w[2], h_w[1]], [h_w[2], 0, -h_w[0]], [-h_w[1], h_w[0], 0]]
    )
    assert_matrix(lin.A[nv:, nv:], np.linalg.solve(model.mass_matrix(q), G), "d(qdd)/d(qd)")
    rigid = [k for k in range(nv) if k not in (model.v_slice("hinge_l").start, model.v_slice("hinge_r").start)]
    np.testing.assert_allclose(lin.A[nv:, rigid], 0, atol=1e-9)
    assert np.abs(lin.A[nv:, nv:]).max() > 1e-3  # the coupling is there to be seen
