"""M_red qdd + h_red = f_red of PyMbs (seed 004_0c0a19c83fa138a1.txt, "Explicit Scheme", Eq. 2-9) in
SymPy, generated the way the seed's "Recursive Scheme" does it: each body's quantities are new symbols
defined in terms of its parent's (``Assignments``, PyMbs' intermediate "sym" variables), so no
expression is ever expanded and the statements grow with the bodies, not tenfold per joint in series.

Eq. 8 reduces the body equations (Eq. 2, about the CoM: m a_c = f_e, I wdot + w x I w = m_e) by the
Jacobian J of every body's velocities: M_red = J^T M J, h_red = J^T (M Jdot qd + h), f_red = J^T f.
Summed body by body over each joint's subtree, with spatial vectors in the inertial frame at the world
origin (Featherstone, RBDA Sec. 2.7; the seed's backward loop F^M, L^M, F^C, L^C), this is

    M_red[k, l] = S_k^T Ic_j S_l       (CRBA, RBDA Sec. 6.2; Ic_j the subtree's spatial inertia),
    h_red[k]    = S_k^T sum_i (I_i A_i + V_i x* I_i V_i)   (RNEA at qdd = 0, RBDA Table 5.1),
    f_red[k]    = S_k^T sum_i (F_grav,i + F_ext,i) + tau(u) - k (q - q0) - d qd,

with S_k the joint rate k's column (a rate of joint j, l one of j's or inboard of it), V_i, A_i body
i's spatial velocity and bias acceleration (qdd = 0) from the forward loop (``recursive_kinematics``),
and the force elements (thrusters, body wrenches, point spring-dampers; mbsfmu/engine/forces.py) as
spatial forces at the world origin. Closed loops add the cut-joint constraints Phi(q) = 0 of
mbsfmu/engine/dynamics/closed_loops.py with A = d Phidot / d qd and gamma = -d(A qd)/dq . qdot
(PyMbs Background, Eq. 10), from the expanded kinematics of ``motions`` (differentiated in q).

Parameters: every non-zero mass, CoM coordinate, inertia entry, joint offset, gravity component
and joint spring constant is a symbol (named after its body or joint, values in ``params``); a zero
stays 0, so the structure of the model shows in the expressions. Joint axes and the rotations of
the joint frames are numbers (exact 0 and +-1 kept as integers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from ..engine import joints
from ..engine.forces import ForceElements
from ..engine.spec.description import BodyWrench, SpringDamper, Thruster
from .limits import MAX_NV, MAX_SERIES


class SymbolicLimitError(ValueError):
    """A model beyond what the explicit scheme derives in reasonable time."""


@dataclass(frozen=True)
class Equations:
    """M_red(q) qdd + h_red(q, qd) = f_red(q, qd, u) (seed 004 Eq. 9) and the loop constraints.

    q (nq,), qd (nv,), u (nu,): the symbols of the coordinates, rates and inputs, in the model's
    order (``q_names`` ...); M (nv, nv), h (nv, 1), f (nv, 1) SymPy matrices in the intermediate
    variables ``assignments`` ((symbol, expression) in the order they are defined, each in q, qd, u,
    the parameters and earlier symbols); with loops, Phi (m, 1), A (m, nv) = dPhidot/dqd and gamma
    (m, 1) = -Adot qd in q, qd and the parameters, else None; params: {symbol: value}."""

    name: str
    q: tuple
    qd: tuple
    u: tuple
    M: sp.Matrix
    h: sp.Matrix
    f: sp.Matrix
    Phi: sp.Matrix | None
    A: sp.Matrix | None
    gamma: sp.Matrix | None
    params: dict = field(default_factory=dict)
    q_names: tuple = ()
    qd_names: tuple = ()
    u_names: tuple = ()
    assignments: tuple = ()

    def expanded(self) -> tuple[sp.Matrix, sp.Matrix, sp.Matrix]:
        """(M, h, f) with every intermediate variable replaced by its expression: in q, qd, u and the
        parameters only. The expansion the scheme avoids: its size grows about tenfold per joint in
        series, so this is for small models (closed-form checks, exact derivatives)."""
        full: dict = {}
        for s, e in self.assignments:
            full[s] = e.xreplace(full)
        return tuple(x.xreplace(full) for x in (self.M, self.h, self.f))

    @property
    def nv(self) -> int:
        return len(self.qd)


class Parameters:
    """Symbols for the model's non-zero parameters, each named once (C identifiers)."""

    def __init__(self):
        self.values: dict = {}
        self._taken: set = set()

    def symbol(self, name: str, value: float):
        """0 for a zero value, else a new real symbol standing for ``value``."""
        value = float(value)
        if value == 0.0:
            return sp.Integer(0)
        base = re.sub(r"\W", "_", name)
        base = base if base and not base[0].isdigit() else f"p_{base}"
        sym_name, k = base, 2
        while sym_name in self._taken:
            sym_name, k = f"{base}_{k}", k + 1
        self._taken.add(sym_name)
        s = sp.Symbol(sym_name, real=True)
        self.values[s] = value
        return s

    def vector(self, name: str, values) -> sp.Matrix:
        return sp.Matrix([self.symbol(f"{name}_{c}", v) for c, v in zip("xyz", values)])


