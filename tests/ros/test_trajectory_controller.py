"""Trajectories into the node as ros2_control's joint_trajectory_controller takes them (over real DDS
on loopback, a leased domain, the node in its own namespace): the 7-DoF arm (the bundled Panda
URDF) follows a control_msgs/FollowJointTrajectory goal within its tolerances, with a feedback
stream whose desired state is the cubic spline of the goal's points (scipy's CubicHermiteSpline as
the reference); a goal naming an unknown joint is rejected; a path tolerance violation aborts with
PATH_TOLERANCE_VIOLATED; cancel stops the arm and holds it; a new goal preempts the running one;
a trajectory_msgs/JointTrajectory on the topic is followed."""

import re

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from mbsfmu_ros.config import EXECUTORS
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS
from tests.support.ros_interfaces import interfaces_loaded

pytestmark = [pytest.mark.slow, pytest.mark.integration]

NS = "/arm"
ARM = [f"panda_joint{i}" for i in range(1, 8)]
FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]
ACTION = f"{NS}/joint_trajectory_controller/follow_joint_trajectory"
TOPIC = f"{NS}/joint_trajectory_controller/joint_trajectory"
SUCCEEDED, CANCELED, ABORTED = 4, 5, 6  # action_msgs/GoalStatus


def sim_time(stamp) -> float:
    return stamp.sec + 1e-9 * stamp.nanosec


