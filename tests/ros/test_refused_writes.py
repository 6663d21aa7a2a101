"""A write the middleware refuses never ends the simulation: the node publishes through
``PublishingMixin.send``, which counts a refused message (rclpy raises a RuntimeError: RCLError when
Fast DDS refuses a write, as with a reliable subscriber that stopped reading; InvalidHandle for a
publisher gone), warns at most once a second and goes on. Here with a real rclpy publisher whose
handle is gone (a refusal made on purpose: a stalled reader's refusal depends on Fast DDS's history
settings and timing)."""

import types

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from mbsfmu_ros.publishing import PublishingMixin
from tests.support import ros_sandbox as rt

pytestmark = pytest.mark.integration


def test_a_refused_write_is_counted_and_warned_not_raised():
    import rclpy
    from std_msgs.msg import Float64

    with rt.Sandbox("refused") as sandbox:
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=sandbox.domain_id)
        try:
            node = rclpy.create_node("refused_writer", context=context)
            pub = node.create_publisher(Float64, sandbox.topic("/x"), 10)
            warnings = []
            owner = types.SimpleNamespace(publish_failures=0, warn_throttled=lambda kind, text: warnings.append(text))
            assert PublishingMixin.send(owner, pub, Float64(data=1.0)) is True
            node.destroy_publisher(pub)
            assert PublishingMixin.send(owner, pub, Float64(data=2.0)) is False
            assert PublishingMixin.send(owner, pub, Float64(data=3.0)) is False
            assert owner.publish_failures == 2
            assert len(warnings) == 2 and "a message was not sent" in warnings[-1] and "2 so far" in warnings[-1]
            node.destroy_node()
        finally:
            rclpy.try_shutdown(context=context)