def number(x: float):
    """A structural number: exact integers for 0 and +-1, else the float (exact binary value)."""
    x = float(x)
    if x in (0.0, 1.0, -1.0):
        return sp.Integer(int(x))
    return sp.Float(x, 17)


def numbers(a) -> sp.Matrix:
    return sp.Matrix(np.asarray(a, dtype=float).tolist()).applyfunc(number)


def _skew(a: sp.Matrix) -> sp.Matrix:
    return sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])


def _rot_axis(a: sp.Matrix, angle) -> sp.Matrix:
    """Rodrigues, as the engine's spatial.rot_axis: I + sin K + (1 - cos) K^2."""
    K = _skew(a)
    return sp.eye(3) + sp.sin(angle) * K + (1 - sp.cos(angle)) * K * K


def _quat_to_R(w, x, y, z, s=None) -> sp.Matrix:
    """The rotation of the quaternion (w, x, y, z) of any nonzero norm, I + s (w [v]x + [v]x^2) with
    s = 2 / |q|^2 (the rotation of q / |q|), as the engine's spatial.quat_to_R; s: a symbol standing
    for 2 / |q|^2, or None for the expression."""
    if s is None:
        s = 2 / (w * w + x * x + y * y + z * z)
    return sp.Matrix(
        [
            [1 - s * (y * y + z * z), s * (x * y - w * z), s * (x * z + w * y)],
            [s * (x * y + w * z), 1 - s * (x * x + z * z), s * (y * z - w * x)],
            [s * (x * z - w * y), s * (y * z + w * x), 1 - s * (x * x + y * y)],
        ]
    )


def _quat_rate(qv, w) -> list:
    """1/2 q (x) (0, w), w in body axes (the engine's spatial.quat_rate)."""
    a, b, c, d = qv
    x, y, z = w
    return [
        (-b * x - c * y - d * z) / 2,
        (a * x + c * z - d * y) / 2,
        (a * y - b * z + d * x) / 2,
        (a * z + b * y - c * x) / 2,
    ]


@dataclass
class BodyMotion:
    """Body i in world axes: rotation R, origin p, angular velocity w and origin velocity v
    (expressions linear in qd)."""

    R: sp.Matrix
    p: sp.Matrix
    w: sp.Matrix
    v: sp.Matrix

    def point(self, r: sp.Matrix) -> tuple[sp.Matrix, sp.Matrix]:
        """World position and velocity of the body point r (body axes)."""
        rw = self.R * r
        return self.p + rw, self.v + self.w.cross(rw)


def _names(model) -> tuple[tuple, tuple]:
    q_names, qd_names = [], []
    t = model.tree
    for i in range(1, model.N + 1):
        jn = model.joint_names[i - 1]
        nq, nv = int(t.nq[i]), int(t.nv[i])
        q_names += [jn] if nq == 1 else [f"{jn}[{k}]" for k in range(nq)]
        qd_names += [jn] if nv == 1 else [f"{jn}[{k}]" for k in range(nv)]
    return tuple(q_names), tuple(qd_names)


