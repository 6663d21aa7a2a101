"""The command line and the scenario runner against what a new user and a hostile input do:
exact run lengths, one-round scenario errors, Ctrl-C and closed pipes, option hints,
wall-time estimates, clear messages instead of tracebacks, nothing lost when a write or a plot
fails. In-process (``mbsfmu.cli.main``) wherever no real signal or pipe is needed."""

import json
import math
import os
import re
import signal
import subprocess
import sys

import numpy as np
import pytest

from mbsfmu import cli
from mbsfmu.errors import InputError
from mbsfmu.scenario.spec import ScenarioError, load_scenario
from tests.support.paths import MODELS, ROOT

PENDULUM = MODELS / "compound_pendulum.yaml"
SCARA = MODELS / "scara.yaml"


def scenario(tmp_path, text: str, name: str = "s.yaml"):
    """A scenario file in tmp_path; ``{pendulum}``/``{scara}`` stand for the bundled models."""
    path = tmp_path / name
    path.write_text(text.replace("{pendulum}", str(PENDULUM)).replace("{scara}", str(SCARA)))
    return path


# dop853 runs on the Python backend (no compilation); no plots unless a test wants them
FAST = "integrator: {method: dop853, rtol: 1.0e-8, atol: 1.0e-10}\noutputs: {plots: false}\n"


def run(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def line_of(path, fragment: str) -> int:
    return next(k for k, line in enumerate(path.read_text().splitlines(), start=1) if fragment in line)


# ---- the run length ----------------------------------------------------------
@pytest.mark.parametrize("duration, dt, times", [(0.5, 1.0, [0.0, 0.5]), (1.0, 0.3, [0.0, 0.3, 0.6, 0.9, 1.0])])
def test_run_ends_exactly_at_the_duration_with_a_shortened_last_step(tmp_path, capsys, duration, dt, times):
    path = scenario(
        tmp_path,
        f"version: 1\nmodel: {{pendulum}}\nduration: {duration}\ndt: {dt}\n"
        + FAST
        + "checks: {energy_constant: rel:1.0e-6}\n",
    )
    code, out, _err = run(capsys, "run", path, "-o", tmp_path / "o", "--no-progress")
    assert code == 0, out
    from mbsfmu.trajectory import read_trajectory

    t = read_trajectory(tmp_path / "o" / "trajectory.csv").time
    np.testing.assert_allclose(t, times, rtol=0, atol=1e-15)
    assert t[-1] == duration  # exactly, not 0.8999999999999999 or 1.0 for 0.5
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["t_end"] == duration and report["checks"]["energy_constant"]["passed"]
    assert f"{duration:g} s simulated" in out


def test_a_run_with_nothing_to_check_does_not_say_pass(tmp_path, capsys):
    path = scenario(tmp_path, "version: 1\nmodel: {pendulum}\nduration: 0.2\ndt: 0.1\n" + FAST)
    code, out, _err = run(capsys, "run", path, "-o", tmp_path / "o", "--no-progress")
    assert code == 0
    assert "PASS" not in out and "NOTHING CHECKED" in out
    assert json.loads((tmp_path / "o" / "report.json").read_text())["checked"] is False


def test_a_sampled_controller_refuses_a_dt_that_does_not_divide_the_duration(tmp_path, capsys):
    path = scenario(
        tmp_path,
        "version: 1\nmodel: {scara}\nduration: 1.0\ndt: 0.3\n"
        + FAST
        + "controller: {type: pid, joints: {q1: {kp: 10, setpoint: 0.1}}}\n",
    )
    with pytest.raises(ScenarioError, match=r"s.yaml:4: dt: duration: dt = 0.3 s does not divide"):
        load_scenario(path)


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf", "abc"])
def test_duration_option_must_be_a_positive_finite_time(tmp_path, capsys, value):
    path = scenario(tmp_path, "version: 1\nmodel: {pendulum}\nduration: 0.2\ndt: 0.1\n" + FAST)
    with pytest.raises(SystemExit) as e:
        cli.main(["run", str(path), "-o", str(tmp_path / "o"), f"--duration={value}"])
    assert e.value.code == 2
    assert "argument --duration" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_tiny_duration_simulates_exactly_that(tmp_path, capsys):
    path = scenario(tmp_path, "version: 1\nmodel: {pendulum}\nduration: 0.2\ndt: 0.1\n" + FAST)
    code, out, _err = run(capsys, "run", path, "-o", tmp_path / "o", "--duration", "1e-9", "--no-progress")
    assert code == 0
    assert json.loads((tmp_path / "o" / "report.json").read_text())["t_end"] == 1e-9
    assert "1e-09 s simulated" in out


def test_check_names_a_body_column_missing_its_mass(tmp_path, capsys):
    from mbsfmu.checker import CheckError, discover
    from mbsfmu.trajectory import Trajectory

    cols = {
        c: [0.0, 1.0] for c in ("time", "a.m", "b.omega[1]", "b.omega[2]", "b.omega[3]", "b.r_abs[1]", "w.Iw", "w.h[1]")
    }
    with pytest.raises(CheckError, match=r"b\.m missing"):
        discover(Trajectory.from_columns(cols))
    csv = tmp_path / "t.csv"
    csv.write_text(",".join(cols) + "\n" + ",".join("0" for c in cols) + "\n")
    code, _out, err = run(capsys, "check", csv)
    assert code == 2 and "b.m missing" in err


# ---- the checks' scales --------------------------------------------------------------
def test_p_sys_and_H_sys_scales_cover_the_round_off_of_absolute_records():
    """Falling bodies (|rbardot| ~ 1e3 m/s, |rbar| ~ 5e4 m) with a small relative motion: p_sys =
    sum m (rbardot - Rdot) is zero up to ~N eps sum m |rbardot|, so relative to the momenta summed
    (not to sum m |rhatdot| ~ 1e-2) the check holds at a few eps."""
    from mbsfmu.checker import conservation_report
    from mbsfmu.trajectory import Trajectory

    rng = np.random.default_rng(7)
    T = 5
    one = np.ones(T)
    cols = {"time": np.arange(T, dtype=float), "g[1]": 0 * one, "g[2]": 0 * one, "g[3]": -9.81 * one}
    V, P = np.array([3.0, -4.0, -1000.0]), np.array([100.0, 200.0, -5.0e4])
    m = np.array([310.0, 7.0, 7.0])
    rel = rng.normal(size=(3, 3)) * 1e-2
    rel -= (m[:, None] * rel).sum(axis=0) / m.sum()  # zero relative momentum
    for j, name in enumerate(("hub", "a1", "a2")):
        cols[f"{name}.m"] = m[j] * one
        for s, v in zip(("xx", "yy", "zz", "xy", "xz", "yz"), (1.0, 1.0, 1.0, 0.0, 0.0, 0.0)):
            cols[f"{name}.I[{s}]"] = v * one
        for c in range(3):
            cols[f"{name}.omega[{c + 1}]"] = 0 * one
            cols[f"{name}.r_abs[{c + 1}]"] = P[c] + rel[j, c] * np.arange(T)
            cols[f"{name}.rdot_abs[{c + 1}]"] = V[c] + rel[j, c] * np.ones(T)
    report = conservation_report(
        Trajectory.from_columns(cols), {"p_sys_zero": "rel:1e-14", "H_sys_constant": "rel:1e-14"}, procedure=2
    )
    p = report["checks"]["p_sys_zero"]
    assert p["max_abs"] > 0 and p["scale"] >= m.sum() * np.linalg.norm(V) * (1 - 1e-9)
    assert report["passed"], report["checks"]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(p.stem for p in (ROOT / "scenarios").glob("*.yaml")))
