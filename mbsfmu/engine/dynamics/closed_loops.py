"""Closed kinematic loops: cut-joint constraints Phi(q) = 0, their Jacobian A and bias gamma;
constrained forward dynamics by Lagrange multipliers (No's method, Eq. 24) and by coordinate
partitioning (PyMbs Background); assembly, projection and loop inverse dynamics.

Constraint rows (stacked loop by loop, ``Closure.rows``): Phidot = A qd, and on the constrained
motion Phiddot = A qdd + Adot qd = 0, i.e. A qdd = gamma with gamma = -Adot qd:

- coincidence (3 rows, world axes): Phi = P_a - P_b; A = Jv_a - Jv_b; gamma = -(a0_a - a0_b)
  where a0 is the classical acceleration of the point at qdd = 0 (velocity products only).
- dot (1 row, u fixed in frame a, w in frame b, world axes): Phi = u . w;
  A = (u x w)^T (Jw_a - Jw_b); gamma = -[((w_a x u) x w + u x (w_b x w)) . (w_a - w_b)
  + (u x w) . (alpha0_a - alpha0_b)].
- offset (1 row, t fixed in frame a, d = P_b - P_a): Phi = t . d;
  A = t^T (Jv_b - Jv_a) + (t x d)^T Jw_a; gamma = -[(alpha0_a x t + w_a x (w_a x t)) . d
  + 2 (w_a x t) . (v_b - v_a) + t . (a0_b - a0_a)].

- coupling (1 row, ModelSpec.couplings, URDF mimic): Phi = q_f - a q_l - b; A = e_f - a e_l;
  gamma = 0 (both 1-DoF joints, so qd and q agree); the leader is the declared independent joint.

Cut joints: ball = coincidence; revolute = coincidence + dot(t1_a, n_b), dot(t2_a, n_b) with
t1, t2 perpendicular to ``axis`` n; prismatic = offset(t1_a), offset(t2_a) + dot(x_a, y_b),
dot(y_a, z_b), dot(z_a, x_b) (frames keep a common orientation); planar = offset(n_a) +
dot(t1_a, n_b), dot(t2_a, n_b). A planar mechanism closed by a spatial cut joint gives
redundant rows (a four-bar with a revolute cut joint: 5 rows of rank 2): every solver here works
with rank-deficient A.

Multipliers: No's method, Eq. 24, [[M, A^T], [A, 0]] [qdd; lambda] = [tau - C; gamma_s] with
gamma_s = gamma - 2 alpha Phidot - beta^2 Phi (Baumgarte), solved by the Schur complement
(``kkt_solve``). The generalised constraint force is -A^T lambda (No's method, Eq. 23); for the
coincidence rows lambda is the force [N] that body a exerts on body b at the cut joint, world
axes (-lambda acts on a); dot and offset rows carry a torque [N m] or a force [N].

Partitioning (PyMbs Background): q = (u, v) with v = H(u) solved by Newton on Phi(u, v) = 0,
vdot = B_vu udot, vddot = B_vu uddot + b', B_vu = -Phi_v^+ Phi_u, b' = Phi_v^+ gamma;
J = [I; B_vu] (rows permuted to the joint order), b = [0; b'], and
J^T M J uddot = J^T (tau - C - M b): an ODE in u without multipliers. Loops without declared
independent joints keep multipliers in the reduced coordinates: (A_m J) uddot = gamma_m - A_m b.

Tolerances: position rows are compared absolutely in m (coincidence, offset rows) or as
direction cosines (dot rows), scaled by the model's length scale L = 1 + the largest anchor or
joint offset [m] (``LoopSet.scale``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import InputError
from .. import joints
from ..kinematics import forward_kinematics, point_jacobian
from ..spatial import Array, cross
from ..spec.tree import Tree
from .crba import crba
from .rnea import rnea

RCOND = 1e-10  # singular values of A M^-1 A^T (or Phi_v) below RCOND x the largest are dropped
NEWTON_RTOL = 1e-14  # assembly / projection / v = H(u) target: max |Phi| <= NEWTON_RTOL x L
ACCEPT_RTOL = 1e-10  # ... accepted when Newton stagnates at round-off below ACCEPT_RTOL x L
CONSISTENT_RTOL = 1e-9  # a state violating a loop by more (x L; rates x L max(1, |qd|)) is rejected
MAX_NEWTON = 50
ALPHA, BETA = 10.0, 10.0  # Baumgarte defaults [1/s]: critically damped, time constant 0.1 s
KINDS = ("ball", "revolute", "prismatic", "planar")


class AssemblyError(InputError):
    """Loops that cannot be closed (or rates that cannot be made consistent); ``residuals`` maps
    each offending loop name to its remaining max |Phi| (or |A qd|), ``what`` is "|Phi|" or
    "|A qd|", ``reason`` the likely causes."""

    def __init__(self, what: str, residuals: dict[str, float], reason: str):
        self.what, self.residuals, self.reason = what, residuals, reason
        super().__init__(
            "cannot "
            + ("assemble " if what == "|Phi|" else "make the rates consistent with ")
            + "; ".join(f"loop {n!r} (max {what} = {v:.3g})" for n, v in residuals.items())
            + f": {reason}"
        )


class PartitionError(InputError):
    """The declared independent coordinates do not determine the dependent ones here."""


@dataclass(frozen=True)
class Closure:
    """A compiled cut joint: bodies a, b (tree indices, 0 = world), cut-joint frame origins
    ra, rb [m] and axes Ea, Eb (columns) in body coordinates, unit ``axis`` (frame coordinates)
    with perpendiculars t1, t2; ``rows`` its slice of the stacked constraint rows; ``dofs`` the
    velocity indices of the joints on the loop, ``held`` those of its declared independent joints."""

    name: str
    kind: str
    a: int
    b: int
    ra: Array
    rb: Array
    Ea: Array
    Eb: Array
    axis: Array
    t1: Array
    t2: Array
    rows: slice
    dofs: tuple[int, ...]
    held: tuple[int, ...]
    coupling: tuple[int, int, int, int, float, float] | None = None  # (iq_f, iv_f, iq_l, iv_l, a, b)


@dataclass(frozen=True)
class LoopSet:
    """All cut joints of a model: ``closures``, ``m`` stacked rows, length scale ``scale`` [m]."""

    closures: tuple[Closure, ...]
    m: int
    scale: float

    def __bool__(self) -> bool:
        return bool(self.closures)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.closures)


@dataclass(frozen=True)
class LoopData:
    """Constraint values at (q, qd): Phi (m,) [m or -], A (m, nv), and with rates
    Phidot = A qd (m,) and gamma (m,) with A qdd = gamma on the constrained motion (gamma = -Adot qd)."""

    Phi: Array
    A: Array
    Phidot: Array | None = None
    gamma: Array | None = None


@dataclass(frozen=True)
class Partition:
    """Coordinate partition (PyMbs Background): velocity indices iu (independent, every coordinate not
    solved from a partitioned loop) and iv (dependent); ``rows`` the partitioned loops' rows,
    ``other`` the rows kept with multipliers; ``loops`` the partitioned loops' names; ``dependent``
    the dependent joints' names, ``dof_names`` (nv,) the joint of each rate (for messages)."""

    iu: np.ndarray
    iv: np.ndarray
    rows: np.ndarray
    other: np.ndarray
    loops: tuple[str, ...]
    dependent: tuple[str, ...] = ()
    dof_names: tuple[str, ...] = ()