def joints_in_series(model) -> int:
    """The number of moving joints on the longest path from the world to a body."""
    t = model.tree
    depth = [0] * (model.N + 1)
    for i in range(1, model.N + 1):
        depth[i] = depth[int(t.parent[i])] + (1 if t.nv[i] > 0 else 0)
    return max(depth)


def motions(model, q, qd, p_tree: list) -> list[BodyMotion]:
    """Every body's pose and motion as expressions in q, qd and the parameters, expanded (world row 0
    first; p_tree[i]: joint i's offset symbols): the loop constraints' kinematics, whose rows are
    differentiated (``_loop_constraints``)."""
    t = model.tree
    out = [BodyMotion(sp.eye(3), sp.zeros(3, 1), sp.zeros(3, 1), sp.zeros(3, 1))]
    for i in range(1, model.N + 1):
        par, jt = int(t.parent[i]), int(t.jtype[i])
        qi = q[int(t.iq[i]) : int(t.iq[i] + t.nq[i])]
        vi = qd[int(t.iv[i]) : int(t.iv[i] + t.nv[i])]
        a = numbers(t.axis[i])
        Rp = out[par]
        Rjw = Rp.R * numbers(t.R_tree[i])  # the joint frame in world axes
        pj = Rp.p + Rp.R * p_tree[i]
        w, v_rel = Rp.w, sp.zeros(3, 1)
        if jt == joints.REVOLUTE:
            R = Rjw * _rot_axis(a, qi[0])
            p = pj
            w = w + Rjw * a * vi[0]
        elif jt == joints.PRISMATIC:
            R = Rjw
            p = pj + Rjw * a * qi[0]
            v_rel = Rjw * a * vi[0]
        elif jt == joints.SPHERICAL:
            R = Rjw * _quat_to_R(*qi)
            p = pj
            w = w + R * sp.Matrix(vi)
        elif jt == joints.FREE:
            R = Rjw * _quat_to_R(*qi[3:7])
            p = pj + Rjw * sp.Matrix(qi[:3])
            w = w + R * sp.Matrix(vi[3:])
            v_rel = R * sp.Matrix(vi[:3])
        else:
            R, p = Rjw, pj
        v = Rp.v + Rp.w.cross(p - Rp.p) + v_rel
        out.append(BodyMotion(R, p, w, v))
    return out


def config_rate(model, q, qd) -> list:
    """qdot(q, qd) as expressions (the engine's joints.config_rate)."""
    t = model.tree
    out = []
    for i in range(1, model.N + 1):
        jt = int(t.jtype[i])
        qi = q[int(t.iq[i]) : int(t.iq[i] + t.nq[i])]
        vi = qd[int(t.iv[i]) : int(t.iv[i] + t.nv[i])]
        if jt == joints.SPHERICAL:
            out += _quat_rate(qi, vi)
        elif jt == joints.FREE:
            out += list(_quat_to_R(*qi[3:7]) * sp.Matrix(vi[:3])) + _quat_rate(qi[3:7], vi[3:])
        else:
            out += list(vi)
    return out


def _rate_of(expr: sp.Matrix, q, qdot) -> sp.Matrix:
    """d expr / dt at qdd = 0: sum_k d expr / d q_k qdot_k."""
    return expr.jacobian(sp.Matrix(q)) * sp.Matrix(qdot)


def check_size(model, max_series: int = MAX_SERIES, max_nv: int = MAX_NV) -> None:
    """SymbolicLimitError if the model is beyond the scheme's limits (before any algebra)."""
    series = joints_in_series(model)
    if series > max_series or model.nv > max_nv:
        raise SymbolicLimitError(
            f"model {model.source}: {series} moving joints in series and {model.nv} joint rates; mbsfmu derive "
            f"takes models of at most {max_series} in series and {max_nv} rates by default (the generated code "
            "grows with the bodies times the joints in series, the M entries with nv^2); use the numeric engine "
            "for this model, or raise the limit knowingly (--max-series, --max-nv)"
        )


