"""Bundled scenarios run end to end through the CLI and pass their own checks; failing runs
keep their outputs; bad scenario files name the file, line and field. The command runs in this
process (the ``run_cli`` fixture): the end-to-end runs of ``mbsfmu`` in a process of its own are
tests/test_doc_examples.py's (the commands of the README and the guides)."""

import json

import numpy as np
import pytest

from mbsfmu.scenario.spec import ScenarioError, load_scenario
from mbsfmu.trajectory import read_trajectory
from tests.support.paths import MODELS, ROOT

SCENARIOS = sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml"))


@pytest.mark.slow
@pytest.mark.parametrize("name", SCENARIOS)
def test_bundled_scenario_passes_its_checks(name, tmp_path, run_cli, monkeypatch):
    """CI runs the quick durations (the bundled file as it is, plots included); `mbsfmu run`
    without --quick runs the full ones (tests/cli/test_cli.py)."""
    monkeypatch.chdir(ROOT)
    res = run_cli("run", f"scenarios/{name}", "--out", str(tmp_path), "--quick", "--no-progress")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "conservation checks: PASS" in res.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["passed"] and report["checks"]
    traj = read_trajectory(tmp_path / "trajectory.csv")
    assert traj.time[-1] == pytest.approx(load_scenario(ROOT / "scenarios" / name).quick_duration)


def test_thruster_run_is_flagged_by_a_momentum_check(tmp_path, run_cli):
    """MBS Momentum/Energy Testing test 4: the thruster changes M Rdot by the impulse; `mbsfmu check` with a
    momentum-conservation check fails (exit 1) and says which check. Plots off (10 s of matplotlib
    on a loaded machine): they are tested in test_plots.py, the bundled file as is in the slow tier."""
    text = (ROOT / "scenarios" / "spacecraft_thruster.yaml").read_text()
    scn = tmp_path / "spacecraft_thruster.yaml"
    scn.write_text(text.replace("model: models/", f"model: {MODELS}/") + "outputs: {plots: false}\n")
    res = run_cli("run", scn, "--out", tmp_path, "--duration", "4", "--no-progress")
    assert res.returncode == 0, res.stderr
    traj = read_trajectory(tmp_path / "records.csv")  # the body records: the checker's file
    M = sum(traj[c][0] for c in traj if c.endswith(".m"))
    dP = M * np.array([traj[f"Rdot[{k}]"][-1] - traj[f"Rdot[{k}]"][0] for k in (1, 2, 3)])
    # 20 N for 2 s along a turning hub axis (exact: test_simulator)
    assert np.linalg.norm(dP) == pytest.approx(40.0, rel=5e-3)
    res = run_cli("check", tmp_path / "records.csv", "--procedure", "2", "--expect", "P_sys_constant=1e-6")
    assert res.returncode == 1
    assert "P_sys_constant" in res.stdout and "FAIL" in res.stdout


def test_failed_run_keeps_its_outputs_and_exits_nonzero(tmp_path, run_cli):
    """A run whose state blows up stops with an error naming the time and component, after
    writing the rows it computed and a report that records the error."""
    scn = tmp_path / "blowup.yaml"
    scn.write_text(f"""version: 1
model: {ROOT / 'scenarios/models/scara.yaml'}
duration: 5.0
dt: 0.01
inputs: {{q2.tau: {{type: step, t0: 0.5, value: 1.0e300}}}}
checks: {{energy_balance: rel:1.0e-6}}
""")
    res = run_cli("run", scn, "--out", tmp_path / "out", "--no-progress")
    assert res.returncode == 1
    assert "non-finite state at t =" in res.stderr
    traj = read_trajectory(tmp_path / "out" / "trajectory.csv")
    assert 0.4 < traj.time[-1] < 5.0
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["passed"] is False and "non-finite" in report["error"]


def test_bad_scenario_file_names_file_line_and_field(tmp_path, run_cli):
    scn = tmp_path / "bad.yaml"
    scn.write_text("""version: 1
model: models/nowhere.yaml
duration: -1
dt: 0.01
integrator: {method: euler}
inputs: {q1.tau: {type: pulse, t0: 2, t1: 1, value: 1}}
checks: {energy_constnt: 1e-9}
""")
    with pytest.raises(ScenarioError) as e:
        load_scenario(scn)
    msg = str(e.value)
    for fragment in (
        "bad.yaml:2: model: model file",
        "bad.yaml:3: duration: duration must be a positive",
        "bad.yaml:5: integrator.method: unknown integrator 'euler'",
        "bad.yaml:6: inputs.q1.tau.t1",
        "bad.yaml:7: checks.energy_constnt: unknown check 'energy_constnt' (did you mean 'energy_constant'?)",
    ):
        assert fragment in msg, msg
    res = run_cli("run", scn, "--out", tmp_path / "o")
    assert res.returncode == 2 and "Traceback" not in res.stderr and "bad.yaml:3" in res.stderr


def test_unknown_input_in_scenario_is_named(tmp_path, run_cli):
    scn = tmp_path / "s.yaml"
    scn.write_text(
        f"version: 1\nmodel: {ROOT / 'scenarios/models/scara.yaml'}\nduration: 0.1\ndt: 0.01\ninputs: {{q9.tau: 1.0}}\n"
    )
    res = run_cli("run", scn, "--out", tmp_path / "o")
    assert res.returncode == 2 and "inputs.q9.tau: unknown input" in res.stderr and "q1.tau, q2.tau" in res.stderr
