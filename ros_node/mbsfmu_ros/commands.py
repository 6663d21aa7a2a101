"""Commands into the running node (docs/reference/ros-interface.md, "Commands"): effort commands
(/mbs/effort_commands) and joint commands (/mbs/joint_commands, ros2_control's topic-based
convention), their checks and rejections, the command timeout, and the commands diagnostics.

``CommandsMixin`` is one part of ``MbsNode``: it uses the node's ``sim``, ``aliases``, ``servos``,
``targets``, ``cmd``, ``timeout_ns``, ``lock_step``, ``diag_period``, ``now_ns()`` and
``warn_throttled()``, and sets ``lock_go``. The message checks themselves are the pure functions
of ``conversion.py``.
"""

from __future__ import annotations

import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

from . import conversion as cv
from . import diagnostics as dg


class CommandsMixin:
    """Command callbacks, the command timeout and the ``commands`` diagnostics status of MbsNode."""

    def reject(self, kind: str, text: str) -> None:
        """Count a rejected command and warn (at most once per ``kind`` per second)."""
        c = self.cmd
        c["rejected"] += 1
        c["last_rejection"], c["last_rejection_wall"] = text, time.monotonic()
        self.warn_throttled(kind, text)

    def apply(self, values: dict[str, float] | np.ndarray) -> None:
        """Set the inputs of an accepted command (held until the next one): by name, or all of
        them in ``input_names`` order (validated: ``cv.effort_command_inputs``)."""
        if isinstance(values, dict):
            self.sim.set_inputs(values)
        else:
            self.sim.u[:] = values
        c = self.cmd
        c["accepted"] += 1
        c["last_ns"], c["active"], c["timed_out"] = self.now_ns(), True, False
        if self.lock_step:
            self.lock_go = True

    def renew_command(self) -> None:
        """The command timeout counts from now (a trajectory being followed, as JTC's cmd_timeout)."""
        self.cmd["last_ns"] = self.now_ns()

    def on_effort(self, msg: Float64MultiArray) -> None:
        try:
            values = cv.effort_command_inputs(msg.data, self.sim.input_names)
        except cv.CommandError as e:
            return self.reject("effort", f"/mbs/effort_commands: {e}")
        self.apply(values)

    def on_joint_command(self, msg: JointState) -> None:
        try:
            cv.check_command_stamp(
                cv.stamp_to_ns(msg.header.stamp.sec, msg.header.stamp.nanosec),
                self.now_ns(),
                self.timeout_ns,
                self.lock_step,
            )
            efforts, targets = cv.joint_command(
                list(msg.name), msg.position, msg.velocity, msg.effort, self.aliases, self.servos
            )
        except cv.CommandError as e:
            return self.reject("joint", f"/mbs/joint_commands: {e}")
        if self.trajectory is not None:  # a joint command takes its joints from a trajectory
            self.trajectory.stop("a joint command", msg.name)
        for name in msg.name:  # a joint commanded anew leaves the servo unless it has a target again
            self.targets.pop(name, None)
        self.targets.update(targets)
        self.apply(efforts)

    def check_timeout(self) -> None:
        """Zero the inputs (and drop the servo targets) after command_timeout of sim time without a command."""
        c = self.cmd
        if self.lock_step or not self.timeout_ns or not c["active"]:
            return
        if self.now_ns() - c["last_ns"] > self.timeout_ns:
            self.sim.set_inputs({n: 0.0 for n in self.sim.input_names})
            self.targets.clear()
            if self.trajectory is not None:
                self.trajectory.stop("the command timeout")
            c["active"], c["timed_out"] = False, True
            self.get_logger().warning(
                f"no command for more than {self.timeout_ns / cv.NS:g} s of sim time "
                f"(last at t = {c['last_ns'] / cv.NS:.6f} s): inputs set to zero"
            )

    def commands_status(self) -> dg.Status:
        c = self.cmd
        values = {
            "accepted": str(c["accepted"]),
            "rejected": str(c["rejected"]),
            "last_command_t": "none" if c["last_ns"] is None else f"{c['last_ns'] / cv.NS:.9f}",
            "command_timeout": f"{self.timeout_ns / cv.NS:g}",
            "last_rejection": c["last_rejection"],
            "inputs": ", ".join(f"{n}={v:.6g}" for n, v in zip(self.sim.input_names, self.sim.u)),
        }
        if time.monotonic() - c["last_rejection_wall"] < max(self.diag_period, 1.0) * 2:
            return dg.Status("commands", dg.WARN, f"command rejected: {c['last_rejection']}", values)
        if c["timed_out"]:
            return dg.Status(
                "commands",
                dg.WARN,
                f"no command for more than {self.timeout_ns / cv.NS:g} s of sim time: inputs set to zero",
                values,
            )
        if c["last_ns"] is None:
            return dg.Status("commands", dg.OK, "no command received yet: inputs zero", values)
        return dg.Status("commands", dg.OK, "commands fresh", values)
