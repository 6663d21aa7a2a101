"""The explicit scheme (seed 004 Eq. 2-9) against the closed forms of seed 001 (exactly, in SymPy) and
the numeric engine (tolerances from float64 round-off: mbsfmu/symbolic/verify.py)."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import mbsfmu
from mbsfmu.symbolic.codegen import load_numpy, numpy_source
from mbsfmu.symbolic.scheme import SymbolicLimitError, check_size, derive, joints_in_series
from mbsfmu.symbolic.verify import engine_pairs, random_states
from tests.support.general_arm import write_general_arm

MODELS = "scenarios/models/"


def _compare_with_engine(path: str, states: int = 4) -> None:
    model = mbsfmu.load_model(path)
    ns = load_numpy(numpy_source(derive(model)))
    for q, qd, u in random_states(model, states):
        for name, (mine, engine, atol) in engine_pairs(model, ns, q, qd, u).items():
            np.testing.assert_allclose(mine, engine, rtol=0, atol=atol, err_msg=name)


@pytest.mark.parametrize(
    "name",
    ["compound_pendulum", "spring_pendulum", "trolley_pendulum", "scara", "fourbar", "crank_slider", "urdf_arm7"],
)
def test_small_models_equal_the_engine(name):
    """urdf_arm7 (a Panda: 8 joints in series) with the default limits (issue 37 item 8)."""
    _compare_with_engine(f"{MODELS}{name}.urdf" if name.startswith("urdf") else f"{MODELS}{name}.yaml")


def test_general_7dof_arm_equals_the_engine(tmp_path):
    """Axes along no coordinate axis, rpy joint origins, full inertia tensors in rotated inertial
    frames (issue 37 item 10: the case that ran 15 min without finishing)."""
    _compare_with_engine(write_general_arm(tmp_path, 7))


@pytest.mark.slow
def test_30_body_chain_equals_the_engine(tmp_path):
    _compare_with_engine(write_general_arm(tmp_path, 30), states=2)


@pytest.mark.slow
@pytest.mark.parametrize(
    "path",
    [
        "spacecraft.yaml",  # free joint, reaction wheels, thrusters, joint springs
        "chain7.yaml",  # 7 joints in series
        "rssr.yaml",  # spherical joint in a spatial loop
        "branched_robot.yaml",  # every joint type
        "urdf_quadruped.urdf",
        "urdf_quadruped_overlay.yaml",  # free base, body wrenches
    ],
)
def test_every_bundled_model_equals_the_engine(path):
    _compare_with_engine(MODELS + path, states=2)


def _ops(expr) -> int:
    """Arithmetic operations of an expression tree: n - 1 per sum or product of n terms, one per power
    or function (sin, cos, sqrt)."""
    n = 0
    for node in sp.preorder_traversal(expr):
        if node.is_Add or node.is_Mul:
            n += len(node.args) - 1
        elif node.is_Pow or node.is_Function:
            n += 1
    return n


def test_generated_statements_grow_linearly_with_the_bodies(tmp_path):
    """Each body's quantities are intermediate variables in its parent's (seed 004, Recursive Scheme):
    from 10 to 20 bodies in series the variables and their operations grow about 2x (bound 2.5; the
    expanded explicit scheme grew about tenfold per joint), and every entry of M is one product
    S_k^T (Ic S_l) of two 6-vectors (at most 6 products and 5 sums), so M's operations grow only
    with its nv (nv + 1) / 2 entries."""
    eqs = {n: derive(mbsfmu.load_model(write_general_arm(tmp_path, n))) for n in (10, 20)}
    n_vars = {n: len(eq.assignments) for n, eq in eqs.items()}
    n_ops = {n: sum(_ops(e) for _, e in eq.assignments) for n, eq in eqs.items()}
    assert n_vars[20] / n_vars[10] < 2.5, n_vars
    assert n_ops[20] / n_ops[10] < 2.5, n_ops
    for eq in eqs.values():
        assert max(_ops(e) for e in eq.M) <= 11
        assert max(_ops(e) for e in eq.h) <= 11


def test_progress_is_reported_per_body_and_stage():
    lines = []
    derive(mbsfmu.load_model(MODELS + "scara.yaml"), progress=lines.append)
    assert lines[:2] == ["body 1/2 (link1): kinematics", "body 2/2 (link2): kinematics"]
    assert "body 2/2 (link2): inertia" in lines and lines[-1] == "M, h, f from the subtrees"


def test_models_past_the_limit_are_refused_before_any_algebra(tmp_path):
    model = mbsfmu.load_model(write_general_arm(tmp_path, 65))
    assert joints_in_series(model) == 65
    with pytest.raises(SymbolicLimitError, match=r"65 moving joints in series.*at most 64 in series"):
        check_size(model)
    with pytest.raises(SymbolicLimitError, match="--max-series"):
        derive(model)
    with pytest.raises(SymbolicLimitError, match="19 joint rates"):
        derive(mbsfmu.load_model(MODELS + "branched_robot.yaml"), max_nv=12)


# ---- seed 001 (TU Darmstadt) closed forms, with the corrections of docs/explanation/errata.md --------
m, l, g, k, d, I1, I2 = sp.symbols("m l g k d I1 I2", real=True)
m1, m2, l1, l2, r1x, r1y, r2x, r2y = sp.symbols("m1 m2 l1 l2 r1x r1y r2x r2y", real=True)


def _eq_in(name: str, **subs):
    """The scheme's (M, h, f, q, qd, u) for a bundled seed-001 model, its parameter symbols
    replaced by the seed's (``subs``: parameter name -> expression)."""
    eq = derive(mbsfmu.load_model(f"{MODELS}{name}.yaml"))
    by_name = {str(s): s for s in eq.params}
    assert set(subs) == set(by_name), f"parameters {sorted(by_name)}"
    rule = {by_name[n]: e for n, e in subs.items()}
    M, h, f = eq.expanded()
    return M.subs(rule), h.subs(rule), f.subs(rule), eq.q, eq.qd, eq.u


