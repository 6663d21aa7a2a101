"""URDF export (mbsfmu.io.urdf_export): exported and read back, every loop-free bundled model keeps its
M, RNEA and ABA (coordinates mapped by joint name; a spherical joint by its x-y-z Euler angles),
Pinocchio reads the export to the same dynamics, and the command line."""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import mbsfmu
from mbsfmu import Body, Joint, ModelError, ModelSpec, Origin, Spring
from mbsfmu.engine.model import Model
from mbsfmu.engine.spatial import R_to_quat, R_to_rpy, rpy_to_R
from mbsfmu.engine.spec.description import Coupling, Wheel
from mbsfmu.io.urdf import load_urdf, read_urdf
from mbsfmu.io.urdf_export import equivalent_box, export_urdf, robot_description, source_urdf, urdf_text, write_urdf
from tests.support.paths import DATA, MODELS, ROOT

RTOL = 1e-12  # relative to the largest entry of the reference
YAML_MODELS = sorted(MODELS.glob("*.yaml"))
URDF_CASES = [
    (MODELS / "urdf_arm7.urdf", False),
    (MODELS / "urdf_arm7.urdf", True),
    (MODELS / "urdf_quadruped.urdf", False),
    (MODELS / "urdf_quadruped.urdf", True),
    *[(p, False) for p in sorted((DATA / "urdf").glob("*.urdf"))],
]


def limits_of(path: Path) -> dict:
    robot = source_urdf(path)
    return robot.limits if robot else {}


def source_model(path: Path, floating_base: bool = False) -> Model:
    return load_urdf(path, floating_base=True) if floating_base else mbsfmu.load_model(path)


def loop_free(paths):
    return [p for p in paths if not mbsfmu.load_model(p).spec.loops]


def export_and_load(model: Model, tmp_path: Path, limits=None) -> tuple[Path, Model, bool]:
    """Write the export, read it back (floating_base when it has no world link), with the source's
    gravity (URDF carries none)."""
    path = tmp_path / "export.urdf"
    write_urdf(model, path, limits=limits)
    floating = ET.parse(path).getroot().find("link[@name='world']") is None
    back = load_urdf(path, floating_base=floating)
    return path, Model(replace(back.spec, gravity=tuple(model.spec.gravity)), source=str(path)), floating


# ---- the coordinate map between a model and its export ----------------------------------------


def euler_xyz(a, b, c, ad, bd, cd):
    """For R = Rx(a) Ry(b) Rz(c) (the export's revolute joints _rx, _ry, _rz in series): R, the map S
    with omega = S [ad, bd, cd] (relative angular velocity, child axes), and Sdot [ad, bd, cd].
    omega = Rz(c)^T Ry(b)^T e_x ad + Rz(c)^T e_y bd + e_z cd, whose columns are
    (cb cc, -cb sc, sb), (sc, cc, 0), (0, 0, 1)."""
    cb, sb, cc, sc = math.cos(b), math.sin(b), math.cos(c), math.sin(c)
    Rx = np.array([[1, 0, 0], [0, math.cos(a), -math.sin(a)], [0, math.sin(a), math.cos(a)]])
    Ry = np.array([[cb, 0, sb], [0, 1, 0], [-sb, 0, cb]])
    Rz = np.array([[cc, -sc, 0], [sc, cc, 0], [0, 0, 1]])
    S = np.array([[cb * cc, sc, 0.0], [-cb * sc, cc, 0.0], [sb, 0.0, 1.0]])
    dcol1 = np.array([-sb * bd * cc - cb * sc * cd, sb * bd * sc - cb * cc * cd, cb * bd])
    dcol2 = np.array([cc * cd, -sc * cd, 0.0])
    return Rx @ Ry @ Rz, S, ad * dcol1 + bd * dcol2