class Assignments:
    """The intermediate variables of the recursive kinematics (PyMbs' "sym" variables): an ordered
    list of (symbol, expression), each expression in q, qd, u, the parameters and earlier symbols, so
    no expression is ever expanded (seed 004, "Recursive Scheme": "many but simple equations")."""

    def __init__(self, P: Parameters):
        self.items: list[tuple[sp.Symbol, sp.Expr]] = []
        self._P = P

    def let(self, name: str, expr):
        """A new symbol standing for ``expr``, or ``expr`` itself when it is a number or (minus) a symbol."""
        expr = sp.sympify(expr)
        if expr.is_Atom or (-expr).is_Atom:
            return expr
        sym_name, k = name, 2
        while sym_name in self._P._taken:
            sym_name, k = f"{name}_{k}", k + 1
        self._P._taken.add(sym_name)
        s = sp.Symbol(sym_name, real=True)
        self.items.append((s, expr))
        return s

    def vector(self, name: str, v) -> sp.Matrix:
        return sp.Matrix([self.let(f"{name}_{c}", e) for c, e in zip("xyz", v)])

    def matrix(self, name: str, m) -> sp.Matrix:
        return sp.Matrix(3, 3, [self.let(f"{name}_{r}{c}", m[r, c]) for r in range(3) for c in range(3)])


def _sym(m: sp.Matrix) -> list:
    """The 6 independent entries of a symmetric 3x3 matrix (xx, yy, zz, xy, xz, yz)."""
    return [m[0, 0], m[1, 1], m[2, 2], m[0, 1], m[0, 2], m[1, 2]]


def _full(s) -> sp.Matrix:
    return sp.Matrix([[s[0], s[3], s[4]], [s[3], s[1], s[5]], [s[4], s[5], s[2]]])


def _let_sym(X: Assignments, name: str, m: sp.Matrix) -> sp.Matrix:
    return _full([X.let(f"{name}_{n}", e) for n, e in zip(("xx", "yy", "zz", "xy", "xz", "yz"), _sym(m))])


def _dot(a: sp.Matrix, b: sp.Matrix):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


@dataclass
class Body:
    """Body i in world axes at the world origin (Featherstone's spatial vectors in the inertial frame,
    RBDA Sec. 2.7): rotation R, origin p, spatial velocity (w, v0) and bias acceleration (alpha, a0)
    at qdd = 0, v0 and a0 those of the body point at the world origin. Symbols of ``Assignments``."""

    R: sp.Matrix
    p: sp.Matrix
    w: sp.Matrix
    v0: sp.Matrix
    alpha: sp.Matrix
    a0: sp.Matrix

    def point(self, r: sp.Matrix) -> tuple[sp.Matrix, sp.Matrix]:
        """World position and velocity of the body point r (body axes): P = p + R r, v_P = v0 + w x P."""
        P = self.p + self.R * r
        return P, self.v0 + self.w.cross(P)


def _joint_rotation(X: Assignments, jt: int, qi, Rt: sp.Matrix, a, tag: str) -> sp.Matrix:
    """R_tree R_J(q_i), the child frame in the parent's axes: Rodrigues I + sin K + (1 - cos) K^2 about
    the joint axis (revolute), the rotation of the quaternion's direction (spherical, free: sq = 2 / |q|^2),
    else R_tree."""
    if jt == joints.REVOLUTE:
        s, c = X.let(f"s_{tag}", sp.sin(qi[0])), X.let(f"c_{tag}", sp.cos(qi[0]))
        K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]], dtype=float)
        return numbers(Rt) + s * numbers(Rt @ K) + (1 - c) * numbers(Rt @ K @ K)
    if jt in (joints.SPHERICAL, joints.FREE):
        w, x, y, z = qi[-4:]
        Rq = X.matrix(f"Rq_{tag}", _quat_to_R(w, x, y, z, X.let(f"sq_{tag}", 2 / (w * w + x * x + y * y + z * z))))
        return numbers(Rt) * Rq
    return numbers(Rt)


