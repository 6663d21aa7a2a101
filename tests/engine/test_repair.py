"""Opt-in inertia repair (mbsfmu/engine/spec/repair.py): what is changed and by how much, where it
is reported (Model.notes, `mbsfmu info`, the run report, the native FMU's log), and that nothing
changes without the option."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mbsfmu
from mbsfmu import ModelError
from mbsfmu.cli import main
from mbsfmu.engine.spatial import rpy_to_R
from mbsfmu.engine.spec.description import Body, Joint, ModelSpec
from mbsfmu.engine.spec.repair import repair_inertia

R = rpy_to_R(np.array([0.3, -0.2, 0.9]))
BROKEN = R @ np.diag([1.0, 2.0, 5.0]) @ R.T  # 1 + 2 < 5
NEGATIVE = R @ np.diag([-0.5, 2.0, 2.5]) @ R.T


def _spec(I) -> ModelSpec:
    good = ((0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1))
    return ModelSpec(
        "r",
        (
            Body("base", "world", Joint("root", "fixed"), 1.0, inertia=tuple(map(tuple, BROKEN))),  # never moves
            Body("arm", "base", Joint("j", "revolute"), 2.0, (0.1, 0.0, 0.0), tuple(map(tuple, I))),
            Body("hand", "arm", Joint("k", "revolute"), 1.0, (0.0, 0.1, 0.0), good),
        ),
    )


@pytest.mark.parametrize(
    "I, before, after", [(BROKEN, [1, 2, 5], [2, 3, 5]), (NEGATIVE, [-0.5, 2, 2.5], [0.25, 2.25, 2.5])]
)
def test_smallest_moments_raised_axes_mass_and_com_kept(I, before, after):
    spec, repairs = repair_inertia(_spec(I))
    assert [r.body for r in repairs] == ["arm"]  # the welded base is not a moving body
    arm = spec.bodies[1]
    assert arm.mass == 2.0 and arm.com == (0.1, 0.0, 0.0) and spec.bodies[2] == _spec(I).bodies[2]
    np.testing.assert_allclose(repairs[0].before, before, atol=1e-14)
    np.testing.assert_allclose(repairs[0].after, after, atol=1e-14)
    np.testing.assert_allclose(R.T @ np.asarray(arm.inertia) @ R, np.diag(after), atol=1e-14)  # same axes
    assert (
        spec.notes == (repairs[0].note(),) and "'arm'" in spec.notes[0] and "% of the largest moment" in spec.notes[0]
    )
    mbsfmu.Model(spec)  # loads


def test_without_the_option_the_refusal_names_it():
    with pytest.raises(ModelError, match=r"bodies\[1\].inertia.*triangle inequality.*--repair-inertia"):
        mbsfmu.Model(_spec(BROKEN))
    assert repair_inertia(_spec(np.diag([1.0, 2.0, 3.0])))[1] == ()  # physical: untouched


URDF = """<?xml version="1.0"?>
<robot name="vendor">
  <link name="base"><inertial><mass value="3"/>
    <inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>
  <link name="arm"><inertial><origin xyz="0 0 0.2"/><mass value="1"/>
    <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.001" iyz="0" izz="0.01"/></inertial></link>
  <joint name="shoulder" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>
    <dynamics damping="0.1" friction="0.5"/></joint>
</robot>
"""


def test_overlay_option_cli_flag_and_run_report(tmp_path, capsys):
    (tmp_path / "vendor.urdf").write_text(URDF)
    with pytest.raises(ModelError, match="repair_inertia: true"):
        mbsfmu.load_model(tmp_path / "vendor.urdf")
    assert main(["info", str(tmp_path / "vendor.urdf")]) == 2
    assert main(["info", "--repair-inertia", str(tmp_path / "vendor.urdf")]) == 0
    out = capsys.readouterr().out
    assert "note: inertia of body 'arm' repaired (repair_inertia): principal moments [0.001, 0.001, 0.01]" in out
    assert "note: joint Coulomb friction (<dynamics friction>) is read but not modelled on 1 joint(s) (shoulder)" in out
    (tmp_path / "vendor.yaml").write_text("version: 1\nurdf: vendor.urdf\nrepair_inertia: true\n")
    model = mbsfmu.load_model(tmp_path / "vendor.yaml")
    assert len(model.notes) == 2 and np.linalg.eigvalsh(np.asarray(model.bodies[1].inertia)).tolist() == pytest.approx(
        [0.005, 0.005, 0.01], abs=1e-15
    )
    (tmp_path / "s.yaml").write_text(
        "version: 1\nname: s\nmodel: vendor.yaml\nduration: 0.01\ndt: 0.005\nintegrator: {method: rk4}\n"
    )
    assert main(["run", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["model_notes"] == list(model.notes)
    assert "mbsfmu: note: inertia of body 'arm' repaired" in capsys.readouterr().err