def compile_loops(model) -> LoopSet:
    """The cut joints of a Model (its spec, body and joint indices) as a LoopSet."""
    from ..spec.loops import loop_joints, resolve_side

    spec, t = model.spec, model.tree
    closures, m = [], 0
    scale = 1.0 + max([float(np.linalg.norm(p)) for p in t.p_tree[1:]] + [0.0])
    for loop in spec.loops:
        ends = []
        for side in (loop.a, loop.b):
            body, origin = resolve_side(spec, side)
            ends.append((0 if body == "world" else model.body_index[body], origin.p, origin.R))
            scale = max(scale, 1.0 + float(np.linalg.norm(origin.p)))
        n = np.asarray(loop.axis, dtype=float)
        n = n / np.linalg.norm(n)
        e = np.eye(3)[int(np.argmin(np.abs(n)))]
        t1 = cross(n, e)
        t1 /= np.linalg.norm(t1)
        t2 = cross(n, t1)
        on_loop = loop_joints(spec, loop)
        dofs = tuple(k for j in on_loop for k in range(*model.v_slice(j).indices(model.nv)))
        held = tuple(k for j in loop.independent for k in range(*model.v_slice(j).indices(model.nv)))
        rows = {"ball": 3, "revolute": 5, "prismatic": 5, "planar": 3}[loop.type]
        closures.append(
            Closure(
                loop.name,
                loop.type,
                ends[0][0],
                ends[1][0],
                ends[0][1],
                ends[1][1],
                ends[0][2],
                ends[1][2],
                n,
                t1,
                t2,
                slice(m, m + rows),
                tuple(sorted(dofs)),
                tuple(sorted(held)),
            )
        )
        m += rows
    from ..spec.couplings import resolved_couplings

    zero, eye = np.zeros(3), np.eye(3)
    for follower, leader, a, b in resolved_couplings(spec):
        f, lead = model.v_slice(follower).start, model.v_slice(leader).start
        qf, ql = model.q_slice(follower).start, model.q_slice(leader).start
        i_f, i_l = model.joint_index[follower], model.joint_index[leader]
        closures.append(
            Closure(
                follower, "coupling", i_f, i_l, zero, zero, eye, eye, zero, zero, zero,
                slice(m, m + 1), (lead, f), (lead,), (qf, f, ql, lead, a, b),
            )
        )  # fmt: skip
        m += 1
    return LoopSet(tuple(closures), m, scale)


