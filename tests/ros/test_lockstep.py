"""Closed loop over real DDS in lock-step mode: a PD controller (with gravity compensation) in this
process drives the SCARA node to a setpoint through /mbs/effort_commands; the trajectory equals the
same loop run in-process with the Simulator to 1e-12 (in fact bit for bit), under each rclpy
executor the node offers (parameter ``executor``), so the one not in use by default keeps working,
and with a client that takes the joint states as CDR bytes (``raw=True``) and reads them with
``JointStateReader`` (docs/guides/ros2.md, "Lock-step")."""

import time

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu
from mbsfmu.sim.simulator import Simulator
from mbsfmu_ros import conversion as cv
from mbsfmu_ros.config import EXECUTORS
from mbsfmu_ros.joint_state_reader import JointStateReader
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS

pytestmark = pytest.mark.integration

MODEL = MODELS / "scara.yaml"
PERIOD, H = 0.01, 5e-3
PARAMS = {"publish_rate": 1.0 / PERIOD, "physics_step": H, "lock_step": True, "diagnostics_rate": 2.0}
N = 300  # cycles = 3 s of sim time
Q_REF = np.array([1.0, 0.5])  # [rad]
KP, KD = np.array([60.0, 40.0]), np.array([15.0, 8.0])


def pd(model, q, qd):
    """tau = g(q) + Kp (q_ref - q) - Kd qd [N m]: PD with gravity compensation."""
    return model.inverse_dynamics(q, np.zeros(2), np.zeros(2)) + KP * (Q_REF - q) - KD * qd


# (the node's executor, how the client reads the joint states)
CASES = [(executor, "messages") for executor in EXECUTORS] + [("events", "raw")]


@pytest.fixture(scope="module", params=CASES, ids=["-".join(c) for c in CASES])
def loop(request, tmp_path_factory):
    from rcl_interfaces.msg import Log
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    model = mbsfmu.load_model(MODEL)
    lay = cv.joint_layout(model)
    sandbox = rt.Sandbox("lockstep")
    log = tmp_path_factory.mktemp("ros") / "node.log"
    executor, reads = request.param
    proc = rt.start_node(MODEL, {**PARAMS, "executor": executor}, sandbox, log)
    client = rt.Client(sandbox, proc)
    client.subscribe("/rosout", Log)
    # lock-step clients: command publisher matched first, then the state subscription (the node
    # announces its state when a /joint_states subscriber appears)
    pub = client.publisher("/mbs/effort_commands", Float64MultiArray)
    if not client.spin_until(lambda: pub.get_subscription_count() > 0):
        why = client.failure(log)
        rt.stop_node(proc)
        client.close()
        sandbox.close()
        pytest.fail(f"node not found within {rt.PATIENCE:g} s; {why}")
    states, times = [], []

    reader = JointStateReader()

    def on_state(msg):
        if reads == "raw":  # bytes: read in place
            msg = reader.read(msg)
            stamp = msg.sec, msg.nanosec
        else:
            stamp = msg.header.stamp.sec, msg.header.stamp.nanosec
        t = cv.stamp_to_ns(*stamp)
        if states and t == states[-1][0]:
            return  # the same state announced again: answer once
        q, qd = cv.state_from_joint_state(lay, msg.name, msg.position, msg.velocity)
        states.append((t, q, qd, list(msg.effort)))
        times.append(time.perf_counter())
        if len(states) <= N:
            pub.publish(Float64MultiArray(data=pd(model, q, qd).tolist()))

    client.subscribe("/joint_states", JointState, on_state, raw=reads == "raw")
    ok = client.spin_until(lambda: len(states) > N)
    client.states, client.times, client.proc, client.log, client.model = states, times, proc, log, model
    if not ok:
        why = client.failure(log)
        rt.stop_node(proc)
        client.close()
        sandbox.close()
        pytest.fail(f"lock-step loop stalled after {len(states)} states; {why}")
    yield client
    code = rt.stop_node(proc)
    client.close()
    sandbox.close()
    assert code == 0, rt.read_log(log)


def test_lock_step_trajectory_equals_in_process_loop(loop):
    model = loop.model
    sim = Simulator(model, integrator="rk4", h_max=H)
    worst = 0.0
    for k in range(N + 1):
        t, q, qd, effort = loop.states[k]
        assert t == cv.time_to_ns(k * PERIOD)
        worst = max(worst, float(np.max(np.abs(q - sim.q))), float(np.max(np.abs(qd - sim.qd))))
        np.testing.assert_allclose(q, sim.q, rtol=0, atol=1e-12)
        np.testing.assert_allclose(qd, sim.qd, rtol=0, atol=1e-12)
        if k == N:
            break
        u = pd(model, sim.q, sim.qd)
        sim.set_inputs({"q1.tau": u[0], "q2.tau": u[1]})
        sim.advance_to((k + 1) * PERIOD)
        assert loop.states[k + 1][3] == u.tolist()  # the effort published with the next state
    rate = N / (loop.times[-1] - loop.times[0])
    print(f"lock-step: {N} cycles, max |ROS - in-process| = {worst:.3g}, round trips {rate:.0f}/s")
    assert worst <= 1e-12


def test_pd_reaches_the_setpoint(loop):
    _t, q, qd, _e = loop.states[N]
    np.testing.assert_allclose(q, Q_REF, rtol=0, atol=2e-2)
    assert np.max(np.abs(qd)) < 0.1


def test_lock_step_joint_command_needs_the_current_stamp(loop):
    """A JointState command stamped for another time is rejected (warning), one stamped for the
    current sim time advances exactly one cycle."""
    from sensor_msgs.msg import JointState

    pub = loop.publisher("/mbs/joint_commands", JointState)
    assert loop.spin_until(lambda: pub.get_subscription_count() > 0)
    t_now = loop.states[-1][0]
    n0, r0 = len(loop.states), len(loop.msgs["/rosout"])
    bad = JointState(name=["q1", "q2"], effort=[0.0, 0.0])
    bad.header.stamp.sec, bad.header.stamp.nanosec = cv.ns_to_stamp(t_now - 10_000_000)
    pub.publish(bad)
    assert loop.spin_until(lambda: any("lock-step node is at" in w for w in loop.node_logs(r0)))
    loop.spin_for(0.3)
    assert len(loop.states) == n0  # no step
    good = JointState(name=["q1", "q2"], effort=[0.0, 0.0])
    good.header.stamp.sec, good.header.stamp.nanosec = cv.ns_to_stamp(t_now)
    pub.publish(good)
    assert loop.spin_until(lambda: len(loop.states) == n0 + 1)
    loop.spin_for(0.3)
    assert len(loop.states) == n0 + 1 and loop.states[-1][0] == t_now + 10_000_000
    assert loop.proc.poll() is None