def duration(t: float):
    from builtin_interfaces.msg import Duration

    ns = round(t * 1e9)
    return Duration(sec=ns // 10**9, nanosec=ns % 10**9)


def trajectory(points, stamp_zero=True):
    """A JointTrajectory of the arm: points as (time_from_start [s], positions, velocities or None)."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    msg = JointTrajectory(joint_names=list(ARM))
    for t, q, qd in points:
        p = JointTrajectoryPoint(positions=list(q), time_from_start=duration(t))
        if qd is not None:
            p.velocities = list(qd)
        msg.points.append(p)
    return msg


# a reach through two waypoints to a rest, positions and velocities given: cubic segments
REACH = [
    (0.5, [0.2, -0.3, 0.1, -0.5, 0.2, 0.4, -0.2], [0.3] * 7),
    (1.0, [0.4, -0.5, 0.3, -0.9, 0.1, 0.8, 0.3], [0.1, 0.0, -0.2, 0.0, 0.1, 0.3, 0.0]),
    (1.5, [0.3, -0.2, 0.0, -1.2, 0.0, 1.0, 0.5], [0.0] * 7),
]
HOME = [(0.8, [0.0, -0.4, 0.0, -1.0, 0.0, 0.6, 0.0], [0.0] * 7)]


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    """The Panda arm node in /arm, as fast as possible (the tests wait on sim time, not wall time),
    default servo gains; started paused, every joint held at the initial pose by one joint command,
    then resumed."""
    interfaces_loaded()
    from control_msgs.action import FollowJointTrajectory
    from diagnostic_msgs.msg import DiagnosticArray
    from rcl_interfaces.msg import Log
    from rclpy.action import ActionClient
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool

    tmp = tmp_path_factory.mktemp("trajectory")
    params = {"real_time_factor": 0.0, "start_paused": True, "diagnostics_rate": 20.0}
    with rt.Sandbox("trajectory") as sandbox:
        log = tmp / "node.log"
        proc = rt.start_node(MODELS / "urdf_arm7.urdf", params, sandbox, log, namespace=NS)
        client = rt.Client(sandbox, proc)
        client.log = log
        try:
            client.subscribe(f"{NS}/joint_states", JointState, depth=1_000_000)
            client.subscribe("/diagnostics", DiagnosticArray)
            client.subscribe("/rosout", Log)
            assert client.spin_until(lambda: client.msgs["/diagnostics"]), client.failure(log)
            pub = client.publisher(f"{NS}/mbs/joint_commands", JointState)
            assert client.spin_until(lambda: pub.get_subscription_count() >= 1), client.failure(log)
            pub.publish(JointState(name=ARM + FINGERS, position=[0.0] * 9))

            def accepted() -> bool:
                for arr in reversed(client.msgs["/diagnostics"]):
                    for st in arr.status:
                        if st.name.endswith(": commands"):
                            return int({kv.key: kv.value for kv in st.values}["accepted"]) >= 1
                return False

            assert client.spin_until(accepted), client.failure(log)
            client.action = ActionClient(client.node, FollowJointTrajectory, ACTION)
            assert client.action.wait_for_server(timeout_sec=rt.PATIENCE), client.failure(log)
            r = client.call(SetBool, f"{NS}/{sandbox.node_name}/pause", SetBool.Request(data=False))  # ~/pause
            assert r is not None and r.success, client.failure(log)
            warm_up(client)
            yield client
        finally:
            code = rt.stop_node(proc)
            client.close()
        assert code == 0, rt.read_log(log)


def goal(points, path=(), goal_tol=(), goal_time=0.0):
    from control_msgs.action import FollowJointTrajectory
    from control_msgs.msg import JointTolerance

    g = FollowJointTrajectory.Goal(trajectory=trajectory(points), goal_time_tolerance=duration(goal_time))
    g.path_tolerance = [JointTolerance(name=n, position=p) for n, p in path]
    g.goal_tolerance = [JointTolerance(name=n, position=p, velocity=v) for n, p, v in goal_tol]
    return g


def send(client, g):
    """Send goal ``g``; (its handle, its feedback list)."""
    feedback = []
    sent = client.action.send_goal_async(g, feedback_callback=lambda m: feedback.append(m.feedback))
    assert client.spin_until(sent.done), client.failure(client.log)
    return sent.result(), feedback


def result(client, handle):
    done = handle.get_result_async()
    assert client.spin_until(done.done), client.failure(client.log)
    return done.result()


def warm_up(client) -> None:
    """Short goals until one's feedback arrives: the node's feedback writer has matched this
    client's reader (a volatile topic: feedback sent before is lost; see test_simulation_services)."""
    for _ in range(50):
        handle, feedback = send(client, goal(HOME))
        assert handle.accepted
        got = client.spin_until(lambda fb=feedback: fb, timeout=5.0)
        assert result(client, handle).status == SUCCEEDED
        if got:
            return
    raise AssertionError("no feedback from the node: " + client.failure(client.log))


def commands_status(client) -> dict:
    """Values of the node's latest ``commands`` diagnostics status ({} before the first)."""
    for arr in reversed(client.msgs["/diagnostics"]):
        for st in arr.status:
            if st.name.endswith(": commands"):
                return {kv.key: kv.value for kv in st.values}
    return {}


def service(client, name: str) -> str:
    """The node's private service ``~/name`` in the namespace."""
    return f"{NS}/{client.sandbox.node_name}/{name}"


def joint_states(client):
    return client.msgs[f"{NS}/joint_states"]


def arm_q(msg) -> np.ndarray:
    return np.array([msg.position[list(msg.name).index(n)] for n in ARM])


def arm_qd(msg) -> np.ndarray:
    return np.array([msg.velocity[list(msg.name).index(n)] for n in ARM])


def wait_until(client, condition) -> None:
    assert client.spin_until(condition), client.failure(client.log)


def wait_sim(client, seconds: float) -> None:
    """Spin until the node's joint states have advanced ``seconds`` of sim time past the latest
    one received. (The node runs as fast as it can and the client may lag behind it: a wait for
    the state after an event waits for a stamp known to be after it.)"""
    js = joint_states(client)
    t0 = sim_time(js[-1].header.stamp)
    wait_until(client, lambda: sim_time(js[-1].header.stamp) >= t0 + seconds)


def at_rest_after(client, t: float) -> None:
    """Spin until a joint state stamped at or after sim time t [s] shows the arm at rest (|qd| <= 1e-6 rad/s)."""
    js = joint_states(client)
    wait_until(client, lambda: sim_time(js[-1].header.stamp) >= t and np.abs(arm_qd(js[-1])).max() <= 1e-6)


# first, before the module's arm node starts: that node runs as fast as possible and its client
# does not read while other tests run, and a node whose reliable subscriber stops reading dies
# (rclpy's publish raises "cannot publish data" after ~5-9 s; left for a later fix)
@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_paced_node_serves_while_a_goal_runs(tmp_path, executor):
    """Paced (real_time_factor 0.1: the loop waits in the executor in every cycle, with a timeout
    that changes from call to call) a running goal leaves the node serving: ~/pause is answered
    and the goal's cancel too (CANCELED), under each rclpy executor. (The paused node of the
    later-start test is the one that stalled with plain float timeouts.)"""
    interfaces_loaded()
    from control_msgs.action import FollowJointTrajectory
    from rclpy.action import ActionClient
    from std_srvs.srv import SetBool

    with rt.Sandbox("trajectory_paced") as sandbox:
        log = tmp_path / "node.log"
        params = {"real_time_factor": 0.1, "diagnostics_rate": 20.0, "executor": executor}  # slack: the loop waits
        proc = rt.start_node(MODELS / "urdf_arm7.urdf", params, sandbox, log, namespace=NS)
        client = rt.Client(sandbox, proc)
        client.log = log
        try:
            client.action = ActionClient(client.node, FollowJointTrajectory, ACTION)
            assert client.action.wait_for_server(timeout_sec=rt.PATIENCE), client.failure(log)
            handle, fb = send(client, goal([(30.0, HOME[0][1], [0.0] * 7)]))
            assert handle.accepted
            r = client.call(SetBool, service(client, "pause"), SetBool.Request(data=False))  # served: goal running
            assert r is not None and r.success, client.failure(log)
            canceling = handle.cancel_goal_async()
            assert client.spin_until(canceling.done), client.failure(log)
            assert result(client, handle).status == CANCELED
        finally:
            code = rt.stop_node(proc)
            client.close()
        assert code == 0, rt.read_log(log)


def test_the_arm_follows_a_goal_within_its_tolerances(arm):
    """A three-point goal (cubic segments) with path tolerance 0.01 rad and goal tolerance 1e-4 rad
    per joint: SUCCEEDED; the desired state of every feedback past the first point is scipy's
    CubicHermiteSpline of the points at the feedback's time_from_start (to 1e-8 rad and 1e-7
    rad/s: that time is rounded to the ns, times |qd| <= 3 rad/s and |qdd| <= 30 rad/s^2 here);
    the tracking error the feedback reports stays below 2e-5 rad (the feed-forward is the inverse
    dynamics of the desired motion at each physics step's midpoint, default gains kp = 100, kd = 10,
    h = 1 ms: measured 2.2e-6 rad; with the desired state at the step's start instead, 1.1e-4 rad);
    feedback stamps increase; the arm ends on the last point."""
    from scipy.interpolate import CubicHermiteSpline

    tols = [(n, 1e-4, 0.0) for n in ARM]
    handle, feedback = send(arm, goal(REACH, path=[(n, 0.01) for n in ARM], goal_tol=tols, goal_time=1.0))
    assert handle.accepted
    T_end = REACH[-1][0]
    assert arm.spin_until(lambda: feedback and sim_time(feedback[-1].desired.time_from_start) >= T_end), arm.failure(
        arm.log
    )
    res = result(arm, handle)
    assert res.status == SUCCEEDED and res.result.error_code == 0, res.result.error_string
    stamps = [sim_time(f.header.stamp) for f in feedback]
    # one feedback per 10 ms cycle (150 here); the node runs as fast as it can, and rclpy's action
    # client keeps the last 10 feedbacks: some are dropped when the client falls behind
    assert all(b > a for a, b in zip(stamps, stamps[1:])) and len(feedback) >= 20
    assert all(list(f.joint_names) == ARM for f in feedback)
    t = np.array([p[0] for p in REACH])
    spline = CubicHermiteSpline(t, np.array([p[1] for p in REACH]), np.array([p[2] for p in REACH]))
    checked = 0
    for f in feedback:
        s = sim_time(f.desired.time_from_start)
        if t[0] <= s <= t[-1]:
            assert np.abs(np.array(f.desired.positions) - spline(s)).max() <= 1e-8
            assert np.abs(np.array(f.desired.velocities) - spline(s, 1)).max() <= 1e-7
            assert f.index in {int(np.searchsorted(t, s + ds, side="right")) for ds in (-1e-8, 1e-8)} | {2}
            checked += 1
        e = np.array(f.error.positions)
        assert np.allclose(e, np.array(f.desired.positions) - np.array(f.actual.positions), rtol=0, atol=1e-15)
        assert np.abs(e).max() <= 2e-5, (s, np.abs(e).max())
    assert checked >= 10
    js = joint_states(arm)
    wait_until(arm, lambda: sim_time(js[-1].header.stamp) >= sim_time(feedback[-1].header.stamp) + 0.5)
    q = arm_q(joint_states(arm)[-1])
    assert np.abs(q - REACH[-1][1]).max() <= 1e-4, np.abs(q - REACH[-1][1]).max()


def test_a_goal_with_an_unknown_joint_is_rejected(arm):
    g = goal(HOME)
    g.trajectory.joint_names[6] = "panda_joint9"
    n = len(arm.msgs["/rosout"])
    handle, _ = send(arm, g)
    assert not handle.accepted

    def said():  # the node's /rosout entries (named <namespace>.<node> in a namespace)
        return [m.msg for m in arm.msgs["/rosout"][n:] if m.name.endswith(arm.sandbox.node_name) and "joint9" in m.msg]

    assert arm.spin_until(said), arm.failure(arm.log)
    text = said()[0]
    assert "unknown joint(s) 'panda_joint9' (did you mean 'panda_joint" in text and "goal rejected" in text
    wait_until(arm, lambda: "panda_joint9" in commands_status(arm).get("last_rejection", ""))  # and the diagnostics


def test_a_path_tolerance_violation_aborts_and_holds(arm):
    """A path tolerance of 1e-9 rad on joint 4 (the tracking error is ~1e-6 rad): ABORTED with
    PATH_TOLERANCE_VIOLATED naming the joint, then the arm holds still where it was."""
    far = [(2.0, [0.5, -0.8, 0.4, -1.8, 0.3, 1.2, 0.6], [0.0] * 7)]
    q0 = arm_q(joint_states(arm)[-1])
    handle, _ = send(arm, goal(far, path=[("panda_joint4", 1e-9)]))
    assert handle.accepted
    res = result(arm, handle)
    assert res.status == ABORTED
    assert res.result.error_code == -4, res.result.error_string  # PATH_TOLERANCE_VIOLATED
    assert "panda_joint4: position error" in res.result.error_string
    t_abort = float(re.search(r"at t = ([0-9.]+) s", res.result.error_string).group(1))
    at_rest_after(arm, t_abort + 0.1)
    js = joint_states(arm)
    assert np.abs(arm_q(js[-1]) - q0).max() <= 1e-3  # where it was: it stopped at once
    assert np.abs(arm_q(js[-1]) - far[0][1]).max() > 0.3


def test_cancel_stops_and_holds_and_a_new_goal_preempts(arm):
    """A long goal canceled after its first feedbacks: CANCELED, the arm brought to rest and held
    (once |qd| <= 1e-6 rad/s, q constant to 1e-6 rad over 1 s of sim time) near where it was.
    Another long goal preempted by a short one: ABORTED with INVALID_GOAL ("preempted"), the short
    one SUCCEEDED on its point."""
    slow = [(60.0, [0.8, -0.2, 0.5, -1.5, 0.4, 1.0, 0.8], [0.0] * 7)]
    q0 = arm_q(joint_states(arm)[-1])
    handle, feedback = send(arm, goal(slow))
    assert handle.accepted and arm.spin_until(lambda: len(feedback) >= 3)
    t_cancel = sim_time(feedback[-1].header.stamp)  # the goal ran then: the arm moved (|qd| ~ 0.01 rad/s)
    canceling = handle.cancel_goal_async()
    assert arm.spin_until(canceling.done)
    assert result(arm, handle).status == CANCELED
    at_rest_after(arm, t_cancel)
    js = joint_states(arm)
    q1 = arm_q(js[-1])
    wait_sim(arm, 1.0)
    assert np.abs(arm_q(js[-1]) - q1).max() <= 1e-6
    assert np.abs(q1 - q0).max() <= 0.05 and np.abs(q1 - slow[0][1]).max() > 0.3  # the slow goal did not go on

    first, fb = send(arm, goal(slow))
    assert first.accepted and arm.spin_until(lambda: len(fb) >= 3)
    second, fb2 = send(arm, goal(HOME, goal_tol=[(n, 1e-4, 0.0) for n in ARM]))
    assert second.accepted
    r1 = result(arm, first)
    assert r1.status == ABORTED and r1.result.error_code == -1 and "preempted" in r1.result.error_string
    wait_until(arm, lambda: fb2 and sim_time(fb2[-1].desired.time_from_start) >= HOME[0][0])
    r2 = result(arm, second)
    assert r2.status == SUCCEEDED, r2.result.error_string
    js = joint_states(arm)
    wait_until(arm, lambda: sim_time(js[-1].header.stamp) >= sim_time(fb2[-1].header.stamp))
    assert np.abs(arm_q(js[-1]) - HOME[0][1]).max() <= 1e-4


def test_a_trajectory_on_the_topic_is_followed(arm):
    """JointTrajectory on <ns>/joint_trajectory_controller/joint_trajectory (no goal): a bad one
    is refused (the commands diagnostics say why), a good one takes the arm to its last point, where
    it stays (1e-4 rad)."""
    from trajectory_msgs.msg import JointTrajectory

    pub = arm.publisher(TOPIC, JointTrajectory)
    assert arm.spin_until(lambda: pub.get_subscription_count() >= 1), arm.failure(arm.log)
    bad = trajectory(REACH)
    bad.points[1].time_from_start = bad.points[0].time_from_start  # times must increase
    pub.publish(bad)
    wait_until(arm, lambda: "points[1].time_from_start" in commands_status(arm).get("last_rejection", ""))
    target = np.array(REACH[-1][1])
    js = joint_states(arm)
    assert np.abs(arm_q(js[-1]) - target).max() > 0.1
    pub.publish(trajectory(REACH))
    assert arm.spin_until(lambda: np.abs(arm_q(js[-1]) - target).max() <= 1e-4), arm.failure(arm.log)
    wait_sim(arm, 1.0)
    assert np.abs(arm_q(js[-1]) - target).max() <= 1e-4


def test_a_goal_stamped_later_starts_at_its_stamp(arm):
    """A slow goal runs; paused at sim time T (the ~/pause response names it), a second goal
    stamped T + 0.5 s: the first goes on until then (the arm moves), then ends ABORTED
    ("preempted by a trajectory that started"); the second's start is its stamp (feedback stamp
    minus time_from_start, to the ns roundings) and it succeeds."""
    from builtin_interfaces.msg import Time
    from std_srvs.srv import SetBool

    slow = [(60.0, [0.8, -0.2, 0.5, -1.5, 0.4, 1.0, 0.8], [0.0] * 7)]
    first, fb1 = send(arm, goal(slow))
    assert first.accepted and arm.spin_until(lambda: len(fb1) >= 3)
    r = arm.call(SetBool, service(arm, "pause"), SetBool.Request(data=True))
    assert r is not None and r.success, arm.failure(arm.log)
    T = float(re.search(r"at t = ([0-9.]+) s", r.message).group(1))
    g = goal(REACH[-1:], goal_tol=[(n, 1e-4, 0.0) for n in ARM])
    start_ns = round((T + 0.5) * 1e9)
    g.trajectory.header.stamp = Time(sec=start_ns // 10**9, nanosec=start_ns % 10**9)
    second, fb = send(arm, g)
    assert second.accepted
    r = arm.call(SetBool, service(arm, "pause"), SetBool.Request(data=False))
    assert r is not None and r.success
    r1 = result(arm, first)
    assert r1.status == ABORTED and r1.result.error_string == "preempted by a trajectory that started"
    wait_until(arm, lambda: fb and sim_time(fb[-1].desired.time_from_start) >= REACH[-1][0])
    res = result(arm, second)
    assert res.status == SUCCEEDED, res.result.error_string
    for f in fb:
        assert abs(sim_time(f.header.stamp) - sim_time(f.desired.time_from_start) - start_ns * 1e-9) <= 3e-9
    js = [m for m in joint_states(arm) if T - 1e-9 <= sim_time(m.header.stamp) < T + 0.5 - 1e-9]
    assert len(js) >= 40
    q = np.array([arm_q(m) for m in js])
    assert np.abs(q[-1] - q[0]).max() > 2e-5  # the first goal went on (measured 1.8e-4; held: <= 1e-6)


def test_a_joint_command_the_command_timeout_and_a_reset(arm):
    """A joint command naming a joint of the running goal aborts it (INVALID_GOAL, "stopped by a
    joint command"); with command_timeout 0.3 s a goal of 1.2 s still succeeds (the timeout
    counts from a trajectory's end, as JTC's cmd_timeout), then the timeout zeroes the inputs;
    ~/reset aborts a running goal ("stopped by a reset"). Last: the arm falls after it."""
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    from sensor_msgs.msg import JointState
    from std_srvs.srv import Trigger

    slow = [(60.0, [0.8, -0.2, 0.5, -1.5, 0.4, 1.0, 0.8], [0.0] * 7)]
    handle, fb = send(arm, goal(slow))
    assert handle.accepted and arm.spin_until(lambda: len(fb) >= 3)
    pub = arm.publisher(f"{NS}/mbs/joint_commands", JointState)
    assert arm.spin_until(lambda: pub.get_subscription_count() >= 1)
    pub.publish(JointState(name=["panda_joint2"], position=[-0.3]))
    res = result(arm, handle)
    assert res.status == ABORTED and res.result.error_code == -1
    assert res.result.error_string == "stopped by a joint command"

    value = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=0.3)
    req = SetParameters.Request(parameters=[Parameter(name="command_timeout", value=value)])
    r = arm.call(SetParameters, service(arm, "set_parameters"), req)
    assert r is not None and r.results[0].successful, r
    handle, fb = send(arm, goal([(1.2, HOME[0][1], [0.0] * 7)], goal_tol=[(n, 1e-4, 0.0) for n in ARM]))
    assert handle.accepted
    wait_until(arm, lambda: fb and sim_time(fb[-1].desired.time_from_start) >= 1.2)
    res = result(arm, handle)
    assert res.status == SUCCEEDED, res.result.error_string
    t_end = sim_time(fb[-1].header.stamp)
    js = joint_states(arm)
    wait_until(arm, lambda: sim_time(js[-1].header.stamp) >= t_end + 0.5)
    assert np.abs(arm_q(js[-1]) - HOME[0][1]).max() > 1e-3  # inputs zero after the timeout: it falls
    assert list(js[-1].effort[:7]) == [0.0] * 7

    handle, fb = send(arm, goal(slow))
    assert handle.accepted and arm.spin_until(lambda: len(fb) >= 3)
    r = arm.call(Trigger, service(arm, "reset"), Trigger.Request())
    assert r is not None and r.success
    res = result(arm, handle)
    assert res.status == ABORTED and res.result.error_string == "stopped by a reset"
