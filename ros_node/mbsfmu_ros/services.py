"""The node's own services (docs/reference/ros-interface.md, "Services"): ~/reset, ~/pause,
~/step (std_srvs), and the reset they share with simulation_interfaces' ResetSimulation.

``ServicesMixin`` is one part of ``MbsNode``: it uses the node's ``sim``, ``model``, the run's
state (``paused``, ``stopped``, ``error``, ``lock_step``, ``k``, ``offset_ns``, ``last_ns``...),
``cycle()`` and ``publish_state()``.
"""

from __future__ import annotations

import time

from . import conversion as cv
from . import diagnostics as dg

QUIT_GRACE = 0.5  # [s] of wall time the node keeps serving after STATE_QUITTING, so its answer leaves


class ServicesMixin:
    """~/reset, ~/pause, ~/step, ``reset()`` and ``quit()`` of MbsNode."""

    quitting = False  # set by quit(): run() returns and main() ends the node (exit code 0)

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

    def reset(self, with_time: bool = False) -> None:
        """Initial state, zero inputs and work, new reference for the diagnostics; sim time goes
        on from the last published stamp plus one cycle (never backwards), or with ``with_time``
        restarts at 0 (simulation_interfaces' ResetSimulation with SCOPE_TIME: as if relaunched)."""
        self.offset_ns = 0 if with_time else max(self.last_ns, self.now_ns()) + self.period_ns
        if with_time:
            self.last_ns = -1
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

    def restart_time(self) -> None:
        """Sim time back to 0 with the state kept (ResetSimulation's SCOPE_TIME alone): episode
        and published time restart; the diagnostics take the state as their new reference."""
        self.offset_ns, self.last_ns = 0, -1
        self.sim.t = 0.0
        self.k = 0
        self.t_base, self.k_base = 0.0, 0
        self.ref_row = dg.checker_row(self.sim)
        self.reanchor = True
        self.get_logger().info("sim time restarts at t = 0 s; the state is kept")
        self.publish_state()

    def quit(self) -> None:
        """Stop (the initial state, paused) and end the node: ``run()`` returns after serving on
        for QUIT_GRACE s (the caller's answer leaves), then ``main()`` shuts down as on Ctrl-C."""
        self.reset(with_time=True)
        self.paused, self.stopped, self.quitting = True, True, True
        self.get_logger().info("quitting (simulation_interfaces STATE_QUITTING): the node ends")

    def serve_until_gone(self, executor) -> None:
        """After ``quit()``: keep the executor spinning for QUIT_GRACE s of wall time."""
        end = time.monotonic() + QUIT_GRACE
        while time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