# ---- constraint rows ----------------------------------------------------------------------
@dataclass
class _Side:
    """A cut-joint frame in world axes: origin P, axes E, Jacobian rows Jw, Jv (3, nv) of its
    angular velocity and origin velocity; with rates w, v and the qdd = 0 accelerations al, acc."""

    P: Array
    E: Array
    Jw: Array
    Jv: Array
    w: Array | None = None
    v: Array | None = None
    al: Array | None = None
    acc: Array | None = None


def _side(tree: Tree, kin, i: int, r: Array, E: Array, rates: bool) -> _Side:
    J = point_jacobian(tree, kin, i, r)
    s = _Side(P=kin.point_position(i, r), E=kin.R[i] @ E, Jw=J[:3], Jv=J[3:])
    if rates:
        s.w = kin.R[i] @ kin.v[i, :3]
        s.v = kin.point_velocity(i, r)
        s.al = kin.R[i] @ kin.a[i, :3]
        s.acc = kin.point_acceleration(i, r)
    return s


def _coincide(sa: _Side, sb: _Side, rates: bool):
    """Phi = P_a - P_b (3 rows)."""
    if not rates:
        return sa.P - sb.P, sa.Jv - sb.Jv, None, None
    return sa.P - sb.P, sa.Jv - sb.Jv, sa.v - sb.v, -(sa.acc - sb.acc)


def _dot(u: Array, w: Array, sa: _Side, sb: _Side, rates: bool):
    """Phi = u . w, u fixed in frame a, w in frame b (one row)."""
    n = cross(u, w)
    A = n @ (sa.Jw - sb.Jw)
    if not rates:
        return u @ w, A, None, None
    dw = sa.w - sb.w
    ndot = cross(cross(sa.w, u), w) + cross(u, cross(sb.w, w))
    return u @ w, A, n @ dw, -(ndot @ dw + n @ (sa.al - sb.al))


