"""Co-simulation (mbsfmu/cosim/, mbsfmu/fmu/pid.py, ``mbsfmu cosim``): the scenario's
model as its FMU, the scenario's PID as the bundled controller FMU, run by fmpy's FMU2Slave in a
fixed-step loop or by libcosim.

- The fmpy loop in Gauss-Seidel order ctrl -> mbs reproduces ``mbsfmu run`` bit for bit.
- The Jacobi schemes (the fmpy loop's, libcosim's) feed the model u_{k-1}: exactly the
  in-process controller one step late (checked by recomputing it); libcosim equals the fmpy Jacobi
  loop to round-off, and the in-process run to the delay's O(dt) (measured, docs/guides/cosimulation.md).
- Failing checks and failing steps exit non-zero and keep the trajectory and report; bad cosim
  sections name the file, line and field.

FMU-building tests are ``integration``; the FMUs are built once per session into one cache folder.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from mbsfmu.errors import MbsError
from mbsfmu.scenario import ScenarioError, build_simulator, load_scenario, run_scenario
from mbsfmu.trajectory import read_trajectory
from tests.support.paths import ROOT
from tests.support.run_folder import run_folder

SCENARIO = ROOT / "scenarios" / "scara_tracking_cosim.yaml"
T = 1.5  # s: past the references' t0 = 1 s, 1500 communication steps of 1 ms
STATES = ("q.q1", "q.q2", "qd.q1", "qd.q2")


def mbsfmu(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "mbsfmu", *args], cwd=cwd, capture_output=True, text=True)


def bundled_text(**replace) -> str:
    """The bundled cosim scenario's text with the model path made absolute and ``replace``d."""
    text = SCENARIO.read_text().replace("model: models/scara.yaml", f"model: {ROOT / 'scenarios/models/scara.yaml'}")
    for old, new in replace.items():
        assert old in text, old
        text = text.replace(old, new)
    return text


