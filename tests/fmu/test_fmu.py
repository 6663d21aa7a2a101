"""The FMU built by ``mbsfmu build-fmu``, run in fmpy (integration tier): validation, agreement
with the engine run directly, variable steps, FMU state round trips, several instances, the
Discard path and rejected values."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import numpy as np
import pytest

import mbsfmu
from tests.support.paths import MODELS
from tests.support.python_fmu import Logged, close, engine, instance, pd_torques

pytestmark = pytest.mark.integration
BUNDLED = sorted(p.stem for p in MODELS.glob("*.yaml"))
SCARA_STATE = ["q1.q", "q2.q", "q1.qd", "q2.qd"]


def fmi_call_exception():
    from fmpy.fmi1 import FMICallException

    return FMICallException


@pytest.mark.parametrize("name", BUNDLED)
def test_fmpy_validate(fmus, name):
    from fmpy.validation import validate_fmu

    assert validate_fmu(str(fmus.fmu(name))) == []


def test_fmpy_validate_flat(fmus):
    from fmpy.validation import validate_fmu

    fmu = fmus.fmu("scara", naming="flat")
    assert validate_fmu(str(fmu)) == []
    f = instance(fmus, fmu)
    assert "q1_tau" in f.vr and "link1_I_1_2" in f.vr
    f.setReal([f.vr["q1_tau"]], [1.0])
    f.doStep(0.0, 0.01)
    close(f)


def test_model_description(fmus):
    with zipfile.ZipFile(fmus.fmu("scara")) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
        names = z.namelist()
    assert root.get("fmiVersion") == "2.0" and root.get("variableNamingConvention") == "structured"
    cs = root.find("CoSimulation")
    for flag in ("canHandleVariableCommunicationStepSize", "canGetAndSetFMUstate", "canSerializeFMUstate"):
        assert cs.get(flag) == "true"
    assert cs.get("canBeInstantiatedOnlyOncePerProcess") == "false"
    ident = cs.get("modelIdentifier")
    assert f"binaries/linux64/{ident}.so" in names and f"binaries/linux64/{ident}.pythonfmu.so" in names
    assert any(n.startswith("resources/mbsfmu_engine_") and n.endswith("/simulator.py") for n in names)
    assert "resources/mbsfmu_model/scara.yaml" in names
    units = {u.get("name") for u in root.find("UnitDefinitions")}
    svs = list(root.find("ModelVariables"))
    by_name = {sv.get("name"): (k + 1, sv) for k, sv in enumerate(svs)}
    assert "time" not in by_name
    for sv in svs:
        assert sv.get("description")
        el = sv[0]
        assert el.tag == "Integer" or el.get("unit") in units
    idx = {n: k for n, (k, _sv) in by_name.items()}
    outputs = {int(u.get("index")): u.get("dependencies") for u in root.find("ModelStructure/Outputs")}
    assert outputs[idx["q1.q"]] == "" and outputs[idx["KE"]] == ""
    assert outputs[idx["q1.qdd"]] == f"{idx['q1.tau']} {idx['q2.tau']}"
    initial = {int(u.get("index")): u.get("dependencies") for u in root.find("ModelStructure/InitialUnknowns")}
    assert str(idx["link2.mass"]) in initial[idx["KE"]].split()
    # start values are exact (repr), not pythonfmu's 16 significant digits
    with zipfile.ZipFile(fmus.fmu("spacecraft")) as z:
        sc = ET.fromstring(z.read("modelDescription.xml"))
    start = {sv.get("name"): sv[0].get("start") for sv in sc.find("ModelVariables")}
    assert float(start["array_l.I[1,1]"]) == 26.099999999999998 and start["array_l.I[1,1]"] == "26.099999999999998"


def run_fmu_pd(f, steps):
    """PD control of the SCARA through the FMU; steps: communication step sizes [s]."""
    vr, rows, t = f.vr, [], 0.0
    state = [vr[n] for n in SCARA_STATE]
    for dt in steps:
        x = np.array(f.getReal(state))
        f.setReal([vr["q1.tau"], vr["q2.tau"]], list(pd_torques(x[:2], x[2:])))
        f.doStep(t, dt)
        t += dt
        rows.append(f.getReal(state))
    return np.array(rows)


def run_engine_pd(sim, steps):
    rows = []
    for dt in steps:
        tau = pd_torques(sim.q, sim.qd)
        sim.set_input("q1.tau", tau[0])
        sim.set_input("q2.tau", tau[1])
        sim.step(dt)
        rows.append(np.concatenate((sim.q, sim.qd)))
    return np.array(rows)


def test_pd_control_matches_engine(fmus):
    """A PD loop in Python through the FMU equals the same loop on the engine (rk4, 1 ms)."""
    f = instance(fmus, fmus.fmu("scara"))
    steps = [1e-3] * 1000
    fmu_run = run_fmu_pd(f, steps)
    direct = run_engine_pd(engine("scara", integrator="rk4", h_max=1e-3), steps)
    np.testing.assert_allclose(fmu_run, direct, rtol=0.0, atol=1e-12)
    assert np.abs(fmu_run[-1, :2] - [0.8, -0.6]).max() < 0.05  # the controller did its job
    assert f.getInteger([f.vr["solver.n_steps"], f.vr["solver.n_rhs"]]) == [1000, 4000]
    close(f)


def test_variable_step_sizes(fmus, rng):
    """Any communication step: the engine sub-steps (rk4: ceil(dt / h_max) equal steps)."""
    steps = list(rng.uniform(2e-4, 7e-3, 300))
    f = instance(fmus, fmus.fmu("scara"))
    np.testing.assert_allclose(run_fmu_pd(f, steps), run_engine_pd(engine("scara"), steps), rtol=0.0, atol=1e-12)
    close(f)


def test_dop853_selected_by_parameter(fmus):
    steps = [0.01, 0.05, 0.003, 0.02] * 10
    params = {"solver.method": 2, "solver.rtol": 1e-9, "solver.atol": 1e-11, "solver.h_max": 0.0}
    f = instance(fmus, fmus.fmu("scara"), params=params)
    direct = run_engine_pd(engine("scara", integrator="dop853", rtol=1e-9, atol=1e-11, h_max=0.0), steps)
    np.testing.assert_allclose(run_fmu_pd(f, steps), direct, rtol=0.0, atol=1e-12)
    close(f)


def test_outputs_equal_engine_quantities(fmus):
    """p_sys, H_sys, R, Rdot, KE, PE, qdd and the work outputs equal the engine's own."""
    f = instance(
        fmus, fmus.fmu("spacecraft"), params={"solver.h_max": 0.01}, inputs={"rw2.torque": 0.02, "thr1.thrust": 0.5}
    )
    sim = engine("spacecraft", h_max=0.01)
    sim.set_input("rw2.torque", 0.02)
    sim.set_input("thr1.thrust", 0.5)
    for k in range(20):
        f.doStep(0.05 * k, 0.05)
        sim.step(0.05)
    inv = sim.invariants()
    vr = f.vr
    for name, want in (("p_sys", inv.p_sys), ("H_sys", inv.H_sys), ("R", inv.R), ("Rdot", inv.Rdot)):
        got = f.getReal([vr[f"{name}[{k}]"] for k in (1, 2, 3)])
        np.testing.assert_allclose(got, want, rtol=0.0, atol=1e-12 * max(1.0, np.abs(want).max()))
    KE, PE, E, W_in, W_diss = f.getReal([vr[n] for n in ("KE", "PE", "E", "W_in", "W_diss")])
    assert (KE, PE, W_in, W_diss) == (inv.KE, inv.PE, *sim.work) and E == inv.KE + inv.PE
    qdd = sim.rhs(sim.x)[sim.model.nq : sim.model.nq + sim.model.nv]
    got = f.getReal([vr[f"base.qdd[{k}]"] for k in range(1, 7)] + [vr["hinge_l.qdd"], vr["rw2.qdd"]])
    v = sim.model.v_slice
    np.testing.assert_allclose(
        got, np.concatenate((qdd[v("base")], qdd[v("hinge_l")], qdd[v("rw2")])), rtol=0.0, atol=1e-12
    )
    # energy balance: E - W_in - W_diss stays at E(t0) to integration accuracy
    assert abs(f.getReal([vr["drift.E_balance_abs"]])[0]) < 1e-9 and W_in != 0.0
    close(f)


