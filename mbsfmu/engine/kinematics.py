"""Direct kinematics: poses, spatial velocities and accelerations of bodies, frames, Jacobians.

Body i's pose is (R_i, p_i): its axes as columns in world axes and its origin [m] in world
coordinates. Spatial velocities/accelerations are [angular; linear] in body coordinates with the
linear part at the body origin (RBDA ch. 2); ``omega_world`` etc. give the world-axes versions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .spatial import Array, R_to_quat_many, crm, cross, skew
from .spec.tree import Tree, joint_transforms


@dataclass(frozen=True)
class Kinematics:
    """Poses and motion of every body (row 0 the world).

    R (N+1, 3, 3), p (N+1, 3) [m]; v, a (N+1, 6): spatial velocity [rad/s; m/s] and spatial
    acceleration [rad/s^2; m/s^2] in body coordinates (zeros when qd or qdd was not given;
    gravity not included); Xup (N+1, 6, 6) parent -> body transforms."""

    R: Array
    p: Array
    v: Array
    a: Array
    Xup: Array

    @property
    def omega_world(self) -> Array:
        """(N+1, 3) angular velocity of each body, world axes [rad/s]."""
        return np.einsum("nij,nj->ni", self.R, self.v[:, :3])

    def point_position(self, body: int, r: Array) -> Array:
        """World position [m] of the point r (body coordinates) of a body."""
        return self.p[body] + self.R[body] @ r

    def point_velocity(self, body: int, r: Array) -> Array:
        """World-axes velocity [m/s] of the point r (body coordinates) of a body."""
        w, vo = self.v[body, :3], self.v[body, 3:]
        return self.R[body] @ (vo + cross(w, r))

    def point_acceleration(self, body: int, r: Array) -> Array:
        """World-axes classical acceleration [m/s^2] of the point r (body coordinates):
        a_P = a_o + w' x r + w x (v_o + w x r), with a_o the linear part of the spatial
        acceleration (RBDA Sec. 2.11: classical = spatial + w x v_o)"""
        w, vo = self.v[body, :3], self.v[body, 3:]
        dw, dvo = self.a[body, :3], self.a[body, 3:]
        return self.R[body] @ (dvo + cross(dw, r) + cross(w, vo + cross(w, r)))


def forward_kinematics(tree: Tree, q: Array, qd: Array | None = None, qdd: Array | None = None) -> Kinematics:
    """Body poses, velocities and accelerations by one outward pass (RBDA Table 5.1, no forces)."""
    Xup, (R_rel, p_rel) = joint_transforms(tree, q)
    n = tree.N
    R = np.tile(np.eye(3), (n + 1, 1, 1))
    p = np.zeros((n + 1, 3))
    v = np.zeros((n + 1, 6))
    a = np.zeros((n + 1, 6))
    for i in range(1, n + 1):
        lam = tree.parent[i]
        R[i] = R[lam] @ R_rel[i]
        p[i] = p[lam] + R[lam] @ p_rel[i]
        if qd is not None:
            S = tree.S[i, :, : tree.nv[i]]
            sl = slice(tree.iv[i], tree.iv[i] + tree.nv[i])
            vJ = S @ qd[sl]
            v[i] = Xup[i] @ v[lam] + vJ
            if qdd is not None:
                a[i] = Xup[i] @ a[lam] + S @ qdd[sl] + crm(v[i]) @ vJ
    return Kinematics(R=R, p=p, v=v, a=a, Xup=Xup)


def point_jacobian(tree: Tree, kin: Kinematics, body: int, r: Array) -> Array:
    """J: (6, nv) with [omega; v_P] = J qd, world axes, for the point r (body coordinates) of a
    body: column of joint k's motion S_k mapped to world axes and shifted to P
    (v_P = v_o + omega x (P - o))."""
    J = np.zeros((6, tree.nv_total))
    P = kin.point_position(body, r)
    k = body
    while k > 0:
        S = tree.S[k, :, : tree.nv[k]]
        w = kin.R[k] @ S[:3]
        vo = kin.R[k] @ S[3:]
        sl = slice(tree.iv[k], tree.iv[k] + tree.nv[k])
        J[:3, sl] = w
        J[3:, sl] = vo - skew(P - kin.p[k]) @ w
        k = tree.parent[k]
    return J


class RelativePoses:
    """The pose of every body of ``model`` relative to its parent body, in tree order (ROS's /tf
    transforms, ``mbsfmu.sim.messages``), its index arrays built once: rotation E_i = R_parent^T
    R_i, translation r_i = R_parent^T (p_i - p_parent), each product summed over its three terms
    in index order (j = 0, 1, 2); for a root (parent the world) its world pose itself; quaternions
    by ``R_to_quat_many``. The core's ``mbs_sim_relative_poses`` gives the same bits."""

    def __init__(self, model):
        parent = np.asarray(model.L[1:], dtype=np.intp)
        self.root = np.flatnonzero(parent == 0)
        self.parent = np.where(parent == 0, 1, parent)  # any body for roots: overwritten below
        self.N = len(parent)

    def __call__(self, R: Array, p: Array) -> Array:
        """(N, 7): translation [m] and rotation quaternion (x, y, z, w) of every body relative to
        its parent, from the world poses R (N+1, 3, 3), p (N+1, 3) (entry 0 the world)."""
        Rb, pb = R[1:], p[1:]
        Rp = R[self.parent]
        P = Rp[:, :, :, None] * Rb[:, :, None, :]  # P[n, j, i, k] = Rp[n, j, i] Rb[n, j, k]
        E = P[:, 0] + P[:, 1] + P[:, 2]
        Q = Rp * (pb - p[self.parent])[:, :, None]  # Q[n, j, i] = Rp[n, j, i] (p_i - p_parent)[n, j]
        out = np.empty((self.N, 7))
        out[:, :3] = Q[:, 0] + Q[:, 1] + Q[:, 2]
        E[self.root] = Rb[self.root]
        out[self.root, :3] = pb[self.root]
        quat = R_to_quat_many(E)
        out[:, 3:6] = quat[:, 1:]
        out[:, 6] = quat[:, 0]
        return out
