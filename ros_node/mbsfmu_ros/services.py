"""The node's own services (docs/reference/ros-interface.md, "Services"): ~/reset, ~/pause,
~/step (std_srvs), and the reset they share with simulation_interfaces' ResetSimulation.

``ServicesMixin`` is one part of ``MbsNode``: it uses the node's ``sim``, ``model``, the run's
state (``paused``, ``stopped``, ``error``, ``lock_step``, ``k``, ``offset_ns``, ``last_ns``...),
``cycle()`` and ``publish_state()``.
"""

from __future__ import annotations

from . import conversion as cv
from . import diagnostics as dg


class ServicesMixin:
    """~/reset, ~/pause, ~/step and ``reset()`` of MbsNode."""

    def srv_reset(self, request, response):
        self.reset()
        response.success = True
        response.message = (
            f"reset {self.resets}: initial state at sim time t = {self.now_ns() / cv.NS:.9f} s "
            f"(sim time keeps increasing; episode time 0)"
        )
        return response

    def srv_pause(self, request, response):
        self.paused = bool(request.data)
        self.stopped = False
        self.reanchor = True
        response.success = True
        response.message = f"{'paused' if self.paused else 'running'} at t = {self.now_ns() / cv.NS:.9f} s"
        self.get_logger().info(response.message)
        return response

    def srv_step(self, request, response):
        if not (self.paused or self.lock_step) or self.error:
            response.success = False
            response.message = self.error or "~/step advances one cycle only while paused or in lock-step mode"
            return response
        self.stopped = False
        ok = self.cycle()
        response.success = ok
        response.message = f"t = {self.now_ns() / cv.NS:.9f} s" if ok else str(self.error)
        return response

    def reset(self) -> None:
        """Initial state, zero inputs and work, new reference for the diagnostics; sim time goes
        on from the last published stamp plus one cycle (never backwards)."""
        self.offset_ns = max(self.last_ns, self.now_ns()) + self.period_ns
        q, qd = self.model.initial_state()
        self.sim.set_configuration(q, qd)
        self.sim.set_inputs({n: 0.0 for n in self.sim.input_names})
        self.targets.clear()
        if self.trajectory is not None:
            self.trajectory.stop("a reset")
        self.sim.t = 0.0
        self.k = 0
        self.t_base, self.k_base = 0.0, 0
        self.error = None
        self.resets += 1
        self.cmd.update(active=False, timed_out=False, last_ns=None)
        self.ref_row = dg.checker_row(self.sim)
        self.reanchor = True
        self.get_logger().info(
            f"reset {self.resets}: episode restarts from the initial state; sim time continues "
            f"at t = {self.now_ns() / cv.NS:.9f} s (offset {self.offset_ns / cv.NS:g} s)"
        )
        self.publish_state()
