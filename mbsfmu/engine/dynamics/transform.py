"""Forward dynamics by the velocity-transformation method of T. S. No, Eqs. 5-21.

An independent second formalism, kept apart from the spatial-algebra recursions (no Plucker
transforms, no RNEA/CRBA/ABA) so that it can cross-check them. It works with 3-vectors and
direction cosine matrices only:

1. absolute coordinates of body j: the inertial velocity ``Rdot_j`` of its attach point P_j (the
   body frame origin) and its inertial angular velocity ``omega_j``, both in world axes;
2. the velocity transformation X = B qd (No's method, Eq. 11), X = [Rdot_1..N; omega_1..N] (6N,),
   built column by column over the path matrix ``pi``;
3. the Newton-Euler equations of every body about P_j as a free body (Eq. 18), stacked (Eq. 19);
4. the reduced equations B^T M B qdd = B^T (Q - M Bdot qd) + tau (Eqs. 20-21).

Notation of No's method (Figs. 3-4): ``L`` the reference body operator (``tree.parent``, L(j) = 0 the
inertial frame), ``pi`` the path matrix, ``C[j]`` the direction cosine matrix taking inertial
coordinates to body j coordinates (so ``C[j].T`` has body j's axes as columns), ``R[j]`` the
position of P_j [m], ``Omega_j`` the angular velocity of body j relative to body L(j), ``d_j =
R_j - R_L(j)`` (No's d_j + r_j). Every vector inside this module is in world axes.

No writes B (Eq. 11) as block products of pi with C_L(j)^T and skew(d_j + r_j) in relative
coordinates (x, Omega). Here the generalized speeds are the joints' qd (``mbsfmu.engine.joints``), and
B is built directly per joint column: the column of a joint axis is nonzero in the rows of body j
exactly when pi[j, k] = 1, which is the same matrix written column-wise.
"""

from __future__ import annotations

import numpy as np

from ..joints import joint_pose
from ..spatial import Array
from ..spec.tree import Tree


def path_matrix(L: np.ndarray) -> np.ndarray:
    """pi: (N, N) path matrix of No's method from the reference body operator L (N+1,).

    pi[j-1, k-1] = 1 when body k lies on the path from the inertial frame to body j (j included).
    Bodies are in topological order (L[j] < j), so row j is row L(j) plus the diagonal entry.
    """
    n = len(L) - 1
    pi = np.zeros((n, n), dtype=np.int8)
    for j in range(1, n + 1):
        if L[j] > 0:
            pi[j - 1] = pi[L[j] - 1]
        pi[j - 1, j - 1] = 1
    return pi


def body_poses(tree: Tree, q: Array) -> tuple[Array, Array]:
    """(C, R): direction cosine matrices and attach-point positions of every body (No's method, Eq. 5).

    q: (nq,) joint coordinates. Returns C (N+1, 3, 3), inertial -> body j coordinates, and
    R (N+1, 3), position of P_j in world coordinates [m]; row 0 is the inertial frame.
    Composed from the joint frames (``tree.R_tree``, ``tree.p_tree``, fixed in body L(j)) and the
    joint motion (``joints.joint_pose``): R_j = R_L(j) + C_L(j)^T (p_tree + R_tree r_J).
    """
    n = tree.N
    C = np.tile(np.eye(3), (n + 1, 1, 1))
    R = np.zeros((n + 1, 3))
    for j in range(1, n + 1):
        L = tree.parent[j]
        R_J, r_J = joint_pose(tree.jtype[j], tree.axis[j], q[tree.iq[j] : tree.iq[j] + tree.nq[j]])
        C[j] = (tree.R_tree[j] @ R_J).T @ C[L]
        R[j] = R[L] + C[L].T @ (tree.p_tree[j] + tree.R_tree[j] @ r_J)
    return C, R


def _joint_axes(tree: Tree, C: Array, k: int) -> tuple[Array, Array]:
    """(u, t): (3, nv_k) rotational and translational axes of joint k in world axes.

    Read from the angular and linear rows of tree.S (child coordinates) and rotated by C_k^T:
    joint k's rates turn body k at P_k about u and move P_k along t relative to body L(k)."""
    S = tree.S[k, :, : tree.nv[k]]
    return C[k].T @ S[:3], C[k].T @ S[3:]


