"""No's method velocity transformation (mbsfmu/engine/dynamics/transform.py) against the recursive algorithms
and the kinematics, at random states of random trees and on the SCARA model (tier 1)."""

import ast
import inspect

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.dynamics import transform
from mbsfmu.engine.dynamics.transform import (
    body_poses,
    path_matrix,
    transform_forward_dynamics,
    transform_mass_matrix,
    velocity_product,
    velocity_transformation,
)
from tests.support.paths import MODELS
from tests.support.trees import random_tree

RTOL, ATOL = 1e-10, 1e-10
STATES = 3  # random states per model


def cases(rng):
    """Random trees n = 1..15 of all joint types, free and revolute base; single-type trees; springs;
    the SCARA of Wojtusch's analytical tests."""
    out = [random_tree(rng, n, free_base=fb) for n in range(1, 16) for fb in (True, False)]
    out.append(random_tree(rng, 8, free_base=False, types=("spherical",)))
    out.append(random_tree(rng, 8, free_base=True, types=("prismatic", "fixed")))
    out.append(random_tree(rng, 6, free_base=True, types=("free",)))
    out.append(random_tree(rng, 10, free_base=False, springs=True, types=("revolute", "prismatic")))
    out.append(mbsfmu.load_model(MODELS / "scara.yaml"))
    return out


def states(model, rng):
    for _ in range(STATES):
        q, qd = model.random_state(rng)
        yield q, qd


