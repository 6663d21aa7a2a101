"""Analytic derivatives of the partitioned (minimal-coordinate) forward dynamics of closed loops.

The reduced equations (PyMbs Background, Eq. 11; closed_loops.py): q = (u, v) on the loops'
manifold Phi(q) = 0, qd = J ud, qdd = J udd + b, and

    J^T (tau - ID(q, qd, qdd)) = 0,                        (1)

ID the tree's inverse dynamics (RNEA, joint springs and dampers included), r = tau - ID the
constraint force A_p^T lambda. Their state is (u, ud); the accelerations qdd (nv,) are a function
of it. A variation (dq, dqd) of the state along the manifold (dq = J du tangent coordinates,
dqd = dJ ud + J dud) with the inputs held changes (1) by

    dJ^T r - J^T (dID/dq dq + dID/dqd dqd + M dqdd) = 0,    (2)

and the acceleration-level constraint c(q, qd, qdd) = A qdd + Adot qd = Phiddot = 0 by
A dqdd + dc = 0, dc its variation at fixed qdd. With A J = 0 and J[iu] = I this gives
dqdd = J dudd + e, e[iu] = 0, e[iv] = -Phi_v^+ dc (Phi_v of full column rank: the partition's
condition, ``reduction``), and from (2)

    (J^T M J) dudd = dJ^T r - J^T (dID/dq dq + dID/dqd dqd + M e).     (3)

dJ follows from A J = 0: dJ[iv] = -Phi_v^+ (dA J) (consistent since the rows of dA J lie in
range(Phi_v) on the manifold, also with redundant rows), so dJ^T r = -(dA J)^T lambda_v with
lambda_v = Phi_v^+T r[iv]; and dqd = dJ ud for du (dud = 0), J dud for dud (du = 0). dID/dq,
dID/dqd and M come from Carpentier & Mansard's RNEA derivatives (RSS 2018; the C core,
derivatives.c), taken at the full state (q, qd, qdd). For joint couplings (URDF mimic) A is constant
and c = qdd_f - a qdd_l: dA = 0, dc = 0 and (3) is dudd = -(J^T M J)^-1 J^T (dID/dq dq + dID/dqd dqd).

The constraint variations dA y and dc come from world-axes motion algebra (Carpentier & Mansard's
world-axes derivatives, as in derivatives.c; RBDA Eq. 2.31 for x): every joint subspace is fixed
in its child body (joints.py), and a tangent variation dq moves body i by the world twist
W_i = W_parent + S_i dq_i per unit dq, so d S_i = W_i x S_i (a motion vector fixed in a body moving
with twist W changes at W x S). The world-axes velocity and spatial acceleration of body i,
V_i = V_parent + S_i qd_i and A_i = A_parent + S_i qdd_i + V_i x S_i qd_i (RBDA Table 5.1 in world
axes, as derivatives.c), then vary as

    dV_i = dV_parent + (W_i x S_i qd_i) + S_i dqd_i
    dA_i = dA_parent + W_i x S_i qdd_i + dV_i x S_i qd_i + V_i x (W_i x S_i qd_i + S_i dqd_i),

and a point P of a body and a vector u fixed in it by dP = W_lin + W_ang x P, du = W_ang x u;
point velocity v_P = V_lin + w x P, classical acceleration a_P = A_lin + wdot x P + w x v_P
(RBDA Sec. 2.11), u' = w x u, u'' = wdot x u + w x u'. The rows (closed_loops.py) are
P_a - P_b, u . w and t . (P_b - P_a); their first and second time derivatives (the product rule)
are A qd and c, varied by the product rule again.
"""

from __future__ import annotations

import numpy as np

from ..kinematics import forward_kinematics
from ..spatial import Array
from ..spec.tree import Tree
from .closed_loops import RCOND, LoopSet, Partition, constraints, reduction, row_layout