def _offset(t: Array, sa: _Side, sb: _Side, rates: bool):
    """Phi = t . (P_b - P_a), t fixed in frame a (one row)."""
    d = sb.P - sa.P
    txd = cross(t, d)
    A = t @ (sb.Jv - sa.Jv) + txd @ sa.Jw
    if not rates:
        return t @ d, A, None, None
    tdot = cross(sa.w, t)
    tddot0 = cross(sa.al, t) + cross(sa.w, tdot)
    dv = sb.v - sa.v
    return t @ d, A, t @ dv + txd @ sa.w, -(tddot0 @ d + 2.0 * tdot @ dv + t @ (sb.acc - sa.acc))


def row_layout(c: Closure, Ea: Array, Eb: Array) -> list[tuple]:
    """The rows of a cut joint (module docstring), in order: ("coincide",) (3 rows),
    ("dot", u, w) with u fixed in frame a and w in frame b, ("offset", t) with t fixed in frame a;
    Ea, Eb the cut-joint frames' axes in world axes (columns), the vectors in world axes."""
    n_b = Eb @ c.axis
    t1, t2 = Ea @ c.t1, Ea @ c.t2
    if c.kind == "ball":
        return [("coincide",)]
    if c.kind == "revolute":
        return [("coincide",), ("dot", t1, n_b), ("dot", t2, n_b)]
    if c.kind == "prismatic":
        return [
            ("offset", t1),
            ("offset", t2),
            ("dot", Ea[:, 0], Eb[:, 1]),
            ("dot", Ea[:, 1], Eb[:, 2]),
            ("dot", Ea[:, 2], Eb[:, 0]),
        ]
    return [("offset", Ea @ c.axis), ("dot", t1, n_b), ("dot", t2, n_b)]


def _closure_rows(c: Closure, sa: _Side, sb: _Side, rates: bool) -> list:
    rows = []
    for kind, *vectors in row_layout(c, sa.E, sb.E):
        if kind == "coincide":
            rows.append(_coincide(sa, sb, rates))
        elif kind == "dot":
            rows.append(_dot(*vectors, sa, sb, rates))
        else:
            rows.append(_offset(*vectors, sa, sb, rates))
    return rows


def constraints(tree: Tree, loops: LoopSet, q: Array, qd: Array | None = None, kin=None) -> LoopData:
    """Phi(q), A(q) and, given qd, Phidot = A qd and gamma = -Adot qd, from one kinematics pass
    at (q, qd, qdd = 0) (the accelerations it gives are the velocity-product terms)."""
    rates = qd is not None
    if kin is None:
        kin = forward_kinematics(tree, q, qd, np.zeros(tree.nv_total) if rates else None)
    Phi, A = np.zeros(loops.m), np.zeros((loops.m, tree.nv_total))
    Phidot, gamma = (np.zeros(loops.m), np.zeros(loops.m)) if rates else (None, None)
    for c in loops.closures:
        if c.coupling is not None:
            qf, vf, ql, vl, a, b = c.coupling
            k = c.rows.start
            Phi[k] = q[qf] - a * q[ql] - b
            A[k, vf], A[k, vl] = 1.0, -a
            if rates:
                Phidot[k], gamma[k] = qd[vf] - a * qd[vl], 0.0
            continue
        sa = _side(tree, kin, c.a, c.ra, c.Ea, rates)
        sb = _side(tree, kin, c.b, c.rb, c.Eb, rates)
        k = c.rows.start
        for phi, a, phid, gam in _closure_rows(c, sa, sb, rates):
            n = np.size(phi)
            Phi[k : k + n], A[k : k + n] = phi, a
            if rates:
                Phidot[k : k + n], gamma[k : k + n] = phid, gam
            k += n
    return LoopData(Phi, A, Phidot, gamma)


