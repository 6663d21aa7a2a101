"""The pythonfmu slave: one FMI 2.0 Co-Simulation instance running a Simulator.

The FMU's generated slave module subclasses ``MbsfmuSlave`` (pythonfmu finds the class by the
text ``class <name>(Fmi2Slave):``, so the module imports this class under that name). Its
resources hold ``mbsfmu_build.json`` (written by ``build_fmu``), the model file and this engine.

Lifecycle (FMI 2.0 CS): parameters (solver settings, gravity, mass properties, wheel inertias,
joint springs) can be set until fmi2ExitInitializationMode, where the Model is rebuilt from the
file's ModelSpec with the new values (ModelError -> logged, fmi2Fatal through pythonfmu).
``do_step(t, dt)`` runs ``Simulator.step(dt)`` with the inputs held (any dt > 0: the engine
sub-steps); numerical trouble (SimulationError: non-finite state, failed step) is logged with its
reason and discards the step (``False`` -> fmi2Discard), the state staying at the start of the
step so the host can retry with a smaller step or roll back.

Rejected values: on Linux the FMU's loader binary rejects non-finite, out-of-range and
wrongly-timed fmi2Set* calls itself (fmi2Error, the variable keeps its value). Where the pythonfmu
binary is used directly (no loader), ``set_real``/``set_integer`` here do the same checks: a
rejected value is logged as an error and not applied, and every later ``do_step`` is discarded
(and fmi2ExitInitializationMode fails) until the variable receives a valid value.

FMU state (fmi2GetFMUstate / fmi2SerializeFMUstate): the Simulator's full SimState (t, x incl.
the input and damper work, u, step statistics and the last step size), the parameter values,
the drift references and the instance's flags; serialised as JSON (floats by repr, so exact).
"""
from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path

import numpy as np
from pythonfmu import Fmi2Slave
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Integer, Real

from .. import load_model
from ..errors import MbsError
from ..multibody import Model
from ..simulator import SimState, Simulator
from .variables import E_FLOOR, H_FLOOR, INT_MAX, METHODS, apply_parameters, variable_table

BUILD_INFO = "mbsfmu_build.json"
STATE_FORMAT = "mbsfmu-fmustate/1"
TIME_RTOL = 1e-9   # a communication point further than this (relative) from the engine's time is reported


class FmuRejection(MbsError):
    """A value, state or parameter set that the FMU refuses; the message says why."""


