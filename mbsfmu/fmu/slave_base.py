"""The lifecycle both pythonfmu slaves share (the model's ``slave.MbsfmuSlave``, the PID's
``pid_slave.PidSlave``): the build information read from ``resources/mbsfmu_build.json``,
variable registration, the FMI entry points wrapped by ``protocol.guarded`` (no exception reaches
pythonfmu; failures are logged as errors, which the loader turns into fmi2Error), rejected values
(logged, not applied, remembered until replaced: initialisation fails while any is left), and the
FMU state: get/set checked against the slave's format and GUID, serialised as JSON (floats by
repr, so exact) framed by ``protocol.pack``.

A slave defines ``STATE_FORMAT`` and ``KIND`` (what a foreign state belongs to) and the hooks
``start`` (fmi2SetupExperiment), ``initialize`` (fmi2ExitInitializationMode, after the rejected
values are checked), ``step`` (fmi2DoStep, after the call order is checked), ``state``/``restore``
(the FMU state's payload), and optionally ``read``/``write`` (default: pythonfmu's registered
getters and setters).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pythonfmu import Fmi2Slave
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Integer, Real

from .description import BUILD_INFO
from .protocol import STATE_TAG, BadState, Failed, guarded, pack, unpack
from .variables import FmuVariable


class SlaveBase(Fmi2Slave):
    """An FMI 2.0 Co-Simulation slave of an mbsfmu FMU (see the module docstring)."""

    STATE_FORMAT = "mbsfmu-fmustate/0"
    KIND = "model"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        info = json.loads((Path(self.resources) / BUILD_INFO).read_text(encoding="utf-8"))
        self._info = info
        self.modelName = info["model_identifier"]
        self.guid = info["guid"]
        self.version = info["engine_version"]
        self.description = info["description"]
        self.status_by_log = bool(info.get("loader", False))  # see protocol.guarded
        self._initialized = False
        self._terminated = False
        self._rejected: dict[str, str] = {}

    def register(self, v: FmuVariable, getter, setter) -> None:
        """Register ``v`` with pythonfmu (Real or Integer); ``setter`` only where v is settable."""
        kw = dict(
            causality=Fmi2Causality[v.causality],
            variability=Fmi2Variability[v.variability],
            description=v.description,
            getter=getter,
            setter=setter if v.settable else None,
        )
        if v.initial is not None:
            kw["initial"] = Fmi2Initial[v.initial]
        self.register_variable((Real if v.type == "Real" else Integer)(v.name, **kw), nested=False)

    # ---- failures ---------------------------------------------------------------------------
    def fail(self, msg: str, status=Fmi2Status.error):
        """Log msg and raise Failed (see protocol.guarded)."""
        self.log(msg, status)
        raise Failed(msg)

    def reject(self, name: str, problem: str) -> None:
        """A value of ``name`` refused: logged as an error (fmi2Error with the loader), not applied,
        remembered until ``accept(name)``."""
        self._rejected[name] = problem
        self.log(f"{problem}; {name} keeps its previous value", Fmi2Status.error)

    def accept(self, name: str) -> None:
        """A valid value of ``name``: it replaces a rejected one."""
        self._rejected.pop(name, None)

    def rejected_text(self) -> str:
        return "; ".join(self._rejected.values())

    def fixed_problem(self, v: FmuVariable) -> str | None:
        """Why v cannot be set now: a parameter after initialisation (FMI 2.0 fixed variability)."""
        if v.causality == "parameter" and self._initialized:
            return f"parameter {v.name} is fixed: set it before fmi2ExitInitializationMode"
        return None

    # ---- FMI lifecycle ----------------------------------------------------------------------
    @guarded(None)
    def setup_experiment(self, start_time: float = 0.0, stop_time=None, tolerance=None):
        self.start(start_time)

    @guarded(None)
    def enter_initialization_mode(self, *args):
        pass

    @guarded(None)
    def exit_initialization_mode(self):
        if self._rejected:
            self.fail(f"cannot initialise: rejected values were not replaced: {self.rejected_text()}")
        self.initialize()
        self._initialized = True

    @guarded(False)
    def do_step(self, current_time: float, step_size: float) -> bool:
        # refusals are logged as errors (fmi2Error with the loader; fmi2Discard from pythonfmu alone)
        if not self._initialized or self._terminated:
            when = "after fmi2Terminate" if self._terminated else "before fmi2ExitInitializationMode"
            self.log(f"fmi2DoStep called {when}: step refused", Fmi2Status.error)
            return False
        return self.step(current_time, step_size)

    @guarded(None)
    def terminate(self):
        self._terminated = True

    def start(self, start_time: float) -> None:
        """fmi2SetupExperiment's start time (default: ignored)."""

    def initialize(self) -> None:
        """fmi2ExitInitializationMode: build what the steps need (Failed/an exception refuses it)."""

    def step(self, t: float, h: float) -> bool:
        """fmi2DoStep(t, h) of an initialised instance: True done, False discarded."""
        raise NotImplementedError

    # ---- values -----------------------------------------------------------------------------
    @guarded(lambda self, vrs: [math.nan] * len(vrs))
    def get_real(self, vrs):
        return self.read(vrs, "Real")

    @guarded(lambda self, vrs: [0] * len(vrs))
    def get_integer(self, vrs):
        return self.read(vrs, "Integer")

    @guarded(None)
    def set_real(self, vrs, values):
        self.write(vrs, values, "Real")

    @guarded(None)
    def set_integer(self, vrs, values):
        self.write(vrs, values, "Integer")

    def read(self, vrs, api: str) -> list:
        """The values of ``vrs`` (api: "Real" or "Integer"); default: pythonfmu's getters."""
        return Fmi2Slave.get_real(self, vrs) if api == "Real" else Fmi2Slave.get_integer(self, vrs)

    def write(self, vrs, values, api: str) -> None:
        """Set ``vrs`` to ``values``; default: pythonfmu's setters."""
        if api == "Real":
            Fmi2Slave.set_real(self, vrs, values)
        else:
            Fmi2Slave.set_integer(self, vrs, values)

    # ---- FMU state --------------------------------------------------------------------------
    @guarded(None)
    def _get_fmu_state(self):
        return {"format": self.STATE_FORMAT, "guid": str(self.guid), **self.state()}

    @guarded(None)
    def _set_fmu_state(self, state):
        if isinstance(state, dict) and state.get("format") == "invalid":
            self.fail(f"fmi2SetFMUstate: {state.get('why')}")
        if (
            not isinstance(state, dict)
            or state.get("format") != self.STATE_FORMAT
            or state.get("guid") != str(self.guid)
        ):
            self.fail(f"fmi2SetFMUstate: not a state of this FMU (different {self.KIND}, build or format)")
        self.restore(state)

    def state(self) -> dict:
        """The FMU state's payload (JSON data), besides format and guid."""
        raise NotImplementedError

    def restore(self, state: dict) -> None:
        """Apply a state of this FMU, checking everything before applying anything (Failed naming
        every problem; the instance keeps its state)."""
        raise NotImplementedError

    @staticmethod
    def _fmu_state_to_bytes(state) -> bytes:
        return pack(state["guid"], json.dumps(state, allow_nan=True).encode("utf-8"))

    @staticmethod
    def _fmu_state_from_bytes(blob: bytes):
        """The state of ``blob``; never raises (a class method: no instance to log with): a blob
        that is not a state gives {"format": "invalid", "why": ...}, refused by fmi2SetFMUstate
        (the loader refuses it earlier, in fmi2DeSerializeFMUstate)."""
        try:
            guid = blob[len(STATE_TAG) : len(STATE_TAG) + 36].decode("ascii")
            return json.loads(unpack(blob, guid).decode("utf-8"))
        except (BadState, ValueError, UnicodeDecodeError) as e:
            return {"format": "invalid", "why": f"not a state of this FMU: {e}"}


__all__ = ["SlaveBase"]
