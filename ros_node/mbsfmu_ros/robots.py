"""The robots of the node's world (docs/guides/ros2.md, "A world of several robots"): each
``Robot`` is its own engine model and ``Simulator`` with its topics under its namespace, and the
``World`` steps them all to one time, so one /clock and one cycle serve them all. The robots do
not interact physically: no contact, no force between them; each keeps its model's own gravity,
in its own world frame, which the robot's base pose places in the node's world frame.

Frames: a robot publishes every frame with its ``frame_prefix`` (``scara/link1``), its model's
world frame as ``<frame_prefix><frame_id>``; the world's /tf_static carries each robot's base pose
as the transform ``frame_id -> <frame_prefix><frame_id>``.
"""

from __future__ import annotations

import math

import numpy as np
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String

from mbsfmu.engine.spatial import R_to_quat, quat_to_R
from mbsfmu.errors import MbsError
from mbsfmu.io.urdf_export import robot_description
from mbsfmu.sim import messages as ms
from mbsfmu.sim.simulator import SimulationError, Simulator

from . import conversion as cv
from . import diagnostics as dg
from . import entity_state as es
from . import ros_messages as rm
from . import topics as tp
from .state_messages import StateMessages
from .world import RobotSpec

LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)
ROBOT_TOPICS = (  # a robot's own outputs, under its namespace (/clock, /tf, /diagnostics are the world's)
    tp.JOINT_STATES,
    tp.MULTI_DOF_JOINT_STATES,
    tp.CENTROIDAL_MOMENTUM,
    tp.COM,
    tp.COM_VELOCITY,
    tp.ENERGY,
)


def robot_topic(namespace: str, topic: str) -> str:
    """``topic`` (a name of ``topics``) under a robot's namespace: ``scara/joint_states``,
    ``/fleet/a/mbs/energy`` (relative namespaces stay relative to the node's)."""
    return f"{namespace.rstrip('/')}/{topic.lstrip('/')}"