def recursive_kinematics(model, q, qd, X: Assignments, p_tree: list, progress=None) -> tuple[list, list, list]:
    """(bodies, columns, path): every body's ``Body`` (world row 0 first), the motion subspace columns
    S_k = (e_k, v0_k) (world axes, at the world origin) of every joint rate k, and each body's rates
    from the world to it (path[i]); each body's quantities new symbols in its parent's (seed 004,
    Recursive Scheme, forward loop: omega_i = omega_h + qd_i Phi_i, ...; Featherstone RBDA Table 5.1 in
    the inertial frame):

        R_i = R_h R_tree R_J(q_i),  p_i = p_h + R_h p_tree (+ the joint's translation),
        S_k = (e_k, o_k x e_k + t_k)  (axis e_k through the point o_k, translation t_k),
        V_i = V_h + sum_k S_k qd_k,  A_i = A_h + V_h x V_i  (Sdot_k = V_i x S_k, qdd = 0)."""
    t = model.tree
    zero = sp.zeros(3, 1)
    bodies = [Body(sp.eye(3), zero, zero, zero, zero, zero)]
    columns, path = [None] * model.nv, [[]]
    for i in range(1, model.N + 1):
        par, jt = int(t.parent[i]), int(t.jtype[i])
        tag = re.sub(r"\W", "_", model.bodies[i - 1].name)
        if progress:
            progress(f"body {i}/{model.N} ({model.bodies[i - 1].name}): kinematics")
        qi = q[int(t.iq[i]) : int(t.iq[i] + t.nq[i])]
        iv = list(range(int(t.iv[i]), int(t.iv[i] + t.nv[i])))
        vi = [qd[k] for k in iv]
        a = np.asarray(t.axis[i], dtype=float)
        h = bodies[par]
        R = X.matrix(f"R_{tag}", h.R * _joint_rotation(X, jt, qi, np.asarray(t.R_tree[i], dtype=float), a, tag))
        pj = h.p + h.R * p_tree[i]
        Rt_a = numbers(np.asarray(t.R_tree[i], dtype=float) @ a)
        cols = []
        if jt == joints.REVOLUTE:
            p = X.vector(f"p_{tag}", pj)
            e = X.vector(f"e_{tag}", h.R * Rt_a)
            cols = [(e, X.vector(f"v0_{tag}", p.cross(e)))]
        elif jt == joints.PRISMATIC:
            tv = X.vector(f"t_{tag}", h.R * Rt_a)  # the translation direction
            p = X.vector(f"p_{tag}", pj + tv * qi[0])
            cols = [(zero, tv)]
        elif jt == joints.SPHERICAL:
            p = X.vector(f"p_{tag}", pj)
            cols = [(R[:, k], X.vector(f"v0_{tag}{k}", p.cross(R[:, k]))) for k in range(3)]
        elif jt == joints.FREE:
            Rjw = h.R * numbers(t.R_tree[i])
            p = X.vector(f"p_{tag}", pj + Rjw * sp.Matrix(qi[:3]))
            cols = [(zero, R[:, k]) for k in range(3)]
            cols += [(R[:, k], X.vector(f"v0_{tag}{k}", p.cross(R[:, k]))) for k in range(3)]
        else:
            p = X.vector(f"p_{tag}", pj)
        for k, c in zip(iv, cols):
            columns[k] = c
        w = X.vector(f"w_{tag}", h.w + sum((e * v for (e, _), v in zip(cols, vi)), zero))
        v0 = X.vector(f"v0_{tag}", h.v0 + sum((s * v for (_, s), v in zip(cols, vi)), zero))
        alpha = X.vector(f"alpha_{tag}", h.alpha + h.w.cross(w))
        a0 = X.vector(f"a0_{tag}", h.a0 + h.w.cross(v0) + h.v0.cross(w))
        bodies.append(Body(R, p, w, v0, alpha, a0))
        path.append(path[par] + iv)
    return bodies, columns, path


def _spatial_add(F, G):
    return (F[0] + G[0], F[1] + G[1])