def _zero(expr) -> bool:
    """Every entry is identically zero: sines and cosines of sums expanded, then each sin(q), cos(q)
    a variable and the polynomial reduced modulo sin^2 + cos^2 - 1 (exact, and faster than simplify)."""
    exprs = [sp.expand(sp.expand_trig(e)) for e in sp.Matrix(expr)]
    angles = sorted({a.args[0] for e in exprs for a in e.atoms(sp.sin, sp.cos)}, key=str)
    sc = [(sp.Dummy(), sp.Dummy()) for _ in angles]
    rule = {f(a): v for a, (s, c) in zip(angles, sc) for f, v in ((sp.sin, s), (sp.cos, c))}
    ideal = [s**2 + c**2 - 1 for s, c in sc]
    gens = [v for pair in sc for v in pair]
    for e in exprs:
        e = sp.expand(e.xreplace(rule))
        if e != 0 and (not gens or sp.reduced(e, ideal, *gens)[1] != 0):
            return False
    return True


def test_compound_pendulum_closed_form():
    M, h, f, (q,), _, (tau,) = _eq_in(
        "compound_pendulum", m_rod=m, c_rod_y=-l / 2, I_rod_xx=m * l**2 / 12, I_rod_zz=m * l**2 / 12, g_y=-g
    )
    assert _zero(M - sp.Matrix([[m * l**2 / 3]]))
    assert _zero(h) and _zero(f - sp.Matrix([tau - m * g * l * sp.sin(q) / 2]))


def test_spring_pendulum_closed_form():
    M, h, f, (q,), (qd,), (tau,) = _eq_in("spring_pendulum", m_mass=m, k_q1=k, d_q1=d, g_y=-g)
    assert _zero(M - sp.Matrix([[m]])) and _zero(h)
    assert _zero(f - sp.Matrix([m * g - d * qd - k * q + tau]))


