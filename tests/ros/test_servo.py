"""Commands as ros2_control sends them (sensor_msgs/JointState with position, velocity or effort per
joint, the topic-based hardware interface's convention), the PD servo that turns position and
velocity commands into joint torques (its work counted in W_in), and the parameters: set at run
time where meaningful, refused where not, a misspelled one fails start-up with a did-you-mean."""

import math
import subprocess
import sys

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS

pytestmark = pytest.mark.integration

MODEL = MODELS / "scara.yaml"  # vertical plane, gravity along -y


def horizontal_scara(folder):
    """The bundled SCARA turned as real SCARAs are: joint axes vertical, gravity along -z (no gravity
    torque), so a servo's rest state is exactly its target."""
    path = folder / "scara_horizontal.yaml"
    path.write_text(MODEL.read_text().replace("gravity: [0, -9.81, 0]", "gravity: [0, 0, -9.81]"))
    return path


@pytest.fixture
def node(tmp_path):
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    with rt.Sandbox("servo") as sandbox:
        log = tmp_path / "node.log"
        params = {
            "real_time_factor": 2.0,
            "command_timeout": 0.0,
            "servo_kp": 400.0,
            "servo_kd": 40.0,
            "diagnostics_rate": 10.0,
        }
        proc = rt.start_node(horizontal_scara(tmp_path), params, sandbox, log)
        client = rt.Client(sandbox, proc)
        client.subscribe("/joint_states", JointState, depth=2000)
        client.subscribe("/mbs/energy", Float64MultiArray, depth=2000)
        client.subscribe("/diagnostics", DiagnosticArray)
        assert client.spin_until(lambda: len(client.msgs["/mbs/energy"]) >= 2), client.failure(log)
        client.log = log
        yield client
        code = rt.stop_node(proc)
        client.close()
        assert code == 0, rt.read_log(log)


def test_position_command_converges_and_its_work_is_counted(node):
    """A position-only command (what a position controller sends) is accepted; the PD servo
    (kp = 400, kd = 40) brings the horizontal SCARA to rest at the target; energy: E - E0 = W_in +
    W_diss all along (the servo's work counted as input work), to RK4's truncation error
    ((w h)^4 ~ 1e-6 relative with w = sqrt(kp / I) ~ 30 rad/s and h = 1 ms)."""
    import numpy as np
    from sensor_msgs.msg import JointState

    pub = node.publisher("/mbs/joint_commands", JointState)
    target = [0.4, -0.3]
    cmd = JointState(name=["q1", "q2"], position=target)
    E0 = node.msgs["/mbs/energy"][0].data[2]
    n0 = len(node.msgs["/joint_states"])

    def settled():
        pub.publish(cmd)
        js = node.msgs["/joint_states"][n0:]
        last = js[-1] if js else None
        return (
            len(js) > 50
            and np.abs(np.array(last.position) - target).max() < 1e-6
            and np.abs(last.velocity).max() < 1e-5
        )

    assert node.spin_until(settled), [list(m.position) for m in node.msgs["/joint_states"][-3:]]
    js = node.msgs["/joint_states"][-1]
    assert np.abs(js.effort).max() < 1e-3
    rows = np.array([m.data for m in node.msgs["/mbs/energy"]])  # KE, PE, E, W_in, W_diss
    KE_max = rows[:, 0].max()
    assert KE_max > 1e-3 and np.abs(rows[:, 3]).max() > 1e-3  # the servo moved the arm: it did work
    assert np.abs(rows[:, 2] - E0 - rows[:, 3] - rows[:, 4]).max() <= 1e-5 * KE_max


