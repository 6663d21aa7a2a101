"""mbsfmu_ros.entity_state: the world-frame pose and twist of a body, and setting the floating base
so that its state read back is the one requested (any free-joint placement), other bodies refused."""

import math

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.joints import FREE
from mbsfmu.engine.kinematics import forward_kinematics
from mbsfmu.engine.spatial import R_to_quat, quat_to_R
from mbsfmu_ros import entity_state as es
from tests.support.paths import MODELS


@pytest.fixture
def rng():
    return np.random.default_rng(20261125)


def random_state(model, rng):
    q, qd = model.initial_state()
    q = np.array(q, dtype=float) + 0.3 * rng.standard_normal(q.shape)
    for i in range(1, model.N + 1):  # unit quaternions again
        if int(model.tree.jtype[i]) == FREE:
            s = int(model.tree.iq[i]) + 3
            q[s : s + 4] /= np.linalg.norm(q[s : s + 4])
    return q, rng.standard_normal(np.shape(qd))


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
    others = np.ones(model.nq, bool)
    others[int(model.tree.iq[i]) : int(model.tree.iq[i]) + 7] = False
    assert np.array_equal(q2[others], q[others])
    # twist only: the pose stays
    q3, qd3 = es.set_base_state(model, kin, q, qd, name, None, want)
    assert np.array_equal(q3, q)
    got = es.body_state(forward_kinematics(model.tree, q3, qd3), i)
    np.testing.assert_allclose(got.linear, want.linear, rtol=0, atol=1e-12)


def test_body_state_is_world_axes(rng):
    """Twist in world axes: the linear velocity of the body origin equals the time derivative of
    its world position (central difference)."""
    model = mbsfmu.load_model(MODELS / "branched_robot.yaml")
    q, qd = random_state(model, rng)
    h = 1e-6
    i = model.N
    p = [es.body_state(forward_kinematics(model.tree, model.integrate(q, s * h * qd), qd), i).position for s in (-1, 1)]
    v = es.body_state(forward_kinematics(model.tree, q, qd), i).linear
    np.testing.assert_allclose(v, (np.array(p[1]) - np.array(p[0])) / (2 * h), rtol=1e-6, atol=1e-7)


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