def test_trolley_pendulum_closed_form():
    """Inverse dynamics of system 3 with erratum 1 (the sign of the qdd2 term in tau2)."""
    M, h, f, (_, q2), (_, qd2), (tau1, tau2) = _eq_in(
        "trolley_pendulum",
        m_pendulum=m,
        c_pendulum_y=-l / 2,
        I_pendulum_xx=m * l**2 / 12,
        I_pendulum_zz=m * l**2 / 12,
        k_q2=k,
        d_q2=d,
        g_y=-g,
    )
    c, s = sp.cos(q2), sp.sin(q2)
    assert _zero(M - sp.Matrix([[m, m * l * c / 2], [m * l * c / 2, m * l**2 / 3]]))
    assert _zero(h - sp.Matrix([-m * l * s * qd2**2 / 2, 0]))
    assert _zero(f - sp.Matrix([tau1, tau2 - d * qd2 - k * q2 - m * g * l * s / 2]))


def test_scara_closed_form():
    """System 4 with erratum 2 (the sign of the r2y term in M11); r_i from the link's distal end."""
    M, h, f, (q1, q2), (qd1, qd2), (tau1, tau2) = _eq_in(
        "scara",
        m_link1=m1,
        m_link2=m2,
        c_link1_x=l1 + r1x,
        c_link1_y=r1y,
        c_link2_x=l2 + r2x,
        c_link2_y=r2y,
        p_q2_x=l1,
        I_link1_xx=sp.Symbol("I1xx"),
        I_link1_yy=sp.Symbol("I1yy"),
        I_link1_zz=I1,
        I_link2_xx=sp.Symbol("I2xx"),
        I_link2_yy=sp.Symbol("I2yy"),
        I_link2_zz=I2,
        g_y=-g,
    )
    c2, s2 = sp.cos(q2), sp.sin(q2)
    M11 = (
        m1 * ((l1 + r1x) ** 2 + r1y**2)
        + m2 * (l1**2 + (l2 + r2x) ** 2 + r2y**2 + 2 * l1 * (l2 + r2x) * c2 - 2 * l1 * r2y * s2)
        + I1
        + I2
    )
    M12 = m2 * ((r2x + l2) ** 2 + r2y**2 + l1 * l2 * c2 + l1 * (r2x * c2 - r2y * s2)) + I2
    M22 = m2 * ((r2x + l2) ** 2 + r2y**2) + I2
    C1 = -m2 * l1 * qd2 * (2 * qd1 + qd2) * (r2y * c2 + l2 * s2 + r2x * s2)
    C2 = m2 * l1 * ((r2x + l2) * s2 + r2y * c2) * qd1**2
    G1 = m1 * g * ((l1 + r1x) * sp.cos(q1) - r1y * sp.sin(q1)) + m2 * g * (
        l1 * s2 * sp.sin(q1 + q2) + l1 * c2 * sp.cos(q1 + q2) + (r2x + l2) * sp.cos(q1 + q2) - r2y * sp.sin(q1 + q2)
    )
    G2 = m2 * g * ((r2x + l2) * sp.cos(q1 + q2) - r2y * sp.sin(q1 + q2))
    assert _zero(M - sp.Matrix([[M11, M12], [M12, M22]]))
    assert _zero(h - sp.Matrix([C1, C2]))
    assert _zero(f - sp.Matrix([tau1 - G1, tau2 - G2]))


def test_a_quaternion_of_any_norm_gives_its_directions_equations():
    """The generated M and qdd at quaternions scaled by 1.0001 and 0.9 equal the engine's at the unit
    ones (the joint rotation is that of q / |q|, as spatial.quat_to_R): branched_robot's free base and
    spherical neck."""
    model = mbsfmu.load_model(MODELS + "branched_robot.yaml")
    ns = load_numpy(numpy_source(derive(model)))
    t = model.tree
    quats = [int(t.iq[i] + t.nq[i]) - 4 for i in range(1, model.N + 1) if t.nq[i] > t.nv[i]]
    assert len(quats) == 2
    for q, qd, u in random_states(model, 2):
        for c in (1.0001, 0.9):
            qs = q.copy()
            for s in quats:
                qs[s : s + 4] *= c
            pairs = engine_pairs(model, ns, q, qd, u)
            M, _h, _f = ns["eom"](qs, qd, u)
            np.testing.assert_allclose(M, pairs["M"][1], rtol=0, atol=pairs["M"][2])
            _mine, engine, atol = pairs["qdd"]
            np.testing.assert_allclose(ns["forward_dynamics"](qs, qd, u), engine, rtol=0, atol=atol)
