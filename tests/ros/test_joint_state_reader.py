"""``mbsfmu_ros.joint_state_reader``: what it reads from a JointState's CDR bytes equals rclpy's
own deserialisation of them (``deserialize_message``, the middleware's decoder), for the bytes
rclpy serialises (names of every length modulo 4 and 8, empty sequences, non-ASCII names, a
velocity or effort left empty as a publisher may) and for the node's own /joint_states bytes;
names that change between messages are read again; bytes that are not a JointState are a
ValueError naming the byte, never a read past the end. In process, no DDS."""

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

import mbsfmu
from mbsfmu.sim.simulator import Simulator
from mbsfmu_ros import conversion as cv
from mbsfmu_ros import topics as tp
from mbsfmu_ros.joint_state_reader import JointStateReader
from mbsfmu_ros.state_messages import StateMessages
from tests.support.paths import MODELS


def joint_state(names, values, frame="base", stamp=(1_234_567, 890_123_456)):
    from sensor_msgs.msg import JointState

    msg = JointState(name=list(names), position=list(values[0]), velocity=list(values[1]), effort=list(values[2]))
    msg.header.frame_id = frame
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp
    return msg


def assert_reads_as_rclpy(reader, data):
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState

    want = deserialize_message(data, JointState)
    got = reader.read(data)
    assert (got.sec, got.nanosec) == (want.header.stamp.sec, want.header.stamp.nanosec)
    assert got.frame_id == want.header.frame_id
    assert got.name == tuple(want.name)
    for field in ("position", "velocity", "effort"):  # bit for bit: the same float64 bytes
        assert np.asarray(getattr(got, field)).tobytes() == np.asarray(getattr(want, field), dtype=float).tobytes()
    return got


@pytest.mark.parametrize("n", [0, 1, 2, 3, 29])
@pytest.mark.parametrize("frame", ["", "a", "abc", "abcd", "abcdefg"])
def test_reads_what_rclpy_serialises(n, frame):
    from rclpy.serialization import serialize_message

    rng = np.random.default_rng(n + 7 * len(frame))
    names = [frame[: k % 5] + "j" * (k % 9) + str(k) for k in range(n)]  # every length modulo 4 and 8
    values = rng.normal(size=(3, n))
    values[0, : min(n, 1)] = -0.0  # signs and the extremes survive unchanged
    values[1, : min(n, 1)] = np.finfo(float).max
    assert_reads_as_rclpy(JointStateReader(), serialize_message(joint_state(names, values, frame)))


@pytest.mark.parametrize("empty", [(1,), (2,), (1, 2), (0, 1, 2)])
def test_empty_sequences_as_a_publisher_may_leave_them(empty):
    from rclpy.serialization import serialize_message

    values = [np.arange(4.0) + k for k in range(3)]
    for k in empty:
        values[k] = np.empty(0)
    got = assert_reads_as_rclpy(JointStateReader(), serialize_message(joint_state("abcd", values)))
    assert all(len(getattr(got, f)) == 0 for f, k in zip(("position", "velocity", "effort"), range(3)) if k in empty)
    assert not any(getattr(got, f).flags.writeable for f in ("position", "velocity", "effort"))  # views, read-only


def test_non_ascii_names_and_frame():
    from rclpy.serialization import serialize_message

    values = np.ones((3, 2))
    data = serialize_message(joint_state(["épaule", "手首"], values, frame="bâti"))
    assert assert_reads_as_rclpy(JointStateReader(), data).name == ("épaule", "手首")


def test_names_read_again_when_their_bytes_change():
    """One reader over messages whose names change (same lengths, then another count, then a
    longer frame id moving every offset): each read equals rclpy's; unchanged names come back as
    the same tuple object."""
    from rclpy.serialization import serialize_message

    reader = JointStateReader()
    rng = np.random.default_rng(3)
    msgs = [
        (["ab", "cd"], "f"),
        (["ab", "cd"], "f"),
        (["ab", "ce"], "f"),
        (["ab", "ce", "x"], "f"),
        (["ab", "ce", "x"], "frame"),
        (["ab", "cd"], "f"),
    ]
    got = [
        assert_reads_as_rclpy(reader, serialize_message(joint_state(n, rng.normal(size=(3, len(n))), f)))
        for n, f in msgs
    ]
    assert got[1].name is got[0].name
    assert [g.name for g in got] == [tuple(n) for n, _ in msgs]


def test_reads_the_nodes_own_joint_states_into_the_state():
    """The node's /joint_states bytes (``StateMessages``) read back into (q, qd) equal the
    simulator's state exactly, through ``state_from_joint_state``'s in-order path."""
    model = mbsfmu.load_model(MODELS / "urdf_arm7.urdf")
    sim = Simulator(model, h_max=1e-3)
    sim.advance_to(0.3)  # falling under gravity: every q and qd its own value
    assert np.all(sim.qd != 0)
    lay = cv.joint_layout(model)
    msgs = StateMessages(model, lay, "world", "", with_tf=False)
    data = msgs.fill_joint_states(sim, 3_000_000_123, with_clock=False)[tp.JOINT_STATES]
    reader = JointStateReader()
    got = assert_reads_as_rclpy(reader, data)
    assert (got.sec, got.nanosec) == (3, 123)
    q, qd = cv.state_from_joint_state(lay, got.name, got.position, got.velocity)
    assert q.tobytes() == sim.q.tobytes() and qd.tobytes() == sim.qd.tobytes()


def test_bytes_that_are_not_a_joint_state_are_refused():
    from rclpy.serialization import serialize_message

    data = serialize_message(joint_state(["a", "b"], np.ones((3, 2))))
    reader = JointStateReader()
    with pytest.raises(ValueError, match="little-endian plain-CDR"):
        reader.read(b"\x00\x00" + data[2:])  # big-endian CDR
    with pytest.raises(ValueError, match="little-endian plain-CDR"):
        reader.read(data[:10])
    for cut in range(16, len(data), 3):  # cut anywhere: an error, never a read past the end
        with pytest.raises(ValueError, match=r"byte \d+"):
            reader.read(data[:cut])
    broken = bytearray(data)
    broken[12:16] = (10**6).to_bytes(4, "little")  # the frame id's length (after the stamp) past the end
    with pytest.raises(ValueError, match="runs past the end"):
        reader.read(bytes(broken))
    broken = bytearray(data)
    broken[16 + 5 - 1] = ord("x")  # the frame id "base" (5 bytes from byte 16) without its NUL
    with pytest.raises(ValueError, match="NUL"):
        reader.read(bytes(broken))
