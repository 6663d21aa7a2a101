"""``mbsfmu_ros.cdr``: a layout written member by member equals rclpy's serialisation
(``serialize_message``, the middleware's own encoder) of the same message but in padding bytes,
with empty sequences and strings of every length modulo 4 and 8 (each moves the padding of the
members after it). In process, no DDS."""

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from mbsfmu_ros.cdr import ORIGIN, CdrLayout
from tests.ros.test_state_messages import assert_same_cdr


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("frame", ["", "a", "ab", "abc", "abcd", "abcdefg"])
def test_a_joint_state_layout_equals_rclpys_serialisation(n, frame):
    from sensor_msgs.msg import JointState

    rng = np.random.default_rng(n + len(frame))
    names = [frame[: k + 1] + str(k) for k in range(n)]  # names of several lengths
    values = rng.normal(size=(3, n))
    msg = JointState(name=names, position=values[0].tolist(), velocity=values[1].tolist(), effort=values[2].tolist())
    msg.header.frame_id = frame
    msg.header.stamp.sec, msg.header.stamp.nanosec = 1_234_567, 890_123_456
    lay = CdrLayout()
    stamp = lay.header(frame)
    lay.strings(names)
    offsets = [lay.float64_sequence(n) for _ in range(3)]
    cdr = lay.finish()
    cdr.i4[stamp // 4], cdr.u4[stamp // 4 + 1] = 1_234_567, 890_123_456
    for off, v in zip(offsets, values):
        cdr.f8[cdr.doubles(off, n)] = v
        assert (off - ORIGIN) % 8 == 0 or n == 0  # float64 aligned to 8 from the encapsulation's end
    assert_same_cdr(cdr.data(), msg, cdr.padding)
