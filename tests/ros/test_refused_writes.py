"""A write the middleware refuses never ends the simulation: the node publishes through
``PublishingMixin.send``, which counts a refused message (rclpy raises a RuntimeError: RCLError when
Fast DDS refuses a write, as with a reliable subscriber that stopped reading; InvalidHandle for a
publisher gone), warns at most once a second and goes on. Here with a real rclpy publisher whose
handle is gone (a refusal made on purpose: a stalled reader's refusal depends on Fast DDS's history
settings and timing), and with a reliable reader frozen while the node runs under its default
(``events``) executor."""

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


# A reliable subscriber in its own process, spinning (so discovered and matched), to be stopped.
READER = """
import sys
import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("stalled_reader")
qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
node.create_subscription(JointState, sys.argv[1], lambda msg: None, qos)
rclpy.spin(node)
"""


def _simulation_values(client) -> dict[str, str]:
    for arr in reversed(client.msgs["/diagnostics"]):
        for s in arr.status:
            if s.name.endswith(": simulation"):
                return {kv.key: kv.value for kv in s.values}
    return {}


@pytest.mark.slow
def test_a_stopped_reliable_reader_does_not_stop_the_node(tmp_path):
    """The node under its default executor (``events``), as fast as possible at 1 kHz, while a
    matched reliable subscriber of /joint_states is frozen (SIGSTOP: it neither reads nor
    acknowledges): the node keeps stepping (5000 more cycles), keeps serving its diagnostics, and
    ends cleanly on SIGINT; any write the middleware refuses meanwhile is counted in
    ``publish_failures``, never raised."""
    import signal
    import subprocess
    import sys

    from diagnostic_msgs.msg import DiagnosticArray

    from tests.support.paths import MODELS

    with rt.Sandbox("stalled") as sandbox:
        log = tmp_path / "node.log"
        params = {"real_time_factor": 0.0, "publish_rate": 1000.0, "physics_step": 1e-3, "diagnostics_rate": 5.0}
        proc = rt.start_node(MODELS / "scara.yaml", params, sandbox, log)
        client = rt.Client(sandbox, proc)
        topic = sandbox.topic("/joint_states")
        reader = subprocess.Popen([sys.executable, "-c", READER, topic], env=sandbox.env())
        try:
            client.subscribe("/diagnostics", DiagnosticArray)
            cycles = lambda: int(_simulation_values(client).get("cycles", -1))  # noqa: E731
            # the reader is discovered (its subscription on the graph) and the node runs
            assert client.spin_until(lambda: client.node.count_subscribers(topic) >= 1 and cycles() > 0)
            reader.send_signal(signal.SIGSTOP)
            k0 = cycles()
            assert client.spin_until(lambda: cycles() >= k0 + 5000), client.failure(log)
            assert proc.poll() is None
        finally:
            reader.send_signal(signal.SIGCONT)
            reader.kill()
            reader.wait(10)
            code = rt.stop_node(proc)
            client.close()
        assert code == 0, rt.read_log(log)