class Twin:
    """The source model's (q, v) from the export's (q_e, v_e): v = J v_e, vdot = J vdot_e + Jdot v_e
    (J a permutation but for spherical joints, mapped by their Euler angles)."""

    def __init__(self, model: Model, back: Model, floating: bool):
        self.model, self.back = model, back
        t = model.tree
        self.joints = []  # (our joint, the export's joint names, spherical?)
        for i in range(1, model.N + 1):
            if t.nv[i] == 0:
                continue
            b = model.bodies[i - 1]
            name, jtype = b.joint.name, b.joint.type
            if jtype == "spherical":
                self.joints.append((name, [name + s for s in ("_rx", "_ry", "_rz")], True))
            elif jtype == "free" and floating and b.parent == "world":
                self.joints.append((name, ["root_joint"], False))
            else:
                self.joints.append((name, [name], False))
        exported = sorted(n for _, names, _ in self.joints for n in names)
        moving = sorted(n for i, n in enumerate(back.joint_names, start=1) if back.tree.nv[i] > 0)
        assert exported == moving

    def map(self, q_e, v_e):
        """(q, v, J, Jdot v_e) of the source model."""
        m, e = self.model, self.back
        q, v = m.neutral(), np.zeros(m.nv)
        J, Jdv = np.zeros((m.nv, e.nv)), np.zeros(m.nv)
        for name, names, spherical in self.joints:
            qs, vs = m.q_slice(name), m.v_slice(name)
            if spherical:
                ie = [e.v_slice(n).start for n in names]
                angles = [q_e[e.q_slice(n)][0] for n in names]
                R, S, Sdv = euler_xyz(*angles, *v_e[ie])
                q[qs] = R_to_quat(R)
                J[vs, ie] = S
                Jdv[vs] = Sdv
            else:
                q[qs] = q_e[e.q_slice(names[0])]
                ves = e.v_slice(names[0])
                J[vs, ves] = np.eye(vs.stop - vs.start)
        v = J @ v_e
        return q, v, J, Jdv


def close(ours, ref, what):
    scale = max(np.abs(ref).max(), 1e-300)
    err = np.abs(ours - ref).max() / scale
    assert err <= RTOL, f"{what}: relative difference {err:.3g}"
    return err


def same_dynamics(model: Model, back: Model, floating: bool, seed: int) -> dict:
    """M, rigid-body RNEA and ABA (joint springs aside: URDF has no stiffness; damping compared
    exactly) of the export equal the source's at 3 random states of the export."""
    tw = Twin(model, back, floating)
    rng = np.random.default_rng(seed)
    worst = {"M": 0.0, "rnea": 0.0, "aba": 0.0}
    for _ in range(3):
        q_e, v_e = back.random_state(rng)
        qdd_e, tau_e = rng.uniform(-1, 1, back.nv), rng.uniform(-1, 1, back.nv)
        q, v, J, Jdv = tw.map(q_e, v_e)
        M = J.T @ model.mass_matrix(q) @ J
        rnea = J.T @ (model.inverse_dynamics(q, v, J @ qdd_e + Jdv) + model.passive_forces(q, v))
        rnea_e = back.inverse_dynamics(q_e, v_e, qdd_e) + back.passive_forces(q_e, v_e)
        # forward: tau = J^T tau_source, qdd_source = ABA(q, v, tau_source), qdd_e = J^-1 (qdd_source - Jdot v_e)
        tau = np.linalg.solve(J.T, tau_e)
        qdd = np.linalg.solve(J, model.forward_dynamics(q, v, tau - model.passive_forces(q, v)) - Jdv)
        aba_e = back.forward_dynamics(q_e, v_e, tau_e - back.passive_forces(q_e, v_e))
        worst["M"] = max(worst["M"], close(back.mass_matrix(q_e), M, "M"))
        worst["rnea"] = max(worst["rnea"], close(rnea_e, rnea, "RNEA"))
        worst["aba"] = max(worst["aba"], close(aba_e, qdd, "ABA"))
        np.testing.assert_array_equal(back.damping, J.T @ model.damping)  # <dynamics damping>, exact
        for frame in model.frames:  # every frame survives, at the same place
            R0, p0 = model.frame_pose(q, frame)
            R1, p1 = back.frame_pose(q_e, frame)
            np.testing.assert_allclose(R1, R0, rtol=0, atol=1e-12)
            np.testing.assert_allclose(p1, p0, rtol=0, atol=1e-12 * max(1.0, np.abs(p0).max()))
    return worst


# ---- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("path", loop_free(YAML_MODELS), ids=lambda p: p.stem)
def test_yaml_model_round_trip(tmp_path, path):
    model = mbsfmu.load_model(path)
    _, back, floating = export_and_load(model, tmp_path, limits=limits_of(path))
    worst = same_dynamics(model, back, floating, seed=len(path.stem))
    print(f"{path.stem}: worst relative difference after the round trip", {k: f"{v:.2g}" for k, v in worst.items()})


