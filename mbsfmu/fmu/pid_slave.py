"""The bundled controller FMU: the scenario's discrete joint PID (``mbsfmu.sim.pid.JointPID``)
as an FMI 2.0 Co-Simulation slave built with pythonfmu (``PidSlave``), and its builder
``build_pid_fmu``.

Variables (structured names; per controlled joint j, in the order of the scenario's
``controller.joints``): parameters (fixed) ``sample_period`` [s] (the PID's dt), ``j.kp``,
``j.ki``, ``j.kd``, ``j.limit`` (start: the scenario's gains; ``limit`` = INF: none); inputs
``j.q`` [rad or m], ``j.qd`` [rad/s or m/s]; outputs ``j.tau`` [N m or N]. The setpoint
schedules (with tables and CSV data already read), the derivative modes and the gains' start
values are in ``resources/mbsfmu_pid.json``.

Output timing: sample and hold, computed in fmi2DoStep. ``fmi2DoStep(t_k, h)`` samples the
inputs set before the call, computes u_k = PID(t_k, q_k, qd_k) (updating the integral and the
previous setpoint exactly once), and from then on the outputs hold u_k; before the first step they
are 0. The outputs never depend on the inputs set at the same communication point (no direct
feedthrough: ModelStructure lists no dependencies). Hence:

- a master that, at each communication point, steps the controller before the model and feeds its
  fresh output to the model (Gauss-Seidel order ctrl -> mbs: ``mbsfmu cosim`` with the fmpy master
  and ``scheme: gauss-seidel``) drives the model with u_k over [t_k, t_k+1]: exactly what
  ``mbsfmu run`` does in-process (the same JointPID code, the same floats: bit for bit);
- a Jacobi master (every FMU stepped from the outputs read at t_k: libcosim's fixed-step algorithm,
  or the fmpy loop with ``scheme: jacobi``) drives it with u_{k-1} (u_{-1} = 0): a one-step delay.

FMU state (get/set/serialize): the inputs, held outputs, parameters, the PID's integral and
previous setpoints (pythonfmu alone would save only the registered variables).
"""
from __future__ import annotations

import json
import math
import tempfile
import uuid
import zipfile
from dataclasses import replace
from pathlib import Path

from pythonfmu import Fmi2Slave
from pythonfmu.enums import Fmi2Causality, Fmi2Initial, Fmi2Status, Fmi2Variability
from pythonfmu.variables import Real

from mbsfmu import __version__
from mbsfmu.sim.pid import JointPID, PIDGains
from mbsfmu.errors import MbsError
from mbsfmu.sim.schedules import Schedule
from .protocol import STATE_TAG, BadState, guarded, pack, unpack
from .variables import FmuVariable, structured_name

BUILD_INFO = "mbsfmu_build.json"
CONFIG = "mbsfmu_pid.json"
CONFIG_FORMAT = "mbsfmu-pid/1"
STATE_FORMAT = "mbsfmu-pid-fmustate/1"
STEP_RTOL = 1e-9     # a communication step further than this (relative) from sample_period is reported once
GAINS = ("kp", "ki", "kd", "limit")


class PidRejection(MbsError):
    """A parameter set or FMU state the controller FMU refuses; the message says why."""


# ---- configuration (resources/mbsfmu_pid.json) ----------------------------------------------------

def pid_config(gains: dict[str, PIDGains], dt: float, units: dict[str, tuple[str, str, str]] | None = None,
               name: str = "pid") -> dict:
    """The JSON document of a controller FMU: {format, name, sample_period, joints: {j: {kp, ki, kd,
    limit, derivative, setpoint: {kind, params}, units: [q, qd, tau]}}}; floats exact (JSON repr)."""
    if not gains:
        raise MbsError("a PID controller FMU needs at least one joint")
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise MbsError(f"sample period must be a positive time [s], got {dt!r}")
    units = units or {}
    joints = {}
    for j, g in gains.items():
        joints[j] = {"kp": float(g.kp), "ki": float(g.ki), "kd": float(g.kd), "limit": float(g.limit),
                     "derivative": g.derivative,
                     "setpoint": {"kind": g.setpoint.kind, "params": g.setpoint.params},
                     "units": list(units.get(j, ("rad", "rad/s", "N.m")))}
    return {"format": CONFIG_FORMAT, "name": name, "sample_period": float(dt), "joints": joints}


def gains_from_config(cfg: dict) -> dict[str, PIDGains]:
    """joint -> PIDGains from a ``pid_config`` document."""
    return {j: PIDGains(kp=g["kp"], ki=g["ki"], kd=g["kd"], limit=g["limit"], derivative=g["derivative"],
                        setpoint=Schedule(g["setpoint"]["kind"], g["setpoint"]["params"]))
            for j, g in cfg["joints"].items()}


