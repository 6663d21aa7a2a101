"""The independent checker (mbsfmu/checker/): MBS Momentum Testing Eqs. 9, 10 and MBS
Energy Testing Eqs. 1, 2 by
Procedures 1-4 on a synthetic system with known motion (no engine), the conservation report, the
errors; then against the engine's own p_sys, H_sys, KE, PE at random states."""

import ast
import json
import re
import subprocess
import sys

import numpy as np
import pytest

from mbsfmu import checker as inv
from mbsfmu.checker import command as check_command
from mbsfmu.errors import MbsError
from mbsfmu.trajectory import Trajectory, read_trajectory, save_trajectory
from tests.support.paths import ROOT

SYM = (("xx", 0, 0), ("yy", 1, 1), ("zz", 2, 2), ("xy", 0, 1), ("xz", 0, 2), ("yz", 1, 2))


# ---- a synthetic rigid system with analytic motion ------------------------------------------
def rot(n, angle):
    """(T, 3, 3) rotations by angle (T,) about the unit axis n (Rodrigues)."""
    K = np.array([[0, -n[2], n[1]], [n[2], 0, -n[0]], [-n[1], n[0], 0]])
    s, c = np.sin(angle)[:, None, None], np.cos(angle)[:, None, None]
    return np.eye(3) + s * K + (1 - c) * (K @ K)


def random_rotation(rng):
    Q, R = np.linalg.qr(rng.normal(size=(3, 3)))
    Q = Q * np.sign(np.diag(R))
    return Q if np.linalg.det(Q) > 0 else -Q


def free_bodies(rng, t, g=(0.0, 0.0, 0.0), zero_momentum=True, kick=None, h_drift=0.0, pe_drift=0.0):
    """Two torque-free rigid bodies and a wheel in uniform gravity g, all records exact.

    Body b1 spins at w1 about its principal z axis, b2 at w2 about its principal x axis (steady
    Euler solutions: omega and I omega constant in world axes); CoMs move at constant velocity
    plus g t^2 / 2. A wheel on b1 along its spin axis has constant h (+ h_drift t along the axis:
    an unbalanced torque, H_sys drifts by |h_drift| per s); a spring has constant deflection (or
    PE growing by pe_drift per s). kick = (t_k, dv): b2's velocity jumps by dv at t_k (an
    external impulse). Returns (columns, known) with known p_sys, H_sys, R, Rdot, KE, PE."""
    t = np.asarray(t, dtype=float)
    T = len(t)
    g = np.asarray(g, dtype=float)
    m = np.array([3.0, 1.5])
    Ib = [np.diag([0.3, 0.5, 0.7]), np.diag([0.2, 0.4, 0.9])]
    C0 = [random_rotation(rng), random_rotation(rng)]
    n = [C0[0][:, 2], C0[1][:, 0]]  # spin axes in world axes (principal axes)
    w = [1.3, -2.1]
    a = rng.uniform(-1, 1, (2, 3))
    v = rng.uniform(-1, 1, (2, 3))
    if zero_momentum:
        v[1] = -m[0] * v[0] / m[1]
    C = [np.einsum("tij,jk->tik", rot(n[i], w[i] * t), C0[i]) for i in range(2)]
    omega = np.stack([np.tile(w[i] * n[i], (T, 1)) for i in range(2)], axis=1)  # (T, 2, 3)
    I = np.stack([C[i] @ Ib[i] @ np.transpose(C[i], (0, 2, 1)) for i in range(2)], axis=1)
    rbar = a[None] + v[None] * t[:, None, None] + 0.5 * g * (t * t)[:, None, None]
    rbardot = v[None] + g * t[:, None, None]
    if kick is not None:
        tk, dv = kick
        after = np.clip(t - tk, 0, None)
        rbar[:, 1] += np.outer(after, dv)
        rbardot[:, 1] += np.outer(t >= tk, dv)
    Iw, spin = 0.05, 40.0
    h = np.outer(Iw * spin + h_drift * t, n[0])[:, None]  # (T, 1, 3)
    k, x0 = 30.0, 0.2
    x = np.sqrt(x0 * x0 + 2 * pe_drift * t / k)
    C1 = C[0]
    M = m.sum()
    R = np.einsum("n,tni->ti", m, rbar) / M
    Rdot = np.einsum("n,tni->ti", m, rbardot) / M
    s1 = np.array([0.1, -0.2, 0.05])  # joint 1: a point of b1, body-1 axes from its CoM
    eta1 = rbar[:, 0] + np.einsum("tij,j->ti", C1, s1)
    etadot1 = rbardot[:, 0] + np.cross(omega[:, 0], np.einsum("tij,j->ti", C1, s1))
    to_b1 = lambda u: np.einsum("tji,tnj->tni", C1, u)  # noqa: E731
    vec = {
        "omega": omega,
        "omega_b1": to_b1(omega),
        "r_abs": rbar,
        "rdot_abs": rbardot,
        "r_cm": rbar - R[:, None],
        "rdot_cm": rbardot - Rdot[:, None],
        "r_cm_b1": to_b1(rbar - R[:, None]),
        "rdot_cm_b1": to_b1(rbardot - Rdot[:, None]),
        "r_j1": rbar - eta1[:, None],
        "rdot_j1": rbardot - etadot1[:, None],
        "r_j1_b1": to_b1(rbar - eta1[:, None]),
        "rdot_j1_b1": to_b1(rbardot - etadot1[:, None]),
    }
    tens = {"I": I, "I_b1": np.einsum("tji,tnjk,tkl->tnil", C1, I, C1)}
    cols = {"time": t}
    for j, body in enumerate(("b1", "b2")):
        cols[f"{body}.m"] = np.full(T, m[j])
        for key, val in tens.items():
            for lab, r, c in SYM:
                cols[f"{body}.{key}[{lab}]"] = val[:, j, r, c]
        for key, val in vec.items():
            for c in range(3):
                cols[f"{body}.{key}[{c + 1}]"] = val[:, j, c]
    for c in range(3):
        cols[f"rw.h[{c + 1}]"] = h[:, 0, c]
        cols[f"rw.h_b1[{c + 1}]"] = to_b1(h)[:, 0, c]
    cols["rw.Iw"] = np.full(T, Iw)
    cols["sp.k"], cols["sp.x"] = np.full(T, k), x
    for c in range(9):
        cols[f"C1[{c + 1}]"] = C1.reshape(T, 9)[:, c]
    for key, val in (("R", R), ("Rdot", Rdot), ("eta1", eta1), ("etadot1", etadot1), ("g", np.tile(g, (T, 1)))):
        for c in range(3):
            cols[f"{key}[{c + 1}]"] = val[:, c]
    rhat, rhatdot = rbar - R[:, None], rbardot - Rdot[:, None]
    known = {
        "p_sys": np.zeros((T, 3)),
        "R": R,
        "Rdot": Rdot,
        "H_sys": (
            0.7 * w[0] * n[0]
            + 0.2 * w[1] * n[1]  # I_j omega_j: principal moments
            + np.einsum("n,tni->ti", m, np.cross(rhat, rhatdot))
            + h[:, 0]
        ),
        "KE": 0.5 * (0.7 * w[0] ** 2 + 0.2 * w[1] ** 2)
        + 0.5 * np.einsum("n,tni,tni->t", m, rbardot, rbardot)
        + 0.5 * np.einsum("ti,ti->t", h[:, 0], h[:, 0]) / Iw,
        "PE": 0.5 * k * x * x - np.einsum("n,i,tni->t", m, g, rbar),
    }
    return cols, known