def derive(model, max_series: int = MAX_SERIES, max_nv: int = MAX_NV, progress=None) -> Equations:
    """M_red, h_red, f_red (seed 004 Eq. 8-9) of a Model, with loops; SymbolicLimitError past the
    limits (``check_size``); ``progress(message)`` is called per stage and body.

    Eq. 8 grouped by subtrees (seed 004 "Recursive Scheme", backward loop; Featherstone RBDA
    Sec. 6.2, CRBA, and Table 5.1, RNEA at qdd = 0, both in the inertial frame at the world origin):
    with I_i body i's spatial inertia there and Ic_j the sum over the subtree of joint j,

        M_red[k, l] = S_k^T Ic_j S_l   (l a rate of joint j or inboard of it; sum_i J_i^T M_i J_i),
        h_red[k] = S_k^T sum_{i in subtree} (I_i A_i + V_i x* I_i V_i)   (J^T (M Jdot qd + h), Eq. 8),
        f_red[k] = S_k^T sum_{i in subtree} (F_grav,i + F_ext,i) + tau - k (q - q0) - d qd,

    so the generated statements grow with the bodies (kinematics, h, f) and with the bodies times
    the joints in series (M), never by expansion."""
    check_size(model, max_series, max_nv)
    say = progress or (lambda message: None)
    t = model.tree
    q_names, qd_names = _names(model)
    q = tuple(sp.Symbol(f"q{k}", real=True) for k in range(model.nq))
    qd = tuple(sp.Symbol(f"qd{k}", real=True) for k in range(model.nv))
    forces = ForceElements(model)
    u = tuple(sp.Symbol(f"u{k}", real=True) for k in range(len(forces.layout.names)))
    P = Parameters()
    X = Assignments(P)
    g = P.vector("g", t.a_grav[3:])
    p_tree = [None] + [P.vector(f"p_{model.bodies[i - 1].joint.name}", t.p_tree[i]) for i in range(1, model.N + 1)]
    bodies, S, path = recursive_kinematics(model, q, qd, X, p_tree, say)
    zero = sp.zeros(3, 1)
    nv, N = model.nv, model.N
    F_bias = [(zero, zero) for _ in range(N + 1)]  # I_i A_i + V_i x* I_i V_i, (moment at the origin, force)
    F_app = [(zero, zero) for _ in range(N + 1)]  # gravity and force elements
    Ic = [(0, zero, sp.zeros(3, 3)) for _ in range(N + 1)]  # (m, m c, I about the origin), world axes
    for i in range(1, N + 1):
        b, B = model.bodies[i - 1], bodies[i]
        if b.mass == 0.0 and not np.any(np.asarray(b.inertia, dtype=float)):
            continue
        say(f"body {i}/{N} ({b.name}): inertia")
        tag = re.sub(r"\W", "_", b.name)
        m = P.symbol(f"m_{b.name}", b.mass)
        c = P.vector(f"c_{b.name}", b.com)
        I_b = np.asarray(b.inertia, dtype=float)
        I = sp.zeros(3, 3)
        for r, s in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)):
            I[r, s] = I[s, r] = P.symbol(f"I_{b.name}_{'xyz'[r]}{'xyz'[s]}", I_b[r, s])
        cw = X.vector(f"cw_{tag}", B.p + B.R * c)  # CoM, world
        RI = X.matrix(f"RI_{tag}", B.R * I)
        Iw = _let_sym(X, f"Iw_{tag}", RI * B.R.T)  # R I R^T, about the CoM, world axes
        vc = X.vector(f"vc_{tag}", B.v0 + B.w.cross(cw))
        ac = X.vector(f"ac_{tag}", B.a0 + B.alpha.cross(cw))
        l_mom = X.vector(f"hl_{tag}", m * vc)  # linear momentum
        a_mom = X.vector(f"ha_{tag}", Iw * B.w + cw.cross(l_mom))  # angular momentum about the origin
        m_ac = X.vector(f"mac_{tag}", m * ac)
        f_lin = X.vector(f"fl_{tag}", m_ac + B.w.cross(l_mom))  # I A + V x* I V (RBDA Eq. 2.67, 5.9)
        f_ang = X.vector(f"fa_{tag}", Iw * B.alpha + cw.cross(m_ac) + B.w.cross(a_mom) + B.v0.cross(l_mom))
        F_bias[i] = (f_ang, f_lin)
        mg = m * g
        F_app[i] = (cw.cross(mg), mg)
        mc = m * cw
        Ic[i] = (m, mc, Iw + m * (_dot(cw, cw) * sp.eye(3) - cw * cw.T))
    for i, F in _applied_forces(model, forces, bodies, u, P, X):
        F_app[i] = _spatial_add(F_app[i], F)
    say("backward loop: subtree inertias and forces")
    for i in range(N, 0, -1):
        tag = re.sub(r"\W", "_", model.bodies[i - 1].name)
        mi, hi, Ii = Ic[i]
        Ic[i] = (X.let(f"mC_{tag}", mi), X.vector(f"hC_{tag}", hi), _let_sym(X, f"IC_{tag}", Ii))
        F_bias[i] = (X.vector(f"FbA_{tag}", F_bias[i][0]), X.vector(f"FbL_{tag}", F_bias[i][1]))
        F_app[i] = (X.vector(f"FfA_{tag}", F_app[i][0]), X.vector(f"FfL_{tag}", F_app[i][1]))
        par = int(t.parent[i])
        if par:
            Ic[par] = (Ic[par][0] + Ic[i][0], Ic[par][1] + Ic[i][1], Ic[par][2] + Ic[i][2])
            F_bias[par] = _spatial_add(F_bias[par], F_bias[i])
            F_app[par] = _spatial_add(F_app[par], F_app[i])
    say("M, h, f from the subtrees")
    M, h, f = sp.zeros(nv, nv), sp.zeros(nv, 1), sp.zeros(nv, 1)
    for i in range(1, N + 1):
        tag = re.sub(r"\W", "_", model.bodies[i - 1].name)
        mC, hC, IC = Ic[i]
        own = range(int(t.iv[i]), int(t.iv[i] + t.nv[i]))
        for k in own:
            e, v0 = S[k]
            Fk_ang = X.vector(f"Fs{k}_{tag}", IC * e + hC.cross(v0))  # Ic S_k
            Fk_lin = X.vector(f"Fs{k}L_{tag}", mC * v0 + e.cross(hC))
            for l in path[i]:
                if l > k and l in own:
                    continue
                el, vl = S[l]
                M[k, l] = M[l, k] = _dot(el, Fk_ang) + _dot(vl, Fk_lin)
            h[k] = _dot(e, F_bias[i][0]) + _dot(v0, F_bias[i][1])
            f[k] = _dot(e, F_app[i][0]) + _dot(v0, F_app[i][1])
    f += _joint_forces(model, forces, q, qd, u, P)
    Phi = A = gamma = None
    if model.loops:
        say("loop constraints (expanded kinematics of the loop bodies)")
        Phi, A, gamma = _loop_constraints(model, motions(model, q, qd, p_tree), q, qd, config_rate(model, q, qd), P)
    return Equations(
        model.name,
        q,
        qd,
        u,
        M,
        h,
        f,
        Phi,
        A,
        gamma,
        dict(P.values),
        q_names,
        qd_names,
        tuple(forces.layout.names),
        tuple(X.items),
    )


