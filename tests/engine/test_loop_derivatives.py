"""Analytic derivatives of the partitioned loop dynamics (mbsfmu/engine/dynamics/loop_derivatives.py)
against central differences of the engine's own loop code, a closed form for a coupled pendulum
(URDF mimic), and the refusals.

Tolerances. The constraint variations: central differences of ``constraints`` with step 1e-5,
truncation h^2/6 |f'''| ~ 2e-11 and round-off eps |f| / h ~ 2e-11 x |f| for O(1) kinematics:
compared at 1e-7 x max(1, largest entry) (measured: ~2e-9 absolute on entries up to ~10). The
Jacobians: the central differences of ``dynamics_jacobians`` (H_REL = eps^(1/3)) err ~eps^(2/3) ~
4e-11 relative to the size of qdd and its derivatives, grown by the dependent coordinates' Newton
closure (|Phi| <= 1e-14 L at every evaluation, divided by 2h: ~1e-9 x |dqdd/dq|), by ABA's
round-off and by the truncation h^2/6 |d3 qdd/dq3| where the partition is ill-conditioned (see the
test); the measured worst over 8 seeds is 3.7e-9 x max(1, |qdd|, largest entry): compared at
1e-7 x that (27x headroom).
The closed form is compared at 1e-12 relative (a few dozen float64 operations on O(1) numbers,
M^-1 with cond ~10).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import yaml

import mbsfmu
from mbsfmu.engine.dynamics.closed_loops import constraints
from mbsfmu.engine.dynamics.loop_derivatives import constraint_variations
from mbsfmu.engine.native.core import usable
from mbsfmu.errors import InputError
from mbsfmu.io.model_file import spec_from_dict
from mbsfmu.io.urdf import load_urdf
from mbsfmu.linear.jacobians import Accelerations, dynamics_jacobians
from tests.engine.test_closed_loops import random_looped
from tests.support.paths import MODELS
from tests.support.robots import robots_dir

RTOL_VAR, RTOL_FD = 1e-7, 1e-7
COND_MAX = 10.0  # states nearer the partition's singular configurations are drawn again (see the test)
needs_core = pytest.mark.skipif(not usable(), reason="the C core cannot be built here")


def closed_state(model, rng, spread=1.0):
    """A random consistent state: the initial state moved randomly, closed (independent joints
    held), random rates (0.5 to 1.5 in size, either sign) made consistent."""
    q0, _ = model.initial_state()
    qd = rng.uniform(0.5, 1.5, model.nv) * rng.choice([-1.0, 1.0], model.nv)
    return model.assemble(model.integrate(q0, spread * rng.normal(size=model.nv)), qd)


# ---- the constraint variations, on every cut-joint type -----------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_constraint_variations_equal_central_differences(seed):
    """d(A qd) and d(A qdd + Adot qd) along q (+) h dq, qd + h dqd (qdd held) for ball, revolute,
    prismatic and planar cut joints on a random tree with free, spherical, prismatic and revolute
    joints, at random inconsistent states (the variations hold off the manifold too)."""
    rng = np.random.default_rng(seed)
    model = random_looped(
        rng, 7, [("ball", "b1", "b4"), ("revolute", "b2", "world"), ("prismatic", "b5", "b3"), ("planar", "b6", "b0")]
    )
    t, loops = model.tree, model.loops
    q, qd = model.random_state(rng)
    qdd = rng.normal(size=model.nv)
    K, h = 4, 1e-5
    dq, dqd = rng.normal(size=(K, model.nv)), rng.normal(size=(K, model.nv))
    dq[3] = 0.0  # a rate-only variation
    ds, dc = constraint_variations(t, loops, q, np.tile(qd, (K, 1)), np.tile(qdd, (K, 1)), dq, dqd)

    def levels(sign, k):
        ld = constraints(t, loops, model.integrate(q, sign * h * dq[k]), qd + sign * h * dqd[k])
        return ld.A @ qd + sign * h * ld.A @ dqd[k], ld.A @ qdd - ld.gamma

    for k in range(K):
        (sp, cp), (sm, cm) = levels(1.0, k), levels(-1.0, k)
        for got, fd in ((ds[k], (sp - sm) / (2 * h)), (dc[k], (cp - cm) / (2 * h))):
            np.testing.assert_allclose(got, fd, rtol=0, atol=RTOL_VAR * max(1.0, np.abs(fd).max()))
    ds_only, dc_none = constraint_variations(t, loops, q, np.tile(qd, (K, 1)), None, dq, dqd)
    assert dc_none is None
    np.testing.assert_array_equal(ds_only, ds)


# ---- models -----------------------------------------------------------------------------------
def rail_crank_slider():
    """The crank-slider with the slider hinged to the rod in the tree and held on the ground rail
    by a prismatic cut joint (offset and dot rows), q1 independent."""
    doc = yaml.safe_load((MODELS / "crank_slider.yaml").read_text())
    doc["bodies"][2]["parent"] = "rod"
    doc["bodies"][2]["joint"] = {"name": "q3", "type": "revolute", "axis": [0, 0, 1], "origin": {"xyz": [0.35, 0, 0]}}
    doc["loops"] = [
        {"name": "rail", "type": "prismatic", "a": {"body": "world"}, "b": {"body": "slider"}, "axis": [1, 0, 0]}
    ]
    doc["loops"][0]["independent"] = ["q1"]
    doc["initial"]["q"]["q3"] = 0.14
    return mbsfmu.Model(spec_from_dict(doc, source="rail"), source="rail")


def spatial_arm():
    """A spatial loop with a spherical joint among the independent coordinates: world -ball (held)-
    b1 -r1- b2 -r2- b3 -r3- b4, b4's tip held at a world point by a ball cut joint (3 rows;
    dependent r1, r2, r3): 3 degrees of freedom, body-axis tangent coordinates for the ball."""
    rod = {"mass": 1.0, "com": [0.15, 0.0, 0.0], "inertia": {"Ixx": 0.002, "Iyy": 0.01, "Izz": 0.012}}
    axes = ([0, 0, 1], [0, 1, 0], [0, 1, 0])  # yaw, pitch, pitch: an elbow arm reaching 3-D points
    bodies = [{"name": "b1", "parent": "world", "joint": {"name": "ball", "type": "spherical"}, **rod}]
    for k, axis in enumerate(axes, start=2):
        joint = {"name": f"r{k - 1}", "type": "revolute", "axis": axis, "origin": {"xyz": [0.3, 0.0, 0.0]}}
        bodies.append({"name": f"b{k}", "parent": f"b{k - 1}", "joint": joint, **rod})
    doc = {"version": 1, "name": "arm", "gravity": [0, 0, -9.81], "bodies": bodies}
    quat = np.array([0.9, 0.1, 0.3, 0.2])
    q0 = {"ball": (quat / np.linalg.norm(quat)).tolist(), "r1": 0.7, "r2": -0.8, "r3": 0.9}
    tree = mbsfmu.Model(spec_from_dict(dict(doc, initial={"q": q0}), source="arm"), source="arm")
    tip = tree.forward_kinematics(tree.initial_state()[0]).point_position(4, np.array([0.3, 0.0, 0.0]))
    doc["loops"] = [
        {
            "name": "tip",
            "type": "ball",
            "a": {"body": "b4", "point": [0.3, 0.0, 0.0]},
            "b": {"body": "world", "point": tip.tolist()},
            "independent": ["ball"],
        }
    ]
    doc["initial"] = {"q": q0}
    return mbsfmu.Model(spec_from_dict(doc, source="arm"), source="arm")


BOX = '<inertial><mass value="{m}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>'


def coupled_pendulum(tmp_path, a=-0.6, b=0.3, m=0.8, l=0.4, i_c=0.01, I1=0.05, d=0.07):
    """A wheel (j1, inertia I1 about its centred horizontal axis) and a pendulum (j2, mass m at
    distance l below a horizontal axis, inertia i_c about its centre, damper d) on the base, the
    pendulum's joint a mimic of the wheel's: q2 = a q1 + b."""
    base = f'<link name="base">{BOX.format(m=2, i=0.1)}</link>'
    wheel = f'<link name="wheel">{BOX.format(m=1.0, i=I1)}</link>'
    bob = (
        f'<link name="bob"><inertial><origin xyz="0 0 {-l}"/><mass value="{m}"/>'
        f'<inertia ixx="{i_c}" ixy="0" ixz="0" iyy="{i_c}" iyz="0" izz="{i_c}"/></inertial></link>'
    )
    joints = (
        '<joint name="j1" type="continuous"><parent link="base"/><child link="wheel"/><axis xyz="0 1 0"/></joint>'
        '<joint name="j2" type="continuous"><parent link="base"/><child link="bob"/><axis xyz="0 1 0"/>'
        f'<origin xyz="0.5 0 0"/><dynamics damping="{d}"/><mimic joint="j1" multiplier="{a}" offset="{b}"/></joint>'
    )
    path = tmp_path / "coupled.urdf"
    path.write_text(f'<?xml version="1.0"?>\n<robot name="coupled">{base}{wheel}{bob}{joints}</robot>\n')
    return load_urdf(path)


def loop_models(tmp_path):
    models = [mbsfmu.load_model(MODELS / n) for n in ("fourbar.yaml", "crank_slider.yaml")]
    models += [rail_crank_slider(), spatial_arm(), coupled_pendulum(tmp_path)]
    robots = robots_dir()
    if robots is not None:
        models.append(load_urdf(robots / "panda_description/urdf/panda.urdf"))  # the gripper's mimic finger
    return models


# ---- the Jacobians ------------------------------------------------------------------------------
@needs_core
def test_partitioned_jacobians_equal_central_differences(rng, tmp_path):
    """On every bundled loop model, a prismatic cut joint, a spatial loop with a spherical
    independent joint, a coupled (mimic) pendulum and the panda's mimic gripper: "auto" takes
    the analytic path, and qdd, dqdd/du, dqdd/dud and dqdd/dinputs equal the partitioned central
    differences (all nv rows: the dependent accelerations too) at random consistent states with
    nonzero rates, where cond(Phi_v) <= COND_MAX: nearer a singular configuration of the partition
    the derivatives of qdd grow like powers of cond(Phi_v), and with them the differences'
    truncation error h^2/6 |d3 qdd/dq3| (measured on the spatial arm at cond 37: 4e-7 relative at
    h = H_REL, falling as h^2 when h is halved, so the analytic value is the limit)."""
    worst = 0.0
    for model in loop_models(tmp_path):
        f = Accelerations(model)
        for _ in range(3):
            q, qd = closed_state(model, rng, spread=0.1 if model.source == "arm" else 1.0)
            while np.linalg.cond(model.loop_constraints(q).A[np.ix_(f.part.rows, f.part.iv)]) > COND_MAX:
                q, qd = closed_state(model, rng, spread=0.1 if model.source == "arm" else 1.0)
            assert np.abs(qd[f.iu]).min() >= 0.5
            u = rng.normal(size=f.nu)
            Ja = dynamics_jacobians(f, q, qd, u)
            Jc = dynamics_jacobians(f, q, qd, u, method="central")
            assert Ja.method.startswith("analytic") and Jc.method.startswith("central")
            scale = max(1.0, float(np.abs(Jc.qdd).max()))
            np.testing.assert_allclose(Ja.qdd, Jc.qdd, rtol=0, atol=1e-12 * scale, err_msg=model.source)
            for name in ("dqdd_dq", "dqdd_dqd", "dqdd_du"):
                a, c = getattr(Ja, name), getattr(Jc, name)
                s = max(scale, float(np.abs(c).max(initial=0.0)))
                worst = max(worst, float(np.abs(a - c).max(initial=0.0)) / s)
                np.testing.assert_allclose(a, c, rtol=0, atol=RTOL_FD * s, err_msg=f"{model.source} {name}")
    print(f"worst |analytic - central| / max(1, |qdd|, |J|) = {worst:.2g}")


@needs_core
def test_coupled_pendulum_closed_form(tmp_path, rng):
    """Wheel and pendulum coupled by q2 = a q1 + b: the reduced equation in q1 (Lagrange, T = 1/2
    (I1 + a^2 I_p) qd1^2, V = -m g l cos q2, virtual work of the damper -d qd2 a dq1):
    (I1 + a^2 I_p) qdd1 = tau1 - a m g l sin q2 - a^2 d qd1, I_p = i_c + m l^2, so
    dqdd1/dq1 = -a^2 m g l cos q2 / I_r, dqdd1/dqd1 = -a^2 d / I_r, dqdd1/dtau1 = 1 / I_r, and
    qdd2 = a qdd1 row by row."""
    a, b, m, l, i_c, I1, d, g = -0.6, 0.3, 0.8, 0.4, 0.01, 0.05, 0.07, 9.81
    model = coupled_pendulum(tmp_path, a, b, m, l, i_c, I1, d)
    assert np.allclose(model.gravity, [0, 0, -g])
    I_r = I1 + a * a * (i_c + m * l * l)
    for q1, qd1, tau1 in rng.normal(size=(3, 3)):
        q, qd = model.assemble(np.array([q1, 0.0]), np.array([qd1, 0.0]))
        q2 = a * q1 + b
        qdd, dq, dqd, G = model.partitioned_derivatives(q, qd, np.array([tau1, 0.0]))
        # the pendulum hangs along -z and turns about +y: its gravity torque is -m g l sin q2
        qdd1 = (tau1 - a * m * g * l * np.sin(q2) - a * a * d * qd1) / I_r
        expected = {
            "qdd": [qdd1, a * qdd1],
            "dq": [[-a * a * m * g * l * np.cos(q2) / I_r], [-(a**3) * m * g * l * np.cos(q2) / I_r]],
            "dqd": [[-a * a * d / I_r], [-(a**3) * d / I_r]],
            "G": [[1 / I_r, a / I_r], [a / I_r, a * a / I_r]],
        }
        for name, got in (("qdd", qdd), ("dq", dq), ("dqd", dqd), ("G", G)):
            np.testing.assert_allclose(got, expected[name], rtol=1e-12, atol=1e-12, err_msg=name)


# ---- what is refused ----------------------------------------------------------------------------
def test_python_backend_falls_back_and_analytic_names_the_reason(rng):
    """Without the C core the loop Jacobians are central differences; method="analytic" says why."""
    model = mbsfmu.load_model(MODELS / "fourbar.yaml")
    f = Accelerations(model, "python")
    q, qd = closed_state(model, rng)
    u = np.zeros(f.nu)
    assert dynamics_jacobians(f, q, qd, u).method.startswith("central")
    with pytest.raises(InputError, match="C core is not in use"):
        dynamics_jacobians(f, q, qd, u, method="analytic")


@needs_core
def test_loops_with_force_elements_equal_central_differences(rng):
    """The four-bar with a thruster on its rocker, a point spring-damper from the coupler to the
    world and a body wrench on the crank: "auto" takes the analytic path (the elements' Q and its
    derivatives from Core.force_derivatives added to the partitioned equations), equal to the
    partitioned central differences within RTOL_FD, as above; the thruster's and the wrench's
    inputs make dqdd/du's columns (G dQ/du)."""
    doc = yaml.safe_load((MODELS / "fourbar.yaml").read_text())
    doc["forces"] = [
        {"type": "thruster", "name": "jet", "body": "rocker", "point": [0.5, 0, 0], "direction": [0, 1, 0]},
        {
            "type": "spring",
            "name": "tie",
            "a": {"body": "coupler", "point": [0.3, 0.05, 0]},
            "b": {"body": "world", "point": [0.4, 0.9, 0.1]},
            "k": 40.0,
            "d": 1.5,
            "l0": 0.3,
        },
        {"type": "wrench", "name": "push", "body": "crank", "point": [0.1, 0.02, 0], "axes": "body"},
    ]
    model = mbsfmu.Model(spec_from_dict(doc, source="elements"), source="elements")
    f = Accelerations(model)
    assert f.sim.forces.thrusters and f.sim.forces.springs and f.sim.forces.wrenches
    for _ in range(3):
        q, qd = closed_state(model, rng)
        while np.linalg.cond(model.loop_constraints(q).A[np.ix_(f.part.rows, f.part.iv)]) > COND_MAX:
            q, qd = closed_state(model, rng)
        u = rng.normal(size=f.nu)
        Ja = dynamics_jacobians(f, q, qd, u, method="analytic")
        Jc = dynamics_jacobians(f, q, qd, u, method="central")
        assert dynamics_jacobians(f, q, qd, u).method == Ja.method and Ja.method.startswith("analytic")
        scale = max(1.0, float(np.abs(Jc.qdd).max()))
        np.testing.assert_allclose(Ja.qdd, Jc.qdd, rtol=0, atol=1e-12 * scale)
        for name in ("dqdd_dq", "dqdd_dqd", "dqdd_du"):
            a, c = getattr(Ja, name), getattr(Jc, name)
            s = max(scale, float(np.abs(c).max(initial=0.0)))
            np.testing.assert_allclose(a, c, rtol=0, atol=RTOL_FD * s, err_msg=name)
        # the elements act: without them the Jacobians differ by far more than the tolerance
        bare = Accelerations(mbsfmu.load_model(MODELS / "fourbar.yaml"))
        Jb = dynamics_jacobians(bare, q, qd, np.zeros(bare.nu))
        assert np.abs(Jb.dqdd_dq - Ja.dqdd_dq).max() > 1e3 * RTOL_FD * max(1.0, np.abs(Ja.dqdd_dq).max())