def with_engine_columns(cols, known):
    out = dict(cols)
    for q in ("p_sys", "H_sys", "R", "Rdot"):
        for c in range(3):
            out[f"engine.{q}[{c + 1}]"] = known[q][:, c]
    out["engine.KE"], out["engine.PE"], out["engine.E"] = known["KE"], known["PE"], known["KE"] + known["PE"]
    return out


T_GRID = np.linspace(0.0, 2.0, 41)


@pytest.mark.parametrize("g", [(0.0, 0.0, 0.0), (0.3, -1.0, -9.81)])
def test_four_procedures_agree_with_each_other_and_the_known_motion(rng, g):
    cols, known = free_bodies(rng, T_GRID, g=g)
    traj = Trajectory.from_columns(cols)
    H_ref, E_ref = np.abs(known["H_sys"]).max(), np.abs(known["KE"]).max()
    for N in (1, 2, 3, 4):
        p_sys, H_sys, R, Rdot = inv.momentum(traj, N)
        KE, PE = inv.energy(traj, N)
        np.testing.assert_allclose(p_sys, 0.0, rtol=0, atol=1e-12 * 4.5)  # sum m |rhatdot| ~ 4.5 N s
        np.testing.assert_allclose(H_sys, known["H_sys"], rtol=0, atol=1e-12 * H_ref)
        np.testing.assert_allclose(R, known["R"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(Rdot, known["Rdot"], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(KE, known["KE"], rtol=1e-12, atol=1e-12 * E_ref)
        np.testing.assert_allclose(PE, known["PE"], rtol=1e-12, atol=1e-12 * E_ref)
    # the known values are what MBS Momentum/Energy Testing say: H_sys constant, KE + PE constant, R parabolic
    np.testing.assert_allclose(
        known["H_sys"], np.broadcast_to(known["H_sys"][0], (len(T_GRID), 3)), rtol=0, atol=1e-12 * H_ref
    )
    E = known["KE"] + known["PE"]
    np.testing.assert_allclose(E, np.full(len(T_GRID), E[0]), rtol=0, atol=1e-12 * E_ref)


def test_wheel_and_spring_terms_enter_as_the_seeds_say(rng):
    """H_sys includes h (Eq. 10), KE includes |h|^2 / (2 I_w) (Eq. 1), PE 1/2 k x^2 (Eq. 2)."""
    cols, _ = free_bodies(rng, T_GRID[:3])
    p0, H0, _, _ = inv.momentum(cols, 1)
    KE0, PE0 = inv.energy(cols, 1)
    cols2 = {k: v for k, v in cols.items() if not k.startswith(("rw.", "sp."))}
    _, H1, _, _ = inv.momentum(cols2, 1)
    KE1, PE1 = inv.energy(cols2, 1)
    h = np.column_stack([cols[f"rw.h[{c}]"] for c in (1, 2, 3)])
    np.testing.assert_allclose(H0 - H1, h, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(KE0 - KE1, 0.5 * (h * h).sum(axis=1) / 0.05, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(PE0 - PE1, 0.5 * 30.0 * 0.2**2, rtol=1e-13, atol=1e-13)
    found = inv.discover(Trajectory.from_columns(cols))
    assert found == inv.System(("b1", "b2"), ("rw",), ("sp",))
    # found once per set of column names: new rows of the same columns (the ROS node's diagnostics) reuse it
    assert inv.discover(Trajectory.from_columns({k: v[:2] for k, v in cols.items()})) is found


def all_checks(g):
    base = ["engine_agreement", "p_sys_zero", "H_sys_constant", "energy_constant"]
    return base + (["R_parabolic"] if any(g) else ["R_constant", "P_sys_constant", "KE_constant"])


@pytest.mark.parametrize("g", [(0.0, 0.0, 0.0), (0.0, -9.81, 0.0)])
@pytest.mark.parametrize("procedure", [1, 2, 3, 4])
def test_clean_motion_passes_every_check(rng, g, procedure):
    cols, known = free_bodies(rng, T_GRID, g=g)
    report = inv.conservation_report(
        with_engine_columns(cols, known), {name: "rel:1e-11" for name in all_checks(g)}, procedure
    )
    assert report["passed"], inv.summary_table(report)
    assert report["procedure"] == procedure and report["rows"] == len(T_GRID)
    assert report["g"] == list(g) and report["wheels"] == ["rw"] and report["springs"] == ["sp"]
    json.dumps(report, allow_nan=False)  # JSON-serialisable as is
    if any(g):
        e = report["checks"]["R_parabolic"]
        np.testing.assert_allclose(e["V0"], known["Rdot"][0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(e["R0"], known["R"][0], rtol=1e-12, atol=1e-12)


def test_an_impulse_in_linear_momentum_is_flagged(rng):
    dv = np.array([0.0, 0.4, -0.3])
    cols, _ = free_bodies(rng, T_GRID, kick=(1.0, dv))
    checks = {
        "p_sys_zero": 1e-12,
        "P_sys_constant": 1e-9,
        "R_constant": 1e-9,
        "H_sys_constant": "rel:1e-9",
        "KE_constant": "rel:1e-9",
    }
    report = inv.conservation_report(cols, checks, procedure=2)
    res = report["checks"]
    assert not report["passed"]
    assert res["p_sys_zero"]["passed"]  # p_sys = 0 about the CM, impulse or not
    assert not res["P_sys_constant"]["passed"]
    np.testing.assert_allclose(res["P_sys_constant"]["max_abs"], 1.5 * np.linalg.norm(dv), rtol=1e-12, atol=0)
    assert res["P_sys_constant"]["bound_on"] == "max_abs" and res["P_sys_constant"]["bound"] == 1e-9
    assert not res["R_constant"]["passed"]
    np.testing.assert_allclose(res["R_constant"]["Rdot_max_abs"], 1.5 * np.linalg.norm(dv) / 4.5, rtol=1e-12, atol=0)
    assert not res["KE_constant"]["passed"]
    table = inv.summary_table(report)
    assert "P_sys_constant" in table and "FAIL" in table and "overall: FAIL" in table


def test_inconsistent_records_break_p_sys_zero_and_engine_agreement(rng):
    cols, known = free_bodies(rng, T_GRID)
    cols = with_engine_columns(cols, known)
    cols["b2.rdot_cm[1]"] = cols["b2.rdot_cm[1]"] + 1e-3  # a wrong CM-centric velocity
    report = inv.conservation_report(cols, None, procedure=1)  # defaults: engine_agreement, p_sys_zero
    assert list(report["checks"]) == ["engine_agreement", "p_sys_zero"]
    np.testing.assert_allclose(report["checks"]["p_sys_zero"]["max_abs"], 1.5e-3, rtol=1e-9, atol=0)
    assert not report["checks"]["p_sys_zero"]["passed"]
    assert not report["checks"]["engine_agreement"]["passed"]
    assert report["checks"]["engine_agreement"]["worst"] in ("p_sys", "H_sys", "KE")
    assert inv.conservation_report(cols, None, procedure=4)["passed"]  # joint(1)-centric records are intact


def test_drift_slope_is_recovered(rng):
    t = np.linspace(0.0, 5.0, 51)
    d = np.outer(t, [0.3, -0.4, 0.0]) + 1.0
    np.testing.assert_allclose(inv.drift_slope(t, d), [0.3, -0.4, 0.0], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(inv.drift_slope(t[:1], d[:1]), 0.0, rtol=0, atol=0)
    cols, _ = free_bodies(rng, t, h_drift=2e-4, pe_drift=-3e-3)
    report = inv.conservation_report(cols, {"H_sys_constant": 1e-5, "energy_constant": 1e-5}, procedure=3)
    H, E = report["checks"]["H_sys_constant"], report["checks"]["energy_constant"]
    np.testing.assert_allclose(H["drift_per_s"], 2e-4, rtol=1e-9, atol=0)
    np.testing.assert_allclose(H["max_abs"], 2e-4 * 5.0, rtol=1e-9, atol=0)
    assert not H["passed"] and not E["passed"]
    # energy: KE grows by the wheel's (h0 + c t)^2 / (2 I_w) - h0^2 / (2 I_w), PE falls 3e-3 J/s
    h0, c, Iw = 0.05 * 40.0, 2e-4, 0.05
    dE = ((h0 + c * t) ** 2 - h0**2) / (2 * Iw) - 3e-3 * t
    np.testing.assert_allclose(E["drift_per_s"], inv.drift_slope(t, dE), rtol=1e-9, atol=0)
    np.testing.assert_allclose(E["max_abs"], np.abs(dE).max(), rtol=1e-9, atol=0)


def test_energy_balance_uses_input_and_damper_work(rng):
    t = T_GRID
    cols, _ = free_bodies(rng, t, pe_drift=0.7)  # energy grows 0.7 J/s ...
    cols["engine.W_in"], cols["engine.W_diss"] = 0.9 * t, -0.2 * t  # ... = work in + damper work
    report = inv.conservation_report(cols, {"energy_balance": "rel:1e-12", "energy_constant": 1e-6})
    assert report["checks"]["energy_balance"]["passed"]
    assert not report["checks"]["energy_constant"]["passed"]
    np.testing.assert_allclose(report["checks"]["energy_constant"]["drift_per_s"], 0.7, rtol=1e-9, atol=0)


# ---- bad input ------------------------------------------------------------------------------
def test_missing_columns_are_listed_with_the_procedure(rng):
    full, _ = free_bodies(rng, T_GRID[:2])

    def without(*names):
        return {k: v for k, v in full.items() if k not in names}

    cols = without("b2.omega[2]", "rw.h_b1[3]")
    with pytest.raises(inv.CheckError, match=r"momentum by procedure 1 .* 1 column\(s\) missing .*: b2.omega\[2\]$"):
        inv.momentum(cols, 1)
    with pytest.raises(inv.CheckError, match=r"momentum by procedure 3 .*: rw.h_b1\[3\]$"):
        inv.momentum(cols, 3)
    with pytest.raises(inv.CheckError, match=r"energy by procedure 4 .*: b2.omega\[2\]$"):
        inv.energy(cols, 4)
    cols = without("g[3]", "R[1]", "b1.r_cm_b1[2]")
    inv.momentum(cols, 2)  # procedure 2 reads none of them
    with pytest.raises(
        inv.CheckError, match=r"energy by procedure 3 .* 3 column\(s\) .*: b1.r_cm_b1\[2\], R\[1\], g\[3\]$"
    ):
        inv.energy(cols, 3)
    with pytest.raises(inv.CheckError, match=r"momentum by procedure 1 .*: R\[1\]$"):
        inv.momentum(cols, 1)
    inv.momentum(cols, 1, with_R=False)  # p_sys, H_sys only: no R needed
    with pytest.raises(inv.CheckError, match=r"engine_agreement needs engine columns"):
        inv.conservation_report(cols, ["engine_agreement"], 2)
    with pytest.raises(inv.CheckError, match=r"energy_balance .* engine.W_in, engine.W_diss"):
        inv.conservation_report(cols, ["energy_balance"], 2)
    with pytest.raises(inv.CheckError, match=r"no rigid-body columns: each body needs a '<body>.m'"):
        inv.momentum({"time": 0.0, "R[1]": 0.0}, 1)


@pytest.mark.parametrize("procedure", [0, 5, "1", 2.5, None, True])
def test_unknown_procedure_is_named(rng, procedure):
    cols, _ = free_bodies(rng, T_GRID[:2])
    with pytest.raises(inv.CheckError, match=rf"unknown procedure {procedure!r}: expected 1, 2, 3 or 4"):
        inv.momentum(cols, procedure)
    with pytest.raises(inv.CheckError, match="unknown procedure"):
        inv.conservation_report(cols, None, procedure)


def test_unknown_check_and_bad_bounds_are_named(rng):
    cols, _ = free_bodies(rng, T_GRID[:2])
    with pytest.raises(inv.CheckError, match=r"unknown check 'H_constant': expected one of p_sys_zero, "):
        inv.conservation_report(cols, ["H_constant"])
    for bound, msg in (
        ("lots", "bound 'lots' is not a number"),
        ("-1", "bound '-1' must be a finite number >= 0"),
        ("max:1", "bound kind 'max' must be 'abs' or 'rel'"),
    ):
        with pytest.raises(inv.CheckError, match=rf"check H_sys_constant: {msg}"):
            inv.conservation_report(cols, {"H_sys_constant": bound})
    assert inv.parse_bound("engine_agreement", 1e-9) == ("rel", 1e-9)
    assert inv.parse_bound("p_sys_zero", 1e-9) == ("abs", 1e-9)
    assert inv.parse_bound("p_sys_zero", None) == ("rel", 1e-9)


STDLIB_OR_NUMPY = (
    "__future__",
    "numpy",
    "pathlib",
    "argparse",
    "collections",
    "csv",
    "dataclasses",
    "functools",
    "io",
    "json",
    "math",
    "os",
    "sys",
    "weakref",
)


def test_checker_imports_no_engine_module():
    """The checker package and trajectory.py read only columns: numpy, stdlib and the base modules
    (errors, files, trajectory); the import-linter contracts (tests/test_architecture.py) say the
    same for the whole import graph, this test also rules out any third-party import."""
    allowed = {"mbsfmu.errors", "mbsfmu.files", "mbsfmu.trajectory"}  # files.py: stdlib only
    files = [*sorted((ROOT / "mbsfmu" / "checker").glob("*.py")), ROOT / "mbsfmu" / "trajectory.py"]
    assert len(files) >= 3
    for path in files:
        package = ["mbsfmu"] + ([path.parent.name] if path.parent.name == "checker" else [])
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level:
                target = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                assert target in allowed or target.startswith("mbsfmu.checker."), f"{path.name} imports {target}"
            elif isinstance(node, ast.ImportFrom):
                assert node.module.split(".")[0] in STDLIB_OR_NUMPY, node.module
            elif isinstance(node, ast.Import):
                assert all(a.name.split(".")[0] in STDLIB_OR_NUMPY for a in node.names), ast.dump(node)


# ---- against the engine (test only) -----------------------------------------------------------
def engine_row(sim, t=0.0):
    """One trajectory row: the simulator's records and its own invariants as engine.* columns."""
    e = sim.invariants()
    row = {"time": t, **sim.records()}
    for q in ("p_sys", "P_sys", "H_sys", "R", "Rdot"):
        for c in range(3):
            row[f"engine.{q}[{c + 1}]"] = getattr(e, q)[c]
    row["engine.KE"], row["engine.PE"], row["engine.E"] = e.KE, e.PE, e.E
    row["engine.W_in"], row["engine.W_diss"] = sim.work
    return row


def wheel_model(gravity=(0.0, 0.0, 0.0)):
    """A free base with two reaction wheels (one off its CoM, one skewed), an arm on a joint spring
    and a point spring between base and arm."""
    from mbsfmu import Body, Joint, Model, ModelSpec, Origin, Spring
    from mbsfmu.engine.spec.description import Anchor, SpringDamper, Wheel

    I = ((0.3, 0.01, 0.0), (0.01, 0.4, 0.02), (0.0, 0.02, 0.5))
    bodies = (
        Body(
            "base",
            "world",
            Joint("root", "free"),
            mass=5.0,
            com=(0.1, 0.0, 0.0),
            inertia=I,
            wheels=(Wheel("rw1", (1.0, 0.0, 0.0), 0.02, (0.1, 0.2, 0.0)), Wheel("rw2", (0.0, 0.6, 0.8), 0.03)),
        ),
        Body(
            "arm",
            "base",
            Joint(
                "j1",
                "revolute",
                axis=(0.0, 0.0, 1.0),
                origin=Origin(xyz=(0.3, 0.0, 0.0)),
                spring=Spring(k=4.0, d=0.0, q0=0.2),
            ),
            mass=1.0,
            com=(0.2, 0.0, 0.0),
            inertia=((0.01, 0.0, 0.0), (0.0, 0.02, 0.0), (0.0, 0.0, 0.02)),
        ),
    )
    return Model(
        ModelSpec(
            "wheels",
            bodies,
            gravity=gravity,
            forces=(
                SpringDamper("sp", Anchor("base", (0.0, 0.1, 0.0)), Anchor("arm", (0.3, 0.0, 0.0)), k=10.0, l0=0.1),
            ),
        )
    )


def engine_models(rng):
    import mbsfmu
    from tests.support.trees import random_tree

    return [
        mbsfmu.load_model(ROOT / "scenarios" / "models" / "branched_robot.yaml"),
        random_tree(rng, 9),
        random_tree(rng, 7, springs=True),
        wheel_model(gravity=(0.5, -9.81, 1.0)),
    ]


def test_every_procedure_agrees_with_the_engine_at_random_states(rng):
    from mbsfmu.sim.simulator import Simulator

    worst = {N: 0.0 for N in (1, 2, 3, 4)}
    for model in engine_models(rng):
        sim = Simulator(model)
        for _ in range(3):
            sim.set_configuration(*model.random_state(rng))
            row = engine_row(sim)
            e = sim.invariants()
            H_scale = max(np.linalg.norm(e.H_sys), 1.0)
            for N in (1, 2, 3, 4):
                p_sys, H_sys, R, Rdot = inv.momentum(row, N)
                KE, PE = inv.energy(row, N)
                np.testing.assert_allclose(p_sys[0], e.p_sys, rtol=0, atol=1e-12 * np.linalg.norm(e.P_sys))
                np.testing.assert_allclose(H_sys[0], e.H_sys, rtol=0, atol=1e-12 * H_scale)
                np.testing.assert_allclose(R[0], e.R, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(Rdot[0], e.Rdot, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(KE[0], e.KE, rtol=1e-12, atol=0)
                np.testing.assert_allclose(PE[0], e.PE, rtol=1e-12, atol=1e-12)
                report = inv.conservation_report(row, {"engine_agreement": 1e-12, "p_sys_zero": None}, N)
                assert report["passed"], inv.summary_table(report)
                worst[N] = max(worst[N], report["checks"]["engine_agreement"]["max_rel"])
    print("worst checker-vs-engine relative difference per procedure:", worst)


def test_wheel_momentum_and_energy_come_from_the_rotors(rng):
    """With the wheels spun up and the bodies at rest, H_sys = sum h_k and KE = sum |h_k|^2 / (2 I_w)."""
    from mbsfmu.sim.simulator import Simulator

    model = wheel_model()
    sim = Simulator(model)
    q, _ = model.random_state(rng)
    qd = np.zeros(model.nv)
    qd[model.v_slice("rw1")], qd[model.v_slice("rw2")] = 30.0, -20.0
    sim.set_configuration(q, qd)
    row = engine_row(sim)
    h = [np.array([row[f"{w}.h[{c}]"] for c in (1, 2, 3)]) for w in ("rw1", "rw2")]
    np.testing.assert_allclose(
        [np.linalg.norm(h[0]), np.linalg.norm(h[1])], [0.02 * 30.0, 0.03 * 20.0], rtol=1e-12, atol=0
    )
    for N in (1, 2, 3, 4):
        _, H_sys, _, _ = inv.momentum(row, N)
        KE, _ = inv.energy(row, N)
        np.testing.assert_allclose(H_sys[0], h[0] + h[1], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(KE[0], 0.5 * (0.02 * 30.0**2 + 0.03 * 20.0**2), rtol=1e-12, atol=0)


def engine_run(path, model, q, qd, h, n=20, dt=0.01):
    """RK4 run with internal step h, one row per dt, through the streaming writer."""
    from mbsfmu.sim.simulator import Simulator
    from mbsfmu.trajectory import write_trajectory

    sim = Simulator(model, h_max=h)
    sim.set_configuration(q, qd)
    with write_trajectory(path) as w:
        w.write(engine_row(sim))
        for _ in range(n):
            sim.step(dt)
            w.write(engine_row(sim, sim.t))
    return path


def test_short_engine_run_conserves_and_converges(tmp_path, rng):
    """Wheel model without gravity: the checker agrees with the engine row by row, p_sys = 0, and
    the conserved quantities' errors shrink ~16x when RK4's step halves (fourth order)."""
    model = wheel_model()
    q, qd = model.random_state(rng)
    conserved = ("P_sys_constant", "H_sys_constant", "R_parabolic", "energy_constant")
    checks = {
        "engine_agreement": 1e-12,
        "p_sys_zero": "rel:1e-12",
        "P_sys_constant": "rel:1e-6",
        "H_sys_constant": "rel:1e-6",
        "R_parabolic": 1e-6,
        "energy_constant": "rel:1e-6",
        "energy_balance": "rel:1e-6",
    }
    errors = {}
    for h in (0.01, 0.005):
        path = engine_run(tmp_path / f"run_{h}.csv", model, q, qd, h)
        for N in (1, 2, 3, 4):
            report, ok = inv.run_check(path, N, checks)
            assert ok, inv.summary_table(report)
        errors[h] = {c: report["checks"][c]["max_abs"] for c in conserved}
    for c in conserved:
        assert errors[0.01][c] / errors[0.005][c] > 10, (c, errors)
    report, ok = inv.run_check(path, 1, {"KE_constant": "rel:1e-3"})  # the springs exchange KE and PE
    assert not ok


# ---- command line ---------------------------------------------------------------------------
def cli_wired() -> bool:
    """Whether ``mbsfmu check`` is registered in mbsfmu/cli.py (else run ``-m mbsfmu.checker``)."""
    import argparse

    from mbsfmu.cli import build_parser

    subs = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return any("check" in a.choices for a in subs)


def run_cli(*args):
    cmd = [sys.executable, "-m", "mbsfmu", "check"] if cli_wired() else [sys.executable, "-m", "mbsfmu.checker"]
    return subprocess.run([*cmd, *map(str, args)], capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.fixture
def files(tmp_path, rng):
    cols, known = free_bodies(rng, T_GRID)
    good = tmp_path / "good.csv"
    save_trajectory(good, with_engine_columns(cols, known))
    kicked, _ = free_bodies(rng, T_GRID, kick=(1.0, np.array([0.1, 0.0, 0.0])))
    bad = tmp_path / "kicked.csv"
    save_trajectory(bad, kicked)
    return good, bad


@pytest.mark.integration
def test_cli_exit_codes_table_and_json(files, tmp_path):
    good, bad = files
    out = tmp_path / "report.json"
    r = run_cli(good, "--procedure", "3", "--json", out)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "engine_agreement" in r.stdout and "p_sys_zero" in r.stdout and "overall: PASS" in r.stdout
    report = json.loads(out.read_text())
    assert report["passed"] and report["procedure"] == 3
    r = run_cli(bad, "--procedure", "2", "--expect", "P_sys_constant=1e-9", "--expect", "H_sys_constant")
    assert r.returncode == 1 and "P_sys_constant" in r.stdout and "overall: FAIL" in r.stdout
    for args, msg in (
        ((good, "--procedure", "7"), "unknown procedure 7"),
        ((good, "--expect", "H_const=1"), "unknown check 'H_const'"),
        ((tmp_path / "none.csv",), "cannot read trajectory file"),
        ((bad, "--expect", "engine_agreement"), "engine_agreement needs engine columns"),
    ):
        r = run_cli(*args)
        assert r.returncode == 2 and "mbsfmu: error: " in r.stderr and msg in r.stderr, r.stderr
        assert "Traceback" not in r.stderr


def test_cli_missing_column_names_it(files, tmp_path):
    good, _ = files
    traj = read_trajectory(good)
    cols = {k: traj[k] for k in traj if k != "b1.I_b1[xz]"}
    path = tmp_path / "cut.csv"
    save_trajectory(path, cols)
    args = __import__("argparse").Namespace(trajectory=str(path), procedure=4, expect=None, json=None)
    with pytest.raises(MbsError, match=r"procedure 4 .*: b1.I_b1\[xz\]"):
        check_command.main_check(args)
    assert check_command.main([str(path), "--procedure", "1"]) == 0
    assert check_command.main([str(path), "--procedure", "4"]) == 2


# ---- another simulator's output ---------------------------------------------------------------
MUJOCO_XML = """<mujoco><option gravity="0.5 -1 -9.81" timestep="0.001" integrator="RK4"/><worldbody>
<body name="a" pos="0 0 1"><freejoint/><geom type="box" size=".1 .2 .3" pos="0.1 0 0" mass="2"/>
 <body name="b" pos="0.3 0 0"><joint type="hinge" axis="0 1 0"/>
  <geom type="capsule" size=".05" fromto="0 0 0 .4 0 0.1" mass="1"/></body>
</body></worldbody></mujoco>"""


@pytest.mark.integration
def test_mujoco_export_is_checked_like_ours(tmp_path, rng):
    """A MuJoCo run exported with the documented procedure-2 columns (xipos, ximat diag(inertia)
    ximat^T, mj_objectVelocity at the CoM) passes H_sys constant, R parabolic, E constant."""
    mujoco = pytest.importorskip("mujoco")
    m = mujoco.MjModel.from_xml_string(MUJOCO_XML)
    d = mujoco.MjData(m)
    d.qvel[:] = rng.normal(size=m.nv)
    path = tmp_path / "mujoco.csv"
    from mbsfmu.trajectory import write_trajectory

    with write_trajectory(path) as w:
        for k in range(201):
            if k:
                for _ in range(5):
                    mujoco.mj_step(m, d)
            mujoco.mj_forward(m, d)
            row = {"time": d.time, **{f"g[{c + 1}]": m.opt.gravity[c] for c in range(3)}}
            for b in range(1, m.nbody):
                name, X, v6 = m.body(b).name, d.ximat[b].reshape(3, 3), np.zeros(6)
                mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_BODY, b, v6, 0)  # [omega; v_CoM], world
                I = X @ np.diag(m.body_inertia[b]) @ X.T
                row[f"{name}.m"] = m.body_mass[b]
                row.update({f"{name}.I[{lab}]": I[r, c] for lab, r, c in SYM})
                for c in range(3):
                    row[f"{name}.omega[{c + 1}]"], row[f"{name}.rdot_abs[{c + 1}]"] = v6[c], v6[3 + c]
                    row[f"{name}.r_abs[{c + 1}]"] = d.xipos[b, c]
            w.write(row)
    checks = {
        "p_sys_zero": "rel:1e-12",
        "H_sys_constant": "rel:1e-8",
        "R_parabolic": 1e-8,
        "energy_constant": "rel:1e-8",
    }
    report, ok = inv.run_check(path, 2, checks, energy_procedure=1)  # absolute: momentum 2, energy 1
    assert ok, inv.summary_table(report)
    assert report["energy_procedure"] == 1
    assert "energy procedure 1 (inertial axes, absolute)" in inv.summary_table(report)
    with pytest.raises(MbsError, match=r"energy by procedure 2 .* 18 column\(s\) .*: a.r_cm\[1\], "):
        inv.run_check(path, 2, ["energy_constant"])


# ---- what the checker cannot compute, it never certifies ------------------------------------
def _read_by_procedure_1(cols) -> list[str]:
    """The columns procedure 1 (momentum and energy) and engine_agreement read."""
    fields = {*inv.MOMENTUM_BODY[1], *inv.ENERGY_BODY[1], "m", "h", "Iw", "k", "x", "R", "Rdot", "g"}
    out = []
    for c in cols:
        owner, _, field = c.split("[", 1)[0].rpartition(".")
        if c.startswith("engine.") or (field or owner) in fields or c.split("[", 1)[0] in fields:
            out.append(c)
    return out


def _report_without_warnings(cols, checks):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning reaches the user
        return inv.conservation_report(cols, checks, 1)


@pytest.mark.parametrize(
    "column, value",
    [
        ("b1.omega[1]", 1e308),  # finite, but its products overflow
        ("b2.r_cm[2]", np.nan),
        ("b1.m", np.inf),
        ("rw.h[3]", -np.inf),
        ("sp.x", np.nan),
        ("engine.KE", np.nan),  # the engine's value: engine_agreement cannot compare it
    ],
)
def test_a_cell_that_cannot_be_computed_fails_its_checks_by_name(rng, column, value):
    cols, known = free_bodies(rng, T_GRID)
    cols = with_engine_columns(cols, known)
    cols[column] = cols[column].copy()
    cols[column][7] = value
    report = _report_without_warnings(cols, {name: "rel:1e-6" for name in all_checks((0, 0, 0))})
    assert not report["passed"]
    failed = {n: e for n, e in report["checks"].items() if "not_computable" in e}
    assert failed, inv.summary_table(report)
    for e in failed.values():
        assert not e["passed"] and e["max_abs"] is None
        assert f"row 8 (t = {T_GRID[7]:.6g} s), column {column} = " in e["not_computable"]
    for e in report["checks"].values():  # what passes was computed: finite numbers
        assert not e["passed"] or all(np.isfinite(e[k]) for k in ("max_abs", "scale", "drift_per_s"))
    table = inv.summary_table(report)
    assert "overall: FAIL" in table and f"column {column}" in table
    json.dumps(report, allow_nan=False)


def test_any_non_finite_cell_is_never_certified(rng):
    """Property: one NaN or inf cell in any column procedure 1 reads, at any row: the report never
    passes (30 examples in the fast profile). (A huge finite cell fails only where its products
    overflow, as omega = 1e308 does above: 1e308 in r_abs with g = 0 enters PE as 0 x 1e308 = 0,
    exactly, so that check computed what it bounds.)"""
    from hypothesis import given
    from hypothesis import strategies as st

    cols, known = free_bodies(rng, T_GRID)
    cols = with_engine_columns(cols, known)
    names = _read_by_procedure_1(cols)
    checks = {name: "rel:1e-6" for name in all_checks((0, 0, 0))}
    assert _report_without_warnings(cols, checks)["passed"]

    @given(
        st.sampled_from(names),
        st.integers(0, len(T_GRID) - 1),
        st.sampled_from([np.nan, np.inf, -np.inf]),
    )
    def never_passes(column, row, value):
        bad = dict(cols)
        bad[column] = cols[column].copy()
        bad[column][row] = value
        try:
            report = _report_without_warnings(bad, checks)
        except MbsError:  # refused as bad input (e.g. a total mass that is not positive): not certified
            return
        assert not report["passed"], (column, row, value, inv.summary_table(report))

    never_passes()


def test_check_takes_a_run_folder_or_its_trajectory_csv(tmp_path, capsys):
    """`mbsfmu check out/X/trajectory.csv` (the --help example) failed: the body records are in
    records.csv beside it. A run folder or its trajectory.csv is read with records.csv joined."""
    from mbsfmu.cli import main

    out = tmp_path / "run"
    scn = tmp_path / "spacecraft_free.yaml"  # the bundled scenario, plots off (matplotlib adds nothing here)
    text = (ROOT / "scenarios" / "spacecraft_free.yaml").read_text(encoding="utf-8")
    scn.write_text(text.replace("model: models/", f"model: {ROOT}/scenarios/models/") + "\noutputs: {plots: false}\n")
    assert main(["run", str(scn), "-o", str(out), "--quick", "--no-progress"]) == 0
    capsys.readouterr()
    for target in (out / "trajectory.csv", out):
        assert main(["check", str(target), "--procedure", "1"]) == 0, capsys.readouterr().err
        text = capsys.readouterr().out
        assert "3 bodies and 4 reaction wheels" in text and "overall: PASS" in text
    assert main(["check", str(tmp_path)]) == 2
    assert f"{tmp_path} is a folder without trajectory.csv" in capsys.readouterr().err


# ---- the energy checks' scale: the magnitudes of the terms summed, not the motion energy ----
SPRING_CAMPAIGN = ROOT / "tests" / "data" / "campaign_spring.yaml"
# run 1116 of `mbsfmu montecarlo tests/data/campaign_spring.yaml --seed 1 --runs 2000`: the spring
# holds the mass at q = m g / k = 0.1502 m, so it starts 2e-4 m from equilibrium (motion energy ~4e-7 J)
# while each PE term is ~0.9 J
RUN_1116 = {"body.mass.mass": 0.5898392987370289, "joint.q1.spring.k": 38.52268914932917, "initial.q.q1": 0.15}


def _spring_run(tmp_path, point, **changes):
    from dataclasses import replace

    from mbsfmu.campaign.points import apply_point
    from mbsfmu.scenario.run import run_scenario
    from mbsfmu.scenario.spec import load_scenario

    base = load_scenario(SPRING_CAMPAIGN)
    scn = replace(apply_point(base, point), records=True, **changes)
    return run_scenario(scn, tmp_path, progress=False)


def test_energy_balance_near_equilibrium_is_relative_to_the_terms_summed(tmp_path):
    """Run 1116 closes its balance to 1.1e-16 J (one ulp of the 0.43 J it sums): PASS at rel 1e-10.
    The scale is max over rows of KE + k x^2 / 2 + m |g| |rbar| + |W_in| + |W_diss| = 1.302 J
    (0.434 J spring + 0.868 J gravity), not the ~4e-7 J the state near equilibrium exchanges
    (on that scale the round-off alone read 2.7e-10 and FAILed)."""
    report = _spring_run(tmp_path, RUN_1116)
    e = report["checks"]["energy_balance"]
    m, k, g = 0.5898392987370289, 38.52268914932917, 9.81
    q = read_trajectory(tmp_path / "trajectory.csv")["q.q1"].max()  # 0.15006: the terms grow with q
    # KE, W_in, W_diss stay below 1e-7 J: 1e-7 of the scale
    np.testing.assert_allclose(e["scale"], 0.5 * k * q * q + m * g * q, rtol=1e-6, atol=0)
    assert e["max_abs"] <= 8 * np.finfo(float).eps * e["scale"]  # round-off: a few terms of ~1.3 J
    assert e["passed"] and report["passed"]


def test_energy_balance_still_fails_a_real_energy_error(tmp_path):
    """On the same scale a genuine error fails: RK4 with h = 10 ms on a 0.1 m swing (omega h = 0.08)
    breaks the balance by 3e-9 J = 4e-9 of the 0.69 J scale (> 1e-10); h = 1 ms cuts it ~6000x to
    5e-13 J (O(h^4) truncation: >= 16x per halving) and passes. An energy made with a spring
    constant 1e-6 off the dynamics' k is off by 1e-6 of the spring's energy change and fails."""
    from mbsfmu.scenario.spec import load_scenario
    from mbsfmu.trajectory import read_run

    integrator = load_scenario(SPRING_CAMPAIGN).integrator
    swing = {**RUN_1116, "initial.q.q1": 0.05}
    coarse = _spring_run(tmp_path / "h10ms", swing, integrator={**integrator, "method": "rk4", "h_max": 0.01})
    fine = _spring_run(tmp_path / "h1ms", swing, integrator={**integrator, "method": "rk4", "h_max": 0.001})
    c, f = coarse["checks"]["energy_balance"], fine["checks"]["energy_balance"]
    assert not c["passed"] and c["max_rel"] > 10 * c["bound"]
    assert f["passed"] and c["max_abs"] > 1000 * f["max_abs"]

    assert _spring_run(tmp_path / "dop853", swing)["checks"]["energy_balance"]["passed"]
    traj = read_run(tmp_path / "dop853")
    columns = {name: traj[name] for name in traj.names}
    columns["q1.k"] = columns["q1.k"] * (1 + 1e-6)
    report = inv.conservation_report(Trajectory(columns, traj.source), {"energy_balance": "rel:1e-10"})
    wrong_k = report["checks"]["energy_balance"]
    assert not wrong_k["passed"] and wrong_k["max_rel"] > 10 * wrong_k["bound"]


# ---- a run folder whose two files disagree in rows -----------------------------------------
def _keep_rows(path, n: int) -> None:
    """Keep the header and the first n data rows of a CSV file (a truncated copy)."""
    lines = path.read_text().splitlines(keepends=True)
    header = next(k for k, line in enumerate(lines) if not line.startswith("#")) + 1
    path.write_text("".join(lines[: header + n]))


def _spring_pendulum_run(tmp_path):
    """`mbsfmu run` of the spring pendulum for 0.4 s at dt = 10 ms (41 rows in each file): its folder."""
    from mbsfmu.cli import main

    scn = tmp_path / "spring.yaml"
    model = ROOT / "scenarios" / "models" / "spring_pendulum.yaml"
    scn.write_text(
        f"version: 1\nmodel: {model}\nduration: 0.4\ndt: 0.01\nchecks: {{energy_balance: rel:1.0e-10}}\n"
        "outputs: {plots: false}\n"  # matplotlib adds nothing here
    )
    assert main(["run", str(scn), "-o", str(tmp_path / "run"), "--no-progress"]) == 0
    return tmp_path / "run"


def test_check_refuses_a_run_folder_whose_files_disagree_in_rows(tmp_path, capsys):
    """Regression (issue 37 item 4): records.csv of 19 rows beside trajectory.csv of 41 was checked
    on 19 rows and PASSed, silently. A run writes both files row by row (one unbuffered write per
    row, trajectory.csv first), so they hold the same rows: any other count is bad input (exit 2)
    naming both files and counts, and the suggestion checks records.csv on its own."""
    from mbsfmu.cli import main

    out = _spring_pendulum_run(tmp_path)
    assert main(["check", str(out), "--expect", "energy_balance"]) == 0  # the run as it left its folder
    capsys.readouterr()
    _keep_rows(out / "records.csv", 19)
    assert main(["check", str(out), "--expect", "energy_balance"]) == 2
    err = capsys.readouterr().err
    assert f"{out / 'records.csv'} has 19 rows, {out / 'trajectory.csv'} 41" in err, err
    assert "report.json says the run completed" in err
    suggestion = re.search(r"`mbsfmu check (\S+)`", err)
    assert suggestion and main(["check", suggestion[1], "--expect", "energy_balance"]) == 0
    assert "19 rows" in capsys.readouterr().out
    (out / "report.json").unlink()  # no report (a killed run): still only one row fewer may be told apart
    assert main(["check", str(out / "trajectory.csv")]) == 2
    assert "has 19 rows" in capsys.readouterr().err
    _keep_rows(out / "trajectory.csv", 10)  # records.csv longer than trajectory.csv: never written so
    assert main(["check", str(out)]) == 2
    assert f"{out / 'records.csv'} has 19 rows, {out / 'trajectory.csv'} 10" in capsys.readouterr().err


def test_check_of_a_run_stopped_between_its_two_writes_says_which_rows_it_checked(tmp_path, capsys):
    """The one legitimate difference: a run stopped after writing a row of trajectory.csv and
    before its row of records.csv (its report.json says it stopped, or it left none). The rows both
    hold are checked and the table and the JSON report say so; a completed run's report refuses."""
    from mbsfmu.cli import main

    out = _spring_pendulum_run(tmp_path)
    _keep_rows(out / "records.csv", 40)
    assert main(["check", str(out)]) == 2  # report.json: completed
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    report["interrupted"] = "interrupted by Ctrl-C at t = 0.4 s"
    (out / "report.json").write_text(json.dumps(report))
    assert main(["check", str(out), "--expect", "energy_balance", "--json", str(tmp_path / "r.json")]) == 0
    text = capsys.readouterr().out
    note = (
        f"{out / 'records.csv'} has 40 rows, {out / 'trajectory.csv'} 41: the run stopped between writing the two "
        "files (report.json: interrupted by Ctrl-C at t = 0.4 s); checked the 40 rows both hold (t = 0 .. 0.39 s)"
    )
    assert f"note: {note}" in text and "40 rows, t = 0 .. 0.39 s" in text, text
    assert json.loads((tmp_path / "r.json").read_text())["notes"][0].startswith(note)
    (out / "report.json").unlink()
    assert (
        main(["check", str(out)]) == 0 and "the run stopped between writing the two files;" in capsys.readouterr().out
    )
