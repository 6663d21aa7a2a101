"""Joint couplings (URDF mimic): closed forms for a two-finger gripper, a chain of mimics, a rack
and pinion (a prismatic joint following a revolute one), the follower's effort, the checks, and
the C core against the numpy reference."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mbsfmu import ModelError
from mbsfmu.engine.model import Model
from mbsfmu.engine.native.core import Core
from mbsfmu.engine.spec.couplings import resolved_couplings
from mbsfmu.io.urdf import load_urdf
from mbsfmu.sim.simulator import Simulator

BOX = '<inertial><mass value="{m}"/><inertia ixx="{i}" ixy="0" ixz="0" iyy="{i}" iyz="0" izz="{i}"/></inertial>'


def _urdf(tmp_path, joints: str, links: str) -> str:
    base = f'<link name="base">{BOX.format(m=2, i=0.1)}</link>'
    text = f'<?xml version="1.0"?>\n<robot name="r">\n{base}\n{links}{joints}</robot>\n'
    path = tmp_path / "r.urdf"
    path.write_text(text)
    return path


def test_two_finger_gripper_closed_form(tmp_path):
    """Fingers of masses m_l, m_r on prismatic joints, q_r = -q_l (multiplier -1): a force F on
    the leader gives qdd_l = F / (m_l + m_r), qdd_r = -qdd_l; the coupling force on the follower is
    m_r qdd_r; gravity along the fingers' axis does no net work on a symmetric pair."""
    m_l, m_r, F = 0.3, 0.2, 1.7
    links = f'<link name="fl">{BOX.format(m=m_l, i=1e-4)}</link>\n<link name="fr">{BOX.format(m=m_r, i=1e-4)}</link>\n'
    joints = (
        '<joint name="left" type="prismatic"><parent link="base"/><child link="fl"/><axis xyz="0 1 0"/>'
        '<limit lower="0" upper="0.04" effort="20" velocity="0.2"/></joint>\n'
        '<joint name="right" type="prismatic"><parent link="base"/><child link="fr"/><axis xyz="0 1 0"/>'
        '<mimic joint="left" multiplier="-1"/></joint>\n'
    )
    model = load_urdf(_urdf(tmp_path, joints, links))
    assert [c.follower for c in model.spec.couplings] == ["right"] and model.loop_names == ("right",)
    sim = Simulator(model, "rk4", h_max=1e-3)
    assert "left.tau" in sim.input_names and "right.tau" not in sim.input_names  # the follower is no input
    q, qd = model.assemble(np.array([0.01, 0.0]), np.array([0.05, 0.0]))
    assert q[1] == -0.01 and qd[1] == -0.05
    for method in ("multipliers", "partitioning"):
        qdd, lam = model.constrained_forward_dynamics(q, qd, np.array([F, 0.0]), method=method)
        a = F / (m_l + m_r)
        np.testing.assert_allclose(qdd, [a, -a], rtol=1e-14, atol=0)
        # -A^T lambda on the follower's row is the force that moves it: m_r qdd_r
        assert -lam[0] == pytest.approx(m_r * -a, rel=1e-14)
    # an effort on the follower acts through the coupling: virtual work tau_f dq_f = -tau_f dq_l
    qdd, _ = model.constrained_forward_dynamics(q, qd, np.array([F, 0.5]))
    assert qdd[0] == pytest.approx((F - 0.5) / (m_l + m_r), rel=1e-14)