def _cross(a: Array, b: Array) -> Array:
    """a x b of 3-vectors along the last axis, broadcast ((K, 3) with (3,) or (K, 3)); np.cross's
    axis handling took 40% of a four-bar's Jacobians (4.5 ms -> 2.7 ms CPU without it)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack((a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0), axis=-1)


def motion_cross(a: Array, b: Array) -> Array:
    """a x b of spatial motion vectors [angular; linear] (RBDA Eq. 2.31), row-wise on (K, 6)."""
    w = _cross(a[..., :3], b[..., :3])
    v = _cross(a[..., :3], b[..., 3:]) + _cross(a[..., 3:], b[..., :3])
    return np.concatenate((w, v), axis=-1)


def world_subspaces(tree: Tree, kin) -> list[Array]:
    """S_i (6, nv_i) of every joint in world axes at the world origin: angular R_i s, linear
    R_i s_o + p_i x R_i s (the velocity of the body point at the world origin)."""
    out = [np.zeros((6, 0))]
    for i in range(1, tree.N + 1):
        S = tree.S[i, :, : tree.nv[i]]
        w = kin.R[i] @ S[:3]
        out.append(np.vstack((w, kin.R[i] @ S[3:] + _cross(kin.p[i], w.T).T)))
    return out


def constraint_variations(
    tree: Tree, loops: LoopSet, q: Array, qd: Array, qdd: Array | None, dq: Array, dqd: Array
) -> tuple[Array, Array | None]:
    """(ds, dc), each (K, m): the first-order variations of the loops' velocity level s = A(q) qd
    and acceleration level c = A(q) qdd + Adot(q, qd) qd (m rows, ``constraints``' order) when q
    moves to q (+) eps dq[k] (tangent coordinates, mbsfmu/linear/tangent.py) and qd to qd + eps dqd[k],
    qdd held (module docstring). qd, qdd, dq, dqd: (K, nv), one case per row [rad/s, m/s, ...];
    qdd None: ds only. Exact (no differences)."""
    K, acc = dq.shape[0], qdd is not None
    kin = forward_kinematics(tree, q)
    Sw = world_subspaces(tree, kin)
    V, W, dV = (np.zeros((tree.N + 1, K, 6)) for _ in range(3))
    A, dA = (np.zeros((tree.N + 1, K, 6)) for _ in range(2)) if acc else (None, None)
    ends = {i for c in loops.closures if c.coupling is None for i in (c.a, c.b)}
    needed = set()
    for i in ends:
        while i > 0 and i not in needed:
            needed.add(i)
            i = int(tree.parent[i])
    for i in sorted(needed):  # parents first
        lam, sl = int(tree.parent[i]), slice(int(tree.iv[i]), int(tree.iv[i] + tree.nv[i]))
        Sq, Sy = qd[:, sl] @ Sw[i].T, dqd[:, sl] @ Sw[i].T  # S_i qd_i, S_i dqd_i
        V[i] = V[lam] + Sq
        W[i] = W[lam] + dq[:, sl] @ Sw[i].T
        dSq = motion_cross(W[i], Sq)  # (d S_i) qd_i
        dV[i] = dV[lam] + dSq + Sy
        if acc:
            Sa = qdd[:, sl] @ Sw[i].T
            A[i] = A[lam] + Sa + motion_cross(V[i], Sq)
            dA[i] = dA[lam] + motion_cross(W[i], Sa) + motion_cross(dV[i], Sq) + motion_cross(V[i], dSq + Sy)
    ds = np.zeros((K, loops.m))
    dc = np.zeros((K, loops.m)) if acc else None
    for c in loops.closures:
        k = c.rows.start
        if c.coupling is not None:  # Phi = q_f - a q_l - b: A constant, c = qdd_f - a qdd_l
            _qf, vf, _ql, vl, a, _b = c.coupling
            ds[:, k] = dqd[:, vf] - a * dqd[:, vl]
            continue
        sa = _Side(kin, c.a, c.ra, V, W, dV, A, dA)
        sb = _Side(kin, c.b, c.rb, V, W, dV, A, dA)
        for kind, *vectors in row_layout(c, kin.R[c.a] @ c.Ea, kin.R[c.b] @ c.Eb):
            if kind == "coincide":
                s_, c_ = _difference(sa.point(), sb.point())
                n = 3
            elif kind == "dot":
                s_, c_ = _dot(sa.vector(vectors[0]), sb.vector(vectors[1]))
                n = 1
            else:
                s_, c_ = _dot(sa.vector(vectors[0]), _minus(sb.point(), sa.point()))
                n = 1
            ds[:, k : k + n] = s_.reshape(K, n)
            if acc:
                dc[:, k : k + n] = c_.reshape(K, n)
            k += n
    return ds, dc


class _Side:
    """A cut-joint frame on body i: jets (x, x', x'') of its points and fixed vectors and their
    variations (dx, dx', dx''), each (K, 3) world axes (module docstring)."""

    def __init__(self, kin, i, r, V, W, dV, A, dA):
        self.P = kin.point_position(i, r)
        self.w, self.dw, self.Wa = V[i, :, :3], dV[i, :, :3], W[i, :, :3]
        self.vo, self.dvo, self.Wv = V[i, :, 3:], dV[i, :, 3:], W[i, :, 3:]
        self.acc = A is not None
        if self.acc:
            self.al, self.dal = A[i, :, :3], dA[i, :, :3]
            self.ao, self.dao = A[i, :, 3:], dA[i, :, 3:]

    def point(self):
        """(P, v_P, a_P), (dP, dv_P, da_P)."""
        P, w, dw = self.P, self.w, self.dw
        v = self.vo + _cross(w, P)
        dP = self.Wv + _cross(self.Wa, P)
        dv = self.dvo + _cross(dw, P) + _cross(w, dP)
        if not self.acc:
            return (P, v, None), (dP, dv, None)
        a = self.ao + _cross(self.al, P) + _cross(w, v)
        da = self.dao + _cross(self.dal, P) + _cross(self.al, dP) + _cross(dw, v) + _cross(w, dv)
        return (P, v, a), (dP, dv, da)

    def vector(self, u):
        """(u, u', u''), (du, du', du'') of a vector u (3,) fixed in the body."""
        w, dw = self.w, self.dw
        u1 = _cross(w, u)
        du = _cross(self.Wa, u)
        du1 = _cross(dw, u) + _cross(w, du)
        if not self.acc:
            return (u, u1, None), (du, du1, None)
        u2 = _cross(self.al, u) + _cross(w, u1)
        du2 = _cross(self.dal, u) + _cross(self.al, du) + _cross(dw, u1) + _cross(w, du1)
        return (u, u1, u2), (du, du1, du2)


def _minus(x, z):
    """The jet and variation of x - z."""
    (x0, x1, x2), (dx0, dx1, dx2) = x
    (z0, z1, z2), (dz0, dz1, dz2) = z
    sub = lambda a, b: None if a is None else a - b  # noqa: E731
    return (x0 - z0, x1 - z1, sub(x2, z2)), (dx0 - dz0, dx1 - dz1, sub(dx2, dz2))


def _difference(x, z):
    """Variations of s = x' - z' and c = x'' - z'' (coincidence rows)."""
    _jet, (_d0, d1, d2) = _minus(x, z)
    return d1, d2


def _dot(x, z):
    """Variations of s = (x . z)' = x' . z + x . z' and c = (x . z)'' = x'' . z + 2 x' . z' + x . z''
    (dot and offset rows), by the product rule."""
    (x0, x1, x2), (dx0, dx1, dx2) = x
    (z0, z1, z2), (dz0, dz1, dz2) = z

    def dot(a, b):
        return np.sum(a * b, axis=-1)

    ds = dot(dx1, z0) + dot(x1, dz0) + dot(dx0, z1) + dot(x0, dz1)
    if x2 is None:
        return ds, None
    dc = dot(dx2, z0) + dot(x2, dz0) + 2.0 * (dot(dx1, z1) + dot(x1, dz1)) + dot(dx0, z2) + dot(x0, dz2)
    return ds, dc


def partitioned_derivatives(
    tree: Tree,
    loops: LoopSet,
    part: Partition,
    q: Array,
    qd: Array,
    tau: Array,
    inverse_dynamics,
    rnea_derivatives,
    mass_matrix,
    forces: tuple[Array, Array, Array] | None = None,
) -> tuple[Array, Array, Array, Array]:
    """(qdd (nv,), dqdd_du (nv, n), dqdd_dud (nv, n), dqdd_dtau (nv, nv)) of the partitioned
    forward dynamics (1) at a consistent state (q, qd), every loop partitioned (part.other empty):
    columns the independent coordinates part.iu (tangent coordinates du [rad, m] and rates ud),
    rows all nv accelerations [rad/s^2, m/s^2]; dqdd_dtau = J (J^T M J)^-1 J^T. tau (nv,)
    actuator forces [N m, N]; ``inverse_dynamics(q, qd, qdd)`` and ``rnea_derivatives(q, qd,
    qdd)`` -> (dID/dq, dID/dqd, M): the tree's (the C core's), springs and dampers included;
    ``mass_matrix(q)`` -> M (CRBA: M before qdd is known, without a derivative pass for it).
    ``forces``: (Q (nv,), dQ/dq, dQ/dqd (nv, nv), tangent columns) of the force elements beyond
    the joints (point spring-dampers, thrusters, body wrenches: ``Core.force_derivatives``) at
    (q, qd): (1) becomes J^T (tau + Q - ID) = 0, so Q adds to tau and dQ/dq, dQ/dqd subtract from
    dID/dq, dID/dqd in (2)-(3) (Q depends on the state, not on qdd)."""
    nv, iu, iv, rows = tree.nv_total, part.iu, part.iv, part.rows
    n = iu.size
    ld = constraints(tree, loops, q, qd)
    J, b = reduction(ld.A[rows], ld.gamma[rows], part, nv)
    Pv = np.linalg.pinv(ld.A[np.ix_(rows, iv)], rcond=RCOND)  # Phi_v^+ (full column rank)
    if forces is not None:
        tau = tau + forces[0]
    ID_b = inverse_dynamics(q, qd, b)
    M = mass_matrix(q)
    Mr = J.T @ M @ J
    udd = np.linalg.solve(Mr, J.T @ (tau - ID_b))
    qdd = J @ udd + b
    dID_dq, dID_dqd, _ = rnea_derivatives(q, qd, qdd)
    if forces is not None:  # the residual of (1) is ID - Q: differentiate both
        dID_dq, dID_dqd = dID_dq - forces[1], dID_dqd - forces[2]
    r = tau - (ID_b + M @ (qdd - b))  # the constraint force A_p^T lambda (ID is affine in qdd)
    ud, Jt = qd[iu], J.T.copy()
    # dA J: H[k, l] = d(A J e_l) along J e_k (velocity level, rates J e_l held)
    if any(c.coupling is None for c in loops.closures):
        pairs = np.repeat(Jt, n, axis=0), np.tile(Jt, (n, 1))
        H = constraint_variations(tree, loops, q, pairs[1], None, pairs[0], np.zeros((n * n, nv)))[0]
        H = H[:, rows].reshape(n, n, rows.size)
    else:
        H = np.zeros((n, n, rows.size))
    dJr = -H @ (Pv.T @ r[iv])  # (n, n): [k] = dJ_k^T r
    dqd_u = np.zeros((n, nv))
    dqd_u[:, iv] = -np.einsum("klr,l->kr", H, ud) @ Pv.T  # dJ_k ud
    # the acceleration-level variations: n position directions (with dJ_k ud), n rate directions
    dq = np.vstack((Jt, np.zeros((n, nv))))
    dqd = np.vstack((dqd_u, Jt))
    dc = constraint_variations(tree, loops, q, np.tile(qd, (2 * n, 1)), np.tile(qdd, (2 * n, 1)), dq, dqd)[1]
    E = np.zeros((2 * n, nv))
    E[:, iv] = -dc[:, rows] @ Pv.T
    rhs = -J.T @ (dID_dq @ dq.T + dID_dqd @ dqd.T + M @ E.T)
    rhs[:, :n] += dJr.T
    dqdd = J @ np.linalg.solve(Mr, rhs) + E.T
    return qdd, dqdd[:, :n], dqdd[:, n:], J @ np.linalg.solve(Mr, J.T)


__all__ = ["constraint_variations", "motion_cross", "partitioned_derivatives", "world_subspaces"]