def _velocity_transformation(tree: Tree, C: Array, R: Array, pi: np.ndarray) -> Array:
    """B (6N, nv) of No's method, Eq. 11 from the poses and the path matrix (see velocity_transformation)."""
    n = tree.N
    B = np.zeros((2, n, 3, tree.nv_total))
    for k in range(1, n + 1):
        cols = slice(tree.iv[k], tree.iv[k] + tree.nv[k])
        u, t = _joint_axes(tree, C, k)
        j = np.flatnonzero(pi[:, k - 1])  # bodies j with pi[j, k] = 1
        B[0, j, :, cols] = t + np.cross(u[None], (R[j + 1] - R[k])[:, :, None], axis=1)  # Rdot_j (Eq. 6)
        B[1, j, :, cols] = u  # omega_j (Eq. 8)
    return B.reshape(6 * n, tree.nv_total)


def velocity_transformation(tree: Tree, q: Array) -> Array:
    """B: (6N, nv) with X = B qd, X = [Rdot_1..N; omega_1..N] (No's method, Eq. 11).

    q: (nq,) joint coordinates. Rows 3(j-1):3j hold Rdot_j, the inertial velocity of P_j [m/s];
    rows 3N+3(j-1):3N+3j hold omega_j [rad/s]; both world axes; columns follow qd (``joints``:
    rad/s or m/s). Joint k's column block is nonzero only in the rows of bodies j with
    pi[j, k] = 1: a rotational axis u at P_k adds u to omega_j and u x (R_j - R_k) to Rdot_j
    (Eqs. 6 and 8), a translational axis t adds t to Rdot_j.
    """
    C, R = body_poses(tree, q)
    return _velocity_transformation(tree, C, R, path_matrix(tree.parent))


def velocity_product(tree: Tree, C: Array, R: Array, qd: Array) -> Array:
    """Bdot qd: (6N,) the absolute accelerations [Rddot; omegadot] at qdd = 0, world axes
    [m/s^2; rad/s^2], the velocity-product term of No's method, Eq. 20 (exact, by recursion over L(j)).

    C, R: poses from ``body_poses``; qd: (nv,) joint rates. With Omega_j = u_j qd_j and
    V_j = t_j qd_j (joint j's angular and translational rates, world axes) and d_j = R_j - R_L(j),
    differentiating omega_j = omega_L + Omega_j and Rdot_j = Rdot_L + omega_L x d_j + V_j with
    Omega_j, V_j fixed in body j (d/dt = omega_j x) gives
        omegadot_j = omegadot_L + omega_L x Omega_j,
        Rddot_j    = Rddot_L + omegadot_L x d_j + omega_L x (omega_L x d_j) + (omega_L + omega_j) x V_j.
    """
    n = tree.N
    omega = np.zeros((n + 1, 3))
    Rddot = np.zeros((n + 1, 3))
    omegadot = np.zeros((n + 1, 3))
    for j in range(1, n + 1):
        L = tree.parent[j]
        u, t = _joint_axes(tree, C, j)
        qd_j = qd[tree.iv[j] : tree.iv[j] + tree.nv[j]]
        Omega = u @ qd_j
        V = t @ qd_j
        d = R[j] - R[L]
        omega[j] = omega[L] + Omega
        omegadot[j] = omegadot[L] + np.cross(omega[L], Omega)
        Rddot[j] = (
            Rddot[L]
            + np.cross(omegadot[L], d)
            + np.cross(omega[L], np.cross(omega[L], d))
            + np.cross(omega[L] + omega[j], V)
        )
    return np.concatenate((Rddot[1:].ravel(), omegadot[1:].ravel()))


def _skew(s: Array) -> Array:
    """(n, 3, 3) cross-product matrices of the rows of s (n, 3): _skew(s)[i] @ b == s[i] x b."""
    S = np.zeros((len(s), 3, 3))
    S[:, 0, 1], S[:, 0, 2], S[:, 1, 2] = -s[:, 2], s[:, 1], -s[:, 0]
    return S - S.transpose(0, 2, 1)


def _mass_properties(tree: Tree, C: Array) -> tuple[Array, Array, Array]:
    """(m, s, I_P): masses (N,) [kg], CoM offsets from P_j (N, 3) [m] and inertias about P_j
    (N, 3, 3) [kg m^2], world axes: s = C^T c, I_P = C^T I_c C + m (s.s 1 - s s^T) (No's method, Eq. 16)."""
    m = tree.mass[1:]
    s = np.einsum("nji,nj->ni", C[1:], tree.com[1:])
    ss = np.einsum("ni,ni->n", s, s)[:, None, None] * np.eye(3) - np.einsum("ni,nj->nij", s, s)
    I_P = np.einsum("nji,njk,nkl->nil", C[1:], tree.I_c[1:], C[1:]) + m[:, None, None] * ss
    return m, s, I_P