def test_chain_of_mimics_and_rack_and_pinion_closed_form(tmp_path):
    """j2 = -1 j1 + 0.2 (revolute), j3 = 2 j2 + 0.1 (revolute, a mimic of a mimic), rack = 0.05 j1
    (prismatic following a revolute joint), all on the base: the reduced inertia about j1 is
    I1 + I2 + 4 I3 + 0.05^2 m_rack, so tau on j1 gives qdd1 = tau / that (no gravity torque: the
    joints' axes are vertical and the bodies centred on them)."""
    I1, I2, I3, m_rack, tau = 0.01, 0.02, 0.03, 0.7, 0.9
    links = "".join(
        f'<link name="{n}">{BOX.format(m=m, i=i)}</link>\n'
        for n, m, i in (("w1", 1.0, I1), ("w2", 1.0, I2), ("w3", 1.0, I3), ("rack", m_rack, 0.001))
    )
    joints = (
        '<joint name="j1" type="continuous"><parent link="base"/><child link="w1"/><axis xyz="0 0 1"/></joint>\n'
        '<joint name="j3" type="revolute"><parent link="base"/><child link="w3"/><axis xyz="0 0 1"/>'
        '<origin xyz="0.3 0 0"/><mimic joint="j2" multiplier="2" offset="0.1"/></joint>\n'
        '<joint name="j2" type="continuous"><parent link="base"/><child link="w2"/><axis xyz="0 0 1"/>'
        '<origin xyz="0.1 0 0"/><mimic joint="j1" multiplier="-1" offset="0.2"/></joint>\n'
        '<joint name="rack" type="prismatic"><parent link="base"/><child link="rack"/><axis xyz="1 0 0"/>'
        '<origin xyz="0 0.2 0"/><mimic joint="j1" multiplier="0.05"/></joint>\n'
    )
    model = load_urdf(_urdf(tmp_path, joints, links))
    resolved = {f: (lead, a, b) for f, lead, a, b in resolved_couplings(model.spec)}
    assert resolved == {"j3": ("j1", -2.0, 0.5), "j2": ("j1", -1.0, 0.2), "rack": ("j1", 0.05, 0.0)}
    q0 = np.zeros(model.nq)
    q0[model.q_slice("j1")] = 0.3
    q, _ = model.assemble(q0, np.zeros(model.nv))
    assert q[model.q_slice("j3")][0] == pytest.approx(-2 * 0.3 + 0.5, abs=1e-15)
    tau_v = np.zeros(model.nv)
    tau_v[model.v_slice("j1")] = tau
    for method in ("multipliers", "partitioning"):
        qdd, _ = model.constrained_forward_dynamics(q, np.zeros(model.nv), tau_v, method=method)
        assert qdd[model.v_slice("j1")][0] == pytest.approx(tau / (I1 + I2 + 4 * I3 + 0.05**2 * m_rack), rel=1e-13)
        assert qdd[model.v_slice("rack")][0] == pytest.approx(0.05 * qdd[model.v_slice("j1")][0], rel=1e-13)


@pytest.mark.parametrize(
    "mimic, fragment",
    [
        ('<mimic joint="j1" multiplier="nan"/>', "expected a finite number, got 'nan'"),
        ('<mimic joint="j2"/>', "joint 'j2' cannot follow itself"),
        ('<mimic joint="fix"/>', "joint 'fix' is fixed: a coupling joins joints with one coordinate"),
    ],
)
def test_bad_couplings_are_named(tmp_path, mimic, fragment):
    body = BOX.format(m=1, i=0.01)
    links = f'<link name="a">{body}</link><link name="b">{body}</link><link name="c"/>'
    joints = (
        '<joint name="j1" type="revolute"><parent link="base"/><child link="a"/></joint>'
        f'<joint name="j2" type="revolute"><parent link="base"/><child link="b"/>{mimic}</joint>'
        '<joint name="fix" type="fixed"><parent link="base"/><child link="c"/></joint>'
    )
    with pytest.raises(ModelError) as err:
        load_urdf(_urdf(tmp_path, joints, links))
    assert "joint 'j2'/mimic" in str(err.value) and fragment in str(err.value)


def test_core_equals_numpy_reference_on_a_mimic_robot(tmp_path):
    """The C core closes couplings as the numpy reference does: same rhs to round-off, and the
    same trajectory over 20 RK4 steps with projection."""
    links = f'<link name="fl">{BOX.format(m=0.3, i=1e-4)}</link>\n<link name="fr">{BOX.format(m=0.2, i=2e-4)}</link>\n'
    joints = (
        '<joint name="left" type="revolute"><parent link="base"/><child link="fl"/><axis xyz="0 1 0"/>'
        '<origin xyz="0 0.1 0"/></joint>\n'
        '<joint name="right" type="revolute"><parent link="fl"/><child link="fr"/><axis xyz="1 0 0"/>'
        '<origin xyz="0 0 0.2"/><mimic joint="left" multiplier="-0.5" offset="0.1"/></joint>\n'
    )
    model = load_urdf(_urdf(tmp_path, joints, links))
    sims = [Simulator(model, "rk4", h_max=1e-3, backend=b) for b in ("native", "python")]
    for sim in sims:
        sim.set_configuration(np.array([0.4, 0.0]), np.array([1.0, 0.0]))
        sim.set_input("left.tau", 0.05)
    np.testing.assert_allclose(sims[0].rhs(sims[0].x), sims[1].rhs(sims[1].x), rtol=1e-13, atol=1e-13)
    for sim in sims:
        for _ in range(20):
            sim.step(1e-3)
    np.testing.assert_allclose(sims[0].x, sims[1].x, rtol=1e-11, atol=1e-12)
    assert sims[0].q[1] == pytest.approx(-0.5 * sims[0].q[0] + 0.1, abs=1e-12)