def _joint_forces(model, forces: ForceElements, q, qd, u, P: Parameters) -> sp.Matrix:
    """tau(u) and the joint spring-dampers as generalised forces (nv, 1)."""
    t = model.tree
    f = sp.zeros(model.nv, 1)
    for iu, iv in zip(forces.layout.tau_index, forces.layout.tau_dof):
        f[int(iv)] += u[int(iu)]
    for i in range(1, model.N + 1):
        spring = model.bodies[i - 1].joint.spring
        if spring is None:
            continue
        jn = model.joint_names[i - 1]
        iq, iv = int(t.iq[i]), int(t.iv[i])
        k, q0, d = P.symbol(f"k_{jn}", spring.k), P.symbol(f"q0_{jn}", spring.q0), P.symbol(f"d_{jn}", spring.d)
        f[iv] += -k * (q[iq] - q0) - d * qd[iv]
    return f


def _applied_forces(model, forces: ForceElements, body, u, P: Parameters, X: Assignments) -> list:
    """[(body index, spatial force (moment about the world origin, force), world axes)] of the force
    elements (the engine's mbsfmu/engine/forces.py): a force F at the world point P is (P x F, F)."""
    out = []
    for el in model.spec.forces:
        if isinstance(el, Thruster):
            i = model.body_index[el.body]
            iu = forces.layout.index(f"{el.name}.thrust")
            dvec = np.asarray(el.direction, float)
            Pw, _ = body[i].point(numbers(el.point))
            F = body[i].R * numbers(dvec / np.linalg.norm(dvec)) * u[iu]
            out.append((i, (Pw.cross(F), F)))
        elif isinstance(el, BodyWrench):
            i = model.body_index[el.body]
            iu = forces.layout.index(f"{el.name}.f[1]")
            F, T = sp.Matrix(u[iu : iu + 3]), sp.Matrix(u[iu + 3 : iu + 6])
            if el.axes != "world":
                F, T = body[i].R * F, body[i].R * T
            Pw, _ = body[i].point(numbers(el.point))
            out.append((i, (Pw.cross(F) + T, F)))
        elif isinstance(el, SpringDamper):
            ends = []
            for side, anchor in (("a", el.a), ("b", el.b)):
                r = P.vector(f"r_{el.name}_{side}", anchor.point)
                if anchor.body == "world":
                    ends.append((0, r, sp.zeros(3, 1)))
                else:
                    i = model.body_index[anchor.body]
                    Pw, Vw = body[i].point(r)
                    ends.append((i, X.vector(f"P_{el.name}_{side}", Pw), X.vector(f"V_{el.name}_{side}", Vw)))
            (ia, Pa, Va), (ib, Pb, Vb) = ends
            tag = re.sub(r"\W", "_", el.name)
            dvec = X.vector(f"d_{tag}", Pb - Pa)
            l = X.let(f"l_{tag}", sp.sqrt(_dot(dvec, dvec)))
            ldot = _dot(dvec, Vb - Va) / l
            k, l0, dmp = (P.symbol(f"{n}_{el.name}", v) for n, v in (("k", el.k), ("l0", el.l0), ("d", el.d)))
            T = X.let(f"T_{tag}", (k * (l - l0) + dmp * ldot) / l)  # tension [N] / l: pulls the anchors together
            Fa = T * dvec  # on a; -Fa on b
            if ia:
                out.append((ia, (Pa.cross(Fa), Fa)))
            if ib:
                out.append((ib, (-Pb.cross(Fa), -Fa)))
    return out


