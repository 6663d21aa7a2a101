"""A spherical or free joint's configuration is its quaternion's direction: the C core and the numpy
reference build the joint rotation E of q / |q| (spatial.quat_to_R, spatial.h quat_to_R), so the
poses, M, the forward and inverse dynamics and the free joint's origin rate at a quaternion of norm
1.0001 or 0.9 (RK4's stages are of any norm) equal those at the unit quaternion to float64
rounding. Before, E = I + 2 w [v]x + 2 [v]x^2 of the quaternion as it was: at |q| = 1.0001 the
RSSR's M moved by ~1e-4 of its size, and the compact composite inertias (crba.c), which assume E
orthonormal, disagreed with the dense reference by 2.6e-6 (docs/performance.md)."""

import numpy as np
import pytest

from mbsfmu import load_model
from mbsfmu.engine import joints
from mbsfmu.errors import InputError
from tests.support.paths import MODELS as MODEL_DIR

# every value below is a sum over at most ~15 bodies of products of a few rotations: the difference
# between the two quaternions' evaluations is a few roundings of each term, N eps S with N = 64
# (measured: at most 1.1e-15 of the result's size, 5 eps, over 20 states of each model)
TOL = 64 * np.finfo(float).eps
MODELS = ("rssr.yaml", "branched_robot.yaml")  # a spherical joint away from the root; a free base and a spherical neck


def _quaternions(model) -> list[slice]:
    t = model.tree
    return [
        slice(int(t.iq[i] + t.nq[i]) - 4, int(t.iq[i] + t.nq[i]))
        for i in range(1, model.N + 1)
        if t.jtype[i] in (joints.SPHERICAL, joints.FREE)
    ]


def _scaled(model, q, c: float):
    qs = q.copy()
    for s in _quaternions(model):
        qs[s] *= c
    return qs


def _close(a, b):
    """|a - b| <= TOL max |b| entry by entry (the result's own scale)."""
    np.testing.assert_allclose(a, b, rtol=0, atol=TOL * max(np.abs(b).max(), 1.0))


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("c", [1.0001, 0.9])
@pytest.mark.parametrize("backend", ["native", "python"])
def test_dynamics_at_a_quaternion_of_any_norm_are_those_of_its_direction(name, c, backend, rng):
    model = load_model(MODEL_DIR / name)
    assert _quaternions(model)
    for _ in range(3):
        q, qd = model.random_state(rng)
        qdd, tau = rng.uniform(-1.0, 1.0, (2, model.nv))
        qs = _scaled(model, q, c)
        for call, args in (
            (model.mass_matrix, ()),
            (model.forward_dynamics, (qd, tau)),
            (model.inverse_dynamics, (qd, qdd)),
        ):
            _close(call(qs, *args, backend=backend), call(q, *args, backend=backend))


@pytest.mark.parametrize("c", [1.0001, 0.9])
def test_poses_and_origin_rate_at_a_quaternion_of_any_norm(c, rng):
    """E of every body (the reference's forward kinematics, the core's frame_pose) is orthonormal
    and that of the unit quaternion; the free joint's origin rate R v (Model.config_rate, the
    core's mbs_config_rate through the Simulator's rhs) likewise."""
    model = load_model(MODEL_DIR / "branched_robot.yaml")
    q, qd = model.random_state(rng)
    qs = _scaled(model, q, c)
    R, Rs = model.forward_kinematics(q).R, model.forward_kinematics(qs).R
    _close(Rs, R)
    _close(np.einsum("nij,nkj->nik", Rs, Rs), np.broadcast_to(np.eye(3), Rs.shape))
    for frame in model.frames:
        _close(model.frame_pose(qs, frame)[0], model.frame_pose(q, frame)[0])
    base = model.q_slice("base")
    _close(model.config_rate(qs, qd)[base][:3], model.config_rate(q, qd)[base][:3])


@pytest.mark.parametrize("backend", ["native", "python"])
def test_a_zero_quaternion_is_refused_naming_its_joint(backend):
    """A quaternion of norm 0 has no direction: an InputError naming its entries and joint, not NaN."""
    model = load_model(MODEL_DIR / "branched_robot.yaml")
    q = model.neutral()
    s = model.q_slice("neck")
    q[s] = 0.0
    with pytest.raises(InputError, match=rf"q\[{s.start}:{s.stop}\] \(joint 'neck'\) is a quaternion of norm 0"):
        model.mass_matrix(q, backend=backend)
    with pytest.raises(InputError, match="no direction"):
        model.forward_dynamics(q, np.zeros(model.nv), np.zeros(model.nv), backend=backend)
