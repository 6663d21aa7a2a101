"""Two nodes in two namespaces on one ROS domain (over real DDS on loopback): each one's topics and
services live under its namespace, so two robots share a graph; /clock stays global."""

import re

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu
from mbsfmu_ros import conversion as cv
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS

pytestmark = pytest.mark.integration

ROBOTS = {"/robot1": MODELS / "scara.yaml", "/robot2": MODELS / "compound_pendulum.yaml"}


def response_time_ns(message: str) -> int:
    """Sim time [ns] in a service response ("paused at t = 1.230000000 s"), exactly."""
    sec, frac = re.search(r"t = (\d+)\.(\d{9}) s", message).groups()
    return int(sec) * cv.NS + int(frac)


def test_two_robots_in_two_namespaces_share_a_domain(tmp_path):
    from sensor_msgs.msg import JointState
    from std_srvs.srv import SetBool

    params = {"publish_rate": 100.0, "real_time_factor": 1.0}
    with rt.Sandbox("ns") as sandbox:
        procs = {
            ns: rt.start_node(model, params, sandbox, tmp_path / f"{ns[1:]}.log", namespace=ns)
            for ns, model in ROBOTS.items()
        }
        client = rt.Client(sandbox, procs["/robot1"])
        try:
            for ns in ROBOTS:
                client.subscribe(f"{ns}/joint_states", JointState)
            client.subscribe("/joint_states", JointState)  # the root namespace: nobody publishes there
            ok = client.spin_until(lambda: all(len(client.msgs[f"{ns}/joint_states"]) >= 5 for ns in ROBOTS))
            assert ok, [rt.read_log(tmp_path / f"{ns[1:]}.log") for ns in ROBOTS]
            for ns, model in ROBOTS.items():
                names = {tuple(m.name) for m in client.msgs[f"{ns}/joint_states"]}
                assert names == {mbsfmu.load_model(model).joint_names}, ns
            assert client.msgs["/joint_states"] == []
            # the private services move with the namespace too: pause robot1 only
            response = client.call(SetBool, f"/robot1/{sandbox.node_name}/pause", SetBool.Request(data=True))
            assert response.success, response.message
            paused_ns = response_time_ns(response.message)
            n2 = len(client.msgs["/robot2/joint_states"])
            assert client.spin_until(lambda: len(client.msgs["/robot2/joint_states"]) >= n2 + 10)  # robot2 runs on
            last = max(
                cv.stamp_to_ns(m.header.stamp.sec, m.header.stamp.nanosec) for m in client.msgs["/robot1/joint_states"]
            )
            assert last <= paused_ns  # robot1 published nothing after its pause
        finally:
            client.close()
            codes = [rt.stop_node(p) for p in procs.values()]
    assert codes == [0, 0], [rt.read_log(tmp_path / f"{ns[1:]}.log") for ns in ROBOTS]
