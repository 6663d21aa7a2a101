"""mbsfmu_ros.trajectory without ROS: the spline between trajectory points against scipy's
piecewise polynomials of the same boundary data (an independent construction: Bernstein
coefficients from the derivatives), the checks of a JointTrajectory and of a goal's tolerances."""

import numpy as np
import pytest

from mbsfmu_ros import trajectory as tj

scipy_interpolate = pytest.importorskip("scipy.interpolate")

JOINTS = ["j1", "j2", "j3"]
# float64 evaluation of a degree-5 polynomial on [0, 1 s] with O(1) coefficients: a few eps per
# term, q ~ 1 rad: 1e-12 bounds it with margin (the derivatives, divided by T^k, alike)
TOL = 1e-12


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def points(rng, fields: str, n: int = 4, dof: int = 3):
    """n points at irregular times with random positions (and velocities, accelerations)."""
    t = np.cumsum(rng.uniform(0.2, 0.8, n))
    q = rng.uniform(-1, 1, (n, dof))
    qd = rng.uniform(-1, 1, (n, dof)) if "v" in fields else None
    qdd = rng.uniform(-2, 2, (n, dof)) if "a" in fields else None
    return t, q, qd, qdd


def as_points(t, q, qd, qdd):
    return [tj.Point(t[k], q[k], None if qd is None else qd[k], None if qdd is None else qdd[k]) for k in range(len(t))]


@pytest.mark.parametrize("fields", ["p", "pv", "pva"])
def test_spline_is_the_polynomial_with_the_points_boundary_data(rng, fields):
    """Linear (positions), cubic (with velocities), quintic (with accelerations): q, qd, qdd equal
    scipy's BPoly.from_derivatives built on the same points (degree 1, 3, 5), at random times."""
    t, q, qd, qdd = points(rng, fields)
    pts = as_points(t, q, qd, qdd)
    derivs = [q, qd, qdd][: len(fields)]
    ts = rng.uniform(t[0], t[-1], 200)
    for j in range(q.shape[1]):
        ref = scipy_interpolate.BPoly.from_derivatives(t, [[d[k, j] for d in derivs] for k in range(len(t))])
        for tk in ts:
            k = np.searchsorted(t, tk) - 1
            q_s, qd_s, qdd_s = tj.segment(pts[k], pts[k + 1], tk)
            assert q_s[j] == pytest.approx(ref(tk), rel=0, abs=TOL)
            assert qd_s[j] == pytest.approx(ref(tk, 1), rel=0, abs=10 * TOL)
            if fields != "p":  # linear: qdd 0 (its qd jumps at the points)
                assert qdd_s[j] == pytest.approx(ref(tk, 2), rel=0, abs=100 * TOL)
            else:
                assert qdd_s[j] == 0.0


def test_sample_starts_at_the_anchor_and_holds_the_last_point(rng):
    t, q, qd, qdd = points(rng, "pva", n=3)
    qd[-1] = 0.0
    anchor = tj.Point(0.0, np.zeros(3), np.ones(3), np.zeros(3))
    traj = tj.Trajectory(tuple(JOINTS), anchor, tuple(as_points(t, q, qd, qdd)))
    s0 = tj.sample(traj, 0.0)
    assert s0.q.tolist() == [0.0] * 3 and s0.qd.tolist() == [1.0] * 3 and s0.index == 0 and not s0.done
    mid = tj.sample(traj, 0.5 * (t[0] + t[1]))
    assert mid.index == 1 and not mid.done
    ref = tj.segment(traj.points[0], traj.points[1], 0.5 * (t[0] + t[1]))
    assert np.array_equal(mid.q, ref[0])
    end = tj.sample(traj, t[-1] + 5.0)
    assert end.done and end.index == 2 and np.array_equal(end.q, q[-1]) and np.array_equal(end.qd, qd[-1])
    # continuity at an interior point: the segments on both sides meet
    before, after = tj.sample(traj, t[1] - 1e-9), tj.sample(traj, t[1] + 1e-9)
    assert np.abs(before.q - after.q).max() < 1e-7 and np.abs(before.qd - after.qd).max() < 1e-7


