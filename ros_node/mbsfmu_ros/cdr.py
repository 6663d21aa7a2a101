"""CDR bytes of a fixed-layout ROS message, built once, whose numbers are patched in place each
cycle (docs/performance.md, "ROS 2 node"): rclpy's ``Publisher.publish`` takes such bytes as a
serialised message and hands them to the middleware as they are, without the Python -> C message
conversion and serialisation of a message object.

The encoding is the one ROS 2's Fast DDS middleware writes for these (final, non-keyed) types:
plain CDR, XCDR version 1, little endian (DDS-XTypes 1.3, 7.4.1 and 7.6.2.1.2: encapsulation
identifier CDR_LE = 0x0001). A payload starts with the 4-byte encapsulation header (identifier,
then two option bytes) and every primitive is aligned to its own size counted from the end of
that header, not from the start of the buffer (DDS-XTypes 1.3, 7.4.1.1): uint32/int32 to 4,
float64 to 8 (8 in XCDR1; XCDR2 would align it to 4). A string is a uint32 length counting the
terminating NUL, its bytes and the NUL; a sequence a uint32 element count and its elements. The
low two bits of the options give the padding bytes after the last member (DDS-XTypes 1.3,
7.6.3.1.2): every layout here ends 4-aligned (on a uint32 or a float64), so the options are 0.

The bytes equal ``rclpy.serialization.serialize_message`` of the same message everywhere but in
padding, which Fast CDR leaves uninitialised and this encoder writes as zeros, and but for the
few trailing bytes of rmw's size estimate (tests/ros/test_state_messages.py deserialises both).
"""

from __future__ import annotations

import struct

import numpy as np

CDR_LE = b"\x00\x01\x00\x00"  # encapsulation: CDR_LE (XCDR1, little endian), options 0
ORIGIN = len(CDR_LE)  # alignment counts from here (DDS-XTypes 1.3, 7.4.1.1)


class CdrLayout:
    """The CDR bytes of one message, written member by member in declaration order; each writer
    returns the byte offset (in ``buf``) of what it wrote, for patching later."""

    def __init__(self):
        self.buf = bytearray(CDR_LE)
        self.padding: list[int] = []  # byte offsets of the alignment padding (zeros)

    def align(self, n: int) -> None:
        """Pad with zeros to a multiple of n bytes from ``ORIGIN``."""
        pad = -(len(self.buf) - ORIGIN) % n
        self.padding.extend(range(len(self.buf), len(self.buf) + pad))
        self.buf += bytes(pad)

    def uint32(self, value: int = 0) -> int:
        self.align(4)
        off = len(self.buf)
        self.buf += struct.pack("<I", value)
        return off

    def time(self) -> int:
        """builtin_interfaces/Time {int32 sec; uint32 nanosec}, zero; offset of sec."""
        off = self.uint32()
        self.uint32()
        return off

    def header(self, frame_id: str) -> int:
        """std_msgs/Header {Time stamp; string frame_id}; offset of stamp.sec."""
        off = self.time()
        self.string(frame_id)
        return off

    def string(self, text: str) -> None:
        data = text.encode("utf-8") + b"\x00"
        self.uint32(len(data))
        self.buf += data

    def strings(self, texts) -> None:
        texts = list(texts)
        self.uint32(len(texts))
        for t in texts:
            self.string(t)

    def float64(self, n: int = 1) -> int:
        """n float64 zeros (a fixed array, or members in a row); offset of the first."""
        self.align(8)
        off = len(self.buf)
        self.buf += bytes(8 * n)
        return off

    def float64_sequence(self, n: int) -> int:
        """sequence<float64> of n zeros; offset of its first element (of where it would be for n = 0)."""
        self.uint32(n)
        return self.float64(n) if n else len(self.buf)

    def finish(self) -> CdrMessage:
        """The message, its layout ending 4-aligned (options 0: no end padding)."""
        assert (len(self.buf) - ORIGIN) % 4 == 0, "every layout here ends on a uint32 or a float64"
        return CdrMessage(self.buf, tuple(self.padding))


class CdrMessage:
    """A message's CDR bytes (``buf``) with views to patch them: ``f8[(off - ORIGIN) // 8]`` the
    float64 at byte offset off, ``i4``/``u4[off // 4]`` the int32/uint32 there. ``data()`` gives a
    copy to publish (rclpy publishes ``bytes``, not a bytearray)."""

    def __init__(self, buf: bytearray, padding: tuple[int, ...]):
        self.buf, self.padding = buf, padding
        self.f8 = np.frombuffer(buf, dtype="<f8", count=(len(buf) - ORIGIN) // 8, offset=ORIGIN)
        self.i4 = np.frombuffer(buf, dtype="<i4")
        self.u4 = np.frombuffer(buf, dtype="<u4")

    def doubles(self, off: int, n: int) -> slice:
        """The f8 slice of n float64 from byte offset off (8-aligned from ``ORIGIN``)."""
        i = (off - ORIGIN) // 8
        return slice(i, i + n)

    def data(self) -> bytes:
        return bytes(self.buf)
