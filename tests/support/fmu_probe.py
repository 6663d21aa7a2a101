"""A host process for the FMU misuse tests (run as a script, never imported by pytest):

    python fmu_probe.py UNZIPDIR CASE

loads the extracted FMU with fmpy's low-level API, runs one misuse CASE (see CASES) and prints
one JSON line ``{"case", "statuses": [...], "log": [[status, message], ...], "result": ...}``
followed by ``PROBE-SURVIVED``; the test asserts the process exit code, the statuses and the log.
Statuses are fmi2Status values (0 OK, 1 Warning, 2 Discard, 3 Error, 4 Fatal)."""

from __future__ import annotations

import ctypes
import json
import os
import sys

from fmpy import read_model_description
from fmpy.fmi2 import (
    FMU2Slave,
    fmi2CallbackAllocateMemoryTYPE,
    fmi2CallbackFreeMemoryTYPE,
    fmi2CallbackFunctions,
    fmi2CallbackLoggerTYPE,
    fmi2Integer,
    fmi2Real,
    fmi2ValueReference,
)

LOG: list[list] = []
STATUSES: list[int] = []


def _log(_env, _name, status, _category, message):
    LOG.append([int(status), (message or b"").decode(errors="replace")])


CALLBACKS = fmi2CallbackFunctions()
CALLBACKS.logger = fmi2CallbackLoggerTYPE(_log)
_libc = ctypes.CDLL(None)
CALLBACKS.allocateMemory = fmi2CallbackAllocateMemoryTYPE(_libc.calloc)
CALLBACKS.freeMemory = fmi2CallbackFreeMemoryTYPE(_libc.free)


