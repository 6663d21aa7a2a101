"""The ROS 2 node over real DDS on loopback (SCARA, wall-clock paced): one node process for the
module on its own ROS domain, and a client rclpy context in this process. Every output topic's
type, names, stamps and values (recomputed with mbsfmu from the published joint states), name-keyed
commands and their timeout, bad input, and the services."""
import math

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu  # noqa: E402
from conftest import MODELS  # noqa: E402
from mbsfmu.simulator import Simulator  # noqa: E402
from ros_node import conversion as cv  # noqa: E402
from ros_node import testing as rt  # noqa: E402

pytestmark = pytest.mark.integration

MODEL = MODELS / "scara.yaml"
PARAMS = {"publish_rate": 100.0, "physics_step": 1e-3, "real_time_factor": 1.0, "command_timeout": 0.3,
          "diagnostics_rate": 4.0}
START_TIMEOUT = 30.0


@pytest.fixture(scope="module")
def ros(tmp_path_factory):
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import PointStamped, Vector3Stamped, WrenchStamped
    from rcl_interfaces.msg import Log
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64, Float64MultiArray
    domain = rt.free_domain_id("test_ros_node")
    log = tmp_path_factory.mktemp("ros") / "node.log"
    proc = rt.start_node(MODEL, PARAMS, domain, log)
    client = rt.Client(domain)
    for topic, typ in (("/clock", Clock), ("/joint_states", JointState), ("/mbs/centroidal_momentum", WrenchStamped),
                       ("/mbs/com", PointStamped), ("/mbs/com_velocity", Vector3Stamped), ("/mbs/energy", Float64MultiArray),
                       ("/diagnostics", DiagnosticArray), ("/mbs/real_time_factor", Float64), ("/rosout", Log)):
        client.subscribe(topic, typ, depth=5000)
    ok = client.spin_until(lambda: len(client.msgs["/diagnostics"]) >= 2 and len(client.msgs["/joint_states"]) >= 20,
                           START_TIMEOUT)
    if not ok:
        rt.stop_node(proc)
        client.close()
        pytest.fail(f"node sent nothing within {START_TIMEOUT} s; its log:\n{rt.read_log(log)}")
    client.proc, client.log = proc, log
    yield client
    code = rt.stop_node(proc)
    client.close()
    assert code == 0, rt.read_log(log)


def diag(ros, name, since=0):
    """Latest DiagnosticStatus named 'mbsfmu: <name>' among /diagnostics messages[since:]."""
    for arr in reversed(ros.msgs["/diagnostics"][since:]):
        for s in arr.status:
            if s.name == f"mbsfmu: {name}":
                return s
    return None


def ns(stamp):
    return cv.stamp_to_ns(stamp.sec, stamp.nanosec)


def warnings_from_node(ros, since=0):
    return [m.msg for m in ros.msgs["/rosout"][since:] if m.name == "mbsfmu" and m.level >= 30]


def test_topics_types_names_and_frame(ros):
    js = ros.msgs["/joint_states"][-1]
    assert list(js.name) == ["q1", "q2"] and len(js.position) == len(js.velocity) == len(js.effort) == 2
    assert js.header.frame_id == "world"
    for topic in ("/mbs/centroidal_momentum", "/mbs/com", "/mbs/com_velocity"):
        assert ros.msgs[topic][-1].header.frame_id == "world", topic
    en = ros.msgs["/mbs/energy"][-1]
    assert en.layout.dim[0].label == "KE,PE,E,W_in,W_diss" and en.layout.dim[0].size == 5 and len(en.data) == 5
    names = {s.name for s in ros.msgs["/diagnostics"][-1].status}
    assert names == {f"mbsfmu: {n}" for n in ("p_sys_zero", "energy_balance", "engine_agreement", "real_time",
                                               "commands", "simulation")}
    assert all(s.hardware_id == "scara" for s in ros.msgs["/diagnostics"][-1].status)
    rtf = [m.data for m in ros.msgs["/mbs/real_time_factor"]]
    assert rtf and all(r > 0 for r in rtf)


def test_stamps_clock_and_period(ros):
    """/clock and every stamp on the publish grid (10 ms), strictly increasing; the same stamps on
    all state topics."""
    clock = [ns(m.clock) for m in ros.msgs["/clock"]]
    assert all(b > a for a, b in zip(clock, clock[1:]))
    assert all(c % 10_000_000 == 0 for c in clock)
    js = {ns(m.header.stamp) for m in ros.msgs["/joint_states"]}
    assert js <= set(clock) | {0}
    mom = {ns(m.header.stamp) for m in ros.msgs["/mbs/centroidal_momentum"]}
    assert len(mom & js) >= 10


