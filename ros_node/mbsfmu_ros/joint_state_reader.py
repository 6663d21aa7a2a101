"""sensor_msgs/JointState read from its CDR bytes, for a Python controller in lock-step with the
node (docs/guides/ros2.md, "Lock-step"): subscribe with ``raw=True`` and read each message with one
``JointStateReader``. rclpy's own deserialisation builds a message object, a ``str`` per joint name
and three arrays per message (~16 us for G1's 29 joints with warm caches); ``read`` unpacks the
stamp, views position, velocity and effort in place (numpy, no copy) and decodes the names only
when their bytes differ from the last message's: a publisher's names do not change between
messages, so the reader hands back the same tuple of names, no new strings (``state_from_joint_state``
compares it with the model's in one tuple comparison).

The layout is the one ``cdr.py`` writes (plain CDR, XCDR1, little endian; alignment counted from
the end of the 4-byte encapsulation header): Header {Time stamp {int32 sec; uint32 nanosec};
string frame_id}, string[] name, float64[] position, float64[] velocity, float64[] effort. A
string is a uint32 length counting its NUL, the bytes and the NUL; a sequence a uint32 count and
its elements, float64 aligned to 8. Bytes that do not hold such a message (another encoding,
cut short, a length past the end, a string without its NUL) raise ValueError naming the byte
offset; nothing is read past the end.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

import numpy as np

from .cdr import CDR_LE, ORIGIN

U32 = struct.Struct("<I")
STAMP = struct.Struct("<iI")  # builtin_interfaces/Time: int32 sec, uint32 nanosec


class JointStateView(NamedTuple):
    """One JointState: the stamp [s, ns], frame id, names and read-only float64 views of the
    message's bytes (rad or m, rad/s or m/s, N m or N per entry, in the names' order)."""

    sec: int
    nanosec: int
    frame_id: str
    name: tuple[str, ...]
    position: np.ndarray
    velocity: np.ndarray
    effort: np.ndarray


class JointStateReader:
    """Reads JointState CDR bytes (``read``); keeps the last message's name bytes and names."""

    def __init__(self):
        self.names_at = -1  # byte offset of the name sequence in the last message
        self.names_bytes = b""  # its bytes (count and strings)
        self.names: tuple[str, ...] = ()
        self.frame_bytes = b""
        self.frame_id = ""

    def read(self, data: bytes) -> JointStateView:
        """The message in ``data`` (a raw subscription's bytes); ValueError if it is not one."""
        if len(data) < ORIGIN + 12 or data[:2] != CDR_LE[:2]:
            raise ValueError(
                f"not a little-endian plain-CDR JointState: {len(data)} bytes, encapsulation {data[:2].hex()} "
                f"(expected {CDR_LE[:2].hex()})"
            )
        sec, nanosec = STAMP.unpack_from(data, ORIGIN)
        frame, p = _string_bytes(data, ORIGIN + 8)
        if frame != self.frame_bytes:
            self.frame_bytes, self.frame_id = frame, _decode(frame, ORIGIN + 12)
        p = _align(p, 4)
        nb = len(self.names_bytes)
        if p == self.names_at and data[p : p + nb] == self.names_bytes:
            p += nb
        else:
            start = p
            count, p = _count(data, p, 4)
            names = []
            for _ in range(count):
                p = _align(p, 4)
                at = p
                raw, p = _string_bytes(data, p)
                names.append(_decode(raw, at))
            self.names_at, self.names_bytes, self.names = start, bytes(data[start:p]), tuple(names)
        position, p = _float64s(data, p)
        velocity, p = _float64s(data, p)
        effort, p = _float64s(data, p)
        return JointStateView(sec, nanosec, self.frame_id, self.names, position, velocity, effort)


def _align(p: int, n: int) -> int:
    """Byte offset p rounded up to a multiple of n counted from ``ORIGIN``."""
    return p + (-(p - ORIGIN) % n)


def _count(data: bytes, p: int, size: int) -> tuple[int, int]:
    """A sequence's uint32 count at p (4-aligned) whose ``size``-byte elements must fit in data."""
    if p + 4 > len(data):
        raise ValueError(f"JointState cut short: a sequence length at byte {p} of {len(data)}")
    (n,) = U32.unpack_from(data, p)
    if n * size > len(data) - p - 4:
        raise ValueError(f"JointState: a sequence of {n} at byte {p} runs past the end ({len(data)} bytes)")
    return n, p + 4


def _string_bytes(data: bytes, p: int) -> tuple[bytes, int]:
    """A CDR string's bytes without its NUL, at p (4-aligned), and the offset after it."""
    n, p = _count(data, p, 1)
    if n == 0 or data[p + n - 1] != 0:
        raise ValueError(f"JointState: the string at byte {p - 4} does not end in its NUL")
    return data[p : p + n - 1], p + n


def _decode(raw: bytes, p: int) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError(f"JointState: the string at byte {p} is not UTF-8 ({e.reason})") from None


def _float64s(data: bytes, p: int) -> tuple[np.ndarray, int]:
    """A float64 sequence at p (after 4-alignment) as a read-only view, and the offset after it."""
    n, p = _count(data, _align(p, 4), 8)
    if n == 0:
        return np.frombuffer(b"", dtype="<f8"), p  # read-only as the others
    p = _align(p, 8)
    if p + 8 * n > len(data):
        raise ValueError(f"JointState: {n} float64 at byte {p} run past the end ({len(data)} bytes)")
    return np.frombuffer(data, dtype="<f8", count=n, offset=p), p + 8 * n