@pytest.mark.parametrize("path, floating_base", URDF_CASES, ids=lambda x: x.stem if hasattr(x, "stem") else str(x))
def test_urdf_round_trip_keeps_dynamics_names_and_limits(tmp_path, path, floating_base):
    model = source_model(path, floating_base)
    limits = read_urdf(path).limits
    out, back, floating = export_and_load(model, tmp_path, limits=limits)
    assert floating == floating_base
    same_dynamics(model, back, floating, seed=7)
    limits_back = read_urdf(out).limits
    assert {k: v for k, v in limits_back.items() if k in limits} == limits
    for k in limits_back.keys() - limits.keys():  # prismatic joints of unknown limits: the placeholder
        assert limits_back[k].upper == 1e16 and k.endswith(("_TX", "_TY")), k
    types = {j.name: j.type for j in read_urdf(path).joints}
    types_back = {j.name: j.type for j in read_urdf(out).joints}
    for name, jtype in types.items():  # planar joints come back as their three joints; fixed
        if jtype not in ("planar", "fixed"):  # joints were lumped (their links are frames, exported as links)
            assert types_back[name] == jtype, name
    links = {lk.name for lk in read_urdf(path).links}
    assert links <= {lk.name for lk in read_urdf(out).links}


def test_several_bodies_on_the_world_and_a_free_joint_with_an_origin(tmp_path):
    """A world link with each root joint; a free joint off the identity pose stays a floating joint
    with its origin (the root link alone would float about the world's origin instead)."""
    I = ((0.1, 0.01, 0.0), (0.01, 0.2, 0.0), (0.0, 0.0, 0.25))
    free = Body(
        "drone", "world", Joint("fly", "free", origin=Origin((0.0, 1.0, 2.0), (0.1, 0.2, 0.3))), 2.0, (0.1, 0, 0), I
    )
    arm = Body("arm", "world", Joint("hinge", "revolute", (0.0, 1.0, 1.0), spring=Spring(d=0.4)), 1.0, (0.3, 0, 0), I)
    model = Model(ModelSpec("pair", (free, arm), gravity=(0.0, 0.0, -3.0)))
    out, back, floating = export_and_load(model, tmp_path)
    assert not floating and back.joint_names[:1] != ("root_joint",)
    assert {j.name: j.type for j in read_urdf(out).joints} == {"fly": "floating", "hinge": "continuous"}
    worst = same_dynamics(model, back, floating, seed=2)
    assert max(worst.values()) <= RTOL


def test_loops_are_refused_naming_them():
    model = mbsfmu.load_model(MODELS / "fourbar.yaml")
    with pytest.raises(ModelError, match="closed loops cannot be exported to URDF.*'closure'"):
        urdf_text(model)


# ---- the document -----------------------------------------------------------------------------------


def one_joint_spec(**joint) -> ModelSpec:
    base = Body(
        "base", "world", Joint("j1", "revolute", (0.0, 0.0, 2.0), Origin((0.1, 0.0, 0.0), (0.0, 0.3, 0.0))), 1.0
    )
    return ModelSpec(
        "two",
        (
            replace(base, com=(0.0, 0.1, 0.0), inertia=((0.1, 0.0, 0.0), (0.0, 0.2, 0.0), (0.0, 0.0, 0.25))),
            Body(
                "arm",
                "base",
                Joint("j2", "revolute", (1.0, 0.0, 0.0), Origin((0.0, 0.0, 0.5)), **joint),
                0.5,
                (0.1, 0.0, 0.0),
                ((0.01, 0.0, 0.0), (0.0, 0.02, 0.0), (0.0, 0.0, 0.02)),
                frames={"tip": Origin((0.2, 0.0, 0.0))},
            ),
        ),
        couplings=(Coupling("j2", "j1", 0.5, 0.25),),
    )


def test_mimic_damping_spring_comment_and_exact_numbers():
    spec = one_joint_spec(spring=Spring(k=3.0, d=0.1 + 0.2, q0=0.1))
    out = export_urdf(spec)
    root = ET.fromstring(out.text.split("\n", 1)[1])  # past the XML declaration
    j2 = root.find("joint[@name='j2']")
    mimic = j2.find("mimic")
    assert mimic is not None and mimic.attrib == {"joint": "j1", "multiplier": "0.5", "offset": "0.25"}
    assert root.find("joint[@name='j1']/mimic") is None
    assert float(j2.find("dynamics").get("damping")) == 0.1 + 0.2  # repr: bit for bit
    assert j2.get("type") == "continuous" and root.find("joint[@name='j1']/axis").get("xyz") == "0.0 0.0 1.0"
    assert "no stiffness" in out.text and any("k = 3.0" in d for d in out.dropped)
    assert root.find("link[@name='tip']") is not None and root.find("link[@name='tip']/inertial") is None
    assert root.find("joint[@name='tip_joint']").get("type") == "fixed"
    assert "exported by mbsfmu" in out.text.splitlines()[1]


