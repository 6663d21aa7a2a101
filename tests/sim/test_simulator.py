"""The Simulator: integration order, conservation (MBS Momentum/Energy Testing), force elements, wheels,
rollback and bad input."""

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.spec.description import Anchor, Body, Joint, ModelSpec, SpringDamper, Wheel
from mbsfmu.sim.simulator import SimulationError, Simulator
from tests.support.paths import MODELS
from tests.support.trees import random_inertia, random_tree


def energy_error(sim, T, dt):
    E0 = sim.invariants().E
    err = 0.0
    for _ in range(round(T / dt)):
        sim.step(dt)
        inv = sim.invariants()
        W_in, W_diss = sim.work
        err = max(err, abs(inv.E - W_in - W_diss - E0))
    return err


@pytest.mark.parametrize(
    "name, h",
    [("scara.yaml", 0.02), ("spacecraft.yaml", 0.08), pytest.param("chain7.yaml", 0.004, marks=pytest.mark.slow)],
)
def test_rk4_is_fourth_order(name, h):
    """Halving the RK4 step cuts the energy error by >= 12x (ideally 16x): quaternions integrated
    as 4-vectors and renormalised after each step keep fourth order (spacecraft: free base)."""
    model = mbsfmu.load_model(MODELS / name)
    e1 = energy_error(Simulator(model, "rk4", h_max=h), 1.0, h * 5)
    e2 = energy_error(Simulator(model, "rk4", h_max=h / 2), 1.0, h * 5)
    e3 = energy_error(Simulator(model, "rk4", h_max=h / 4), 1.0, h * 5)
    assert e1 / e2 >= 12 and e2 / e3 >= 12, (e1, e2, e3)


def test_dop853_conserves_momentum_and_energy_on_spacecraft_quick():
    """MBS Momentum/Energy Testing test 1 at rtol 1e-12 over 10 s (the full 100 s run is the slow test below)."""
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    sim = Simulator(model, "dop853", rtol=1e-12, atol=1e-12, h_max=0)
    i0 = sim.invariants()
    for _ in range(20):
        sim.step(0.5)
        inv = sim.invariants()
        assert np.linalg.norm(inv.p_sys) <= 1e-12
        assert np.linalg.norm(inv.H_sys - i0.H_sys) <= 1e-11 * np.linalg.norm(i0.H_sys)
        assert abs(inv.E - i0.E) <= 1e-11 * abs(i0.E)


@pytest.mark.slow
def test_dop853_100s_spacecraft_meets_the_targets():
    """The long-run target: relative energy and momentum error <= 1e-11 over 100 s, p_sys <= 1e-12 N s."""
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    sim = Simulator(model, "dop853", rtol=1e-12, atol=1e-12, h_max=0)
    i0 = sim.invariants()
    worst = np.zeros(3)
    for _ in range(200):
        sim.step(0.5)
        inv = sim.invariants()
        worst = np.maximum(
            worst,
            [
                np.linalg.norm(inv.p_sys),
                np.linalg.norm(inv.H_sys - i0.H_sys) / np.linalg.norm(i0.H_sys),
                abs(inv.E - i0.E) / abs(i0.E),
            ],
        )
    print(
        f"100 s spacecraft, DOP853 rtol 1e-12: |p_sys| {worst[0]:.3g} N s, rel H {worst[1]:.3g}, rel E {worst[2]:.3g}"
    )
    assert worst[0] <= 1e-12 and worst[1] <= 1e-11 and worst[2] <= 1e-11


