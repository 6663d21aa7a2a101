"""The free-floating spacecraft (MBS Momentum/Energy Testing) over real DDS: joint states (the free base
in /mbs/multi_dof_joint_states), momentum
diagnostics OK while nothing external acts, and a thruster command (thr1.thrust) makes the
momentum diagnostics leave OK while the energy balance (thrust work counted) stays OK."""

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu
from mbsfmu.sim.simulator import Simulator
from mbsfmu_ros import conversion as cv
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS

pytestmark = pytest.mark.integration

MODEL = MODELS / "spacecraft.yaml"
PARAMS = {
    "publish_rate": 20.0,
    "physics_step": 1e-2,
    "real_time_factor": 0.0,
    "diagnostics_rate": 4.0,
    "command_timeout": 0.5,
}
CHECKS = ("H_sys_constant", "P_sys_constant", "p_sys_zero", "energy_balance", "engine_agreement")


@pytest.fixture(scope="module")
def ros(tmp_path_factory):
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState, MultiDOFJointState

    sandbox = rt.Sandbox("spacecraft")
    log = tmp_path_factory.mktemp("ros") / "node.log"
    proc = rt.start_node(MODEL, PARAMS, sandbox, log)
    client = rt.Client(sandbox, proc)
    client.subscribe("/diagnostics", DiagnosticArray)
    client.subscribe("/joint_states", JointState, depth=100)
    client.subscribe("/mbs/multi_dof_joint_states", MultiDOFJointState, depth=100)
    client.subscribe("/mbs/centroidal_momentum", WrenchStamped, depth=100)
    if not client.spin_until(lambda: len(client.msgs["/diagnostics"]) >= 3):
        why = client.failure(log)
        rt.stop_node(proc)
        client.close()
        sandbox.close()
        pytest.fail(f"no diagnostics within {rt.PATIENCE:g} s; {why}")
    client.proc, client.log = proc, log
    yield client
    code = rt.stop_node(proc)
    client.close()
    sandbox.close()
    assert code == 0, rt.read_log(log)


def statuses(arr):
    return {s.name.split(": ", 1)[1]: s for s in arr.status}


def test_free_spacecraft_diagnostics_ok(ros):
    for arr in ros.msgs["/diagnostics"][-3:]:
        st = statuses(arr)
        assert set(CHECKS) <= set(st)
        for name in CHECKS:
            assert st[name].level == b"\x00", (name, st[name].message)
    js = ros.msgs["/joint_states"][-1]
    assert list(js.name) == ["hinge_l", "hinge_r", "rw1", "rw2", "rw3", "rw4"]
    assert np.all(np.isfinite(js.position)) and np.all(np.isfinite(js.velocity)) and np.all(np.isfinite(js.effort))
    mj = ros.msgs["/mbs/multi_dof_joint_states"][-1]
    assert list(mj.joint_names) == ["base"] and len(mj.transforms) == len(mj.twist) == len(mj.wrench) == 1
    r = mj.transforms[0].rotation
    assert abs(np.linalg.norm([r.w, r.x, r.y, r.z]) - 1.0) < 1e-12  # the base quaternion


def test_published_H_sys_is_the_engines_for_the_published_state(ros):
    model = mbsfmu.load_model(MODEL)
    lay = cv.joint_layout(model)
    sim = Simulator(model)
    mom = {
        cv.stamp_to_ns(m.header.stamp.sec, m.header.stamp.nanosec): m.wrench
        for m in ros.msgs["/mbs/centroidal_momentum"]
    }
    multi = {
        cv.stamp_to_ns(m.header.stamp.sec, m.header.stamp.nanosec): m for m in ros.msgs["/mbs/multi_dof_joint_states"]
    }
    n = 0
    for js in ros.msgs["/joint_states"]:
        t = cv.stamp_to_ns(js.header.stamp.sec, js.header.stamp.nanosec)
        w = mom.get(t)
        if w is None or t not in multi:
            continue
        sim.set_configuration(*cv.state_from_joint_state(lay, js.name, js.position, js.velocity, multi[t]))
        inv = sim.invariants()
        np.testing.assert_allclose([w.torque.x, w.torque.y, w.torque.z], inv.H_sys, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose([w.force.x, w.force.y, w.force.z], inv.P_sys, rtol=1e-12, atol=1e-12)
        n += 1
    assert n >= 10


def test_thruster_command_makes_momentum_diagnostics_leave_ok(ros):
    from std_msgs.msg import Float64MultiArray

    pub = ros.publisher("/mbs/effort_commands", Float64MultiArray)
    assert ros.spin_until(lambda: pub.get_subscription_count() > 0)
    pub.publish(Float64MultiArray(data=[0.0, 0.0, 0.0, 0.0, 5.0]))  # rw1..rw4 torque, thr1.thrust [N]
    d0 = len(ros.msgs["/diagnostics"])

    def left_ok():
        return any(
            statuses(a)["H_sys_constant"].level != b"\x00" and statuses(a)["P_sys_constant"].level != b"\x00"
            for a in ros.msgs["/diagnostics"][d0:]
        )

    assert ros.spin_until(left_ok)
    assert ros.spin_until(lambda: len(ros.msgs["/diagnostics"]) > d0 + 3)
    st = statuses(ros.msgs["/diagnostics"][-1])
    assert st["P_sys_constant"].level == b"\x02" and "external force" in st["P_sys_constant"].message
    for name in ("energy_balance", "p_sys_zero", "engine_agreement"):
        assert st[name].level == b"\x00", (name, st[name].message)
    assert ros.proc.poll() is None
