"""The node's world mode (docs/guides/ros2.md, "A world of several robots"): with the parameter
``world`` the node runs the robots of a world file (``world.py``), each its own engine model
(``robots.py``), all stepped by the node's one loop to one time: one /clock, one cycle, one /tf
(frames prefixed per robot), each robot's joint states, energy, commands and robot_description
under its namespace.

``WorldMixin`` is one part of ``MbsNode``, ahead of the one-model parts: where ``world`` is None
each method hands over to them (``super()``). In world mode the node's ``sim`` is the ``World``
(``robots.World``: episode time, ``advance_to`` for all robots), so the loop (``loop.py``), the
clock, pacing, pause, step and the simulation services run unchanged.
"""

from __future__ import annotations

import mbsfmu
from mbsfmu.errors import MbsError, Problem
from mbsfmu.sim import messages as ms

from . import conversion as cv
from . import diagnostics as dg
from . import ros_messages as rm
from . import topics as tp
from .robots import LATCHED, Robot, World
from .state_messages import ClockMessage, TfMessage
from .world import RobotSpec, WorldError, WorldSpec, load_world


class WorldMixin:
    """World mode of MbsNode: robots, their outputs, diagnostics and reset."""

    world: World | None = None
    tf_robots: tuple[Robot, ...] = ()  # the robots (in order) the world's /tf message was built for
    tf_msg: TfMessage | None = None

    def init_world(self) -> None:
        """World mode before the outputs exist: the node's ``sim`` is an empty ``World``, no
        model, layout or commands of its own (each robot has them)."""
        self.world = World()
        self.sim = self.world
        self.model = None
        self.layout = None
        self.checks, self.aliases, self.servos = [], {}, {}

    def robot(self, spec: RobotSpec, model=None) -> Robot:
        """Add a robot (its model loaded from ``spec.model`` unless given) at the current time;
        MbsError (ModelError, InputError) where the model does not load."""
        robot = Robot(self, spec, model if model is not None else mbsfmu.load_model(spec.model))
        self.world.add(robot)
        return robot

    def delete_robot(self, name: str) -> None:
        self.world.remove(name)
        self.publish_static()

    def open_world(self, spec: WorldSpec) -> None:
        """Replace the robots by those of ``spec``: every model is loaded first, so a model that
        does not load (WorldError naming its robot and the model's problems) leaves the current
        robots as they are."""
        models, problems = {}, []
        for k, r in enumerate(spec.robots):
            try:
                models[r.name] = mbsfmu.load_model(r.model)
            except MbsError as e:
                problems.append(Problem(("robots", k, "model"), f"the model does not load: {e}"))
        if problems:
            raise WorldError(problems, spec.source)
        self.close_world()
        for r in spec.robots:
            self.robot(r, models[r.name])
        self.world.spec = spec
        self.publish_static()

    def close_world(self) -> None:
        """Remove every robot (and forget the world file)."""
        for name in list(self.world.robots):
            self.world.remove(name)
        self.world.spec = None
        self.publish_static()

    def load_world_file(self, path: str) -> None:
        self.open_world(load_world(path))

    # ---- outputs --------------------------------------------------------------------------
    def create_outputs(self, qos) -> None:
        if self.world is None:
            return super().create_outputs(qos)
        from diagnostic_msgs.msg import DiagnosticArray
        from std_msgs.msg import Float64

        self.pubs = {}
        self.clock_msg = ClockMessage()  # /clock as CDR bytes, as a single model's (state_messages.py)
        if not self.follow_clock:
            self.pubs[tp.CLOCK] = self.create_publisher(rm.MESSAGE_CLASSES[tp.CLOCK], tp.ros_name(tp.CLOCK), qos)
        self.pub_js = None
        self.pub_diag = self.create_publisher(DiagnosticArray, tp.ros_name(tp.DIAGNOSTICS), qos)
        self.pub_rtf = self.create_publisher(Float64, tp.ros_name(tp.REAL_TIME_FACTOR), qos)
        self.pub_tf = self.pub_tf_static = None
        if rm.TFMessage is not None and self.config.publish_tf:
            self.pub_tf = self.pubs[tp.TF] = self.create_publisher(rm.TFMessage, tp.ros_name(tp.TF), 100)
            self.pub_tf_static = self.create_publisher(rm.TFMessage, tp.ros_name(tp.TF_STATIC), LATCHED)

    def publish_static(self) -> None:
        """/tf_static of the whole world (latched: each message replaces the last for late
        joiners): every robot's base pose and fixed frames."""
        if getattr(self, "pub_tf_static", None) is None:
            return
        ns = max(self.last_ns, 0)
        transforms = []
        for r in self.world.robots.values():
            transforms.append(r.base_transform(ns, self.frame_id))
            transforms += r.static_transforms(ns)
        self.pub_tf_static.publish(rm.BUILDERS[tp.TF]({"transforms": transforms}))

    def publish_state(self) -> None:
        """/clock, each robot's state topics in its namespace, and one /tf for all of them."""
        if self.world is None:
            return super().publish_state()
        ns = self.now_ns()
        self.last_ns = ns
        invariants = not self.k % self.decimation
        if tp.CLOCK in self.pubs:
            self.send(self.pubs[tp.CLOCK], self.clock_msg.fill(*ms.ns_to_stamp(ns)))
            self.clock_published = True
        robots = list(self.world.robots.values())
        for r in robots:
            for topic, data in r.state_msgs.fill_joint_states(r.sim, ns, with_clock=False).items():
                self.send(r.pubs[topic], data)
        if invariants:
            for r in robots:
                for topic, data in r.state_msgs.fill_invariants(r.sim, ns).items():
                    self.send(r.pubs[topic], data)
        if self.pub_tf is not None and invariants and robots:
            self.send(self.pub_tf, self.world_tf(robots).fill([r.sim for r in robots], *ms.ns_to_stamp(ns)))

    def world_tf(self, robots: list[Robot]) -> TfMessage:
        """The one /tf of the robots (CDR, ``state_messages.TfMessage``), built again when they change
        (compared by identity, the robots held: a deleted robot's id may be a new one's)."""
        same = len(robots) == len(self.tf_robots) and all(a is b for a, b in zip(robots, self.tf_robots))
        if self.tf_msg is None or not same:
            self.tf_robots = tuple(robots)
            self.tf_msg = TfMessage([(r.model, self.frame_id, r.spec.frame_prefix) for r in robots])
        return self.tf_msg

    # ---- diagnostics ----------------------------------------------------------------------
    def engine_snapshots(self) -> list[dg.EngineSnapshot]:
        """Each robot's state for its conservation and constraint statuses, named ``<robot>: <check>``."""
        if self.world is None:
            return super().engine_snapshots()
        return [dg.engine_snapshot(r.sim, r.ref_row, r.checks, f"{r.name}: ") for r in self.world.robots.values()]

    def hardware_id(self) -> str:
        if self.world is None:
            return super().hardware_id()
        return self.world.spec.name if self.world.spec is not None else "world"

    # ---- commands -------------------------------------------------------------------------
    def check_timeout(self) -> None:
        """``command_timeout`` per robot: a robot without a command for longer has its inputs
        zeroed and its servo targets dropped."""
        if self.world is None:
            return super().check_timeout()
        if not self.timeout_ns:
            return
        now = self.now_ns()
        for r in self.world.robots.values():
            if r.check_timeout(now, self.timeout_ns):
                self.cmd.update(active=False, timed_out=True)
                self.get_logger().warning(
                    f"{r.name}: no command for more than {self.timeout_ns / cv.NS:g} s of sim time: inputs set to zero"
                )

    # ---- reset ----------------------------------------------------------------------------
    def reset(self, with_time: bool = False) -> None:
        """Every robot to its initial state and base pose; sim time goes on as in the one-model
        reset (``services.py``): from the last published stamp plus one cycle, or with
        ``with_time`` restarts at 0 (ResetSimulation's SCOPE_TIME)."""
        if self.world is None:
            return super().reset(with_time)
        self.offset_ns = 0 if with_time else max(self.last_ns, self.now_ns()) + self.period_ns
        if with_time:
            self.last_ns = -1
        self.world.t = 0.0
        for r in self.world.robots.values():
            r.restart(0.0)
        self.k = 0
        self.t_base, self.k_base = 0.0, 0
        self.error = None
        self.resets += 1
        self.cmd.update(active=False, timed_out=False, last_ns=None)
        self.reanchor = True
        self.get_logger().info(
            f"reset {self.resets}: every robot restarts from its initial state; sim time continues "
            f"at t = {self.now_ns() / cv.NS:.9f} s"
        )
        self.publish_static()
        self.publish_state()

    def restart_time(self) -> None:
        """Sim time back to 0 with every robot's state kept (ResetSimulation's SCOPE_TIME alone),
        as the one-model node's ``restart_time``; each robot's diagnostics take its state as their
        new reference."""
        if self.world is None:
            return super().restart_time()
        self.offset_ns, self.last_ns = 0, -1
        self.world.t = 0.0
        for r in self.world.robots.values():
            r.sim.t = 0.0
            r.ref_row = dg.checker_row(r.sim)
        self.k = 0
        self.t_base, self.k_base = 0.0, 0
        self.reanchor = True
        self.get_logger().info("sim time restarts at t = 0 s; every robot's state is kept")
        self.publish_state()