class MbsfmuSlave(Fmi2Slave):
    """FMI 2.0 Co-Simulation slave of one mbsfmu model (see the module docstring)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        res = Path(self.resources)
        info = json.loads((res / BUILD_INFO).read_text(encoding="utf-8"))
        self._info = info
        model = load_model(res / info["model_file"])
        self._base_spec = model.spec
        self._source = info["model_source"]
        solver = info["solver"]
        self._table = variable_table(model, info["naming"], solver["method"], solver["h_max"], solver["rtol"],
                                     solver["atol"])
        self.modelName = info["model_identifier"]
        self.guid = info["guid"]
        self.version = info["engine_version"]
        self.description = info["description"]
        self.default_experiment = _default_experiment(solver)
        self._params = {v.source[1]: v.start for v in self._table if v.source[0] == "param"}
        self._param_names = {v.source[1]: v.name for v in self._table if v.source[0] == "param"}
        self._sim = Simulator(model, integrator=solver["method"], h_max=solver["h_max"], rtol=solver["rtol"],
                              atol=solver["atol"])
        self._dirty = False              # a parameter changed since the Simulator was built
        self._initialized = False
        self._ref = None                 # (H_sys(t0), E(t0)) from fmi2ExitInitializationMode
        self._n_discards = 0
        self._rejected: dict[str, str] = {}
        self._rev = 0                    # state revision: outputs cached per revision
        self._urev = 0                   # input revision (qdd depends on the inputs)
        self._inv = (-1, None)
        self._qdd = (-1, -1, None)
        self._bad_params = None          # the message of a parameter set that does not build
        self._time_warned = False
        for vr, v in enumerate(self._table):
            self._register(vr, v)

    def _register(self, vr: int, v) -> None:
        kw = dict(causality=Fmi2Causality[v.causality], variability=Fmi2Variability[v.variability],
                  description=v.description, getter=lambda: self._get(vr),
                  setter=(lambda x: self._set(vr, x)) if v.settable else None)
        if v.initial is not None:
            kw["initial"] = Fmi2Initial[v.initial]
        if v.type == "Real":
            self.register_variable(Real(v.name, **kw), nested=False)
        else:
            self.register_variable(Integer(v.name, **kw), nested=False)

    # ---- FMI lifecycle ------------------------------------------------------------------
    def setup_experiment(self, start_time: float = 0.0, stop_time=None, tolerance=None):
        self._sim.t = float(start_time)

    def enter_initialization_mode(self, *args):
        pass

    def exit_initialization_mode(self):
        if self._rejected:
            msg = f"cannot initialise: rejected values were not replaced: {'; '.join(self._rejected.values())}"
            self.log(msg, Fmi2Status.error)
            raise FmuRejection(msg)
        try:
            self._rebuild()
        except MbsError as e:
            self.log(f"cannot initialise with these parameters: {e}", Fmi2Status.error)
            raise
        inv = self._invariants()
        self._ref = (inv.H_sys.copy(), float(inv.E))
        self._initialized = True

    def do_step(self, current_time: float, step_size: float) -> bool:
        if not self._initialized:
            self.log("fmi2DoStep called before fmi2ExitInitializationMode: step discarded", Fmi2Status.error)
            return False
        if self._rejected:
            self._n_discards += 1
            self.log(f"step from t = {current_time:.9g} s discarded: rejected values were not replaced: "
                     f"{'; '.join(self._rejected.values())}", Fmi2Status.discard)
            return False
        sim = self._sim
        if abs(current_time - sim.t) > TIME_RTOL * max(1.0, abs(sim.t)) and not self._time_warned:
            self._time_warned = True
            self.log(f"communication point t = {current_time:.17g} s differs from the FMU's time {sim.t:.17g} s: "
                     "continuing from the FMU's state at the host's time (reported once)", Fmi2Status.warning)
        sim.t = float(current_time)
        try:
            sim.step(float(step_size))
        except MbsError as e:
            self._n_discards += 1
            self._rev += 1           # statistics changed
            self.log(f"step discarded: {e}", Fmi2Status.discard)
            return False
        self._rev += 1
        return True

    def terminate(self):
        pass

    # ---- values -------------------------------------------------------------------------
    def get_real(self, vrs):
        return [float(self._get(vr, "Real")) for vr in vrs]

    def get_integer(self, vrs):
        return [int(self._get(vr, "Integer")) for vr in vrs]

    def set_real(self, vrs, values):
        for vr, x in zip(vrs, values):
            self._set(vr, x, "Real")

    def set_integer(self, vrs, values):
        for vr, x in zip(vrs, values):
            self._set(vr, x, "Integer")

    def _get(self, vr: int, api: str | None = None):
        v = self._table[vr]
        if api is not None and (v.type == "Real") != (api == "Real"):
            raise TypeError(f"{v.name} (value reference {vr}) is of type {v.type}, not {api}")
        kind, key = v.source[0], v.source[1:]
        if kind == "param":
            return self._params[key[0]]
        self._rebuild_quietly()
        sim = self._sim
        if kind == "x":
            return sim.x[key[0]]
        if kind == "input":
            return sim.u[key[0]]
        if kind == "qdd":
            return self._qdd_values()[key[0]]
        if kind == "inv":
            inv = self._invariants()
            if key[0] in ("KE", "PE", "E"):
                return getattr(inv, key[0])
            return getattr(inv, key[0])[key[1]]
        if kind == "energy":
            return sim.work[0 if key[0] == "W_in" else 1]
        if kind == "drift":
            return self._drift(key[0])
        if kind == "stat":
            if key[0] == "n_discards":
                return min(self._n_discards, INT_MAX)
            if key[0] == "h_last":
                return sim.h_last
            return min(getattr(sim, key[0]), INT_MAX)
        raise KeyError(v.source)

    def _set(self, vr: int, x, api: str | None = None) -> None:
        v = self._table[vr]
        if api is not None and (v.type == "Real") != (api == "Real"):
            raise TypeError(f"{v.name} (value reference {vr}) is of type {v.type}, not {api}")
        problem = None
        if not v.settable:
            problem = f"{v.name} is an {v.causality} and cannot be set"
        elif v.causality == "parameter" and self._initialized:
            problem = f"parameter {v.name} is fixed: set it before fmi2ExitInitializationMode"
        elif not math.isfinite(x):
            problem = f"{v.name} = {x} rejected: values must be finite"
        elif (v.min is not None and x < v.min) or (v.max is not None and x > v.max):
            problem = f"{v.name} = {x!r} rejected: outside [{v.min}, {v.max}]"
        if problem is not None:
            self._rejected[v.name] = problem
            self.log(f"{problem}; {v.name} keeps its previous value", Fmi2Status.error)
            return
        self._rejected.pop(v.name, None)
        kind, key = v.source[0], v.source[1]
        if kind == "input":
            self._sim.u[key] = float(x)
            self._urev += 1
        else:
            value = int(x) if v.type != "Real" else float(x)
            if value != self._params[key]:
                self._params[key] = value
                self._dirty = True

    # ---- outputs ------------------------------------------------------------------------
    def _invariants(self):
        rev, inv = self._inv
        if rev != self._rev:
            inv = self._sim.invariants()
            self._inv = (self._rev, inv)
        return inv

    def _qdd_values(self):
        rev, urev, qdd = self._qdd
        if rev != self._rev or urev != self._urev:
            sim = self._sim
            n_rhs = sim.n_rhs
            with np.errstate(all="ignore"):
                qdd = sim.rhs(sim.x)[sim.model.nq: sim.model.nq + sim.model.nv]
            sim.n_rhs = n_rhs        # an output evaluation is not solver work
            self._qdd = (self._rev, self._urev, qdd)
        return qdd

    def _drift(self, what: str) -> float:
        inv = self._invariants()
        H0, E0 = self._ref if self._ref is not None else (inv.H_sys, inv.E)
        if what in ("H_abs", "H_rel"):
            dH = float(np.linalg.norm(inv.H_sys - H0))
            return dH if what == "H_abs" else dH / max(float(np.linalg.norm(H0)), H_FLOOR)
        W_in, W_diss = self._sim.work
        dE = (inv.E - W_in - W_diss) - E0
        return dE if what == "E_abs" else abs(dE) / max(abs(E0), E_FLOOR)

    # ---- parameters ---------------------------------------------------------------------
    def _rebuild(self) -> None:
        """Rebuild Model and Simulator if a parameter changed (keeps t, state and inputs only when
        the state sizes match, i.e. always: parameters do not change the topology)."""
        if not self._dirty:
            return
        p = self._params
        model = Model(apply_parameters(self._base_spec, p), source=self._source)
        old = self._sim
        sim = Simulator(model, integrator=METHODS[int(p[("solver", "method")]) - 1], h_max=p[("solver", "h_max")],
                        rtol=p[("solver", "rtol")], atol=p[("solver", "atol")])
        sim.t, sim.u = old.t, old.u.copy()
        self._sim = sim
        self._dirty = False
        self._bad_params = None
        self._rev += 1

    def _rebuild_quietly(self) -> None:
        """Before initialisation outputs follow the parameters; a parameter set that does not build
        is logged once and the outputs keep the last valid model's values."""
        if not self._dirty:
            return
        try:
            self._rebuild()
        except MbsError as e:
            if str(e) != self._bad_params:
                self._bad_params = str(e)
                self.log(f"these parameters do not make a valid model (outputs keep the previous values): {e}",
                         Fmi2Status.warning)

    # ---- FMU state ----------------------------------------------------------------------
    def _get_fmu_state(self):
        s = self._sim.get_state()
        ref = None if self._ref is None else [*map(float, self._ref[0]), float(self._ref[1])]
        return {"format": STATE_FORMAT, "guid": str(self.guid),
                "sim": {f.name: _plain(getattr(s, f.name)) for f in fields(s)},
                "params": {self._param_names[k]: v for k, v in self._params.items()},
                "initialized": self._initialized, "ref": ref, "n_discards": self._n_discards,
                "rejected": dict(self._rejected)}

    def _set_fmu_state(self, state):
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT or state.get("guid") != str(self.guid):
            msg = "fmi2SetFMUstate: not a state of this FMU (different model or build)"
            self.log(msg, Fmi2Status.error)
            raise FmuRejection(msg)
        by_name = {name: key for key, name in self._param_names.items()}
        current = self._sim.get_state()
        try:
            params = {by_name[name]: value for name, value in state["params"].items()}
            sim_state = {f.name: _like(getattr(current, f.name), state["sim"][f.name]) for f in fields(current)}
        except (KeyError, TypeError, ValueError) as e:
            params, sim_state = {}, {"error": e}
        if set(params) != set(self._params) or "error" in sim_state or sim_state["x"].shape != current.x.shape:
            msg = "fmi2SetFMUstate: the state does not fit this model"
            self.log(msg, Fmi2Status.error)
            raise FmuRejection(msg)
        if params != self._params:
            self._params = params
            self._dirty = True
        self._rebuild()
        self._sim.set_state(SimState(**sim_state))
        ref = state["ref"]
        self._ref = None if ref is None else (np.array(ref[:3], dtype=float), float(ref[3]))
        self._initialized = bool(state["initialized"])
        self._n_discards = int(state["n_discards"])
        self._rejected = dict(state["rejected"])
        self._rev += 1
        self._urev += 1

    @staticmethod
    def _fmu_state_to_bytes(state) -> bytes:
        return json.dumps(state, allow_nan=True).encode("utf-8")

    @staticmethod
    def _fmu_state_from_bytes(state: bytes):
        return json.loads(state.decode("utf-8"))


def _plain(value):
    """A SimState field as JSON data (arrays as lists of Python floats: repr round-trips exactly)."""
    return value.tolist() if isinstance(value, np.ndarray) else value


def _like(current, value):
    """``value`` (JSON data) converted to the type of the current SimState field."""
    if isinstance(current, np.ndarray):
        return np.array(value, dtype=current.dtype)
    if isinstance(current, (bool, int, float)):
        return type(current)(value)
    return value


def _default_experiment(solver: dict):
    from pythonfmu.default_experiment import DefaultExperiment
    return DefaultExperiment(start_time=0.0, stop_time=10.0, step_size=solver["h_max"] or 1e-3)


__all__ = ["BUILD_INFO", "FmuRejection", "MbsfmuSlave"]