def test_drift_indicators_free_spacecraft(fmus):
    """No external torque: H_sys is conserved (relative drift ~1e-13), as MBS Momentum Testing demands."""
    f = instance(fmus, fmus.fmu("spacecraft"), params={"solver.h_max": 0.01}, inputs={"rw1.torque": 0.05})
    for k in range(20):
        f.doStep(0.1 * k, 0.1)
    h_rel, h_abs, e_rel = f.getReal([f.vr[n] for n in ("drift.H_sys", "drift.H_sys_abs", "drift.E_balance")])
    assert 0.0 <= h_rel < 1e-11 and h_abs < 1e-9 and e_rel < 1e-8
    close(f)


def test_drift_outputs_follow_their_definitions(fmus):
    """drift.H_sys and drift.E_balance are relative to the system's own scales
    (the magnitudes of H_sys's terms; those of the terms E sums, and the works), not to
    max(|x(t0)|, 1e-9); checked against the engine run in-process with the same input. The
    SCARA starts at rest: H_sys(t0) = 0 and KE(t0) = 0, where the old floor made a round-off
    residual read ~1e-6."""
    from mbsfmu.sim.outputs import angular_momentum_scale, energy_scale

    f = instance(fmus, fmus.fmu("scara"), inputs={"q1.tau": 0.5})
    sim = engine("scara")
    sim.set_input("q1.tau", 0.5)
    inv0 = sim.invariants()
    S0 = angular_momentum_scale(sim.model, sim.kinematics())
    assert float(np.linalg.norm(inv0.H_sys)) == 0.0 and inv0.KE == 0.0
    for k in range(10):
        f.doStep(0.01 * k, 0.01)
        sim.step(0.01)
    inv = sim.invariants()
    W_in, W_diss = sim.work
    H_rel, H_abs, E_rel, E_abs = f.getReal(
        [f.vr[n] for n in ("drift.H_sys", "drift.H_sys_abs", "drift.E_balance", "drift.E_balance_abs")]
    )
    dH = float(np.linalg.norm(inv.H_sys - inv0.H_sys))
    S = max(S0, angular_momentum_scale(sim.model, sim.kinematics()))
    dE = inv.E - W_in - W_diss - inv0.E
    kin = sim.kinematics()
    S_E = energy_scale(sim.model, kin, inv.KE, sim.spring_energy(kin))  # KE + springs + sum m |g| |c|
    E_scale = max(inv0.KE, abs(inv.PE - inv0.PE), S_E + abs(W_in) + abs(W_diss))
    assert H_abs == pytest.approx(dH, rel=1e-9) and H_rel == pytest.approx(dH / S, rel=1e-9)
    assert E_abs == pytest.approx(dE, abs=1e-13 * E_scale)
    assert E_rel == pytest.approx(abs(dE) / E_scale, abs=1e-13)
    assert 0.0 < E_scale and E_rel < 1e-9  # RK4 at h = 1e-3 s over 0.1 s balances energy to ~1e-12
    close(f)


