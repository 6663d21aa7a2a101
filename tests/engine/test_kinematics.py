"""Direct kinematics: frame Jacobians, velocities and accelerations against time derivatives."""

import numpy as np

import mbsfmu
from mbsfmu.engine.kinematics import RelativePoses, forward_kinematics
from mbsfmu.engine.spatial import quat_to_R
from mbsfmu.sim.simulator import Simulator
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


def relative_pose_models(rng):
    """A branched random tree (free base, spherical joints) and the spacecraft (free root, wheels)."""
    return (random_tree(rng, 10), mbsfmu.load_model(MODELS / "spacecraft.yaml"))


def test_relative_poses_compose_to_the_world_poses(rng):
    """RelativePoses: parent pose composed with each body's relative pose (quaternion as matrix)
    gives the body's world pose back; roots are relative to the world. Tolerance: a product of
    unit-sized rotations and a quaternion of them, ~10 eps per entry; positions of a few m."""
    for model in relative_pose_models(rng):
        poses = RelativePoses(model)
        for _ in range(20):
            kin = forward_kinematics(model.tree, *model.random_state(rng))
            out = poses(kin.R, kin.p)
            assert out.shape == (model.N, 7)
            for i in range(1, model.N + 1):
                j = int(model.L[i])
                xyz, (x, y, z, w) = out[i - 1, :3], out[i - 1, 3:]
                assert w >= 0
                np.testing.assert_allclose(np.linalg.norm(out[i - 1, 3:]), 1.0, rtol=0, atol=1e-14)
                np.testing.assert_allclose(kin.R[j] @ quat_to_R([w, x, y, z]), kin.R[i], rtol=0, atol=1e-13)
                np.testing.assert_allclose(kin.p[j] + kin.R[j] @ xyz, kin.p[i], rtol=0, atol=1e-12)


def test_core_relative_poses_equal_numpy_bit_for_bit(rng):
    """Simulator.relative_poses on the native backend (mbs_sim_relative_poses, one core call) gives
    RelativePoses' bits of the same world poses, in every case of Shepperd's method."""
    cases = set()
    for model in relative_pose_models(rng):
        sim = Simulator(model, backend="native")
        poses = RelativePoses(model)
        for _ in range(40):
            sim.set_configuration(*model.random_state(rng))
            R, p = sim.body_poses()
            want = poses(R, p)
            assert np.array_equal(sim.relative_poses().view(np.uint64), want.view(np.uint64))
            E = np.array([quat_to_R(q) for q in want[:, [6, 3, 4, 5]]])
            t = np.trace(E, axis1=1, axis2=2)
            cases |= {-1 if ti > 0 else int(np.argmax(np.diag(Ei))) for ti, Ei in zip(t, E)}
        sim.advance_to(0.01)  # and after a step (the core's lazy kinematics of the new state)
        assert np.array_equal(sim.relative_poses(), poses(*sim.body_poses()))
    assert cases == {-1, 0, 1, 2}
