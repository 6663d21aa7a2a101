"""The mbsfmu ROS 2 node: runs the engine for one model file and publishes joint states, momentum,
energy and conservation diagnostics; takes actuator commands (docs/reference/ros-interface.md).

Structure after ros2/demos' demo_nodes_py: ``main()`` initialises rclpy and spins, parameters are
declared with defaults (``config.py``), and all message contents come from pure functions
(``mbsfmu.sim.messages``, ``conversion.py``, ``diagnostics.py``). ``MbsNode`` is assembled from one
part per concept: the simulation loop (``loop.py``: the node runs its own loop instead of a timer,
paced against the wall clock by ``pacing.py``, as fast as possible, or in lock-step with a
controller), commands (``commands.py``), publishing (``publishing.py``, rclpy messages from
``ros_messages.py``) and services (``services.py``, ``simulation_services.py``). This module
builds the node from its parameters, applies parameters set at run time, and holds ``main()``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

import rclpy
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool, Trigger

import mbsfmu
from mbsfmu.errors import MbsError
from mbsfmu.sim.simulator import Simulator

from . import conversion as cv
from . import diagnostics as dg
from . import ros_messages as rm
from . import topics as tp
from .clock import ClockMixin
from .commands import CommandsMixin
from .config import DYNAMIC, ROS_OWN, ConfigError, declarations, node_config
from .loop import LoopMixin
from .pacing import PacingStats
from .publishing import PublishingMixin
from .ros_messages import BUILDERS, MESSAGE_CLASSES, bind_interfaces, ros_messages
from .services import ServicesMixin
from .world_node import WorldMixin

__all__ = ["BUILDERS", "MESSAGE_CLASSES", "NODE_NAME", "MbsNode", "bind_interfaces", "main", "ros_messages"]

NODE_NAME = "mbsfmu"


def _descriptor(name: str, text: str, number: bool = False) -> ParameterDescriptor:
    """Read-only unless in ``DYNAMIC`` (``ros2 param set`` then changes it, checked like at
    start-up); a float parameter takes integers too (``publish_rate:=1000``); non-negative ones
    carry their range."""
    d = ParameterDescriptor(description=text, read_only=name not in DYNAMIC, dynamic_typing=number)
    if number and name in DYNAMIC:
        d.floating_point_range = [FloatingPointRange(from_value=0.0, to_value=1e12, step=0.0)]
    return d


class MbsNode(WorldMixin, LoopMixin, ClockMixin, CommandsMixin, PublishingMixin, ServicesMixin, Node):
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
        if p.world:
            self.init_world()  # world_node.py: the robots of a world file, loaded once the node is wired
        else:
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
        self.log_last: dict[str, float] = {}  # kind -> wall time of its last warning
        self.ref_row = dg.checker_row(self.sim) if self.world is None else {}

        self.frame_prefix = p.frame_prefix
        self.qos = qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.follow_clock = p.follow_clock
        self.clock_ns: int | None = None  # the latest external /clock time not yet stepped to
        self.init_clock()
        self.create_outputs(qos)
        if self.follow_clock:
            self.create_subscription(Clock, tp.ros_name(tp.CLOCK), self.on_clock, qos)
        if self.world is None:  # in a world, each robot takes its commands in its namespace
            self.create_subscription(Float64MultiArray, tp.ros_name(tp.EFFORT_COMMANDS), self.on_effort, qos)
            self.create_subscription(JointState, tp.ros_name(tp.JOINT_COMMANDS), self.on_joint_command, qos)
        self.create_service(Trigger, "~/reset", self.srv_reset)
        self.create_service(SetBool, "~/pause", self.srv_pause)
        self.create_service(Trigger, "~/step", self.srv_step)
        self.simulation = None  # simulation_interfaces services, where the package imports
        if rm.INTERFACES_MISSING is None:
            from .named_pose_services import NamedPoseServices
            from .simulation_services import SimulationServices

            self.simulation = SimulationServices(self)
            self.named_pose_services = NamedPoseServices(self)
        self.trajectory = None  # joint_trajectory_controller's topic and action, where control_msgs imports
        if rm.INTERFACES_MISSING is None and self.world is None:  # in a world, each robot has its own (robots.py)
            from .trajectory_controller import TrajectoryController

            self.trajectory = TrajectoryController(self)
        if self.world is not None:
            self.load_world_file(p.world)
            if rm.INTERFACES_MISSING is None:
                from .world_services import serve_world

                serve_world(self)
        self.add_on_set_parameters_callback(self._on_set_parameters)

        if self.world is not None:
            robots = ", ".join(f"{r.name} ({r.model.name}, {r.spec.namespace})" for r in self.world.robots.values())
            self.get_logger().info(f"world {self.world.spec.name} ({p.world}): robots {robots}; cycle {self.period:g}")
            return
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
            f"{'' if rm.TFMessage else f'; /tf and the simulation_interfaces services off: {rm.INTERFACES_MISSING}'}"
        )

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
        where = os.path.dirname(os.path.dirname(sys.modules[rm.TFMessage.__module__.split(".")[0]].__file__))
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
        if node.quitting:  # simulation_interfaces' STATE_QUITTING: said as a signal's stop is
            print(
                f"mbsfmu ros: quit by set_simulation_state (STATE_QUITTING) at t = {node.now_ns() / 1e9:.9g} s",
                file=sys.stderr,
            )
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
