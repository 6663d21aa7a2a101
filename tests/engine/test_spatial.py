"""Spatial algebra: rotations, quaternions and Plucker transforms."""

import numpy as np

from mbsfmu.engine import spatial as sp


def test_quaternion_round_trip_and_product(rng):
    for _ in range(50):
        qa, qb = rng.normal(size=4), rng.normal(size=4)
        qa, qb = qa / np.linalg.norm(qa), qb / np.linalg.norm(qb)
        Ra, Rb = sp.quat_to_R(qa), sp.quat_to_R(qb)
        np.testing.assert_allclose(Ra @ Ra.T, np.eye(3), atol=1e-14)
        np.testing.assert_allclose(sp.quat_to_R(sp.R_to_quat(Ra)), Ra, atol=1e-13)
        np.testing.assert_allclose(sp.quat_to_R(sp.quat_mul(qa, qb)), Ra @ Rb, atol=1e-13)


def test_exp_map_and_axis_rotation(rng):
    for _ in range(20):
        phi = rng.normal(size=3)
        angle = np.linalg.norm(phi)
        np.testing.assert_allclose(sp.quat_to_R(sp.quat_exp(phi)), sp.rot_axis(phi / angle, angle), atol=1e-13)
    np.testing.assert_allclose(sp.quat_exp(np.array([1e-14, 0, 0])), [1, 5e-15, 0, 0], atol=1e-20)


def test_rpy_is_z_y_x():
    r, p, y = 0.3, -0.2, 1.1
    Rz, Ry, Rx = (sp.rot_axis(np.eye(3)[k], a) for k, a in ((2, y), (1, p), (0, r)))
    np.testing.assert_allclose(sp.rpy_to_R(np.array([r, p, y])), Rz @ Ry @ Rx, atol=1e-15)


def test_force_cross_is_dual_of_motion_cross(rng):
    """(v x m) . f == -(m . (v x* f)) (RBDA Eq. 2.32)."""
    v, m, f = rng.normal(size=(3, 6))
    np.testing.assert_allclose((sp.crm(v) @ m) @ f, -(m @ (sp.crf(v) @ f)), rtol=1e-12)


def test_plucker_inverse_and_inertia_transform(rng):
    quat = rng.normal(size=4)
    E = sp.quat_to_R(quat / np.linalg.norm(quat))
    r = rng.normal(size=3)
    X = sp.plucker(E, r)
    Xinv = sp.plucker(E.T, -E @ r)
    np.testing.assert_allclose(X @ Xinv, np.eye(6), atol=1e-13)
    # spatial inertia about the CoM moved to the origin equals the parallel-axis formula
    m, c = 2.5, rng.normal(size=3)
    Ic = np.diag([0.3, 0.4, 0.5])
    X_oc = sp.plucker(np.eye(3), c)  # origin -> CoM frame
    np.testing.assert_allclose(
        X_oc.T @ sp.spatial_inertia(m, np.zeros(3), Ic) @ X_oc, sp.spatial_inertia(m, c, Ic), atol=1e-13
    )


def test_bias_force_equals_cross_product_and_is_accurate_at_speed(rng):
    """bias_force(I, v) == crf(v) I v, and keeps its accuracy when |v_o| is large (a body
    translating at ~200 m/s): compared with the product in extended precision, the error stays
    far below the m |v_o|^2 eps ~ 1e-9 that the plain float64 product can lose."""
    I = sp.spatial_inertia(500.0, rng.normal(size=3) * 0.1, np.diag([260.0, 250.0, 190.0]))
    v = rng.normal(size=6)
    np.testing.assert_allclose(sp.bias_force(I, v), sp.crf(v) @ I @ v, rtol=1e-13, atol=1e-13)
    worst = 0.0
    for _ in range(50):
        fast = rng.normal(size=6) * np.r_[0.02, 0.02, 0.02, 150.0, 150.0, 150.0]
        exact = sp.crf(fast.astype(np.longdouble)) @ (I.astype(np.longdouble) @ fast.astype(np.longdouble))
        worst = max(worst, float(np.abs(sp.bias_force(I, fast) - exact).max()))
    assert worst < 1e-11