def test_momentum_and_com_equal_the_engine_for_the_published_state(ros):
    """The client rebuilds (q, qd) from each JointState and recomputes with mbsfmu: P_sys, H_sys,
    R, Rdot agree with the published values to 1e-12."""
    model = mbsfmu.load_model(MODEL)
    lay = cv.joint_layout(model)
    sim = Simulator(model)
    by = {t: {ns(m.header.stamp): m for m in ros.msgs[t]} for t in
          ("/mbs/centroidal_momentum", "/mbs/com", "/mbs/com_velocity")}
    n_checked, worst = 0, 0.0
    for js in ros.msgs["/joint_states"]:
        t = ns(js.header.stamp)
        if t not in by["/mbs/centroidal_momentum"]:
            continue
        q, qd = cv.state_from_joint_state(lay, js.name, js.position, js.velocity)
        sim.set_configuration(q, qd)
        inv = sim.invariants()
        w = by["/mbs/centroidal_momentum"][t].wrench
        c = by["/mbs/com"][t].point
        v = by["/mbs/com_velocity"][t].vector
        got = np.array([w.force.x, w.force.y, w.force.z, w.torque.x, w.torque.y, w.torque.z, c.x, c.y, c.z,
                        v.x, v.y, v.z])
        want = np.concatenate((inv.P_sys, inv.H_sys, inv.R, inv.Rdot))
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
        worst = max(worst, float(np.max(np.abs(got - want))))
        n_checked += 1
    assert n_checked >= 10
    print(f"momentum/CM agreement over {n_checked} states: max |diff| {worst:.3g}")


def test_energy_matches_joint_states_pairwise(ros):
    """Each /mbs/energy message (no header) equals the engine's KE, PE, E for the joint state of
    its cycle, matched by the exact value of KE; W_in = W_diss = 0 without commands or dampers."""
    model = mbsfmu.load_model(MODEL)
    lay = cv.joint_layout(model)
    sim = Simulator(model)
    KE = {}
    for js in ros.msgs["/joint_states"]:
        q, qd = cv.state_from_joint_state(lay, js.name, js.position, js.velocity)
        sim.set_configuration(q, qd)
        inv = sim.invariants()
        KE[inv.KE] = (inv.PE, inv.E)
    matched = [e for e in ros.msgs["/mbs/energy"] if e.data[0] in KE]
    assert len(matched) >= 10
    for e in matched:
        PE, E = KE[e.data[0]]
        np.testing.assert_allclose([e.data[1], e.data[2]], [PE, E], rtol=1e-12, atol=1e-12)
        assert e.data[3] == 0.0 and e.data[4] == 0.0


def test_diagnostics_ok_for_the_free_swing(ros):
    for name in ("p_sys_zero", "energy_balance", "engine_agreement", "commands", "simulation"):
        s = diag(ros, name)
        assert s.level == b"\x00", (name, s.message)
    eb = {kv.key: kv.value for kv in diag(ros, "energy_balance").values}
    assert float(eb["max_rel"]) < 1e-8 and eb["warn"] == "1e-08"
    rt_status = {kv.key: kv.value for kv in diag(ros, "real_time").values}
    assert {"overruns", "lateness_p99", "work_p50", "real_time_factor"} <= set(rt_status)


def test_joint_commands_by_name_then_timeout(ros):
    """A name-keyed effort command appears as the JointState effort; with no further command
    the inputs drop to zero after command_timeout (0.3 s) and the commands diagnostic warns."""
    from sensor_msgs.msg import JointState
    pub = ros.publisher("/mbs/joint_commands", JointState)
    assert ros.spin_until(lambda: pub.get_subscription_count() > 0, 10)
    n0 = len(ros.msgs["/joint_states"])
    cmd = JointState(name=["q2"], effort=[1.25])
    pub.publish(cmd)
    assert ros.spin_until(lambda: any(m.effort[1] == 1.25 for m in ros.msgs["/joint_states"][n0:]), 5)
    k = next(i for i, m in enumerate(ros.msgs["/joint_states"][n0:]) if m.effort[1] == 1.25) + n0
    assert ros.msgs["/joint_states"][k].effort[0] == 0.0
    assert ros.spin_until(lambda: ros.msgs["/joint_states"][-1].effort[1] == 0.0, 5)
    d0 = len(ros.msgs["/diagnostics"])
    assert ros.spin_until(lambda: len(ros.msgs["/diagnostics"]) > d0, 3)
    s = diag(ros, "commands", d0)
    assert s.level == b"\x01" and "inputs set to zero" in s.message, s.message
    applied = [m for m in ros.msgs["/joint_states"][k:] if m.effort[1] == 1.25]
    span = (ns(applied[-1].header.stamp) - ns(applied[0].header.stamp)) / 1e9
    assert 0.25 <= span <= 0.35, span          # command_timeout 0.3 s of sim time
    assert any("inputs set to zero" in w for w in warnings_from_node(ros))