@pytest.mark.parametrize("variant", ["fixed-base", "floating", "spherical-wrist"])
def test_core_solves_couplings_by_aba_as_the_reference_by_its_mass_matrix(tmp_path, variant):
    """With couplings only, the C core takes M^-1 h from ABA and M^-1 A^T from ABA solves with the
    same articulated inertias (loops.c, aba.c mbs_aba_solve); the numpy reference takes both from
    CRBA's M and its Cholesky factor: two formulations of No's Eq. 24. An arm on a revolute joint, a
    palm welded on by a fixed joint (kept as a body: lump_fixed=False), two coupled fingers on it
    (prismatic, multiplier -1) and a revolute follower of the arm's joint (multiplier 0.5), on the
    world or on a free joint, or with the palm on a spherical joint (ABA's matrix branches: D = L L^T
    at the root and inside the tree); gravity, random state and inputs. qdd and lambda
    agree to 1e-12 of their scales: each is a sum over N = 5 bodies of ~10-term products per body,
    N x 10 x eps ~ 1e-14 relative, times the conditioning of the 2 x 2 A M^-1 A^T (measured: 5e-16
    relative for qdd)."""
    links = (
        f'<link name="arm">{BOX.format(m=1.5, i=0.02)}</link>\n'
        f'<link name="palm">{BOX.format(m=0.4, i=1e-3)}</link>\n'
        f'<link name="fl">{BOX.format(m=0.1, i=1e-5)}</link>\n<link name="fr">{BOX.format(m=0.15, i=2e-5)}</link>\n'
        f'<link name="thumb">{BOX.format(m=0.05, i=1e-5)}</link>\n'
    )
    joints = (
        '<joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>'
        '<origin xyz="0 0 0.1" rpy="0.3 0 0"/></joint>\n'
        '<joint name="wrist" type="fixed"><parent link="arm"/><child link="palm"/>'
        '<origin xyz="0.4 0 0" rpy="0 0.2 0.1"/></joint>\n'
        '<joint name="left" type="prismatic"><parent link="palm"/><child link="fl"/><axis xyz="0 1 0"/>'
        '<origin xyz="0.05 0.02 0"/></joint>\n'
        '<joint name="right" type="prismatic"><parent link="palm"/><child link="fr"/><axis xyz="0 1 0"/>'
        '<origin xyz="0.05 -0.02 0"/><mimic joint="left" multiplier="-1"/></joint>\n'
        '<joint name="thumb" type="revolute"><parent link="palm"/><child link="thumb"/><axis xyz="0 0 1"/>'
        '<origin xyz="0.02 0 0.03"/><mimic joint="shoulder" multiplier="0.5" offset="0.1"/></joint>\n'
    )
    model = load_urdf(_urdf(tmp_path, joints, links), floating_base=variant == "floating", lump_fixed=False)
    if variant == "spherical-wrist":
        spec = model.spec
        bodies = tuple(
            replace(b, joint=replace(b.joint, type="spherical")) if b.joint.name == "wrist" else b for b in spec.bodies
        )
        model = Model(replace(spec, bodies=bodies), source=model.source)
    assert model.N == 6 and len(model.loop_names) == 2
    rng = np.random.default_rng(11)
    core, ref = Core(model), Simulator(model, "rk4", h_max=1e-3, backend="python")
    for _ in range(3):
        q, qd = model.assemble(*model.random_state(rng))
        x = np.concatenate((q, qd, [0.0, 0.0]))
        u = rng.normal(size=len(ref.input_names))  # the core's inputs are in input_names order
        qdd = core.rhs(x, u)[model.nq : model.nq + model.nv]
        core.set_state(x)
        core.set_inputs(u)
        lam = core.loop_lambda()
        ref.set_configuration(q, qd)
        ref.u = u
        qdd_ref = ref.rhs(ref.x)[model.nq : model.nq + model.nv]
        lam_ref = np.concatenate([v["lambda"] for v in ref.loop_outputs().values()])
        assert np.abs(qdd - qdd_ref).max() <= 1e-12 * np.abs(qdd_ref).max()
        assert np.abs(lam - lam_ref).max() <= 1e-12 * np.abs(lam_ref).max()