# ---- linear algebra -----------------------------------------------------------------------
def kkt_solve(M: Array, h: Array, A: Array, g: Array, rcond: float = RCOND) -> tuple[Array, Array]:
    """[[M, A^T], [A, 0]] [x; lambda] = [h; g] (No's method, Eq. 24) by the Schur complement:
    M = L L^T (Cholesky), G = A M^-1 A^T, lambda = G^+ (A M^-1 h - g), x = M^-1 (h - A^T lambda).

    G^+ from G's eigendecomposition (its SVD: G is symmetric positive semi-definite), dropping
    eigenvalues below rcond x the largest: redundant rows get the minimum-norm lambda (the
    component in null(A^T), which moves nothing, is zero), and x is unique either way."""
    L = np.linalg.cholesky(M)  # LinAlgError unless M is positive definite
    X = np.linalg.solve(L.T, np.linalg.solve(L, np.column_stack([h, A.T])))
    Mi_h, Mi_AT = X[:, 0], X[:, 1:]
    if A.shape[0] == 0:
        return Mi_h, np.zeros(0)
    G = A @ Mi_AT
    lam = _pinv_sym(0.5 * (G + G.T), rcond) @ (A @ Mi_h - g)
    return Mi_h - Mi_AT @ lam, lam


def _pinv_sym(G: Array, rcond: float) -> Array:
    ev, V = np.linalg.eigh(G)
    keep = ev > rcond * max(ev[-1], 0.0) if ev.size else ev > 0
    if not np.any(keep):
        return np.zeros_like(G)
    Vk = V[:, keep]
    return (Vk / ev[keep]) @ Vk.T


def _lstsq(A: Array, b: Array, rcond: float = RCOND) -> Array:
    """Minimum-norm least-squares solution of A x = b (SVD, relative threshold rcond)."""
    return np.linalg.lstsq(A, b, rcond=rcond)[0]


def integrate(tree: Tree, q: Array, dv: Array) -> Array:
    """q (+) dv on each joint's manifold (see ``joints.integrate``)."""
    out = q.copy()
    for i in range(1, tree.N + 1):
        if tree.nv[i]:
            sq = slice(tree.iq[i], tree.iq[i] + tree.nq[i])
            out[sq] = joints.integrate(int(tree.jtype[i]), q[sq], dv[tree.iv[i] : tree.iv[i] + tree.nv[i]])
    return out


# ---- partitioning (PyMbs Background) --------------------------------------------------------------
def make_partition(loops: LoopSet, nv: int, dof_names: tuple[str, ...] = ()) -> Partition | None:
    """The partition declared by the loops' independent joints: v = the joints of every loop that
    declares independent joints, less all declared ones; u = every other coordinate. None if no
    loop declares any. dof_names (nv,): the joint of each rate, for messages."""
    part = [c for c in loops.closures if c.held]
    if not part:
        return None
    held = {k for c in part for k in c.held}
    iv = sorted({k for c in part for k in c.dofs} - held)
    rows = np.array([k for c in part for k in range(c.rows.start, c.rows.stop)], dtype=np.int64)
    other = np.array(
        [k for c in loops.closures if not c.held for k in range(c.rows.start, c.rows.stop)], dtype=np.int64
    )
    iu = np.array([k for k in range(nv) if k not in set(iv)], dtype=np.int64)
    dependent = tuple(dict.fromkeys(dof_names[k] for k in iv)) if dof_names else ()
    loops_p = tuple(c.name for c in part)
    return Partition(iu, np.array(iv, dtype=np.int64), rows, other, loops_p, dependent, tuple(dof_names))