def test_independent_of_spatial_recursions():
    """transform.py imports none of the spatial-algebra recursion (it is the cross-check)."""
    tree = ast.parse(inspect.getsource(transform))
    used = (
        {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names}
        | {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
        | {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    )
    modules = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert not used & {
        "crm",
        "crf",
        "plucker",
        "spatial_inertia",
        "joint_transforms",
        "Xup",
        "Xtree",
        "I",
        "rnea",
        "aba",
        "crba",
        "forward_kinematics",
    }
    assert not modules & {"rnea", "aba", "crba", "kinematics"}


def test_path_matrix_equals_topology(rng):
    """pi built from L alone equals the model's topology path matrix (No's method)."""
    for model in cases(rng):
        np.testing.assert_array_equal(path_matrix(model.tree.parent), model.pi)


def test_B_follows_path_matrix(rng):
    """B's block (body j, joint k) is zero exactly when pi[j-1, k-1] == 0 (No's method, Eq. 11)."""
    for model in cases(rng):
        t, n = model.tree, model.N
        q, _ = model.random_state(rng)
        B = velocity_transformation(t, q).reshape(2, n, 3, model.nv)
        for j in range(1, n + 1):
            for k in range(1, n + 1):
                block = B[:, j - 1, :, t.iv[k] : t.iv[k] + t.nv[k]]
                if model.pi[j - 1, k - 1] == 0:
                    assert np.all(block == 0.0), (j, k)
                elif t.nv[k] > 0:
                    assert np.all(np.abs(block).sum(axis=(0, 1)) > 0.0), (j, k)  # every axis moves body j


def test_poses_equal_forward_kinematics(rng):
    """C_j^T and R_j (composed rotation matrices) equal the kinematics' body pose."""
    for model in cases(rng):
        for q, _ in states(model, rng):
            C, R = body_poses(model.tree, q)
            kin = model.forward_kinematics(q)
            np.testing.assert_allclose(C.transpose(0, 2, 1), kin.R, rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(R, kin.p, rtol=RTOL, atol=ATOL)


def test_B_qd_equals_body_velocities(rng):
    """X = B qd: Rdot_j and omega_j equal the velocity of the body origin and the angular velocity
    (world axes) from forward kinematics."""
    for model in cases(rng):
        n = model.N
        for q, qd in states(model, rng):
            X = (velocity_transformation(model.tree, q) @ qd).reshape(2, n, 3)
            kin = model.forward_kinematics(q, qd)
            v_o = np.array([kin.point_velocity(j, np.zeros(3)) for j in range(1, n + 1)])
            np.testing.assert_allclose(X[0], v_o, rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(X[1], kin.omega_world[1:], rtol=RTOL, atol=ATOL)


def test_Xdot_equals_body_accelerations(rng):
    """Xdot = B qdd + Bdot qd: the classical acceleration of each body origin and the angular
    acceleration (world axes) from forward kinematics, so the analytic Bdot qd is exact."""
    for model in cases(rng):
        n = model.N
        for q, qd in states(model, rng):
            qdd = rng.uniform(-1.0, 1.0, model.nv)
            C, R = body_poses(model.tree, q)
            Xdot = velocity_transformation(model.tree, q) @ qdd + velocity_product(model.tree, C, R, qd)
            Xdot = Xdot.reshape(2, n, 3)
            kin = model.forward_kinematics(q, qd, qdd)
            a_o = np.array([kin.point_acceleration(j, np.zeros(3)) for j in range(1, n + 1)])
            omegadot = np.einsum("nij,nj->ni", kin.R[1:], kin.a[1:, :3])
            np.testing.assert_allclose(Xdot[0], a_o, rtol=RTOL, atol=ATOL)
            np.testing.assert_allclose(Xdot[1], omegadot, rtol=RTOL, atol=ATOL)


def test_Bdot_qd_equals_derivative_of_B_qd(rng):
    """Bdot qd equals d/dt (B(q) qd) at fixed qd by a central difference along q (+) qd h
    (a check of the analytic term that does not go through the kinematics module)."""
    h = 1e-5
    for model in cases(rng)[::4]:
        q, qd = model.random_state(rng)
        C, R = body_poses(model.tree, q)
        fd = (
            velocity_transformation(model.tree, model.integrate(q, h * qd)) @ qd
            - velocity_transformation(model.tree, model.integrate(q, -h * qd)) @ qd
        ) / (2 * h)
        np.testing.assert_allclose(velocity_product(model.tree, C, R, qd), fd, rtol=1e-6, atol=1e-7)


def test_BTMB_equals_crba(rng):
    """B^T M B (No's method, Eq. 20) == M(q) from the CRBA."""
    for model in cases(rng):
        for q, _ in states(model, rng):
            np.testing.assert_allclose(transform_mass_matrix(model.tree, q), model.mass_matrix(q), rtol=RTOL, atol=ATOL)


def test_forward_dynamics_equals_aba(rng):
    """qdd from B^T M B qdd = B^T (Q - M Bdot qd) + tau == ABA, with tau, gravity, springs and f_ext."""
    for model in cases(rng):
        for q, qd in states(model, rng):
            tau = rng.normal(size=model.nv)
            f_ext = rng.normal(size=(model.N, 6))
            for fx in (None, f_ext):
                np.testing.assert_allclose(
                    model.forward_dynamics(q, qd, tau, fx, method="transform"),
                    model.forward_dynamics(q, qd, tau, fx),
                    rtol=RTOL,
                    atol=ATOL,
                )


def test_forward_dynamics_direct_call(rng):
    """The module function takes f_ext as (N+1, 6) with row 0 the world (ignored)."""
    model = random_tree(rng, 7, free_base=True)
    q, qd = model.random_state(rng)
    tau = rng.normal(size=model.nv)
    f_ext = rng.normal(size=(model.N + 1, 6))
    np.testing.assert_allclose(
        transform_forward_dynamics(model.tree, q, qd, tau, f_ext),
        model.forward_dynamics(q, qd, tau, f_ext[1:]),
        rtol=RTOL,
        atol=ATOL,
    )


@pytest.mark.parametrize("q2", [0.7, -2.1])
def test_scara_mass_matrix_closed_form(q2):
    """SCARA M(q) by B^T M B equals the corrected closed form of Wojtusch's analytical tests
    (docs/explanation/errata.md, typo 2), written with the CoM c_i = l_i e_x + r_i of each link in its own frame."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    t = model.tree
    m1, m2, l1 = t.mass[1], t.mass[2], t.p_tree[2, 0]
    (c1x, c1y, _), (c2x, c2y, _) = t.com[1], t.com[2]  # c1x = l1 + r1x, c2x = l2 + r2x, ciy = riy
    I1, I2 = t.I_c[1, 2, 2], t.I_c[2, 2, 2]
    assert c2y != 0.0  # otherwise erratum 2 is invisible
    c, s = np.cos(q2), np.sin(q2)
    M22 = m2 * (c2x**2 + c2y**2) + I2
    M12 = M22 + m2 * l1 * (c2x * c - c2y * s)
    M11 = m1 * (c1x**2 + c1y**2) + I1 + m2 * l1**2 + M22 + 2 * m2 * l1 * (c2x * c - c2y * s)
    np.testing.assert_allclose(
        transform_mass_matrix(t, np.array([0.3, q2])), [[M11, M12], [M12, M22]], rtol=RTOL, atol=ATOL
    )
