"""What the FMUs' Python slaves and the loader binary (``loader.c``) agree on.

- Failed calls: pythonfmu's binary turns every Python exception into fmi2Fatal and knows no
  fmi2Error. With the loader, a slave reports a failed call by logging it with status error and
  returning normally; the loader returns fmi2Error for any call during which the slave logged an
  error (and fmi2Warning for a warning). ``guarded`` wraps the slave's entry points so that no
  exception reaches pythonfmu: the exception's message is logged as an error, and the call
  returns a harmless default. Without the loader (``mbsfmu_build.json`` "loader": false) the
  exception is re-raised after logging: pythonfmu's fmi2Fatal is then the only failure it can
  report.
- Serialised FMU states: ``pack`` frames the slave's JSON payload with a header the loader
  checks before Python sees the bytes (tag, GUID, payload length, CRC-32), so random, truncated,
  corrupted or foreign bytes get fmi2Error from fmi2DeSerializeFMUstate.
"""

from __future__ import annotations

import functools
import zlib

STATE_TAG = b"MBSFMU-FMUSTATE 2 "
HEADER_SIZE = len(STATE_TAG) + 36 + 1 + 16 + 1 + 8 + 1


class BadState(ValueError):
    """Bytes that are not a serialised state of this FMU."""


def pack(guid: str, payload: bytes) -> bytes:
    """``payload`` framed: ``MBSFMU-FMUSTATE 2 <guid> <len: 16 hex> <CRC-32: 8 hex>\\n`` + payload."""
    g = guid.encode("ascii")
    if len(g) != 36:
        raise ValueError(f"GUID {guid!r}: expected 36 characters")
    return STATE_TAG + g + b" %016x %08x\n" % (len(payload), zlib.crc32(payload)) + payload


def unpack(blob: bytes, guid: str) -> bytes:
    """The payload of a framed state of the FMU ``guid``; BadState saying what is wrong."""
    if len(blob) < HEADER_SIZE or not blob.startswith(STATE_TAG):
        raise BadState("not an mbsfmu FMU state (wrong header: foreign or corrupted bytes)")
    head = blob[len(STATE_TAG) : HEADER_SIZE]
    if head[:36] != guid.encode("ascii"):
        raise BadState("a state of another FMU (GUID differs)")
    try:
        length, crc = int(head[37:53], 16), int(head[54:62], 16)
    except ValueError:
        raise BadState("corrupted header") from None
    payload = blob[HEADER_SIZE:]
    if length != len(payload):
        raise BadState("truncated or extended: the length does not match the header")
    if zlib.crc32(payload) != crc:
        raise BadState("corrupted: the CRC-32 of the payload does not match")
    return payload


class Failed(Exception):
    """A slave call failed; its reason has been logged already."""


def guarded(default):
    """Decorator for a pythonfmu entry point of a slave with ``log`` and ``status_by_log``:
    exceptions are logged as errors (``Failed``: already logged) and the call returns
    ``default(self, *args)`` (callable) or ``default``; without the loader they are re-raised."""
    from pythonfmu.enums import Fmi2Status

    def wrap(fn):
        @functools.wraps(fn)
        def call(self, *args):
            try:
                return fn(self, *args)
            except Exception as e:
                if not isinstance(e, Failed):
                    self.log(f"{fn.__name__.strip('_')}: {type(e).__name__}: {e}", Fmi2Status.error)
                if not getattr(self, "status_by_log", False):
                    raise
                return default(self, *args) if callable(default) else default

        return call

    return wrap


__all__ = ["HEADER_SIZE", "STATE_TAG", "BadState", "Failed", "guarded", "pack", "unpack"]
