"""A scenario given where a model file goes (``info``, ``build-fmu``) and a model file given where a
scenario goes (``run``, ``cosim``, ``sweep``): one error (exit 2) saying what the file is and what to
do, not a list of unknown and missing keys; and the commands the error suggests, run as written."""

import re
import shutil

import pytest

import mbsfmu
from mbsfmu.errors import ModelError
from mbsfmu.scenario.spec import ScenarioError, load_scenario
from tests.support.paths import ROOT


@pytest.fixture
def bundled(tmp_path):
    """A copy of the bundled scenarios folder (scenarios/ with models/), and the cwd there; the
    scenarios' plots off (the suggested runs are about the commands, matplotlib adds seconds)."""
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    for scn in (tmp_path / "scenarios").glob("*.yaml"):
        scn.write_text(scn.read_text(encoding="utf-8") + "\noutputs: {plots: false}\n", encoding="utf-8")
    return tmp_path


def _suggested(text: str) -> list[list[str]]:
    """The `mbsfmu ...` commands a message suggests, as argument lists."""
    return [cmd.split() for cmd in re.findall(r"`mbsfmu ([^`]*)`", text)]


@pytest.mark.parametrize("command", [["info"], ["build-fmu", "-o", "x.fmu"], ["export-urdf", "-o", "x.urdf"]])
def test_a_scenario_given_as_a_model_names_its_model(bundled, monkeypatch, run_cli, command):
    monkeypatch.chdir(bundled)
    result = run_cli(command[0], "scenarios/scara_free.yaml", *command[1:])
    assert result.returncode == 2 and result.stdout == "", result
    err = result.stderr
    assert err.count("\n") == 1, err  # one message, not 8 unknown keys
    assert "scenarios/scara_free.yaml: this is a scenario file" in err
    assert "its model is scenarios/models/scara.yaml" in err
    assert "unknown key" not in err and not (bundled / "x.fmu").exists()
    for args in _suggested(err):
        done = run_cli(*args)
        assert done.returncode == 0, (args, done.stderr)
    assert (bundled / "OUT" / "trajectory.csv").is_file()  # `mbsfmu run ... -o OUT` ran


def test_a_model_given_as_a_scenario_names_the_scenarios_using_it(bundled, monkeypatch, run_cli):
    monkeypatch.chdir(bundled)
    result = run_cli("run", "scenarios/models/scara.yaml", "-o", "out")
    assert result.returncode == 2 and err_lines(result) == 1, result.stderr
    err = result.stderr
    assert "scenarios/models/scara.yaml: this is a model file (it has bodies:), not a scenario" in err
    assert "scenarios using it: scenarios/scara_free.yaml, scenarios/scara_tracking.yaml" in err
    assert "missing required key" not in err and not (bundled / "out").exists()
    commands = _suggested(err)
    assert [c[0] for c in commands] == ["info", "run"], commands
    for args in commands:
        done = run_cli(*args)
        assert done.returncode == 0, (args, done.stderr)
    assert "model scara" in run_cli(*commands[0]).stdout


def err_lines(result) -> int:
    return result.stderr.count("\n")


@pytest.mark.parametrize("model", ["urdf_arm7.urdf", "urdf_quadruped_overlay.yaml", "spacecraft.yaml"])
@pytest.mark.parametrize("command", ["run", "cosim", "sweep"])
def test_every_scenario_command_recognises_a_model(bundled, monkeypatch, run_cli, model, command):
    monkeypatch.chdir(bundled)
    extra = ["--param", "x=1:2:2"] if command == "sweep" else []
    result = run_cli(command, f"scenarios/models/{model}", "-o", "out", *extra)
    assert result.returncode == 2 and err_lines(result) == 1, result.stderr
    assert "this is a " in result.stderr and "not a scenario" in result.stderr, result.stderr
    info = _suggested(result.stderr)[0]
    assert info == ["info", f"scenarios/models/{model}"] and run_cli(*info).returncode == 0


def test_the_library_raises_the_same_errors(bundled):
    with pytest.raises(ModelError, match="this is a scenario file") as err:
        mbsfmu.load_model(bundled / "scenarios" / "scara_free.yaml")
    assert len(err.value.problems) == 1
    with pytest.raises(ScenarioError, match="this is a model file"):
        load_scenario(bundled / "scenarios" / "models" / "scara.yaml")


def test_an_inline_model_scenario_and_a_missing_model(tmp_path, run_cli):
    (tmp_path / "inline.yaml").write_text(
        "version: 1\nduration: 1\ndt: 0.1\nmodel:\n  version: 1\n  bodies:\n"
        "    - {name: b, parent: world, joint: {type: revolute}, mass: 1, inertia: {Ixx: 1, Iyy: 1, Izz: 1}}\n"
    )
    result = run_cli("info", tmp_path / "inline.yaml")
    assert result.returncode == 2 and "its model is written in its model: section" in result.stderr
    (tmp_path / "lost.yaml").write_text("version: 1\nmodel: gone.yaml\nduration: 1\ndt: 0.1\n")
    result = run_cli("info", tmp_path / "lost.yaml")
    assert result.returncode == 2 and f"its model: names {tmp_path / 'gone.yaml'}, which is not a file" in result.stderr


def test_the_listing_advice_for_a_broken_scenario_works_as_written(tmp_path, monkeypatch, run_cli):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "bad.yaml").write_text(f"version: 1\nmodel: {ROOT / 'scenarios/models/scara.yaml'}\ndt: 0.1\n")
    listing = run_cli("list", "s", "--no-estimate")
    (args,) = _suggested(listing.stdout)
    result = run_cli(*args)
    assert result.returncode == 2 and "missing required key 'duration'" in result.stderr, result.stderr
