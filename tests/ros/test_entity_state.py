"""mbsfmu_ros.entity_state: the world-frame pose and twist of a body, and setting the floating base
so that its state read back is the one requested (any free-joint placement), other bodies refused."""

import math

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.kinematics import forward_kinematics
from mbsfmu.engine.spatial import R_to_quat, quat_to_R
from mbsfmu_ros import entity_state as es
from tests.support.paths import MODELS


@pytest.fixture
def rng():
    return np.random.default_rng(20261125)


def random_state(model, rng):
    """A random state: unit quaternions on free and spherical joints (Model.random_state; a
    non-unit quaternion is no rotation, and differences of its 'pose' mean nothing)."""
    return model.random_state(rng)


def twist_by_difference(model, q, qd, i, h=1e-6):
    """(v, omega) of body i, world axes, from central differences of its pose along q (+) s qd:
    v = dp/ds, [omega]x = dR/ds R^T (Rdot = [omega]x R for omega in world axes; [omega]x R would be
    R [omega]x for body axes). Independent of body_state's and of the free joint's conventions.
    Truncation O(h^2) ~ 1e-12; round-off ~ eps |p| / h ~ 1e-9 for |p| of a few m."""
    poses = [forward_kinematics(model.tree, model.integrate(q, s * h * qd)) for s in (-1, 1)]
    v = (poses[1].p[i] - poses[0].p[i]) / (2 * h)
    W = (poses[1].R[i] - poses[0].R[i]) / (2 * h) @ forward_kinematics(model.tree, q).R[i].T
    return v, 0.5 * np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]])


@pytest.mark.parametrize("model_name", ["spacecraft.yaml", "branched_robot.yaml"])
def test_set_base_state_is_read_back(model_name, rng):
    model = mbsfmu.load_model(MODELS / model_name)
    i = es.floating_base(model)
    assert i is not None
    name = model.body_names[i - 1]
    q, qd = random_state(model, rng)
    kin = forward_kinematics(model.tree, q, qd)
    R = quat_to_R(np.array([0.5, 0.5, -0.5, 0.5]))
    w, x, y, z = R_to_quat(R)
    want = es.BodyState((1.0, -2.0, 0.5), (x, y, z, w), (0.1, 0.2, -0.3), (0.4, -0.5, 0.6))
    q2, qd2 = es.set_base_state(model, kin, q, qd, name, want, want)
    got = es.body_state(forward_kinematics(model.tree, q2, qd2), i)
    for field in ("position", "orientation", "linear", "angular"):
        np.testing.assert_allclose(getattr(got, field), getattr(want, field), rtol=0, atol=1e-12, err_msg=field)
    # the state set moves the body with the requested twist in world axes (a finite difference of its
    # pose, not body_state: the same wrong convention in both would pass the read-back above)
    v, omega = twist_by_difference(model, q2, qd2, i)
    np.testing.assert_allclose(v, want.linear, rtol=0, atol=1e-7)
    np.testing.assert_allclose(omega, want.angular, rtol=0, atol=1e-7)
    others = np.ones(model.nq, bool)
    others[int(model.tree.iq[i]) : int(model.tree.iq[i]) + 7] = False
    assert np.array_equal(q2[others], q[others])
    # twist only: the pose stays
    q3, qd3 = es.set_base_state(model, kin, q, qd, name, None, want)
    assert np.array_equal(q3, q)
    got = es.body_state(forward_kinematics(model.tree, q3, qd3), i)
    np.testing.assert_allclose(got.linear, want.linear, rtol=0, atol=1e-12)


def test_body_state_is_world_axes(rng):
    """Twist in world axes: the linear velocity of the body origin is the time derivative of its
    world position, the angular velocity omega that of its orientation, Rdot = [omega]x R (central
    differences), for every body of a floating-base tree."""
    model = mbsfmu.load_model(MODELS / "branched_robot.yaml")
    q, qd = random_state(model, rng)
    kin = forward_kinematics(model.tree, q, qd)
    for i in range(1, model.N + 1):
        got = es.body_state(kin, i)
        v, omega = twist_by_difference(model, q, qd, i)
        np.testing.assert_allclose(got.linear, v, rtol=1e-6, atol=1e-7, err_msg=f"body {i}")
        np.testing.assert_allclose(got.angular, omega, rtol=1e-6, atol=1e-7, err_msg=f"body {i}")


def test_refusals():
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    q, qd = model.initial_state()
    kin = forward_kinematics(model.tree, q, qd)
    with pytest.raises(es.EntityError, match="no entity 'nope'; entities: hub"):
        es.body_index(model, "nope")
    with pytest.raises(es.EntityError, match="moved by its joint.*'hub'") as e:
        es.set_base_state(model, kin, q, qd, "array_l", None, None)
    assert not isinstance(e.value, es.InvalidState)
    bad = es.BodyState((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 2.0), (0.0,) * 3, (0.0,) * 3)
    with pytest.raises(es.InvalidState, match="no unit quaternion"):
        es.set_base_state(model, kin, q, qd, "hub", bad, None)
    nan = es.BodyState((math.nan, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0), (0.0,) * 3, (0.0,) * 3)
    with pytest.raises(es.InvalidState, match="not finite"):
        es.set_base_state(model, kin, q, qd, "hub", nan, None)
    scara = mbsfmu.load_model(MODELS / "scara.yaml")
    q, qd = scara.initial_state()
    with pytest.raises(es.EntityError, match="has no floating base"):
        es.set_base_state(scara, forward_kinematics(scara.tree, q, qd), q, qd, scara.body_names[0], None, None)
