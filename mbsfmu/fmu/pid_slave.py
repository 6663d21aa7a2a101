"""The bundled controller FMU's slave: the scenario's discrete joint PID
(``mbsfmu.sim.pid.JointPID``) as an FMI 2.0 Co-Simulation slave on ``slave_base.SlaveBase``
(``PidSlave``). Its variables, output timing (sample and hold in fmi2DoStep, no direct
feedthrough) and FMU state are described in ``pid.py``, which configures and builds it."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path

from pythonfmu.enums import Fmi2Status

from ..sim.pid import JointPID
from .pid import CONFIG, GAINS, gains_from_config, pid_variables
from .slave_base import SlaveBase
from .variables import FmuVariable

STATE_FORMAT = "mbsfmu-pid-fmustate/1"
STEP_RTOL = 1e-9  # a communication step further than this (relative) from sample_period is reported once


class PidSlave(SlaveBase):
    """FMI 2.0 Co-Simulation slave of a JointPID (see the module docstring)."""

    STATE_FORMAT = STATE_FORMAT
    KIND = "controller"

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        cfg = json.loads((Path(self.resources) / CONFIG).read_text(encoding="utf-8"))
        self._cfg = cfg
        self._gains = gains_from_config(cfg)
        self._table = pid_variables(cfg)
        self._params = {v.source[1]: v.start for v in self._table if v.source[0] == "param"}
        self._inputs = {v.source[1]: 0.0 for v in self._table if v.source[0] == "input"}
        self._tau = {j: 0.0 for j in self._gains}
        self._pid: JointPID | None = None
        self._step_warned = False
        for v in self._table:
            self.register(v, getter=lambda v=v: self._get(v), setter=lambda x, v=v: self._set(v, x))

    # ---- FMI lifecycle (SlaveBase's entry points call these) ----------------------------------
    def initialize(self) -> None:
        if not self._params["sample_period"] > 0:
            self.fail(f"sample_period must be > 0 s, got {self._params['sample_period']!r}")
        self._pid = self._make_pid()

    def step(self, current_time: float, step_size: float) -> bool:
        dt = self._params["sample_period"]
        if abs(step_size - dt) > STEP_RTOL * dt and not self._step_warned:
            self._step_warned = True
            self.log(
                f"communication step {step_size!r} s differs from sample_period {dt!r} s: the PID's integral "
                "and setpoint derivative keep using sample_period (reported once)",
                Fmi2Status.warning,
            )
        q = {j: self._inputs[(j, "q")] for j in self._gains}
        qd = {j: self._inputs[(j, "qd")] for j in self._gains}
        self._tau.update(self._pid(float(current_time), q, qd))
        return True

    # ---- values -------------------------------------------------------------------------------
    def _get(self, v: FmuVariable) -> float:
        kind, key = v.source
        if kind == "param":
            return self._params[key]
        if kind == "input":
            return self._inputs[key]
        return self._tau[key]

    def _set(self, v: FmuVariable, x) -> None:
        problem = self.fixed_problem(v)
        finite = isinstance(x, (int, float)) and not math.isnan(x) and (not math.isinf(x) or (_is_limit(v) and x > 0))
        if problem is None and not finite:
            problem = f"{v.name} = {x!r} rejected: values must be finite (a limit may be +INF)"
        elif problem is None and v.min is not None and x < v.min:
            problem = f"{v.name} = {x!r} rejected: must be >= {v.min}"
        if problem is not None:
            self.reject(v.name, problem)
            return
        self.accept(v.name)
        kind, key = v.source
        if kind == "param":
            self._params[key] = float(x)
        else:
            self._inputs[key] = float(x)

    def _make_pid(self) -> JointPID:
        p = self._params
        gains = {j: replace(g, **{gain: p[(j, gain)] for gain in GAINS}) for j, g in self._gains.items()}
        return JointPID(gains, p["sample_period"])

    # ---- FMU state (SlaveBase's fmi2GetFMUstate/fmi2SetFMUstate call these) -------------------
    def state(self) -> dict:
        pid = self._pid
        return {
            "initialized": self._initialized,
            "params": [[_key(k), v] for k, v in self._params.items()],
            "inputs": [[list(k), v] for k, v in self._inputs.items()],
            "tau": dict(self._tau),
            "integral": None if pid is None else dict(pid.integral),
            "previous": None if pid is None else dict(pid.previous),
            "rejected": dict(self._rejected),
            "step_warned": self._step_warned,
        }

    def restore(self, state: dict) -> None:
        try:  # everything parsed before anything is applied
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
            self.fail(f"fmi2SetFMUstate: the state does not fit this controller ({type(e).__name__}: {e}); state kept")
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


def _is_limit(v: FmuVariable) -> bool:
    return v.source[0] == "param" and isinstance(v.source[1], tuple) and v.source[1][1] == "limit"


def _key(k):
    return list(k) if isinstance(k, tuple) else k


def _unkey(k):
    return tuple(k) if isinstance(k, list) else k


__all__ = ["PidSlave"]