def test_a_coupling_on_a_missing_joint_is_an_error():
    spec = replace(one_joint_spec(), couplings=(Coupling("j2", "nope"),))
    with pytest.raises(ModelError, match=r"couplings\[0\]\.leader: unknown joint 'nope'"):
        urdf_text(spec)


def test_output_is_deterministic_and_names_no_absolute_path(tmp_path):
    path = MODELS / "branched_robot.yaml"
    model = mbsfmu.load_model(path)
    a = export_urdf(model, source=str(path)).text
    assert a == export_urdf(mbsfmu.load_model(path), source=str(path)).text
    assert "from branched_robot.yaml" in a and str(ROOT) not in a and str(Path.home()) not in a


def test_wheels_become_rotor_joints_with_the_same_spin_inertia(tmp_path):
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    root = ET.fromstring(urdf_text(model).split("\n", 1)[1])
    for w in model.spec.bodies[0].wheels:
        assert root.find(f"joint[@name='{w.name}']").get("type") == "continuous"
        el = root.find(f"link[@name='{w.name}']/inertial/inertia")
        g = np.asarray(w.axis) / np.linalg.norm(w.axis)
        I = np.array([[float(el.get("i" + a + b) or el.get("i" + b + a)) for b in "xyz"] for a in "xyz"])
        assert g @ I @ g == pytest.approx(w.inertia, rel=1e-14)


def test_robot_description_is_the_urdf_file_the_overlays_urdf_or_the_export(tmp_path):
    """robot_description: a URDF model's file text unchanged; an overlay's URDF (its ``urdf`` key,
    relative to the overlay, wherever the overlay sits); the export of a model file or of a model
    built in Python."""
    urdf = MODELS / "urdf_quadruped.urdf"
    assert robot_description(mbsfmu.load_model(urdf)) == urdf.read_text()
    overlay = MODELS / "urdf_quadruped_overlay.yaml"
    assert robot_description(mbsfmu.load_model(overlay)) == urdf.read_text()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "robot.urdf").write_text(urdf.read_text() + "<!-- moved -->\n")
    moved = tmp_path / "overlay.yaml"
    moved.write_text(overlay.read_text().replace("urdf: urdf_quadruped.urdf", "urdf: sub/robot.urdf"))
    assert robot_description(mbsfmu.load_model(moved)).endswith("<!-- moved -->\n")
    scara = mbsfmu.load_model(MODELS / "scara.yaml")
    assert robot_description(scara) == export_urdf(scara).text
    built = Model(one_joint_spec())
    assert built.source == "<python>" and robot_description(built) == export_urdf(built).text


def test_equivalent_box_has_the_mass_and_principal_moments():
    """A box of edges a, b, c: I = m/12 diag(b^2 + c^2, a^2 + c^2, a^2 + b^2), rotated by R."""
    rng = np.random.default_rng(3)
    m, edges = 2.5, np.array([0.3, 0.5, 0.9])
    R = rpy_to_R(rng.uniform(-1, 1, 3))
    a, b, c = edges
    I = R @ np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 12 @ R.T
    got, R_box = equivalent_box(m, I)
    np.testing.assert_allclose(sorted(got), edges, rtol=1e-12, atol=0)
    a, b, c = got  # along the columns of R_box: the box's inertia rotated back is I
    I_box = R_box @ np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 12 @ R_box.T
    np.testing.assert_allclose(I_box, I, rtol=0, atol=1e-14)
    assert np.linalg.det(R_box) == pytest.approx(1.0, abs=1e-14)
    assert equivalent_box(0.0, I) is None
    assert equivalent_box(1.5, np.diag([0.08, 0.0, 0.08])) is None  # a thin rod: flat


def test_rpy_inverts_rpy_to_R():
    rng = np.random.default_rng(5)
    for _ in range(20):
        rpy = rng.uniform([-3, -1.5, -3], [3, 1.5, 3])
        np.testing.assert_allclose(R_to_rpy(rpy_to_R(rpy)), rpy, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        rpy_to_R(R_to_rpy(rpy_to_R([0.3, np.pi / 2, 0.2]))), rpy_to_R([0.3, np.pi / 2, 0.2]), atol=1e-12
    )


