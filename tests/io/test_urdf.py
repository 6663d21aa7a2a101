"""URDF import (mbsfmu.io.urdf): the same dynamics as Pinocchio's and MuJoCo's own URDF readers
on the bundled robot descriptions, errors that name the URDF element and line, and the overlay."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import mbsfmu
from mbsfmu import ModelError
from mbsfmu.io.urdf import Limit, load_urdf, read_urdf
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import MODELS, ROOT

pin = pytest.importorskip("pinocchio")
mujoco = pytest.importorskip("mujoco")

from tests.support.pin_twin import UrdfTwin  # noqa: E402

RTOL, ATOL = 1e-10, 1e-10
ARM = MODELS / "urdf_arm7.urdf"
QUADRUPED = MODELS / "urdf_quadruped.urdf"
DATA = ROOT / "tests" / "data" / "urdf"


# ---- Pinocchio as oracle ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, floating_base",
    [
        (ARM, False),
        (ARM, True),
        (QUADRUPED, False),
        (QUADRUPED, True),
        (DATA / "joint_types.urdf", False),  # its root link 'world' cannot float
    ],
    ids=lambda x: x.stem if hasattr(x, "stem") else ("floating" if x else "fixed"),
)
def test_same_M_rnea_aba_as_pinocchio(rng, path, floating_base):
    """M (CRBA), RNEA and ABA at random states equal Pinocchio's on its own parse of the file."""
    model = load_urdf(path, floating_base=floating_base)
    tw = UrdfTwin(model, path, floating_base)
    pm, pd = tw.pm, tw.pd
    assert pm.nv == model.nv
    assert sum(I.mass for I in pm.inertias) == pytest.approx(model.tree.mass.sum(), rel=1e-14)  # universe incl.
    d = -model.passive_forces(model.neutral(), np.ones(model.nv))  # URDF <dynamics damping>
    np.testing.assert_allclose(d, pm.damping[tw.perm], rtol=0, atol=0)
    worst = {"M": 0.0, "rnea": 0.0, "aba": 0.0}
    for _ in range(5):
        q, qd = model.random_state(rng)
        qdd, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        pq, pv = tw.q(q), tw.v(qd)
        # pin.crba returns data.M by reference (later calls overwrite it), upper triangle only
        M_pin = pin.crba(pm, pd, pq, pin.Convention.LOCAL).copy()
        M_pin = (np.triu(M_pin) + np.triu(M_pin, 1).T)[np.ix_(tw.perm, tw.perm)]
        tau_pin = pin.rnea(pm, pd, pq, pv, tw.v(qdd)).copy()[tw.perm]  # Pinocchio's RNEA has no damping
        qdd_pin = pin.aba(pm, pd, pq, pv, tw.v(tau)).copy()[tw.perm]
        M = model.mass_matrix(q)
        rnea = model.inverse_dynamics(q, qd, qdd) + model.passive_forces(q, qd)
        aba = model.forward_dynamics(q, qd, tau - model.passive_forces(q, qd))
        np.testing.assert_allclose(M, M_pin, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(rnea, tau_pin, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(aba, qdd_pin, rtol=RTOL, atol=ATOL)
        for key, ours, theirs in (("M", M, M_pin), ("rnea", rnea, tau_pin), ("aba", aba, qdd_pin)):
            worst[key] = max(worst[key], np.abs(ours - theirs).max() / np.abs(theirs).max())
    print(
        f"{path.stem} {'floating' if floating_base else 'fixed'}: worst relative discrepancy vs Pinocchio",
        {k: f"{v:.2g}" for k, v in worst.items()},
    )


def test_quadruped_is_a_24_link_tree_lumped_to_14_bodies_with_a_continuous_joint():
    links = load_urdf(QUADRUPED, lump_fixed=False)
    assert links.N == 24 and links.nv == 13
    assert links.subtree("FR_hip") == ["FR_hip", "FR_thigh_shoulder", "FR_thigh", "FR_calf", "FR_foot"]
    model = mbsfmu.load_model(QUADRUPED)  # fixed links (shoulders, feet, sensors) merged into their hosts
    assert model.N == 14 and model.nv == 13
    assert model.bodies[model.body_index["lidar"] - 1].joint.type == "revolute"  # URDF continuous
    assert model.subtree("FR_hip") == ["FR_hip", "FR_thigh", "FR_calf"]
    assert set(model.frames) == set(links.body_names)  # every link is still a named frame


def test_inertial_origin_rotates_the_inertia_into_link_axes(tmp_path):
    """CoM = inertial origin xyz; I_link = R I R^T with R = Rz(yaw) Ry(pitch) Rx(roll) of its rpy."""
    rpy = (0.3, -0.5, 1.1)
    I = np.array([[0.02, 0.001, -0.002], [0.001, 0.03, 0.0005], [-0.002, 0.0005, 0.04]])
    path = tmp_path / "one.urdf"
    path.write_text(f"""<robot name="one"><link name="a"><inertial>
      <origin xyz="0.1 -0.2 0.3" rpy="{' '.join(map(str, rpy))}"/><mass value="2"/>
      <inertia ixx="0.02" ixy="0.001" ixz="-0.002" iyy="0.03" iyz="0.0005" izz="0.04"/>
    </inertial></link></robot>""")
    model = load_urdf(path, floating_base=True)
    r, p, y = rpy
    Rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    Ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    Rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    R = Rz @ Ry @ Rx
    np.testing.assert_allclose(model.tree.I_c[1], R @ I @ R.T, rtol=1e-14, atol=1e-17)
    np.testing.assert_allclose(model.tree.com[1], [0.1, -0.2, 0.3], rtol=0, atol=0)
    assert model.joint_names == ("root_joint",) and model.nv == 6


def test_limits_friction_and_frames_are_read():
    robot = read_urdf(ARM)
    assert robot.limits["panda_joint4"] == Limit(lower=-3.0718, upper=-0.0698, effort=87.0, velocity=2.175)
    assert robot.friction["panda_joint1"] == 0.05  # read, not modelled
    model = mbsfmu.load_model(ARM)
    q = model.neutral()
    R, p = model.frame_pose(q, "panda_hand")  # every link is a frame of its own name
    np.testing.assert_allclose(p, [0.088, 0, 0.333 + 0.316 + 0.384 - 0.107], rtol=0, atol=1e-12)


def test_cli_info_reads_urdf(capsys):
    from mbsfmu.cli import main

    assert main(["info", str(ARM)]) == 0
    assert "panda_finger_joint2" in capsys.readouterr().out


# ---- MuJoCo as oracle ---------------------------------------------------------------------------


def mujoco_model(path) -> mujoco.MjModel:
    """MuJoCo's own URDF import of ``path`` without geometry (meshes are not shipped), fixed-joint
    links kept as bodies, inertias as given; RK4, 1 ms, no constraints (limits, contacts,
    frictionloss from URDF friction) so that it integrates the same ODE as ours."""
    root = ET.parse(path).getroot()
    for link in root.findall("link"):
        for tag in ("visual", "collision"):
            for el in link.findall(tag):
                link.remove(el)
    ET.SubElement(
        ET.SubElement(root, "mujoco"), "compiler", discardvisual="true", fusestatic="false", balanceinertia="false"
    )
    mm = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode"))
    mm.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    mm.opt.timestep = 1e-3
    mm.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONSTRAINT | mujoco.mjtDisableBit.mjDSBL_CONTACT
    assert not mm.dof_armature.any()
    return mm


def mujoco_dofs(model: mbsfmu.Model, mm) -> list[int]:
    """Our v index of each MuJoCo dof (1-DoF joints only), by joint name."""
    return [int(model.tree.iv[model.joint_index[mm.joint(int(mm.dof_jntid[k])).name]]) for k in range(mm.nv)]


def test_planar_joint_as_mujoco(rng):
    """A URDF planar joint (two prismatic and a revolute through massless bodies, MuJoCo's names
    and plane axes) gives MuJoCo's M, bias forces and accelerations, damping included."""
    path = DATA / "planar.urdf"
    model = load_urdf(path)
    assert model.joint_names == ("root_joint", "slide_TX", "slide_TY", "slide_RZ", "swing")
    mm = mujoco_model(path)
    md = mujoco.MjData(mm)
    iv = mujoco_dofs(model, mm)
    for _ in range(5):
        q, qd = model.random_state(rng)
        md.qpos[:], md.qvel[:] = q[iv], qd[iv]
        mujoco.mj_forward(mm, md)
        M = np.zeros((mm.nv, mm.nv))
        mujoco.mj_fullM(mm, md, M)
        np.testing.assert_allclose(model.mass_matrix(q)[np.ix_(iv, iv)], M, rtol=RTOL, atol=ATOL)
        # ours includes the dampers (tau = RNEA - passive); MuJoCo's bias does not
        np.testing.assert_allclose(
            model.inverse_dynamics(q, qd, np.zeros(model.nv))[iv], md.qfrc_bias - md.qfrc_passive, rtol=RTOL, atol=ATOL
        )
        np.testing.assert_allclose(model.forward_dynamics(q, qd, np.zeros(model.nv))[iv], md.qacc, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("duration", [0.1, pytest.param(2.0, marks=pytest.mark.slow)])
def test_zero_torque_arm_trajectory_matches_mujoco(duration):
    """The arm falling from a bent pose with zero torque, gravity and its URDF damping on both sides
    (MuJoCo reads <dynamics damping> too), 1 ms RK4 steps in both.

    Tolerance 1e-9 rad (rad/s for rates): both integrate the same ODE with the same classical RK4
    tableau and step (MuJoCo's RK4 adds h a_ij k_j to qpos linearly for hinge and slide joints, as
    we do, and treats damping explicitly inside qfrc_passive, unlike its Euler integrator), so the
    only differences are floating-point: CRBA + LDL^T in MuJoCo against our ABA, each ~1e-16
    relative per evaluation, grown by the motion's sensitivity over 2000 steps. Measured: about
    6e-14 rad and 1e-13 rad/s after 2 s (joint 3 has turned to ~7.9 rad by then), 1e-15 after
    0.1 s. A modelling difference (an inertia entry off by 1e-6, say) shows at ~1e-7 and fails.
    The 2 s run takes ~20 s in this Python engine (slow tier); 0.1 s runs in the fast tier."""
    model = mbsfmu.load_model(ARM)
    mm = mujoco_model(ARM)
    md = mujoco.MjData(mm)
    iv = mujoco_dofs(model, mm)
    np.testing.assert_allclose(
        mm.dof_damping, -model.passive_forces(model.neutral(), np.ones(model.nv))[iv], rtol=0, atol=0
    )
    q0 = np.array([0.3, -0.6, 0.4, -2.0, 0.5, 1.2, -0.7, 0.01, 0.02])
    md.qpos[:] = q0[iv]
    sim = Simulator(model, "rk4", h_max=1e-3)
    sim.set_configuration(q0, np.zeros(model.nv))
    n = round(duration / 1e-3)
    for _ in range(n):
        mujoco.mj_step(mm, md)
        sim.step(1e-3)
    assert md.time == pytest.approx(duration, abs=1e-12)
    np.testing.assert_allclose(sim.q[iv], md.qpos, rtol=0, atol=1e-9)
    np.testing.assert_allclose(sim.qd[iv], md.qvel, rtol=0, atol=1e-9)
    print(
        f"after {duration} s: |q - q_mujoco| = {np.abs(sim.q[iv] - md.qpos).max():.3g} rad, "
        f"|qd - qd_mujoco| = {np.abs(sim.qd[iv] - md.qvel).max():.3g} rad/s"
    )


# ---- malformed URDF -----------------------------------------------------------------------------

GOOD = """\
<?xml version="1.0"?>
<robot name="robot">
  <link name="base">
    <inertial>
      <mass value="2.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/>
    </inertial>
  </link>
  <link name="upper">
    <inertial>
      <origin xyz="0 0 0.2"/>
      <mass value="1.0"/>
      <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.001"/>
    </inertial>
  </link>
  <link name="fore">
    <inertial>
      <origin xyz="0 0 0.15"/>
      <mass value="0.5"/>
      <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.0005"/>
    </inertial>
  </link>
  <joint name="shoulder" type="revolute">
    <parent link="base"/>
    <child link="upper"/>
    <axis xyz="0 1 0"/>
    <limit lower="-2" upper="2" effort="10" velocity="5"/>
  </joint>
  <joint name="elbow" type="revolute">
    <origin xyz="0 0 0.4"/>
    <parent link="upper"/>
    <child link="fore"/>
    <axis xyz="0 1 0"/>
  </joint>
</robot>
"""
FORE_INERTIAL = """    <inertial>
      <origin xyz="0 0 0.15"/>
      <mass value="0.5"/>
      <inertia ixx="0.004" ixy="0" ixz="0" iyy="0.004" iyz="0" izz="0.0005"/>
    </inertial>
"""
EXTRA = "</robot>"  # insertion point for extra elements

# case: (edits of GOOD, element named, text on the reported line, message fragment)
BAD = {
    "broken XML": (
        [('name="robot"', 'name="robot & co"')],
        "(top level)",
        'name="robot & co"',
        "broken XML: not well-formed (invalid token)",
    ),
    "unknown joint type": (
        [('"elbow" type="revolute"', '"elbow" type="hinge"')],
        "joint 'elbow'",
        '"hinge"',
        "unknown type 'hinge'; expected one of revolute, continuous, prismatic",
    ),
    "negative mass": (
        [('<mass value="0.5"/>', '<mass value="-0.5"/>')],
        "link 'fore'/inertial/mass",
        'value="-0.5"',
        "negative mass -0.5 kg",
    ),
    "joint moves no mass": (
        [(FORE_INERTIAL, "")],
        "joint 'elbow'",
        'name="elbow"',
        "joint 'elbow' moves no mass or inertia (body 'fore' and its subtree)",
    ),
    "bad inertia": (
        [('ixx="0.004"', 'ixx="0.0002"')],
        "link 'fore'/inertial/inertia",
        'ixx="0.0002"',
        "principal moments violate the triangle inequality",
    ),
    "cycle": (
        [(EXTRA, '<joint name="loop" type="fixed"><parent link="fore"/><child link="base"/></joint>\n' + EXTRA)],
        "joint 'loop'",
        'name="loop"',
        "links base -> fore -> upper -> base form a cycle",
    ),
    "duplicate link": (
        [(EXTRA, '<link name="upper"/>\n' + EXTRA)],
        "link 'upper'",
        '<link name="upper"/>',
        "duplicate link name 'upper' (also line 9)",
    ),
    "duplicate joint": (
        [('"elbow" type', '"shoulder" type')],
        "joint 'shoulder'",
        '"shoulder" type="revolute">\n    <origin',
        "duplicate joint name 'shoulder' (also line 23)",
    ),
    "missing parent link": (
        [('<parent link="upper"/>', '<parent link="uper"/>')],
        "joint 'elbow'/parent",
        '"uper"',
        "unknown parent link 'uper' (did you mean 'upper'?)",
    ),
    "missing child link": (
        [('<child link="fore"/>', '<child link="forearm"/>')],
        "joint 'elbow'/child",
        '"forearm"',
        "unknown child link 'forearm'",
    ),
    "two roots": (
        [
            (
                EXTRA,
                '<link name="tool"><inertial><mass value="1"/>'
                '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>\n' + EXTRA,
            )
        ],
        "link 'tool'",
        '<link name="tool">',
        "second root link: neither 'base' (line 3) nor 'tool'",
    ),
    "two parents": (
        [(EXTRA, '<joint name="extra" type="fixed">\n<parent link="base"/>\n<child link="fore"/>\n</joint>\n' + EXTRA)],
        "joint 'extra'/child",
        '<child link="fore"/>\n</joint>',
        "link 'fore' is already the child of joint 'elbow' (line 29)",
    ),
    "mimic": (
        [
            (
                '<axis xyz="0 1 0"/>\n  </joint>\n</robot>',
                '<axis xyz="0 1 0"/>\n    <mimic joint="shouldr" multiplier="-1"/>\n  </joint>\n</robot>',
            )
        ],
        "joint 'elbow'/mimic",
        "<mimic",
        "unknown joint 'shouldr' (did you mean 'shoulder'?)",
    ),
    "mimic cycle": (
        [
            (
                '<axis xyz="0 1 0"/>\n  </joint>\n</robot>',
                '<axis xyz="0 1 0"/>\n    <mimic joint="shoulder"/>\n  </joint>\n</robot>',
            ),
            ('"shoulder" type="revolute">', '"shoulder" type="revolute">\n    <mimic joint="elbow" multiplier="2"/>'),
        ],
        "joint 'shoulder'/mimic",
        '<mimic joint="elbow"',
        "joints shoulder -> elbow -> shoulder follow each other in a cycle: one must lead",
    ),
    "mimic bad number": (
        [
            (
                '<axis xyz="0 1 0"/>\n  </joint>\n</robot>',
                '<axis xyz="0 1 0"/>\n    <mimic joint="shoulder" multiplier="two"/>\n  </joint>\n</robot>',
            )
        ],
        "joint 'elbow'/mimic@multiplier",
        "<mimic",
        "expected a finite number, got 'two'",
    ),
    "bad number": (
        [('<origin xyz="0 0 0.4"/>', '<origin xyz="0 0"/>')],
        "joint 'elbow'/origin@xyz",
        'xyz="0 0"',
        "expected 3 finite numbers separated by spaces, got '0 0'",
    ),
    "zero axis": (
        [('<axis xyz="0 1 0"/>\n  </joint>\n</robot>', '<axis xyz="0 0 0"/>\n  </joint>\n</robot>')],
        "joint 'elbow'/axis",
        'xyz="0 0 0"',
        "zero-length axis [0.0, 0.0, 0.0]: a revolute joint",
    ),
    "bad limits": (
        [('lower="-2" upper="2"', 'lower="2" upper="-2"')],
        "joint 'shoulder'/limit",
        'lower="2"',
        "lower limit 2.0 is above upper limit -2.0",
    ),
    "missing mass": (
        [('      <mass value="0.5"/>\n', '')],
        "link 'fore'/inertial",
        "<inertial>\n      <origin xyz=\"0 0 0.15\"/>\n      <inertia",
        "missing <mass value=...>",
    ),
    "missing type": (
        [('"elbow" type="revolute"', '"elbow"')],
        "joint 'elbow'",
        'name="elbow"',
        "missing attribute 'type'",
    ),
    "not a robot": (
        [('<robot name="robot">', '<model name="robot">'), ("</robot>", "</model>")],
        "<model>",
        '<model name="robot">',
        "the root element of a URDF file must be <robot>",
    ),
}


def line_of(text: str, snippet: str) -> int:
    assert text.count(snippet) == 1, f"snippet {snippet!r} not unique"
    return text[: text.index(snippet)].count("\n") + 1


@pytest.mark.parametrize("case", list(BAD))
def test_malformed_urdf_names_element_and_line(tmp_path, case):
    edits, label, snippet, fragment = BAD[case]
    text = GOOD
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new)
    path = tmp_path / "robot.urdf"
    path.write_text(text)
    with pytest.raises(ModelError) as err:
        mbsfmu.load_model(path)
    line = line_of(text, snippet)
    msg = str(err.value)
    assert f"robot.urdf:{line}: {label}: " in msg, msg
    assert fragment in msg, msg


@pytest.mark.parametrize("xyz", ["0 0 1 5", "0 1", "0 x 1", "0 nan 1"])
def test_an_axis_that_cannot_be_read_is_one_problem_not_also_a_zero_length_axis(tmp_path, xyz):
    text = GOOD.replace('<axis xyz="0 1 0"/>\n  </joint>\n</robot>', f'<axis xyz="{xyz}"/>\n  </joint>\n</robot>')
    (tmp_path / "robot.urdf").write_text(text)
    with pytest.raises(ModelError) as err:
        mbsfmu.load_model(tmp_path / "robot.urdf")
    assert len(err.value.problems) == 1 and "zero-length" not in str(err.value), str(err.value)
    assert f"joint 'elbow'/axis@xyz: expected 3 finite numbers separated by spaces, got '{xyz}'" in str(err.value)


LINK = (
    '  <link name="{}"><inertial><mass value="1"/>'
    '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>\n'
)
JOINT = '  <joint name="{}" type="revolute"><parent link="{}"/><child link="{}"/><axis xyz="1 0 0"/>{}</joint>\n'


def _problems(tmp_path, text: str) -> list[str]:
    (tmp_path / "robot.urdf").write_text(text)
    with pytest.raises(ModelError) as err:
        mbsfmu.load_model(tmp_path / "robot.urdf")
    return [p.message for p in err.value.problems]


def test_a_mimic_cycle_and_a_missing_mimic_leader_in_one_round(tmp_path):
    text = GOOD.replace(
        '<axis xyz="0 1 0"/>\n    <limit', '<axis xyz="0 1 0"/>\n    <mimic joint="elbow"/>\n    <limit'
    )
    text = text.replace(
        "</joint>\n</robot>",
        '  <mimic joint="shoulder"/>\n  </joint>\n'
        + LINK.format("hand")
        + JOINT.format("wrist", "fore", "hand", '<mimic joint="nothere"/>')
        + "</robot>",
    )
    problems = _problems(tmp_path, text)
    assert len(problems) == 2, problems
    assert any("follow each other in a cycle" in p for p in problems)
    assert any("unknown joint 'nothere'" in p for p in problems)


def test_a_link_cycle_and_a_joint_from_a_link_to_itself_in_one_round(tmp_path):
    extra = LINK.format("p") + LINK.format("q") + JOINT.format("j1", "p", "q", "") + JOINT.format("j2", "q", "p", "")
    extra += LINK.format("x") + JOINT.format("selfj", "x", "x", "")
    problems = _problems(tmp_path, GOOD.replace("</robot>", extra + "</robot>"))
    assert len(problems) == 2, problems  # no "second root link 'x'": x is a joint's child, if a faulty one
    assert any("links p -> q -> p form a cycle" in p or "links q -> p -> q form a cycle" in p for p in problems)
    assert any("joint 'selfj' connects link 'x' to itself" in p for p in problems)


def test_good_urdf_loads(tmp_path):
    (tmp_path / "robot.urdf").write_text(GOOD)
    model = mbsfmu.load_model(tmp_path / "robot.urdf")
    assert model.joint_names == ("root_joint", "shoulder", "elbow") and model.nv == 2


def test_unknown_joint_type_message_as_documented(tmp_path):
    text = GOOD.replace('"elbow" type="revolute"', '"elbow" type="hinge"')
    (tmp_path / "robot.urdf").write_text(text)
    with pytest.raises(ModelError, match=r"robot\.urdf:29: joint 'elbow': unknown type 'hinge'"):
        mbsfmu.load_model(tmp_path / "robot.urdf")


def test_massless_moving_link_is_legal_when_its_children_carry_mass(tmp_path):
    """As in Pinocchio: a link without <inertial> has no mass; on a moving joint it is legal as
    long as something it carries has mass (here a fixed child)."""
    text = GOOD.replace(FORE_INERTIAL, "").replace(
        EXTRA,
        f'<link name="tool">\n{FORE_INERTIAL}</link>\n'
        '<joint name="mount" type="fixed"><parent link="fore"/>'
        '<child link="tool"/></joint>\n' + EXTRA,
    )
    (tmp_path / "robot.urdf").write_text(text)
    model = load_urdf(tmp_path / "robot.urdf", lump_fixed=False)
    assert model.tree.mass[model.body_index["fore"]] == 0.0 and model.nv == 2
    lumped = mbsfmu.load_model(tmp_path / "robot.urdf")  # the tool's mass carried by 'fore'
    assert lumped.tree.mass[lumped.body_index["fore"]] > 0.0 and "tool" in lumped.frames


def test_world_root_link_cannot_float():
    with pytest.raises(ModelError, match="floating_base: the root link is 'world'"):
        load_urdf(DATA / "joint_types.urdf", floating_base=True)


# ---- overlay ------------------------------------------------------------------------------------

OVERLAY = """\
version: 1
urdf: robot.urdf
name: robot_with_extras
gravity: [0, 0, -1.62]
joints:
  elbow: {spring: {k: 5.0, q0: 0.1}}
wheels:
  fore:
    - {name: rw1, axis: [0, 0, 1], inertia: 0.001, position: [0, 0, 0.3]}
forces:
  - {type: spring, name: tether, a: {body: fore, point: [0, 0, 0.3]}, b: {body: world, point: [0.2, 0, 0.5]},
     k: 20.0, d: 0.5, l0: 0.1}
initial:
  q: {shoulder: 0.4, elbow: -0.3}
  qd: {rw1: 50.0}
"""


def write_overlay(tmp_path, overlay=OVERLAY, urdf=GOOD):
    (tmp_path / "robot.urdf").write_text(urdf)
    path = tmp_path / "overlay.yaml"
    path.write_text(overlay)
    return path


def test_overlay_adds_wheels_springs_forces_gravity_and_simulates(tmp_path):
    model = mbsfmu.load_model(
        write_overlay(
            tmp_path,
            urdf=GOOD.replace(
                '<axis xyz="0 1 0"/>\n  </joint>\n</robot>',
                '<axis xyz="0 1 0"/>\n    <dynamics damping="0.3"/>\n  </joint>\n</robot>',
            ),
        )
    )
    assert model.name == "robot_with_extras"
    np.testing.assert_array_equal(model.gravity, [0, 0, -1.62])
    assert "rw1" in model.wheels
    elbow = model.bodies[model.joint_index["elbow"] - 1].joint
    assert elbow.spring == mbsfmu.Spring(k=5.0, d=0.3, q0=0.1)  # d kept from the URDF's <dynamics damping>
    q, qd = model.initial_state()
    assert q[model.q_slice("shoulder")] == 0.4 and qd[model.v_slice("rw1")] == 50.0
    sim = Simulator(model, "rk4", h_max=1e-3)
    assert {"shoulder.tau", "elbow.tau", "rw1.torque"} <= set(sim.input_names)
    E0 = sim.invariants().E
    sim.set_input("rw1.torque", 0.01)
    for _ in range(20):
        sim.step(1e-3)
    assert np.all(np.isfinite(sim.q)) and sim.qd[model.v_slice("rw1")][0] > 50.0
    W_in, W_diss = sim.work  # energy balance of the whole overlay model: E - E0 = W_in + W_diss
    E1 = sim.invariants().E
    assert E1 - E0 == pytest.approx(W_in + W_diss, rel=1e-6, abs=1e-9)


def test_bundled_quadruped_overlay_floats_and_falls():
    model = mbsfmu.load_model(MODELS / "urdf_quadruped_overlay.yaml")
    assert model.joint_names[0] == "root_joint" and model.bodies[0].joint.type == "free"
    assert model.nq == 20 and model.nv == 19 and model.N == 14  # 24 links, fixed ones lumped
    sim = Simulator(model, "rk4", h_max=1e-3)
    assert "lidar_joint.tau" not in sim.input_names and "push.f[3]" in sim.input_names
    R0, Rdot0 = sim.invariants().R, sim.invariants().Rdot
    for _ in range(10):
        sim.step(1e-3)
    t = 0.01  # the CM falls freely whatever the legs and the lidar do (RK4 is exact on a parabola)
    np.testing.assert_allclose(sim.invariants().R, R0 + Rdot0 * t + 0.5 * model.gravity * t**2, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "overlay, where, fragment",
    [
        (OVERLAY.replace("wheels:", "wheel:"), "overlay.yaml:7: wheel", "unknown key 'wheel' (did you mean 'wheels'?)"),
        (
            OVERLAY.replace("  fore:", "  forr:"),
            "overlay.yaml:8: wheels.forr",
            "unknown link 'forr' (did you mean 'fore'?)",
        ),
        (
            OVERLAY.replace("  elbow: {spring", "  elbw: {spring"),
            "overlay.yaml:6: joints.elbw",
            "unknown joint 'elbw' (did you mean 'elbow'?)",
        ),
        (
            OVERLAY.replace("{k: 5.0, q0", "{k: 5.0, kk: 1, q0"),
            "overlay.yaml:6: joints.elbow.spring.kk",
            "unknown key 'kk'",
        ),
        (
            OVERLAY.replace("inertia: 0.001", "inertia: -0.001"),
            "overlay.yaml:9: wheels.fore[0].inertia",
            "wheel spin inertia must be positive",
        ),
        (OVERLAY.replace("{k: 5.0,", "{k: -5.0,"), "overlay.yaml:6: joints.elbow.spring.k", "negative stiffness -5.0"),
        (
            OVERLAY.replace("{shoulder: 0.4", "{shouldr: 0.4"),
            "overlay.yaml:14: initial.q.shouldr",
            "unknown joint 'shouldr' (did you mean 'shoulder'?)",
        ),
        (OVERLAY.replace("urdf: robot.urdf", "urdf: robt.urdf"), "overlay.yaml:2: urdf", "robt.urdf' does not exist"),
        (
            OVERLAY.replace("version: 1", "version: 1\nfloating_base: yes please"),
            "overlay.yaml:2: floating_base",
            "expected true or false",
        ),
    ],
)
def test_overlay_problems_name_the_entry(tmp_path, overlay, where, fragment):
    with pytest.raises(ModelError) as err:
        mbsfmu.load_model(write_overlay(tmp_path, overlay))
    msg = str(err.value)
    assert where in msg and fragment in msg, msg


def test_overlay_reports_urdf_problems_with_their_file_and_line(tmp_path):
    urdf = GOOD.replace('"elbow" type="revolute"', '"elbow" type="hinge"')
    with pytest.raises(ModelError) as err:
        mbsfmu.load_model(write_overlay(tmp_path, OVERLAY.replace("wheels:", "wheel:"), urdf))
    msg = str(err.value)
    assert re.search(r"overlay\.yaml: \S*robot\.urdf:29: joint 'elbow': unknown type 'hinge'", msg), msg
    assert "overlay.yaml:7: wheel: unknown key 'wheel'" in msg, msg


def test_overlay_reports_model_problems_at_the_urdf_element(tmp_path):
    """The model's own checks (here the mass) point into the URDF even when loaded by an overlay."""
    urdf = GOOD.replace('<mass value="0.5"/>', '<mass value="-0.5"/>')
    with pytest.raises(ModelError) as err:
        mbsfmu.load_model(write_overlay(tmp_path, OVERLAY, urdf))
    msg = str(err.value)
    line = line_of(urdf, 'value="-0.5"')
    where = rf"overlay\.yaml: \S*robot\.urdf:{line}: link 'fore'/inertial/mass"
    assert re.search(where + ": negative mass -0.5 kg", msg), msg