def test_bundled_scenario_passes_at_full_duration(name, tmp_path):
    """Every bundled scenario at its full duration (CI's fast tier runs --quick): minutes for
    chain7_energy and crank_slider_torque with the Python engine. Plots off (the quick runs of
    tests/scenario/test_bundled_scenarios.py draw them from the bundled files as they are)."""
    from dataclasses import replace

    from mbsfmu.scenario.run import run_scenario

    scn = replace(load_scenario(ROOT / "scenarios" / f"{name}.yaml"), plots=False)
    report = run_scenario(scn, tmp_path, progress=False)
    failed = {k: e for k, e in report["checks"].items() if not e["passed"]}
    assert report["passed"] and report["checked"], (report.get("error"), failed)
    assert report["t_end"] == scn.duration


# ---- scenario errors in one round ----------------------------------------------------
def test_scenario_names_are_checked_against_the_model_in_the_same_round(tmp_path):
    path = scenario(
        tmp_path,
        """version: 1
model: {scara}
duration: 1.0
dt: 0.1
initial:
  q: {q1: 0.1, q3: 0.2}
  qd: {knee: 1.0, q2: [1.0, 2.0]}
inputs:
  shoulderr.tau: 1.0
  q1.taux: 2.0
controller: {type: pid, joints: {q4: {kp: 1, setpoint: 0}}}
checks: {energy_constnt: rel:1e-9}
""",
    )
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    text = str(e.value)
    assert text.startswith(f"7 problem(s) in scenario {path}:"), text
    for fragment in (
        "s.yaml:6: initial.q.q3: unknown joint 'q3'; known: q1, q2",
        "s.yaml:7: initial.qd.knee: unknown joint 'knee'",
        "s.yaml:7: initial.qd.q2: joint 'q2' takes 1 value(s), got 2",
        "s.yaml:9: inputs.shoulderr.tau: unknown input 'shoulderr.tau'",
        "s.yaml:10: inputs.q1.taux: unknown input 'q1.taux' (did you mean 'q1.tau'?)",
        "s.yaml:11: controller.joints.q4: 'q4' is not an actuated 1-DoF joint",
        "s.yaml:12: checks.energy_constnt: unknown check",
    ):
        assert fragment in text, text


