"""URDF overlay export (mbsfmu.io.overlay_export, ``mbsfmu export-urdf --overlay``): the overlay written
beside a model's URDF loads as the model (initial state, springs, gravity, inputs, forward dynamics),
a scenario naming it runs the original trajectory, and ``--floating-base`` floats a bare URDF in
``info``, ``run`` and ``build-fmu``."""

from __future__ import annotations

import csv
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.forces import ForceElements
from mbsfmu.io.overlay_export import export_overlay
from mbsfmu.io.urdf_export import export_urdf, write_urdf
from tests.support.paths import MODELS

RTOL = 1e-12  # relative to the largest |qdd|: the same sums in another order (rotor inertia split), ~N eps


def models(spherical: bool) -> list[Path]:
    """The bundled loop-free YAML models with (or without) a spherical joint."""
    out = []
    for p in sorted(MODELS.glob("*.yaml")):
        spec = mbsfmu.load_model(p).spec
        if not spec.loops and any(b.joint.type == "spherical" for b in spec.bodies) == spherical:
            out.append(p)
    return out


def exported(model, tmp_path: Path) -> tuple[Path, str]:
    """Write model's URDF and overlay into tmp_path; (overlay path, the URDF name of its free root joint)."""
    write_urdf(model, tmp_path / "export.urdf")
    out = export_overlay(model, "export.urdf")
    (tmp_path / "export_overlay.yaml").write_text(out.text)
    return tmp_path / "export_overlay.yaml", export_urdf(model).floating_root


@pytest.mark.parametrize("path", models(spherical=False), ids=lambda p: p.stem)
def test_the_overlay_loads_as_the_model(tmp_path, path):
    """Joint by joint (the free root joint as root_joint, wheel inputs <w>.torque as <w>.tau): the
    same initial q and qd (bit for bit: numbers as repr), the same inputs and gravity, and the same
    qdd at the initial state with springs and gravity acting (to RTOL)."""
    model = mbsfmu.load_model(path)
    overlay, root = exported(model, tmp_path)
    back = mbsfmu.load_model(overlay)
    name = {root: "root_joint"} if root else {}
    q, qd = model.initial_state()
    qb, qdb = back.initial_state()
    qdd = model.forward_dynamics(q, qd, np.zeros(model.nv))
    qddb = back.forward_dynamics(qb, qdb, np.zeros(back.nv))
    assert sorted(name.get(j, j) for j in model.joint_names) == sorted(back.joint_names)
    for j in model.joint_names:
        jb = name.get(j, j)
        assert np.array_equal(q[model.q_slice(j)], qb[back.q_slice(jb)]), j
        assert np.array_equal(qd[model.v_slice(j)], qdb[back.v_slice(jb)]), j
        np.testing.assert_allclose(
            qdd[model.v_slice(j)], qddb[back.v_slice(jb)], rtol=0, atol=RTOL * max(1.0, np.abs(qdd).max()), err_msg=j
        )
    inputs = {
        n.replace(".torque", ".tau") if n.split(".")[0] in model.wheels else n
        for n in ForceElements(model).layout.names
    }
    assert inputs == set(ForceElements(back).layout.names)
    assert np.array_equal(model.gravity, back.gravity)


def test_a_spherical_joints_initial_state_is_listed_as_dropped():
    """Its URDF coordinates are three Euler angles: the overlay leaves its initial values out and says
    so (the other joints' are written)."""
    assert models(spherical=True), "no bundled model with a spherical joint"
    for path in models(spherical=True):
        model = mbsfmu.load_model(path)
        head = next(b.joint.name for b in model.spec.bodies if b.joint.type == "spherical")
        spec = replace(model.spec, initial_qd={**model.spec.initial_qd, head: (0.1, 0.2, 0.3)})
        out = export_overlay(spec, "x.urdf")
        assert out.dropped == (
            f"the initial qd of spherical joint {head!r} (its URDF coordinates are x-y-z Euler angles)",
        )
        assert f'"{head}"' not in out.text.split("initial:")[1]


def trajectory(folder: Path) -> dict[str, np.ndarray]:
    with open(folder / "trajectory.csv") as f:
        rows = list(csv.reader(f))
    values = np.array(rows[1:], dtype=float)
    return {name: values[:, k] for k, name in enumerate(rows[0])}


def test_a_scenario_of_the_exported_spacecraft_runs_the_original_trajectory(run_cli, tmp_path):
    """The user's path: export-urdf --overlay, a scenario whose model is the overlay, mbsfmu run; the
    free-floating spacecraft (free base, wheels spun up, arrays on springs, no gravity) over 20 s of
    RK4 at 1 ms against the original model's run, every column (joints by their names, root_joint
    for base). Tolerance 1e-11 of each column's largest value: the same dynamics summed in another
    order (~10 eps per evaluation) through 2e4 steps, at most ~2e4 eps = 4e-12 if every step's
    round-off added up (measured: 1.7e-15, the energy)."""
    r = run_cli("export-urdf", MODELS / "spacecraft.yaml", "-o", tmp_path / "sc.urdf", "--overlay")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sc_overlay.yaml").is_file() and "wrote" in r.stdout and "sc_overlay.yaml" in r.stdout
    assert "not in the URDF nor the overlay: the name of free root joint 'base'" in r.stderr
    assert "spring" not in r.stderr and "force element" not in r.stderr and "initial state" not in r.stderr
    common = "duration: 20.0\ndt: 0.5\nintegrator: {method: rk4, h_max: 1.0e-3}\noutputs: {plots: false}\n"
    (tmp_path / "original.yaml").write_text(f"version: 1\nmodel: {MODELS / 'spacecraft.yaml'}\n{common}")
    (tmp_path / "exported.yaml").write_text(f"version: 1\nmodel: sc_overlay.yaml\n{common}")
    for name in ("original", "exported"):
        r = run_cli("run", tmp_path / f"{name}.yaml", "-o", tmp_path / name, "--no-progress")
        assert r.returncode == 0, r.stderr
    a, b = trajectory(tmp_path / "original"), trajectory(tmp_path / "exported")

    def renamed(column: str) -> str:
        return column.replace("base[", "root_joint[").replace(".torque", ".tau")

    assert sorted(renamed(c) for c in a) == sorted(b)
    assert len(a["time"]) == 41
    for column, x in a.items():
        y = b[renamed(column)]
        assert np.max(np.abs(x - y)) <= 1e-11 * max(1.0, np.max(np.abs(x))), column
    assert np.ptp(a["q.hinge_l"]) > 0.1 and np.ptp(a["q.base[4]"]) > 1e-3  # it moved


