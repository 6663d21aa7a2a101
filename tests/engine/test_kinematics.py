"""Direct kinematics: frame Jacobians, velocities and accelerations against time derivatives."""

import numpy as np

import mbsfmu
from tests.support.paths import MODELS
from tests.support.trees import random_tree


def flow(model, q, qd, qdd, h):
    """State after time h along the motion with constant qdd (second order in h is enough for
    the central differences below): q(h) by the exact manifold step of qd h + qdd h^2 / 2."""
    return model.integrate(q, qd * h + 0.5 * qdd * h * h), qd + qdd * h


def test_frame_velocity_is_jacobian_times_qd_and_derivative_of_position(rng):
    for model in (random_tree(rng, 10), mbsfmu.load_model(MODELS / "branched_robot.yaml")):
        for frame in model.frames:
            q, qd = model.random_state(rng)
            omega, v = model.frame_velocity(q, qd, frame)
            J = model.frame_jacobian(q, frame)
            np.testing.assert_allclose(J @ qd, np.r_[omega, v], rtol=1e-12, atol=1e-12)
            h = 1e-6
            qp, _ = flow(model, q, qd, np.zeros(model.nv), h)
            qm, _ = flow(model, q, qd, np.zeros(model.nv), -h)
            (Rp, pp), (Rm, pm), (R, _) = (model.frame_pose(x, frame) for x in (qp, qm, q))
            np.testing.assert_allclose((pp - pm) / (2 * h), v, rtol=1e-7, atol=1e-7)
            W = (Rp - Rm) / (2 * h) @ R.T  # skew(omega) = Rdot R^T
            np.testing.assert_allclose([W[2, 1], W[0, 2], W[1, 0]], omega, rtol=1e-7, atol=1e-7)


def test_frame_acceleration_is_derivative_of_velocity(rng):
    """d/dt [omega; v] along (q, qd, qdd) equals frame_acceleration (classical, world axes)."""
    for model in (random_tree(rng, 8), mbsfmu.load_model(MODELS / "branched_robot.yaml")):
        for frame in list(model.frames)[:4]:
            q, qd = model.random_state(rng)
            qdd = rng.normal(size=model.nv)
            dw, a = model.frame_acceleration(q, qd, qdd, frame)
            h = 1e-5
            wp, vp = model.frame_velocity(*flow(model, q, qd, qdd, h), frame)
            wm, vm = model.frame_velocity(*flow(model, q, qd, qdd, -h), frame)
            np.testing.assert_allclose((wp - wm) / (2 * h), dw, rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose((vp - vm) / (2 * h), a, rtol=1e-6, atol=1e-6)


def test_config_rate_matches_integrate(rng):
    """dq/dt from config_rate equals the derivative of q (+) qd t at t = 0 (quaternions too)."""
    model = mbsfmu.load_model(MODELS / "branched_robot.yaml")
    q, qd = model.random_state(rng)
    h = 1e-6
    fd = (model.integrate(q, qd * h) - model.integrate(q, -qd * h)) / (2 * h)
    np.testing.assert_allclose(model.config_rate(q, qd), fd, rtol=1e-8, atol=1e-8)


def test_body_poses_compose_along_the_path(rng):
    """p_i = p_L(i) + R_L(i) (p_tree + R_tree p_J) for every body: pose recursion over L (No's method, Eq. 5)."""
    model = random_tree(rng, 12)
    q, _ = model.random_state(rng)
    kin = model.forward_kinematics(q)
    for i in range(1, model.N + 1):
        lam = model.L[i]
        X = kin.Xup[i]
        E = X[:3, :3]  # rotation parent -> body coordinates
        np.testing.assert_allclose(kin.R[i], kin.R[lam] @ E.T, rtol=0, atol=1e-12)
        np.testing.assert_allclose(np.linalg.det(kin.R[i]), 1.0, rtol=0, atol=1e-12)
