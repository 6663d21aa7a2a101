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


def test_rotation_of_a_quaternion_is_that_of_its_direction(rng):
    """quat_to_R(c q) = quat_to_R(q / |q|) for any c != 0, orthonormal (to 8 eps: a few roundings per
    entry); the unit formula I + 2 w [v]x + 2 [v]x^2 of c q is neither (1e-4 off at c = 1.0001)."""
    eps = np.finfo(float).eps
    for _ in range(50):
        q = rng.normal(size=4)
        R = sp.quat_to_R(q / np.linalg.norm(q))
        for c in (1.0001, 0.9, -3.7, 1e-3):
            Rc = sp.quat_to_R(c * q)
            np.testing.assert_allclose(Rc, R, rtol=0, atol=8 * eps)
            np.testing.assert_allclose(Rc @ Rc.T, np.eye(3), rtol=0, atol=8 * eps)


def test_quaternions_of_many_rotations_equal_one_by_one(rng):
    """R_to_quat_many equals R_to_quat bit for bit in every branch of Shepperd's method: trace > 0,
    and each of the three largest diagonal entries (rotations by near pi about x, y, z)."""
    quats = [sp.quat_exp(rng.normal(size=3)) for _ in range(60)]
    quats += [sp.quat_exp(3.1 * axis + 0.01 * rng.normal(size=3)) for axis in np.eye(3) for _ in range(5)]
    R = np.array([sp.quat_to_R(q) for q in quats])
    one_by_one = np.array([sp.R_to_quat(Ri) for Ri in R])
    branches = {int(np.argmax(np.diag(Ri))) if np.trace(Ri) <= 0 else -1 for Ri in R}
    assert branches == {-1, 0, 1, 2}
    assert np.array_equal(sp.R_to_quat_many(R), one_by_one)


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


def test_quarter_turns_are_exact():
    """rpy of the doubles k * (pi/2) (a URDF's 1.5707963267948966) give a signed permutation with
    exact zeros (np.cos leaves 6.1e-17, the cosine of that double); within 1 ulp of np.cos, np.sin
    (the double's own cosine is within 6.2e-17 of 0) and elsewhere the same numbers as np.cos, np.sin."""
    h = np.pi / 2
    for k in range(-4, 5):
        c, s = sp.cos_sin(k * h)
        assert (c, s) == (round(np.cos(k * h)), round(np.sin(k * h)))
        assert abs(c - np.cos(k * h)) <= 2.5e-16 and abs(s - np.sin(k * h)) <= 2.5e-16
    R = sp.rpy_to_R(np.array([h, 0.0, -h]))
    assert set(np.abs(R).ravel()) == {0.0, 1.0}
    np.testing.assert_array_equal(R @ R.T, np.eye(3))
    for a in (np.nextafter(h, 0.0), 0.3, -2.0, 7.0, 3 * np.pi):
        assert sp.cos_sin(a) == (np.cos(a), np.sin(a))


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


def test_stacked_plucker_and_spatial_inertia_are_each_bodys_bit_for_bit(rng):
    """compile_tree and joint_transforms build every body's X and I in one stacked call: each entry
    must equal the single-body call exactly (the trajectories are compared bit for bit), and the
    single-body call must be RBDA's closed forms (Eqs. 2.24, 2.63) written out here."""
    n = 2000
    E = rng.normal(size=(n, 3, 3)) * 10.0 ** rng.integers(-6, 6, (n, 1, 1))
    r = rng.normal(size=(n, 3)) * 10.0 ** rng.integers(-6, 6, (n, 1))
    m = rng.uniform(0, 10, n) * 10.0 ** rng.integers(-6, 6, n)
    I_c = rng.normal(size=(n, 3, 3))
    X, I = sp.plucker(E.swapaxes(-1, -2), r), sp.spatial_inertia(m, r, I_c)
    assert X.shape == I.shape == (n, 6, 6)
    for k in range(n):
        np.testing.assert_array_equal(X[k], sp.plucker(E[k].T, r[k]))
        np.testing.assert_array_equal(I[k], sp.spatial_inertia(m[k], r[k], I_c[k]))
    np.testing.assert_array_equal(sp.skew(r), [sp.skew(v) for v in r])
    k = 7
    rx = np.cross(r[k], np.eye(3)).T  # column j: r x e_j, so rx @ b == r x b
    np.testing.assert_array_equal(sp.skew(r[k]), rx)
    ref_X = np.block([[E[k].T, np.zeros((3, 3))], [-E[k].T @ rx, E[k].T]])
    np.testing.assert_allclose(X[k], ref_X, rtol=1e-15, atol=0)
    ref_I = np.block([[I_c[k] + m[k] * rx @ rx.T, m[k] * rx], [m[k] * rx.T, m[k] * np.eye(3)]])
    np.testing.assert_allclose(I[k], ref_I, rtol=1e-15, atol=0)
    assert sp.plucker(np.zeros((0, 3, 3)), np.zeros((0, 3))).shape == (0, 6, 6)