def test_a_bad_model_file_is_reported_with_the_scenario_problems(tmp_path):
    (tmp_path / "m.yaml").write_text(PENDULUM.read_text().replace("mass: 1.5", "mass: -1.5"))
    path = scenario(tmp_path, "version: 1\nmodel: m.yaml\nduration: 1.0\ndt: 0\n")
    text = str(pytest.raises(ScenarioError, load_scenario, path).value)
    assert "s.yaml:4: dt: dt must be a positive time" in text
    assert f"s.yaml:2: model: model file {tmp_path / 'm.yaml'}:" in text and "negative mass" in text


# ---- integrator fields, run lengths, hostile fields ---------------------------
def test_integrator_fields_are_checked_with_line_and_field(tmp_path):
    path = scenario(
        tmp_path,
        "version: 1\nmodel: {pendulum}\nduration: 1.0\ndt: 0.1\n"
        "integrator: {method: rk4, h_max: 0, rtol: -1, atol: 0}\n",
    )
    text = str(pytest.raises(ScenarioError, load_scenario, path).value)
    for fragment in (
        "s.yaml:5: integrator.h_max: h_max must be a positive step [s] for rk4, got 0",
        "s.yaml:5: integrator.rtol: rtol must be a positive number, got -1",
        "s.yaml:5: integrator.atol: atol must be a positive number, got 0",
    ):
        assert fragment in text, text


@pytest.mark.parametrize(
    "body, fragment",
    [
        (
            "duration: 1.0e300\ndt: 1.0e-300\n",
            "s.yaml:4: dt: duration: duration 1e+300 s / dt 1e-300 s = inf output rows",
        ),
        (
            "duration: 1.0\ndt: 0.1\nintegrator: {method: dop853, h_max: 1.0e-300}\n",
            "s.yaml:5: integrator.h_max: duration: duration 1 s / integrator.h_max 1e-300 s = 1e+300 integrator steps",
        ),
        (
            "duration: 1.0\ndt: 0.1\ninputs: {q1.tau: {type: [1]}}\n",
            "s.yaml:5: inputs.q1.tau: expected a number or a schedule",
        ),
        (
            "duration: 1.0\ndt: 0.1\nreferences: [{column: q.q1, expr: '0 < t < 1', tol: 1}]\n",
            "s.yaml:5: references[0].expr: chained comparison",
        ),
        (
            "duration: 1.0\ndt: 0.1\nreferences: [{column: q.q1, expr: 'sin + t', tol: 1}]\n",
            "function 'sin' used as a value",
        ),
        (
            "duration: 1.0\ndt: 0.1\nreferences: [{column: q.q1, expr: 'sin()', tol: 1}]\n",
            "sin() takes 1 argument(s), got 0",
        ),
        (
            "duration: 1.0\ndt: 0.1\nreferences: [{column: q.q1, expr: 'where(t)', tol: 1}]\n",
            "where() takes 3 argument(s)",
        ),
        (
            "duration: 1.0\ndt: 0.1\nreferences: [{column: q.q1, expr: '0x" + "f" * 400 + "', tol: 1}]\n",
            "number beyond the float range",
        ),
        (
            "duration: 1.0\ndt: 0.1\nreferences: [{column: q.q1, expr: '"
            + "(" * 20000
            + "t"
            + ")" * 20000
            + "', tol: 1}]\n",
            "expression of 40001 characters; at most 10000",
        ),
        (
            "duration: 1.0\ndt: 0.1\nreferences: [{column: q.q1, expr: '" + "-" * 100000 + "1', tol: 1}]\n",
            "expression of 100001 characters",
        ),
        (
            "duration: 1.0\ndt: 0.1\nreferences: [{column: q.q1, expr: '"
            + "-(" * 150
            + "t"
            + ")" * 150
            + "', tol: 1}]\n",
            "nested more than 100 deep",
        ),
    ],
    ids=[
        "rows",
        "h_max",
        "schedule-type",
        "chained",
        "function-value",
        "arity0",
        "arity-where",
        "hex400",
        "nested20000",
        "minus100000",
        "nested150",
    ],
)
def test_hostile_scenario_fields_are_problems_not_tracebacks(tmp_path, capsys, body, fragment):
    path = scenario(tmp_path, "version: 1\nmodel: {pendulum}\n" + body)
    text = str(pytest.raises(ScenarioError, load_scenario, path).value)
    assert fragment in text, text[:2000]
    code, out, _err = run(capsys, "list", tmp_path, "--no-estimate")  # the listing goes on
    assert code == 0 and "does not load: 1 problem(s)" in out


