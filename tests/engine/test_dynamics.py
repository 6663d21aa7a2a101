"""Identities between the recursive algorithms at random states of random trees (tier 1)."""

import numpy as np
import pytest

import mbsfmu
from tests.support.paths import MODELS
from tests.support.trees import random_tree

RTOL, ATOL = 1e-10, 1e-10


def cases(rng):
    """Random trees of all joint types (free base included), and the bundled branched robot."""
    out = [random_tree(rng, n, free_base=fb) for n in (1, 2, 5, 12, 20) for fb in (True, False)]
    out.append(random_tree(rng, 8, free_base=False, types=("spherical",)))
    out.append(random_tree(rng, 8, free_base=True, types=("prismatic", "fixed")))
    out.append(random_tree(rng, 10, free_base=False, springs=True, types=("revolute", "prismatic")))
    out.append(mbsfmu.load_model(MODELS / "branched_robot.yaml"))
    return out


def test_aba_equals_crba_solve(rng):
    """ABA == solve(CRBA, tau - RNEA(q, qd, 0)) (RBDA Sec. 6.1: M qdd + C = tau)."""
    for model in cases(rng):
        for _ in range(3):
            q, qd = model.random_state(rng)
            tau = rng.normal(size=model.nv)
            f_ext = rng.normal(size=(model.N, 6))
            np.testing.assert_allclose(
                model.forward_dynamics(q, qd, tau, f_ext),
                model.forward_dynamics(q, qd, tau, f_ext, method="crba"),
                rtol=RTOL,
                atol=ATOL,
            )


def test_rnea_inverts_aba(rng):
    """RNEA(q, qd, ABA(q, qd, tau)) == tau."""
    for model in cases(rng):
        q, qd = model.random_state(rng)
        tau = rng.normal(size=model.nv)
        f_ext = rng.normal(size=(model.N, 6))
        qdd = model.forward_dynamics(q, qd, tau, f_ext)
        np.testing.assert_allclose(model.inverse_dynamics(q, qd, qdd, f_ext), tau, rtol=RTOL, atol=ATOL)


def test_mass_matrix_symmetric_positive_definite(rng):
    for model in cases(rng):
        q, _ = model.random_state(rng)
        M = model.mass_matrix(q)
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-12 * np.abs(M).max())
        assert np.linalg.eigvalsh(M).min() > 0


def test_mass_matrix_columns_from_rnea(rng):
    """M e_k == RNEA(q, 0, e_k) - RNEA(q, 0, 0), gravity and springs cancelling."""
    for model in cases(rng)[:6]:
        q, _ = model.random_state(rng)
        z = np.zeros(model.nv)
        cols = [model.inverse_dynamics(q, z, e) - model.inverse_dynamics(q, z, z) for e in np.eye(model.nv)]
        np.testing.assert_allclose(model.mass_matrix(q), np.column_stack(cols), rtol=RTOL, atol=ATOL)


def test_kinetic_energy_body_by_body(rng):
    """1/2 qd^T M qd == sum over bodies of 1/2 (w^T I_c w + m |v_c|^2) (MBS Energy Testing Eq. 1)."""
    for model in cases(rng):
        q, qd = model.random_state(rng)
        np.testing.assert_allclose(
            0.5 * qd @ model.mass_matrix(q) @ qd, model.kinetic_energy(q, qd), rtol=RTOL, atol=ATOL
        )


def test_passive_forces_enter_as_joint_forces(rng):
    """Joint springs/dampers act as tau_passive = -k (q - q0) - d qd added to the actuator forces."""
    model = random_tree(rng, 6, free_base=False, springs=True, types=("revolute", "prismatic"))
    q, qd = model.random_state(rng)
    tau = rng.normal(size=model.nv)
    tau_passive = model.passive_forces(q, qd)
    assert np.all(tau_passive != 0)
    bias = model.inverse_dynamics(q, qd, np.zeros(model.nv)) + tau_passive  # rigid-body C qd + G
    np.testing.assert_allclose(
        model.forward_dynamics(q, qd, tau),
        np.linalg.solve(model.mass_matrix(q), tau + tau_passive - bias),
        rtol=RTOL,
        atol=ATOL,
    )


def test_bad_call_arguments_name_the_argument():
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    with pytest.raises(mbsfmu.InputError, match=r"tau has shape \(3,\).*2 joint forces.*q1, q2"):
        model.forward_dynamics([0, 0], [0, 0], [0, 0, 0])
    with pytest.raises(mbsfmu.InputError, match=r"qd has non-finite entries at indices \[1\]"):
        model.forward_dynamics([0, 0], [0, np.nan], [0, 0])
    with pytest.raises(mbsfmu.InputError, match="method 'lagrange'"):
        model.forward_dynamics([0, 0], [0, 0], [0, 0], method="lagrange")
    with pytest.raises(mbsfmu.InputError, match=r"f_ext has shape \(1, 6\), expected \(2, 6\)"):
        model.forward_dynamics([0, 0], [0, 0], [0, 0], f_ext=np.zeros((1, 6)))
    with pytest.raises(mbsfmu.InputError, match="unknown frame 'hand'.*elbow, tip"):
        model.frame_pose([0, 0], "hand")


def test_complex_arrays_are_refused_not_cut_to_their_real_parts():
    """numpy casts complex to float with a ComplexWarning, dropping the imaginary part: a silent wrong
    answer (issue 37). Every entry point refuses them, naming the argument."""
    import warnings

    from mbsfmu.sim.simulator import Simulator

    model = mbsfmu.load_model(MODELS / "scara.yaml")
    q, qd = model.initial_state()
    z, tau = np.zeros(model.nv) + 1j, np.zeros(model.nv)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning either
        for call, name in [
            (lambda: model.forward_dynamics(q + 0j, qd, tau), "q"),
            (lambda: model.forward_dynamics(q, qd, tau=z), "tau"),
            (lambda: model.inverse_dynamics(q, qd, z), "qdd"),
            (lambda: model.mass_matrix(q.astype(complex)), "q"),
            (lambda: model.forward_dynamics(q, qd, tau, f_ext=np.zeros((model.N, 6), complex)), "f_ext"),
        ]:
            with pytest.raises(mbsfmu.InputError, match=f"^{name} has complex entries: expected real numbers"):
                call()
        sim = Simulator(model)
        with pytest.raises(mbsfmu.InputError, match="^input 'q1.tau' has complex entries"):
            sim.set_input("q1.tau", np.complex128(1 + 2j))
        with pytest.raises(mbsfmu.InputError, match="^u has complex entries"):
            sim.u = z
        with pytest.raises(mbsfmu.InputError, match="^u0 has complex entries"):
            mbsfmu.linearize(model, u0=z)
