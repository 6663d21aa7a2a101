"""What RViz and TF need from the node (over real DDS on loopback): robot_description (reliable,
transient local: a late subscriber still gets it) holding the model's URDF: the file itself for a
URDF model, the export for a YAML model."""

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu
from mbsfmu.io.urdf_export import export_urdf
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    "model, expected",
    [
        (MODELS / "urdf_quadruped_overlay.yaml", lambda: (MODELS / "urdf_quadruped.urdf").read_text()),
        (MODELS / "scara.yaml", lambda: export_urdf(mbsfmu.load_model(MODELS / "scara.yaml")).text),
    ],
    ids=["urdf-overlay", "yaml"],
)
def test_robot_description_reaches_a_late_subscriber(tmp_path, model, expected):
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState
    from std_msgs.msg import String

    with rt.Sandbox("description") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(model, {"real_time_factor": 1.0}, sandbox, log)
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/joint_states", JointState)
            assert client.spin_until(lambda: len(client.msgs["/joint_states"]) >= 3), client.failure(log)
            got = []  # subscribed only now, after the node published it
            latched = QoSProfile(
                depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
            )
            client.node.create_subscription(String, sandbox.topic("/robot_description"), got.append, latched)
            assert client.spin_until(lambda: got), client.failure(log)
            assert got[0].data == expected()
        finally:
            code = rt.stop_node(proc)
            client.close()
    assert code == 0, rt.read_log(log)


def test_a_loop_model_runs_without_robot_description(tmp_path):
    """A model with closed loops has no URDF (one tree): the node runs it, says why there is no
    robot_description, and publishes its joint states and loop-closure diagnostics (it refused to
    start before)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    with rt.Sandbox("description-loop") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(MODELS / "fourbar.yaml", {"real_time_factor": 0.0, "diagnostics_rate": 10.0}, sandbox, log)
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/joint_states", JointState)
            client.subscribe("/diagnostics", DiagnosticArray)

            def running() -> bool:
                loop = [s for m in client.msgs["/diagnostics"] for s in m.status if s.name.endswith(": constraints")]
                return len(client.msgs["/joint_states"]) >= 3 and bool(loop)

            assert client.spin_until(running), client.failure(log)
        finally:
            code = rt.stop_node(proc)
            client.close()
    assert code == 0, rt.read_log(log)
    assert "no robot_description" in rt.read_log(log) and "closed loops" in rt.read_log(log)