def pid_variables(cfg: dict) -> list[FmuVariable]:
    """Every variable of the controller FMU in value-reference order (see the module docstring);
    sources: ("param", key) with key "sample_period" or (joint, gain), ("input", (joint, "q"|"qd")),
    ("output", joint)."""
    out = [FmuVariable("sample_period", "Real", "parameter", "fixed", "exact", "s",
                       "sample period of the PID: dt of the integral and of the setpoint derivative "
                       "(the master's communication step)", ("param", "sample_period"),
                       start=cfg["sample_period"], min=0.0)]
    for j, g in cfg["joints"].items():
        uq, uqd, utau = g["units"]
        rate = uqd.split("/")[0]
        descriptions = {
            "kp": (f"{utau}/{uq}", f"proportional gain of joint {j}"),
            "ki": (None, f"integral gain of joint {j} [{utau}/({uq} s)]"),
            "kd": (f"{utau}.s/{rate}", f"derivative gain of joint {j}"),
            "limit": (utau, f"saturation |tau| <= limit of joint {j} (INF: none)")}
        for gain in GAINS:
            unit, desc = descriptions[gain]
            out.append(FmuVariable(structured_name([j, gain]), "Real", "parameter", "fixed", "exact", unit, desc,
                                   ("param", (j, gain)), start=g[gain], min=0.0))
    for j, g in cfg["joints"].items():
        uq, uqd, _ = g["units"]
        out.append(FmuVariable(structured_name([j, "q"]), "Real", "input", "continuous", None, uq,
                               f"measured position of joint {j}, sampled at each fmi2DoStep",
                               ("input", (j, "q")), start=0.0))
        out.append(FmuVariable(structured_name([j, "qd"]), "Real", "input", "continuous", None, uqd,
                               f"measured rate of joint {j}, sampled at each fmi2DoStep",
                               ("input", (j, "qd")), start=0.0))
    for j, g in cfg["joints"].items():
        out.append(FmuVariable(structured_name([j, "tau"]), "Real", "output", "discrete", "exact", g["units"][2],
                               f"actuator command of joint {j}: u_k computed in the last fmi2DoStep from the "
                               f"inputs at its start, held (0 before the first step)", ("output", j), start=0.0))
    return out


# ---- the slave ------------------------------------------------------------------------------------

