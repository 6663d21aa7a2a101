"""Runs one misuse case against an extracted native FMU in this process (for
tests/fmu/test_native_misuse.py, which runs each case in its own subprocess and checks that the
process survives). Prints one JSON line: {"status": [...], "log": [[status, message], ...]}.

    python fmu_misuse_runner.py EXTRACTED_DIR CASE
"""

from __future__ import annotations

import ctypes
import json
import math
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from fmpy.fmi2 import (
    fmi2CallbackAllocateMemoryTYPE,
    fmi2CallbackFreeMemoryTYPE,
    fmi2CallbackFunctions,
    fmi2CallbackLoggerTYPE,
)

d = Path(sys.argv[1])
case = sys.argv[2]
root = ET.parse(d / "modelDescription.xml").getroot()
ident = root.find("CoSimulation").get("modelIdentifier")
guid = root.get("guid").encode()
vr = {sv.get("name"): int(sv.get("valueReference")) for sv in root.find("ModelVariables")}
lib = ctypes.CDLL(str(d / "binaries" / "linux64" / f"{ident}.so"))
log: list = []
status: list = []


def _log(_env, _name, st, _cat, msg):
    log.append([st, (msg or b"").decode()])


libc = ctypes.CDLL(None)
libc.calloc.restype, libc.calloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
libc.free.restype, libc.free.argtypes = None, [ctypes.c_void_p]  # else ctypes passes pointers as int
cb = fmi2CallbackFunctions()
cb.logger = fmi2CallbackLoggerTYPE(_log)
cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(libc.calloc)
cb.freeMemory = fmi2CallbackFreeMemoryTYPE(libc.free)
P, D, U, SZ, I32 = ctypes.c_void_p, ctypes.c_double, ctypes.c_uint, ctypes.c_size_t, ctypes.c_int
for name, res, args in [
    ("fmi2Instantiate", P, [ctypes.c_char_p, I32, ctypes.c_char_p, ctypes.c_char_p, P, I32, I32]),
    ("fmi2FreeInstance", None, [P]),
    ("fmi2SetupExperiment", I32, [P, I32, D, D, I32, D]),
    ("fmi2EnterInitializationMode", I32, [P]),
    ("fmi2ExitInitializationMode", I32, [P]),
    ("fmi2Terminate", I32, [P]),
    ("fmi2Reset", I32, [P]),
    ("fmi2DoStep", I32, [P, D, D, I32]),
    ("fmi2GetReal", I32, [P, P, SZ, P]),
    ("fmi2SetReal", I32, [P, P, SZ, P]),
    ("fmi2GetInteger", I32, [P, P, SZ, P]),
    ("fmi2SetInteger", I32, [P, P, SZ, P]),
    ("fmi2GetBoolean", I32, [P, P, SZ, P]),
    ("fmi2SetBoolean", I32, [P, P, SZ, P]),
    ("fmi2GetString", I32, [P, P, SZ, P]),
    ("fmi2SetString", I32, [P, P, SZ, P]),
    ("fmi2SetDebugLogging", I32, [P, I32, SZ, P]),
    ("fmi2GetStatus", I32, [P, I32, P]),
    ("fmi2GetRealStatus", I32, [P, I32, P]),
    ("fmi2GetIntegerStatus", I32, [P, I32, P]),
    ("fmi2GetBooleanStatus", I32, [P, I32, P]),
    ("fmi2GetStringStatus", I32, [P, I32, P]),
    ("fmi2GetFMUstate", I32, [P, P]),
    ("fmi2SetFMUstate", I32, [P, P]),
    ("fmi2FreeFMUstate", I32, [P, P]),
    ("fmi2SerializedFMUstateSize", I32, [P, P, P]),
    ("fmi2SerializeFMUstate", I32, [P, P, P, SZ]),
    ("fmi2DeSerializeFMUstate", I32, [P, P, SZ, P]),
    ("fmi2GetDirectionalDerivative", I32, [P, P, SZ, P, SZ, P, P]),
]:
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = res, args