@pytest.fixture
def vertical(tmp_path):
    """The bundled SCARA as it is (vertical plane, gravity along -y), every parameter at its
    default but the pacing (as fast as possible: the test waits on sim time, not wall time), started
    paused so the first command acts on the initial state (``command_once`` resumes it)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    with rt.Sandbox("hold") as sandbox:
        log = tmp_path / "node.log"
        params = {"real_time_factor": 0.0, "diagnostics_rate": 20.0, "start_paused": True}
        proc = rt.start_node(MODEL, params, sandbox, log)
        client = rt.Client(sandbox, proc)
        client.subscribe("/joint_states", JointState, depth=100_000)
        client.subscribe("/mbs/energy", Float64MultiArray, depth=100_000)
        client.subscribe("/diagnostics", DiagnosticArray)
        # paused: the initial state is published once, maybe before we subscribed; diagnostics repeat
        assert client.spin_until(lambda: len(client.msgs["/diagnostics"]) >= 1), client.failure(log)
        client.log = log
        yield client
        code = rt.stop_node(proc)
        client.close()
        assert code == 0, rt.read_log(log)


def sim_time(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def status(client, name: str):
    """The latest /diagnostics status ``<node>: name``, or None."""
    for arr in reversed(client.msgs["/diagnostics"]):
        for st in arr.status:
            if st.name.endswith(f": {name}"):
                return st
    return None


def command_once(client, msg) -> None:
    """Publish ``msg`` once to /mbs/joint_commands of the paused node (after its subscription
    matched: reliable QoS then delivers it), wait until the node reports it accepted (``commands``
    status) and resume the node: the command acts from the initial state, sim time 0."""
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool

    pub = client.publisher("/mbs/joint_commands", JointState)
    assert client.spin_until(lambda: pub.get_subscription_count() >= 1), client.failure(client.log)
    pub.publish(msg)

    def accepted() -> bool:
        st = status(client, "commands")
        return st is not None and int({kv.key: kv.value for kv in st.values}["accepted"]) >= 1

    assert client.spin_until(accepted), client.failure(client.log)
    response = client.call(SetBool, "~/pause", SetBool.Request(data=False))
    assert response is not None and response.success, client.failure(client.log)


def test_a_held_position_command_reaches_its_target_under_gravity(vertical):
    """One position command [0.5, -0.3] on the vertical SCARA, sent once with the default
    parameters: it holds until the next (no command timeout by default) and the actuator model
    (inverse-dynamics feed-forward RNEA(q, 0, 0) + PD, kp = 100, kd = 10) brings the arm to rest
    on the target: steady-state error <= 1e-6 rad over the last 2 s of 20 s of sim time (the
    issue's plain PD ended 0.32 rad short; with the old 0.5 s timeout the arm fell). The
    actuator's work is input work: E - E0 = W_in + W_diss all along, to RK4's truncation error
    (w h)^4 ~ 1e-11 relative (w = sqrt(kp / M11) ~ 6 rad/s, h = 1 ms), checked at 1e-6 of the
    largest |W_in|; the node's energy_balance diagnostics stay OK."""
    import numpy as np
    from sensor_msgs.msg import JointState

    target = np.array([0.5, -0.3])
    command_once(vertical, JointState(name=["q1", "q2"], position=list(target)))
    js = vertical.msgs["/joint_states"]
    assert vertical.spin_until(lambda: js and sim_time(js[-1]) >= 20.0), vertical.failure(vertical.log)
    last = [m for m in js if sim_time(m) >= 18.0]
    q = np.array([m.position for m in last])
    qd = np.array([m.velocity for m in last])
    assert len(last) >= 100 and np.abs(q - target).max() <= 1e-6, np.abs(q - target).max()
    assert np.abs(qd).max() <= 1e-5, np.abs(qd).max()
    rows = np.array([m.data for m in vertical.msgs["/mbs/energy"]])  # KE, PE, E, W_in, W_diss
    W_in = np.abs(rows[:, 3]).max()
    assert W_in > 1.0  # the actuator lifted the arm: its work is counted
    E0 = rows[:, 2] - rows[:, 3] - rows[:, 4]  # E - W_in - W_diss: constant
    assert np.ptp(E0) <= 1e-6 * W_in, np.ptp(E0)
    n = len(vertical.msgs["/diagnostics"])
    assert vertical.spin_until(lambda: len(vertical.msgs["/diagnostics"]) > n)
    st = status(vertical, "energy_balance")
    assert st.level == bytes([0]), st.message  # OK


def test_a_velocity_command_is_tracked_under_gravity(vertical):
    """q1 at 1 rad/s (q2 at 0 rad/s), sent once, on the vertical SCARA: the actuator model
    (feed-forward RNEA(q, qd_ref, 0) + kv (qd_ref - qd), kv = 10) tracks it while gravity's torque
    on q1 swings by +-25 N m each turn (the issue's plain servo stalled at -0.26 rad/s). Tolerance
    3e-3 rad/s: the torque is held over each physics_step h = 1 ms while the gravity torque changes
    at up to |dG/dq1| qd ~ 25 N m/s, a bias of ~25e-3 / 2 N m / kv ~ 1.3e-3 rad/s (measured 1.3e-3)."""
    import numpy as np
    from sensor_msgs.msg import JointState

    command_once(vertical, JointState(name=["q1", "q2"], velocity=[1.0, 0.0]))
    js = vertical.msgs["/joint_states"]
    assert vertical.spin_until(lambda: js and sim_time(js[-1]) >= 12.0), vertical.failure(vertical.log)
    last = [m for m in js if sim_time(m) >= 4.0]
    qd = np.array([m.velocity for m in last])
    assert len(last) >= 500
    assert np.abs(qd - [1.0, 0.0]).max() <= 3e-3, np.abs(qd - [1.0, 0.0]).max(axis=0)
    assert last[-1].position[0] - last[0].position[0] > 7.0  # it turned (more than a full turn)


def test_velocity_command_then_effort_only_and_bad_commands_keep_the_node_alive(node):
    from sensor_msgs.msg import JointState

    pub = node.publisher("/mbs/joint_commands", JointState)
    n0 = len(node.msgs["/joint_states"])

    def spinning():
        pub.publish(JointState(name=["q1"], velocity=[1.5]))
        js = node.msgs["/joint_states"][n0:]
        return len(js) > 50 and abs(js[-1].velocity[0] - 1.5) < 1e-4  # no gravity torque: exact at steady state

    assert node.spin_until(spinning)
    for bad in (
        JointState(name=["q1"], position=[0.1, 0.2]),  # lengths differ
        JointState(name=["q9"], position=[0.1]),  # unknown joint
        JointState(name=["q1"], velocity=[math.inf]),  # not finite
        JointState(name=["q1"]),  # nothing commanded
    ):
        pub.publish(bad)
    n1 = len(node.msgs["/joint_states"])
    assert node.spin_until(lambda: len(node.msgs["/joint_states"]) > n1 + 20)  # still publishing

    def rejected() -> int:
        for arr in reversed(node.msgs["/diagnostics"]):
            for st in arr.status:
                if st.name.endswith(": commands"):
                    return int({kv.key: kv.value for kv in st.values}["rejected"])
        return 0

    assert node.spin_until(lambda: rejected() >= 4), rejected()
    assert "position entries (0 or one per name); command rejected" in rt.read_log(node.log)  # the first, logged


def test_parameters_set_at_run_time_or_refused(node):
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    def set_(name, value):
        v = (
            ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
            if isinstance(value, float)
            else ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
        )
        req = SetParameters.Request(parameters=[Parameter(name=name, value=v)])
        return node.call(SetParameters, "~/set_parameters", req).results[0]

    ok = set_("servo_kp", 80.0)
    assert ok.successful, ok.reason
    bad = set_("publish_rate", -5.0)
    assert not bad.successful
    ro = set_("integrator", "dop853")
    assert not ro.successful and "read-only" in ro.reason
    ok = set_("publish_rate", 50.0)
    assert ok.successful, ok.reason
    n = len(node.msgs["/joint_states"])
    assert node.spin_until(lambda: len(node.msgs["/joint_states"]) > n + 5)
    stamps = [m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for m in node.msgs["/joint_states"][-4:]]
    assert {b - a for a, b in zip(stamps, stamps[1:])} == {20_000_000}  # 50 Hz cycles from now on


def test_a_misspelled_parameter_fails_start_up_with_a_did_you_mean(tmp_path):
    with rt.Sandbox("badparam") as sandbox:
        cmd = [
            sys.executable,
            "-m",
            "mbsfmu_ros",
            str(MODEL),
            *rt.param_args({"publsh_rate": 50.0}),
            *sandbox.ros_args(),
        ]
        r = subprocess.run(cmd, env=sandbox.env(), capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "publsh_rate = 50.0: unknown parameter (did you mean 'publish_rate'?)" in r.stderr


def test_the_node_follows_an_external_clock(tmp_path):
    """follow_clock: the node steps to each /clock time another publisher sends (a bag replay, a
    co-simulator) and stamps its joint states with it; it publishes no /clock of its own."""
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    with rt.Sandbox("clock") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(horizontal_scara(tmp_path), {"follow_clock": True}, sandbox, log)
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/joint_states", JointState)
            client.subscribe("/clock", Clock)
            pub = client.publisher("/clock", Clock)
            assert client.spin_until(lambda: pub.get_subscription_count() >= 2), client.failure(log)  # node + us
            times = [(0, 30_000_000), (0, 70_000_000), (1, 250_000_000)]
            for sec, nsec in times:
                msg = Clock()
                msg.clock.sec, msg.clock.nanosec = sec, nsec

                def reached(s=sec, n=nsec, msg=msg):
                    pub.publish(msg)  # again until answered: a time already reached is not stepped to twice
                    return any(
                        (m.header.stamp.sec, m.header.stamp.nanosec) == (s, n) for m in client.msgs["/joint_states"]
                    )

                assert client.spin_until(reached), client.failure(log)
            stamps = [(m.header.stamp.sec, m.header.stamp.nanosec) for m in client.msgs["/joint_states"]]
            assert [st for st in stamps if st != (0, 0)] == times  # (0, 0): the initial state, if heard
            node_clock = [m for m in client.msgs["/clock"] if (m.clock.sec, m.clock.nanosec) not in times]
            assert node_clock == []  # the node publishes no /clock of its own
        finally:
            code = rt.stop_node(proc)
            client.close()
    assert code == 0, rt.read_log(log)
