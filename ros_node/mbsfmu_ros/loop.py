"""The simulation loop (docs/guides/ros2.md, "Timing"): the node steps the engine one publish
period at a time, paced against the wall clock (``pacing.py``), as fast as possible, in
lock-step with a controller, or following an external /clock, and lets the executor handle
commands and services between cycles.

``LoopMixin`` is one part of ``MbsNode``: it uses the node's ``sim``, ``config``, ``period``,
``rtf``, ``lock_step``, ``follow_clock``, ``targets`` and ``trajectory`` (``actuator_efforts()``),
the run's state, ``publish_state()``, ``publish_diagnostics()`` and ``check_timeout()``.
"""

from __future__ import annotations

import math
import time

import rclpy
import rclpy.executors
from rosgraph_msgs.msg import Clock

from mbsfmu.sim.simulator import SimulationError

from . import clock, scheduling
from . import conversion as cv
from . import topics as tp
from .pacing import MAX_LAG

SPIN_MARGIN = 3e-4  # [s] before a deadline the node stops waiting in the executor and sleeps


class LoopMixin:
    """Sim time, cycles and ``run()`` of MbsNode."""

    def now_ns(self) -> int:
        """Published sim time of the current state [ns]: reset offset + episode time."""
        return self.offset_ns + cv.time_to_ns(self.sim.t)

    def warn_throttled(self, kind: str, text: str) -> None:
        """A warning, at most one per ``kind`` per second of wall time."""
        now = time.monotonic()
        if now - self.log_last.get(kind, -math.inf) >= 1.0:
            self.log_last[kind] = now
            self.get_logger().warning(text)

    def on_clock(self, msg: Clock) -> None:
        """An external /clock time: the loop steps the engine to it (the latest one wins)."""
        t = cv.stamp_to_ns(msg.clock.sec, msg.clock.nanosec)
        if t < self.now_ns():
            self.warn_throttled(
                "clock",
                f"/clock went back to t = {t / cv.NS:.9f} s (the simulation is at {self.now_ns() / cv.NS:.9f} s): "
                "ignored; ~/reset restarts the episode",
            )
            return
        self.clock_ns = t

    def follow(self) -> bool:
        """Step to the latest external /clock time and publish; False if the engine failed."""
        t_ns, self.clock_ns = self.clock_ns, None
        return self.advance((t_ns - self.offset_ns) / cv.NS)

    def cycle(self) -> bool:
        """Advance one publish period and publish; False if the engine failed."""
        return self.advance(self.t_base + (self.k + 1 - self.k_base) * self.period)

    def actuator_efforts(self, h: float = 0.0) -> dict[str, float]:
        """The servo-driven joints' torques over the next physics step of h [s] (the actuator
        model, ``cv.servo_efforts``): the engine's inverse dynamics tau_id = RNEA(q_ref, qd_ref,
        qdd_ref) as feed-forward plus the PD terms; a followed trajectory first sets its joints'
        targets (``trajectory_controller``)."""
        if self.trajectory is not None:
            self.trajectory.step(h)
        return cv.servo_torques(self.model, self.sim, self.targets, self.servos, self.gains)

    def advance(self, t_end: float) -> bool:
        """Advance the episode to t_end [s] and publish; False if the engine failed. Inputs are
        held, but for servo-driven joints (position/velocity commands), whose torques are
        updated every physics_step (``actuator_efforts``) and held over it: their work enters
        W_in like any input's."""
        try:
            if self.targets:
                cv.advance_servoed(self.sim, t_end, self.config.physics_step or self.period, self.actuator_efforts)
            else:
                self.sim.advance_to(t_end)
        except SimulationError as e:
            self.error = str(e)
            self.get_logger().error(f"engine stopped: {e}; ~/reset restarts it")
            return False
        self.k += 1
        self.publish_state()
        return True

    def spin(self, executor, timeout: float) -> None:
        """``executor.spin_once`` waiting at most ``timeout`` [s]. rclpy's executor starts a new
        round of ready work, coroutines in progress first, whenever spin_once's arguments differ
        from the last call's: with an action's execute callback awaiting (a trajectory goal) a
        float timeout that changes from call to call would resume that coroutine on every call
        and never reach the subscriptions and services. One ``TimeoutObject`` (rclpy's own means
        for this, as its spin_until_future_complete) keeps the arguments equal; the events
        executor takes a float."""
        if self.spin_timeout is None or not isinstance(executor, rclpy.executors.Executor):
            executor.spin_once(timeout_sec=timeout)
            return
        self.spin_timeout.timeout = timeout
        executor.spin_once(timeout_sec=self.spin_timeout)

    def apply_scheduling(self) -> None:
        """``thread_priority`` and ``lock_memory`` (``scheduling.py``) for the thread that runs the
        loop, once; what the system refused is warned about once, naming the parameter and what to
        do, and the node goes on at normal priority."""
        p = self.config
        if p.thread_priority == 0 and not p.lock_memory:
            return
        got = scheduling.apply(p.thread_priority, p.lock_memory)
        for text in got.warnings:
            self.get_logger().warning(text)
        if got.policy == "SCHED_FIFO":
            self.get_logger().info(
                f"thread_priority: SCHED_FIFO {got.priority} on {got.threads} thread(s) (the loop and the middleware's)"
                f"{'; memory locked' if got.memory_locked else ''}"
            )
            if self.rtf == 0 and not self.lock_step and not self.follow_clock:
                self.get_logger().warning(
                    "thread_priority with real_time_factor 0: a SCHED_FIFO loop that never sleeps holds a core "
                    "(the kernel's real-time throttling leaves others 5 %)"
                )

    def run(self, executor) -> None:
        """Cycle until shutdown: paced, as fast as possible, or in lock-step (see pacing.py)."""
        wall = time.perf_counter
        self.apply_scheduling()
        timeout_object = getattr(rclpy.executors, "TimeoutObject", None)  # where this rclpy has it
        self.spin_timeout = None if timeout_object is None else timeout_object(0.0)
        budget = self.period / self.rtf if self.rtf > 0 else None
        end = wall() + clock.STARTUP_WINDOW  # another /clock already there: yield before publishing one
        while rclpy.ok() and tp.CLOCK in self.pubs and not self.clock_others and wall() < end:
            self.check_clock()
            self.spin(executor, 0.05)
        self.stats.start(wall(), self.sim.t)
        next_clock_check = wall() + clock.CHECK_PERIOD
        self.publish_state()  # the initial state (and /clock) at once, whoever listens, in every mode
        next_diag = wall() + min(self.diag_period, 1e9)
        deadline = wall()
        spun = False
        while rclpy.ok() and not self.quitting:
            now = wall()
            if now >= next_diag:
                self.publish_diagnostics(now)  # the checks run in the diagnostics thread (publishing.py)
                next_diag = max(next_diag + self.diag_period, now + 0.5 * self.diag_period)
            self.flush_diagnostics()
            if now >= next_clock_check:
                self.check_clock()
                next_clock_check = now + clock.CHECK_PERIOD
            if self.simulation is not None and self.simulation.run_pending_step():
                self.spin(executor, 0.0)  # feedback out, cancel requests in, between steps
                continue
            if self.paused or self.error:
                self.spin(executor, max(0.0, min(0.05, next_diag - now)))
                self.reanchor = True
                continue
            if self.follow_clock:
                if self.clock_ns is not None and self.clock_ns > self.last_ns:
                    self.check_timeout()
                    self.follow()
                else:
                    self.spin(executor, max(0.0, min(0.05, next_diag - now)))
                continue
            if self.lock_step:
                if self.lock_go:  # a command came: the cycle at once
                    self.lock_go = False
                    t0 = wall()
                    self.cycle()
                    self.stats.record(0.0, wall() - t0, None)
                    continue
                n = self.pub_js.get_subscription_count()
                if n > self.lock_subscribers:
                    self.publish_state()  # (re)announce the current state to a new controller
                self.lock_subscribers = n
                self.spin(executor, max(0.0, min(0.05, next_diag - now)))
                continue
            budget = self.period / self.rtf if self.rtf > 0 else None  # parameters may change at run time
            if self.reanchor:
                deadline, self.reanchor = now + (budget or 0.0), False
            if budget is not None:
                wait = deadline - now
                if wait > SPIN_MARGIN:
                    self.spin(executor, wait - SPIN_MARGIN)
                    spun = True
                    continue
                if wait > 0:
                    time.sleep(wait)
                start = wall()
                lateness = start - deadline
            else:
                start, lateness = wall(), 0.0
            self.check_timeout()
            self.cycle()
            end = wall()
            self.stats.record(lateness, end - start, budget)
            if budget is not None:
                deadline += budget
                if end - deadline > MAX_LAG:
                    self.stats.slip()
                    deadline = end
            if not spun:
                self.spin(executor, 0.0)
            spun = False
        if self.diag_worker is not None:
            self.diag_worker.shutdown(wait=True)
        if self.quitting:
            self.serve_until_gone(executor)