def _loop_constraints(model, body, q, qd, qdot, P: Parameters):
    """Phi (m, 1), A (m, nv), gamma (m, 1) of the cut joints (engine's closed_loops.py rows)."""
    qdv = sp.Matrix(qd)
    rows = []
    for c in model.loops.closures:
        sides = []
        for tag, i, r, E in (("a", c.a, c.ra, c.Ea), ("b", c.b, c.rb, c.Eb)):
            rr = P.vector(f"r_{c.name}_{tag}", r)
            if i == 0:
                sides.append((rr, numbers(E)))
            else:
                sides.append((body[i].point(rr)[0], body[i].R * numbers(E)))
        (Pa, Ea), (Pb, Eb) = sides
        n_b = Eb * numbers(c.axis)
        t1, t2 = Ea * numbers(c.t1), Ea * numbers(c.t2)
        if c.kind == "ball":
            rows += list(Pa - Pb)
        elif c.kind == "revolute":
            rows += list(Pa - Pb) + [t1.dot(n_b), t2.dot(n_b)]
        elif c.kind == "prismatic":
            d = Pb - Pa
            rows += [t1.dot(d), t2.dot(d)]
            rows += [Ea[:, 0].dot(Eb[:, 1]), Ea[:, 1].dot(Eb[:, 2]), Ea[:, 2].dot(Eb[:, 0])]
        else:  # planar
            rows += [(Ea * numbers(c.axis)).dot(Pb - Pa), t1.dot(n_b), t2.dot(n_b)]
    Phi = sp.Matrix(rows)
    Phidot = _rate_of(Phi, q, qdot)
    A = Phidot.jacobian(qdv)
    gamma = -_rate_of(A * qdv, q, qdot)
    return Phi, A, gamma
