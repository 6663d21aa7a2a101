"""The node's preallocated state messages (``mbsfmu_ros.state_messages``, CDR bytes patched in
place) deserialise, field for field, to the messages built from ``mbsfmu.sim.messages`` contents
(``ros_messages``, ``with_frame_prefix``), and their bytes are rclpy's serialisation of those
(``serialize_message``, the middleware's own encoder) in every byte but alignment padding (which
Fast CDR leaves uninitialised and ours writes as zeros) and the trailing bytes of rmw's size estimate:
refilled over several cycles, with frame ids and prefixes of lengths that move every later member's
alignment padding, with and without the invariants and /clock, for a model with 1-DoF joints
(SCARA), one with a free joint and a wheel (spacecraft) and a random tree of free, spherical and
revolute joints (both with /mbs/multi_dof_joint_states). In process, no DDS."""

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu
from mbsfmu.sim import messages as ms
from mbsfmu.sim.simulator import Simulator
from mbsfmu_ros import conversion as cv
from mbsfmu_ros import ros_messages as rm
from mbsfmu_ros import topics as tp
from mbsfmu_ros.state_messages import StateMessages, TfMessage
from tests.support.paths import MODELS
from tests.support.trees import random_tree


def assert_same_cdr(got: bytes, msg, padding) -> None:
    """got deserialises to msg, and equals rclpy's serialisation of msg but in padding, which is zero."""
    from rclpy.serialization import deserialize_message, serialize_message

    assert deserialize_message(got, type(msg)) == msg
    ref = serialize_message(msg)
    # rmw's buffer is its size estimate, which may reserve alignment it did not use (up to 7 bytes,
    # 12 for a JointState with three empty float64 sequences): bytes after ours, not read back
    assert 0 <= len(ref) - len(got) <= 12
    pad = np.zeros(len(got), dtype=bool)
    pad[list(padding)] = True
    a, b = np.frombuffer(got, np.uint8), np.frombuffer(ref[: len(got)], np.uint8)
    assert np.array_equal(a[~pad], b[~pad]) and not a[pad].any()
    assert pad.sum() < len(got) // 4  # padding only where alignment needs it


def state_model(name: str):
    """A model file, or "tree": a random tree of free, spherical and revolute joints."""
    if name == "tree":
        return random_tree(np.random.default_rng(1), 6, types=("spherical", "revolute"))
    return mbsfmu.load_model(MODELS / name)


@pytest.mark.parametrize("name", ["scara.yaml", "spacecraft.yaml", "tree"])
@pytest.mark.parametrize(("frame_id", "prefix"), [("odom", ""), ("odom", "r1/"), ("w", ""), ("base_link", "x")])
def test_filled_messages_equal_the_built_ones(name, frame_id, prefix):
    # /tf: tf2_msgs, built by mbsfmu_ros.interface_packages (on a fresh machine only now, after
    # ros_messages was imported: bind it now)
    assert rm.bind_interfaces(build=True) is None and rm.TFMessage is not None
    model = state_model(name)
    sim = Simulator(model, h_max=1e-3)
    layout = cv.joint_layout(model)
    state = StateMessages(model, layout, frame_id, prefix, with_tf=True)
    padding = {
        tp.CLOCK: state.clock.padding,
        tp.JOINT_STATES: state.joint_state.padding,
        tp.CENTROIDAL_MOMENTUM: state.momentum.padding,
        tp.COM: state.com.padding,
        tp.COM_VELOCITY: state.com_velocity.padding,
        tp.ENERGY: state.energy.padding,
        tp.TF: state.tf.padding,
    }
    if state.multi is not None:
        padding[tp.MULTI_DOF_JOINT_STATES] = state.multi.padding
    rng = np.random.default_rng(3)
    tf_seen = multi_seen = 0
    for k in range(6):
        sim.u = rng.uniform(-1.0, 1.0, len(sim.input_names))
        sim.advance_to(sim.t + 0.01)
        ns = cv.time_to_ns(sim.t) + 7 * cv.NS  # a stamp with seconds and nanoseconds
        invariants, with_clock = k % 2 == 0, k % 3 != 0
        contents = ms.state_messages(sim, layout, ns, frame_id, invariants=invariants, with_tf=True)
        if not with_clock:
            contents.pop(tp.CLOCK)
        expected = rm.ros_messages(cv.with_frame_prefix(contents, prefix))
        got = state.fill(sim, ns, invariants=invariants, with_clock=with_clock)
        assert list(got) == list(expected)
        for topic, msg in expected.items():
            assert_same_cdr(got[topic], msg, padding[topic])
        tf_seen += tp.TF in expected and len(expected[tp.TF].transforms) == model.N
        multi_seen += tp.MULTI_DOF_JOINT_STATES in expected
    assert tf_seen == 3  # cycles 0, 2, 4: every body's transform compared
    assert multi_seen == (6 if layout.multi_names else 0)


def test_a_worlds_tf_of_several_robots_equals_the_built_one():
    """A world's one /tf (``TfMessage`` of several models, each with its frame prefix, as
    world_node.py publishes it): the transforms of every robot, in order, as built from
    ``mbsfmu.sim.messages`` with ``with_frame_prefix``."""
    assert rm.bind_interfaces(build=True) is None and rm.TFMessage is not None
    parts, sims = [], []
    for name, prefix in (("scara.yaml", "a/"), ("spacecraft.yaml", "b/"), ("scara.yaml", "c/")):
        model = mbsfmu.load_model(MODELS / name)
        parts.append((model, "odom", prefix))
        sims.append(Simulator(model, h_max=1e-3))
    tf = TfMessage(parts)
    rng = np.random.default_rng(5)
    for _ in range(3):
        transforms = []
        for sim in sims:
            sim.u = rng.uniform(-1.0, 1.0, len(sim.input_names))
            sim.advance_to(sim.t + 0.01)
        ns = cv.time_to_ns(sims[0].t) + 3 * cv.NS
        for (model, frame_id, prefix), sim in zip(parts, sims):
            contents = ms.state_messages(sim, cv.joint_layout(model), ns, frame_id, invariants=True, with_tf=True)
            transforms += cv.with_frame_prefix(contents, prefix)[tp.TF]["transforms"]
        expected = rm.BUILDERS[tp.TF]({"transforms": transforms})
        assert len(expected.transforms) == sum(m.N for m, _f, _p in parts)
        assert_same_cdr(tf.fill(sims, *ms.ns_to_stamp(ns)), expected, tf.padding)
