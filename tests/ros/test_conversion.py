"""mbsfmu_ros's pure parts, without ROS: time stamps, transforms, commands -> validated inputs,
diagnostics levels and checks, pacing statistics (message contents: test_ros_messages.py)."""

import math
import re
from dataclasses import replace

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.model import Model
from mbsfmu.engine.spatial import quat_to_R
from mbsfmu.sim.simulator import Simulator
from mbsfmu_ros import conversion as cv
from mbsfmu_ros import diagnostics as dg
from mbsfmu_ros.pacing import PacingStats
from tests.support.paths import MODELS


@pytest.fixture(scope="module")
def scara():
    return mbsfmu.load_model(MODELS / "scara.yaml")


@pytest.fixture(scope="module")
def spacecraft():
    return mbsfmu.load_model(MODELS / "spacecraft.yaml")


# ---- time, transforms (joint states, momentum, energy: test_ros_messages.py) ----------------------
@pytest.mark.parametrize("t", [0.0, 1e-9, 0.01, 0.3, 1.999999999, 12345.678901234])
def test_time_stamps_round_trip(t):
    ns = cv.time_to_ns(t)
    sec, nsec = cv.ns_to_stamp(ns)
    assert 0 <= nsec < 1_000_000_000 and cv.stamp_to_ns(sec, nsec) == ns
    assert abs(ns * 1e-9 - t) <= 0.5e-9 + 1e-16 * t


def test_stamps_of_a_cycle_grid_increase_strictly():
    period = 1e-3
    ns = [cv.time_to_ns(k * period) for k in range(20000)]
    assert all(b - a == 1_000_000 for a, b in zip(ns, ns[1:]))


@pytest.mark.parametrize("name", ["spacecraft.yaml", "branched_robot.yaml"])
def test_transforms_compose_to_the_world_poses(name, rng):
    """Chaining the parent -> child transforms reproduces each body's world pose."""
    model = mbsfmu.load_model(MODELS / name)
    q, qd = model.random_state(rng)
    kin = model.forward_kinematics(q, qd)
    world = {"world": (np.eye(3), np.zeros(3))}
    for parent, child, xyz, (x, y, z, w) in cv.transforms(model, kin):
        Rp, pp = world[parent]
        R = quat_to_R(np.array([w, x, y, z]))
        world[child] = (Rp @ R, pp + Rp @ np.asarray(xyz))
        i = model.body_index[child]
        np.testing.assert_allclose(world[child][0], kin.R[i], rtol=0, atol=1e-12)
        np.testing.assert_allclose(world[child][1], kin.p[i], rtol=0, atol=1e-12)


# ---- commands --------------------------------------------------------------------------------
def test_effort_command_follows_forward_command_controller(spacecraft):
    names = Simulator(spacecraft).input_names
    import array

    for data in ([0.1, 0.2, 0.3, 0.4, 5.0], array.array("d", [0.1, 0.2, 0.3, 0.4, 5.0])):  # rclpy's is array.array
        u = cv.effort_command_inputs(data, names)
        assert u.dtype == np.float64 and u.tolist() == [0.1, 0.2, 0.3, 0.4, 5.0]
    with pytest.raises(cv.CommandError, match=r"non-finite value\(s\) rw1.torque = x"):
        cv.effort_command_inputs(["x", 0.0, 0.0, 0.0, 0.0], names)
    with pytest.raises(
        cv.CommandError,
        match=r"has 2 entries, the model has 5 inputs: rw1.torque, rw2.torque, "
        r"rw3.torque, rw4.torque, thr1.thrust",
    ):
        cv.effort_command_inputs([1.0, 2.0], names)
    with pytest.raises(cv.CommandError, match=r"non-finite value\(s\) rw2.torque = nan, thr1.thrust = inf"):
        cv.effort_command_inputs([0.0, math.nan, 0.0, 0.0, math.inf], names)