def build(pts, start=0.0, now=10.0, names=("j1", "j2")):
    anchor = (np.zeros(len(names)), np.zeros(len(names)), np.zeros(len(names)))
    return tj.build_trajectory(list(names), pts, start, now, anchor, JOINTS)


def test_build_places_the_trajectory_in_sim_time():
    p = [tj.PointIn(1.0, [0.1, 0.2]), tj.PointIn(2.0, [0.3, 0.4], [0.0, 0.0])]
    now = build(p)  # stamp 0: starts now
    assert now.start == 10.0 and [x.t for x in now.points] == [11.0, 12.0] and now.first_index == 0
    later = build(p, start=12.5)  # in the future: anchored at its stamp
    assert later.start == 12.5 and [x.t for x in later.points] == [13.5, 14.5]
    past = build(p, start=8.5)  # the first point already past: dropped, the rest from now
    assert past.start == 10.0 and [x.t for x in past.points] == [10.5] and past.first_index == 1
    with pytest.raises(tj.TrajectoryError, match="before the current sim time"):
        build(p, start=7.0)


@pytest.mark.parametrize(
    "names, pts, match",
    [
        (["j1", "jx"], [tj.PointIn(1.0, [0, 0])], r"unknown joint\(s\) 'jx'"),
        (["j1", "j11"], [tj.PointIn(1.0, [0, 0])], r"'j11' \(did you mean 'j1'\?\)"),
        (["j1", "j1"], [tj.PointIn(1.0, [0, 0])], "more than once"),
        ([], [tj.PointIn(1.0, [])], "names no joint"),
        (["j1", "j2"], [], "no points"),
        (["j1", "j2"], [tj.PointIn(1.0, [0])], r"points\[0\].positions has 1 entries"),
        (["j1", "j2"], [tj.PointIn(1.0, [0, 0], [1])], r"points\[0\].velocities has 1 entries.*\(0 or 2\)"),
        (["j1", "j2"], [tj.PointIn(1.0, [0, float("nan")])], "not finite"),
        (["j1", "j2"], [tj.PointIn(1.0, [0, 0]), tj.PointIn(1.0, [0, 0])], "must increase strictly"),
        (["j1", "j2"], [tj.PointIn(-1.0, [0, 0])], "must be >= 0"),
        (["j1", "j2"], [tj.PointIn(1.0, [0, 0], [0.5, 0])], "must end at rest"),
        (["j1", "j2"], [tj.PointIn(1.0, [0, 0], (), (), [1, 1])], "efforts in trajectory points are not followed"),
    ],
)
def test_bad_trajectories_are_refused_with_the_field(names, pts, match):
    with pytest.raises(tj.TrajectoryError, match=match):
        build(pts, names=names)


def test_goal_tolerances_resolve_over_the_defaults_as_jtc():
    names = ["j1", "j2"]
    d = tj.default_tolerances(2)
    assert d.path_q.tolist() == [0, 0] and d.goal_qd.tolist() == [tj.STOPPED_VELOCITY_TOLERANCE] * 2
    tol = tj.goal_tolerances(
        names,
        [tj.ToleranceIn("j2", position=0.05)],
        [tj.ToleranceIn("j1", position=1e-3, velocity=-1.0)],
        goal_time=0.5,
    )
    assert tol.path_q.tolist() == [0.0, 0.05] and tol.path_qd.tolist() == [0.0, 0.0]
    assert tol.goal_q.tolist() == [1e-3, 0.0]
    assert tol.goal_qd.tolist() == [0.0, tj.STOPPED_VELOCITY_TOLERANCE]  # -1 erased j1's default
    assert tol.goal_time == 0.5
    with pytest.raises(tj.TrajectoryError, match=r"path_tolerance\[0\] names joint 'j3'"):
        tj.goal_tolerances(names, [tj.ToleranceIn("j3", position=1.0)], [], 0.0)
    with pytest.raises(tj.TrajectoryError, match=r"goal_tolerance\[0\].position is -2"):
        tj.goal_tolerances(names, [], [tj.ToleranceIn("j1", position=-2.0)], 0.0)
    with pytest.raises(tj.TrajectoryError, match="no joint accelerations"):
        tj.goal_tolerances(names, [tj.ToleranceIn("j1", acceleration=1.0)], [], 0.0)