@pytest.mark.parametrize("method", [1, 2])
def test_fmu_state_round_trip(fmus, method):
    """fmi2GetFMUstate/SetFMUstate and Serialize/DeSerialize reproduce the continued trajectory bit
    for bit (dop853 too, whose next step depends on the last step size)."""
    params = {"solver.method": method, "solver.h_max": 0.002 if method == 1 else 0.0}
    f = instance(fmus, fmus.fmu("scara"), params=params)
    run_fmu_pd(f, [0.01] * 20)
    state = f.getFMUstate()
    data = f.serializeFMUstate(state)
    stats = f.getInteger([f.vr["solver.n_steps"], f.vr["solver.n_rhs"]])
    steps = [0.01, 0.003, 0.02, 0.007] * 5
    ref = run_fmu_pd(f, steps)
    f.setFMUstate(state)
    assert f.getInteger([f.vr["solver.n_steps"], f.vr["solver.n_rhs"]]) == stats
    np.testing.assert_array_equal(run_fmu_pd(f, steps), ref)
    restored = f.deSerializeFMUstate(data)
    f.setFMUstate(restored)
    np.testing.assert_array_equal(run_fmu_pd(f, steps), ref)
    # a serialized state moves to another instance of the same FMU
    g = instance(fmus, fmus.fmu("scara"), name="other", params=params)
    other = g.deSerializeFMUstate(bytes(data))
    g.setFMUstate(other)
    np.testing.assert_array_equal(run_fmu_pd(g, steps), ref)
    for s, owner in ((state, f), (restored, f), (other, g)):
        owner.freeFMUstate(s)
    close(f)
    close(g)