def test_joint_command_names_and_aliases(spacecraft, scara):
    al = cv.command_aliases(spacecraft, Simulator(spacecraft).input_names)
    assert al["rw1"] == "rw1.torque" and al["thr1.thrust"] == "thr1.thrust" and "hinge_l" not in al
    sv = cv.servo_joints(spacecraft, Simulator(spacecraft).input_names)

    def effort_command(names, effort, al, sv):  # an effort-only JointState command
        efforts, targets = cv.joint_command(names, [], [], effort, al, sv)
        assert targets == {}
        return efforts

    assert effort_command(["rw2", "thr1.thrust"], [0.5, 1.0], al, sv) == {"rw2.torque": 0.5, "thr1.thrust": 1.0}
    al = cv.command_aliases(scara, Simulator(scara).input_names)
    sv = cv.servo_joints(scara, Simulator(scara).input_names)
    assert al == {"q1.tau": "q1.tau", "q2.tau": "q2.tau", "q1": "q1.tau", "q2": "q2.tau"}
    with pytest.raises(cv.CommandError, match=r"unknown joint\(s\) 'q3' \(did you mean 'q[12]'"):
        effort_command(["q1", "q3"], [1.0, 2.0], al, sv)
    with pytest.raises(cv.CommandError, match="2 names but 1 effort entries"):
        effort_command(["q1", "q2"], [1.0], al, sv)
    with pytest.raises(cv.CommandError, match="effort of q2 is inf"):
        effort_command(["q1", "q2"], [1.0, math.inf], al, sv)
    assert effort_command(["q1", "q2"], [1.0, math.nan], al, sv) == {"q1.tau": 1.0}  # NaN: not commanded
    with pytest.raises(cv.CommandError, match="sets q1.tau more than once"):
        effort_command(["q1", "q1.tau"], [1.0, 2.0], al, sv)
    with pytest.raises(cv.CommandError, match="names no joint"):
        effort_command([], [], al, sv)


def test_multi_dof_joint_command_alias():
    model = mbsfmu.load_model(MODELS / "branched_robot.yaml")
    names = Simulator(model).input_names
    al = cv.command_aliases(model, names)
    multi = [n for n in names if n.endswith("]") and ".tau[" in n]
    assert multi, names
    j, k = multi[0].split(".tau")
    assert al[f"{j}{k}"] == multi[0]


def test_command_stamps():
    ms = 1_000_000
    cv.check_command_stamp(0, 5 * ms, 100 * ms, lock_step=True)  # unstamped: applies now
    cv.check_command_stamp(5 * ms, 5 * ms, 100 * ms, lock_step=True)
    with pytest.raises(cv.CommandError, match=r"stamped t = 0.004000000 s, lock-step node is at t = 0.005000000 s"):
        cv.check_command_stamp(4 * ms, 5 * ms, 100 * ms, lock_step=True)
    cv.check_command_stamp(400 * ms, 500 * ms, 100 * ms, lock_step=False)
    with pytest.raises(cv.CommandError, match="stale joint command"):
        cv.check_command_stamp(399 * ms, 500 * ms, 100 * ms, lock_step=False)
    cv.check_command_stamp(1, 500 * ms, 0, lock_step=False)  # timeout 0: never stale


# ---- diagnostics -----------------------------------------------------------------------------
def test_level_for():
    assert [dg.level_for(v, 1e-6, 1e-3) for v in (0.0, 9e-7, 1e-6, 5e-4, 1e-3, 1.0, math.nan, None)] == [
        dg.OK,
        dg.OK,
        dg.WARN,
        dg.WARN,
        dg.ERROR,
        dg.ERROR,
        dg.ERROR,
        dg.ERROR,
    ]


