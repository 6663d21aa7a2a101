"""Named poses: a model file's ``named_poses`` section and an SRDF's group states (beside a URDF, or
named by an overlay's ``srdf`` key) read as named joint configurations; every bad entry reported
with its file, line and field in one round."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

import mbsfmu
from mbsfmu.errors import InputError, ModelError
from tests.support.paths import MODELS

MODEL = """\
version: 1
name: arm
bodies:
  - name: link1
    parent: world
    joint: {name: q1, type: revolute, axis: [0, 0, 1]}
    mass: 1.0
    com: [0.5, 0, 0]
    inertia: {Ixx: 0.01, Iyy: 0.1, Izz: 0.1}
  - name: ball
    parent: link1
    joint: {name: s, type: spherical, origin: {xyz: [1, 0, 0]}}
    mass: 1.0
    inertia: {Ixx: 0.01, Iyy: 0.01, Izz: 0.01}
initial: {q: {q1: 0.3}}
named_poses:
  home: {q1: 0.0}
  tilted: {q1: 1.0, s: [0.0, 1.0, 0.0, 0.0]}
"""


def test_model_file_poses_over_the_initial_state(tmp_path):
    """A pose sets its joints and keeps the others at the file's initial values."""
    path = tmp_path / "arm.yaml"
    path.write_text(MODEL)
    model = mbsfmu.load_model(path)
    assert model.named_poses == ("home", "tilted")
    np.testing.assert_array_equal(model.named_configuration("home"), [0.0, 1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(model.named_configuration("tilted"), [1.0, 0.0, 1.0, 0.0, 0.0])
    with pytest.raises(InputError, match="no named pose 'away'.*home, tilted"):
        model.named_configuration("away")


def test_model_file_pose_problems_name_line_and_field_in_one_round(tmp_path):
    bad = MODEL.replace("  home: {q1: 0.0}\n", "  home: {q3: 0.0}\n  empty: {}\n  odd: [1, 2]\n").replace(
        "q1: 1.0, s: [0.0, 1.0, 0.0, 0.0]", "q1: [1, 2], s: [0.0, 2.0, 0.0, 0.0]"
    )
    path = tmp_path / "bad.yaml"
    path.write_text(bad)
    with pytest.raises(ModelError) as e:
        mbsfmu.load_model(path)
    text = str(e.value)
    lines = dict(zip(("home", "empty", "odd", "tilted"), range(len(bad.splitlines()) - 3, len(bad.splitlines()) + 1)))
    for want in (
        f"bad.yaml:{lines['home']}: named_poses.home.q3: unknown joint 'q3'",
        f"bad.yaml:{lines['empty']}: named_poses.empty: expected a non-empty mapping",
        f"bad.yaml:{lines['odd']}: named_poses.odd: expected a non-empty mapping",
        f"bad.yaml:{lines['tilted']}: named_poses.tilted.s: quaternion (w, x, y, z) [0.0, 2.0, 0.0, 0.0] has norm 2",
        f"bad.yaml:{lines['tilted']}: named_poses.tilted.q1: joint 'q1' (revolute) takes 1 value(s) for q, got 2",
    ):
        assert want in text, text


def test_bundled_arm_srdf_group_states(tmp_path):
    """urdf_arm7.srdf beside urdf_arm7.urdf: its group states, with their groups, are the named poses."""
    model = mbsfmu.load_model(MODELS / "urdf_arm7.urdf")
    assert model.named_poses == ("ready", "extended", "open", "closed")
    assert model.spec.named_poses["open"].group == "hand"
    q = model.named_configuration("ready")
    assert q[model.q_slice("panda_joint4")] == pytest.approx(-3 * np.pi / 4, abs=1e-8)
    assert q[model.q_slice("panda_finger_joint1")] == 0.0  # not in the arm's group: its initial value


SRDF = """\
<?xml version="1.0"?>
<robot name="arm7">
  <group_state name="up" group="arm">
    <joint name="panda_joint1" value="0.5"/>
  </group_state>
  <group_state name="bad" group="arm">
    <joint name="panda_joint9" value="0"/>
    <joint name="panda_joint8" value="0"/>
    <joint name="panda_joint2" value="zero"/>
  </group_state>
  <group_state name="up" group="hand">
    <joint name="panda_finger_joint1" value="0.01"/>
  </group_state>
</robot>
"""


def arm_copy(tmp_path, srdf: str | None = None, name: str = "urdf_arm7.srdf"):
    urdf = tmp_path / "urdf_arm7.urdf"
    shutil.copy(MODELS / "urdf_arm7.urdf", urdf)
    if srdf is not None:
        (tmp_path / name).write_text(srdf)
    return urdf


def test_srdf_problems_name_the_srdf_lines(tmp_path):
    with pytest.raises(ModelError) as e:
        mbsfmu.load_model(arm_copy(tmp_path, SRDF))
    text = str(e.value)
    for want in (
        "urdf_arm7.srdf:7: group_state 'bad' joint 'panda_joint9': unknown joint 'panda_joint9'",
        "urdf_arm7.srdf:8: group_state 'bad' joint 'panda_joint8': unknown joint 'panda_joint8'",  # fixed: lumped
        "urdf_arm7.srdf:9: group_state 'bad' joint 'panda_joint2': expected 1 finite number(s) in 'value', got 'zero'",
        "urdf_arm7.srdf:11: group_state 'up': the name 'up' is given twice (also line 3)",
    ):
        assert want in text, text


def test_overlay_names_its_srdf(tmp_path):
    """An overlay's ``srdf`` key names the SRDF (relative to the overlay); a missing one is reported."""
    arm_copy(tmp_path, SRDF.split("  <group_state name=\"bad\"")[0] + "</robot>\n", name="poses.srdf")
    overlay = tmp_path / "arm.yaml"
    overlay.write_text("version: 1\nurdf: urdf_arm7.urdf\nsrdf: poses.srdf\n")
    model = mbsfmu.load_model(overlay)
    assert model.named_poses == ("up",) and model.named_configuration("up")[0] == 0.5
    overlay.write_text("version: 1\nurdf: urdf_arm7.urdf\nsrdf: missing.srdf\n")
    with pytest.raises(ModelError, match=r"arm.yaml:3: srdf: SRDF file .*missing.srdf' does not exist"):
        mbsfmu.load_model(overlay)


def test_urdf_export_lists_the_named_poses_as_dropped():
    """A URDF has no place for them: export-urdf says so instead of losing them silently."""
    from mbsfmu.io.urdf_export import export_urdf

    out = export_urdf(mbsfmu.load_model(MODELS / "scara.yaml"))
    assert "the named poses stretched, hanging, folded (an SRDF carries them, a URDF cannot)" in out.dropped


def test_info_lists_the_named_poses(run_cli):
    out = run_cli("info", str(MODELS / "urdf_arm7.urdf"))
    assert out.returncode == 0 and "named poses: ready, extended, open, closed\n" in out.stdout, out