def test_state_keeps_parameters_and_inputs(fmus):
    """The state carries the parameter values and held inputs: restoring it into an instance
    with other parameters continues the first instance's trajectory."""
    fmu = fmus.fmu("scara")
    a = instance(fmus, fmu, "a", params={"link2.mass": 2.5}, inputs={"q1.tau": 0.3})
    b = instance(fmus, fmu, "b")
    a.doStep(0.0, 0.05)
    data = a.serializeFMUstate(a.getFMUstate())
    a.doStep(0.05, 0.05)
    ref = a.getReal([a.vr["q1.q"]])
    b.setFMUstate(b.deSerializeFMUstate(data))
    b.doStep(0.05, 0.05)
    assert b.getReal([b.vr["q1.q"]]) == ref and b.getReal([b.vr["link2.mass"], b.vr["q1.tau"]]) == [2.5, 0.3]
    close(a)
    close(b)


def test_two_instances_different_parameters(fmus):
    """Two instances in one process, different masses and gravity, each equal to its own engine."""
    fmu = fmus.fmu("scara")
    p_b = {"link2.mass": 3.0, "link1.I[3,3]": 0.175, "gravity[2]": -1.62}
    a = instance(fmus, fmu, "a")
    b = instance(fmus, fmu, "b", params=p_b)
    steps = [2e-3] * 250
    ra, rb = run_fmu_pd(a, steps), run_fmu_pd(b, steps)
    np.testing.assert_allclose(ra, run_engine_pd(engine("scara"), steps), rtol=0.0, atol=1e-12)
    np.testing.assert_allclose(rb, run_engine_pd(engine("scara", params=p_b), steps), rtol=0.0, atol=1e-12)
    assert np.abs(ra - rb).max() > 1e-3
    assert b.getReal([b.vr["link2.mass"]]) == [3.0]
    close(a)
    close(b)


def test_discard_on_numerical_trouble(fmus):
    """A huge torque makes the state non-finite: fmi2DoStep returns fmi2Discard, the log says
    why, the state stays at the start of the step and the host can go on."""
    from fmpy.fmi2 import fmi2Discard

    log = Logged()
    f = instance(fmus, fmus.fmu("scara"), logged=log)
    f.doStep(0.0, 0.01)
    before = f.getReal([f.vr[n] for n in SCARA_STATE])
    f.setReal([f.vr["q1.tau"]], [1e300])
    with pytest.raises(fmi_call_exception()) as e:
        f.doStep(0.01, 0.01)
    assert e.value.status == fmi2Discard
    assert any(s == fmi2Discard and "non-finite state" in m for s, _c, m in log.messages), log.text()
    assert f.getReal([f.vr[n] for n in SCARA_STATE]) == before
    f.setReal([f.vr["q1.tau"]], [0.0])
    f.doStep(0.01, 0.01)
    assert f.getInteger([f.vr["solver.n_discards"]]) == [1]
    close(f)