def test_out_and_record_paths_that_cannot_be_written_are_errors(tmp_path, capsys):
    path = scenario(tmp_path, "version: 1\nmodel: {pendulum}\nduration: 0.2\ndt: 0.1\n" + FAST)
    afile = tmp_path / "afile"
    afile.write_text("x")
    for out, why in (
        (afile, "it is an existing file"),
        (afile / "sub", f"{afile} is a file, not a folder"),
        ("/proc/mbsfmu_out", "cannot create the folder"),
    ):
        code, _o, err = run(capsys, "run", path, "-o", out, "--no-progress")
        assert code == 2 and why in err and "Traceback" not in err, err
    pytest.importorskip("mcap_ros2")
    for rec in (afile / "run.mcap", tmp_path):
        code, _o, err = run(capsys, "run", path, "-o", tmp_path / "o", "--no-progress", "--record", rec)
        assert code == 2 and f"--record {rec}: cannot write the recording" in err, err


def test_build_fmu_into_a_path_under_a_file_is_an_error(tmp_path, capsys, monkeypatch):
    """... and before the compile (which takes seconds): no C file is compiled for a bad --out."""
    import mbsfmu.fmu.native

    pytest.importorskip("pythonfmu")
    compiled = []
    monkeypatch.setattr(mbsfmu.fmu.native, "compile_target", lambda platform, *_a, **_k: compiled.append(platform))
    (tmp_path / "afile").write_text("x")
    for runtime in ("native", "python"):
        out = tmp_path / "afile" / "x.fmu"
        code, _o, err = run(capsys, "build-fmu", PENDULUM, "--out", out, "--runtime", runtime)
        assert code == 2 and "Traceback" not in err, err
        assert f"-o {out}: cannot create the folder {tmp_path / 'afile'}: it is an existing file" in err, err
    assert compiled == []


def test_simulator_arguments_are_numbers_of_any_kind_with_clear_errors():
    import mbsfmu
    from mbsfmu.sim.simulator import Simulator

    model = mbsfmu.load_model(PENDULUM)
    sim = Simulator(model, integrator="dop853", h_max=np.float64(0.0), rtol=np.float32(1e-6))
    sim.step(np.float32(0.01))
    assert sim.t == pytest.approx(0.01, rel=1e-6)
    with pytest.raises(InputError, match="rtol must be a number, got str 'x'"):
        Simulator(model, rtol="x")
    with pytest.raises(InputError, match="sub-steps of h_max = 1e-300 s"):
        Simulator(model, integrator="rk4", h_max=1e-300, backend="python").step(1.0)


def test_total_mass_message_shows_a_number_not_a_repr():
    from mbsfmu.checker import CheckError, field_columns, momentum
    from mbsfmu.trajectory import Trajectory

    cols = {"time": [0.0], "a.m": math.nan}
    for f in ("I", "omega", "r_cm", "rdot_cm"):
        cols.update({c: 0.0 for c in field_columns("a", f)})
    with pytest.raises(CheckError) as e:
        momentum(Trajectory.from_columns(cols), 1, with_R=False)
    assert "total mass is nan," in str(e.value) and "np.float64" not in str(e.value)


