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
import sys
from concurrent.futures import ThreadPoolExecutor

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

GIL_SWITCH_INTERVAL = 2e-4  # [s] at most, once the diagnostics thread runs (sys.setswitchinterval)


class PublishingMixin:
    """Publishers and what MbsNode publishes."""

    publish_failures = 0  # messages the middleware refused (``send``), in every mode
    diag_worker: ThreadPoolExecutor | None = None  # runs the conservation checks off the loop thread
    diag_pending = None  # (the check's future, failed statuses, other statuses, stamp [ns], real-time factor)

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
        CDR bytes built once (``state_messages.py``) and published as serialised messages. /clock
        and the joint states go out before the invariants and /tf are computed: a lock-step
        controller works on its state while the node fills the rest."""
        ns = self.now_ns()
        self.last_ns = ns
        with_clock = tp.CLOCK in self.pubs  # not when following another /clock, or yielded to one (clock.py)
        for topic, msg in self.state_msgs.fill_joint_states(self.sim, ns, with_clock).items():
            self.send(self.pubs[topic], msg)
        self.clock_published = self.clock_published or with_clock
        if not self.k % self.decimation:
            for topic, msg in self.state_msgs.fill_invariants(self.sim, ns).items():
                self.send(self.pubs[topic], msg)

    def publish_diagnostics(self, wall: float) -> None:
        """/diagnostics (conservation, constraints, real time, commands, simulation) and
        /mbs/real_time_factor. The state is copied now (``engine_snapshots``, 0.03-0.1 ms) and the
        independent checker runs on the copy in the diagnostics thread (1.3-4.6 ms on the SCARA and
        G1: a stall of the loop if run in its cycle), the loop taking the GIL back within
        ``GIL_SWITCH_INTERVAL``; ``flush_diagnostics`` publishes the message once the check is
        done. A diagnostics period that comes while a check still runs is skipped."""
        if self.diag_pending is not None:
            return
        failed: list[dg.Status] = []
        try:
            engine = self.engine_snapshots()
        except (MbsError, FloatingPointError, ValueError) as e:
            engine, failed = [], [dg.Status("conservation", dg.ERROR, f"checker failed: {e}")]
        summary = self.stats.summary(wall, self.sim.t)
        statuses = [
            dg.real_time_status(
                summary,
                self.rtf,
                self.lock_step,
                self.paused or self.error is not None,
                *self.thresholds["overrun_fraction"],
                scheduling.in_effect(),
            ),
            self.commands_status(),
            self.clock_status(),
            self.simulation_status(),
        ]
        if self.diag_worker is None:  # started from the loop thread: it inherits its scheduling
            self.diag_worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mbsfmu-diagnostics")
            # the loop waiting for the GIL waits out the checker's slice: Python's 5 ms would stall it as before
            sys.setswitchinterval(min(sys.getswitchinterval(), GIL_SWITCH_INTERVAL))
        check = self.diag_worker.submit(dg.engine_statuses, engine, dict(self.thresholds))
        self.diag_pending = (check, failed, statuses, max(self.last_ns, 0), summary["real_time_factor"])

    def flush_diagnostics(self, wait: bool = False) -> bool:
        """Publish the diagnostics whose check is done (``wait``: once it is); True if published."""
        if self.diag_pending is None or not (wait or self.diag_pending[0].done()):
            return False
        check, failed, statuses, stamp_ns, rtf = self.diag_pending
        self.diag_pending = None
        arr = DiagnosticArray()
        arr.header.stamp = rm.stamp(stamp_ns)
        for s in failed + check.result() + statuses:
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
        if math.isfinite(rtf):
            self.send(self.pub_rtf, Float64(data=float(rtf)))
        return True

    def engine_snapshots(self) -> list[dg.EngineSnapshot]:
        """The state the engine's diagnostics (conservation checks, constraint drift) need, copied."""
        return [dg.engine_snapshot(self.sim, self.ref_row, self.checks)]

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