@needs_core
def test_partitioned_derivatives_refusals(rng):
    """Model.partitioned_derivatives refuses a state off the loops, loops without declared
    independent joints, and trees (with the way that works for each)."""
    model = mbsfmu.load_model(MODELS / "fourbar.yaml")
    q, qd = closed_state(model, rng)
    tau = np.zeros(model.nv)
    bad = q.copy()
    bad[1] += 0.1
    with pytest.raises(InputError, match="violates loop 'closure'"):
        model.partitioned_derivatives(bad, qd, tau)
    spec = model.spec
    plain = mbsfmu.Model(replace(spec, loops=(replace(spec.loops[0], independent=()),)), source="plain")
    with pytest.raises(InputError, match="declare their independent joints"):
        plain.partitioned_derivatives(q, qd, tau)
    tree = mbsfmu.load_model(MODELS / "scara.yaml")
    with pytest.raises(InputError, match="coordinate partitioning needs loops"):
        tree.partitioned_derivatives(*tree.initial_state(), np.zeros(tree.nv))
    with pytest.raises(InputError, match="partitioned_derivatives"):
        model.aba_derivatives(q, qd, tau)


@pytest.mark.slow
@needs_core
def test_every_mimic_robot_of_example_robot_data(rng):
    """Every example-robot-data robot whose couplings survive loading (baxter, panda, pr2, talos,
    tiago_pro: up to nv = 44 with 12 followers): the analytic partitioned Jacobians equal the
    central differences (measured worst 8.3e-10 relative; tolerance as above). Robots refused at
    loading are tests/io/test_robots.py's business."""
    robots = robots_dir()
    if robots is None:
        pytest.skip("example-robot-data is not installed (test extra)")
    checked = []
    for path in sorted(robots.rglob("*.urdf")):
        if "<mimic" not in path.read_text(errors="replace"):
            continue
        try:
            model = load_urdf(path)
        except mbsfmu.ModelError:
            continue
        if not model.loops:
            continue  # mimics of fixed joints only: a tree
        f = Accelerations(model)
        q, qd = model.assemble(*model.random_state(rng))
        u = rng.normal(size=f.nu)
        Ja, Jc = dynamics_jacobians(f, q, qd, u), dynamics_jacobians(f, q, qd, u, method="central")
        assert Ja.method.startswith("analytic")
        scale = max(1.0, float(np.abs(Jc.qdd).max()))
        for name in ("dqdd_dq", "dqdd_dqd", "dqdd_du"):
            c = getattr(Jc, name)
            s = max(scale, float(np.abs(c).max()))
            np.testing.assert_allclose(getattr(Ja, name), c, rtol=0, atol=RTOL_FD * s, err_msg=f"{path.name} {name}")
        checked.append(path.name)
    assert len(checked) >= 5, checked