class Robot:
    """One robot of the world: ``spec`` (name, namespace, frame prefix), its ``model`` and ``sim``,
    its base pose (``position`` [m], ``orientation`` (x, y, z, w) of its world frame in the node's
    world frame), its command inputs (effort and joint commands, servos as in the one-model node;
    trajectories through its own ``trajectory`` controller, where control_msgs imports) and
    publishers."""

    def __init__(self, node, spec: RobotSpec, model):
        p = node.config
        self.node, self.spec, self.name, self.model = node, spec, spec.name, model
        try:  # a model with closed loops has no URDF (one tree): no robot_description then
            urdf = robot_description(model)
        except MbsError as e:
            urdf = None
            node.get_logger().warning(f"{spec.name}: no robot_description: {e}")
        self.sim = Simulator(model, integrator=p.integrator, h_max=p.physics_step, rtol=p.rtol, atol=p.atol)
        self.position, self.orientation = tuple(spec.position), tuple(spec.orientation)
        self.layout = cv.joint_layout(model)
        self.aliases = cv.command_aliases(model, self.sim.input_names)
        self.servos = cv.servo_joints(model, self.sim.input_names)
        self.targets: dict[str, cv.JointTarget] = {}
        self.last_command_ns: int | None = None  # sim time of the last command still held [ns]
        self.checks = dg.resolve_checks(list(p.checks), model)
        self.ref_row = dg.checker_row(self.sim)
        self.tags: list[str] = []
        self.description = ""
        self.category = 1  # simulation_interfaces EntityCategory.CATEGORY_ROBOT
        ns = spec.namespace
        self.pubs = {
            topic: node.create_publisher(rm.MESSAGE_CLASSES[topic], robot_topic(ns, topic), node.qos)
            for topic in ms.state_topics(self.layout)
            if topic in ROBOT_TOPICS
        }
        # its state topics as CDR bytes filled in place (/tf is the world's: one for every robot)
        self.state_msgs = StateMessages(model, self.layout, node.frame_id, spec.frame_prefix, with_tf=False)
        self.pub_description = node.create_publisher(String, robot_topic(ns, tp.ROBOT_DESCRIPTION), LATCHED)
        if urdf is not None:
            self.pub_description.publish(String(data=urdf))
        self.subs = [
            node.create_subscription(Float64MultiArray, robot_topic(ns, tp.EFFORT_COMMANDS), self.on_effort, node.qos),
            node.create_subscription(JointState, robot_topic(ns, tp.JOINT_COMMANDS), self.on_joint_command, node.qos),
        ]
        self.trajectory = None  # joint_trajectory_controller's topic and action in the robot's namespace
        if rm.INTERFACES_MISSING is None:
            from .trajectory_controller import TrajectoryController

            self.trajectory = TrajectoryController(node, self, lambda topic: robot_topic(ns, topic), f"{self.name}: ")

    def now_ns(self) -> int:
        """Published sim time of the robot's state [ns] (ahead of the node's while the world steps)."""
        return self.node.offset_ns + cv.time_to_ns(self.sim.t)

    # ---- commands ----------------------------------------------------------------------------
    def on_effort(self, msg: Float64MultiArray) -> None:
        try:
            values = cv.effort_command_inputs(msg.data, self.sim.input_names)
        except cv.CommandError as e:
            return self.reject("effort", f"effort command: {e}")
        self.apply(values)

    def on_joint_command(self, msg: JointState) -> None:
        n = self.node
        try:
            cv.check_command_stamp(
                cv.stamp_to_ns(msg.header.stamp.sec, msg.header.stamp.nanosec), n.now_ns(), n.timeout_ns, False
            )
            efforts, targets = cv.joint_command(
                list(msg.name), msg.position, msg.velocity, msg.effort, self.aliases, self.servos
            )
        except cv.CommandError as e:
            return self.reject("joint", f"joint command: {e}")
        if self.trajectory is not None:  # a joint command takes its joints from a trajectory
            self.trajectory.stop("a joint command", msg.name)
        for name in msg.name:
            self.targets.pop(name, None)
        self.targets.update(targets)
        self.apply(efforts)

    def reject(self, kind: str, text: str) -> None:
        """A rejected command, counted and logged by the node with the robot's name."""
        self.node.reject(f"{kind} {self.name}", f"{self.name}: {text}")

    def apply(self, values: dict[str, float] | np.ndarray) -> None:
        """Set the inputs of an accepted command (held until the next one or the timeout), by name
        or all of them in ``input_names`` order, counted in the node's ``commands`` status."""
        if isinstance(values, dict):
            self.sim.set_inputs(values)
        else:
            self.sim.u[:] = values
        self.last_command_ns = self.node.now_ns()
        c = self.node.cmd
        c["accepted"] += 1
        c["last_ns"], c["active"], c["timed_out"] = self.last_command_ns, True, False

    def renew_command(self) -> None:
        """The command timeout counts from now (a trajectory being followed, as JTC's cmd_timeout)."""
        self.last_command_ns = self.node.cmd["last_ns"] = self.now_ns()

    def check_timeout(self, now_ns: int, timeout_ns: int) -> bool:
        """Zero the inputs and drop the servo targets after timeout_ns [ns] of sim time without
        a command (as the one-model node's ``command_timeout``); True when it did."""
        if self.last_command_ns is None or now_ns - self.last_command_ns <= timeout_ns:
            return False
        self.sim.set_inputs({n: 0.0 for n in self.sim.input_names})
        self.targets.clear()
        if self.trajectory is not None:
            self.trajectory.stop("the command timeout")
        self.last_command_ns = None
        return True

    def actuator_efforts(self, h: float = 0.0) -> dict[str, float]:
        """The servo-driven joints' torques over the next physics step of h [s] (as the one-model
        node's ``actuator_efforts``): a followed trajectory first sets its joints' targets, with the
        feed-forward at the step's midpoint."""
        if self.trajectory is not None:
            self.trajectory.step(h)
        return cv.servo_torques(self.model, self.sim, self.targets, self.servos, self.node.gains)

    # ---- stepping and state ------------------------------------------------------------------
    def advance_to(self, t_end: float) -> None:
        """Advance to episode time t_end [s] (servo torques updated every physics_step, as the
        one-model node's loop does); SimulationError names the robot."""
        try:
            if self.targets:
                h = self.node.config.physics_step or (t_end - self.sim.t)
                cv.advance_servoed(self.sim, t_end, h, self.actuator_efforts)
            else:
                self.sim.advance_to(t_end)
        except SimulationError as e:
            raise SimulationError(f"robot {self.name!r}: {e}") from None

    def restart(self, t: float) -> None:
        """The model's initial state at episode time t [s], zero inputs, the base pose of the spec."""
        q, qd = self.model.initial_state()
        self.sim.set_configuration(q, qd)
        self.sim.set_inputs({n: 0.0 for n in self.sim.input_names})
        self.sim.t = t
        self.targets.clear()
        if self.trajectory is not None:
            self.trajectory.stop("a reset")
        self.last_command_ns = None
        self.position, self.orientation = tuple(self.spec.position), tuple(self.spec.orientation)
        self.ref_row = dg.checker_row(self.sim)

    def base_transform(self, ns: int, frame_id: str) -> dict:
        """/tf_static entry of the base pose: ``frame_id -> <frame_prefix><frame_id>``."""
        return {
            "header": ms.header(ns, frame_id),
            "child_frame_id": self.spec.frame_prefix + frame_id,
            "transform": {
                "translation": dict(zip("xyz", self.position)),
                "rotation": dict(zip("xyzw", self.orientation)),
            },
        }

    def static_transforms(self, ns: int) -> list[dict]:
        """The model's fixed frames (``ms.tf_static``), prefixed."""
        return cv.with_frame_prefix({tp.TF_STATIC: ms.tf_static(self.model, ns)}, self.spec.frame_prefix)[tp.TF_STATIC][
            "transforms"
        ]

    def placement(self) -> tuple[np.ndarray, np.ndarray]:
        """(R_w (3, 3), p_w (3,) [m]): the robot's world frame in the node's world frame."""
        x, y, z, w = self.orientation
        return quat_to_R(np.array([w, x, y, z])), np.asarray(self.position, dtype=float)

    def base_state(self) -> es.BodyState:
        """The entity state of the robot: its floating base's pose and twist (world axes) where it
        has one, else its base pose (the placement) at rest."""
        R_w, p_w = self.placement()
        i = es.floating_base(self.model)
        if i is None:
            return es.BodyState(tuple(self.position), tuple(self.orientation), (0.0,) * 3, (0.0,) * 3)
        s = es.body_state(self.sim.kinematics(), i)
        x, y, z, w = s.orientation
        R = R_w @ quat_to_R(np.array([w, x, y, z]))
        qw, qx, qy, qz = R_to_quat(R)
        return es.BodyState(
            tuple(float(v) for v in p_w + R_w @ np.asarray(s.position)),
            (float(qx), float(qy), float(qz), float(qw)),
            tuple(float(v) for v in R_w @ np.asarray(s.linear)),
            tuple(float(v) for v in R_w @ np.asarray(s.angular)),
        )

    def set_base_state(self, pose: es.BodyState | None, twist: es.BodyState | None) -> None:
        """Move the robot: a fixed-base robot's base pose is its placement (a twist is refused:
        EntityError); a floating base is set through its free joint (``es.set_base_state``) with
        pose and twist taken from the world frame into the robot's. InvalidState for a non-unit
        quaternion or a non-finite value."""
        i = es.floating_base(self.model)
        if pose is not None:
            x, y, z, w = pose.orientation
            norm = math.sqrt(x * x + y * y + z * z + w * w)
            if not all(math.isfinite(v) for v in (*pose.position, *pose.orientation)):
                raise es.InvalidState(f"pose of {self.name!r} is not finite")
            if abs(norm - 1.0) > es.UNIT_TOLERANCE:
                raise es.InvalidState(f"orientation of {self.name!r} is no unit quaternion (norm {norm:.9g})")
        if i is None:
            if twist is not None and any(v != 0.0 for v in (*twist.linear, *twist.angular)):
                raise es.EntityError(f"entity {self.name!r} has a fixed base: it takes a pose, not a twist")
            if pose is not None:
                self.position = tuple(float(v) for v in pose.position)
                self.orientation = tuple(float(v) / norm for v in pose.orientation)
            return
        R_w, p_w = self.placement()
        local_pose = local_twist = None
        if pose is not None:
            x, y, z, w = pose.orientation
            R = R_w.T @ quat_to_R(np.array([w, x, y, z]) / norm)
            qw, qx, qy, qz = R_to_quat(R)
            position = R_w.T @ (np.asarray(pose.position, dtype=float) - p_w)
            local_pose = es.BodyState(tuple(position), (qx, qy, qz, qw), (0.0,) * 3, (0.0,) * 3)
        if twist is not None:
            local_twist = es.BodyState(
                (0.0,) * 3,
                (0.0,) * 4,
                tuple(R_w.T @ np.asarray(twist.linear, dtype=float)),
                tuple(R_w.T @ np.asarray(twist.angular, dtype=float)),
            )
        name = self.model.body_names[i - 1]
        q, qd = es.set_base_state(
            self.model, self.sim.kinematics(), self.sim.q, self.sim.qd, name, local_pose, local_twist
        )
        self.sim.set_configuration(q, qd)
        self.ref_row = dg.checker_row(self.sim)

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Axis-aligned box (lower, upper corner [m]) around every point of the model we know the
        place of in the current configuration: body origins, body centres of mass and named
        frames, in the axes of the entity's canonical frame (the floating base body, else the
        robot's world frame) and relative to it. No link extents: the model has no geometry."""
        kin = self.sim.kinematics()
        com = self.model.tree.com  # (N+1, 3) centre of mass in body axes [m]
        points = [kin.p[i] for i in range(1, self.model.N + 1)]
        points += [kin.p[i] + kin.R[i] @ com[i] for i in range(1, self.model.N + 1)]
        for i, fr in self.model.frames.values():
            points.append(kin.p[i] + kin.R[i] @ fr.p)
        P = np.array(points)
        b = es.floating_base(self.model)
        if b is not None:
            P = (P - kin.p[b]) @ kin.R[b]  # rows: R_b^T (p - p_b)
        return P.min(axis=0), P.max(axis=0)

    def destroy(self) -> None:
        """Remove the robot's publishers, subscriptions and trajectory controller (its action server)."""
        if self.trajectory is not None:
            self.trajectory.destroy()
        for pub in (*self.pubs.values(), self.pub_description):
            self.node.destroy_publisher(pub)
        for sub in self.subs:
            self.node.destroy_subscription(sub)


