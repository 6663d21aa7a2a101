"""Joint couplings (URDF mimic): closed forms for a two-finger gripper, a chain of mimics, a rack
and pinion (a prismatic joint following a revolute one), the follower's effort, the checks, and
the C core against the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

from mbsfmu import ModelError
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
