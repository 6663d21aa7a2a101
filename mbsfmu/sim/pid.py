"""A discrete joint PID controller with saturation, sampled at the communication step.

u_k = sat(kp e_k + ki I_k + kd D_k), e_k = setpoint(t_k) - q_k, with D_k = -qd_k (derivative on the
measurement: no kick when the setpoint steps) or D_k = (r_k - r_{k-1}) / dt - qd_k (on the error,
r the setpoint: no lag when tracking a moving setpoint). The integral uses forward Euler,
I_{k+1} = I_k + e_k dt, and
is frozen while the output saturates in the direction of e (conditional-integration anti-windup).
The same class runs in-process (scenario runs) and inside the bundled controller FMU, so a
co-simulation that steps it identically reproduces the in-process run bit for bit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .schedules import Schedule


@dataclass(frozen=True)
class PIDGains:
    """Gains of one 1-DoF joint: kp [N m/rad or N/m], ki [N m/(rad s)], kd [N m s/rad],
    limit: |u| <= limit [N m or N] (inf: none), setpoint q_ref(t) [rad or m], derivative:
    "measurement" or "error"."""

    kp: float
    ki: float
    kd: float
    limit: float
    setpoint: Schedule
    derivative: str = "measurement"


class JointPID:
    """PID on named 1-DoF joints; ``outputs`` maps each joint to its actuator input name."""

    def __init__(self, gains: dict[str, PIDGains], dt: float):
        self.gains = dict(gains)
        self.dt = float(dt)
        self.reset()

    def reset(self) -> None:
        self.integral = {name: 0.0 for name in self.gains}
        self.previous = {name: None for name in self.gains}  # last sample's setpoint

    def __call__(self, t: float, q: dict[str, float], qd: dict[str, float]) -> dict[str, float]:
        """Actuator commands at sample time t [s] from joint positions and rates by joint name."""
        u = {}
        for name, g in self.gains.items():
            r = g.setpoint(t)
            e = r - q[name]
            D = -qd[name]
            if g.derivative == "error":
                D += 0.0 if self.previous[name] is None else (r - self.previous[name]) / self.dt
            self.previous[name] = r
            raw = g.kp * e + g.ki * self.integral[name] + g.kd * D
            out = min(max(raw, -g.limit), g.limit)
            if out == raw or math.copysign(1.0, raw) != math.copysign(1.0, e):
                self.integral[name] += e * self.dt
            u[name] = out
        return u
