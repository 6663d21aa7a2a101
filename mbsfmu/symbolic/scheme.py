"""The explicit scheme of PyMbs (seed 004_0c0a19c83fa138a1.txt, "Explicit Scheme", Eq. 2-9) in SymPy.

Every body's CoM velocity v_c (world axes) and angular velocity omega (body axes) are built as
expressions linear in the joint rates qd, so (Eq. 5-6)

    J_T = d v_c / d qd,  J_R = d omega / d qd,
    zdot_1 = J_T qdd + gamma_T,  zdot_2 = J_R qdd + gamma_R,  gamma = d(J qd)/dq . qdot(q, qd),

with qdot the configuration rate (qd for 1-DoF joints, 1/2 q (x) (0, w) for quaternions), and the
body equations (Eq. 2, about the CoM: m a_c = f_e, I wdot + w x I w = m_e) reduced by J^T (Eq. 7-8):

    M_red = sum_i  m_i J_T,i^T J_T,i + J_R,i^T I_i J_R,i
    h_red = sum_i  J_T,i^T m_i gamma_T,i + J_R,i^T (I_i gamma_R,i + w_i x I_i w_i)
    f_red = sum_i  J_T,i^T m_i g + tau(u) - k (q - q0) - d qd + sum_e J_e^T F_e

so that M_red qdd + h_red = f_red (Eq. 9). J_e maps the rates to the velocity of a force
element's point of application (thrusters, body wrenches, point spring-dampers), as in the
engine's force elements (mbsfmu/engine/forces.py). Closed loops add the cut-joint constraints
Phi(q) = 0 of mbsfmu/engine/dynamics/closed_loops.py with A = d Phidot / d qd and
gamma = -d(A qd)/dq . qdot (PyMbs Background, Eq. 10).

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
    order (``q_names`` ...); M (nv, nv), h (nv, 1), f (nv, 1) SymPy matrices; with loops, Phi (m, 1),
    A (m, nv) = dPhidot/dqd and gamma (m, 1) = -Adot qd, else None; params: {symbol: value}."""

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


def _quat_to_R(w, x, y, z) -> sp.Matrix:
    """Unit quaternion (w, x, y, z) to rotation matrix, as the engine's spatial.quat_to_R."""
    return sp.Matrix(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
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


def check_size(model, max_series: int = MAX_SERIES, max_nv: int = MAX_NV) -> None:
    """SymbolicLimitError if the model is beyond the explicit scheme's limits (before any algebra)."""
    series = joints_in_series(model)
    if series > max_series or model.nv > max_nv:
        raise SymbolicLimitError(
            f"model {model.source}: {series} moving joints in series and {model.nv} joint rates; the explicit "
            f"scheme derives models of at most {max_series} in series and {max_nv} rates (its expressions grow "
            "about tenfold with each further joint in series); use the numeric engine for this model, or "
            "raise the limit knowingly (--max-series, --max-nv)"
        )


def motions(model, q, qd, P: Parameters) -> list[BodyMotion]:
    """Every body's pose and motion as expressions (world row 0 first)."""
    t = model.tree
    out = [BodyMotion(sp.eye(3), sp.zeros(3, 1), sp.zeros(3, 1), sp.zeros(3, 1))]
    for i in range(1, model.N + 1):
        par, jt = int(t.parent[i]), int(t.jtype[i])
        b = model.bodies[i - 1]
        qi = q[int(t.iq[i]) : int(t.iq[i] + t.nq[i])]
        vi = qd[int(t.iv[i]) : int(t.iv[i] + t.nv[i])]
        a = numbers(t.axis[i])
        Rp = out[par]
        Rjw = Rp.R * numbers(t.R_tree[i])  # the joint frame in world axes
        pj = Rp.p + Rp.R * P.vector(f"p_{b.joint.name}", t.p_tree[i])
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


def derive(model, max_series: int = MAX_SERIES, max_nv: int = MAX_NV) -> Equations:
    """The explicit scheme's M_red, h_red, f_red (seed 004 Eq. 8-9) of a Model, with loops;
    SymbolicLimitError past the limits (``check_size``)."""
    check_size(model, max_series, max_nv)
    t = model.tree
    q_names, qd_names = _names(model)
    q = tuple(sp.Symbol(f"q{k}", real=True) for k in range(model.nq))
    qd = tuple(sp.Symbol(f"qd{k}", real=True) for k in range(model.nv))
    forces = ForceElements(model)
    u = tuple(sp.Symbol(f"u{k}", real=True) for k in range(len(forces.layout.names)))
    P = Parameters()
    g = P.vector("g", t.a_grav[3:])
    body = motions(model, q, qd, P)
    qdot = config_rate(model, q, qd)
    qdv = sp.Matrix(qd)
    nv = model.nv
    M, h, f = sp.zeros(nv, nv), sp.zeros(nv, 1), sp.zeros(nv, 1)
    for i in range(1, model.N + 1):
        b = model.bodies[i - 1]
        if b.mass == 0.0 and not np.any(np.asarray(b.inertia, dtype=float)):
            continue
        m = P.symbol(f"m_{b.name}", b.mass)
        c = P.vector(f"c_{b.name}", b.com)
        Ic = np.asarray(b.inertia, dtype=float)
        I = sp.zeros(3, 3)
        for r, s in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)):
            I[r, s] = I[s, r] = P.symbol(f"I_{b.name}_{'xyz'[r]}{'xyz'[s]}", Ic[r, s])
        bm = body[i]
        _, v_c = bm.point(c)
        w_b = bm.R.T * bm.w  # angular velocity in body axes (Eq. 2: omega body-fixed)
        J_T, J_R = v_c.jacobian(qdv), w_b.jacobian(qdv)
        gam_T, gam_R = _rate_of(v_c, q, qdot), _rate_of(w_b, q, qdot)
        M += m * J_T.T * J_T + J_R.T * I * J_R
        h += J_T.T * (m * gam_T) + J_R.T * (I * gam_R + w_b.cross(I * w_b))
        f += J_T.T * (m * g)
    f += _applied_forces(model, forces, body, q, qd, u, P)
    Phi = A = gamma = None
    if model.loops:
        Phi, A, gamma = _loop_constraints(model, body, q, qd, qdot, P)
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
    )