def vrs(*names):
    return (ctypes.c_uint * len(names))(*[vr[n] if isinstance(n, str) else n for n in names])


def reals(*xs):
    return (ctypes.c_double * len(xs))(*xs)


def new(name=b"misuse", resources=b"file:///tmp/resources", g=guid):
    return lib.fmi2Instantiate(name, 1, g, resources, ctypes.cast(ctypes.pointer(cb), P), 0, 0)


def init(c):
    status.append(lib.fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0))
    status.append(lib.fmi2EnterInitializationMode(c))
    status.append(lib.fmi2ExitInitializationMode(c))


def get(c, *names):
    out = reals(*[0.0] * len(names))
    status.append(lib.fmi2GetReal(c, vrs(*names), len(names), out))
    return list(out)


def serialized(c):
    s = P()
    lib.fmi2GetFMUstate(c, ctypes.byref(s))
    n = SZ()
    lib.fmi2SerializedFMUstateSize(c, s, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value)
    lib.fmi2SerializeFMUstate(c, s, buf, n.value)
    lib.fmi2FreeFMUstate(c, ctypes.byref(s))
    return buf.raw


def deserialize(c, blob: bytes):
    s = P()
    buf = ctypes.create_string_buffer(blob, len(blob))
    status.append(lib.fmi2DeSerializeFMUstate(c, buf, len(blob), ctypes.byref(s)))
    if s.value:
        lib.fmi2FreeFMUstate(c, ctypes.byref(s))


c = new()
first_input = next(sv.get("name") for sv in root.find("ModelVariables") if sv.get("causality") == "input")
first_output = next(sv.get("name") for sv in root.find("ModelVariables") if sv.get("causality") == "output")
first_mass = next(n for n in vr if n.endswith(".mass"))
integer = "solver.n_steps"

if case == "dostep_before_init":
    status.append(lib.fmi2DoStep(c, 0.0, 1e-3, 1))
elif case == "exit_without_enter":
    status.append(lib.fmi2ExitInitializationMode(c))
elif case == "enter_twice":
    status.append(lib.fmi2EnterInitializationMode(c))
    status.append(lib.fmi2EnterInitializationMode(c))
elif case == "dostep_after_terminate":
    init(c)
    status.append(lib.fmi2Terminate(c))
    status.append(lib.fmi2DoStep(c, 0.0, 1e-3, 1))
elif case == "setup_after_init":
    init(c)
    status.append(lib.fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0))
elif case == "unknown_vr":
    init(c)
    status.append(lib.fmi2GetReal(c, vrs(99999), 1, reals(0.0)))
    status.append(lib.fmi2SetReal(c, vrs(99999), 1, reals(1.0)))
elif case == "wrong_type":
    init(c)
    status.append(lib.fmi2GetInteger(c, vrs("KE"), 1, (ctypes.c_int * 1)()))
    status.append(lib.fmi2GetReal(c, vrs(integer), 1, reals(0.0)))
    status.append(lib.fmi2GetBoolean(c, vrs("KE"), 1, (ctypes.c_int * 1)()))
elif case == "nan_input":
    init(c)
    before = get(c, first_input)
    status.append(lib.fmi2SetReal(c, vrs(first_input), 1, reals(math.nan)))
    status.append(lib.fmi2SetReal(c, vrs(first_input), 1, reals(math.inf)))
    status.append(int(get(c, first_input) == before))
    status.append(lib.fmi2DoStep(c, 0.0, 1e-3, 1))
elif case == "set_output_and_fixed_parameter":
    init(c)
    status.append(lib.fmi2SetReal(c, vrs(first_output), 1, reals(1.0)))
    status.append(lib.fmi2SetReal(c, vrs(first_mass), 1, reals(2.0)))
elif case == "bad_steps":
    init(c)
    for t, h in ((0.0, -1e-3), (0.0, 0.0), (0.0, math.nan), (0.0, math.inf), (0.0, 1e12), (0.0, 1e6), (math.nan, 1e-3)):
        status.append(lib.fmi2DoStep(c, t, h, 1))
    status.append(lib.fmi2DoStep(c, 0.0, 1e-3, 1))  # still usable