def test_violations_name_the_joint_and_the_error():
    tol = np.array([0.1, 0.0])  # j2 unchecked
    assert tj.violations(["j1", "j2"], np.array([0.05, 5.0]), np.zeros(2), tol, tol) == []
    bad = tj.violations(["j1", "j2"], np.array([-0.2, 5.0]), np.zeros(2), tol, tol)
    assert bad == ["j1: position error -0.2 exceeds 0.1"]


def test_servo_reference_state_takes_a_trajectorys_feedforward_state():
    from mbsfmu_ros import conversion as cv

    servos = {"a": cv.ServoJoint("a.tau", 0, 0), "b": cv.ServoJoint("b.tau", 1, 1)}
    q, qd = [0.1, 0.2], [0.3, 0.4]
    plain = {"a": cv.JointTarget(position=1.0), "b": cv.JointTarget(velocity=2.0)}
    assert cv.servo_reference_state(plain, servos, q, qd) == ([0.1, 0.2], [0.0, 2.0], [0.0, 0.0])
    fed = {**plain, "a": cv.JointTarget(1.0, 0.5, None, (0.9, 0.6, -3.0))}
    assert cv.servo_reference_state(fed, servos, q, qd) == ([0.9, 0.2], [0.6, 2.0], [-3.0, 0.0])


def track(model, traj, h: float, midpoint: bool) -> float:
    """Follow ``traj`` with the node's actuator model (servo_reference_state, RNEA, servo_efforts;
    torques held over each step of h, RK4), every joint driven; max |q_desired - q| [rad] at the
    steps' ends. ``midpoint``: feed-forward at the desired state of t + h/2 (the node's), else of t."""
    from mbsfmu.sim.simulator import Simulator
    from mbsfmu_ros import conversion as cv

    sim = Simulator(model, integrator="rk4", h_max=h)
    servos = cv.servo_joints(model, sim.input_names)
    names = list(traj.joint_names)
    err = 0.0
    for k in range(round(traj.end / h)):
        t = k * h
        d, m = tj.sample(traj, t), tj.sample(traj, t + (0.5 * h if midpoint else 0.0))
        targets = {
            n: cv.JointTarget(float(d.q[j]), float(d.qd[j]), None, (float(m.q[j]), float(m.qd[j]), float(m.qdd[j])))
            for j, n in enumerate(names)
        }
        q, qd = sim.q, sim.qd
        q_ref, qd_ref, qdd_ref = (np.asarray(a) for a in cv.servo_reference_state(targets, servos, q, qd))
        tau_id = model.inverse_dynamics(q_ref, qd_ref, qdd_ref)
        sim.set_inputs(cv.servo_efforts(targets, servos, q, qd, 100.0, 10.0, 10.0, tau_id=tau_id))
        sim.advance_to(t + h)
        err = max(err, np.abs(tj.sample(traj, t + h).q - sim.q[[servos[n].iq for n in names]]).max())
    return err


def test_the_midpoint_feed_forward_tracks_a_trajectory_to_second_order():
    """The node's actuator model following a cubic trajectory on the SCARA under gravity (default
    gains kp = 100, kd = 10): with the feed-forward at the desired state of each step's midpoint the
    tracking error falls ~4x when h halves (the held torque's impulse is the desired motion's to
    O(h^2)); at the step's start it falls only ~2x (an O(h) lag) and is larger."""
    import mbsfmu
    from tests.support.paths import MODELS

    model = mbsfmu.load_model(MODELS / "scara.yaml")  # vertical plane, gravity along -y
    pts = [tj.PointIn(0.3, [0.4, -0.3], [1.0, 0.5]), tj.PointIn(0.6, [0.8, 0.2], [0.0, 0.0])]
    q0, qd0 = model.initial_state()
    traj = tj.build_trajectory(["q1", "q2"], pts, 0.0, 0.0, (q0, qd0, np.zeros(2)), ["q1", "q2"])
    mid = [track(model, traj, h, True) for h in (4e-3, 2e-3)]
    start = [track(model, traj, h, False) for h in (4e-3, 2e-3)]
    assert mid[0] / mid[1] > 3.5, mid
    assert 1.5 < start[0] / start[1] < 2.5, start
    assert mid[1] < 0.1 * start[1], (mid, start)
