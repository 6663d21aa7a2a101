"""Closed kinematic loops: cut-joint constraints, multipliers (No's method, Eq. 24) and
coordinate partitioning (PyMbs Background), against finite differences, the Freudenstein closed form,
Pinocchio's constrained dynamics, each other, and energy conservation; bad loop input."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import replace

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

import mbsfmu
from mbsfmu.engine.dynamics import closed_loops as loop_dyn
from mbsfmu.engine.spatial import rpy_to_R
from mbsfmu.engine.spec.description import Loop, LoopSide
from mbsfmu.errors import InputError, ModelError
from mbsfmu.io.model_file import spec_from_dict
from mbsfmu.scenario import load_scenario, run_scenario
from mbsfmu.sim.simulator import Simulator
from mbsfmu.trajectory import read_trajectory
from tests.support.paths import MODELS, ROOT
from tests.support.trees import random_tree

FOURBAR = MODELS / "fourbar.yaml"
A_CRANK, B_COUPLER, C_ROCKER, D_GROUND = 0.2, 0.6, 0.5, 0.7  # fourbar.yaml link lengths [m]


def load(name: str) -> mbsfmu.Model:
    return mbsfmu.load_model(MODELS / name)


def fourbar_doc() -> dict:
    return yaml.safe_load(FOURBAR.read_text())


def model_from(doc: dict, tmp_path, name: str = "model.yaml") -> mbsfmu.Model:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return mbsfmu.load_model(path)


def R_to_rpy(R: np.ndarray) -> tuple:
    """Inverse of rpy_to_R (R = Rz(yaw) Ry(pitch) Rx(roll)), pitch in (-pi/2, pi/2)."""
    return (math.atan2(R[2, 1], R[2, 2]), math.asin(-np.clip(R[2, 0], -1, 1)), math.atan2(R[1, 0], R[0, 0]))


def closed_loop(model, name, kind, body_a, body_b, rng) -> Loop:
    """A cut joint of ``kind`` between two bodies, placed so that it is closed at the neutral
    configuration: frame b is frame a seen from body b."""
    kin = model.forward_kinematics(model.neutral())
    ia = 0 if body_a == "world" else model.body_index[body_a]
    ib = 0 if body_b == "world" else model.body_index[body_b]
    ra, rpy_a = rng.uniform(-0.5, 0.5, 3), rng.uniform(-1.0, 1.0, 3)
    P, E = kin.p[ia] + kin.R[ia] @ ra, kin.R[ia] @ rpy_to_R(rpy_a)
    rb, Eb = kin.R[ib].T @ (P - kin.p[ib]), kin.R[ib].T @ E
    axis = rng.normal(size=3)
    return Loop(
        name=name,
        type=kind,
        a=LoopSide(body_a, tuple(ra), tuple(rpy_a)),
        b=LoopSide(body_b, tuple(rb), R_to_rpy(Eb)),
        axis=tuple(axis / np.linalg.norm(axis)),
    )


def random_looped(rng, n: int, loops: list[tuple[str, str, str]]) -> mbsfmu.Model:
    """A random branched tree (free base, revolute/prismatic/spherical joints) with cut joints
    (kind, body a, body b) closed at the neutral configuration."""
    tree = random_tree(rng, n, free_base=True, types=("revolute", "prismatic", "spherical"))
    cuts = tuple(closed_loop(tree, f"loop{k}", kind, a, b, rng) for k, (kind, a, b) in enumerate(loops))
    return mbsfmu.Model(replace(tree.spec, loops=cuts), source="random")


def consistent_state(model, rng, spread=0.3):
    """A random state on the loops: random perturbation of the (assembled) initial state, then
    assembly (independent joints held), random rates made consistent."""
    q0, _ = model.initial_state()
    q = model.integrate(q0, spread * rng.normal(size=model.nv))
    return model.assemble(q, rng.normal(size=model.nv))


# ---- constraint rows: Jacobian and acceleration bias ------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_jacobian_and_bias_match_finite_differences(seed):
    """A = dPhi/dq (mapped to the rates, quaternion joints included) and gamma = -Adot qd for
    every cut-joint type at random, inconsistent states: central differences along q (+) eps e_k
    and along the motion q (+) t qd (qdd = 0). Phidot = A qd row by row."""
    rng = np.random.default_rng(seed)
    model = random_looped(
        rng, 7, [("ball", "b1", "b4"), ("revolute", "b2", "world"), ("prismatic", "b5", "b3"), ("planar", "b6", "b0")]
    )
    q, qd = model.random_state(rng)
    ld = model.loop_constraints(q, qd)
    eps = 1e-6
    A_fd = np.column_stack(
        [
            (
                model.loop_constraints(model.integrate(q, eps * e)).Phi
                - model.loop_constraints(model.integrate(q, -eps * e)).Phi
            )
            / (2 * eps)
            for e in np.eye(model.nv)
        ]
    )
    np.testing.assert_allclose(ld.A, A_fd, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(ld.Phidot, ld.A @ qd, rtol=1e-12, atol=1e-12)

    def Phidot(t):
        qt = model.integrate(q, t * qd)
        return model.loop_constraints(qt).A @ qd

    gamma_fd = -(Phidot(eps) - Phidot(-eps)) / (2 * eps)
    np.testing.assert_allclose(ld.gamma, gamma_fd, rtol=1e-6, atol=1e-6)


# ---- position level: assembly against the Freudenstein equation -------------------------
def freudenstein(theta2: float) -> tuple[float, float]:
    """The two rocker angles theta4 of the four-bar at crank angle theta2 (Freudenstein:
    K1 cos t4 - K2 cos t2 + K3 = cos(t2 - t4), K1 = d/a, K2 = d/c, K3 = (a^2 - b^2 + c^2 + d^2)/(2 a c))."""
    a, b, c, d = A_CRANK, B_COUPLER, C_ROCKER, D_GROUND
    K1, K2, K3 = d / a, d / c, (a * a - b * b + c * c + d * d) / (2 * a * c)
    A = math.cos(theta2) - K1 - K2 * math.cos(theta2) + K3
    B = -2.0 * math.sin(theta2)
    C = K1 - (K2 + 1.0) * math.cos(theta2) + K3
    disc = math.sqrt(B * B - 4 * A * C)
    return tuple(2.0 * math.atan2(-B + s * disc, 2 * A) for s in (-1.0, 1.0))


def test_assembly_matches_freudenstein_closed_form():
    """The crank angle q1 is held (declared independent); assembly finds q2, q3. Over a full
    crank turn the rocker angle q3 is Freudenstein's open-branch solution and the coupler angle
    q1 + q2 closes the vector loop a e^{i t2} + b e^{i t3} = d + c e^{i t4}."""
    model = load("fourbar.yaml")
    q, _ = model.initial_state()
    worst = 0.0
    for theta2 in np.linspace(0.0, 2 * np.pi, 37)[1:]:
        q[0] = theta2
        q, _ = model.assemble(q)  # previous solution as the guess: same branch
        wrapped = [abs(math.remainder(q[2] - t4, 2 * np.pi)) for t4 in freudenstein(theta2)]
        t4 = freudenstein(theta2)[int(np.argmin(wrapped))]
        assert np.argmin(wrapped) == 0 and 0 < q[2] < np.pi  # one branch: the open one, rocker tip above ground
        z3 = D_GROUND + C_ROCKER * np.exp(1j * t4) - A_CRANK * np.exp(1j * theta2)
        worst = max(worst, min(wrapped), abs(math.remainder(q[0] + q[1] - np.angle(z3), 2 * np.pi)))
        assert q[0] == theta2  # held exactly
    print(f"four-bar assembly vs Freudenstein over a crank turn: max angle error {worst:.3g} rad")
    assert worst <= 1e-12


# ---- the independent oracle: Pinocchio's constrained dynamics ---------------------------
def pin_constraints(pin, model, pm):
    """One Pinocchio CONTACT_3D constraint per cut joint, between the same two points."""
    cms = pin.StdVec_RigidConstraintModel()
    for c in model.loops.closures:
        ends = []
        for i, r in ((c.a, c.ra), (c.b, c.rb)):
            jid = 0 if i == 0 else pm.getJointId(model.joint_names[i - 1])
            ends += [jid, pin.SE3(np.eye(3), np.asarray(r, dtype=float))]
        cms.append(pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, *ends, pin.ReferenceFrame.LOCAL))
    cds = pin.StdVec_RigidConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    return cms, cds


@pytest.mark.parametrize("case", ["rssr", "fourbar", "random"])
def test_constrained_accelerations_match_pinocchio(case, rng):
    """qdd of No's method, Eq. 24 at random consistent states and torques equals Pinocchio's
    constraintDynamics with the cut joints built in Pinocchio itself (CONTACT_3D between the
    two anchor points): the spatial RSSR (ball cut, a spherical tree joint), the planar four-bar
    (revolute cut: 5 rows of rank 2; Pinocchio's 3 rows, one redundant), and a random 7-body tree
    on a free base with two ball cut joints. Where the rows are independent the cut-joint
    forces agree too: lambda is the force on body b, Pinocchio's the force on frame a in its axes
    (lambda = -R_a f)."""
    # the oracle is a test extra: without it (the minimum-versions job, core deps only) this skips,
    # the rest of the module runs
    pin = pytest.importorskip("pinocchio")
    from tests.support.pin_twin import q_to_pin, to_pinocchio

    if case == "random":
        model = random_looped(rng, 7, [("ball", "b2", "b5"), ("ball", "b6", "world")])
    else:
        model = load(f"{case}.yaml")
    pm = to_pinocchio(model)
    pd = pm.createData()
    cms, cds = pin_constraints(pin, model, pm)
    pin.initConstraintDynamics(pm, pd, cms, cds)
    worst = 0.0
    for _ in range(8):
        q, qd = consistent_state(model, rng)
        tau = rng.normal(size=model.nv)
        qdd, lam = model.constrained_forward_dynamics(q, qd, tau)
        prox = pin.ProximalSettings(1e-14, 1e-12, 200)
        qdd_pin = pin.constraintDynamics(pm, pd, q_to_pin(model, q), qd, tau, cms, cds, prox)
        scale = max(1.0, np.abs(qdd_pin).max())
        np.testing.assert_allclose(qdd, qdd_pin, rtol=1e-9, atol=1e-9 * scale)
        worst = max(worst, np.abs(qdd - qdd_pin).max() / scale)
        A = model.loop_constraints(q).A
        if np.linalg.matrix_rank(A) == A.shape[0]:  # else only A^T lambda is determined (tested below)
            kin = model.forward_kinematics(q)
            for c, cd in zip(model.loops.closures, cds):
                np.testing.assert_allclose(
                    lam[c.rows],
                    -kin.R[c.a] @ cd.contact_force.linear,
                    rtol=1e-8,
                    atol=1e-8 * max(1.0, np.abs(lam).max()),
                )
    print(f"{case}: max |qdd - qdd_pinocchio| / max(1, |qdd|) = {worst:.3g}")


# ---- multipliers, redundancy and partitioning --------------------------------------------
@pytest.mark.parametrize("name", ["fourbar.yaml", "crank_slider.yaml"])
def test_partitioning_agrees_with_multipliers(name, rng):
    """PyMbs Background's reduced ODE J^T M J uddot = J^T (tau - C - M b) and No's Eq. 24 give
    the same qdd and lambda at random consistent states; qdd satisfies A qdd = gamma."""
    model = load(name)
    for _ in range(10):
        q, qd = consistent_state(model, rng, spread=1.0)
        tau = rng.normal(size=model.nv)
        qdd_m, lam_m = model.constrained_forward_dynamics(q, qd, tau, method="multipliers")
        qdd_p, lam_p = model.constrained_forward_dynamics(q, qd, tau, method="partitioning")
        np.testing.assert_allclose(qdd_p, qdd_m, rtol=1e-10, atol=1e-10 * max(1.0, np.abs(qdd_m).max()))
        np.testing.assert_allclose(lam_p, lam_m, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(lam_m).max()))
        ld = model.loop_constraints(q, qd)
        np.testing.assert_allclose(ld.A @ qdd_m, ld.gamma, rtol=0, atol=1e-10 * max(1.0, np.abs(qdd_m).max()))


def test_redundant_rows_get_minimum_norm_multipliers(rng):
    """The planar four-bar's revolute cut joint has 5 rows of rank 2. lambda is the minimum-norm
    solution: zero on the rows that never act (out of plane force, axis moments), and
    M qdd + C = tau - A^T lambda holds. Doubling the cut joint (10 rows, rank 2) leaves qdd
    unchanged and splits lambda evenly."""
    model = load("fourbar.yaml")
    doc = fourbar_doc()
    doc["loops"].append(dict(doc["loops"][0], name="closure_twin"))
    twin = mbsfmu.Model(spec_from_dict(doc, source="twin"), source="twin")
    for _ in range(5):
        q, qd = consistent_state(model, rng, spread=1.0)
        tau = rng.normal(size=model.nv)
        qdd, lam = model.constrained_forward_dynamics(q, qd, tau)
        assert np.abs(lam[2:]).max() <= 1e-12 * np.abs(lam).max()
        A = model.loop_constraints(q).A
        lhs = model.inverse_dynamics(q, qd, qdd)  # M qdd + C (springs and dampers: none)
        np.testing.assert_allclose(lhs, tau - A.T @ lam, rtol=1e-10, atol=1e-10 * np.abs(lhs).max())
        qdd2, lam2 = twin.constrained_forward_dynamics(q, qd, tau)
        np.testing.assert_allclose(qdd2, qdd, rtol=1e-10, atol=1e-10 * np.abs(qdd).max())
        np.testing.assert_allclose(lam2[:5], lam / 2, rtol=1e-9, atol=1e-9 * np.abs(lam).max())
        np.testing.assert_allclose(lam2[5:], lam / 2, rtol=1e-9, atol=1e-9 * np.abs(lam).max())


def test_kkt_solve_handles_rank_deficiency():
    """The Schur-complement solver on a hand-made KKT system with a repeated and a zero row
    gives the solution of the full-rank system and the minimum-norm multipliers."""
    rng = np.random.default_rng(5)
    L = rng.normal(size=(4, 4))
    M = L @ L.T + 4 * np.eye(4)
    h, a = rng.normal(size=4), rng.normal(size=4)
    x1, lam1 = loop_dyn.kkt_solve(M, h, a[None, :], np.array([0.3]))
    x2, lam2 = loop_dyn.kkt_solve(M, h, np.vstack([a, a, np.zeros(4)]), np.array([0.3, 0.3, 0.0]))
    K = np.block([[M, a[:, None]], [a[None, :], np.zeros((1, 1))]])
    ref = np.linalg.solve(K, np.r_[h, 0.3])
    np.testing.assert_allclose(x1, ref[:4], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x2, ref[:4], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(lam2, [ref[4] / 2, ref[4] / 2, 0.0], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["fourbar.yaml", "crank_slider.yaml"])
def test_loop_inverse_dynamics_round_trip(name, rng):
    """tau_u = J^T (RNEA(q, qd, J uddot + b) - tau_passive) on the independent coordinate gives
    back the acceleration it came from, with either forward formulation."""
    model = load(name)
    part = model.loop_partition()
    assert [model.joint_names[k] for k in part.iu] == ["q1"]
    for _ in range(5):
        q, qd = consistent_state(model, rng, spread=1.0)
        udd = rng.normal(size=part.iu.size)
        tau_u = model.constrained_inverse_dynamics(q, qd, udd)
        tau = np.zeros(model.nv)
        tau[part.iu] = tau_u
        for method in ("multipliers", "partitioning"):
            qdd, _ = model.constrained_forward_dynamics(q, qd, tau, method=method)
            np.testing.assert_allclose(qdd[part.iu], udd, rtol=1e-9, atol=1e-9)


def test_prismatic_cut_joint_equals_a_tree_prismatic_joint():
    """The crank-slider built two ways: slider on a tree prismatic joint with a revolute cut at
    the wrist pin (crank_slider.yaml, damper removed), or slider hinged to the rod in the tree
    with a prismatic cut joint to the ground rail. The crank's motion under a torque is the same."""
    doc = yaml.safe_load((MODELS / "crank_slider.yaml").read_text())
    del doc["bodies"][2]["joint"]["spring"]
    rail = copy.deepcopy(doc)
    rail["bodies"][2]["parent"] = "rod"
    rail["bodies"][2]["joint"] = {
        "name": "q3",
        "type": "revolute",
        "axis": [0, 0, 1],
        "origin": {"xyz": [0.35, 0, 0]},
        "actuated": False,
    }
    rail["loops"] = [
        {
            "name": "rail",
            "type": "prismatic",
            "a": {"body": "world"},
            "b": {"body": "slider"},
            "axis": [1, 0, 0],
            "independent": ["q1"],
        }
    ]
    rail["initial"]["q"]["q3"] = 0.14
    crank = []
    for d in (doc, rail):
        sim = Simulator(
            mbsfmu.Model(spec_from_dict(d, source="cs"), source="cs"), "dop853", rtol=1e-12, atol=1e-12, h_max=0
        )
        sim.set_input("q1.tau", 0.3)
        for _ in range(5):
            sim.step(0.1)
        crank.append(np.r_[sim.q[0], sim.qd[0]])
        assert max(o["phi"] for o in sim.loop_outputs().values()) <= 1e-12
    np.testing.assert_allclose(crank[1], crank[0], rtol=1e-9, atol=1e-9)


def test_planar_cut_joint_gives_planar_free_flight():
    """A plate on a free joint held in the world x-y plane by a planar cut joint, gravity with an
    out-of-plane part: assembly removes the out-of-plane rates; the CoM then flies the in-plane
    parabola, the spin about z stays constant, and the plane carries the weight's z part: the
    offset row's force on the plate, -n lambda, is m |g_z| = 6 N up, so lambda = -6 N."""
    doc = {
        "version": 1,
        "name": "plate",
        "gravity": [0.0, -9.81, -3.0],
        "bodies": [
            {
                "name": "plate",
                "parent": "world",
                "joint": {"name": "free", "type": "free"},
                "mass": 2.0,
                "com": [0.1, 0.05, 0.0],
                "inertia": {"Ixx": 0.02, "Iyy": 0.03, "Izz": 0.04, "Ixy": 0.005},
            }
        ],
        "loops": [
            {"name": "table", "type": "planar", "a": {"body": "world"}, "b": {"body": "plate"}, "axis": [0, 0, 1]}
        ],
        "initial": {"q": {"free": [0, 0, 0, 1, 0, 0, 0]}, "qd": {"free": [1.0, 2.0, 0.7, 0.3, -0.2, 1.5]}},
    }
    model = mbsfmu.Model(spec_from_dict(doc, source="plate"), source="plate")
    sim = Simulator(model, "dop853", rtol=1e-12, atol=1e-12, h_max=0)
    np.testing.assert_allclose(sim.qd[[2, 3, 4]], 0.0, atol=1e-14)  # vz, wx, wy removed
    np.testing.assert_allclose(sim.qd[[0, 1, 5]], [1.0, 2.0, 1.5], atol=1e-14)
    com = np.array([0.1, 0.05, 0.0])
    c0 = sim.q[:3] + com
    v0 = np.array([1.0, 2.0, 0.0]) + np.cross([0.0, 0.0, 1.5], com)
    T = 0.6
    for _ in range(6):
        sim.step(T / 6)
    R = model.forward_kinematics(sim.q).R[1]
    np.testing.assert_allclose(
        sim.q[:3] + R @ com, c0 + v0 * T + 0.5 * np.array([0.0, -9.81, 0.0]) * T * T, rtol=0, atol=1e-10
    )
    np.testing.assert_allclose(sim.qd[5], 1.5, rtol=0, atol=1e-12)
    np.testing.assert_allclose(sim.loop_outputs()["table"]["lambda"][0], -6.0, rtol=1e-10)


# ---- simulation: energy, violation, agreement ---------------------------------------------
def run(model, T, dt, **options):
    """(E (steps+1,), max violation, q (steps+1, nq)) of an unforced DOP853 run."""
    sim = Simulator(model, "dop853", rtol=1e-12, atol=1e-12, h_max=0, **options)
    E, qs, viol = [sim.invariants().E], [sim.q], 0.0
    for _ in range(round(T / dt)):
        sim.step(dt)
        E.append(sim.invariants().E)
        qs.append(sim.q)
        out = sim.loop_outputs()
        viol = max([viol] + [max(o["phi"], o["phidot"]) for o in out.values()])
    return np.array(E), viol, np.array(qs)


def fourbar_runs(T):
    model = load("fourbar.yaml")
    out = {}
    for method in ("multipliers", "partitioning"):
        E, viol, qs = run(model, T, 0.05, loop_method=method)
        out[method] = (np.abs(E - E[0]).max() / abs(E[0]), viol, qs)
        print(f"four-bar {T:g} s, {method}: relative energy error {out[method][0]:.3g}, max violation {viol:.3g}")
    diff = np.abs(out["multipliers"][2] - out["partitioning"][2]).max()
    print(f"four-bar {T:g} s: max |q_multipliers - q_partitioning| = {diff:.3g} rad")
    return out, diff


def test_fourbar_energy_and_agreement_quick():
    """0.6 s of the unforced four-bar (the crank turns fully): KE + PE constant and the loop
    closed to round-off with either method; the two trajectories coincide."""
    out, diff = fourbar_runs(0.6)
    for err, viol, _ in out.values():
        assert err <= 1e-10 and viol <= 1e-12
    assert diff <= 1e-10


@pytest.mark.slow
def test_fourbar_energy_and_agreement_10s():
    """The closed loops' accuracy targets over 10 s (DOP853, rtol = atol = 1e-12): relative energy error and
    constraint violation <= 1e-9 with multipliers (Baumgarte + projection) and with
    partitioning; the two trajectories agree to 1e-8."""
    out, diff = fourbar_runs(10.0)
    assert np.ptp(out["partitioning"][2][:, 0]) > 4 * np.pi  # the crank turned fully, several times
    for err, viol, _ in out.values():
        assert err <= 1e-9 and viol <= 1e-9
    assert diff <= 1e-8


@pytest.mark.parametrize(
    "method, stabilisation", [("multipliers", "none"), ("multipliers", "both"), ("partitioning", "none")]
)
def test_rk4_energy_error_converges_at_fourth_order(method, stabilisation):
    """Halving the RK4 step cuts the four-bar's energy error by >= 12x (16x ideal): the loop
    formulations (and the projection after each sub-step) keep the integrator's order."""
    model = load("fourbar.yaml")
    errs = []
    for h in (0.01, 0.005):
        sim = Simulator(model, "rk4", h_max=h, loop_method=method, loop_stabilisation=stabilisation)
        E0, err = sim.invariants().E, 0.0
        for _ in range(10):
            sim.step(0.05)
            err = max(err, abs(sim.invariants().E - E0))
        errs.append(err)
    assert errs[0] / errs[1] >= 12, errs


def test_crank_slider_energy_balance_under_torque():
    """A crank torque does work W_in, the slider damper dissipates W_diss; the cut joint does
    none: KE + PE - W_in - W_diss is constant."""
    sim = Simulator(load("crank_slider.yaml"), "dop853", rtol=1e-11, atol=1e-12, h_max=0)
    E0, err = sim.invariants().E, 0.0
    for k in range(40):
        sim.set_input("q1.tau", 0.2 + 0.4 * math.sin(0.3 * k))
        sim.step(0.025)
        W_in, W_diss = sim.work
        err = max(err, abs(sim.invariants().E - W_in - W_diss - E0))
    assert abs(sim.work[0]) > 1e-2 and sim.work[1] < -1e-4
    assert err <= 1e-10


def test_spatial_loop_keeps_energy_and_closure():
    """The RSSR linkage (ball cut joint, spherical tree joint) for 0.5 s: energy and closure."""
    E, viol, _ = run(load("rssr.yaml"), 0.5, 0.05)
    assert np.abs(E - E[0]).max() <= 1e-10 * abs(E[0]) and viol <= 1e-12


def test_stabilisation_options_control_drift():
    """Without stabilisation the multiplier method drifts off the loop (index-1 DAE); Baumgarte
    keeps it bounded and projection removes it at every step."""
    model = load("fourbar.yaml")
    viol = {}
    for stab in ("none", "baumgarte", "projection"):
        sim = Simulator(model, "rk4", h_max=0.01, loop_stabilisation=stab)
        for _ in range(20):
            sim.step(0.05)
        out = sim.loop_outputs()["closure"]
        viol[stab] = max(out["phi"], out["phidot"])
    assert viol["projection"] <= 1e-12 < viol["none"]
    assert viol["baumgarte"] < viol["none"]


# ---- outputs in scenario runs --------------------------------------------------------------
def test_scenario_rows_carry_loop_outputs(tmp_path):
    """A scenario run writes loop.<name>.phi, .phidot and .lambda[k] per row; the four-bar
    scenario passes its energy check (plots off: matplotlib's seconds add nothing here)."""
    scn = replace(load_scenario(ROOT / "scenarios" / "fourbar_energy.yaml"), plots=False)
    report = run_scenario(scn, tmp_path, duration=0.3, progress=False)
    assert report["passed"], json.dumps(report, default=str)[:2000]
    traj = read_trajectory(tmp_path / "trajectory.csv")
    assert np.abs(traj["loop.closure.phi"]).max() <= 1e-12
    assert np.abs(traj["loop.closure.phidot"]).max() <= 1e-12
    lam = traj.stack([f"loop.closure.lambda[{k}]" for k in range(1, 6)])
    assert np.abs(lam[:, :2]).max() > 1.0 and np.abs(lam[:, 2:]).max() <= 1e-9


# ---- bad input --------------------------------------------------------------------------
def test_loop_between_a_body_and_itself_is_reported(tmp_path):
    doc = fourbar_doc()
    doc["loops"][0]["b"] = {"body": "coupler", "point": [0.1, 0, 0]}
    with pytest.raises(ModelError) as e:
        model_from(doc, tmp_path)
    assert "loop 'closure' connects body 'coupler' to itself" in str(e.value)
    assert "model.yaml:" in str(e.value)


def test_schema_problems_are_all_reported_with_lines(tmp_path):
    doc = fourbar_doc()
    doc["loops"] = [
        {
            "name": "closure",
            "type": "revolut",
            "a": {"frame": "coupler_nd"},
            "b": {"body": "rockr", "point": [0.5, 0, 0]},
            "axis": [0, 0, 0],
            "independent": ["q9"],
        },
        {
            "name": "closure",
            "type": "ball",
            "a": {"body": "crank"},
            "b": {"body": "world"},
            "spin": 1,
            "independent": ["q3"],
        },
        {"name": "bad name", "type": "ball", "a": {"frame": "rocker_tip", "point": [0, 0, 0]}, "b": {"body": "world"}},
    ]
    with pytest.raises(ModelError) as e:
        model_from(doc, tmp_path)
    msg = str(e.value)
    for fragment in (
        "unknown cut-joint type 'revolut'; expected one of ball, revolute, prismatic, planar (did you "
        "mean 'revolute'?)",
        "unknown frame 'coupler_nd' (did you mean 'coupler_end'?)",
        "unknown body 'rockr' (did you mean 'rocker'?)",
        "axis [0.0, 0.0, 0.0] must be a finite, non-zero",
        "unknown joint 'q9'",
        "duplicate loop name 'closure'",
        "unknown key 'spin'",
        "joint 'q3' is not on the loop (joints on the loop: q1)",
        "loop name 'bad name'",
        "give either 'frame' or 'point'/'rpy'",
    ):
        assert fragment in msg, msg
    assert all(p.line for p in e.value.problems), msg


def test_over_constrained_loop_that_cannot_be_assembled(tmp_path):
    """Holding two of the four-bar's three joints leaves one coordinate for two closure
    equations: the initial state cannot be closed. The error names the loop and the file line."""
    doc = fourbar_doc()
    doc["loops"][0]["independent"] = ["q1", "q3"]
    doc["initial"]["q"]["q3"] = 1.0
    with pytest.raises(ModelError) as e:
        model_from(doc, tmp_path)
    msg = str(e.value)
    assert "loop 'closure' cannot be closed from the initial state" in msg and "max |Phi| =" in msg, msg
    line = next(k for k, text in enumerate((tmp_path / "model.yaml").read_text().splitlines(), 1) if "closure" in text)
    assert f"model.yaml:{line - 1}:" in msg or f"model.yaml:{line}:" in msg, msg


def test_links_that_cannot_close_are_reported(tmp_path):
    """Coupler and rocker anchors 0.1 m from their joints cannot reach across the 0.51 m from
    the crank tip (crank held at q1 = 0.3) to the rocker pivot."""
    doc = fourbar_doc()
    doc["bodies"][1]["frames"]["coupler_end"] = [0.1, 0, 0]
    doc["bodies"][2]["frames"]["rocker_tip"] = [0.1, 0, 0]
    with pytest.raises(ModelError) as e:
        model_from(doc, tmp_path)
    assert "loop 'closure' cannot be closed" in str(e.value)


def test_inconsistent_initial_state_without_assembly_is_rejected():
    """assemble=False: the file's own initial values (q2, q3 are only guesses) violate the loop;
    the error names the loop, the violation and the tolerance. After assembly it is accepted."""
    model = load("fourbar.yaml")
    with pytest.raises(InputError) as e:
        Simulator(model, assemble=False)
    msg = str(e.value)
    assert "loop 'closure': max |Phi| =" in msg and "tolerance" in msg and "assemble=True" in msg, msg
    sim = Simulator(model)
    q, qd = sim.q, sim.qd
    sim.assemble = False
    sim.set_configuration(q, qd)  # consistent: accepted as is
    np.testing.assert_array_equal(sim.q, q)
    with pytest.raises(InputError, match="loop 'closure': max \\|A qd\\|"):
        sim.set_configuration(q, qd + [0.0, 0.0, 1.0])


def test_partitioning_needs_a_valid_declaration():
    """The RSSR's dependent joints (spherical + revolute: 4 rates) are not determined by 3
    closure equations; a model without declarations cannot be partitioned at all."""
    with pytest.raises(InputError, match="loop\\(s\\) ball_cut: the 4 dependent rates \\(joints ball, rocker\\)"):
        Simulator(load("rssr.yaml"), loop_method="partitioning")
    spec = load("fourbar.yaml").spec
    plain = mbsfmu.Model(replace(spec, loops=(replace(spec.loops[0], independent=()),)), source="plain")
    with pytest.raises(InputError, match="none of closure does"):
        Simulator(plain, loop_method="partitioning")
    with pytest.raises(InputError, match="loop_method 'lagrange'"):
        Simulator(plain, loop_method="lagrange")
    with pytest.raises(InputError, match="loop_stabilisation 'gauss'"):
        Simulator(plain, loop_stabilisation="gauss")


def test_scenario_loop_options_are_checked(tmp_path):
    scn = tmp_path / "s.yaml"
    scn.write_text(
        f"version: 1\nmodel: {FOURBAR}\nduration: 0.1\ndt: 0.01\n"
        "loops: {method: lagrange, stabilisation: both, baumgarte: [1, -2], assemble: 3}\n"
    )
    from mbsfmu.scenario.spec import ScenarioError

    with pytest.raises(ScenarioError) as e:
        load_scenario(scn)
    msg = str(e.value)
    for fragment in (
        "loops.method: unknown loop method 'lagrange'",
        "loops.baumgarte: baumgarte [alpha, beta] must be",
        "loops.assemble: expected true or false",
    ):
        assert fragment in msg, msg


LOOP_JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.text(max_size=5),
    st.integers(-2, 2),
    st.floats(allow_nan=True, allow_infinity=True),
    st.lists(st.floats(-2, 2), max_size=4),
    st.sampled_from(
        ["world", "crank", "coupler", "rocker", "q1", "q2", "coupler_end", "ball", "prismatic", "planar", "revolute"]
    ),
)


