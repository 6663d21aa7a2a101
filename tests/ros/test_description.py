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
