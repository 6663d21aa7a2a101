"""Opt-in inertia repair (mbsfmu/engine/spec/repair.py): what is changed and by how much, where it
is reported (Model.notes, `mbsfmu info`, the run report, the native FMU's log), and that nothing
changes without the option."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml

import mbsfmu
import mbsfmu.engine.spec.repair
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
    with pytest.raises(ModelError, match=r"bodies\[1\].inertia.*triangle inequality.*repair_inertia\(spec\)"):
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
        "outputs: {plots: false}\n"  # matplotlib adds nothing here
    )
    assert main(["run", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out")]) == 0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["model_notes"] == list(model.notes)
    assert "mbsfmu: note: inertia of body 'arm' repaired" in capsys.readouterr().err


# ---- the advice printed for a non-physical inertia, followed exactly as written --------------------

ARM = (
    "  - name: arm\n    parent: world\n    joint: {type: revolute, axis: [0, 1, 0]}\n    mass: 1.0\n"
    "    com: [0, 0, 0.2]\n    inertia: {Ixx: 0.001, Iyy: 0.001, Izz: 0.01}\n"
)
LEAD = "; to load it anyway with the smallest moments raised (each change reported), "


def _advice(message: str) -> str:
    assert message.count(LEAD) == 1, message
    return message.split(LEAD, 1)[1].split("\n")[0]


def _commands(advice: str) -> list[list[str]]:
    """The `mbsfmu ...` commands the advice names, as argument lists."""
    return [cmd.split()[1:] for cmd in re.findall(r"`(mbsfmu [^`]*)`", advice)]


def _refused(run_cli, path) -> str:
    result = run_cli("info", str(path))
    assert result.returncode == 2 and "triangle inequality" in result.stderr, result.stderr
    return _advice(result.stderr)


def _scenario_runs(run_cli, tmp_path, model: str) -> None:
    text = f"version: 1\nmodel: {model}\nduration: 0.01\ndt: 0.005\noutputs: {{plots: false}}\n"  # no matplotlib
    (tmp_path / "s.yaml").write_text(text)
    result = run_cli("run", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "inertia of body 'arm' repaired" in result.stderr


def test_advice_for_a_yaml_model_works_as_written(tmp_path, run_cli):
    path = tmp_path / "tri.yaml"
    path.write_text("version: 1\nname: tri\nbodies:\n" + ARM)
    advice = _refused(run_cli, path)
    assert "--repair-inertia" not in advice.replace(f"`mbsfmu info --repair-inertia {path}`", "")  # no flag run lacks
    for args in _commands(advice):
        result = run_cli(*args)
        assert result.returncode == 0 and "repaired (repair_inertia)" in result.stdout, (args, result.stderr)
    key = re.fullmatch(r"add (repair_inertia: true) at the top level of (\S+);.*", advice)
    assert key and key[2] == str(path), advice
    path.write_text(path.read_text() + key[1] + "\n")  # as the advice says
    assert run_cli("info", str(path)).returncode == 0
    _scenario_runs(run_cli, tmp_path, "tri.yaml")  # the file itself now asks for it: run, FMUs, ... all load it


def test_advice_for_a_json_model_works_as_written(tmp_path, run_cli):
    doc = yaml.safe_load("version: 1\nname: tri\nbodies:\n" + ARM)
    path = tmp_path / "tri.json"
    path.write_text(json.dumps(doc))
    advice = _refused(run_cli, path)
    key = re.fullmatch(r'add "(repair_inertia)": (true) to the top-level object of (\S+)', advice)
    assert key and key[3] == str(path), advice
    path.write_text(json.dumps({**doc, key[1]: json.loads(key[2])}))
    assert run_cli("info", str(path)).returncode == 0


def test_advice_for_a_urdf_works_as_written(tmp_path, run_cli):
    path = tmp_path / "vendor.urdf"
    path.write_text(URDF)
    advice = _refused(run_cli, path)
    for args in _commands(advice):
        result = run_cli(*args)
        assert result.returncode == 0 and "repaired (repair_inertia)" in result.stdout, (args, result.stderr)
    overlay = re.search(r"a YAML file beside it reading ((?:`[^`]*`(?:, )?)+)", advice)
    assert overlay, advice
    (tmp_path / "vendor.yaml").write_text("".join(line + "\n" for line in re.findall(r"`([^`]*)`", overlay[1])))
    assert run_cli("info", str(tmp_path / "vendor.yaml")).returncode == 0
    _scenario_runs(run_cli, tmp_path, "vendor.yaml")


def test_advice_for_an_inline_scenario_model_works_as_written(tmp_path, run_cli):
    path = tmp_path / "s.yaml"
    body = "".join("  " + line + "\n" for line in ("bodies:\n" + ARM).splitlines())
    path.write_text(f"version: 1\nduration: 0.01\ndt: 0.005\noutputs: {{plots: false}}\nmodel:\n  version: 1\n{body}")
    result = run_cli("run", str(path), "-o", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 2, result.stderr
    key = re.fullmatch(r"add (repair_inertia: true) to the model: section of (\S+)", _advice(result.stderr))
    assert key and key[2] == str(path), result.stderr
    path.write_text(path.read_text().replace("model:\n", f"model:\n  {key[1]}\n"))
    result = run_cli("run", str(path), "-o", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 0 and "inertia of body 'arm' repaired" in result.stderr, result.stderr


def test_advice_for_a_spec_built_in_python_works_as_written():
    spec = _spec(BROKEN)
    with pytest.raises(ModelError) as err:
        mbsfmu.Model(spec)
    code = re.search(r"repair the spec first: (\S+)$", _advice(str(err.value)))
    assert code, str(err.value)
    model = eval(code[1], {"mbsfmu": mbsfmu, "Model": mbsfmu.Model, "spec": spec})
    assert model.notes and "repaired (repair_inertia)" in model.notes[0]


def test_a_yaml_model_refuses_a_repair_inertia_that_is_not_a_boolean(tmp_path, run_cli):
    path = tmp_path / "tri.yaml"
    path.write_text("version: 1\nrepair_inertia: yes please\nbodies:\n" + ARM)
    result = run_cli("info", str(path))
    assert result.returncode == 2 and f"{path}:2: repair_inertia: expected true or false" in result.stderr