def _applied_forces(model, forces: ForceElements, body, q, qd, u, P: Parameters) -> sp.Matrix:
    """tau(u), joint spring-dampers and the force elements as generalised forces (nv, 1)."""
    t, nv = model.tree, model.nv
    qdv = sp.Matrix(qd)
    f = sp.zeros(nv, 1)
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
    for el in model.spec.forces:
        if isinstance(el, Thruster):
            i = model.body_index[el.body]
            iu = forces.layout.index(f"{el.name}.thrust")
            dvec = np.asarray(el.direction, float)
            _, vP = body[i].point(numbers(el.point))
            F = body[i].R * numbers(dvec / np.linalg.norm(dvec)) * u[iu]
            f += vP.jacobian(qdv).T * F
        elif isinstance(el, BodyWrench):
            i = model.body_index[el.body]
            iu = forces.layout.index(f"{el.name}.f[1]")
            F, T = sp.Matrix(u[iu : iu + 3]), sp.Matrix(u[iu + 3 : iu + 6])
            if el.axes != "world":
                F, T = body[i].R * F, body[i].R * T
            _, vP = body[i].point(numbers(el.point))
            f += vP.jacobian(qdv).T * F + body[i].w.jacobian(qdv).T * T
        elif isinstance(el, SpringDamper):
            ends = []
            for side, anchor in (("a", el.a), ("b", el.b)):
                r = P.vector(f"r_{el.name}_{side}", anchor.point)
                if anchor.body == "world":
                    ends.append((r, sp.zeros(3, 1)))
                else:
                    ends.append(body[model.body_index[anchor.body]].point(r))
            (Pa, Va), (Pb, Vb) = ends
            dvec = Pb - Pa
            l = sp.sqrt(dvec.dot(dvec))
            ldot = dvec.dot(Vb - Va) / l
            k, l0, dmp = (P.symbol(f"{n}_{el.name}", v) for n, v in (("k", el.k), ("l0", el.l0), ("d", el.d)))
            T = k * (l - l0) + dmp * ldot  # tension [N], pulls the anchors together (engine's forces.py)
            f -= (Vb - Va).jacobian(qdv).T * (T * dvec / l)  # T e on a, -T e on b
    return f


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