def test_nan_input_rejected(fmus):
    """A NaN input: fmi2SetReal returns fmi2Error with the reason logged (even with logging off),
    the input keeps its value and the simulation goes on."""
    from fmpy.fmi2 import fmi2Error

    log = Logged()
    f = instance(fmus, fmus.fmu("scara"), logged=log, logging_on=False)
    f.setReal([f.vr["q1.tau"]], [0.7])
    with pytest.raises(fmi_call_exception()) as e:
        f.setReal([f.vr["q1.tau"], f.vr["q2.tau"]], [1.0, float("nan")])
    assert e.value.status == fmi2Error
    assert "q2.tau = nan rejected" in log.text()
    assert f.getReal([f.vr["q1.tau"], f.vr["q2.tau"]]) == [0.7, 0.0]  # all-or-nothing
    f.doStep(0.0, 0.01)
    close(f)


def test_settings_rejected(fmus):
    """Fixed parameters after initialisation, outputs, out-of-range values: fmi2Error, logged."""
    from fmpy.fmi2 import fmi2Error

    log = Logged()
    f = instance(fmus, fmus.fmu("scara"), logged=log)
    for vr, value, expect in (
        (f.vr["link1.mass"], 3.0, "is fixed"),
        (f.vr["KE"], 1.0, "is an output"),
        (f.vr["q1.tau"], float("inf"), "must be finite"),
    ):
        with pytest.raises(fmi_call_exception()) as e:
            f.setReal([vr], [value])
        assert e.value.status == fmi2Error and expect in log.messages[-1][2]
    close(f)
    g = instance(fmus, fmus.fmu("scara"), "g", init=False, logged=log)
    with pytest.raises(fmi_call_exception()):
        g.setReal([g.vr["link1.mass"]], [-1.0])
    assert "link1.mass = -1 rejected: below the minimum 0;" in log.messages[-1][2]  # bounds as numbers (no nan)
    with pytest.raises(fmi_call_exception()):
        g.setInteger([g.vr["solver.method"]], [3])
    assert "solver.method = 3 rejected: outside [1, 2];" in log.messages[-1][2]
    g.freeInstance()


def test_reset_allows_new_parameters(fmus):
    """fmi2Reset returns to the instantiated state: parameters can be set again."""
    f = instance(fmus, fmus.fmu("scara"))
    f.doStep(0.0, 0.01)
    f.reset()
    f.setReal([f.vr["link2.mass"]], [2.5])
    f.enterInitializationMode()
    f.exitInitializationMode()
    f.doStep(0.0, 0.01)
    sim = engine("scara", params={"link2.mass": 2.5})
    sim.step(0.01)
    assert f.getReal([f.vr["q1.q"], f.vr["q2.qd"]]) == [sim.q[0], sim.qd[1]]
    assert f.getInteger([f.vr["solver.n_steps"]]) == [10]
    close(f)


def test_invalid_parameters_fail_initialisation(fmus):
    """Parameters that make no valid model: fmi2ExitInitializationMode fails, the log lists why."""
    log = Logged()
    f = instance(fmus, fmus.fmu("scara"), init=False, logged=log)
    f.setReal([f.vr["link1.I[1,1]"], f.vr["link1.I[2,2]"]], [0.01, 5.0])  # violates the triangle inequality
    f.enterInitializationMode()
    with pytest.raises(fmi_call_exception()):
        f.exitInitializationMode()
    assert "cannot initialise" in log.text() and "bodies[0].inertia" in log.text() and "triangle" in log.text()
    f.freeInstance()


def test_fmu_runs_its_bundled_engine(fmus):
    """The FMU imports the engine copy in its resources, not the mbsfmu of the host process."""
    fmu = fmus.fmu("scara")
    f = instance(fmus, fmu)
    with zipfile.ZipFile(fmu) as z:
        engine_pkg = next(n.split("/")[1] for n in z.namelist() if n.startswith("resources/mbsfmu_engine_"))
    mod = sys.modules[engine_pkg + ".sim.simulator"]  # shared by every FMU built from this engine
    path = Path(mod.__file__).resolve()  # (maybe another test's FMU unpacked it first)
    assert path.parts[-4:] == ("resources", engine_pkg, "sim", "simulator.py")
    assert not path.is_relative_to(Path(mbsfmu.__file__).resolve().parent)
    assert f.getReal([f.vr["q1.q"]]) == [0.3]
    close(f)