class PidSlave(Fmi2Slave):
    """FMI 2.0 Co-Simulation slave of a JointPID (see the module docstring)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        res = Path(self.resources)
        info = json.loads((res / BUILD_INFO).read_text(encoding="utf-8"))
        cfg = json.loads((res / CONFIG).read_text(encoding="utf-8"))
        self.modelName = info["model_identifier"]
        self.guid = info["guid"]
        self.version = info["engine_version"]
        self.description = info["description"]
        self._cfg = cfg
        self._gains = gains_from_config(cfg)
        self._table = pid_variables(cfg)
        self._params = {v.source[1]: v.start for v in self._table if v.source[0] == "param"}
        self._inputs = {v.source[1]: 0.0 for v in self._table if v.source[0] == "input"}
        self._tau = {j: 0.0 for j in self._gains}
        self._pid: JointPID | None = None
        self._initialized = False
        self._rejected: dict[str, str] = {}
        self._step_warned = False
        self.status_by_log = bool(info.get("loader", False))    # see protocol.guarded
        for v in self._table:
            kw = dict(causality=Fmi2Causality[v.causality], variability=Fmi2Variability[v.variability],
                      description=v.description, getter=(lambda v=v: self._get(v)),
                      setter=(lambda x, v=v: self._set(v, x)) if v.settable else None)
            if v.initial is not None:
                kw["initial"] = Fmi2Initial[v.initial]
            self.register_variable(Real(v.name, **kw), nested=False)

    # ---- FMI lifecycle ------------------------------------------------------------------------
    @guarded(None)
    def setup_experiment(self, start_time: float = 0.0, stop_time=None, tolerance=None):
        pass

    @guarded(None)
    def enter_initialization_mode(self, *args):
        pass

    @guarded(None)
    def exit_initialization_mode(self):
        if self._rejected:
            msg = f"cannot initialise: rejected values were not replaced: {'; '.join(self._rejected.values())}"
            self.log(msg, Fmi2Status.error)
            raise PidRejection(msg)
        if not self._params["sample_period"] > 0:
            msg = f"sample_period must be > 0 s, got {self._params['sample_period']!r}"
            self.log(msg, Fmi2Status.error)
            raise PidRejection(msg)
        self._pid = self._make_pid()
        self._initialized = True

    @guarded(False)
    def do_step(self, current_time: float, step_size: float) -> bool:
        if not self._initialized:
            self.log("fmi2DoStep called before fmi2ExitInitializationMode: step discarded", Fmi2Status.error)
            return False
        dt = self._params["sample_period"]
        if abs(step_size - dt) > STEP_RTOL * dt and not self._step_warned:
            self._step_warned = True
            self.log(f"communication step {step_size!r} s differs from sample_period {dt!r} s: the PID's integral "
                     "and setpoint derivative keep using sample_period (reported once)", Fmi2Status.warning)
        q = {j: self._inputs[(j, "q")] for j in self._gains}
        qd = {j: self._inputs[(j, "qd")] for j in self._gains}
        self._tau.update(self._pid(float(current_time), q, qd))
        return True

    @guarded(None)
    def terminate(self):
        pass

    # ---- values -------------------------------------------------------------------------------
    @guarded(lambda self, vrs: [math.nan] * len(vrs))
    def get_real(self, vrs):
        return super().get_real(vrs)

    @guarded(None)
    def set_real(self, vrs, values):
        return super().set_real(vrs, values)

    def _get(self, v: FmuVariable) -> float:
        kind, key = v.source
        if kind == "param":
            return self._params[key]
        if kind == "input":
            return self._inputs[key]
        return self._tau[key]

    def _set(self, v: FmuVariable, x) -> None:
        problem = None
        if v.causality == "parameter" and self._initialized:
            problem = f"parameter {v.name} is fixed: set it before fmi2ExitInitializationMode"
        elif not isinstance(x, (int, float)) or math.isnan(x) or (math.isinf(x) and not (_is_limit(v) and x > 0)):
            problem = f"{v.name} = {x!r} rejected: values must be finite (a limit may be +INF)"
        elif v.min is not None and x < v.min:
            problem = f"{v.name} = {x!r} rejected: must be >= {v.min}"
        if problem is not None:
            self._rejected[v.name] = problem
            self.log(f"{problem}; {v.name} keeps its previous value", Fmi2Status.error)
            return
        self._rejected.pop(v.name, None)
        kind, key = v.source
        if kind == "param":
            self._params[key] = float(x)
        else:
            self._inputs[key] = float(x)

    def _make_pid(self) -> JointPID:
        p = self._params
        gains = {j: replace(g, **{gain: p[(j, gain)] for gain in GAINS}) for j, g in self._gains.items()}
        return JointPID(gains, p["sample_period"])

    # ---- FMU state ----------------------------------------------------------------------------
    @guarded(None)
    def _get_fmu_state(self):
        pid = self._pid
        return {"format": STATE_FORMAT, "guid": str(self.guid), "initialized": self._initialized,
                "params": [[_key(k), v] for k, v in self._params.items()],
                "inputs": [[list(k), v] for k, v in self._inputs.items()], "tau": dict(self._tau),
                "integral": None if pid is None else dict(pid.integral),
                "previous": None if pid is None else dict(pid.previous),
                "rejected": dict(self._rejected), "step_warned": self._step_warned}

    @guarded(None)
    def _set_fmu_state(self, state):
        if isinstance(state, dict) and state.get("format") == "invalid":
            msg = f"fmi2SetFMUstate: {state.get('why')}"
            self.log(msg, Fmi2Status.error)
            raise PidRejection(msg)
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT or state.get("guid") != str(self.guid):
            msg = "fmi2SetFMUstate: not a state of this FMU (different controller or build)"
            self.log(msg, Fmi2Status.error)
            raise PidRejection(msg)
        try:           # everything parsed before anything is applied
            params = {_unkey(k): float(v) for k, v in state["params"]}
            inputs = {tuple(k): float(v) for k, v in state["inputs"]}
            tau = {j: float(v) for j, v in state["tau"].items()}
            initialized, rejected = bool(state["initialized"]), dict(state["rejected"])
            step_warned = bool(state["step_warned"])
            integral = {j: float(v) for j, v in (state["integral"] or {}).items()}
            previous = {j: None if v is None else float(v) for j, v in (state["previous"] or {}).items()}
            if set(params) != set(self._params) or set(inputs) != set(self._inputs) or set(tau) != set(self._tau):
                raise ValueError("the variables do not match this controller")
            if initialized and (set(integral) != set(self._gains) or set(previous) != set(self._gains)):
                raise ValueError("integral/previous do not match the controller's joints")
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            msg = f"fmi2SetFMUstate: the state does not fit this controller ({type(e).__name__}: {e}); state kept"
            self.log(msg, Fmi2Status.error)
            raise PidRejection(msg) from None
        saved = self._params
        self._params = params
        try:
            pid = self._make_pid() if initialized else None
        finally:
            self._params = saved
        self._params, self._inputs, self._tau = params, inputs, tau
        self._initialized, self._rejected, self._step_warned, self._pid = initialized, rejected, step_warned, pid
        if pid is not None:
            pid.integral, pid.previous = integral, previous

    @staticmethod
    def _fmu_state_to_bytes(state) -> bytes:
        return pack(state["guid"], json.dumps(state, allow_nan=True).encode("utf-8"))

    @staticmethod
    def _fmu_state_from_bytes(blob: bytes):
        """Never raises (see MbsfmuSlave._fmu_state_from_bytes)."""
        try:
            guid = blob[len(STATE_TAG): len(STATE_TAG) + 36].decode("ascii")
            return json.loads(unpack(blob, guid).decode("utf-8"))
        except (BadState, ValueError, UnicodeDecodeError) as e:
            return {"format": "invalid", "why": f"not a state of this FMU: {e}"}


def _is_limit(v: FmuVariable) -> bool:
    return v.source[0] == "param" and isinstance(v.source[1], tuple) and v.source[1][1] == "limit"


def _key(k):
    return list(k) if isinstance(k, tuple) else k


def _unkey(k):
    return tuple(k) if isinstance(k, list) else k


# ---- the builder ----------------------------------------------------------------------------------

def build_pid_fmu(gains: dict[str, PIDGains], dt: float, output: str | Path, *,
                  units: dict[str, tuple[str, str, str]] | None = None, name: str = "pid",
                  loader: bool | None = None) -> Path:
    """Build the controller FMU ``output`` (a file, or a folder for ``<identifier>.fmu``) of a
    JointPID: gains by joint (``Scenario.controller``), dt: sample period [s] (the scenario's dt),
    units: joint -> (q, qd, tau) unit names (default rad, rad/s, N.m); name: the model name
    (modelIdentifier ``mbsfmu_pid_<name>``); loader as in ``build_fmu`` (the Linux loader binary,
    so libcosim and other C hosts load it). Returns the FMU's path."""
    from .build import (copy_engine, package, python_info, slave_module, engine_hash,
                        model_identifier)
    cfg = pid_config(gains, dt, units, name)
    table = pid_variables(cfg)
    identifier = model_identifier(f"mbsfmu_pid_{name}")
    output = Path(output)
    if output.is_dir():
        output = output / f"{identifier}.fmu"
    guid = str(uuid.uuid4())
    engine = f"mbsfmu_engine_{engine_hash()}"
    module = f"mbsfmu_pidslave_{identifier}_{guid.replace('-', '')[:12]}"
    info = {"format": 1, "guid": guid, "model_identifier": identifier, "model_name": identifier, "naming": "structured",
            "engine_package": engine, "engine_version": __version__, "engine_hash": engine[14:],
            "description": (f"mbsfmu discrete joint PID {name} ({', '.join(cfg['joints'])}), sample period "
                            f"{cfg['sample_period']!r} s; output u_k computed in fmi2DoStep(t_k) from the inputs set "
                            f"before it and held (FMI 2.0 Co-Simulation, mbsfmu {__version__})"),
            "python": python_info()}
    with tempfile.TemporaryDirectory(prefix="mbsfmu_pidfmu_") as tmp:
        tmp = Path(tmp)
        stage = tmp / "stage"
        stage.mkdir()
        copy_engine(stage / engine)
        (stage / BUILD_INFO).write_text(json.dumps(info, indent=1), encoding="utf-8")
        (stage / CONFIG).write_text(json.dumps(cfg, indent=1, allow_nan=True), encoding="utf-8")
        script = stage / f"{module}.py"
        script.write_text(slave_module(identifier, engine, f"discrete joint PID {name}", "fmu.controller import PidSlave",
                                         "mbsfmu.fmu.pid.build_pid_fmu"), encoding="utf-8")
        package(script, [stage / engine, stage / BUILD_INFO, stage / CONFIG], tmp, identifier, guid, table, info,
                 loader, output)
    return output


def read_pid_config(fmu: str | Path) -> dict:
    """The controller configuration stored in a controller FMU's resources."""
    with zipfile.ZipFile(fmu) as z:
        return json.loads(z.read(f"resources/{CONFIG}").decode("utf-8"))


__all__ = ["PidSlave", "build_pid_fmu", "gains_from_config", "pid_config", "pid_variables", "read_pid_config"]
