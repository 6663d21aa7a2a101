"""The mbsfmu ROS 2 node: runs the engine for one model file and publishes joint states, momentum,
energy and conservation diagnostics; takes actuator commands (docs/reference/ros-interface.md).

Structure after ros2/demos' demo_nodes_py: ``main()`` initialises rclpy and spins, parameters are
declared with defaults, and all message contents come from the pure functions of
``conversion.py`` and ``diagnostics.py``. The node runs its own loop (``MbsNode.run``) instead of
a timer: it steps the engine one publish period at a time, paced against the wall clock
(``pacing.py``), or as fast as possible, or in lock-step with a controller, and lets the
executor handle commands and services between cycles.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import rclpy
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import (
    Point,
    PointStamped,
    Quaternion,
    Transform,
    Twist,
    Vector3,
    Vector3Stamped,
    Wrench,
    WrenchStamped,
)
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState, MultiDOFJointState
from std_msgs.msg import Float64, Float64MultiArray, Header, MultiArrayDimension, MultiArrayLayout, String
from std_srvs.srv import SetBool, Trigger

import mbsfmu
from mbsfmu.errors import MbsError
from mbsfmu.io.urdf_export import robot_description
from mbsfmu.sim import messages as ms
from mbsfmu.sim.simulator import SimulationError, Simulator
from mbsfmu_ros import conversion as cv
from mbsfmu_ros import diagnostics as dg
from mbsfmu_ros import interface_packages
from mbsfmu_ros import topics as tp

from .config import DYNAMIC, ROS_OWN, ConfigError, declarations, node_config
from .pacing import MAX_LAG, PacingStats

TFMessage = None  # tf2_msgs/TFMessage once bind_interfaces() found it (no PyPI wheel: interface_packages)
INTERFACES_MISSING: str | None = "not looked up yet"  # why tf2_msgs/simulation_interfaces do not import

MESSAGE_CLASSES = {
    tp.CLOCK: Clock,
    tp.JOINT_STATES: JointState,
    tp.MULTI_DOF_JOINT_STATES: MultiDOFJointState,
    tp.CENTROIDAL_MOMENTUM: WrenchStamped,
    tp.COM: PointStamped,
    tp.COM_VELOCITY: Vector3Stamped,
    tp.ENERGY: Float64MultiArray,
}


# ---- contents (mbsfmu.sim.messages) -> rclpy messages, field by field ----------------------------
def _time(d: dict) -> Time:
    return Time(sec=d["sec"], nanosec=d["nanosec"])


def _header(d: dict) -> Header:
    return Header(stamp=_time(d["stamp"]), frame_id=d["frame_id"])


def _transform(d: dict) -> Transform:
    return Transform(translation=Vector3(**d["translation"]), rotation=Quaternion(**d["rotation"]))


BUILDERS = {
    tp.CLOCK: lambda c: Clock(clock=_time(c["clock"])),
    tp.JOINT_STATES: lambda c: JointState(
        header=_header(c["header"]), name=c["name"], position=c["position"], velocity=c["velocity"], effort=c["effort"]
    ),
    tp.MULTI_DOF_JOINT_STATES: lambda c: MultiDOFJointState(
        header=_header(c["header"]),
        joint_names=c["joint_names"],
        transforms=[_transform(t) for t in c["transforms"]],
        twist=[Twist(linear=Vector3(**t["linear"]), angular=Vector3(**t["angular"])) for t in c["twist"]],
        wrench=[Wrench(force=Vector3(**w["force"]), torque=Vector3(**w["torque"])) for w in c["wrench"]],
    ),
    tp.CENTROIDAL_MOMENTUM: lambda c: WrenchStamped(
        header=_header(c["header"]),
        wrench=Wrench(force=Vector3(**c["wrench"]["force"]), torque=Vector3(**c["wrench"]["torque"])),
    ),
    tp.COM: lambda c: PointStamped(header=_header(c["header"]), point=Point(**c["point"])),
    tp.COM_VELOCITY: lambda c: Vector3Stamped(header=_header(c["header"]), vector=Vector3(**c["vector"])),
    tp.ENERGY: lambda c: Float64MultiArray(
        layout=MultiArrayLayout(
            dim=[MultiArrayDimension(**d) for d in c["layout"]["dim"]], data_offset=c["layout"]["data_offset"]
        ),
        data=c["data"],
    ),
}


def bind_interfaces(build: bool, progress=None) -> str | None:
    """Import tf2_msgs and simulation_interfaces (``interface_packages.load``: a sourced ROS 2's, or
    built into the per-user cache, first if ``build``) and register /tf; None, or why not."""
    global TFMessage, INTERFACES_MISSING
    if TFMessage is None:
        INTERFACES_MISSING = interface_packages.load(build=build, progress=progress)
        if INTERFACES_MISSING is None:
            from geometry_msgs.msg import TransformStamped
            from tf2_msgs.msg import TFMessage as tf_message

            TFMessage = MESSAGE_CLASSES[tp.TF] = tf_message
            BUILDERS[tp.TF] = lambda c: tf_message(
                transforms=[
                    TransformStamped(
                        header=_header(t["header"]),
                        child_frame_id=t["child_frame_id"],
                        transform=_transform(t["transform"]),
                    )
                    for t in c["transforms"]
                ]
            )
    return INTERFACES_MISSING


bind_interfaces(build=False)  # cheap: the cache's packages when built, nothing is compiled here


def ros_messages(contents: dict[str, dict]) -> dict:
    """topic -> rclpy message of the contents ``mbsfmu.sim.messages.state_messages`` builds."""
    return {topic: BUILDERS[topic](c) for topic, c in contents.items()}


SPIN_MARGIN = 3e-4  # [s] before a deadline the node stops waiting in the executor and sleeps
NODE_NAME = "mbsfmu"


def _descriptor(name: str, text: str, number: bool = False) -> ParameterDescriptor:
    """Read-only unless in ``DYNAMIC`` (``ros2 param set`` then changes it, checked like at
    start-up); a float parameter takes integers too (``publish_rate:=1000``); non-negative ones
    carry their range."""
    d = ParameterDescriptor(description=text, read_only=name not in DYNAMIC, dynamic_typing=number)
    if number and name in DYNAMIC:
        d.floating_point_range = [FloatingPointRange(from_value=0.0, to_value=1e12, step=0.0)]
    return d


class MbsNode(Node):
    """Publishes the engine's outputs each cycle; see docs/reference/ros-interface.md for topics and services."""

    def __init__(self, model: str | None = None, **kwargs):
        overrides = list(kwargs.pop("parameter_overrides", []) or [])
        if model:
            overrides.append(Parameter("model", value=str(model)))
        super().__init__(kwargs.pop("node_name", NODE_NAME), parameter_overrides=overrides, **kwargs)
        # every override (-p, params files) checked before any is declared: one ConfigError lists all
        # problems, a misspelled name among them (did-you-mean), instead of rclpy refusing the first
        # out-of-range value or ignoring an unknown name; rclpy keeps the overrides it was given in
        # _parameter_overrides (rclpy's own attribute, public in all but name since Foxy)
        values = {name: default for name, default, *_ in declarations()}
        for name, param in getattr(self, "_parameter_overrides", {}).items():
            if name not in ROS_OWN and not name.startswith("qos_overrides."):
                values[name] = param.value
        self.config = p = node_config(values)
        for name, default, text, number in declarations():
            self.declare_parameter(name, default, _descriptor(name, text, number))
        self.thresholds = dict(p.thresholds)
        self.model = mbsfmu.load_model(p.model)
        self.sim = Simulator(self.model, integrator=p.integrator, h_max=p.physics_step, rtol=p.rtol, atol=p.atol)
        self.checks = dg.resolve_checks(list(p.checks), self.model)
        self.layout = cv.joint_layout(self.model)
        self.aliases = cv.command_aliases(self.model, self.sim.input_names)
        self.servos = cv.servo_joints(self.model, self.sim.input_names)
        self.targets: dict[str, cv.JointTarget] = {}  # joints driven by position/velocity commands
        self.gains = (p.servo_kp, p.servo_kd, p.servo_kv)
        self.period = p.period
        self.period_ns = cv.time_to_ns(self.period)
        self.rtf = p.real_time_factor
        self.lock_step = p.lock_step
        self.timeout_ns = cv.time_to_ns(p.command_timeout)
        self.decimation = p.invariants_decimation
        self.frame_id = p.frame_id
        self.diag_period = p.diagnostics_period

        # state of the run
        self.k = 0  # cycles since the start or the last reset
        self.t_base, self.k_base = 0.0, 0  # episode time at cycle k_base (moved when publish_rate changes)
        self.offset_ns = 0  # published time = offset + episode time (monotonic across resets)
        self.last_ns = -1  # stamp of the last published state
        self.resets = 0
        self.paused = p.start_paused
        self.stopped = False  # simulation_interfaces' STATE_STOPPED: paused at the initial state
        self.error: str | None = None  # the engine stopped (SimulationError): paused until ~/reset
        self.lock_go = False
        self.lock_subscribers = 0
        self.reanchor = True
        self.stats = PacingStats()
        self.cmd = {
            "accepted": 0,
            "rejected": 0,
            "last_ns": None,
            "active": False,
            "timed_out": False,
            "last_rejection": "",
            "last_rejection_wall": -math.inf,
        }
        self._log_last: dict[str, float] = {}
        self.ref_row = dg.checker_row(self.sim)

        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.follow_clock = p.follow_clock
        self.clock_ns: int | None = None  # the latest external /clock time not yet stepped to
        self.pubs = {
            topic: self.create_publisher(MESSAGE_CLASSES[topic], tp.ros_name(topic), qos)
            for topic in ms.state_topics(self.layout)
            if topic != tp.TF and not (topic == tp.CLOCK and self.follow_clock)  # one /clock per graph
        }
        if self.follow_clock:
            self.create_subscription(Clock, tp.ros_name(tp.CLOCK), self._on_clock, qos)
        self.pub_js = self.pubs[tp.JOINT_STATES]
        self.pub_diag = self.create_publisher(DiagnosticArray, tp.ros_name(tp.DIAGNOSTICS), qos)
        self.pub_rtf = self.create_publisher(Float64, tp.ros_name(tp.REAL_TIME_FACTOR), qos)
        self.pub_tf = self.create_publisher(TFMessage, tp.ros_name(tp.TF), QoSProfile(depth=100)) if TFMessage else None
        if self.pub_tf is not None:
            self.pubs[tp.TF] = self.pub_tf
        # once, for late joiners too (transient local): the URDF (RViz, robot_state_publisher) and the
        # fixed frames (URDF links lumped into their bodies) on their bodies
        latched = QoSProfile(
            depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self.pub_description = self.create_publisher(String, tp.ros_name(tp.ROBOT_DESCRIPTION), latched)
        self.pub_description.publish(String(data=robot_description(self.model)))
        if TFMessage is not None:
            self.pub_tf_static = self.create_publisher(TFMessage, tp.ros_name(tp.TF_STATIC), latched)
            self.pub_tf_static.publish(BUILDERS[tp.TF](ms.tf_static(self.model, 0)))
        self.create_subscription(Float64MultiArray, tp.ros_name(tp.EFFORT_COMMANDS), self._on_effort, qos)
        self.create_subscription(JointState, tp.ros_name(tp.JOINT_COMMANDS), self._on_joint_command, qos)
        self.create_service(Trigger, "~/reset", self._srv_reset)
        self.create_service(SetBool, "~/pause", self._srv_pause)
        self.create_service(Trigger, "~/step", self._srv_step)
        self.simulation = None  # simulation_interfaces services, where the package imports
        if INTERFACES_MISSING is None:
            from .simulation_services import SimulationServices

            self.simulation = SimulationServices(self)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        multi = ", ".join(self.layout.multi_names)
        mode = (
            "lock-step"
            if self.lock_step
            else ("as fast as possible" if self.rtf == 0 else f"real-time factor {self.rtf:g}")
        )
        self.get_logger().info(
            f"model {self.model.name} ({p.model}): joint states [{', '.join(self.layout.names)}]"
            f"{f'; multi-DoF joint states [{multi}]' if multi else ''}"
            f"; inputs "
            f"[{', '.join(self.sim.input_names)}]; {p.integrator} step {p.physics_step:g} s, cycle "
            f"{self.period:g} s, {mode}; checks [{', '.join(self.checks)}]"
            f"{'' if TFMessage else f'; /tf and the simulation_interfaces services off: {INTERFACES_MISSING}'}"
        )

    # ---- time -----------------------------------------------------------------------------
    def now_ns(self) -> int:
        """Published sim time of the current state [ns]: reset offset + episode time."""
        return self.offset_ns + cv.time_to_ns(self.sim.t)

    def _stamp(self, ns: int) -> Time:
        sec, nsec = cv.ns_to_stamp(ns)
        return Time(sec=sec, nanosec=nsec)

    # ---- publishing -----------------------------------------------------------------------
    def publish_state(self) -> None:
        """/clock, the joint states, and every ``invariants_decimation``-th cycle momentum, CM,
        energy, /tf: contents from ``mbsfmu.sim.messages`` (as the MCAP recorder's)."""
        ns = self.now_ns()
        self.last_ns = ns
        contents = ms.state_messages(
            self.sim,
            self.layout,
            ns,
            self.frame_id,
            invariants=not self.k % self.decimation,
            with_tf=self.pub_tf is not None,
        )
        if self.follow_clock:
            contents.pop(tp.CLOCK)
        for topic, msg in ros_messages(contents).items():
            self.pubs[topic].publish(msg)

    def publish_diagnostics(self, wall: float) -> None:
        """/diagnostics (conservation, constraints, real time, commands, simulation) and /mbs/real_time_factor."""
        statuses: list[dg.Status] = []
        try:
            statuses += dg.conservation_statuses(self.ref_row, dg.checker_row(self.sim), self.checks, self.thresholds)
            c = dg.constraint_status(self.sim.loop_outputs(), *self.thresholds["constraints"])
            if c is not None:
                statuses.append(c)
        except (MbsError, FloatingPointError, ValueError) as e:
            statuses.append(dg.Status("conservation", dg.ERROR, f"checker failed: {e}"))
        summary = self.stats.summary(wall, self.sim.t)
        statuses.append(
            dg.real_time_status(
                summary,
                self.rtf,
                self.lock_step,
                self.paused or self.error is not None,
                *self.thresholds["overrun_fraction"],
            )
        )
        statuses.append(self._commands_status())
        statuses.append(self._simulation_status())
        arr = DiagnosticArray()
        arr.header.stamp = self._stamp(max(self.last_ns, 0))
        for s in statuses:
            arr.status.append(
                DiagnosticStatus(
                    level=bytes([s.level]),
                    name=f"{self.get_fully_qualified_name()}: {s.name}",
                    message=s.message,
                    hardware_id=self.model.name,
                    values=[KeyValue(key=k, value=v) for k, v in s.values.items()],
                )
            )
        self.pub_diag.publish(arr)
        rtf = summary["real_time_factor"]
        if math.isfinite(rtf):
            self.pub_rtf.publish(Float64(data=float(rtf)))

    def _commands_status(self) -> dg.Status:
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

    def _simulation_status(self) -> dg.Status:
        values = {
            "sim_time": f"{self.now_ns() / cv.NS:.9f}",
            "episode_time": f"{self.sim.t:.9f}",
            "resets": str(self.resets),
            "time_offset": f"{self.offset_ns / cv.NS:.9f}",
            "cycles": str(self.k),
            "integrator_steps": str(self.sim.n_steps),
        }
        if self.error:
            return dg.Status("simulation", dg.ERROR, f"engine stopped: {self.error}; call ~/reset", values)
        state = "paused" if self.paused else ("lock-step, waiting for commands" if self.lock_step else "running")
        note = (
            f"; reset {self.resets} time(s), sim time keeps increasing (offset {self.offset_ns / cv.NS:g} s)"
            if self.resets
            else ""
        )
        return dg.Status("simulation", dg.OK, state + note, values)

    # ---- commands --------------------------------------------------------------------------
    def _reject(self, kind: str, text: str) -> None:
        c = self.cmd
        c["rejected"] += 1
        c["last_rejection"], c["last_rejection_wall"] = text, time.monotonic()
        now = time.monotonic()
        if now - self._log_last.get(kind, -math.inf) >= 1.0:  # at most one warning per kind per second
            self._log_last[kind] = now
            self.get_logger().warning(text)

    def _apply(self, values: dict[str, float]) -> None:
        self.sim.set_inputs(values)
        c = self.cmd
        c["accepted"] += 1
        c["last_ns"], c["active"], c["timed_out"] = self.now_ns(), True, False
        if self.lock_step:
            self.lock_go = True

    def _on_effort(self, msg: Float64MultiArray) -> None:
        try:
            values = cv.effort_command_inputs(msg.data, self.sim.input_names)
        except cv.CommandError as e:
            return self._reject("effort", f"/mbs/effort_commands: {e}")
        self._apply(values)

    def _on_joint_command(self, msg: JointState) -> None:
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
            return self._reject("joint", f"/mbs/joint_commands: {e}")
        for name in msg.name:  # a joint commanded anew leaves the servo unless it has a target again
            self.targets.pop(name, None)
        self.targets.update(targets)
        self._apply(efforts)

    def _check_timeout(self) -> None:
        c = self.cmd
        if self.lock_step or not self.timeout_ns or not c["active"]:
            return
        if self.now_ns() - c["last_ns"] > self.timeout_ns:
            self.sim.set_inputs({n: 0.0 for n in self.sim.input_names})
            self.targets.clear()
            c["active"], c["timed_out"] = False, True
            self.get_logger().warning(
                f"no command for more than {self.timeout_ns / cv.NS:g} s of sim time "
                f"(last at t = {c['last_ns'] / cv.NS:.6f} s): inputs set to zero"
            )

    def _on_clock(self, msg: Clock) -> None:
        """An external /clock time: the loop steps the engine to it (the latest one wins)."""
        t = cv.stamp_to_ns(msg.clock.sec, msg.clock.nanosec)
        if t < self.now_ns():
            now = time.monotonic()
            if now - self._log_last.get("clock", -math.inf) >= 1.0:
                self._log_last["clock"] = now
                self.get_logger().warning(
                    f"/clock went back to t = {t / cv.NS:.9f} s (the simulation is at {self.now_ns() / cv.NS:.9f} s): "
                    "ignored; ~/reset restarts the episode"
                )
            return
        self.clock_ns = t

    def follow(self) -> bool:
        """Step to the latest external /clock time and publish; False if the engine failed."""
        t_ns, self.clock_ns = self.clock_ns, None
        return self.advance((t_ns - self.offset_ns) / cv.NS)

    # ---- services --------------------------------------------------------------------------
    def _srv_reset(self, request, response):
        self.reset()
        response.success = True
        response.message = (
            f"reset {self.resets}: initial state at sim time t = {self.now_ns() / cv.NS:.9f} s "
            f"(sim time keeps increasing; episode time 0)"
        )
        return response

    def _srv_pause(self, request, response):
        self.paused = bool(request.data)
        self.stopped = False
        self.reanchor = True
        response.success = True
        response.message = f"{'paused' if self.paused else 'running'} at t = {self.now_ns() / cv.NS:.9f} s"
        self.get_logger().info(response.message)
        return response

    def _srv_step(self, request, response):
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

    # ---- parameters at run time ----------------------------------------------------------
    def _on_set_parameters(self, params) -> SetParametersResult:
        """``ros2 param set`` on a DYNAMIC parameter: checked as at start-up, then applied
        (publish_rate from the next cycle on; gains at once); others are read-only."""
        values = {name: self.get_parameter(name).value for name, *_ in declarations()}
        for prm in params:
            if prm.name in ROS_OWN:
                continue
            if prm.name not in DYNAMIC:
                return SetParametersResult(successful=False, reason=f"{prm.name} is read-only while the node runs")
            values[prm.name] = prm.value
        try:
            p = node_config(values)
        except ConfigError as e:
            return SetParametersResult(successful=False, reason=str(e))
        if p.publish_rate != self.config.publish_rate:
            self.t_base, self.k_base = self.sim.t, self.k
            self.period, self.period_ns = p.period, cv.time_to_ns(p.period)
        self.rtf, self.timeout_ns, self.diag_period = (
            p.real_time_factor,
            cv.time_to_ns(p.command_timeout),
            p.diagnostics_period,
        )
        self.gains = (p.servo_kp, p.servo_kd, p.servo_kv)
        self.config = p
        self.reanchor = True
        self.get_logger().info("parameters set: " + ", ".join(f"{prm.name} = {prm.value!r}" for prm in params))
        return SetParametersResult(successful=True)

    # ---- the loop -------------------------------------------------------------------------
    def cycle(self) -> bool:
        """Advance one publish period and publish; False if the engine failed."""
        return self.advance(self.t_base + (self.k + 1 - self.k_base) * self.period)

    def advance(self, t_end: float) -> bool:
        """Advance the episode to t_end [s] and publish; False if the engine failed. Inputs are
        held, but for servo-driven joints (position/velocity commands), whose PD torques are
        updated every physics_step (the actuator model, cv.servo_efforts): their work enters W_in
        like any input's."""
        try:
            if self.targets:
                h = self.config.physics_step or self.period
                t0 = self.sim.t
                n = max(1, math.ceil((t_end - t0) / h - 1e-9))
                for j in range(1, n + 1):
                    tau = cv.servo_efforts(self.targets, self.servos, self.sim.q, self.sim.qd, *self.gains)
                    self.sim.set_inputs(tau)
                    self.sim.advance_to(t_end if j == n else t0 + j * (t_end - t0) / n)
            else:
                self.sim.advance_to(t_end)
        except SimulationError as e:
            self.error = str(e)
            self.get_logger().error(f"engine stopped: {e}; ~/reset restarts it")
            return False
        self.k += 1
        self.publish_state()
        return True

    def run(self, executor) -> None:
        """Cycle until shutdown: paced, as fast as possible, or in lock-step (see pacing.py)."""
        wall = time.perf_counter
        budget = self.period / self.rtf if self.rtf > 0 else None
        self.stats.start(wall(), self.sim.t)
        self.publish_state()  # the initial state (and /clock) at once, whoever listens, in every mode
        next_diag = wall() + min(self.diag_period, 1e9)
        deadline = wall()
        spun = False
        while rclpy.ok():
            now = wall()
            if now >= next_diag:
                self.publish_diagnostics(now)
                next_diag = max(next_diag + self.diag_period, now + 0.5 * self.diag_period)
            if self.simulation is not None and self.simulation.run_pending_step():
                executor.spin_once(timeout_sec=0.0)  # feedback out, cancel requests in, between steps
                continue
            if self.paused or self.error:
                executor.spin_once(timeout_sec=max(0.0, min(0.05, next_diag - now)))
                self.reanchor = True
                continue
            if self.follow_clock:
                if self.clock_ns is not None and self.clock_ns > self.last_ns:
                    self._check_timeout()
                    self.follow()
                else:
                    executor.spin_once(timeout_sec=max(0.0, min(0.05, next_diag - now)))
                continue
            if self.lock_step:
                n = self.pub_js.get_subscription_count()
                if n > self.lock_subscribers:
                    self.publish_state()  # (re)announce the current state to a new controller
                self.lock_subscribers = n
                if self.lock_go:
                    self.lock_go = False
                    t0 = wall()
                    self.cycle()
                    self.stats.record(0.0, wall() - t0, None)
                else:
                    executor.spin_once(timeout_sec=max(0.0, min(0.05, next_diag - now)))
                continue
            budget = self.period / self.rtf if self.rtf > 0 else None  # parameters may change at run time
            if self.reanchor:
                deadline, self.reanchor = now + (budget or 0.0), False
            if budget is not None:
                wait = deadline - now
                if wait > SPIN_MARGIN:
                    executor.spin_once(timeout_sec=wait - SPIN_MARGIN)
                    spun = True
                    continue
                if wait > 0:
                    time.sleep(wait)
                start = wall()
                lateness = start - deadline
            else:
                start, lateness = wall(), 0.0
            self._check_timeout()
            self.cycle()
            end = wall()
            self.stats.record(lateness, end - start, budget)
            if budget is not None:
                deadline += budget
                if end - deadline > MAX_LAG:
                    self.stats.slip()
                    deadline = end
            if not spun:
                executor.spin_once(timeout_sec=0.0)
            spun = False


def _parse(argv: list[str]) -> argparse.Namespace:
    from rclpy.utilities import remove_ros_args

    parser = argparse.ArgumentParser(prog="python -m mbsfmu_ros", description="mbsfmu ROS 2 node (docs/guides/ros2.md)")
    parser.add_argument("model", nargs="?", help="model file (else parameter model:=PATH)")
    parser.add_argument(
        "--build-interfaces",
        action="store_true",
        help="build tf2_msgs and simulation_interfaces into the per-user cache (if not built yet) and exit",
    )
    parser.add_argument(
        "--no-build-interfaces",
        action="store_true",
        help="do not build them on start where they are missing (the node then runs without /tf and "
        "the simulation_interfaces services)",
    )
    return parser.parse_args(remove_ros_args(argv)[1:])


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m mbsfmu_ros``, ``mbsfmu ros`` and ``ros2 run mbsfmu_ros mbs_node``."""
    argv = list(sys.argv if argv is None else argv)
    args = _parse(argv)
    say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    if args.build_interfaces:
        missing = bind_interfaces(build=True, progress=say)
        if missing:
            print(f"mbsfmu ros: error: {missing}", file=sys.stderr)
            return 2
        where = os.path.dirname(os.path.dirname(sys.modules[TFMessage.__module__.split(".")[0]].__file__))
        print(f"mbsfmu ros: tf2_msgs and simulation_interfaces import (from {where})")
        return 0
    bind_interfaces(build=not args.no_build_interfaces, progress=say)
    rclpy.init(args=argv)
    node = None
    try:
        try:
            node = MbsNode(model=os.path.abspath(args.model) if args.model else None)
        except (MbsError, ValueError, ParameterException) as e:
            print(f"mbsfmu ros: error: {e}", file=sys.stderr)
            return 2
        if node.config.executor == "events":
            from rclpy.experimental import EventsExecutor

            executor = EventsExecutor()
        else:
            executor = SingleThreadedExecutor()
        executor.add_node(node)
        node.run(executor)
    except (KeyboardInterrupt, ExternalShutdownException):  # SIGINT or SIGTERM (rclpy handles both)
        if node is not None:  # what ran, said as `mbsfmu run` says it (issue 20, item 3)
            print(f"mbsfmu ros: stopped by a signal (Ctrl-C or SIGTERM) at t = {node.sim.t:.9g} s", file=sys.stderr)
    except Exception:
        if rclpy.ok():  # a real failure; after SIGINT, publishing may fail on the shut-down context
            raise
    finally:
        if node is not None:
            node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
