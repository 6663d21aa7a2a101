"""The node's preallocated state messages (``mbsfmu_ros.state_messages``) equal, field for field,
the messages built from ``mbsfmu.sim.messages`` contents (``ros_messages``, ``with_frame_prefix``):
refilled over several cycles, with a frame prefix, with and without the invariants and /clock, for
a model with 1-DoF joints (SCARA) and one with a free joint and a wheel (spacecraft). In process,
no DDS."""

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu
from mbsfmu.sim import messages as ms
from mbsfmu.sim.simulator import Simulator
from mbsfmu_ros import conversion as cv
from mbsfmu_ros import ros_messages as rm
from mbsfmu_ros import topics as tp
from mbsfmu_ros.state_messages import StateMessages
from tests.support.paths import MODELS


@pytest.mark.parametrize("name", ["scara.yaml", "spacecraft.yaml"])
@pytest.mark.parametrize("prefix", ["", "r1/"])
def test_filled_messages_equal_the_built_ones(name, prefix):
    # /tf: tf2_msgs, built by mbsfmu_ros.interface_packages (on a fresh machine only now, after
    # ros_messages was imported: bind it now)
    assert rm.bind_interfaces(build=True) is None and rm.TFMessage is not None
    model = mbsfmu.load_model(MODELS / name)
    sim = Simulator(model, h_max=1e-3)
    layout = cv.joint_layout(model)
    state = StateMessages(model, layout, "odom", prefix, with_tf=True)
    rng = np.random.default_rng(3)
    tf_seen = 0
    for k in range(6):
        sim.u = rng.uniform(-1.0, 1.0, len(sim.input_names))
        sim.advance_to(sim.t + 0.01)
        ns = cv.time_to_ns(sim.t) + 7 * cv.NS  # a stamp with seconds and nanoseconds
        invariants, with_clock = k % 2 == 0, k % 3 != 0
        contents = ms.state_messages(sim, layout, ns, "odom", invariants=invariants, with_tf=True)
        if not with_clock:
            contents.pop(tp.CLOCK)
        expected = rm.ros_messages(cv.with_frame_prefix(contents, prefix))
        got = state.fill(sim, ns, invariants=invariants, with_clock=with_clock)
        assert list(got) == list(expected)
        for topic, msg in expected.items():
            assert got[topic] == msg, topic
        tf_seen += tp.TF in expected and len(expected[tp.TF].transforms) == model.N
    assert tf_seen == 3  # cycles 0, 2, 4: every body's transform compared