def test_reaction_wheel_host_too_thin_is_refused():
    host = Body("hub", "world", Joint("base", "free"), 1.0, inertia=((0.01, 0, 0), (0, 0.01, 0), (0, 0, 0.01)))
    spec = ModelSpec("w", (replace(host, wheels=(Wheel("rw", (0.0, 0.0, 1.0), 0.05),)),))
    with pytest.raises(ModelError, match="wheels cannot be exported"):
        urdf_text(spec)


# ---- Pinocchio reads the export ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, floating_base",
    [(p, False) for p in loop_free(YAML_MODELS)] + URDF_CASES,
    ids=lambda x: x.stem if hasattr(x, "stem") else str(x),
)
def test_pinocchio_reads_the_export_to_the_same_dynamics(tmp_path, path, floating_base):
    pin = pytest.importorskip("pinocchio")
    from tests.support.pin_twin import UrdfTwin

    model = source_model(path, floating_base)
    out, back, floating = export_and_load(model, tmp_path, limits=limits_of(path))
    tw = UrdfTwin(back, out, floating)
    pm, pd = tw.pm, tw.pd
    pm.gravity.linear = back.gravity
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, qd = back.random_state(rng)
        qdd, tau = rng.uniform(-1, 1, back.nv), rng.uniform(-1, 1, back.nv)
        pq, pv = tw.q(q), tw.v(qd)
        M_pin = pin.crba(pm, pd, pq).copy()
        M_pin = (np.triu(M_pin) + np.triu(M_pin, 1).T)[np.ix_(tw.perm, tw.perm)]
        tau_pin = pin.rnea(pm, pd, pq, pv, tw.v(qdd)).copy()[tw.perm]  # Pinocchio's RNEA has no damping
        qdd_pin = pin.aba(pm, pd, pq, pv, tw.v(tau)).copy()[tw.perm]  # nor its ABA
        close(back.mass_matrix(q), M_pin, "M")
        close(back.inverse_dynamics(q, qd, qdd) + back.passive_forces(q, qd), tau_pin, "RNEA")
        close(back.forward_dynamics(q, qd, tau - back.passive_forces(q, qd)), qdd_pin, "ABA")


# ---- the command ------------------------------------------------------------------------------------


def test_cli_writes_the_urdf_and_warns_of_what_it_drops(run_cli, tmp_path):
    out = tmp_path / "out.urdf"
    r = run_cli("export-urdf", MODELS / "spacecraft.yaml", "-o", out)
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert "exported by mbsfmu" in text and str(ROOT) not in text and str(tmp_path) not in text
    assert "warning: not in the URDF: joint 'hinge_l': spring k = 40.0" in r.stderr
    assert "force element 'thr1'" in r.stderr


def test_cli_exports_an_overlay_with_its_urdf_limits_and_warns_of_friction(run_cli, tmp_path):
    out = tmp_path / "quadruped.urdf"
    r = run_cli("export-urdf", MODELS / "urdf_quadruped_overlay.yaml", "-o", out)
    assert r.returncode == 0, r.stderr
    assert read_urdf(out).limits == read_urdf(MODELS / "urdf_quadruped.urdf").limits
    r = run_cli("export-urdf", MODELS / "urdf_arm7.urdf", "-o", out)
    assert r.returncode == 0 and "joint 'panda_joint1': <dynamics friction> 0.05 (not modelled)" in r.stderr


def test_cli_nonexistent_model_is_one_line_exit_2(run_cli, tmp_path):
    r = run_cli("export-urdf", tmp_path / "nope.yaml", "-o", tmp_path / "x.urdf")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "nope.yaml" in r.stderr and "does not exist" in r.stderr


def test_cli_bad_model_gives_the_loader_error(run_cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nname: bad\nbodies: []\n")
    r = run_cli("export-urdf", bad, "-o", tmp_path / "x.urdf")
    assert r.returncode == 2 and "problem(s) in model" in r.stderr, r.stderr


def test_cli_unwritable_output_is_one_line(run_cli, tmp_path):
    r = run_cli("export-urdf", MODELS / "scara.yaml", "-o", tmp_path / "no" / "such" / "dir" / "x.urdf")
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "cannot write the URDF file" in r.stderr