class World:
    """The robots the node runs, stepped to one time: the node's ``sim`` in world mode (episode
    time ``t`` [s], ``advance_to``, ``n_steps``; no inputs of its own: commands go to a robot's
    namespace). ``spec`` is the loaded world file (None when none is loaded)."""

    input_names: tuple[str, ...] = ()

    def __init__(self):
        self.robots: dict[str, Robot] = {}
        self.spec = None
        self.t = 0.0

    @property
    def u(self) -> np.ndarray:
        return np.zeros(0)

    @property
    def n_steps(self) -> int:
        return sum(r.sim.n_steps for r in self.robots.values())

    def set_inputs(self, values: dict[str, float]) -> None:
        """No world-level inputs: only the empty set (the node's command timeout) is accepted."""
        if values:
            raise ValueError(f"a world has no inputs of its own: {', '.join(values)} (command a robot's namespace)")

    def advance_to(self, t_end: float) -> None:
        """Every robot to episode time t_end [s], one after the other (none acts on another)."""
        for robot in self.robots.values():
            robot.advance_to(t_end)
        self.t = t_end

    def add(self, robot: Robot) -> None:
        robot.sim.t = self.t
        self.robots[robot.name] = robot

    def remove(self, name: str) -> None:
        self.robots.pop(name).destroy()