# ---- nothing lost when a write or a plot fails ----------------------------------------
def test_disk_full_keeps_whole_rows_and_says_so(tmp_path, capsys, monkeypatch):
    """The disk fills up in the middle of row 4 (half of it reaches the file): the file is cut
    back to 3 whole rows, the run stops with the reason, report.json is written."""
    import errno
    import io

    from mbsfmu import trajectory as trajectory_module
    from mbsfmu.trajectory import TrajectoryError, TrajectoryWriter, read_trajectory

    if os.path.exists("/dev/full"):
        w = TrajectoryWriter("/dev/full")
        with pytest.raises(TrajectoryError, match="No space left on device"):
            w.write({"time": 0.0, "x": 1.0})
        w.close()

    class FillsUp(io.FileIO):
        lines = 0

        def write(self, data):
            if not str(self.name).endswith("trajectory.csv"):  # records.csv is written beside it
                return super().write(data)
            FillsUp.lines += 1
            if FillsUp.lines == 5:  # header + 3 rows, then half of row 4
                super().write(bytes(data)[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device")
            return super().write(data)

    def fake_open(path, mode="r", *args, **kw):
        return FillsUp(path, "w") if mode == "wb" else open(path, mode, *args, **kw)

    monkeypatch.setattr(trajectory_module, "open", fake_open, raising=False)
    path = scenario(
        tmp_path,
        "version: 1\nmodel: {pendulum}\nduration: 1.0\ndt: 0.1\n" + FAST + "checks: {energy_constant: rel:1.0e-6}\n",
    )
    code, _out, err = run(capsys, "run", path, "-o", tmp_path / "o", "--no-progress")
    assert code == 1 and "No space left on device" in err and "Traceback" not in err
    assert "cannot write row 4" in err and "3 row(s) written before" in err
    monkeypatch.undo()
    traj = read_trajectory(tmp_path / "o" / "trajectory.csv")
    np.testing.assert_allclose(traj.time, [0.0, 0.1, 0.2])
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert "No space left on device" in report["error"] and report["passed"] is False


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full (a device every write to fails: ENOSPC)")
def test_a_full_disk_at_the_header_stops_the_run_with_exit_code_1_not_2(tmp_path, run_cli):
    """A full disk is no bad input (exit 2): the run stopped (exit 1), as for a row (above)."""
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "trajectory.csv").symlink_to("/dev/full")
    path = scenario(tmp_path, "version: 1\nmodel: {pendulum}\nduration: 0.2\ndt: 0.1\n" + FAST)
    result = run_cli("run", path, "-o", tmp_path / "o", "--no-progress")
    assert result.returncode == 1, result.stderr
    assert "cannot write the header to" in result.stderr and "No space left on device" in result.stderr


def test_report_json_is_replaced_atomically(tmp_path, monkeypatch):
    from mbsfmu.scenario import report as scenario_module

    target = tmp_path / "report.json"
    target.write_text('{"old": true}')

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(scenario_module.os, "replace", refuse)
    with pytest.raises(OSError):
        scenario_module.write_json(target, {"new": True})
    assert json.loads(target.read_text()) == {"old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary file left


def test_a_failing_plot_costs_the_plots_only(tmp_path, capsys, monkeypatch):
    import mbsfmu.scenario.plots

    def broken(*_a, **_k):
        raise ValueError("Axis limits cannot be NaN or Inf")

    monkeypatch.setattr(mbsfmu.scenario.plots, "plot_run", broken)
    path = scenario(
        tmp_path,
        ("version: 1\nmodel: {pendulum}\nduration: 0.2\ndt: 0.1\n" + FAST).replace("plots: false", "plots: true")
        + "checks: {energy_constant: rel:1.0e-6}\n",
    )
    code, out, err = run(capsys, "run", path, "-o", tmp_path / "o", "--no-progress")
    assert code == 0 and "scenario s: PASS" in out
    assert "plots not written: ValueError: Axis limits cannot be NaN or Inf" in err
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    assert report["passed"] and "Axis limits" in report["plot_error"]


# ---- listing, vocabulary, options, estimates --------------------------------
def test_list_of_a_model_folder_lists_models(capsys):
    code, out, _err = run(capsys, "list", MODELS, "--no-estimate")
    assert code == 0 and "does not load" not in out
    assert "model files (not scenarios; `mbsfmu info MODEL` describes one)" in out
    assert "model spacecraft: 3 bodies and 4 reaction wheels" in out


def test_info_and_run_count_bodies_and_wheels_alike(capsys):
    code, out, _err = run(capsys, "info", MODELS / "spacecraft.yaml")
    assert code == 0 and "3 bodies and 4 reaction wheels" in out
    from mbsfmu.checker import summary_table

    report = {
        "file": "f",
        "procedure": 1,
        "procedure_is": "",
        "energy_procedure": 1,
        "energy_procedure_is": "",
        "rows": 2,
        "t0": 0.0,
        "t1": 1.0,
        "bodies": ["a", "b", "c"],
        "wheels": ["w1", "w2", "w3", "w4"],
        "springs": [],
        "g": [0, 0, 0],
        "checks": {},
        "passed": True,
    }
    assert "3 bodies and 4 reaction wheels, 0 springs" in summary_table(report)


def test_version_and_top_level_help(capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("mbsfmu ")
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "rigid multibody dynamics" in out and "The ``mbsfmu`` command" not in out


def test_every_positional_argument_has_help_and_out_has_both_spellings():
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, type(parser._subparsers._group_actions[0])))
    for name, p in sub.choices.items():
        for action in p._actions:
            if not action.option_strings:
                assert action.help, f"mbsfmu {name}: positional {action.dest} has no help"
            if "--out" in action.option_strings or "-o" in action.option_strings:
                assert {"-o", "--out"} <= set(action.option_strings), (name, action.option_strings)


def test_a_mistyped_option_suggests_the_close_one(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        cli.main(["run", "x.yaml", "--output", str(tmp_path)])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "unknown option --output: did you mean --out?" in err
    assert cli.main(["list", "--no-estimat"]) == 0  # an accepted abbreviation is not "unknown"
    with pytest.raises(SystemExit):
        cli.main(["check", "t.csv", "--procdure", "2"])
    assert "did you mean --procedure?" in capsys.readouterr().err


def test_a_value_that_is_not_a_number_gets_one_message(tmp_path):
    """dt: .nan said "expected a finite number" and then "dt must be a positive time, got 0.0"."""
    path = scenario(
        tmp_path,
        "version: 1\nmodel: {pendulum}\nduration: 1\ndt: .nan\nintegrator: {method: dop853, rtol: .nan, h_max: x}\n",
    )
    problems = pytest.raises(ScenarioError, load_scenario, path).value.problems
    assert sorted(p.where() for p in problems) == ["dt", "integrator.h_max", "integrator.rtol"], problems


def test_progress_time_left_is_the_remaining_time_at_the_run_pace(capsys):
    """A run of 1000 steps: 30 s of start-up in its first step, then 0.1 s per step. At 10 % the
    time left is what the rest takes at that pace (899 steps x 0.1 s), within 1 % (the pace is
    measured from the first step on; the start-up inflated it 4x before: 356 s)."""
    from mbsfmu.scenario.progress import Progress

    bar = Progress(1000, True)
    for k in range(0, 101):
        bar.update(k, 30.0 + 0.1 * k)
    err = capsys.readouterr().err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.strip()]
    assert "time left: after 5 %" in lines[0]
    left = float(lines[-1].split("~")[1].split(" s left")[0])
    true_left = (1000 - 100) * 0.1
    assert abs(left - true_left) <= 0.01 * true_left, lines[-1]


@pytest.mark.parametrize(
    "duration, dt, how_starts", [(5.0, 5.0, "measured: the probe ran"), (50.0, 0.1, "extrapolated from")]
)
def test_wall_time_estimate_is_within_a_factor_of_the_run(tmp_path, duration, dt, how_starts):
    """The estimate against the measured wall time of the run's loop (report.json wall_time_s),
    within a factor of 5 either way (a shared machine's load varies between the probe and the run):
    a one-interval run (the probe is the whole run, its first interval included: was ~1e-6 s) and a
    500-interval run extrapolated from the probe's first intervals. RK4 at 0.1 ms: ~10^4 steps per
    simulated second, ~1 us each on the C core, so the one-interval run takes ~50 ms (a scheduler's
    pause of a few ms on a loaded machine is well inside the factor; at 5 ms one made it 5.6) and
    the long one ~0.3 s (measured here: 0.27-0.36 s), six times the probe's budget of 0.05 s (a
    machine up to ~5x faster still extrapolates; a slower or loaded one all the more)."""
    from mbsfmu.scenario.run import estimate_wall, run_scenario

    path = scenario(
        tmp_path,
        f"version: 1\nmodel: {{scara}}\nduration: {duration}\ndt: {dt}\n"
        "integrator: {method: rk4, h_max: 1.0e-4}\noutputs: {plots: false}\n",
    )
    scn = load_scenario(path)
    wall, how = estimate_wall(scn, budget=0.05)
    assert how.startswith(how_starts), how
    report = run_scenario(scn, tmp_path / "o", progress=False)
    measured = report["wall_time_s"]
    assert measured / 5 <= wall <= 5 * measured, (wall, measured, how)


def test_wall_time_is_estimated_before_the_run_and_in_the_list(tmp_path, capsys):
    from mbsfmu.scenario.run import estimate_wall

    path = scenario(
        tmp_path, "version: 1\nmodel: {pendulum}\nduration: 10000.0\ndt: 0.05\n" + FAST + "description: long\n"
    )
    wall, how = estimate_wall(load_scenario(path), budget=0.05)
    assert wall > 0 and "extrapolated from" in how
    code, out, _err = run(capsys, "list", tmp_path)
    assert code == 0 and "est. wall" in out and "extrapolated to the duration" in out
    short = scenario(tmp_path, "version: 1\nmodel: {pendulum}\nduration: 0.1\ndt: 0.05\n" + FAST, name="short.yaml")
    code, _out, err = run(capsys, "run", short, "-o", tmp_path / "o")
    assert code == 0 and "estimated wall time" in err


# ---- the README's quick start ---------------------------------------------------------
def test_readme_quick_start_installs_only_the_main_job_first():
    text = (ROOT / "README.md").read_text()
    block = text.split("```", 2)[1].strip().splitlines()
    assert len(block) == 2, block
    first, second = block
    assert "pip install -e ." in first and "[" not in first.split("&&")[0] and "mbsfmu run scenarios/" in first
    install = second.split("&&")[0]
    assert "pip install" in install and ("test" in install or "all" in install) and "pytest" in second


# ---- Ctrl-C and closed pipes (real signals, so subprocesses) -------------------------
def _default_sigint() -> None:
    """In the child before exec: SIGINT back to its default. A test run started in the background
    of a non-interactive shell (as CI may be) inherits SIGINT ignored, and Python then installs no
    KeyboardInterrupt handler in its children: Ctrl-C would be ignored, as a user who starts a job
    with SIGINT ignored wants."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _spawn(*argv, **kw):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.Popen(
        [sys.executable, "-m", "mbsfmu", *map(str, argv)], cwd=ROOT, env=env, preexec_fn=_default_sigint, **kw
    )


STOPS = [(signal.SIGINT, 130, "Ctrl-C (SIGINT)"), (signal.SIGTERM, 143, "SIGTERM")]


@pytest.mark.integration
@pytest.mark.parametrize("signum, code, name", STOPS)
def test_ctrl_c_during_run_keeps_rows_and_writes_an_interrupted_report(tmp_path, signum, code, name):
    # rk4 at h_max 1e-6 s: each 10 ms row costs 1e4 sub-steps (milliseconds of wall time), so the run
    # is still short of a few thousand rows when the signal lands, however loaded the machine (with a
    # fast row the run wrote millions of rows before a starved test process sent SIGINT, and reading
    # them back for the report outlasted the timeout)
    path = scenario(
        tmp_path,
        "version: 1\nmodel: {pendulum}\nduration: 1.0e4\ndt: 0.01\n"
        "integrator: {method: rk4, h_max: 1.0e-6}\noutputs: {plots: false}\n"
        "checks: {energy_constant: rel:1.0e-6}\n",
    )
    out = tmp_path / "o"
    proc = _spawn("run", path, "-o", out, "--no-progress", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    csv = out / "trajectory.csv"
    try:
        while not (csv.exists() and csv.read_text().count("\n") >= 20):  # wait on state: rows written
            assert proc.poll() is None, proc.communicate()
        proc.send_signal(signum)
        _stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert stderr.startswith(f"mbsfmu: interrupted by {name} at t = ")
    from mbsfmu.trajectory import read_trajectory

    traj = read_trajectory(csv)  # every row whole and valid
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"].startswith(f"interrupted by {name} at t = ") and report["passed"] is False
    assert report["interrupted_by"] == signum.name
    assert report["t_end"] == traj.time[-1] and traj.n_rows >= 19


@pytest.mark.integration
@pytest.mark.parametrize("signum, code, name", STOPS)
def test_a_stop_while_the_outputs_are_written_keeps_the_report(tmp_path, signum, code, name):
    """The simulation has finished (every row is in trajectory.csv); the signal lands while the run
    gathers the rows it wrote (or reads them back), checks them or draws the plots (40 joints:
    several pages): report.json is written all the same, marked interrupted with the stage, passed
    false (it was not written at all after Ctrl-C there, and SIGTERM ended with 143 and no message)."""
    bodies = "".join(
        f"  - {{name: b{k}, parent: {'world' if k == 0 else f'b{k - 1}'}, joint: {{name: j{k}, type: revolute, "
        f"axis: [0, 0, 1], origin: {{xyz: [0.1, 0, 0]}}}}, mass: 1.0, com: [0.05, 0, 0], "
        "inertia: {Ixx: 0.01, Iyy: 0.01, Izz: 0.01}}\n"
        for k in range(40)
    )
    (tmp_path / "chain.yaml").write_text("version: 1\ngravity: [0, -9.81, 0]\nbodies:\n" + bodies)
    n_rows = 801
    path = scenario(
        tmp_path,
        "version: 1\nmodel: chain.yaml\nduration: 0.8\ndt: 0.001\n"
        "integrator: {method: rk4, h_max: 1.0e-3}\ncheck" + "s: {energy_constant: rel:1.0e-3}\n",
    )
    out = tmp_path / "o"
    proc = _spawn("run", path, "-o", out, "--no-progress", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    files = (out / "trajectory.csv", out / "records.csv")
    try:  # wait on state: the last row of both files on disk (records.csv is written second), the report not yet
        while not all(f.exists() and f.read_text().count("\n") >= n_rows + 1 for f in files):
            assert proc.poll() is None, proc.communicate()
        assert not (out / "report.json").exists() or "plots" not in json.loads((out / "report.json").read_text())
        proc.send_signal(signum)
        _stdout, stderr = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr and stderr.strip().splitlines()[-1].startswith(f"mbsfmu: interrupted by {name}")
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"].startswith(f"interrupted by {name} while "), report["interrupted"]
    assert report["interrupted_by"] == signum.name and report["passed"] is False
    stages = ("reading the trajectory back", "gathering the rows written", "checking the run", "this report)")
    assert report["interrupted"].endswith(stages)
    if "checking" in report["interrupted"] or "plots" in report["interrupted"]:
        assert report["t_end"] == pytest.approx(0.8)  # the simulation was complete and read back


@pytest.mark.slow  # builds two FMUs: minutes on a loaded machine
@pytest.mark.integration
def test_ctrl_c_during_cosim_keeps_rows_and_writes_an_interrupted_report(tmp_path):
    pytest.importorskip("fmpy")
    pytest.importorskip("pythonfmu")
    path = scenario(
        tmp_path,
        (ROOT / "scenarios" / "scara_tracking_cosim.yaml")
        .read_text()
        .replace("models/scara.yaml", "{scara}")
        .replace("duration: 6.0", "duration: 1000.0"),
    )
    out = tmp_path / "o"
    proc = _spawn(
        "cosim",
        path,
        "-o",
        out,
        "--no-progress",
        "--fmu-dir",
        tmp_path / "fmus",
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    csv = out / "trajectory.csv"
    try:
        while not (csv.exists() and csv.read_text().count("\n") >= 20):  # wait on state: rows written
            assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        _stdout, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith("mbsfmu: interrupted by SIGTERM at t = ")
    from mbsfmu.trajectory import read_trajectory

    traj = read_trajectory(csv)
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"].startswith("interrupted by SIGTERM at t = ") and report["t_end"] == traj.time[-1]


@pytest.mark.integration
def test_info_into_a_closed_pipe_ends_quietly():
    r, w = os.pipe()
    os.close(r)  # the reader is gone before anything is written
    proc = _spawn("info", MODELS / "spacecraft.yaml", stdout=w, stderr=subprocess.PIPE)
    os.close(w)
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == -signal.SIGPIPE, err
    assert b"BrokenPipeError" not in err and b"Traceback" not in err


def test_info_columns_fit_long_names(tmp_path, capsys):
    """Names longer than 16 characters (URDF links are) keep every column aligned."""
    long = "left_gripper_finger_link_with_a_long_name"
    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\nbodies:\n"
        f"  - {{name: {long}, parent: world, joint: {{name: {long}_joint, type: revolute}}, mass: 1.5,\n"
        "     inertia: {Ixx: 0.1, Iyy: 0.1, Izz: 0.1}}\n"
        "  - {name: b, parent: " + long + ", joint: {name: j2, type: prismatic}, mass: 2.0}\n"
    )
    code, out, _err = run(capsys, "info", path)
    head, *rows = [ln for ln in out.splitlines()[1:] if not ln.startswith("inputs:")]
    assert code == 0 and len(rows) == 2
    for label in ("parent (L)", "joint", "type"):  # left-aligned columns start where their header does
        assert all(r[head.index(label) - 1] == " " and r[head.index(label)] != " " for r in rows), label
    assert rows[0].split() == ["1", long, "world", f"{long}_joint", "revolute", "1", "1", "1.5"]
    assert head.index("mass [kg]") + len("mass [kg]") == len(rows[0]) == len(rows[1])


def test_info_summarises_a_large_model_and_its_advice_lists_everything(tmp_path, run_cli):
    """info on a 1e5-body model printed 100k rows and a 1.2 MB inputs line (issue 37): past
    INFO_ROWS bodies and INFO_NAMES inputs it says how many more, and --all (the advice) lists them."""
    n = cli.INFO_ROWS + 25
    bodies = [
        {"name": f"b{k}", "parent": "world" if k == 0 else f"b{k - 1}", "joint": {"type": "revolute"}, "mass": 1,
         "com": [0.1, 0, 0], "inertia": {"Ixx": 0.01, "Iyy": 0.01, "Izz": 0.01}}
        for k in range(n)
    ]  # fmt: skip
    path = tmp_path / "chain.json"
    path.write_text(json.dumps({"version": 1, "bodies": bodies}))
    result = run_cli("info", path)
    lines = result.stdout.splitlines()
    assert result.returncode == 0 and len(lines) == cli.INFO_ROWS + 4, lines  # heading, header row, rows, more, inputs
    assert lines[-2] == f"... and 25 more bodies (`mbsfmu info --all {path}` lists every one)"
    assert lines[-1].endswith(
        f"b19.tau ... and {n - cli.INFO_NAMES} more inputs (`mbsfmu info --all {path}` lists every one)"
    )
    assert max(map(len, lines)) < 250 + 2 * len(str(path))  # a line of 20 names and the advice
    (advice,) = set(re.findall(r"`mbsfmu ([^`]*)`", result.stdout))
    full = run_cli(*advice.split())
    assert full.returncode == 0 and f"\n{n}  b{n - 1} " in full.stdout and f"b{n - 1}.tau\n" in full.stdout
    assert "more" not in full.stdout
