"""Joint trajectories as ros2_control's joint_trajectory_controller (JTC) follows them (docs/guides/
ros2.md, "Trajectories"): the checks of a trajectory_msgs/JointTrajectory, its start (header stamp
zero = now), the spline between its points, and the path and goal tolerances of a
control_msgs/FollowJointTrajectory goal. Pure functions of plain numbers: no rclpy here.

Interpolation, as JTC's spline method (joint_trajectory_controller/doc/trajectory.rst): between two
points with positions only, linear; with positions and velocities, the cubic Hermite polynomial;
with positions, velocities and accelerations, the quintic one (Biagiotti & Melchiorri, *Trajectory
Planning for Automatic Machines and Robots*, sec. 2.1, the cubic and fifth-degree polynomials with
boundary positions, velocities and accelerations). The trajectory starts from the state the joints
have at its start time (``anchor``): JTC's "point before the trajectory", so the first segment
joins the current motion to the first point.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

ERASE = -1.0  # control_msgs/JointTolerance: -1 erases a default tolerance (0 keeps the default)
STOPPED_VELOCITY_TOLERANCE = 0.01  # [rad/s or m/s] JTC's default goal velocity tolerance (stopped_velocity_tolerance)


class TrajectoryError(ValueError):
    """A trajectory or goal the node cannot follow; the message says which field and why."""


@dataclass(frozen=True)
class Point:
    """One trajectory point: absolute sim time t [s]; q (n,) [rad or m]; qd, qdd (n,) [rad/s, rad/s^2
    or m/s, m/s^2] or None where the point gives none."""

    t: float
    q: Array
    qd: Array | None = None
    qdd: Array | None = None


@dataclass(frozen=True)
class Trajectory:
    """A trajectory to follow: the joints it drives, the anchor (the joints' state at ``start``, all
    of q, qd, qdd), then its points at strictly increasing times after ``start``. ``first_index``:
    the index in the message of ``points[0]`` (points already past at the start were dropped)."""

    joint_names: tuple[str, ...]
    anchor: Point
    points: tuple[Point, ...]
    first_index: int = 0

    @property
    def start(self) -> float:
        return self.anchor.t

    @property
    def end(self) -> float:
        """Sim time of the last point [s]."""
        return self.points[-1].t


@dataclass(frozen=True)
class Sample:
    """The desired state at time t: q, qd, qdd (n,); ``index``: the message's index of the point
    being approached (JTC's feedback index); ``done``: t is at or after the last point."""

    q: Array
    qd: Array
    qdd: Array
    index: int
    done: bool


# ---- the spline --------------------------------------------------------------------------------
def segment(p0: Point, p1: Point, t: float) -> tuple[Array, Array, Array]:
    """q, qd, qdd at time t in [p0.t, p1.t] of the polynomial joining p0 and p1: linear unless both
    points give velocities, cubic Hermite unless both also give accelerations, else quintic
    (Biagiotti & Melchiorri, sec. 2.1). With s = t - p0.t and T = p1.t - p0.t:
    linear   q = q0 + (q1 - q0) s / T,
    cubic    q = q0 + v0 s + a2 s^2 + a3 s^3, the coefficients matching q1, v1 at s = T,
    quintic  q = q0 + v0 s + acc0 s^2 / 2 + a3 s^3 + a4 s^4 + a5 s^5, matching q1, v1, acc1."""
    T = p1.t - p0.t
    s = min(max(t - p0.t, 0.0), T)
    q0, q1 = p0.q, p1.q
    if T <= 0.0:
        return p1.q.copy(), _or_zero(p1.qd, q1), _or_zero(p1.qdd, q1)
    if p0.qd is None or p1.qd is None:
        v = (q1 - q0) / T
        return q0 + v * s, v, np.zeros_like(q0)
    v0, v1 = p0.qd, p1.qd
    if p0.qdd is None or p1.qdd is None:
        a2 = (3.0 * (q1 - q0) - (2.0 * v0 + v1) * T) / T**2
        a3 = (2.0 * (q0 - q1) + (v0 + v1) * T) / T**3
        return (
            q0 + v0 * s + a2 * s**2 + a3 * s**3,
            v0 + 2.0 * a2 * s + 3.0 * a3 * s**2,
            2.0 * a2 + 6.0 * a3 * s,
        )
    c0, c1 = p0.qdd, p1.qdd
    a2 = 0.5 * c0
    a3 = (20.0 * (q1 - q0) - (8.0 * v1 + 12.0 * v0) * T - (3.0 * c0 - c1) * T**2) / (2.0 * T**3)
    a4 = (30.0 * (q0 - q1) + (14.0 * v1 + 16.0 * v0) * T + (3.0 * c0 - 2.0 * c1) * T**2) / (2.0 * T**4)
    a5 = (12.0 * (q1 - q0) - 6.0 * (v1 + v0) * T + (c1 - c0) * T**2) / (2.0 * T**5)
    return (
        q0 + v0 * s + a2 * s**2 + a3 * s**3 + a4 * s**4 + a5 * s**5,
        v0 + 2.0 * a2 * s + 3.0 * a3 * s**2 + 4.0 * a4 * s**3 + 5.0 * a5 * s**4,
        2.0 * a2 + 6.0 * a3 * s + 12.0 * a4 * s**2 + 20.0 * a5 * s**3,
    )


def _or_zero(v: Array | None, like: Array) -> Array:
    return np.zeros_like(like) if v is None else v.copy()


def sample(traj: Trajectory, t: float) -> Sample:
    """The desired state of ``traj`` at sim time t [s]: the anchor before the start, the segment
    containing t, the last point (held: its q, qd and qdd) from its time on."""
    if t <= traj.start:
        a = traj.anchor
        return Sample(a.q.copy(), a.qd.copy(), a.qdd.copy(), traj.first_index, False)
    prev = traj.anchor
    for k, p in enumerate(traj.points):
        if t < p.t:
            q, qd, qdd = segment(prev, p, t)
            return Sample(q, qd, qdd, traj.first_index + k, False)
        prev = p
    last = traj.points[-1]
    n = traj.first_index + len(traj.points) - 1
    return Sample(last.q.copy(), _or_zero(last.qd, last.q), _or_zero(last.qdd, last.q), n, True)


# ---- checks of a trajectory_msgs/JointTrajectory -----------------------------------------------
@dataclass(frozen=True)
class PointIn:
    """A trajectory_msgs/JointTrajectoryPoint as received: time_from_start [s] and its arrays."""

    time_from_start: float
    positions: Sequence[float]
    velocities: Sequence[float] = ()
    accelerations: Sequence[float] = ()
    effort: Sequence[float] = ()


def check_joints(names: Sequence[str], joints: Sequence[str]) -> None:
    """TrajectoryError unless ``names`` is a non-empty list of distinct joints of ``joints``."""
    if not names:
        raise TrajectoryError("trajectory names no joint (joint_names is empty)")
    unknown = [n for n in names if n not in joints]
    if unknown:
        hints = []
        for n in unknown:
            close = difflib.get_close_matches(n, list(joints), n=1, cutoff=0.5)
            hints.append(f"{n!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise TrajectoryError(f"trajectory names unknown joint(s) {', '.join(hints)}; it drives: {', '.join(joints)}")
    dup = sorted({n for n in names if list(names).count(n) > 1})
    if dup:
        raise TrajectoryError(f"trajectory names joint(s) {', '.join(dup)} more than once")


def _array(values: Sequence[float], n: int, k: int, what: str, required: bool) -> Array | None:
    if len(values) == 0 and not required:
        return None
    if len(values) != n:
        need = f"{n}" if required else f"0 or {n}"
        raise TrajectoryError(f"points[{k}].{what} has {len(values)} entries, the trajectory has {n} joints ({need})")
    a = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(a)):
        raise TrajectoryError(f"points[{k}].{what} is not finite: {list(values)}")
    return a


def build_trajectory(
    names: Sequence[str],
    points: Sequence[PointIn],
    start: float,
    now: float,
    anchor: tuple[Array, Array, Array],
    joints: Sequence[str],
) -> Trajectory:
    """Check a JointTrajectory and place it in sim time: ``start`` [s] its header stamp (0 = now),
    ``now`` [s] the current sim time, ``anchor`` (q, qd, qdd) of the named joints at the start,
    ``joints`` the joints trajectories may drive. As JTC: times strictly increasing, the last
    point at rest (zero velocity where given), points already past dropped and a trajectory wholly
    in the past refused. TrajectoryError says which field is wrong."""
    check_joints(names, joints)
    n = len(names)
    if not points:
        raise TrajectoryError("trajectory has no points")
    t0 = now if start == 0.0 else start
    parsed, t_prev = [], -math.inf
    for k, p in enumerate(points):
        if not math.isfinite(p.time_from_start) or p.time_from_start < 0.0:
            raise TrajectoryError(f"points[{k}].time_from_start is {p.time_from_start} s (must be >= 0)")
        if p.time_from_start <= t_prev:
            raise TrajectoryError(
                f"points[{k}].time_from_start {p.time_from_start:g} s is not after points[{k - 1}]'s "
                f"{t_prev:g} s (times must increase strictly)"
            )
        t_prev = p.time_from_start
        if len(p.effort):
            raise TrajectoryError(f"points[{k}].effort is given: efforts in trajectory points are not followed")
        q = _array(p.positions, n, k, "positions", required=True)
        qd = _array(p.velocities, n, k, "velocities", required=False)
        qdd = _array(p.accelerations, n, k, "accelerations", required=False)
        parsed.append(Point(t0 + p.time_from_start, q, qd, qdd))
    last = parsed[-1]
    if last.qd is not None and np.any(last.qd != 0.0):
        raise TrajectoryError(f"the last point's velocities are {list(last.qd)}: a trajectory must end at rest")
    t_a = max(t0, now)
    if last.t <= t_a:
        raise TrajectoryError(
            f"trajectory ends at t = {last.t:.9f} s, before the current sim time {now:.9f} s (old header stamp)"
        )
    keep = [k for k, p in enumerate(parsed) if p.t > t_a]
    q_a, qd_a, qdd_a = (np.asarray(a, dtype=float) for a in anchor)
    return Trajectory(tuple(names), Point(t_a, q_a, qd_a, qdd_a), tuple(parsed[keep[0] :]), keep[0])


# ---- tolerances of a control_msgs/FollowJointTrajectory goal -------------------------------------
@dataclass(frozen=True)
class ToleranceIn:
    """A control_msgs/JointTolerance as received: joint name, position, velocity, acceleration."""

    name: str
    position: float = 0.0
    velocity: float = 0.0
    acceleration: float = 0.0


@dataclass(frozen=True)
class Tolerances:
    """Per joint of a trajectory (n,): path and goal tolerances of position and velocity [rad, rad/s
    or m, m/s], 0 = not checked; goal_time [s] after the last point's time within which the goal
    tolerances must hold (0 = no limit: JTC's convention)."""

    path_q: Array
    path_qd: Array
    goal_q: Array
    goal_qd: Array
    goal_time: float = 0.0


def default_tolerances(n: int) -> Tolerances:
    """JTC's defaults: no path tolerance, no goal position tolerance, goal velocity within
    STOPPED_VELOCITY_TOLERANCE, no goal time limit."""
    z = np.zeros(n)
    return Tolerances(z, z.copy(), z.copy(), np.full(n, STOPPED_VELOCITY_TOLERANCE), 0.0)


def resolve(default: float, value: float, where: str) -> float:
    """A goal's tolerance over the default, as JTC's resolve_tolerance_source: > 0 replaces it, 0
    keeps it, -1 erases it (0: not checked); anything else is an error naming ``where``."""
    if value > 0.0:
        return float(value)
    if value == 0.0:
        return default
    if abs(value - ERASE) < 1e-6:
        return 0.0
    raise TrajectoryError(f"{where} is {value}: a tolerance is > 0, 0 (the default) or -1 (none)")


def goal_tolerances(
    names: Sequence[str], path: Sequence[ToleranceIn], goal: Sequence[ToleranceIn], goal_time: float
) -> Tolerances:
    """The tolerances of a FollowJointTrajectory goal over the defaults, for the trajectory's joints
    ``names``; TrajectoryError names a tolerance for a joint the trajectory does not drive, a bad
    value, or an acceleration tolerance (the node measures no joint accelerations)."""
    d = default_tolerances(len(names))
    out = {"path": (d.path_q.copy(), d.path_qd.copy()), "goal": (d.goal_q.copy(), d.goal_qd.copy())}
    for kind, given in (("path", path), ("goal", goal)):
        for k, tol in enumerate(given):
            where = f"{kind}_tolerance[{k}]"
            if tol.name not in names:
                raise TrajectoryError(f"{where} names joint {tol.name!r}, which the trajectory does not drive")
            i = list(names).index(tol.name)
            q, qd = out[kind]
            q[i] = resolve(q[i], tol.position, f"{where}.position")
            qd[i] = resolve(qd[i], tol.velocity, f"{where}.velocity")
            if resolve(0.0, tol.acceleration, f"{where}.acceleration") > 0.0:
                raise TrajectoryError(f"{where}.acceleration is set: the node measures no joint accelerations")
    t_goal = resolve(d.goal_time, goal_time, "goal_time_tolerance")
    return Tolerances(*out["path"], *out["goal"], t_goal)


def violations(names: Sequence[str], e_q: Array, e_qd: Array, tol_q: Array, tol_qd: Array) -> list[str]:
    """The joints whose position or velocity error (desired - actual) exceeds a checked (> 0)
    tolerance, each as 'joint: position error 0.1 > 0.05'."""
    out = []
    for i, name in enumerate(names):
        for what, e, tol in (("position", e_q[i], tol_q[i]), ("velocity", e_qd[i], tol_qd[i])):
            if tol > 0.0 and abs(e) > tol:
                out.append(f"{name}: {what} error {e:.6g} exceeds {tol:g}")
    return out
