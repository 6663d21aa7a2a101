"""What the node publishes about frames (over real DDS on loopback): ``frame_prefix`` put before
every frame name (/tf, /tf_static, the stamped outputs' header.frame_id), as robot_state_publisher's
frame_prefix does, so two robots on one /tf keep apart; ``publish_tf: false`` (robot_state_publisher
running) leaves /tf and /tf_static to others; and the order of a cycle's messages (in process)."""

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS
from tests.support.ros_interfaces import interfaces_loaded

pytestmark = pytest.mark.integration

MODEL = MODELS / "scara.yaml"  # bodies link1, link2; frames elbow (on link1), tip (on link2)


def latched_subscription(client, topic: str, msg_type, into: list) -> None:
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
    client.node.create_subscription(msg_type, client.sandbox.topic(topic), into.append, qos)


def test_frame_prefix_on_every_frame_the_node_publishes(tmp_path):
    from geometry_msgs.msg import PointStamped
    from sensor_msgs.msg import JointState

    interfaces_loaded()  # tf2_msgs: no wheel, built by mbsfmu_ros.interface_packages
    from tf2_msgs.msg import TFMessage

    model = mbsfmu.load_model(MODEL)
    with rt.Sandbox("prefix") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(MODEL, {"frame_prefix": "r1/"}, sandbox, log, namespace="/r1")
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/r1/tf", TFMessage)
            client.subscribe("/r1/joint_states", JointState)
            client.subscribe("/r1/mbs/com", PointStamped)
            static: list = []
            latched_subscription(client, "/r1/tf_static", TFMessage, static)
            ok = client.spin_until(lambda: len(client.msgs["/r1/tf"]) >= 3 and static and client.msgs["/r1/mbs/com"])
            assert ok, client.failure(log)
        finally:
            code = rt.stop_node(proc)
            client.close()
    assert code == 0, rt.read_log(log)
    moving = {(t.header.frame_id, t.child_frame_id) for m in client.msgs["/r1/tf"] for t in m.transforms}
    assert moving == {("r1/world", "r1/link1"), ("r1/link1", "r1/link2")}
    fixed = {(t.header.frame_id, t.child_frame_id) for t in static[0].transforms}
    assert fixed == {("r1/link1", "r1/elbow"), ("r1/link2", "r1/tip")}
    assert {m.header.frame_id for m in client.msgs["/r1/joint_states"] + client.msgs["/r1/mbs/com"]} == {"r1/world"}
    assert set(model.body_names) == {"link1", "link2"}


def test_publish_tf_false_leaves_tf_to_robot_state_publisher(tmp_path):
    from sensor_msgs.msg import JointState

    with rt.Sandbox("notf") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(MODEL, {"publish_tf": False}, sandbox, log)
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/joint_states", JointState)
            count = client.node.count_publishers

            def discovered() -> bool:  # the node's endpoints, the last ones it creates among them
                return len(client.msgs["/joint_states"]) >= 3 and count(sandbox.topic("/robot_description")) >= 1

            assert client.spin_until(discovered), client.failure(log)
            tf, tf_static = count(sandbox.topic("/tf")), count(sandbox.topic("/tf_static"))
        finally:
            code = rt.stop_node(proc)
            client.close()
    assert code == 0, rt.read_log(log)
    assert (tf, tf_static) == (0, 0)


def test_clock_and_joint_states_go_out_before_the_invariants_are_computed():
    """publish_state sends /clock and the joint states, then fills momentum, CM, energy and /tf
    and sends them (a lock-step controller works on its state meanwhile); a cycle without the
    invariants (``invariants_decimation``) sends only the first two. A node in this process (its
    own rclpy context and ROS domain), its sends recorded in order."""
    import rclpy
    from rclpy.parameter import Parameter

    from mbsfmu_ros import topics as tp
    from mbsfmu_ros.node import MbsNode, bind_interfaces

    # /tf in this process: built and bound here (an earlier import of the node in this worker may
    # have found the interface packages not built yet)
    assert bind_interfaces(build=True) is None
    with rt.Sandbox("order") as sandbox:
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=sandbox.domain_id)
        try:
            params = [Parameter("lock_step", value=True), Parameter("invariants_decimation", value=2)]
            node = MbsNode(model=str(MODEL), context=context, parameter_overrides=params)
            topic_of = {id(pub): topic for topic, pub in node.pubs.items()}
            events = []
            node.send = lambda pub, msg: events.append(topic_of[id(pub)]) or True
            fill_invariants = node.state_msgs.fill_invariants
            node.state_msgs.fill_invariants = lambda *a: events.append("fill_invariants") or fill_invariants(*a)
            node.cycle()  # k = 1: joint states only
            first, events[:] = list(events), []
            node.cycle()  # k = 2: everything
            node.destroy_node()
        finally:
            rclpy.try_shutdown(context=context)
    assert first == [tp.CLOCK, tp.JOINT_STATES]
    invariants = [tp.CENTROIDAL_MOMENTUM, tp.COM, tp.COM_VELOCITY, tp.ENERGY, tp.TF]
    assert events == [tp.CLOCK, tp.JOINT_STATES, "fill_invariants", *invariants]