class Probe:
    """One FMU: raw fmi2 calls on its component, every status recorded."""

    def __init__(self, unzip: str):
        self.unzip = unzip
        self.md = read_model_description(os.path.join(unzip, "modelDescription.xml"))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.f = FMU2Slave(
            guid=self.md.guid,
            unzipDirectory=unzip,
            modelIdentifier=self.md.coSimulation.modelIdentifier,
            instanceName="probe",
        )
        self.f.fmiCallFunction = None  # no exceptions: we look at the statuses
        self.lib = self.f.dll
        self.c = None

    def raw(self, name: str, *args):
        fn = getattr(self.lib, name)
        status = fn(*args)
        STATUSES.append(int(status))
        return status

    def resources(self) -> str:
        from pathlib import Path

        return Path(self.unzip, "resources").as_uri()

    def instantiate(self, name=b"probe", resources: str | None = None, guid: bytes | None = None):
        fn = self.lib.fmi2Instantiate
        fn.restype = ctypes.c_void_p
        fn.argtypes = [
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_char_p,
            ctypes.POINTER(fmi2CallbackFunctions),
            ctypes.c_int,
            ctypes.c_int,
        ]
        loc = (resources if resources is not None else self.resources()).encode()
        self.c = fn(name, 1, guid if guid is not None else self.md.guid.encode(), loc, ctypes.byref(CALLBACKS), 0, 0)
        return self.c

    def init(self, params: dict | None = None):
        assert self.instantiate(), LOG
        self.setup()
        for k, v in (params or {}).items():
            self.set_real([k], [v])
        self.raw("fmi2EnterInitializationMode", ctypes.c_void_p(self.c))
        self.raw("fmi2ExitInitializationMode", ctypes.c_void_p(self.c))

    def setup(self, start=0.0):
        fn = self.lib.fmi2SetupExperiment
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_double, ctypes.c_int, ctypes.c_double]
        fn.restype = ctypes.c_int
        return self.raw("fmi2SetupExperiment", self.c, 0, 0.0, start, 0, 0.0)

    def do_step(self, t, dt):
        fn = self.lib.fmi2DoStep
        fn.argtypes = [ctypes.c_void_p, ctypes.c_double, ctypes.c_double, ctypes.c_int]
        fn.restype = ctypes.c_int
        return self.raw("fmi2DoStep", self.c, t, dt, 1)

    def set_real(self, names, values):
        vr = (fmi2ValueReference * len(names))(*[self.vr[n] if isinstance(n, str) else n for n in names])
        val = (fmi2Real * len(values))(*values)
        return self.raw("fmi2SetReal", ctypes.c_void_p(self.c), vr, len(names), val)

    def get_real(self, names):
        vr = (fmi2ValueReference * len(names))(*[self.vr[n] if isinstance(n, str) else n for n in names])
        val = (fmi2Real * len(names))()
        s = self.raw("fmi2GetReal", ctypes.c_void_p(self.c), vr, len(names), val)
        return s, list(val)

    def get_integer(self, names):
        vr = (fmi2ValueReference * len(names))(*[self.vr[n] if isinstance(n, str) else n for n in names])
        val = (fmi2Integer * len(names))()
        s = self.raw("fmi2GetInteger", ctypes.c_void_p(self.c), vr, len(names), val)
        return s, list(val)

    def get_state(self):
        st = ctypes.c_void_p()
        self.raw("fmi2GetFMUstate", ctypes.c_void_p(self.c), ctypes.byref(st))
        return st

    def serialize(self, st) -> bytes:
        size = ctypes.c_size_t()
        self.raw("fmi2SerializedFMUstateSize", ctypes.c_void_p(self.c), st, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        self.raw("fmi2SerializeFMUstate", ctypes.c_void_p(self.c), st, buf, size)
        return buf.raw

    def deserialize(self, blob: bytes):
        st = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(blob, len(blob))
        s = self.raw(
            "fmi2DeSerializeFMUstate", ctypes.c_void_p(self.c), buf, ctypes.c_size_t(len(blob)), ctypes.byref(st)
        )
        return s, st

    def set_state(self, st):
        return self.raw("fmi2SetFMUstate", ctypes.c_void_p(self.c), st)

    def free(self):
        fn = self.lib.fmi2FreeInstance
        fn.argtypes = [ctypes.c_void_p]
        fn.restype = None
        fn(self.c)


def crafted(p: Probe, edit) -> int:
    """Serialise the current state, let ``edit`` change its JSON payload, frame it again (a valid
    header: the attacker knows the format): the status of fmi2SetFMUstate, or of
    fmi2DeSerializeFMUstate when that refuses."""
    from mbsfmu.fmu.protocol import HEADER_SIZE, pack

    blob = p.serialize(p.get_state())
    state = json.loads(blob[HEADER_SIZE:])
    edit(state)
    s, st = p.deserialize(pack(p.md.guid, json.dumps(state, allow_nan=True).encode()))
    if s != 0:
        return s
    return p.set_state(st)


def case(name: str, p: Probe):
    """Run misuse case ``name``; returns a JSON-able result."""
    vr_real = p.vr.get("q1.q")
    if name == "resources_missing":
        return p.instantiate(resources="file:///nonexistent/mbsfmu/resources") is None
    if name == "resources_unrelated":
        return p.instantiate(resources=f"file://{os.path.dirname(os.__file__)}") is None
    if name == "resources_unzip_root":
        from pathlib import Path

        return p.instantiate(resources=Path(p.unzip).as_uri()) is None
    if name == "null_instance_name":
        return p.instantiate(name=None) is None
    if name == "null_guid":
        return p.instantiate(guid=b"") is None
    if name == "double_free":
        p.init()
        p.free()
        p.free()
        return "freed twice"
    if name == "step_after_free":
        p.init()
        p.free()
        return [p.do_step(0.0, 0.01), p.get_real(["q1.q"])[0]]
    if name == "get_real_null":
        p.init()
        return p.raw("fmi2GetReal", ctypes.c_void_p(p.c), None, ctypes.c_size_t(3), None)
    if name == "get_integer_null":
        p.init()
        return p.raw("fmi2GetInteger", ctypes.c_void_p(p.c), None, ctypes.c_size_t(2), None)
    if name == "get_real_unknown_vr":
        p.init()
        return p.get_real([10**6])[0]
    if name == "get_integer_on_real":
        p.init()
        return p.get_integer([vr_real])[0]
    if name == "get_boolean_on_real":
        p.init()
        vr = (fmi2ValueReference * 1)(vr_real)
        val = (ctypes.c_int * 1)()
        return p.raw("fmi2GetBoolean", ctypes.c_void_p(p.c), vr, 1, val)
    if name == "step_nan_time":
        p.init()
        return p.do_step(float("nan"), 0.01)
    if name == "step_huge":
        p.init()
        return p.do_step(0.0, 1e300)
    if name == "step_negative":
        p.init()
        return p.do_step(0.0, -0.01)
    if name == "setup_nan_start":
        p.instantiate()
        return p.setup(float("nan"))
    if name == "step_after_terminate":
        p.init()
        p.do_step(0.0, 0.01)
        p.raw("fmi2Terminate", ctypes.c_void_p(p.c))
        return p.do_step(0.01, 0.01)
    if name == "step_before_init":
        p.instantiate()
        p.setup()
        return p.do_step(0.0, 0.01)
    if name == "h_max_tiny":
        p.init({"solver.h_max": 1e-300})
        return p.do_step(0.0, 0.01)
    if name == "negative_mass":
        p.instantiate()
        p.setup()
        return p.set_real(["link1.mass"], [-1.0])
    if name == "bad_inertia":
        p.instantiate()
        p.setup()
        p.set_real(["link1.I[1,1]", "link1.I[2,2]", "link1.I[3,3]"], [1.0, 1.0, 5.0])
        p.raw("fmi2EnterInitializationMode", ctypes.c_void_p(p.c))
        s = p.raw("fmi2ExitInitializationMode", ctypes.c_void_p(p.c))
        # the instance stays usable: fix the parameter and initialise
        p.set_real(["link1.I[3,3]"], [1.5])
        s2 = p.raw("fmi2ExitInitializationMode", ctypes.c_void_p(p.c))
        return [s, s2, p.do_step(0.0, 0.01)]
    if name in ("random_bytes", "truncated_bytes"):
        p.init()
        blob = p.serialize(p.get_state())
        data = os.urandom(len(blob)) if name == "random_bytes" else blob[: len(blob) // 2]
        s, _st = p.deserialize(data)
        return [s, p.do_step(0.0, 0.01)]
    if name == "state_nan_x":
        p.init()
        s = crafted(p, lambda st: st["sim"]["x"].__setitem__(0, float("nan")))
        return [s, p.get_real(["q1.q"])[0], p.do_step(0.0, 0.01)]
    if name == "state_inf_t":
        p.init()
        s = crafted(p, lambda st: st["sim"].__setitem__("t", float("inf")))
        return [s, p.do_step(0.0, 0.01)]
    if name == "state_short_x":
        p.init()
        s = crafted(p, lambda st: st["sim"].__setitem__("x", st["sim"]["x"][:2]))
        return [s, p.do_step(0.0, 0.01)]
    if name == "state_wrong_types":
        p.init()
        s = crafted(p, lambda st: st.__setitem__("params", "not a dict"))
        return [s, p.do_step(0.0, 0.01)]
    if name == "state_negative_mass":
        p.init()
        s = crafted(p, lambda st: st["params"].__setitem__("link1.mass", -2.0))
        return [s, p.do_step(0.0, 0.01)]
    if name == "foreign_state_pointer":
        p.init()
        junk = ctypes.create_string_buffer(b"\x01" * 256)
        return p.set_state(ctypes.cast(junk, ctypes.c_void_p))
    if name == "exit_without_free":
        p.init()
        p.do_step(0.0, 0.01)
        return "left alive"
    raise SystemExit(f"unknown case {name}")


def main():
    unzip, name = sys.argv[1], sys.argv[2]
    p = Probe(unzip)
    result = case(name, p)
    print(
        json.dumps(
            {"case": name, "statuses": STATUSES, "log": LOG, "result": result},
            default=lambda x: None if x is None else str(x),
            allow_nan=True,
        )
    )
    print("PROBE-SURVIVED", flush=True)
    # instances are deliberately not freed: the host leaves through the normal interpreter exit


if __name__ == "__main__":
    main()
