"""The model compiled once into flat arrays (Pinocchio's Model/Data split).

Index 0 is the world (a ground row, so no algorithm branches on the root); bodies 1..N follow
in topological order. Joint i connects body parent[i] to body i.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .. import joints
from ..spatial import Array, plucker, spatial_inertia
from .description import ModelSpec
from .topology import Topology


@dataclass(frozen=True, eq=False)
class Tree:
    """Flat arrays of a kinematic tree.

    parent (N+1,): L(j); jtype (N+1,): joint type code (joints.FIXED ...);
    axis (N+1, 3): joint axis in the joint frame; R_tree (N+1, 3, 3), p_tree (N+1, 3): joint
    frame in the parent body frame; Xtree (N+1, 6, 6): Plucker transform parent -> joint frame;
    S (N+1, 6, 6): motion subspace, first nv[i] columns used; iq, nq, iv, nv (N+1,): slices of
    q and qd; I (N+1, 6, 6): spatial inertia about the body origin [kg, kg m, kg m^2];
    mass (N+1,), com (N+1, 3), I_c (N+1, 3, 3): mass properties in body axes;
    a_grav (6,): gravity as a spatial acceleration in world axes [m/s^2].
    """

    parent: NDArray[np.int64]
    jtype: NDArray[np.int64]
    axis: Array
    R_tree: Array
    p_tree: Array
    Xtree: Array
    S: Array
    iq: NDArray[np.int64]
    nq: NDArray[np.int64]
    iv: NDArray[np.int64]
    nv: NDArray[np.int64]
    I: Array
    mass: Array
    com: Array
    I_c: Array
    a_grav: Array

    @property
    def N(self) -> int:
        return len(self.parent) - 1

    @property
    def nq_total(self) -> int:
        return int(self.nq.sum())

    @property
    def nv_total(self) -> int:
        return int(self.nv.sum())


def compile_tree(spec: ModelSpec, topo: Topology) -> Tree:
    """Flatten a validated description with its topology into a Tree."""
    n = len(topo.order)
    jtype = np.zeros(n + 1, dtype=np.int64)
    axis = np.zeros((n + 1, 3))
    R_tree = np.tile(np.eye(3), (n + 1, 1, 1))
    p_tree = np.zeros((n + 1, 3))
    Xtree = np.tile(np.eye(6), (n + 1, 1, 1))
    S = np.zeros((n + 1, 6, 6))
    nq = np.zeros(n + 1, dtype=np.int64)
    nv = np.zeros(n + 1, dtype=np.int64)
    I = np.zeros((n + 1, 6, 6))
    mass = np.zeros(n + 1)
    com = np.zeros((n + 1, 3))
    I_c = np.zeros((n + 1, 3, 3))
    for i, k in enumerate(topo.order, start=1):
        b = spec.bodies[k]
        jt = joints.JOINT_TYPES[b.joint.type]
        jtype[i] = jt
        a = np.asarray(b.joint.axis, dtype=float)
        axis[i] = a / np.linalg.norm(a) if jt in (joints.REVOLUTE, joints.PRISMATIC) else a
        R_tree[i] = b.joint.origin.R
        p_tree[i] = b.joint.origin.p
        nq[i], nv[i] = joints.NQ[jt], joints.NV[jt]
        S[i, :, : nv[i]] = joints.motion_subspace(jt, axis[i])
        mass[i] = b.mass
        com[i] = b.com
        I_c[i] = np.asarray(b.inertia, dtype=float)
    Xtree[1:] = plucker(R_tree[1:].swapaxes(-1, -2), p_tree[1:])  # every body at once (RBDA Eq. 2.24)
    I[1:] = spatial_inertia(mass[1:], com[1:], I_c[1:])  # (RBDA Eq. 2.63)
    iq = np.concatenate(([0], np.cumsum(nq)[:-1]))
    iv = np.concatenate(([0], np.cumsum(nv)[:-1]))
    a_grav = np.concatenate((np.zeros(3), np.asarray(spec.gravity, dtype=float)))
    return Tree(
        parent=topo.L.copy(),
        jtype=jtype,
        axis=axis,
        R_tree=R_tree,
        p_tree=p_tree,
        Xtree=Xtree,
        S=S,
        iq=iq,
        nq=nq,
        iv=iv,
        nv=nv,
        I=I,
        mass=mass,
        com=com,
        I_c=I_c,
        a_grav=a_grav,
    )


def joint_transforms(tree: Tree, q: Array) -> tuple[Array, Array]:
    """Xup (N+1, 6, 6): Plucker transforms parent -> body, Xup_i = XJ(q_i) Xtree_i (RBDA Table
    5.1); also (R_rel, p_rel): body i's frame in its parent body frame (rotation, origin [m])."""
    n = tree.N
    Xup = np.tile(np.eye(6), (n + 1, 1, 1))
    R_rel = np.tile(np.eye(3), (n + 1, 1, 1))
    p_rel = np.zeros((n + 1, 3))
    for i in range(1, n + 1):
        RJ, pJ = joints.joint_pose(tree.jtype[i], tree.axis[i], q[tree.iq[i] : tree.iq[i] + tree.nq[i]])
        R_rel[i] = tree.R_tree[i] @ RJ
        p_rel[i] = tree.p_tree[i] + tree.R_tree[i] @ pJ
    Xup[1:] = plucker(R_rel[1:].swapaxes(-1, -2), p_rel[1:])  # every body at once (RBDA Eq. 2.24)
    return Xup, (R_rel, p_rel)