def test_auto_checks(scara, spacecraft):
    """Momentum checks only for a free system; linear momentum only without gravity."""
    assert dg.auto_checks(scara) == ["p_sys_zero", "energy_balance", "engine_agreement"]
    assert dg.auto_checks(spacecraft) == [
        "H_sys_constant",
        "P_sys_constant",
        "p_sys_zero",
        "energy_balance",
        "engine_agreement",
    ]
    falling = Model(replace(spacecraft.spec, gravity=(0.0, 0.0, -9.81)), source="falling")
    assert dg.auto_checks(falling)[:2] == ["H_sys_constant", "p_sys_zero"]
    assert dg.resolve_checks(["auto", "P_sys_constant"], scara)[-1] == "P_sys_constant"
    assert dg.resolve_checks(["none"], scara) == []
    with pytest.raises(ValueError, match="unknown check 'H_sys'"):
        dg.resolve_checks(["H_sys"], scara)


def test_conservation_statuses_ok_then_error_with_thrust(spacecraft):
    """Free spacecraft: every check OK; after a thruster burn the momentum checks reach ERROR while
    the energy balance (thrust work counted) stays OK."""
    sim = Simulator(spacecraft, h_max=1e-2)
    ref = dg.checker_row(sim)
    checks = dg.auto_checks(spacecraft)
    for _ in range(10):
        sim.step(0.05)
    st = {s.name: s for s in dg.conservation_statuses(ref, dg.checker_row(sim), checks, dg.DEFAULT_THRESHOLDS)}
    assert [s.level for s in st.values()] == [dg.OK] * 5, {n: s.message for n, s in st.items()}
    assert float(st["H_sys_constant"].values["max_rel"]) < 1e-12
    sim.set_input("thr1.thrust", 1.0)
    sim.step(0.5)
    st = {s.name: s for s in dg.conservation_statuses(ref, dg.checker_row(sim), checks, dg.DEFAULT_THRESHOLDS)}
    assert st["H_sys_constant"].level == dg.ERROR and st["P_sys_constant"].level == dg.ERROR
    assert "external force" in st["P_sys_constant"].message
    assert st["energy_balance"].level == dg.OK and st["engine_agreement"].level == dg.OK


def test_conservation_statuses_same_time_and_no_checks(scara):
    sim = Simulator(scara)
    row = dg.checker_row(sim)
    assert dg.conservation_statuses(row, row, [], dg.DEFAULT_THRESHOLDS) == []
    st = dg.conservation_statuses(row, row, ["energy_balance"], dg.DEFAULT_THRESHOLDS)
    assert st[0].level == dg.OK and float(st[0].values["max_rel"]) == 0.0


def test_constraint_status():
    assert dg.constraint_status({}, 1e-8, 1e-5) is None
    s = dg.constraint_status({"closure": {"phi": 2e-7, "phidot": 1e-9}}, 1e-8, 1e-5)
    assert s.level == dg.WARN and s.values["closure.phi"] == "2e-07"
    assert dg.constraint_status({"c": {"phi": math.nan, "phidot": 0.0}}, 1e-8, 1e-5).level == dg.ERROR


# ---- pacing ----------------------------------------------------------------------------------
def test_pacing_stats():
    st = PacingStats()
    st.start(10.0, 0.0)
    for k in range(100):
        st.record(lateness=1e-4, work=5e-4 if k % 10 else 2e-3, budget=1e-3)
    st.slip()
    s = st.summary(wall=10.2, sim=0.1)
    assert s["cycles"] == 100 and s["overruns"] == 10 and s["overrun_fraction"] == pytest.approx(0.1, rel=0, abs=1e-15)
    assert s["slips"] == 1 and s["real_time_factor"] == pytest.approx(0.5, rel=1e-12, abs=0)
    assert s["work_max"] == 2e-3 and s["lateness_p50"] == pytest.approx(1e-4, rel=1e-12, abs=0)
    s2 = st.summary(wall=10.3, sim=0.1)
    assert s2["cycles"] == 0 and s2["total_cycles"] == 100 and s2["real_time_factor"] == 0.0
    lock = dg.real_time_status(s, 0.0, lock_step=True, paused=False, warn=0.01, error=0.1)
    assert lock.level == dg.OK and "lock-step" in lock.message
    paced = dg.real_time_status(s, 1.0, lock_step=False, paused=False, warn=0.01, error=0.1)
    assert paced.level == dg.ERROR and "10 of 100 cycles overran" in paced.message


