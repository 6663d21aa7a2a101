"""Pinocchio (`pin`) as a test-only oracle: M, RNEA and ABA on the same trees to 1e-10."""

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import mbsfmu  # noqa: E402
from tests.support.paths import MODELS  # noqa: E402
from tests.support.pin_twin import q_to_pin, to_pinocchio  # noqa: E402
from tests.support.trees import random_tree  # noqa: E402

RTOL, ATOL = 1e-10, 1e-10


def models(rng):
    out = [mbsfmu.load_model(MODELS / name) for name in ("branched_robot.yaml", "scara.yaml")]
    out += [random_tree(rng, n, free_base=fb) for n in (3, 12, 25) for fb in (True, False)]
    out.append(random_tree(rng, 10, free_base=False, types=("spherical", "prismatic")))
    return out


def test_same_M_rnea_aba_as_pinocchio(rng):
    worst = {"M": 0.0, "rnea": 0.0, "aba": 0.0}
    for model in models(rng):
        pm = to_pinocchio(model)
        pd = pm.createData()
        assert pm.nq == model.nq and pm.nv == model.nv
        for _ in range(5):
            q, qd = model.random_state(rng)
            qdd, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
            pq = q_to_pin(model, q)
            # pin.crba returns data.M by reference (later calls overwrite it), upper triangle only
            M_pin = pin.crba(pm, pd, pq, pin.Convention.LOCAL).copy()
            M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
            M = model.mass_matrix(q)
            np.testing.assert_allclose(M, M_pin, rtol=RTOL, atol=ATOL)
            tau_pin = pin.rnea(pm, pd, pq, qd, qdd).copy()
            np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd), tau_pin, rtol=RTOL, atol=ATOL)
            qdd_pin = pin.aba(pm, pd, pq, qd, tau).copy()
            np.testing.assert_allclose(model.forward_dynamics(q, qd, tau), qdd_pin, rtol=RTOL, atol=ATOL)
            worst["M"] = max(worst["M"], np.abs(M - M_pin).max() / np.abs(M_pin).max())
            rnea = np.abs(model.inverse_dynamics(q, qd, qdd) - tau_pin).max() / np.abs(tau_pin).max()
            aba = np.abs(model.forward_dynamics(q, qd, tau) - qdd_pin).max() / np.abs(qdd_pin).max()
            worst["rnea"], worst["aba"] = max(worst["rnea"], rnea), max(worst["aba"], aba)
    print("worst relative discrepancy vs Pinocchio:", worst)


def test_frame_placement_and_jacobian_as_pinocchio(rng):
    """Body poses and point Jacobians against pin.forwardKinematics / computeJointJacobians."""
    model = mbsfmu.load_model(MODELS / "branched_robot.yaml")
    pm = to_pinocchio(model)
    pd = pm.createData()
    q, _ = model.random_state(rng)
    pin.forwardKinematics(pm, pd, q_to_pin(model, q))
    pin.computeJointJacobians(pm, pd, q_to_pin(model, q))
    kin = model.forward_kinematics(q)
    for name in ("torso", "head", "l_foot", "r_forearm"):
        i = model.body_index[name]
        jid = pm.getJointId(model.joint_names[i - 1])
        np.testing.assert_allclose(kin.R[i], pd.oMi[jid].rotation, rtol=0, atol=1e-12)
        np.testing.assert_allclose(kin.p[i], pd.oMi[jid].translation, rtol=0, atol=1e-12)
        J_pin = pin.getJointJacobian(pm, pd, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)  # [v; w] at joint origin
        from mbsfmu.engine.kinematics import point_jacobian

        J = point_jacobian(model.tree, kin, i, np.zeros(3))
        np.testing.assert_allclose(J[3:], J_pin[:3], rtol=0, atol=1e-12)
        np.testing.assert_allclose(J[:3], J_pin[3:], rtol=0, atol=1e-12)