@given(data=st.data())
def test_mutated_loops_section_raises_only_model_error(data):
    """Mutations of the four-bar's loops section give a Model or a ModelError, nothing else."""
    doc = fourbar_doc()
    for _ in range(data.draw(st.integers(1, 3))):
        loops = doc["loops"]
        loop = loops[0] if isinstance(loops, list) and loops and isinstance(loops[0], dict) else None
        op = data.draw(st.sampled_from(["key", "side", "delete", "type", "duplicate", "junk"]))
        if loop is None or op == "junk":
            doc["loops"] = data.draw(st.one_of(LOOP_JUNK, st.lists(LOOP_JUNK, max_size=2)))
        elif op == "key":
            value = data.draw(LOOP_JUNK)  # drawn before the key, as in loop[draw(keys)] = draw(junk)
            loop[data.draw(st.sampled_from(["name", "type", "a", "b", "axis", "independent", "extra"]))] = value
        elif op == "side":
            side = data.draw(st.sampled_from(["a", "b"]))
            loop[side] = {data.draw(st.sampled_from(["body", "frame", "point", "rpy", "x"])): data.draw(LOOP_JUNK)}
        elif op == "delete":
            loop.pop(data.draw(st.sampled_from(list(loop) or ["name"])), None)
        elif op == "type":
            loop["type"] = data.draw(st.sampled_from(["ball", "revolute", "prismatic", "planar", "weld"]))
        else:
            doc["loops"].append(copy.deepcopy(loop))
    try:
        mbsfmu.Model(spec_from_dict(doc, source="fuzz"), source="fuzz")
    except ModelError as e:
        assert e.problems and all(p.message for p in e.problems)