def test_simulate_fmu(fmus):
    """fmpy's own driver runs the FMU with inputs from a signal table."""
    import fmpy

    fmu = fmus.fmu("scara")
    signals = np.array(
        [(0.0, 1.0, -0.5), (1.0, 1.0, -0.5)], dtype=[("time", float), ("q1.tau", float), ("q2.tau", float)]
    )
    res = fmpy.simulate_fmu(str(fmu), stop_time=0.2, output_interval=0.01, input=signals, output=["q1.q", "q2.q", "KE"])
    sim = engine("scara")
    sim.set_input("q1.tau", 1.0)
    sim.set_input("q2.tau", -0.5)
    for _ in range(20):
        sim.step(0.01)
    np.testing.assert_allclose([res["q1.q"][-1], res["q2.q"][-1]], sim.q, rtol=0.0, atol=1e-12)


def test_cli_build_fmu(tmp_path, capsys):
    from mbsfmu.cli import main

    out = tmp_path / "pend.fmu"
    assert (
        main(
            [
                "build-fmu",
                str(MODELS / "compound_pendulum.yaml"),
                "-o",
                str(out),
                "--naming",
                "flat",
                "--integrator",
                "dop853",
                "--h-max",
                "0.01",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "wrote" in text and "flat names" in text and out.is_file()
    with zipfile.ZipFile(out) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
    start = {sv.get("name"): sv[0].get("start") for sv in root.find("ModelVariables")}
    assert start["solver_method"] == "2" and start["solver_h_max"] == "0.01"


def test_python_checks_without_loader(fmus):
    """Where pythonfmu's binary runs without the loader (a Python host, or Windows), the slave
    itself rejects a NaN input: logged as an error, not applied, and the next step is discarded
    with the reason until the input gets a finite value."""
    from fmpy.fmi2 import fmi2Discard, fmi2Error

    log = Logged()
    f = instance(fmus, fmus.fmu("scara", loader=False), logged=log, logging_on=True)
    f.setReal([f.vr["q1.tau"]], [0.4])
    f.setReal([f.vr["q1.tau"]], [float("nan")])  # pythonfmu returns fmi2OK here
    assert (fmi2Error, "logStatusError") == log.messages[-1][:2] and "q1.tau = nan rejected" in log.messages[-1][2]
    assert f.getReal([f.vr["q1.tau"]]) == [0.4]
    with pytest.raises(fmi_call_exception()) as e:
        f.doStep(0.0, 0.01)
    assert e.value.status == fmi2Discard and "rejected values were not replaced" in log.messages[-1][2]
    f.setReal([f.vr["q1.tau"]], [0.5])
    f.doStep(0.0, 0.01)
    close(f)


def test_simulate_fmu_twice_in_one_process(fmus):
    """fmpy.simulate_fmu unpacks the FMU anew at each call and deletes the folder afterwards; the
    second call must import the slave module again (not the first unpacking's, whose files are
    gone) and give the same result, and the process exits cleanly. Known defect (pythonfmu's
    binary, not ours): such a process sometimes aborts at exit with a corrupted heap, found by
    scipy's libgfortran exit handler (_gfortrani_close_units; 4 of 120 runs under gdb), so one
    exit status besides 0 is accepted: SIGABRT with glibc's heap-corruption report, after the
    results were printed. Any other exit status fails."""
    code = (
        f"import fmpy\nr = [fmpy.simulate_fmu({str(fmus.fmu('scara'))!r}, stop_time=0.01, output_interval=0.005)"
        f" for _ in range(2)]\nassert (r[0] == r[1]).all()\nprint('same', flush=True)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "same" in res.stdout.split(), res.stdout + res.stderr
    known_exit_defect = res.returncode == -6 and re.search(r"corrupted|double free|free\(\)", res.stderr)
    assert res.returncode == 0 or known_exit_defect, (res.returncode, res.stderr[-2000:])