def reduction(A_p: Array, gamma_p: Array | None, part: Partition, nv: int) -> tuple[Array, Array | None]:
    """J (nv, nu) and b (nv,) with qd = J udot and qdd = J uddot + b on the loops' manifold
    (PyMbs Background): J[iu] = I, J[iv] = B_vu = -Phi_v^+ Phi_u, b[iv] = b' = Phi_v^+ gamma.
    PartitionError when Phi_v is rank deficient (v not determined by u) or A_p J != 0 (u not
    independent)."""
    Phi_u, Phi_v = A_p[:, part.iu], A_p[:, part.iv]
    U, s, Vt = np.linalg.svd(Phi_v, full_matrices=False)
    if part.iv.size and (s.size < part.iv.size or s[-1] <= RCOND * s[0]):
        joints_v = f" (joints {', '.join(part.dependent)})" if part.dependent else ""
        raise PartitionError(
            f"loop(s) {', '.join(part.loops)}: the {part.iv.size} dependent rates{joints_v} are not "
            "determined by the independent ones here: Phi_v has rank "
            f"{int(np.sum(s > RCOND * (s[0] if s.size else 1.0)))} < {part.iv.size} (a singular "
            "configuration of the partition, or too few independent joints declared)"
        )
    Pv = (Vt.T / s) @ U.T if part.iv.size else np.zeros((0, A_p.shape[0]))
    J = np.zeros((nv, part.iu.size))
    J[part.iu, np.arange(part.iu.size)] = 1.0
    J[part.iv] = -Pv @ Phi_u
    scale = max(np.abs(A_p).max(initial=0.0), 1.0)
    if np.abs(A_p @ J).max(initial=0.0) > 1e-8 * scale:
        raise PartitionError(
            f"loop(s) {', '.join(part.loops)}: the declared independent joints are not independent "
            "(the loop constrains them among themselves): declare fewer"
        )
    if gamma_p is None:
        return J, None
    b = np.zeros(nv)
    b[part.iv] = Pv @ gamma_p
    return J, b


def newton_dependent(
    tree: Tree, loops: LoopSet, part: Partition, q: Array, max_iter: int = MAX_NEWTON
) -> tuple[Array, Array, float, bool]:
    """Newton on Phi_p(u, v) = 0 for v from the v in q, u held (PyMbs Background): the one Newton
    iteration for the dependent coordinates (``solve_dependent``, ``branches.follow_branch``).
    Returns (q, A, max |Phi_p|, converged) with A the constraint Jacobian at the returned q."""
    tol, best, r = NEWTON_RTOL * loops.scale, np.inf, np.inf
    for _ in range(max_iter):
        ld = constraints(tree, loops, q)
        Phi, A_p = ld.Phi[part.rows], ld.A[part.rows]
        r = float(np.abs(Phi).max(initial=0.0))
        if r <= tol or (r <= ACCEPT_RTOL * loops.scale and r >= 0.5 * best):
            return q, ld.A, r, True
        if not np.isfinite(r):
            break
        best = min(best, r)
        dv = np.zeros(tree.nv_total)
        dv[part.iv] = -_lstsq(A_p[:, part.iv], Phi)
        q = integrate(tree, q, dv)
    return q, None, r, False


def solve_dependent(tree: Tree, loops: LoopSet, part: Partition, q: Array) -> tuple[Array, Array]:
    """v = H(u) by Newton on Phi_p(u, v) = 0 from the v in q (PyMbs Background); returns (q, A) with A
    the constraint Jacobian at the solution. PartitionError if it does not converge. Newton goes to
    the solution its iteration reaches from the given v, on whichever assembly branch that is: to
    stay on a branch, move along it (``branches.follow_branch``)."""
    q, A, r, ok = newton_dependent(tree, loops, part, q)
    if ok:
        return q, A
    raise PartitionError(
        f"loop(s) {', '.join(part.loops)}: the dependent coordinates could not be solved from the "
        f"independent ones (max |Phi| = {r:.3g} after {MAX_NEWTON} Newton steps): the mechanism "
        "cannot close at these independent coordinates"
    )


def consistent_state(tree: Tree, loops: LoopSet, part: Partition, q: Array, qd: Array) -> tuple[Array, Array, Array]:
    """(q, qd, J): v = H(u), vdot = B_vu udot from the independent part of (q, qd)."""
    q, A = solve_dependent(tree, loops, part, q)
    J, _ = reduction(A[part.rows], None, part, tree.nv_total)
    return q, J @ qd[part.iu], J