def scenario_file(tmp_path: Path, text: str, name: str = "cosim.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def line_of(path: Path, fragment: str) -> int:
    return next(k for k, line in enumerate(path.read_text().splitlines(), start=1) if fragment in line)


# ---- the schema (fast: nothing is built) ---------------------------------------------------------------


def test_bundled_cosim_section_is_parsed_and_listed(run_cli):
    scn = load_scenario(SCENARIO)
    c = scn.cosim
    assert list(c.fmus) == ["ctrl"] and c.fmus["ctrl"].builtin == "pid" and c.fmus["ctrl"].path is None
    assert [(x.src, x.dst) for x in c.connections][0] == (("mbs", "q1.q"), ("ctrl", "q1.q"))
    assert len(c.connections) == 6 and c.scheme == "gauss-seidel" and c.order == ("ctrl", "mbs")
    res = run_cli("list", "--no-estimate", ROOT / "scenarios")  # the estimates: test_cli, test_features
    assert res.returncode == 0 and "scara_tracking_cosim.yaml" in res.stdout and "co-simulated" in res.stdout


CONNECTIONS = """    - [mbs.q1.q, ctrl.q1.q]
    - [mbs.q1.qd, ctrl.q1.qd]
    - [mbs.q2.q, ctrl.q2.q]
    - [mbs.q2.qd, ctrl.q2.qd]
    - [ctrl.q1.tau, mbs.q1.tau]
    - [ctrl.q2.tau, mbs.q2.tau]
"""


@pytest.mark.parametrize(
    "old, new, field, message",
    [
        (
            "    - [mbs.q1.qd, ctrl.q1.qd]\n",
            "    - [mbs.q1.qd, ctl.q1.qd]\n",
            "cosim.connections[1][1]",
            "unknown FMU 'ctl' in 'ctl.q1.qd' (did you mean 'ctrl'?)",
        ),
        (
            "    - [mbs.q1.qd, ctrl.q1.qd]\n",
            "    - [mbs_q1_qd, ctrl.q1.qd]\n",
            "cosim.connections[1][0]",
            "'mbs_q1_qd': expected <fmu>.<variable>",
        ),
        (
            "    - [mbs.q1.qd, ctrl.q1.qd]\n",
            "    - {from: mbs.q1.qd, to: ctrl.q1.qd}\n",
            "cosim.connections[1]",
            "expected a pair [<fmu>.<output>, <fmu>.<input>]",
        ),
        (
            "ctrl: {builtin: pid}",
            "ctrl: {builtin: pdi}",
            "cosim.fmus.ctrl.builtin",
            "unknown builtin FMU 'pdi'; expected one of pid",
        ),
        ("ctrl: {builtin: pid}", "ctrl: {path: missing.fmu}", "cosim.fmus.ctrl.path", "missing.fmu' does not exist"),
        (
            "ctrl: {builtin: pid}",
            "ctrl: {builtin: pid, path: c.fmu}",
            "cosim.fmus.ctrl",
            "expected exactly one of builtin (pid) or path",
        ),
        (
            "    ctrl: {builtin: pid}",
            "    ctrl: {builtin: pid}\n    mbs: {path: c.fmu}",
            "cosim.fmus.mbs",
            "'mbs' is the scenario's own model FMU",
        ),
        ("  order: [ctrl, mbs]", "  order: [ctrl]", "cosim.order", "order must name every FMU once; missing: mbs"),
        (
            "  scheme: gauss-seidel",
            "  scheme: gauss_seidel",
            "cosim.scheme",
            "unknown scheme 'gauss_seidel' (did you mean 'gauss-seidel'?)",
        ),
        (
            "  connections:",
            "  conections:",
            "cosim.conections",
            "unknown key 'conections' (did you mean 'connections'?)",
        ),
    ],
)
def test_malformed_cosim_section_names_file_line_and_field(tmp_path, old, new, field, message):
    path = scenario_file(tmp_path, bundled_text(**{old: new}))
    with pytest.raises(ScenarioError) as e:
        load_scenario(path)
    line = line_of(path, new.strip().splitlines()[-1].strip())
    assert f"{path}:{line}: {field}: " in str(e.value) and message in str(e.value), str(e.value)


BAD_NAMES = bundled_text(
    **{
        "ctrl: {builtin: pid}": "ctrl: {builtin: pid, parameters: {q1.kq: 1.0, q1.tau: 2.0}}",
        "    q2: {kp: 1500.0": "    #q2: {kp: 1500.0",
        CONNECTIONS: """    - [mbs.q1.qq, ctrl.q1.q]
    - [mbs.solver.n_steps, ctrl.q1.qd]
    - [ctrl.q1.q, mbs.q1.tau]
    - [ctrl.q1.tau, mbs.q1.tau]
    - [ctrl.q1.tau, mbs.q1.tau]
    - [ctrl.q1.tau, mbs.q2.tau]
""",
        "initial: {q: {q1: 0.0, q2: 0.0}}": "initial: {q: {q1: 0.0, q2: 0.0}}\ninputs: {q2.tau: 1.0}",
    }
)


def test_names_are_checked_against_the_fmus_variables_all_at_once(tmp_path):
    """Unknown variables (did-you-mean), type and causality mismatches, an input connected twice or
    also scheduled, parameters and the builtin pid's unconnected input: one error, every line."""
    pytest.importorskip("pythonfmu")
    from mbsfmu.cosim import check_cosim

    path = scenario_file(tmp_path, BAD_NAMES)
    scn = load_scenario(path)
    with pytest.raises(ScenarioError) as e:
        check_cosim(scn, build_simulator(scn))
    text = str(e.value)
    c0, fmus, inputs = line_of(path, "[mbs.q1.qq"), line_of(path, "ctrl: {builtin"), line_of(path, "inputs: {q2.tau")
    expected = [
        (c0, "cosim.connections[0][0]", "FMU 'mbs' has no variable 'q1.qq' (did you mean mbs.q1.q?)"),
        (c0 + 1, "cosim.connections[1]", "type mismatch: mbs.solver.n_steps is Integer, ctrl.q1.qd is Real"),
        (c0 + 2, "cosim.connections[2][0]", "ctrl.q1.q is an input, not an output: a connection runs from an output"),
        (
            c0 + 4,
            "cosim.connections[4][1]",
            f"input mbs.q1.tau is connected twice: also by connections[3] (line {c0 + 3})",
        ),
        (
            c0 + 5,
            "cosim.connections[5][1]",
            f"input mbs.q2.tau is connected and also scheduled by inputs.q2.tau (line {inputs})",
        ),
        (fmus, "cosim.fmus.ctrl.parameters.q1.kq", "FMU 'ctrl' has no variable 'q1.kq' (did you mean 'q1.kp'?)"),
        (fmus, "cosim.fmus.ctrl.parameters.q1.tau", "ctrl.q1.tau is an output: only parameters and inputs"),
        (fmus, "cosim.fmus.ctrl", "the builtin pid's input(s) ctrl.q1.q are not connected"),
    ]
    for line, field, message in expected:
        assert f"{path}:{line}: {field}: {message}" in text, f"{field}: {message}\n{text}"
    assert text.startswith(f"{len(expected)} problem(s) in scenario {path}")


def test_cli_rejects_a_bad_cosim_section_with_exit_code_2(tmp_path, run_cli):
    pytest.importorskip("pythonfmu")
    path = scenario_file(tmp_path, BAD_NAMES)
    res = run_cli("cosim", path, "--out", tmp_path / "out", "--fmu-dir", tmp_path / "fmus")
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{path}:{line_of(path, '[mbs.q1.qq')}: cosim.connections[0][0]: FMU 'mbs' has no variable" in res.stderr
    assert not (tmp_path / "fmus").exists()  # checked before anything is built


def test_run_refuses_a_scenario_whose_external_fmu_drives_the_model(tmp_path):
    (tmp_path / "ctrl.fmu").write_bytes(b"")
    text = bundled_text(**{"ctrl: {builtin: pid}": "ctrl: {path: ctrl.fmu}"})
    text = text[: text.index("\ncontroller:\n")] + text[text.index("\ncosim:\n") :]
    scn = load_scenario(scenario_file(tmp_path, text))
    with pytest.raises(MbsError, match="FMU 'ctrl' drives mbs.q1.tau .* use `mbsfmu cosim`"):
        run_scenario(scn, tmp_path / "out")


@pytest.mark.parametrize("inline", [False, True])
def test_the_model_fmu_is_built_from_the_scenarios_model_with_its_overrides(tmp_path, inline):
    """The model file handed to build_fmu has the scenario's gravity and initial state written in
    (an inline model as a file named like the scenario): its Model starts where `mbsfmu run` does."""
    import mbsfmu
    from mbsfmu.cosim import model_files

    text = bundled_text(
        **{
            "dt: 0.001\n": "dt: 0.001\ngravity: [0, -1.62, 0]\n",
            "initial: {q: {q1: 0.0, q2: 0.0}}": "initial: {q: {q1: 0.1, q2: -0.2}, qd: {q2: 0.5}}",
        }
    )
    if inline:
        model = (ROOT / "scenarios/models/scara.yaml").read_text().replace("\n", "\n  ")
        text = text.replace(f"model: {ROOT / 'scenarios/models/scara.yaml'}", "model:\n  " + model.rstrip())
    scn = load_scenario(scenario_file(tmp_path, text))
    files = model_files(scn)
    for rel, data in files.items():
        (tmp_path / "m" / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "m" / rel).write_bytes(data)
    model = mbsfmu.load_model(tmp_path / "m" / next(iter(files)))
    sim = build_simulator(scn)
    assert model.name == sim.model.name == "scara"
    np.testing.assert_array_equal(model.gravity, [0.0, -1.62, 0.0])
    np.testing.assert_array_equal(np.concatenate(model.initial_state()), np.concatenate([sim.q, sim.qd]))


# ---- runs (integration: FMUs built once per session) -----------------------------------------------------


@pytest.fixture(scope="session")
def fmu_dir(tmp_path_factory) -> Path:
    pytest.importorskip("pythonfmu")
    pytest.importorskip("fmpy")
    return run_folder(tmp_path_factory, "cosim_fmus")  # the cache is safe for concurrent builds


class Runs:
    """The bundled scenario's runs (T s), each made once: in-process, and co-simulated by fmpy
    (gauss-seidel, jacobi) and libcosim; (report, trajectory)."""

    def __init__(self, base: Path, fmu_dir: Path):
        self.base, self.fmu_dir, self.done = base, fmu_dir, {}

    def __getitem__(self, kind: str):
        if kind not in self.done:
            from mbsfmu.cosim import run_cosim

            scn, out = load_scenario(SCENARIO), self.base / kind
            if kind == "inprocess":
                # the engine backend the model FMU runs (the numpy reference): the FMUs' columns
                # then equal this run bit for bit (backends agree to round-off, not bit for bit)
                import functools
                from unittest import mock

                import mbsfmu.scenario.run
                from mbsfmu.fmu.slave import BACKEND

                same = functools.partial(mbsfmu.scenario.run.Simulator, backend=BACKEND)
                with mock.patch.object(mbsfmu.scenario.run, "Simulator", same):
                    report = run_scenario(scn, out, duration=T, progress=False)
            elif kind == "libcosim":
                # as a user runs it: the CLI in its own process
                pytest.importorskip("libcosimpy")
                res = subprocess.run(
                    [
                        sys.executable,
                        "-m",
                        "mbsfmu",
                        "cosim",
                        str(SCENARIO),
                        "--master",
                        "libcosim",
                        "--out",
                        str(out),
                        "--duration",
                        str(T),
                        "--fmu-dir",
                        str(self.fmu_dir),
                        "--no-progress",
                    ],
                    capture_output=True,
                    text=True,
                    cwd=ROOT,
                )
                assert res.returncode == 0, res.stdout + res.stderr
                report = json.loads((out / "report.json").read_text())
            elif kind == "jacobi":
                # through `mbsfmu cosim --scheme jacobi` (the scenario says gauss-seidel): the
                # one-step-late test below fails if the flag does not reach the run
                from mbsfmu.cli import main

                args = ["cosim", SCENARIO, "--scheme", "jacobi", "--out", out, "--duration", T]
                assert main([*map(str, args), "--fmu-dir", str(self.fmu_dir), "--no-progress"]) == 0
                report = json.loads((out / "report.json").read_text())
            else:
                report = run_cosim(scn, out, duration=T, scheme=kind, fmu_dir=self.fmu_dir, progress=False)
            self.done[kind] = (report, read_trajectory(out / "trajectory.csv"))
        return self.done[kind]


@pytest.fixture(scope="session")
def runs(tmp_path_factory, fmu_dir) -> Runs:
    return Runs(tmp_path_factory.mktemp("cosim_runs"), fmu_dir)


@pytest.mark.integration
def test_controller_fmu_is_the_joint_pid(fmu_dir, rng):
    """The controller FMU validates, computes u_k = JointPID(t_k, q_k, qd_k) in fmi2DoStep bit for
    bit (0 before the first step, no direct feedthrough) and restores its state exactly."""
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave
    from fmpy.validation import validate_fmu

    from mbsfmu.cosim.fmus import build_fmus, extracted
    from mbsfmu.sim.pid import JointPID

    scn = load_scenario(SCENARIO)
    fmu = build_fmus(scn, fmu_dir)["ctrl"]
    assert validate_fmu(str(fmu)) == []
    md = read_model_description(str(fmu))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    assert [v.name for v in md.modelVariables if v.causality == "output"] == ["q1.tau", "q2.tau"]
    assert all(not u.dependencies for u in md.outputs)
    f = FMU2Slave(
        guid=md.guid,
        unzipDirectory=str(extracted(fmu)),
        modelIdentifier=md.coSimulation.modelIdentifier,
        instanceName="ctrl",
    )
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    inputs, outputs = [vr[n] for n in ("q1.q", "q1.qd", "q2.q", "q2.qd")], [vr["q1.tau"], vr["q2.tau"]]
    pid, dt, saved = JointPID(scn.controller, scn.dt), scn.dt, None
    rows = []
    for k in range(300):
        t = k * dt
        x = rng.normal(scale=0.5, size=4)
        f.setReal(inputs, list(x))
        if k == 0:
            assert f.getReal(outputs) == [0.0, 0.0]
        before = f.getReal(outputs)
        f.setReal(inputs, list(x))
        assert f.getReal(outputs) == before  # setting inputs changes nothing until the step
        if k == 150:
            saved = (f.serializeFMUstate(f.getFMUstate()), k, x)
        f.doStep(currentCommunicationPoint=t, communicationStepSize=(k + 1) * dt - t)
        u = pid(t, {"q1": x[0], "q2": x[2]}, {"q1": x[1], "q2": x[3]})
        rows.append(f.getReal(outputs))
        assert rows[-1] == [u["q1"], u["q2"]], k
    blob, k0, x0 = saved
    f.setFMUstate(f.deSerializeFMUstate(blob))
    f.setReal(inputs, list(x0))
    f.doStep(currentCommunicationPoint=k0 * dt, communicationStepSize=(k0 + 1) * dt - k0 * dt)
    assert f.getReal(outputs) == rows[k0]
    f.terminate()
    f.freeInstance()


@pytest.mark.integration
def test_gauss_seidel_cosim_equals_the_in_process_run_bit_for_bit(runs):
    """fmpy, controller stepped before the model at each communication point: every column the
    FMUs expose equals `mbsfmu run` exactly; the record-based check is skipped with a note."""
    ref_report, ref = runs["inprocess"]
    report, traj = runs["gauss-seidel"]
    scn = load_scenario(SCENARIO)
    from mbsfmu.sim.rows import trajectory_row

    engine_cols = list(trajectory_row(build_simulator(scn)))
    assert list(traj.names) == [c for c in engine_cols if not c.startswith("engine.P_sys")] + [
        "ctrl.q1.tau",
        "ctrl.q2.tau",
    ]
    assert traj.n_rows == ref.n_rows == round(T / scn.dt) + 1
    for c in traj.names:
        if c in ref:
            np.testing.assert_array_equal(traj[c], ref[c], err_msg=c)
    np.testing.assert_array_equal(traj["ctrl.q1.tau"], ref["u.q1.tau"])
    assert report["passed"] and ref_report["passed"]
    assert report["checks"] == {} and "body records are not FMU outputs" in report["skipped_checks"]["energy_balance"]
    assert ref_report["checks"]["energy_balance"]["passed"]
    assert all(e["passed"] for e in report["references"].values())
    c = report["cosim"]
    assert (c["master"], c["scheme"], c["order"]) == ("fmpy", "gauss-seidel", ["ctrl", "mbs"])
    assert c["columns_not_exposed"] == ["engine.P_sys[1]", "engine.P_sys[2]", "engine.P_sys[3]"]
    assert report["solver"] == ref_report["solver"]
    assert abs(report["fmu_drift"]["drift.E_balance"]) < 1e-7


def in_process_controller_one_step_late(traj, dt: float) -> np.ndarray:
    """u_k = JointPID(t_k-1, q_k-1, qd_k-1), u_0 = 0, recomputed from a trajectory's own states."""
    from mbsfmu.sim.pid import JointPID

    pid = JointPID(load_scenario(SCENARIO).controller, dt)
    u = np.zeros((traj.n_rows, 2))
    for k in range(traj.n_rows - 1):
        out = pid(k * dt, {j: traj[f"q.{j}"][k] for j in ("q1", "q2")}, {j: traj[f"qd.{j}"][k] for j in ("q1", "q2")})
        u[k + 1] = out["q1"], out["q2"]
    return u


@pytest.mark.integration
def test_jacobi_cosim_is_the_controller_one_step_late(runs):
    """The fmpy loop's Jacobi scheme (every FMU stepped from the outputs read at t_k) drives the
    model with u_k-1: exactly the documented timing of the controller FMU."""
    report, traj = runs["jacobi"]
    u = in_process_controller_one_step_late(traj, load_scenario(SCENARIO).dt)
    np.testing.assert_array_equal(np.column_stack([traj["u.q1.tau"], traj["u.q2.tau"]]), u)
    assert report["cosim"]["scheme"] == "jacobi" and report["passed"]


@pytest.mark.integration
def test_libcosim_is_the_jacobi_scheme(runs):
    """libcosim's fixed-step algorithm equals the fmpy Jacobi loop to round-off (libcosim's
    nanosecond clock gives the PID setpoint times that differ in the last bit; measured: 5e-16 rad in
    q, 7e-11 N m in the commands); the scenario's gauss-seidel falls back to Jacobi with a note."""
    report, traj = runs["libcosim"]
    _, jac = runs["jacobi"]
    assert list(traj.names) == list(jac.names) and traj.n_rows == jac.n_rows
    for c in traj.names:
        scale = max(1.0, float(np.abs(jac[c]).max()))
        tol = 1e-11 * scale if c.endswith(".tau") else 1e-12 * scale
        np.testing.assert_allclose(traj[c], jac[c], rtol=0, atol=tol, err_msg=c)
    c = report["cosim"]
    assert (c["master"], c["scheme"]) == ("libcosim", "jacobi") and "is Jacobi" in c["notes"][0]
    assert report["passed"]


@pytest.mark.integration
def test_libcosim_agrees_with_the_in_process_run_to_the_one_step_delay(runs):
    """The delay changes the run by O(dt) (docs/guides/cosimulation.md; measured at dt = 1 ms over 1.5 s:
    6.2e-3 rad in the saturated start, 3.9e-5 rad once tracking, t >= 1 s); both pass the references."""
    report, traj = runs["libcosim"]
    ref_report, ref = runs["inprocess"]
    late = ref.time >= 1.0
    for c in ("q.q1", "q.q2"):
        np.testing.assert_allclose(traj[c], ref[c], rtol=0, atol=1e-2, err_msg=c)
        np.testing.assert_allclose(traj[c][late], ref[c][late], rtol=0, atol=1e-4, err_msg=c)
    for c in ("qd.q1", "qd.q2"):
        np.testing.assert_allclose(traj[c][late], ref[c][late], rtol=0, atol=1e-3, err_msg=c)
    assert np.abs(traj["q.q1"] - ref["q.q1"]).max() > 1e-4  # the delay is there
    for key, e in report["references"].items():
        assert e["passed"] and abs(e["max_abs"] - ref_report["references"][key]["max_abs"]) < 1e-3


@pytest.mark.integration
def test_an_fmu_file_runs_like_the_builtin_controller(runs, fmu_dir, tmp_path):
    """``{path: ctrl.fmu}``: the same controller FMU given as a file (parameters set by the
    master) runs exactly like the builtin, in the same process as the builtin's run."""
    from mbsfmu.cosim import build_fmus, run_cosim

    _, gs = runs["gauss-seidel"]
    shutil.copy(build_fmus(load_scenario(SCENARIO), fmu_dir)["ctrl"], tmp_path / "ctrl.fmu")
    text = bundled_text(**{"ctrl: {builtin: pid}": "ctrl: {path: ctrl.fmu, parameters: {q2.kd: 60.0}}"})
    text = text[: text.index("\ncontroller:\n")] + text[text.index("\ncosim:\n") :]
    report = run_cosim(
        load_scenario(scenario_file(tmp_path, text)), tmp_path / "out", duration=0.3, fmu_dir=fmu_dir, progress=False
    )
    traj = read_trajectory(tmp_path / "out" / "trajectory.csv")
    assert report["cosim"]["fmus"]["ctrl"] == {"path": str(tmp_path / "ctrl.fmu"), "builtin": None}
    for c in traj.names:
        np.testing.assert_array_equal(traj[c], gs[c][: traj.n_rows], err_msg=c)


@pytest.mark.integration
def test_failing_check_exits_nonzero_and_keeps_trajectory_and_report(runs, fmu_dir, tmp_path):
    runs["gauss-seidel"]  # the FMUs (and the model FMU's compiled kernels) exist
    path = scenario_file(tmp_path, bundled_text(**{"tol: 0.015, t0: 1.0}": "tol: 1.0e-6, t0: 1.0}"}))
    res = mbsfmu(
        "cosim",
        str(path),
        "--out",
        str(tmp_path / "out"),
        "--duration",
        "1.1",
        "--fmu-dir",
        str(fmu_dir),
        "--no-progress",
    )
    assert res.returncode == 1, res.stdout + res.stderr
    assert "reference q.q1" in res.stdout and "FAIL" in res.stdout and "SKIPPED" in res.stdout
    assert "co-simulated by fmpy, gauss-seidel (ctrl -> mbs)" in res.stdout
    assert read_trajectory(tmp_path / "out" / "trajectory.csv").n_rows == 1101
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert not report["passed"] and report["error"] is None
    assert [e["passed"] for e in report["references"].values()] == [False, False]
    assert (tmp_path / "out" / "joint_states.png").is_file()


@pytest.mark.integration
def test_controller_fmu_without_torque_limit_writes_xsd_infinity(tmp_path):
    """No torque limit = +inf: modelDescription.xml writes it as xs:double's INF (Python's "inf" is
    not a valid xs:double) and the FMU validates."""
    from fmpy.validation import validate_fmu

    from mbsfmu.cosim import build_fmus

    text = bundled_text(**{"limit: 120.0, ": "", "limit: 60.0, ": ""})
    fmu = build_fmus(load_scenario(scenario_file(tmp_path, text)), tmp_path / "fmus")["ctrl"]
    assert validate_fmu(str(fmu)) == []
    xml = zipfile.ZipFile(fmu).read("modelDescription.xml").decode()
    assert re.search(r'name="q1.limit"[^>]*>\s*<Real[^>]*start="INF"', xml)
    assert 'start="inf"' not in xml


@pytest.mark.integration
def test_a_discarded_step_stops_the_run_with_the_fmus_reason(runs, fmu_dir, tmp_path):
    """kp = 1e10 (no saturation) makes the sampled loop diverge: within a few dozen steps the model
    FMU discards a step (fmi2Discard, its log names the non-finite state); the run stops there,
    keeps its rows and fails."""
    from mbsfmu.cosim import run_cosim

    runs["gauss-seidel"]
    text = bundled_text(
        **{"ctrl: {builtin: pid}": "ctrl: {builtin: pid, parameters: {q1.kp: 1.0e10, q1.limit: 1.0e300}}"}
    )
    report = run_cosim(
        load_scenario(scenario_file(tmp_path, text)), tmp_path / "out", duration=0.1, fmu_dir=fmu_dir, progress=False
    )
    traj = read_trajectory(tmp_path / "out" / "trajectory.csv")
    assert not report["passed"] and "mbs: fmi2DoStep from t = " in report["error"]
    assert "non-finite state" in report["error"] and 1 < traj.n_rows < 101
    assert np.all(np.isfinite(traj.stack(list(STATES))))
    assert traj["u.q1.tau"][0] == pytest.approx(0.3e10)


@pytest.mark.slow
@pytest.mark.integration
def test_the_delay_error_is_first_order_in_the_step(runs, fmu_dir, tmp_path):
    """Halving dt (and the PID's sample period and h_max with it) halves the largest difference
    between the Jacobi co-simulation and the in-process run (measured over 3 s: 6.2e-3 rad at 1 ms,
    3.1e-3 rad at 0.5 ms)."""
    from mbsfmu.cosim import run_cosim

    runs["gauss-seidel"]
    worst = {}
    for dt in (0.001, 0.0005):
        path = scenario_file(
            tmp_path, bundled_text(**{"dt: 0.001": f"dt: {dt}", "h_max: 0.001": f"h_max: {dt}"}), f"dt{dt}.yaml"
        )
        scn = load_scenario(path)
        run_scenario(scn, tmp_path / f"ref{dt}", duration=0.5, progress=False)
        run_cosim(scn, tmp_path / f"jac{dt}", duration=0.5, scheme="jacobi", fmu_dir=fmu_dir, progress=False)
        a, b = (read_trajectory(tmp_path / f"{k}{dt}" / "trajectory.csv") for k in ("ref", "jac"))
        worst[dt] = max(np.abs(a[c] - b[c]).max() for c in ("q.q1", "q.q2"))
    assert 1.7 < worst[0.001] / worst[0.0005] < 2.3, worst
