"""The floor of a lock-step round trip (``bench_ros.py --lock-step``, the ``_echo`` variants): a
ROS 2 process that answers each /mbs/effort_commands message at once with the node's /clock and
/joint_states bytes for the same model (``state_messages.py``, the stamps advanced by one period),
computing nothing: no engine step, no invariants, /tf or diagnostics. The same client, middleware,
QoS (reliable, depth 10) and executor (rclpy's EventsExecutor, the node's default) as the node, so
node / echo in one run is what the node's own work costs a round trip. Not a test, not shipped.

    python benchmarks/ros_echo.py MODEL [--period 0.001] --ros-args -r ... (the sandbox's rules)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import rclpy  # noqa: E402
from rclpy.experimental import EventsExecutor  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray  # noqa: E402

import mbsfmu  # noqa: E402
from mbsfmu.sim.simulator import Simulator  # noqa: E402
from mbsfmu_ros import conversion as cv  # noqa: E402
from mbsfmu_ros import topics as tp  # noqa: E402
from mbsfmu_ros.state_messages import StateMessages  # noqa: E402


def main() -> int:
    argv = rclpy.utilities.remove_ros_args(sys.argv)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--period", type=float, default=1e-3, help="stamp step per answer [s]")
    args = ap.parse_args(argv[1:])
    model = mbsfmu.load_model(args.model)
    sim = Simulator(model, h_max=args.period)
    state = StateMessages(model, cv.joint_layout(model), "world", "", with_tf=False)
    step_ns = round(args.period * 1e9)
    rclpy.init(args=sys.argv)
    node = rclpy.create_node("mbs_echo", start_parameter_services=False)
    qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
    pub_clock = node.create_publisher(Clock, tp.ros_name(tp.CLOCK), qos)
    pub_js = node.create_publisher(JointState, tp.ros_name(tp.JOINT_STATES), qos)
    k = [0]

    def answer(_msg=None) -> None:
        k[0] += 1
        out = state.fill_joint_states(sim, k[0] * step_ns, with_clock=True)
        pub_clock.publish(out[tp.CLOCK])
        pub_js.publish(out[tp.JOINT_STATES])

    node.create_subscription(Float64MultiArray, tp.ros_name(tp.EFFORT_COMMANDS), answer, qos)
    executor = EventsExecutor()
    executor.add_node(node)
    subscribers = 0
    try:
        while rclpy.ok():
            n = pub_js.get_subscription_count()
            if n > subscribers:
                answer()  # the first state for a new client, as the node's lock-step loop does
            subscribers = n
            executor.spin_once(timeout_sec=0.05)
    except KeyboardInterrupt:
        pass
    finally:
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