@pytest.mark.parametrize("kind", ["wrong_length", "nan", "unknown_joint", "stale", "length_mismatch"])
def test_bad_input_rejected_with_warning_node_keeps_publishing(ros, kind):
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    eff = ros.publisher("/mbs/effort_commands", Float64MultiArray)
    jc = ros.publisher("/mbs/joint_commands", JointState)
    assert ros.spin_until(lambda: eff.get_subscription_count() > 0 and jc.get_subscription_count() > 0, 10)
    r0, j0 = len(ros.msgs["/rosout"]), len(ros.msgs["/joint_states"])
    ros.spin_for(1.1)                      # the node logs at most one warning per kind per second
    expect = {"wrong_length": "effort command has 3 entries, the model has 2 inputs: q1.tau, q2.tau",
              "nan": "non-finite value(s) q2.tau = nan",
              "unknown_joint": "unknown joint(s) 'elbow'",
              "stale": "stale joint command",
              "length_mismatch": "2 names but 1 efforts"}[kind]
    if kind == "wrong_length":
        eff.publish(Float64MultiArray(data=[1.0, 2.0, 3.0]))
    elif kind == "nan":
        eff.publish(Float64MultiArray(data=[1.0, math.nan]))
    elif kind == "unknown_joint":
        jc.publish(JointState(name=["q1", "elbow"], effort=[1.0, 2.0]))
    elif kind == "stale":
        now = ros.msgs["/clock"][-1].clock
        old = JointState(name=["q1"], effort=[3.0])
        old.header.stamp.sec = max(0, now.sec - 2)
        old.header.stamp.nanosec = 1
        jc.publish(old)
    else:
        jc.publish(JointState(name=["q1", "q2"], effort=[1.0]))
    assert ros.spin_until(lambda: any(expect in w for w in warnings_from_node(ros, r0)), 5), \
        (kind, warnings_from_node(ros, r0))
    n = len(ros.msgs["/joint_states"])
    assert ros.spin_until(lambda: len(ros.msgs["/joint_states"]) >= n + 10, 5)
    assert ros.proc.poll() is None
    assert all(m.effort[0] == 0.0 and m.effort[1] == 0.0 for m in ros.msgs["/joint_states"][j0:]), \
        "a rejected command changed the inputs"
    d0 = len(ros.msgs["/diagnostics"])
    assert ros.spin_until(lambda: len(ros.msgs["/diagnostics"]) > d0, 3)
    s = diag(ros, "commands", d0)
    assert s.level == b"\x01" and "command rejected" in s.message


def test_pause_step_resume_and_reset(ros):
    """~/pause stops sim time, ~/step advances exactly one cycle, ~/reset restarts the episode
    from the initial state while /clock keeps increasing."""
    from std_srvs.srv import SetBool, Trigger
    r = ros.call(SetBool, "/mbsfmu/pause", SetBool.Request(data=True))
    assert r is not None and r.success and r.message.startswith("paused")
    ros.spin_for(0.3)
    t_paused = ns(ros.msgs["/clock"][-1].clock)
    ros.spin_for(0.4)
    assert ns(ros.msgs["/clock"][-1].clock) == t_paused
    r = ros.call(Trigger, "/mbsfmu/step", Trigger.Request())
    assert r.success
    assert ros.spin_until(lambda: ns(ros.msgs["/clock"][-1].clock) == t_paused + 10_000_000, 3)
    r = ros.call(SetBool, "/mbsfmu/pause", SetBool.Request(data=False))
    assert r.success and r.message.startswith("running")
    assert ros.spin_until(lambda: ns(ros.msgs["/clock"][-1].clock) > t_paused + 100_000_000, 5)
    c0, j0, d0 = len(ros.msgs["/clock"]), len(ros.msgs["/joint_states"]), len(ros.msgs["/diagnostics"])
    t_before = ns(ros.msgs["/clock"][-1].clock)
    r = ros.call(Trigger, "/mbsfmu/reset", Trigger.Request())
    assert r.success and "sim time keeps increasing" in r.message
    assert ros.spin_until(lambda: len(ros.msgs["/joint_states"]) > j0 + 5 and len(ros.msgs["/diagnostics"]) > d0 + 1, 5)
    first = next(m for m in ros.msgs["/joint_states"][j0:] if list(m.position) == [0.3, -0.5])   # initial state
    assert ns(first.header.stamp) > t_before
    clock = [ns(m.clock) for m in ros.msgs["/clock"]]
    assert all(b > a for a, b in zip(clock, clock[1:])), "clock went backwards"
    s = diag(ros, "simulation", d0)
    assert "reset 1 time(s)" in s.message and s.level == b"\x00"
    assert any("reset 1" in m.msg for m in ros.msgs["/rosout"] if m.name == "mbsfmu")
    assert c0 < len(ros.msgs["/clock"])
