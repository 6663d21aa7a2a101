"""Trajectories into the running node as ros2_control's joint_trajectory_controller (JTC) takes them
(docs/guides/ros2.md, "Trajectories"): trajectory_msgs/JointTrajectory on the topic
``joint_trajectory_controller/joint_trajectory`` (fire and forget) and the control_msgs/
FollowJointTrajectory action ``joint_trajectory_controller/follow_joint_trajectory`` (path and goal
tolerances, goal time, feedback, cancel, preemption), both relative to the node's namespace, or in
a world (``robots.py``) to each robot's namespace: one controller per servo owner.

The servo owner is what holds the joints a trajectory drives: the one-model node, or a world's
``Robot``. It gives ``sim`` (q, qd, t), ``servos``, ``targets``, ``now_ns()`` (sim time of its
state [ns]), ``apply()`` (a command accepted), ``renew_command()`` (the command timeout counts from
now), ``reject()`` (a command refused: log and diagnostics); the node gives the ROS entities, the
cycle count ``k`` and the logger. The owner steps the controller (``step``) before each physics
step of its servo and stops it (``stop``) on its joint commands, reset and command timeout.

The trajectory drives its joints through the servo of position commands (``conversion.
servo_efforts``): every physics step the node's loop asks ``step`` for the desired state, sets it
as the joints' targets (position, velocity and acceleration, so the feed-forward is the inverse
dynamics of the desired motion), checks the tolerances against the state at that instant and, once
per cycle, sends the goal's feedback. The spline and the checks are the pure functions of
``trajectory.py``. As JTC: one goal active at a time, a new goal (or a trajectory on the topic)
aborts it with INVALID_GOAL and takes over from the state the joints have; a goal the node cannot
follow is rejected (the reason in the log and the ``commands`` diagnostics); after a success the
last point is held, after a cancel or an abort the position the joints have.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.duration import Duration
from rclpy.task import Future
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

from . import conversion as cv
from . import ros_messages as rm
from . import topics as tp
from . import trajectory as tj

Result = FollowJointTrajectory.Result


@dataclass
class Running:
    """The trajectory being followed: its tolerances, the goal handle (None: from the topic) and
    the future its execute callback waits on (set to (outcome, Result) when it ends)."""

    traj: tj.Trajectory
    tolerances: tj.Tolerances
    handle: object = None
    done: Future = field(default_factory=Future)
    fed_k: int = -1  # node cycle of the last feedback sent
    fed_end: bool = False  # a feedback at or after the last point's time was sent


def seconds(d) -> float:
    """builtin_interfaces/Duration or Time as seconds."""
    return d.sec + 1e-9 * d.nanosec


def points_in(msg: JointTrajectory) -> list[tj.PointIn]:
    return [
        tj.PointIn(seconds(p.time_from_start), p.positions, p.velocities, p.accelerations, p.effort) for p in msg.points
    ]


def tolerances_in(tols) -> list[tj.ToleranceIn]:
    return [tj.ToleranceIn(t.name, t.position, t.velocity, t.acceleration) for t in tols]


class TrajectoryController:
    """JTC's topic and action on ``node`` (an MbsNode: its qos, k and get_logger()) for the joints of
    ``owner`` (the servo owner, see above; the node itself where None), named by ``name`` (a topic of
    ``topics`` to the name it is created with; a robot's namespace in a world); ``label`` starts
    the owner's log lines (a robot's ``"arm7: "``)."""

    def __init__(self, node, owner=None, name=tp.ros_name, label: str = ""):
        self.node, self.owner, self.label = node, owner if owner is not None else node, label
        self.joints = list(self.owner.servos)  # the joints a trajectory may drive
        self.running: Running | None = None
        self.pending: Running | None = None  # a trajectory stamped to start later
        self.sub = node.create_subscription(JointTrajectory, name(tp.JOINT_TRAJECTORY), self.on_trajectory, node.qos)
        self.action = ActionServer(
            node,
            FollowJointTrajectory,
            name(tp.FOLLOW_JOINT_TRAJECTORY),
            execute_callback=self.execute,
            goal_callback=self.on_goal,
            handle_accepted_callback=self.on_accepted,
            cancel_callback=self.on_cancel,
        )
        self.started: dict[bytes, Running | Result] = {}  # goal id -> its run (or why it failed), for execute

    def destroy(self) -> None:
        """The owner is deleted: abort what runs or is pending (its execute callback ends), then
        remove the action server and the subscription."""
        self.stop("the deletion of its robot")
        self.action.destroy()
        self.node.destroy_subscription(self.sub)

    # ---- building a trajectory from a message --------------------------------------------------
    def now(self) -> float:
        """Sim time of the owner's state [s] (a robot's, while the world steps one robot after another)."""
        return self.owner.now_ns() / cv.NS

    def state(self, names) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """q, qd, qdd (n,) of the named joints to start a trajectory from: the desired state of the
        running trajectory for its joints (a velocity-continuous hand-over), the measured q and qd
        (qdd 0) for the others."""
        s = self.owner.servos
        q = np.array([self.owner.sim.q[s[n].iq] for n in names])
        qd = np.array([self.owner.sim.qd[s[n].iv] for n in names])
        qdd = np.zeros(len(names))
        r = self.running
        if r is not None:
            d = tj.sample(r.traj, self.now())
            for i, n in enumerate(names):
                if n in r.traj.joint_names:
                    j = r.traj.joint_names.index(n)
                    q[i], qd[i], qdd[i] = d.q[j], d.qd[j], d.qdd[j]
        return q, qd, qdd

    def build(self, trajectory: JointTrajectory, path=(), goal=(), goal_time=None) -> Running:
        """A Running of a JointTrajectory (and a goal's tolerances); TrajectoryError says why not."""
        names = list(trajectory.joint_names)
        tj.check_joints(names, self.joints)
        traj = tj.build_trajectory(
            names,
            points_in(trajectory),
            seconds(trajectory.header.stamp),
            self.now(),
            self.state(names),
            self.joints,
        )
        tols = tj.default_tolerances(len(names))
        if goal_time is not None:
            tols = tj.goal_tolerances(names, tolerances_in(path), tolerances_in(goal), seconds(goal_time))
        return Running(traj, tols)

    # ---- topic and action callbacks ------------------------------------------------------------
    def on_trajectory(self, msg: JointTrajectory) -> None:
        """A trajectory on the topic: followed from its start (any goal aborted), or rejected."""
        try:
            run = self.build(msg)
        except tj.TrajectoryError as e:
            return self.owner.reject("trajectory", f"{tp.JOINT_TRAJECTORY}: {e}; trajectory rejected")
        self.begin(run, "a trajectory on the topic")

    def on_goal(self, request) -> GoalResponse:
        """Accept a goal the node can follow (checked as execute will build it), else reject it."""
        try:
            self.build(request.trajectory, request.path_tolerance, request.goal_tolerance, request.goal_time_tolerance)
        except tj.TrajectoryError as e:
            self.owner.reject("trajectory", f"{tp.FOLLOW_JOINT_TRAJECTORY}: {e}; goal rejected")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def on_accepted(self, handle) -> None:
        """An accepted goal is followed from now, before any other callback runs (rclpy calls this
        right after sending the acceptance): a joint command, reset or cancel that the client sends
        once it sees the goal accepted finds it running. Its execute callback, a task the executor
        starts later (the events executor after other ready work), waits for its end."""
        g = handle.request
        handle.execute()  # EXECUTING; rclpy schedules ``execute``
        try:
            run = self.build(g.trajectory, g.path_tolerance, g.goal_tolerance, g.goal_time_tolerance)
        except tj.TrajectoryError as e:  # checked on receipt; time went on since (a stamp now past)
            old = "before the current sim time" in str(e)
            code = Result.OLD_HEADER_TIMESTAMP if old else Result.INVALID_GOAL
            self.started[bytes(handle.goal_id.uuid)] = Result(error_code=code, error_string=str(e))
            return
        run.handle = handle
        self.started[bytes(handle.goal_id.uuid)] = run
        self.begin(run, "a new goal")

    async def execute(self, handle):
        """Execute callback: wait until the loop (or a command, reset, cancel) ends the goal's run."""
        run = self.started.pop(bytes(handle.goal_id.uuid))
        if isinstance(run, Result):
            handle.abort()
            return run
        outcome, result = await run.done
        getattr(handle, outcome)()
        return result

    def on_cancel(self, handle) -> CancelResponse:
        """Cancel the running (or pending) goal: hold the position the joints have (as JTC)."""
        for run in (self.running, self.pending):
            if run is not None and run.handle is handle:
                self.end(run, "canceled", Result(error_code=Result.SUCCESSFUL, error_string="canceled"), hold=True)
        return CancelResponse.ACCEPT

    # ---- following ----------------------------------------------------------------------------------
    def begin(self, run: Running, by: str) -> None:
        """Follow ``run`` (or keep it pending until its start time), ending what it replaces."""
        self.owner.apply({})  # counts as a command (accepted, fresh; in lock-step, one cycle)
        if self.pending is not None:
            self.preempt(self.pending, by)
        if run.traj.start > self.now():  # until then what runs goes on; else the joints hold still
            self.pending = run
            s = self.owner.servos
            for n in run.traj.joint_names:
                self.owner.targets.setdefault(n, cv.JointTarget(position=float(self.owner.sim.q[s[n].iq])))
            return
        if self.running is not None:
            self.preempt(self.running, by)
        self.running = run
        self.drive(run, self.now(), 0.0)

    def preempt(self, run: Running, by: str) -> None:
        text = f"preempted by {by}"
        self.end(run, "abort", Result(error_code=Result.INVALID_GOAL, error_string=text), hold=False)

    def end(self, run: Running, outcome: str, result, hold: bool) -> None:
        """Stop following ``run``; hold the joints where they are if ``hold``; finish its goal."""
        if self.running is run:
            self.running = None
        if self.pending is run:
            self.pending = None
        if hold:
            s = self.owner.servos
            for n in run.traj.joint_names:
                self.owner.targets[n] = cv.JointTarget(position=float(self.owner.sim.q[s[n].iq]))
        if run.handle is not None and not run.done.done():
            run.done.set_result((outcome, result))
        elif outcome == "abort" and run.handle is None and hold:
            self.node.get_logger().warning(f"{self.label}trajectory from the topic aborted: {result.error_string}")

    def stop(self, why: str, joints=None) -> None:
        """Abort what runs or is pending (a reset, the command timeout; a joint command: what drives
        one of its ``joints``), without holding: the caller sets the inputs."""
        for run in (self.pending, self.running):
            if run is not None and (joints is None or set(joints) & set(run.traj.joint_names)):
                text = f"stopped by {why}"
                self.end(run, "abort", Result(error_code=Result.INVALID_GOAL, error_string=text), hold=False)

    def drive(self, run: Running, t: float, h: float) -> tj.Sample:
        """Set the targets of the trajectory's joints for the physics step [t, t + h]: the desired
        state at t for the PD terms, the desired state at t + h/2 for the inverse-dynamics
        feed-forward (the torque is held over the step: the midpoint rule makes its impulse that
        of the desired motion to O(h^2), where the state at t leaves an O(h) lag); the sample at t."""
        d, m = tj.sample(run.traj, t), tj.sample(run.traj, t + 0.5 * h)
        for j, n in enumerate(run.traj.joint_names):
            ff = (float(m.q[j]), float(m.qd[j]), float(m.qdd[j]))
            self.owner.targets[n] = cv.JointTarget(float(d.q[j]), float(d.qd[j]), None, ff)
        return d

    def step(self, h: float) -> None:
        """Called by the loop before each physics step of h [s]: start a pending trajectory whose
        time has come, set the targets, check the tolerances, send feedback once per cycle (and
        when the last point's time is reached), end the goal."""
        t = self.now()
        if self.pending is not None and self.pending.traj.start <= t:
            run, self.pending = self.pending, None  # from its start time (less than one step ago)
            run.traj = replace(run.traj, anchor=tj.Point(run.traj.start, *self.state(run.traj.joint_names)))
            if self.running is not None:
                self.preempt(self.running, "a trajectory that started")
            self.running = run
        run = self.running
        if run is None:
            return
        self.owner.renew_command()  # the command timeout counts from the end (JTC's cmd_timeout)
        d = self.drive(run, t, h)
        names, tol = run.traj.joint_names, run.tolerances
        s = self.owner.servos
        q = np.array([self.owner.sim.q[s[n].iq] for n in names])
        qd = np.array([self.owner.sim.qd[s[n].iv] for n in names])
        e_q, e_qd = d.q - q, d.qd - qd
        if run.handle is not None and (run.fed_k != self.node.k or (d.done and not run.fed_end)):
            run.fed_k, run.fed_end = self.node.k, d.done  # once per cycle, and at the end
            run.handle.publish_feedback(self.feedback(run, t, d, q, qd))
        if not d.done:
            bad = tj.violations(names, e_q, e_qd, tol.path_q, tol.path_qd)
            if bad:
                text = f"path tolerance violated at t = {t:.6f} s: {'; '.join(bad)}"
                result = Result(error_code=Result.PATH_TOLERANCE_VIOLATED, error_string=text)
                return self.end(run, "abort", result, hold=True)
            return
        bad = tj.violations(names, e_q, e_qd, tol.goal_q, tol.goal_qd)
        if not bad:
            self.hold_last(run)
            return self.end(run, "succeed", Result(error_code=Result.SUCCESSFUL, error_string="goal reached"), False)
        late = t - run.traj.end
        if tol.goal_time > 0.0 and late > tol.goal_time:
            text = f"goal tolerance violated {late:.6f} s after the trajectory's end: {'; '.join(bad)}"
            self.end(run, "abort", Result(error_code=Result.GOAL_TOLERANCE_VIOLATED, error_string=text), True)

    def hold_last(self, run: Running) -> None:
        """After a success: hold the last point (at rest) with the position servo."""
        last = run.traj.points[-1]
        for j, n in enumerate(run.traj.joint_names):
            self.owner.targets[n] = cv.JointTarget(position=float(last.q[j]))

    def feedback(self, run: Running, t: float, d: tj.Sample, q, qd):
        """FollowJointTrajectory feedback: desired, actual and error (desired - actual) at sim time t."""
        since = Duration(nanoseconds=round((t - run.traj.start) * cv.NS)).to_msg()
        fb = FollowJointTrajectory.Feedback()
        fb.header.stamp = rm.stamp(self.owner.now_ns())
        fb.joint_names = list(run.traj.joint_names)
        fb.desired = JointTrajectoryPoint(
            positions=d.q.tolist(), velocities=d.qd.tolist(), accelerations=d.qdd.tolist(), time_from_start=since
        )
        fb.actual = JointTrajectoryPoint(positions=q.tolist(), velocities=qd.tolist(), time_from_start=since)
        fb.error = JointTrajectoryPoint(
            positions=(d.q - q).tolist(), velocities=(d.qd - qd).tolist(), time_from_start=since
        )
        fb.index = d.index
        return fb
