"""The node's outputs (docs/reference/ros-interface.md, "Topics"): the publishers, the state each
cycle (/clock, joint states, momentum, CM, energy, /tf), the latched URDF and fixed frames, and
/diagnostics with /mbs/real_time_factor.

``PublishingMixin`` is one part of ``MbsNode``: it uses the node's ``sim``, ``model``, ``layout``,
``k``, ``decimation``, ``frame_id``, ``frame_prefix``, ``follow_clock``, the diagnostics' ``ref_row``, ``checks``,
``thresholds``, ``stats`` and the run's state, and sets ``last_ns``. Message contents come from
``mbsfmu.sim.messages`` and ``diagnostics.py`` (pure), their rclpy form from ``ros_messages.py``
(the state topics': ``state_messages.py``, CDR bytes patched in place and published as they are).
"""

from __future__ import annotations

import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Float64, String

from mbsfmu.errors import MbsError
from mbsfmu.io.urdf_export import robot_description
from mbsfmu.sim import messages as ms

from . import conversion as cv
from . import diagnostics as dg
from . import ros_messages as rm
from . import scheduling
from . import topics as tp
from .state_messages import StateMessages


class PublishingMixin:
    """Publishers and what MbsNode publishes."""

    publish_failures = 0  # messages the middleware refused (``send``), in every mode

    def create_outputs(self, qos: QoSProfile) -> None:
        """Every output publisher; the URDF and the fixed frames published once, latched."""
        self.pubs = {
            topic: self.create_publisher(rm.MESSAGE_CLASSES[topic], tp.ros_name(topic), qos)
            for topic in ms.state_topics(self.layout)
            if topic != tp.TF and not (topic == tp.CLOCK and self.follow_clock)  # one /clock per graph
        }
        self.pub_js = self.pubs[tp.JOINT_STATES]
        self.pub_diag = self.create_publisher(DiagnosticArray, tp.ros_name(tp.DIAGNOSTICS), qos)
        self.pub_rtf = self.create_publisher(Float64, tp.ros_name(tp.REAL_TIME_FACTOR), qos)
        tf_message = rm.TFMessage if self.config.publish_tf else None
        self.pub_tf = None
        if tf_message is not None:
            self.pub_tf = self.create_publisher(tf_message, tp.ros_name(tp.TF), QoSProfile(depth=ms.TF_DEPTH))
            self.pubs[tp.TF] = self.pub_tf
        # once, for late joiners too (transient local): the URDF (RViz, robot_state_publisher) and the
        # fixed frames (URDF links lumped into their bodies) on their bodies
        latched = QoSProfile(
            depth=ms.LATCHED_DEPTH, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
        )
        self.pub_description = self.create_publisher(String, tp.ros_name(tp.ROBOT_DESCRIPTION), latched)
        try:  # a model with closed loops has no URDF (one tree): it runs without robot_description
            self.pub_description.publish(String(data=robot_description(self.model)))
        except MbsError as e:
            self.get_logger().warning(f"no robot_description: {e}")
        if tf_message is not None:
            self.pub_tf_static = self.create_publisher(tf_message, tp.ros_name(tp.TF_STATIC), latched)
            static = cv.with_frame_prefix({tp.TF_STATIC: ms.tf_static(self.model, 0)}, self.frame_prefix)
            self.pub_tf_static.publish(rm.BUILDERS[tp.TF](static[tp.TF_STATIC]))
        with_tf = tf_message is not None
        self.state_msgs = StateMessages(self.model, self.layout, self.frame_id, self.frame_prefix, with_tf)

    def send(self, pub, msg) -> bool:
        """Publish msg on pub; False when the middleware refuses it (rclpy's RCLError, a
        RuntimeError: a reliable subscriber that stops reading fills the writer's history and the
        write times out). Counted (``publish_failures``, in the ``simulation`` status) and warned
        about at most once a second: a reader never ends the simulation."""
        try:
            pub.publish(msg)
            return True
        except RuntimeError as e:
            self.publish_failures += 1
            try:
                topic = pub.topic_name
            except RuntimeError:  # the publisher's handle is gone
                topic = "a publisher"
            self.warn_throttled(
                "publish",
                f"{topic}: a message was not sent ({str(e).strip()}); {self.publish_failures} so far "
                "(a reliable subscriber that stopped reading?)",
            )
            return False

    def publish_state(self) -> None:
        """/clock, the joint states, and every ``invariants_decimation``-th cycle momentum, CM,
        energy, /tf: the contents of ``mbsfmu.sim.messages`` (as the MCAP recorder's), patched into
        CDR bytes built once (``state_messages.py``) and published as serialised messages."""
        ns = self.now_ns()
        self.last_ns = ns
        with_clock = tp.CLOCK in self.pubs  # not when following another /clock, or yielded to one (clock.py)
        msgs = self.state_msgs.fill(self.sim, ns, invariants=not self.k % self.decimation, with_clock=with_clock)
        for topic, msg in msgs.items():
            self.send(self.pubs[topic], msg)
        self.clock_published = self.clock_published or with_clock

    def publish_diagnostics(self, wall: float) -> None:
        """/diagnostics (conservation, constraints, real time, commands, simulation) and /mbs/real_time_factor."""
        statuses = self.engine_statuses()
        summary = self.stats.summary(wall, self.sim.t)
        statuses.append(
            dg.real_time_status(
                summary,
                self.rtf,
                self.lock_step,
                self.paused or self.error is not None,
                *self.thresholds["overrun_fraction"],
                scheduling.in_effect(),
            )
        )
        statuses.append(self.commands_status())
        statuses.append(self.clock_status())
        statuses.append(self.simulation_status())
        arr = DiagnosticArray()
        arr.header.stamp = rm.stamp(max(self.last_ns, 0))
        for s in statuses:
            arr.status.append(
                DiagnosticStatus(
                    level=bytes([s.level]),
                    name=f"{self.get_fully_qualified_name()}: {s.name}",
                    message=s.message,
                    hardware_id=self.hardware_id(),
                    values=[KeyValue(key=k, value=v) for k, v in s.values.items()],
                )
            )
        self.send(self.pub_diag, arr)
        rtf = summary["real_time_factor"]
        if math.isfinite(rtf):
            self.send(self.pub_rtf, Float64(data=float(rtf)))

    def engine_statuses(self) -> list[dg.Status]:
        """The engine's diagnostics: conservation checks and constraint drift."""
        statuses: list[dg.Status] = []
        try:
            statuses += dg.conservation_statuses(self.ref_row, dg.checker_row(self.sim), self.checks, self.thresholds)
            c = dg.constraint_status(self.sim.loop_outputs(), *self.thresholds["constraints"])
            if c is not None:
                statuses.append(c)
        except (MbsError, FloatingPointError, ValueError) as e:
            statuses.append(dg.Status("conservation", dg.ERROR, f"checker failed: {e}"))
        return statuses

    def hardware_id(self) -> str:
        """hardware_id of the diagnostics: the model's name."""
        return self.model.name

    def simulation_status(self) -> dg.Status:
        values = {
            "sim_time": f"{self.now_ns() / cv.NS:.9f}",
            "episode_time": f"{self.sim.t:.9f}",
            "resets": str(self.resets),
            "time_offset": f"{self.offset_ns / cv.NS:.9f}",
            "cycles": str(self.k),
            "integrator_steps": str(self.sim.n_steps),
            "publish_failures": str(self.publish_failures),
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