# ---- dynamics -----------------------------------------------------------------------------
def loop_forward_dynamics(
    tree: Tree,
    loops: LoopSet,
    q: Array,
    qd: Array,
    tau: Array,
    f_ext: Array | None = None,
    part: Partition | None = None,
    alpha: float = 0.0,
    beta: float = 0.0,
) -> tuple[Array, Array, LoopData]:
    """(qdd (nv,), lambda (m,), LoopData) under joint forces tau (nv,) [N m or N, springs and
    dampers included], gravity and f_ext (N+1, 6).

    part None: multipliers, No's method, Eq. 24 with Baumgarte's gamma - 2 alpha Phidot - beta^2 Phi
    (alpha, beta [1/s]). With a partition, (q, qd) must satisfy the partitioned loops; the
    reduced ODE J^T M J uddot = J^T (tau - C - M b) (PyMbs Background, Eq. 11), with the remaining loops'
    multipliers (Baumgarte applied to those) in the reduced coordinates. lambda is always the
    minimum-norm solution of A^T lambda = tau - C - M qdd."""
    ld = constraints(tree, loops, q, qd)
    M = crba(tree, q)
    h = tau - rnea(tree, q, qd, np.zeros(tree.nv_total), f_ext)
    g = ld.gamma - 2.0 * alpha * ld.Phidot - beta * beta * ld.Phi
    if part is None:
        qdd, lam = kkt_solve(M, h, ld.A, g)
        return qdd, lam, ld
    J, b = reduction(ld.A[part.rows], ld.gamma[part.rows], part, tree.nv_total)
    A_m = ld.A[part.other]
    udd, _ = kkt_solve(J.T @ M @ J, J.T @ (h - M @ b), A_m @ J, g[part.other] - A_m @ b)
    qdd = J @ udd + b
    lam = _lstsq(ld.A.T, h - M @ qdd)
    return qdd, lam, ld


def loop_inverse_dynamics(
    tree: Tree, loops: LoopSet, part: Partition, q: Array, qd: Array, udd: Array, f_ext: Array | None = None
) -> Array:
    """tau_u (nu,): forces on the independent coordinates that give them the accelerations udd,
    with every loop partitioned: tau_u = J^T RNEA(q, qd, J udd + b) (the tree's inverse dynamics
    projected through J; the constraint forces drop out, J^T A^T = 0). (q, qd) must be consistent."""
    ld = constraints(tree, loops, q, qd)
    J, b = reduction(ld.A[part.rows], ld.gamma[part.rows], part, tree.nv_total)
    return J.T @ rnea(tree, q, qd, J @ udd + b, f_ext)


# ---- assembly and projection --------------------------------------------------------------
def assemble(tree: Tree, loops: LoopSet, q: Array, qd: Array | None = None) -> tuple[Array, Array | None]:
    """Consistent (q, qd) near the given ones: the declared independent joints (and every joint
    off the loops) keep their values; the other loop joints are found by Gauss-Newton with
    minimum-norm least-squares steps (halved while the residual grows), then their rates by the
    minimum-norm correction that gives A qd = 0. AssemblyError names the loops left open."""
    nv = tree.nv_total
    held = {k for c in loops.closures for k in c.held}
    free = np.array(sorted({k for c in loops.closures for k in c.dofs} - held), dtype=np.int64)
    tol = NEWTON_RTOL * loops.scale
    ld = constraints(tree, loops, q)
    r = np.linalg.norm(ld.Phi)
    for _ in range(MAX_NEWTON):
        if np.abs(ld.Phi).max(initial=0.0) <= tol or free.size == 0:
            break
        dv = np.zeros(nv)
        dv[free] = -_lstsq(ld.A[:, free], ld.Phi)
        for _halving in range(30):
            q_new = integrate(tree, q, dv)
            ld_new = constraints(tree, loops, q_new)
            r_new = np.linalg.norm(ld_new.Phi)
            if r_new < r or not np.isfinite(r_new):
                break
            dv *= 0.5
        if not r_new < r:  # no descent: stagnated (at round-off, or at a local minimum)
            break
        q, ld, r = q_new, ld_new, r_new
    bad = _open_loops(loops, ld.Phi, CONSISTENT_RTOL * loops.scale)
    if bad:
        raise AssemblyError(
            "|Phi|",
            bad,
            "moving the loop joints that are not declared independent "
            f"({'the declared ones held' if held else 'none declared'}) does not close it: the links "
            "cannot close (lengths, anchors, or the independent joints' initial values), or the loops "
            "over-constrain the mechanism",
        )
    if qd is None:
        return q, None
    A = ld.A
    qd = qd.copy()
    if free.size:
        qd[free] -= _lstsq(A[:, free], A @ qd)
    bad = _open_loops(loops, A @ qd, CONSISTENT_RTOL * loops.scale * max(1.0, np.abs(qd).max(initial=0.0)))
    if bad:
        raise AssemblyError("|A qd|", bad, "the rates of the independent joints over-determine the loop")
    return q, qd