def system_mass_matrix(tree: Tree, C: Array) -> Array:
    """M: (6N, 6N) block-diagonal mass matrix of the free bodies, No's method, Eqs. 18-19.

    C: (N+1, 3, 3) from ``body_poses``. Rows and columns follow X = [Rdot_1..N; omega_1..N];
    body j's blocks are M11 = m 1, M12 = -m skew(s), M21 = m skew(s) = M12^T, M22 = I_P, about
    P_j in world axes [kg, kg m, kg m^2] (No's (r_jc~ C_j)^T with s = C_j^T r_jc).
    """
    n = tree.N
    m, s, I_P = _mass_properties(tree, C)
    b = np.arange(n)
    M = np.zeros((2, n, 3, 2, n, 3))
    M[0, b, :, 0, b, :] = m[:, None, None] * np.eye(3)
    M[0, b, :, 1, b, :] = -m[:, None, None] * _skew(s)
    M[1, b, :, 0, b, :] = m[:, None, None] * _skew(s)
    M[1, b, :, 1, b, :] = I_P
    return M.reshape(6 * n, 6 * n)


def applied_forces(tree: Tree, C: Array, omega: Array, f_ext: Array | None = None) -> Array:
    """Q: (6N,) [F_1..N; M_1..N] of No's method, Eqs. 15, 17, 19: applied plus inertial forces on
    each free body, about P_j, world axes [N; N m].

    C: (N+1, 3, 3) poses; omega: (N, 3) angular velocities [rad/s], world axes; f_ext: (N+1, 6)
    external wrench [N m; N] in body axes about the body origin P_j (row 0 ignored) or None.
        F_j = m g + f_j - m omega x (omega x s),   M_j = s x m g + n_j - omega x I_P omega.
    """
    m, s, I_P = _mass_properties(tree, C)
    mg = m[:, None] * tree.a_grav[3:]
    F = mg - m[:, None] * np.cross(omega, np.cross(omega, s))
    Mo = np.cross(s, mg) - np.cross(omega, np.einsum("nij,nj->ni", I_P, omega))
    if f_ext is not None:
        Mo += np.einsum("nji,nj->ni", C[1:], f_ext[1:, :3])
        F += np.einsum("nji,nj->ni", C[1:], f_ext[1:, 3:])
    return np.concatenate((F.ravel(), Mo.ravel()))


def transform_mass_matrix(tree: Tree, q: Array) -> Array:
    """B^T M B: (nv, nv) joint-space inertia by the velocity transformation (No's method, Eq. 20)
    [kg, kg m, kg m^2]; q: (nq,) joint coordinates. Equals the CRBA's M(q)."""
    C, R = body_poses(tree, q)
    B = _velocity_transformation(tree, C, R, path_matrix(tree.parent))
    return B.T @ system_mass_matrix(tree, C) @ B


def transform_forward_dynamics(tree: Tree, q: Array, qd: Array, tau: Array, f_ext: Array | None = None) -> Array:
    """qdd: (nv,) from B^T M B qdd = B^T (Q - M Bdot qd) + tau (No's method, Eqs. 20-21).

    No's printed Eq. 20 has lost its dots; differentiating X = B qd (Eq. 11) into
    M Xdot = Q + Q^c (Eq. 19) and premultiplying by B^T gives
        B^T M B qdd = B^T Q + B^T Q^c - B^T M Bdot qd,
    with B^T Q^c = 0 for a tree (Eq. 21) except the joint actuators' work, tau.

    q: (nq,) joint coordinates; qd: (nv,) joint rates [rad/s or m/s]; tau: (nv,) joint forces
    [N m or N]; f_ext: (N+1, 6) external wrench on each body [N m; N], body axes, about the body
    origin (row 0, the world, ignored), or None. Returns qdd [rad/s^2 or m/s^2] in the joints'
    rate conventions (``mbsfmu.engine.joints``).
    """
    n = tree.N
    C, R = body_poses(tree, q)
    B = _velocity_transformation(tree, C, R, path_matrix(tree.parent))
    X = B @ qd  # Eq. 11
    omega = X[3 * n :].reshape(n, 3)
    M = system_mass_matrix(tree, C)  # Eq. 19
    Q = applied_forces(tree, C, omega, f_ext)
    Bdot_qd = velocity_product(tree, C, R, qd)
    return np.linalg.solve(B.T @ M @ B, B.T @ (Q - M @ Bdot_qd) + tau)  # Eqs. 20-21
