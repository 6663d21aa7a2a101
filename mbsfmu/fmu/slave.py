"""The pythonfmu slave: one FMI 2.0 Co-Simulation instance running a Simulator.

The FMU's generated slave module subclasses ``MbsfmuSlave`` (on ``slave_base.SlaveBase``, the
lifecycle it shares with the PID FMU's slave) (pythonfmu finds the class by the
text ``class <name>(Fmi2Slave):``, so the module imports this class under that name). Its
resources hold ``mbsfmu_build.json`` (written by ``build_fmu``), the model file and this engine.

Lifecycle (FMI 2.0 CS): parameters (solver settings, gravity, mass properties, wheel inertias,
joint springs) can be set until fmi2ExitInitializationMode, where the Model is rebuilt from the
file's ModelSpec with the new values (a ModelError is logged with every problem and the call
fails with fmi2Error; the instance stays in initialization mode so the parameters can be fixed).
``do_step(t, dt)`` runs ``Simulator.step(dt)`` with the inputs held (any dt > 0: the engine
sub-steps); numerical trouble (SimulationError: non-finite state, failed step) is logged with its
reason and discards the step (``False`` -> fmi2Discard), the state staying at the start of the
step so the host can retry with a smaller step or roll back. A step that needs more than
MAX_SUBSTEPS internal steps (ceil(dt / h_max)) is discarded with the reason, never started.

Failures: every entry point is ``protocol.guarded`` (``SlaveBase``): no exception reaches pythonfmu
(which would answer fmi2Fatal); the reason is logged as an error, which the loader turns into
fmi2Error.

Rejected values: on Linux the FMU's loader binary rejects non-finite, out-of-range and
wrongly-timed fmi2Set* calls itself (fmi2Error, the variable keeps its value). Where the pythonfmu
binary is used directly (no loader), ``set_real``/``set_integer`` here do the same checks: a
rejected value is logged as an error and not applied, and every later ``do_step`` is discarded
(and fmi2ExitInitializationMode fails) until the variable receives a valid value.

FMU state (fmi2GetFMUstate / fmi2SerializeFMUstate): the Simulator's full SimState (t, x incl.
the input and damper work, u, step statistics and the last step size), the parameter values,
the drift references and the instance's flags; serialised as JSON (floats by repr, so exact)
framed by ``protocol.pack``. fmi2SetFMUstate checks everything before applying anything (types,
sizes, finite values, unit quaternions, parameter bounds, a buildable model): a state that fails
is refused with every problem listed and the instance keeps its state.

Backend: the Simulator runs the numpy reference (``backend="python"``): the FMU never imports
numba (whose JIT and LLVM runtime an FMU host does not expect: compile waits, exit-time aborts).
"""

from __future__ import annotations

import math
from dataclasses import fields
from pathlib import Path

import numpy as np
from pythonfmu.enums import Fmi2Status

from .. import load_model
from ..engine.model import Model
from ..errors import MbsError
from ..sim.outputs import angular_momentum_scale, energy_scale
from ..sim.simulator import SimState, Simulator
from .description import BUILD_INFO
from .slave_base import SlaveBase
from .variables import INT_MAX, METHODS, apply_parameters, relative_drift, variable_table

STATE_FORMAT = "mbsfmu-fmustate/2"
TIME_RTOL = 1e-9  # a communication point further than this (relative) from the engine's time is reported
MAX_SUBSTEPS = 10**7  # internal steps one communication step may take (beyond: fmi2Discard, never started)
BACKEND = "python"  # the numpy reference engine: no numba in an FMU host
QUAT_TOL = 1e-9  # |quaternion| - 1 accepted in a set state (the engine normalises to ~eps each step)


class FmuRejection(MbsError):
    """A value, state or parameter set that the FMU refuses; the message says why."""