def check_consistent(tree: Tree, loops: LoopSet, q: Array, qd: Array) -> None:
    """InputError naming each loop that (q, qd) violates beyond CONSISTENT_RTOL (x L; rates x L
    max(1, |qd|))."""
    ld = constraints(tree, loops, q)
    tol = CONSISTENT_RTOL * loops.scale
    bad = _open_loops(loops, ld.Phi, tol)
    bad_v = _open_loops(loops, ld.A @ qd, tol * max(1.0, np.abs(qd).max(initial=0.0)))
    if bad or bad_v:
        parts = [f"loop {n!r}: max |Phi| = {v:.3g} (position)" for n, v in bad.items()]
        parts += [f"loop {n!r}: max |A qd| = {v:.3g} (velocity)" for n, v in bad_v.items()]
        raise InputError(
            "the state violates " + "; ".join(parts) + f" (tolerance {tol:.3g}): give consistent values "
            "or let the simulator assemble them (assemble=True)"
        )


def _open_loops(loops: LoopSet, res: Array, tol: float) -> dict[str, float]:
    out = {}
    for c in loops.closures:
        v = float(np.abs(res[c.rows]).max(initial=0.0))
        if not v <= tol:
            out[c.name] = v
    return out


def project(tree: Tree, loops: LoopSet, q: Array, qd: Array, part: Partition | None = None) -> tuple[Array, Array]:
    """Projection after a step: Gauss-Newton on Phi(q) = 0 with M-weighted minimum-norm steps
    dq = -M^-1 A^T (A M^-1 A^T)^+ Phi, then qd onto A qd = 0 by the M-orthogonal projection
    qd - M^-1 A^T (A M^-1 A^T)^+ A qd (the smallest change of kinetic energy). With a partition,
    v = H(u) and vdot = B_vu udot first, and the remaining loops are projected in u with the
    reduced metric J^T M J."""
    nv = tree.nv_total
    rows = np.arange(loops.m) if part is None else part.other
    tol = NEWTON_RTOL * loops.scale
    J = None
    if part is not None:
        q, qd, J = consistent_state(tree, loops, part, q, qd)
    if rows.size == 0:
        return q, qd
    M = crba(tree, q)
    W = M if J is None else J.T @ M @ J
    best = np.inf
    for _ in range(MAX_NEWTON):
        ld = constraints(tree, loops, q)
        Phi = ld.Phi[rows]
        r = np.abs(Phi).max(initial=0.0)
        if r <= tol or r >= 0.5 * best:
            break
        best = r
        A = ld.A[rows] if J is None else ld.A[rows] @ J
        du, _ = kkt_solve(W, np.zeros(W.shape[0]), A, -Phi)
        q = integrate(tree, q, du if J is None else J @ du)
        if part is not None:
            q, _A = solve_dependent(tree, loops, part, q)
            J, _ = reduction(_A[part.rows], None, part, nv)
    ld = constraints(tree, loops, q)
    if J is None:
        dqd, _ = kkt_solve(M, np.zeros(nv), ld.A, -(ld.A @ qd))
        return q, qd + dqd
    ud = qd[part.iu]
    A = ld.A[rows] @ J
    dud, _ = kkt_solve(J.T @ crba(tree, q) @ J, np.zeros(J.shape[1]), A, -(A @ ud))
    return q, J @ (ud + dud)