def test_joint_command_position_velocity_effort_by_the_topic_based_convention():
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    inputs = ["q1.tau", "q2.tau"]
    aliases, servos = cv.command_aliases(model, inputs), cv.servo_joints(model, inputs)
    efforts, targets = cv.joint_command(["q1", "q2"], [0.4, math.nan], [], [0.0, 2.0], aliases, servos)
    assert efforts == {"q2.tau": 2.0} and targets == {"q1": cv.JointTarget(0.4, None, 0.0)}
    q, qd = np.array([0.1, 0.0]), np.array([0.5, 0.0])
    tau = cv.servo_efforts(targets, servos, q, qd, kp=100.0, kd=10.0, kv=3.0)
    assert tau == {"q1.tau": pytest.approx(100.0 * 0.3 - 10.0 * 0.5, rel=1e-15)}
    _, targets = cv.joint_command(["q2"], [], [1.5], [], aliases, servos)
    assert cv.servo_efforts(targets, servos, q, qd, 100.0, 10.0, 3.0) == {"q2.tau": 3.0 * 1.5}
    for names, pos, vel, eff, fragment in (
        (["q1"], [0.1, 0.2], [], [], "1 names but 2 position entries"),
        (["q1"], [], [], [], "no position, velocity or effort"),
        (["q1"], [math.inf], [], [], "position of q1 is inf"),
        (["q1", "q1"], [0.1, 0.2], [], [], "sets q1.tau more than once"),
        (["q3"], [0.1], [], [], "unknown joint(s) 'q3'"),
    ):
        with pytest.raises(cv.CommandError, match=re.escape(fragment)):
            cv.joint_command(names, pos, vel, eff, aliases, servos)


def test_the_actuator_feed_forward_makes_a_position_target_an_exact_equilibrium():
    """At rest on its target under gravity, the actuator model's torque (PD terms 0, feed-forward
    tau_id = RNEA(q, 0, 0)) gives qdd = 0 through the engine's forward dynamics (ABA): the target
    is an equilibrium, so a held position command has no steady-state error. Without the
    feed-forward (a plain PD servo) gravity accelerates the arm. Tolerance: ABA of RNEA's result
    returns qdd to ~1e-12 on this 2-joint arm (sums of a few terms of size ~30 N m, float64)."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")  # vertical plane, gravity along -y
    inputs = ["q1.tau", "q2.tau"]
    aliases, servos = cv.command_aliases(model, inputs), cv.servo_joints(model, inputs)
    _, targets = cv.joint_command(["q1", "q2"], [0.5, -0.3], [], [], aliases, servos)
    q, qd = np.array([0.5, -0.3]), np.array([0.0, 0.7])  # q2 still moving: its actual rate is not the reference
    qd_ref = cv.servo_reference_rates(targets, servos, qd)
    assert qd_ref == [0.0, 0.0]  # a position-only target: to stop there
    tau_id = model.inverse_dynamics(q, np.array(qd_ref), np.zeros(2))
    tau = cv.servo_efforts(targets, servos, q, np.zeros(2), 100.0, 10.0, 3.0, tau_id=tau_id)
    qdd = model.forward_dynamics(q, np.zeros(2), np.array([tau["q1.tau"], tau["q2.tau"]]))
    np.testing.assert_allclose(qdd, 0.0, rtol=0, atol=1e-12)
    plain = cv.servo_efforts(targets, servos, q, np.zeros(2), 100.0, 10.0, 3.0)
    assert np.abs(model.forward_dynamics(q, np.zeros(2), np.array(list(plain.values())))).max() > 1.0
    # a velocity target: the feed-forward is evaluated at the commanded rate; other joints at their own
    _, targets = cv.joint_command(["q1"], [], [1.0], [], aliases, servos)
    assert cv.servo_reference_rates(targets, servos, qd) == [1.0, 0.7]