class MbsfmuSlave(SlaveBase):
    """FMI 2.0 Co-Simulation slave of one mbsfmu model (see the module docstring)."""

    STATE_FORMAT = STATE_FORMAT
    KIND = "model"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        info = self._info
        model = load_model(Path(self.resources) / info["model_file"], floating_base=info.get("floating_base", False))
        for note in model.notes:  # what the reader left out or repaired (as the native FMU logs them)
            self.log(f"model note: {note}")
        self._base_spec = model.spec
        self._source = info["model_source"]
        solver = info["solver"]
        self._table = variable_table(
            model, info["naming"], solver["method"], solver["h_max"], solver["rtol"], solver["atol"]
        )
        self.default_experiment = _default_experiment(solver)
        self._params = {v.source[1]: v.start for v in self._table if v.source[0] == "param"}
        self._param_names = {v.source[1]: v.name for v in self._table if v.source[0] == "param"}
        self._param_vars = {v.name: v for v in self._table if v.source[0] == "param"}
        self._sim = Simulator(
            model,
            integrator=solver["method"],
            h_max=solver["h_max"],
            rtol=solver["rtol"],
            atol=solver["atol"],
            backend=BACKEND,
        )
        self._dirty = False  # a parameter changed since the Simulator was built
        self._ref = None  # drift references at fmi2ExitInitializationMode: see _reference
        self._n_discards = 0
        self._rev = 0  # state revision: outputs cached per revision
        self._urev = 0  # input revision (qdd depends on the inputs)
        self._inv = (-1, None)
        self._hscale = (-1, None)
        self._qdd = (-1, -1, None)
        self._bad_params = None  # the message of a parameter set that does not build
        self._time_warned = False
        for vr, v in enumerate(self._table):
            self.register(v, getter=lambda vr=vr: self._get(vr), setter=lambda x, vr=vr: self._set(vr, x))

    # ---- FMI lifecycle (SlaveBase's entry points call these) ----------------------------
    def start(self, start_time: float) -> None:
        if not math.isfinite(start_time):  # logged as an error: fmi2Error with the loader
            self.log(
                f"fmi2SetupExperiment: startTime = {start_time}: must be finite; the time stays {self._sim.t!r} s",
                Fmi2Status.error,
            )
            return
        self._sim.t = float(start_time)

    def initialize(self) -> None:
        try:
            self._rebuild()
        except MbsError as e:
            self.fail(
                f"cannot initialise with these parameters (fmi2Error; set valid values and call "
                f"fmi2ExitInitializationMode again): {e}"
            )
        self._ref = self._reference()

    def step(self, current_time: float, step_size: float) -> bool:
        if not (math.isfinite(current_time) and math.isfinite(step_size) and step_size > 0):
            self.log(
                f"fmi2DoStep(t = {current_time!r}, dt = {step_size!r}): t must be finite and dt finite and > 0",
                Fmi2Status.error,
            )
            return False
        if self._rejected:
            self._n_discards += 1
            self.log(
                f"step from t = {current_time:.9g} s discarded: rejected values were not replaced: "
                f"{self.rejected_text()}",
                Fmi2Status.discard,
            )
            return False
        sim = self._sim
        if sim.h_max > 0 and step_size / sim.h_max > MAX_SUBSTEPS:
            self._n_discards += 1
            self.log(
                f"step from t = {current_time:.9g} s by {step_size:.9g} s discarded: it needs "
                f"{step_size / sim.h_max:.3g} internal steps of solver.h_max = {sim.h_max:.9g} s (at most "
                f"{MAX_SUBSTEPS:.0e} per communication step): take smaller communication steps or a larger "
                "solver.h_max",
                Fmi2Status.discard,
            )
            return False
        if abs(current_time - sim.t) > TIME_RTOL * max(1.0, abs(sim.t)) and not self._time_warned:
            self._time_warned = True
            self.log(
                f"communication point t = {current_time:.17g} s differs from the FMU's time {sim.t:.17g} s: "
                "continuing from the FMU's state at the host's time (reported once)",
                Fmi2Status.warning,
            )
        sim.t = float(current_time)
        try:
            sim.step(float(step_size))
        except MbsError as e:
            self._n_discards += 1
            self._rev += 1  # statistics changed
            self.log(f"step discarded: {e}", Fmi2Status.discard)
            return False
        self._rev += 1
        return True

    # ---- values -------------------------------------------------------------------------
    def read(self, vrs, api: str) -> list:
        cast = float if api == "Real" else int
        return [cast(self._get(vr, api)) for vr in vrs]

    def write(self, vrs, values, api: str) -> None:
        for vr, x in zip(vrs, values):
            self._set(vr, x, api)

    def _variable(self, vr: int, api: str | None):
        if not (isinstance(vr, int) and 0 <= vr < len(self._table)):
            self.fail(f"value reference {vr} does not exist (the FMU has value references 0 to {len(self._table) - 1})")
        v = self._table[vr]
        if api is not None and (v.type == "Real") != (api == "Real"):
            self.fail(f"{v.name} (value reference {vr}) is of type {v.type}, not {api}")
        return v

    def _get(self, vr: int, api: str | None = None):
        v = self._variable(vr, api)
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
        v = self._variable(vr, api)
        problem = None
        if not v.settable:
            problem = f"{v.name} is an {v.causality} and cannot be set"
        elif self.fixed_problem(v):
            problem = self.fixed_problem(v)
        elif not math.isfinite(x):
            problem = f"{v.name} = {x} rejected: values must be finite"
        elif (v.min is not None and x < v.min) or (v.max is not None and x > v.max):
            problem = f"{v.name} = {x!r} rejected: {_range_text(v)}"
        if problem is not None:  # logged as an error (fmi2Error with the loader), not applied
            self.reject(v.name, problem)
            return
        self.accept(v.name)
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

    def _h_scale(self) -> float:
        """angular_momentum_scale at the current state (cached per state revision)."""
        rev, scale = self._hscale
        if rev != self._rev:
            scale = angular_momentum_scale(self._sim.model, self._sim.kinematics())
            self._hscale = (self._rev, scale)
        return scale

    def _reference(self) -> tuple:
        """(H_sys, E, KE, PE, H scale) at the current state: the drift references t0."""
        inv = self._invariants()
        return (inv.H_sys.copy(), float(inv.E), float(inv.KE), float(inv.PE), self._h_scale())

    def _qdd_values(self):
        rev, urev, qdd = self._qdd
        if rev != self._rev or urev != self._urev:
            sim = self._sim
            n_rhs = sim.n_rhs
            with np.errstate(all="ignore"):
                qdd = sim.rhs(sim.x)[sim.model.nq : sim.model.nq + sim.model.nv]
            sim.n_rhs = n_rhs  # an output evaluation is not solver work
            self._qdd = (self._rev, self._urev, qdd)
        return qdd

    def _drift(self, what: str) -> float:
        """drift.* outputs (definitions in their variable descriptions, variables.py)."""
        inv = self._invariants()
        H0, E0, KE0, PE0, S0 = self._ref if self._ref is not None else self._reference()
        if what in ("H_abs", "H_rel"):
            dH = float(np.linalg.norm(inv.H_sys - H0))
            return dH if what == "H_abs" else relative_drift(dH, max(S0, self._h_scale()))
        W_in, W_diss = self._sim.work
        dE = (inv.E - W_in - W_diss) - E0
        if what == "E_abs":
            return dE
        kin = self._sim.kinematics()
        S_E = energy_scale(self._sim.model, kin, inv.KE, self._sim.spring_energy(kin))
        return relative_drift(dE, max(KE0, abs(inv.PE - PE0), S_E + abs(W_in) + abs(W_diss)))

    # ---- parameters ---------------------------------------------------------------------
    def _simulator(self, p: dict) -> Simulator:
        """A Simulator of the model with parameters p (ModelError/InputError listing the problems)."""
        model = Model(apply_parameters(self._base_spec, p), source=self._source)
        return Simulator(
            model,
            integrator=METHODS[int(p[("solver", "method")]) - 1],
            h_max=p[("solver", "h_max")],
            rtol=p[("solver", "rtol")],
            atol=p[("solver", "atol")],
            backend=BACKEND,
        )

    def _rebuild(self) -> None:
        """Rebuild Model and Simulator if a parameter changed (keeps t, state and inputs only when
        the state sizes match, i.e. always: parameters do not change the topology)."""
        if not self._dirty:
            return
        old = self._sim
        sim = self._simulator(self._params)
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
                self.log(
                    f"these parameters do not make a valid model (outputs keep the previous values): {e}",
                    Fmi2Status.warning,
                )

    # ---- FMU state (SlaveBase's fmi2GetFMUstate/fmi2SetFMUstate call these) ----------------
    def state(self) -> dict:
        s = self._sim.get_state()
        ref = None if self._ref is None else [*map(float, self._ref[0]), *map(float, self._ref[1:])]
        return {
            "sim": {f.name: _plain(getattr(s, f.name)) for f in fields(s)},
            "params": {self._param_names[k]: v for k, v in self._params.items()},
            "initialized": self._initialized,
            "terminated": self._terminated,
            "ref": ref,
            "n_discards": self._n_discards,
            "rejected": dict(self._rejected),
        }

    def restore(self, state: dict) -> None:
        params, sim, sim_state, rest = self._check_state(state)
        self._params, self._sim, self._dirty, self._bad_params = params, sim, False, None
        sim.set_state(sim_state)
        ref, self._initialized, self._terminated, self._n_discards, self._rejected = rest
        self._ref = None if ref is None else (np.array(ref[:3], dtype=float), *map(float, ref[3:]))
        self._rev += 1
        self._urev += 1

    def _check_state(self, state):
        """Everything fmi2SetFMUstate applies (format and GUID checked by SlaveBase), checked: Failed
        listing every problem."""
        problems = []
        params = {}
        given = state.get("params")
        if not isinstance(given, dict):
            problems.append("params: expected a mapping of parameter names to numbers")
            given = {}
        elif set(given) != set(self._param_vars):
            missing, extra = set(self._param_vars) - set(given), set(given) - set(self._param_vars)
            problems.append(
                f"params: {'missing ' + ', '.join(sorted(missing)) if missing else ''}"
                f"{'; ' if missing and extra else ''}"
                f"{'unknown ' + ', '.join(sorted(extra)) if extra else ''}"
            )
        for name, x in given.items():
            v = self._param_vars.get(name)
            if v is None:
                continue
            if not _is_number(x) or (v.type != "Real" and x != int(x)):
                problems.append(f"params.{name} = {x!r}: expected a {'number' if v.type == 'Real' else 'whole number'}")
            elif not math.isfinite(x):
                problems.append(f"params.{name} = {x!r}: must be finite")
            elif (v.min is not None and x < v.min) or (v.max is not None and x > v.max):
                problems.append(f"params.{name} = {x!r}: {_range_text(v)}")
            else:
                params[v.source[1]] = int(x) if v.type != "Real" else float(x)
        current = self._sim.get_state()
        sim = state.get("sim") if isinstance(state.get("sim"), dict) else {}
        if not sim:
            problems.append("sim: expected a mapping")
        values = {}
        for f in fields(current):
            cur, x = getattr(current, f.name), sim.get(f.name)
            if isinstance(cur, np.ndarray):
                if not (isinstance(x, list) and all(_is_number(e) for e in x)):
                    problems.append(f"sim.{f.name}: expected a list of {cur.size} numbers")
                elif len(x) != cur.size:
                    problems.append(f"sim.{f.name}: {len(x)} numbers, the model has {cur.size}")
                elif not all(math.isfinite(e) for e in x):
                    bad = [k for k, e in enumerate(x) if not math.isfinite(e)][:5]
                    problems.append(f"sim.{f.name}: non-finite entries at {bad}")
                else:
                    values[f.name] = np.array(x, dtype=float)
            elif f.name in ("n_steps", "n_rhs"):
                if not (_is_number(x) and x == int(x) and x >= 0):
                    problems.append(f"sim.{f.name} = {x!r}: expected a whole number >= 0")
                else:
                    values[f.name] = int(x)
            else:
                if not (_is_number(x) and math.isfinite(x) and (f.name == "t" or x >= 0)):
                    problems.append(f"sim.{f.name} = {x!r}: expected a finite number{'' if f.name == 't' else ' >= 0'}")
                else:
                    values[f.name] = float(x)
        if "x" in values:
            for _, sl in self._sim.model.quaternions:
                n = float(np.linalg.norm(values["x"][sl]))
                if abs(n - 1.0) > QUAT_TOL:
                    problems.append(
                        f"sim.x: the quaternion at entries {sl.start}..{sl.stop - 1} has norm {n:.17g}, "
                        f"not 1 (within {QUAT_TOL:g})"
                    )
        ref = state.get("ref")
        if ref is not None and not (
            isinstance(ref, list) and len(ref) == 7 and all(_is_number(e) and math.isfinite(e) for e in ref)
        ):
            problems.append("ref: expected null or 7 finite numbers (H_sys[3], E, KE, PE, H scale)")
        flags = [state.get("initialized"), state.get("terminated")]
        if not all(isinstance(b, bool) for b in flags):
            problems.append("initialized, terminated: expected true or false")
        n_disc = state.get("n_discards")
        if not (_is_number(n_disc) and n_disc == int(n_disc) and n_disc >= 0):
            problems.append(f"n_discards = {n_disc!r}: expected a whole number >= 0")
        rejected = state.get("rejected")
        if not (
            isinstance(rejected, dict) and all(isinstance(k, str) and isinstance(e, str) for k, e in rejected.items())
        ):
            problems.append("rejected: expected a mapping of names to messages")
        new_sim = None
        if not problems:
            try:
                new_sim = self._simulator(params)
            except MbsError as e:
                problems.append(f"params do not make a valid model: {e}")
        if problems:
            self.fail(
                f"fmi2SetFMUstate: state refused ({len(problems)} problem(s)); the instance keeps its "
                f"state: " + "; ".join(problems)
            )
        rest = (ref, flags[0], flags[1], int(n_disc), dict(rejected))
        return params, new_sim, SimState(**values), rest


def _plain(value):
    """A SimState field as JSON data (arrays as lists of Python floats: repr round-trips exactly)."""
    return value.tolist() if isinstance(value, np.ndarray) else value


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _range_text(v) -> str:
    """The declared bounds of v that a value violates, as numbers: "outside [0, 1]", "below the
    minimum 0", "above the maximum 2"."""
    if v.min is not None and v.max is not None:
        return f"outside [{v.min!r}, {v.max!r}]"
    return f"below the minimum {v.min!r}" if v.min is not None else f"above the maximum {v.max!r}"


def _default_experiment(solver: dict):
    from pythonfmu.default_experiment import DefaultExperiment

    return DefaultExperiment(start_time=0.0, stop_time=10.0, step_size=solver["h_max"] or 1e-3)


__all__ = ["BUILD_INFO", "FmuRejection", "MbsfmuSlave"]