def test_an_overlay_needs_the_urdf_in_a_file(run_cli, tmp_path):
    r = run_cli("export-urdf", MODELS / "spacecraft.yaml", "-o", "-", "--overlay", tmp_path / "o.yaml")
    assert r.returncode == 2 and "--overlay" in r.stderr and "-o X.urdf" in r.stderr
    assert not (tmp_path / "o.yaml").exists()


def test_info_floats_a_urdf_with_floating_base_and_refuses_it_for_a_yaml_model(run_cli):
    urdf = MODELS / "urdf_arm7.urdf"
    fixed, free = run_cli("info", urdf), run_cli("info", urdf, "--floating-base")
    assert fixed.returncode == free.returncode == 0
    row = [line.split() for line in free.stdout.splitlines() if "root_joint" in line]
    assert row and row[0][4] == "free" and "nq = 16, nv = 15" in free.stdout
    assert "nq = 9, nv = 9" in fixed.stdout
    r = run_cli("info", MODELS / "scara.yaml", "--floating-base")
    assert (
        r.returncode == 2
        and "scara.yaml" in r.stderr
        and "--floating-base applies to a URDF"
        in r.stderr.replace("floating_base (--floating-base)", "--floating-base")
    )


def test_run_floats_the_scenarios_urdf_with_floating_base(run_cli, tmp_path):
    """A scenario naming a bare URDF: with --floating-base its root link floats (the scenario's
    initial state of root_joint is taken); without, root_joint is fixed and the scenario's values for
    it are refused, naming the line."""
    write_urdf(mbsfmu.load_model(MODELS / "spacecraft.yaml"), tmp_path / "sc.urdf")
    (tmp_path / "s.yaml").write_text(
        "version: 1\nmodel: sc.urdf\ngravity: [0, 0, 0]\nduration: 1.0\ndt: 0.5\n"
        "integrator: {method: rk4, h_max: 1.0e-3}\noutputs: {plots: false}\n"
        "initial:\n  qd: {root_joint: [0.1, 0, 0, 0, 0, 0.2]}\n"
    )
    r = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "o", "--no-progress", "--floating-base")
    assert r.returncode == 0, r.stderr
    x = trajectory(tmp_path / "o")["q.root_joint[1]"]
    assert x[0] == 0.0 and x[-1] > 0.05  # drifting at 0.1 m/s (body x, rotating slowly about z)
    r = run_cli("run", tmp_path / "s.yaml", "-o", tmp_path / "o2", "--no-progress")
    assert r.returncode == 2 and "s.yaml:9: initial.qd.root_joint" in r.stderr and "takes 0 value(s)" in r.stderr
    assert "mbsfmu run --floating-base floats it" in r.stderr


def test_run_of_a_model_file_says_what_a_scenario_is(run_cli, tmp_path):
    for model in (MODELS / "urdf_arm7.urdf", MODELS / "spacecraft.yaml", MODELS / "urdf_quadruped_overlay.yaml"):
        r = run_cli("run", model, "-o", tmp_path / "o")
        assert r.returncode == 2 and ", not a scenario" in r.stderr, r.stderr
        assert f"mbsfmu info {model}" in r.stderr and r.stderr.count("\n") == 1
        assert run_cli("info", model).returncode == 0  # the suggestion works as written


@pytest.mark.integration
def test_build_fmu_floats_a_urdf_with_floating_base(run_cli, tmp_path):
    """Both runtimes: the FMU of arm7.urdf --floating-base has the free joint's 7 coordinates; the
    python runtime's slave loads its bundled URDF floating too (it runs in fmpy)."""
    pytest.importorskip("pythonfmu")
    fmpy = pytest.importorskip("fmpy")
    from mbsfmu.engine.native import core

    urdf = MODELS / "urdf_arm7.urdf"
    for runtime in ("python", "native"):
        if runtime == "native" and not core.available():
            continue
        out = tmp_path / f"{runtime}.fmu"
        extra = ("--no-loader",) if runtime == "python" else ()
        r = run_cli("build-fmu", urdf, "-o", out, "--runtime", runtime, "--floating-base", *extra)
        assert r.returncode == 0, r.stderr
        with zipfile.ZipFile(out) as z:
            names = z.read("modelDescription.xml").decode()
        assert all(f'name="root_joint.q[{k}]"' in names for k in range(1, 8)), runtime
    result = fmpy.simulate_fmu(str(tmp_path / "python.fmu"), stop_time=0.01, output=["root_joint.q[3]"])
    assert result["root_joint.q[3]"][-1] < 0.0  # falls under URDF's gravity: floating, not fixed