elif case == "negative_mass":
    status.append(lib.fmi2SetReal(c, vrs(first_mass), 1, reals(-1.0)))
    init(c)
elif case == "triangle_inequality":
    body = first_mass[: -len(".mass")]
    status.append(
        lib.fmi2SetReal(c, vrs(f"{body}.I[1,1]", f"{body}.I[2,2]", f"{body}.I[3,3]"), 3, reals(10.0, 1.0, 1.0))
    )
    init(c)
elif case == "nonfinite_state":
    init(c)
    status.append(lib.fmi2SetReal(c, vrs(first_input), 1, reals(1e308)))
    status.append(lib.fmi2DoStep(c, 0.0, 1.0, 1))
    status.append(int(all(math.isfinite(v) for v in get(c, first_output))))  # state kept at the step's start
elif case == "garbage_blobs":
    init(c)
    blob = serialized(c)
    deserialize(c, b"\x00" * 16)  # not ours
    deserialize(c, b"\x01\x02\x03")  # 3 bytes
    deserialize(c, blob[: len(blob) // 2])  # truncated
    bad = bytearray(blob)
    bad[len(bad) // 2] ^= 0x40
    deserialize(c, bytes(bad))  # one bit flipped
    bad = bytearray(blob)
    bad[16] ^= 0x01  # the model hash
    deserialize(c, bytes(bad))
    bad = bytearray(blob)
    bad[8] = 99  # the format version
    deserialize(c, bytes(bad))
    deserialize(c, blob)  # the good one still works
elif case == "double_free_state":
    init(c)
    s = P()
    status.append(lib.fmi2GetFMUstate(c, ctypes.byref(s)))
    kept = P(s.value)
    status.append(lib.fmi2FreeFMUstate(c, ctypes.byref(s)))
    status.append(lib.fmi2FreeFMUstate(c, ctypes.byref(kept)))  # the same pointer again
    status.append(lib.fmi2SetFMUstate(c, kept))  # a freed state
    status.append(lib.fmi2SetFMUstate(c, None))
elif case == "foreign_state":
    init(c)
    other = new(b"other")
    init(other)
    s = P()
    status.append(lib.fmi2GetFMUstate(other, ctypes.byref(s)))
    status.append(lib.fmi2SetFMUstate(c, s))  # a state of another instance
    status.append(lib.fmi2FreeFMUstate(other, ctypes.byref(s)))
    lib.fmi2FreeInstance(other)
elif case == "null_pointers":
    init(c)
    status.append(lib.fmi2GetReal(c, None, 1, reals(0.0)))
    status.append(lib.fmi2GetReal(c, vrs("KE"), 1, None))
    status.append(lib.fmi2SetReal(c, None, 2, None))
    status.append(lib.fmi2GetFMUstate(c, None))
    status.append(lib.fmi2DoStep(None, 0.0, 1e-3, 1))
    status.append(lib.fmi2GetReal(None, vrs("KE"), 1, reals(0.0)))
    lib.fmi2FreeInstance(None)
    status.append(lib.fmi2GetReal(c, None, 0, None))  # nvr = 0: nothing to do
elif case == "freed_component":
    init(c)
    lib.fmi2FreeInstance(c)
    lib.fmi2FreeInstance(c)  # twice
    status.append(lib.fmi2DoStep(c, 0.0, 1e-3, 1))
    c = None
elif case == "bad_instantiate":
    status.append(int(bool(new(resources=b"not a uri"))))
    status.append(int(bool(new(g=b"{00000000-0000-0000-0000-000000000000}"))))
    status.append(int(bool(new(name=None))))
    status.append(int(bool(lib.fmi2Instantiate(b"x", 2, guid, b"file:///r", ctypes.cast(ctypes.pointer(cb), P), 0, 0))))
    status.append(int(bool(lib.fmi2Instantiate(b"x", 1, guid, b"file:///r", None, 0, 0))))
    status.append(int(bool(new(resources=None))))  # no location: accepted (the FMU needs no resources)
elif case == "time_mismatch":
    init(c)
    status.append(lib.fmi2DoStep(c, 0.0, 1e-3, 1))
    status.append(lib.fmi2DoStep(c, 0.0, 1e-3, 1))  # the same step again: backwards by 1 ms
    status.append(lib.fmi2DoStep(c, 0.5, 1e-3, 1))  # a skipped interval
    status.append(lib.fmi2DoStep(c, 2e-3, 1e-3, 1))  # 1 ms ahead
    status.append(lib.fmi2DoStep(c, 1e-3 * (1 + 4e-16), 1e-3, 1))  # the FMU's time up to round-off
    status.append(int(abs(get(c, "KE")[0]) >= 0))  # still usable
elif case == "log_categories":

    def cats(*names):
        return ctypes.cast((ctypes.c_char_p * len(names))(*names), P)

    def ok_messages():
        return sum(1 for s, _ in log if s == 0)

    status.append(lib.fmi2SetDebugLogging(c, 1, 2, cats(b"logAll", b"logStatusError")))
    status.append(lib.fmi2SetDebugLogging(c, 1, 1, cats(b"logBogus")))
    status.append(lib.fmi2SetDebugLogging(c, 1, 1, cats(None)))
    status.append(lib.fmi2SetDebugLogging(c, 0, 0, None))  # off: no fmi2OK message
    before = ok_messages()
    status.append(lib.fmi2SetupExperiment(c, 1, 1e-6, 0.0, 0, 0.0))
    status.append(ok_messages() - before)
    status.append(lib.fmi2SetDebugLogging(c, 1, 0, None))  # on: its fmi2OK message
    before = ok_messages()
    status.append(lib.fmi2SetupExperiment(c, 1, 1e-6, 0.0, 0, 0.0))
    status.append(ok_messages() - before)
elif case == "tolerance":
    lib.fmi2SetDebugLogging(c, 1, 0, None)
    status.append(lib.fmi2SetupExperiment(c, 1, 1e-6, 0.0, 0, 0.0))  # rk4: stored, not used (logged)
    status.append(lib.fmi2SetupExperiment(c, 1, -1.0, 0.0, 0, 0.0))
    status.append(lib.fmi2EnterInitializationMode(c))
    status.append(int(get(c, "solver.rtol")[0] == 1e-6))
    n_rhs = []  # evaluations of the equations of motion
    for tol in (1e-4, 1e-12):  # dop853 (solver.method = 2): fewer at the looser tolerance
        d = new(b"dop853")
        lib.fmi2SetDebugLogging(d, 1, 0, None)
        status.append(lib.fmi2SetInteger(d, vrs("solver.method"), 1, (ctypes.c_int * 1)(2)))
        lib.fmi2SetReal(d, vrs("solver.h_max"), 1, reals(0.0))  # unlimited: the tolerance sets the steps
        status.append(lib.fmi2SetupExperiment(d, 1, tol, 0.0, 0, 0.0))
        status.append(lib.fmi2EnterInitializationMode(d))
        status.append(lib.fmi2ExitInitializationMode(d))
        status.append(int(get(d, "solver.rtol")[0] == tol))
        inputs = [sv.get("name") for sv in root.find("ModelVariables") if sv.get("causality") == "input"]
        lib.fmi2SetReal(d, vrs(*inputs), len(inputs), reals(*[1.0 + k for k in range(len(inputs))]))
        status.append(lib.fmi2DoStep(d, 0.0, 2.0, 1))
        n = (ctypes.c_int * 1)()
        lib.fmi2GetInteger(d, vrs("solver.n_rhs"), 1, n)
        n_rhs.append(n[0])
        lib.fmi2FreeInstance(d)
    status.append(int(0 < n_rhs[0] < n_rhs[1]))
elif case == "reset":
    init(c)
    start = get(c, first_output, "KE", "E")
    lib.fmi2SetReal(c, vrs(first_input), 1, reals(0.5))
    for k in range(10):
        status.append(lib.fmi2DoStep(c, k * 1e-2, 1e-2, 1))
    status.append(int(get(c, first_output, "KE", "E") != start))
    status.append(lib.fmi2Reset(c))
    status.append(lib.fmi2DoStep(c, 0.0, 1e-3, 1))  # back to instantiated: not allowed
    init(c)
    status.append(int(get(c, first_output, "KE", "E") == start))  # the start state again
    status.append(int(get(c, first_input)[0] == 0.0))  # the input's start value again
    status.append(lib.fmi2DoStep(c, 0.0, 1e-2, 1))  # time 0 again
elif case == "status_queries":
    init(c)
    status.append(lib.fmi2DoStep(c, 0.0, 0.25, 1))
    st, t, b, i, s = ctypes.c_int(-1), ctypes.c_double(-1.0), ctypes.c_int(-1), ctypes.c_int(-1), ctypes.c_char_p()
    status.append(lib.fmi2GetStatus(c, 0, ctypes.byref(st)))  # fmi2DoStepStatus
    status.append(st.value)
    status.append(lib.fmi2GetRealStatus(c, 2, ctypes.byref(t)))  # fmi2LastSuccessfulTime
    status.append(int(t.value == 0.25))
    status.append(lib.fmi2GetBooleanStatus(c, 3, ctypes.byref(b)))  # fmi2Terminated
    status.append(b.value)
    status.append(lib.fmi2GetStatus(c, 1, ctypes.byref(st)))  # fmi2PendingStatus: no asynchronous step
    status.append(lib.fmi2GetIntegerStatus(c, 0, ctypes.byref(i)))
    status.append(lib.fmi2GetStringStatus(c, 1, ctypes.byref(s)))
    status.append(lib.fmi2GetRealStatus(c, 2, None))
elif case == "no_boolean_or_string":
    init(c)
    status.append(lib.fmi2GetString(c, vrs("KE"), 1, (ctypes.c_char_p * 1)()))
    status.append(lib.fmi2SetBoolean(c, vrs("KE"), 1, (ctypes.c_int * 1)(1)))
    status.append(lib.fmi2SetString(c, vrs(99999), 1, (ctypes.c_char_p * 1)(b"x")))
    status.append(lib.fmi2SetString(c, vrs("KE"), 0, None))  # nvr = 0: nothing to do
    status.append(lib.fmi2GetBoolean(c, vrs("KE"), 1, None))
elif case == "directional_derivative":
    dd = lib.fmi2GetDirectionalDerivative
    out = reals(7.0, 7.0)
    status.append(dd(c, vrs(first_output), 1, vrs(first_input), 1, reals(1.0), out))  # before initialisation
    init(c)
    status.append(dd(c, vrs(99999), 1, vrs(first_input), 1, reals(1.0), out))  # unknown vr as unknown
    status.append(dd(c, vrs(first_output), 1, vrs(99999), 1, reals(1.0), out))  # unknown vr as known
    status.append(dd(c, vrs(first_output), 1, vrs(first_mass), 1, reals(1.0), out))  # a parameter as known
    status.append(dd(c, vrs(first_output), 1, vrs("KE"), 1, reals(1.0), out))  # an output as known
    status.append(dd(c, vrs(first_input), 1, vrs(first_input), 1, reals(1.0), out))  # an input as unknown
    status.append(dd(c, vrs("solver.n_steps"), 1, vrs(first_input), 1, reals(1.0), out))  # an Integer output
    status.append(dd(c, vrs(first_output), 1, vrs(first_input), 1, reals(math.nan), out))  # a non-finite seed
    status.append(dd(c, vrs(first_output), 1, vrs(first_input), 1, None, out))  # NULL seeds
    status.append(int(list(out) == [7.0, 7.0]))  # a refused call writes nothing
    status.append(dd(c, None, 0, None, 0, None, None))  # nothing asked: OK
    status.append(lib.fmi2DoStep(c, 0.0, 1e-2, 1))  # the instance still steps
else:
    raise SystemExit(f"unknown case {case}")
if c:
    lib.fmi2FreeInstance(c)
print(json.dumps({"status": status, "log": log}))