def test_wheel_motor_torque_is_internal_and_does_work(rng):
    """MBS Momentum/Energy Testing test 3: wheel motors conserve H_sys and P_sys; E changes by the motor work."""
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    sim = Simulator(model, "dop853", rtol=1e-12, atol=1e-12, h_max=0)
    i0 = sim.invariants()
    for k in range(10):
        sim.set_inputs({f"rw{j}.torque": 0.05 * np.sin(0.3 * k + j) for j in (1, 2, 3, 4)})
        sim.step(0.5)
    inv = sim.invariants()
    W_in, _ = sim.work
    assert abs(W_in) > 1e-3  # the motors did work...
    np.testing.assert_allclose(inv.E - i0.E, W_in, rtol=0, atol=1e-11 * abs(i0.E))  # ...and only that
    np.testing.assert_allclose(inv.H_sys, i0.H_sys, rtol=0, atol=1e-11 * np.linalg.norm(i0.H_sys))
    # P_sys starts at 0; the hub's velocity carries the integrator's rtol-level error (measured ~1e-12 N s)
    np.testing.assert_allclose(inv.P_sys, i0.P_sys, rtol=0, atol=1e-11)


def test_wheel_momentum_and_energy_match_seed_formulas(rng):
    """h = g I_w thetadot with thetadot the absolute spin (g . omega_host + relative rate) enters
    H_sys; h^2 / (2 I_w) enters KE (MBS Momentum Testing Eq. 10, MBS Energy Testing Eq. 1)."""
    hub = Body(
        "hub",
        "world",
        Joint("base", "free"),
        10.0,
        (0.1, 0, 0),
        random_inertia(rng),
        wheels=(Wheel("w", (0.0, 0.6, 0.8), 0.2, (0.1, 0.2, 0.3)),),
    )
    model = mbsfmu.Model(ModelSpec("gyrostat", (hub,), gravity=(0, 0, 0)))
    sim = Simulator(model)
    q, qd = model.random_state(rng)
    sim.set_configuration(q, qd)
    kin = sim.kinematics()
    R, w = kin.R[1], kin.omega_world[1]
    g = R @ np.array([0.0, 0.6, 0.8])
    spin = g @ w + qd[model.v_slice("w")][0]
    h = g * 0.2 * spin
    I_hub = R @ model.tree.I_c[1] @ R.T
    vc = kin.point_velocity(1, model.tree.com[1])
    inv = sim.invariants()
    np.testing.assert_allclose(inv.H_sys, I_hub @ w + h, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(inv.KE, 0.5 * (w @ I_hub @ w + 10.0 * vc @ vc + h @ h / 0.2), rtol=1e-12, atol=1e-12)


def test_point_spring_dampers_store_and_dissipate_energy(rng):
    """Point-to-point springs: PE = 1/2 k (l - l0)^2; with dampers KE + PE - W_diss is constant and
    W_diss < 0 (the integrated damper power -d ldot^2)."""
    base = random_tree(rng, 4, free_base=False, types=("revolute",))
    names = base.body_names
    forces = (
        SpringDamper("s1", Anchor(names[1], (0.2, 0, 0)), Anchor("world", (0.5, 0.5, 0.5)), k=30.0, d=0.5, l0=0.3),
        SpringDamper("s2", Anchor(names[0], (0, 0.1, 0)), Anchor(names[3], (0.1, 0, 0)), k=20.0, d=0.2, l0=0.0),
    )
    from dataclasses import replace

    model = mbsfmu.Model(replace(base.spec, forces=forces))
    sim = Simulator(model, "dop853", rtol=1e-12, atol=1e-12, h_max=0)
    q, qd = model.random_state(rng)
    sim.set_configuration(q, qd)
    E0 = sim.invariants().E
    for _ in range(20):
        sim.step(0.05)
    W_in, W_diss = sim.work
    assert W_in == 0 and W_diss < -1e-3
    np.testing.assert_allclose(sim.invariants().E - W_diss, E0, rtol=1e-10, atol=1e-10)
    rec = sim.records()
    assert rec["s1.k"] == 30.0 and "s2.x" in rec


@pytest.mark.slow
def test_thruster_impulse_changes_linear_momentum(rng):
    """A thruster through the hub: Delta P_sys = integral of the thrust (world axes); H_sys about
    the CM changes by the integral of the thrust's moment. Inputs are held over each step."""
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    sim = Simulator(model, "rk4", h_max=1e-3)
    P0 = sim.invariants().P_sys
    impulse = np.zeros(3)
    dt = 0.002
    for k in range(500):
        thrust = 20.0 if k < 250 else 0.0
        sim.set_input("thr1.thrust", thrust)
        R0 = sim.kinematics().R[1]
        sim.step(dt)
        R1 = sim.kinematics().R[1]
        impulse += 0.5 * (R0 + R1) @ np.array([1.0, 0, 0]) * thrust * dt
    dP = sim.invariants().P_sys - P0
    assert np.linalg.norm(dP) > 9.9
    # trapezoid rule on the turning direction: O(dt^2) ~ 3e-7
    np.testing.assert_allclose(dP, impulse, rtol=0, atol=1e-6)


def test_get_and_set_state_roll_back_bit_for_bit(rng):
    model = random_tree(rng, 6)
    for integrator in ("rk4", "dop853"):
        sim = Simulator(model, integrator)
        sim.set_configuration(*model.random_state(rng))
        sim.step(0.01)
        saved = sim.get_state()
        sim.step(0.02)
        first = (sim.t, sim.x.copy(), sim.n_rhs)
        sim.set_state(saved)
        sim.step(0.02)
        assert sim.t == first[0] and np.array_equal(sim.x, first[1]) and sim.n_rhs == first[2]


def test_non_finite_state_names_time_and_component(rng):
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    sim = Simulator(model, "rk4", h_max=1e-3)
    sim.set_input("q2.tau", 1e300)
    with pytest.raises(SimulationError, match=r"non-finite state at t = [0-9.e-]+ s in .*q\.q[12]"):
        for _ in range(100):
            sim.step(0.01)


def test_bad_input_is_rejected_with_names():
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    sim = Simulator(model)
    with pytest.raises(
        mbsfmu.InputError, match=r"unknown input 'q3.tau' \(did you mean 'q2.tau'\?\).*has inputs: q1.tau, q2.tau"
    ):
        sim.set_input("q3.tau", 1.0)
    with pytest.raises(mbsfmu.InputError, match="input 'q1.tau' is nan"):
        sim.set_input("q1.tau", float("nan"))
    with pytest.raises(mbsfmu.InputError, match="input 'q2.tau' has complex entries"):
        sim.set_inputs({"q1.tau": 1.0, "q2.tau": 1j})
    with pytest.raises(mbsfmu.InputError, match="input 'q2.tau' must be a number, got 'x'"):
        sim.set_inputs({"q2.tau": "x"})
    sim.set_inputs({"q2.tau": np.float64(-2.0), "q1.tau": 3})  # by name, any real number
    assert sim.u.tolist() == [3.0, -2.0]
    with pytest.raises(mbsfmu.InputError, match="dt must be a positive"):
        sim.step(0.0)
    with pytest.raises(mbsfmu.InputError, match="dt must be a positive"):
        sim.step(float("inf"))
    with pytest.raises(mbsfmu.InputError, match=r"qd has shape \(3,\)"):
        sim.set_configuration([0, 0], [0, 0, 0])
    with pytest.raises(mbsfmu.InputError, match="integrator 'euler'"):
        Simulator(model, "euler")
    with pytest.raises(mbsfmu.InputError, match="rtol must be a positive"):
        Simulator(model, "dop853", rtol=-1)
    spacecraft = Simulator(mbsfmu.load_model(MODELS / "spacecraft.yaml"))
    q, qd = spacecraft.q, spacecraft.qd
    q[3] = 2.0
    with pytest.raises(mbsfmu.InputError, match="quaternion of norm"):
        spacecraft.set_configuration(q, qd)


@pytest.mark.parametrize("model", [str(MODELS / "scara.yaml"), None, MODELS / "scara.yaml"])
def test_a_simulator_of_something_else_than_a_model_says_what_it_needs(model):
    with pytest.raises(mbsfmu.InputError, match=r"expected a Model, e\.g\. mbsfmu\.load_model\(path\), got ") as err:
        Simulator(model)
    assert type(model).__name__ in str(err.value)
    Simulator(mbsfmu.load_model(model or MODELS / "scara.yaml"))  # the advice, followed
