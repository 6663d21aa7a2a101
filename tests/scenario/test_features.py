"""Scenario features: controller, analytic references, final state, CSV inputs,
inline models, plots, MCAP recording, list and sweep."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mbsfmu
from mbsfmu.scenario import ScenarioError, build_simulator, load_scenario, run_scenario
from mbsfmu.scenario.expressions import ExpressionError, compile_expression, evaluate
from mbsfmu.sim.pid import JointPID, PIDGains
from mbsfmu.sim.schedules import Schedule
from mbsfmu.trajectory import read_trajectory
from tests.support.paths import MODELS, ROOT

SCARA = ROOT / "scenarios" / "models" / "scara.yaml"


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_pid_law_saturation_and_anti_windup():
    """u = sat(kp e + ki I + kd D); the integral freezes while the output is saturated."""
    g = PIDGains(kp=10.0, ki=5.0, kd=2.0, limit=3.0, setpoint=Schedule("constant", {"value": 1.0}))
    pid = JointPID({"j": g}, dt=0.1)
    u = pid(0.0, {"j": 0.9}, {"j": 0.5})
    assert u["j"] == pytest.approx(10 * 0.1 + 0 - 2 * 0.5)
    assert pid.integral["j"] == pytest.approx(0.01)
    u = pid(0.1, {"j": 0.0}, {"j": 0.0})  # 10 + 0.05 -> saturated at 3, integral frozen
    assert u["j"] == 3.0 and pid.integral["j"] == pytest.approx(0.01)
    ramp = Schedule("ramp", {"t0": 0.0, "t1": 1.0, "end": 1.0})
    err = PIDGains(kp=0.0, ki=0.0, kd=1.0, limit=math.inf, setpoint=ramp, derivative="error")
    pid = JointPID({"j": err}, dt=0.1)
    assert pid(0.0, {"j": 0.0}, {"j": 0.0})["j"] == 0.0  # no previous setpoint: no rate yet
    assert pid(0.1, {"j": 0.0}, {"j": 0.25})["j"] == pytest.approx(1.0 - 0.25)  # setpoint rate 1 rad/s


def test_expressions_are_safe_and_vectorised():
    tree = compile_expression("a * exp(-t) * cos(w * t) + (t > 1)", {"a", "w"})
    t = np.linspace(0, 2, 5)
    np.testing.assert_allclose(evaluate(tree, t, {"a": 2.0, "w": 3.0}), 2 * np.exp(-t) * np.cos(3 * t) + (t > 1))
    for bad in ("__import__('os')", "a.__class__", "open('x')", "[1, 2]", "'text'", "b + 1", "lambda: 1"):
        with pytest.raises(ExpressionError):
            compile_expression(bad, {"a"})


def test_references_final_and_inline_model(tmp_path, run_cli):
    """A pendulum defined inline: its small-angle reference passes; a wrong final state fails the
    run (exit 1) while trajectory and report are written."""
    scn = write(
        tmp_path / "p.yaml",
        """version: 1
model:
  version: 1
  gravity: [0, -9.81, 0]
  bodies:
    - {name: rod, parent: world, joint: {name: q1, type: revolute}, mass: 1.0, com: [0, -0.5, 0],
       inertia: {Ixx: 0.0833333333333333, Iyy: 0.0, Izz: 0.0833333333333333}}
duration: 2.0
dt: 0.01
integrator: {method: dop853, rtol: 1.0e-12, atol: 1.0e-12}
initial: {q: {q1: 0.005}}
checks: {energy_constant: rel:1.0e-10}
references:
  - {column: q.q1, expr: "q0 * cos(sqrt(3 * g / (2 * l)) * t)", params: {q0: 0.005, g: 9.81, l: 1.0}, tol: 1.0e-6}
final:
  q.q1: {value: 1.0, tol: 1.0e-3}
outputs: {plots: true}
""",
    )
    res = run_cli("run", scn, "--out", tmp_path / "o", "--no-progress")
    assert res.returncode == 1, res.stderr
    report = json.loads((tmp_path / "o" / "report.json").read_text())
    (ref,) = report["references"].values()
    assert ref["passed"] and ref["max_abs"] < 1e-6
    assert report["final"]["q.q1"]["passed"] is False and not report["passed"]
    assert "final     q.q1" in res.stdout and "FAIL" in res.stdout
    # the checks' verdict is theirs: it passed (was "overall: FAIL (1 checks, 0 failed)")
    assert "conservation checks: PASS (1 checks, 0 failed)" in res.stdout and "scenario p: FAIL" in res.stdout
    for png in ("joint_states.png", "conservation.png"):
        assert (tmp_path / "o" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_inline_model_errors_point_into_the_scenario_file(tmp_path):
    scn = write(
        tmp_path / "bad.yaml",
        """version: 1
model:
  version: 1
  bodies:
    - {name: rod, parent: world, joint: {name: q1, type: revolute}, mass: -1.0}
duration: 1.0
dt: 0.01
""",
    )
    with pytest.raises(ScenarioError, match=r"bad.yaml:5: model.bodies\[0\].mass: negative mass"):
        run_scenario(load_scenario(scn), tmp_path / "o", progress=False)


def test_csv_input_and_pid_controller(tmp_path):
    """A CSV torque table on q2 and the PID on q1 drive the SCARA; the energy balance holds."""
    (tmp_path / "tau.csv").write_text("time,torque\n0,0\n0.5,2\n1.0,-1\n")
    scn = write(
        tmp_path / "s.yaml",
        f"""version: 1
model: {SCARA}
duration: 1.0
dt: 0.005
integrator: {{method: rk4, h_max: 0.001}}
inputs: {{q2.tau: {{type: csv, file: tau.csv, time: time, value: torque}}}}
controller: {{type: pid, joints: {{q1: {{kp: 200, kd: 20, ki: 10, limit: 80, setpoint: 0.5}}}}}}
checks: {{energy_balance: rel:1.0e-8}}
outputs: {{plots: false}}
""",
    )
    report = run_scenario(load_scenario(scn), tmp_path / "o", progress=False)
    assert report["passed"], report
    traj = read_trajectory(tmp_path / "o" / "trajectory.csv")
    np.testing.assert_allclose(traj["u.q2.tau"][traj.time == 0.25], 1.0, rtol=1e-12)
    assert abs(traj["q.q1"][-1] - 0.5) < 0.1
    assert not (tmp_path / "o" / "conservation.png").exists()


def test_scenario_rejects_conflicting_or_bad_controller(tmp_path):
    scn = write(
        tmp_path / "s.yaml",
        f"""version: 1
model: {SCARA}
duration: 1.0
dt: 0.01
inputs: {{q1.tau: 1.0}}
controller: {{type: pid, joints: {{q1: {{kp: -1, setpoint: 0.0, derivative: sideways}}}}}}
outputs: {{records: false}}
checks: {{energy_constant: 1.0e-9}}
""",
    )
    with pytest.raises(ScenarioError) as e:
        load_scenario(scn)
    msg = str(e.value)
    for fragment in (
        "inputs.q1.tau: input q1.tau is driven by the controller too",
        "kp must be >= 0",
        "derivative must be 'measurement' or 'error'",
        "outputs.records: the checks recompute",
    ):
        assert fragment in msg, msg


@pytest.mark.integration
def test_mcap_recording_reads_back_with_rosbags(tmp_path):
    """--record writes ROS 2 messages that an independent reader (rosbags) decodes: names, stamps
    and values equal the trajectory's."""
    rosbags = pytest.importorskip("rosbags.highlevel")
    from rosbags.typesys import Stores, get_typestore

    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mbsfmu",
            "run",
            "scenarios/scara_free.yaml",
            "--out",
            str(tmp_path),
            "--duration",
            "0.2",
            "--no-progress",
            "--record",
            str(tmp_path / "run.mcap"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    traj = read_trajectory(tmp_path / "trajectory.csv")
    seen = {}
    with rosbags.AnyReader([tmp_path / "run.mcap"], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        for conn, ts, raw in reader.messages():
            seen.setdefault(conn.topic, []).append((ts, reader.deserialize(raw, conn.msgtype)))
    assert set(seen) == {
        "/clock",
        "/joint_states",
        "/mbs/centroidal_momentum",
        "/mbs/com",
        "/mbs/com_velocity",
        "/mbs/energy",
        "/tf",
        "/tf_static",
        "/robot_description",
    }
    from mbsfmu.io.urdf_export import export_urdf

    assert [m.data for _, m in seen["/robot_description"]] == [
        export_urdf(mbsfmu.load_model(MODELS / "scara.yaml")).text
    ]
    js = seen["/joint_states"]
    assert len(js) == len(traj.time)
    k = 7
    ts, msg = js[k]
    assert list(msg.name) == ["q1", "q2"] and ts == round(traj.time[k] * 1e9)
    assert msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec == ts
    np.testing.assert_array_equal(msg.position, [traj["q.q1"][k], traj["q.q2"][k]])
    np.testing.assert_array_equal(msg.effort, [traj["u.q1.tau"][k], traj["u.q2.tau"][k]])
    _, energy = seen["/mbs/energy"][k]
    assert energy.data[0] == traj["engine.KE"][k] and energy.layout.dim[0].label == "KE,PE,E,W_in,W_diss"
    _, mom = seen["/mbs/centroidal_momentum"][k]
    assert mom.wrench.torque.z == traj["engine.H_sys[3]"][k]


@pytest.mark.parametrize("estimate", [pytest.param(True, marks=pytest.mark.slow), False])
def test_list_shows_bundled_scenarios(run_cli, estimate, monkeypatch):
    """`mbsfmu list` from the repository root; with its wall-time estimates (each scenario's first
    output intervals run for ~0.3 s: 10 s in all on a loaded machine, slow tier) and without."""
    monkeypatch.chdir(ROOT)
    res = run_cli("list", *([] if estimate else ["--no-estimate"]))
    assert res.returncode == 0
    assert "spacecraft_free.yaml" in res.stdout and "momentum and energy conserved" in res.stdout
    listed = [line for line in res.stdout.splitlines() if line.startswith("scenarios/")]
    assert len(listed) >= len(list((ROOT / "scenarios").glob("*.yaml")))
    assert all(("est. wall" in line) == estimate for line in listed), res.stdout


@pytest.mark.integration
def test_sweep_runs_a_grid_in_parallel_and_summarises(tmp_path):
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mbsfmu",
            "sweep",
            "scenarios/scara_free.yaml",
            "--param",
            "body.link1.mass=1.5:2.5:2",
            "--param",
            "gravity[2]=-9.81,-1.62",
            "--out",
            str(tmp_path),
            "--duration",
            "0.2",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    assert "4 runs, 0 failed" in res.stdout
    lines = (tmp_path / "summary.csv").read_text().splitlines()
    assert len(lines) == 5 and lines[0].startswith("run,body.link1.mass,gravity[2],passed")
    assert (tmp_path / "run_0003" / "trajectory.csv").exists()
    # the swept values reached the runs: the summary rows hold the grid (itertools order), and each
    # run's trajectory equals, bit for bit, a plain run with its values written into the model file
    # (and the four differ, as they must when the mass and gravity change)
    grid = [(m, g) for m in (1.5, 2.5) for g in (-9.81, -1.62)]
    rows = [line.split(",") for line in lines[1:]]
    assert [(int(r[0]), float(r[1]), float(r[2])) for r in rows] == [(k, *p) for k, p in enumerate(grid)]
    model_text, scenario_text = SCARA.read_text(), (ROOT / "scenarios" / "scara_free.yaml").read_text()
    assert model_text.count("gravity: [0, -9.81, 0]") == 1 and model_text.count("    mass: 2.0\n") == 1  # link1's
    runs = []
    for k, (mass, g_y) in enumerate(grid):
        edited = model_text.replace("gravity: [0, -9.81, 0]", f"gravity: [0, {g_y!r}, 0]")
        model = write(tmp_path / f"plain_{k}.model.yaml", edited.replace("    mass: 2.0\n", f"    mass: {mass!r}\n"))
        scn = write(
            tmp_path / f"plain_{k}.yaml",
            scenario_text.replace("model: models/scara.yaml", f"model: {model}") + "outputs: {plots: false}\n",
        )
        run_scenario(load_scenario(scn), tmp_path / f"plain_{k}", duration=0.2, progress=False)
        plain = read_trajectory(tmp_path / f"plain_{k}" / "trajectory.csv")
        swept = read_trajectory(tmp_path / f"run_{k:04d}" / "trajectory.csv")
        assert plain.names == swept.names and all(np.array_equal(plain[c], swept[c]) for c in plain.names), k
        runs.append(swept)
    assert all(not np.array_equal(a["q.q1"], b["q.q1"]) for i, a in enumerate(runs) for b in runs[i + 1 :])
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "mbsfmu",
            "sweep",
            "scenarios/scara_free.yaml",
            "--param",
            "body.link9.mass=1:2:2",
            "--out",
            str(tmp_path / "b"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "no body 'link9'" in bad.stderr


# ---- trajectory.csv keeps joint/system columns; records.csv the body records ----
def test_body_records_go_to_records_csv_only_when_checks_need_them(tmp_path):
    """trajectory.csv holds time, q, qd, u and engine.* (no '<body>.m' record columns);
    records.csv (time, records, engine.*) is written when the scenario has checks and is what
    `mbsfmu check` reads; a scenario without checks writes no records.csv unless asked."""
    from mbsfmu.checker.command import main as check_main
    from mbsfmu.sim.rows import records_row, trajectory_row

    model = ROOT / "scenarios" / "models" / "scara.yaml"
    base = f"version: 1\nmodel: {model}\nduration: 0.05\ndt: 0.01\noutputs: {{plots: false}}\n"
    checked = write(tmp_path / "checked.yaml", base + "checks: {energy_balance: rel:1.0e-8}\n")
    plain = write(tmp_path / "plain.yaml", base)
    asked = write(tmp_path / "asked.yaml", base.replace("plots: false", "plots: false, records: true"))
    report = run_scenario(load_scenario(checked), tmp_path / "c", progress=False)
    assert report["passed"] and report["checks"], report
    traj = read_trajectory(tmp_path / "c" / "trajectory.csv")
    rec = read_trajectory(tmp_path / "c" / "records.csv")
    assert not [c for c in traj if c.endswith(".m")] and "q.q1" in traj and "engine.E" in traj
    assert "link1.m" in rec and "engine.W_in" in rec and "q.q1" not in rec
    np.testing.assert_array_equal(traj.time, rec.time)
    assert check_main([str(tmp_path / "c" / "records.csv"), "--expect", "energy_balance=rel:1e-8"]) == 0
    assert check_main([str(tmp_path / "c" / "trajectory.csv")]) == 0  # records.csv beside it is joined
    run_scenario(load_scenario(plain), tmp_path / "c", progress=False)  # same folder: stale records go
    assert not (tmp_path / "c" / "records.csv").exists()
    run_scenario(load_scenario(asked), tmp_path / "a", progress=False)
    assert (tmp_path / "a" / "records.csv").exists()
    # one builder: the rows the runner writes are rows.trajectory_row / rows.records_row
    sim = build_simulator(load_scenario(checked))
    assert list(trajectory_row(sim)) == list(traj.names) and list(records_row(sim)) == list(rec.names)


def recorded_frames(path: Path) -> tuple[dict, dict, dict]:
    """(messages by topic, the edges child frame -> (parent frame, R (3, 3), p (3,)) of the
    /tf_static and the last /tf, stamps by topic [ns]) of an MCAP recording, read with rosbags."""
    rosbags = pytest.importorskip("rosbags.highlevel")
    from rosbags.typesys import Stores, get_typestore

    from mbsfmu.engine.spatial import quat_to_R

    seen: dict[str, list] = {}
    stamps: dict[str, list] = {}
    with rosbags.AnyReader([path], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        for conn, ts, raw in reader.messages():
            seen.setdefault(conn.topic, []).append(reader.deserialize(raw, conn.msgtype))
            stamps.setdefault(conn.topic, []).append(ts)
    edges = {}
    for msg in (*seen["/tf_static"], seen["/tf"][-1]):
        for t in msg.transforms:
            assert t.child_frame_id not in edges, f"{t.child_frame_id} has two parents"
            r, x = t.transform.rotation, t.transform.translation
            edges[t.child_frame_id] = (t.header.frame_id, quat_to_R([r.w, r.x, r.y, r.z]), np.array([x.x, x.y, x.z]))
    return seen, edges, stamps


def world_pose(edges: dict, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """(R, p) of frame in "world", chaining the TF edges child -> parent: R_w,c = R_w,p R_p,c,
    p_w,c = R_w,p p_p,c + p_w,p (tf2's composition of TransformStamped)."""
    R, p = np.eye(3), np.zeros(3)
    while frame != "world":
        parent, Rc, pc = edges[frame]
        R, p = Rc @ R, Rc @ p + pc
        frame = parent
    return R, p


@pytest.mark.integration
@pytest.mark.parametrize(
    "model_file, urdf_file",
    [
        ("urdf_quadruped_overlay.yaml", "urdf_quadruped.urdf"),  # floating, fixed links lumped
        ("urdf_quadruped.urdf", "urdf_quadruped.urdf"),  # fixed base, the URDF itself
        ("urdf_arm7.urdf", "urdf_arm7.urdf"),  # a lumped hand frame rotated on its body
        ("branched_robot.yaml", None),  # a model file: frames, a spherical joint
        ("spacecraft.yaml", None),  # a model file: free joint, reaction wheels, frames
    ],
)
def test_a_recording_rebuilds_every_frame_of_the_model(tmp_path, model_file, urdf_file):
    """A recording carries the model's URDF as /robot_description (the file itself for a URDF
    model or overlay, the export otherwise), /tf_static (named frames on their bodies, e.g. the
    URDF links lumped into a body) and /tf (bodies on their parents); chained from the world,
    they give every frame of model.frames at model.frame_pose of the recorded state (rebuilt from
    /joint_states), to 1e-12 m and rad: the viewer's 3D robot is the simulated one."""
    from mbsfmu.io.urdf_export import export_urdf
    from mbsfmu.sim import messages as ms

    path = MODELS / model_file
    (tmp_path / "s.yaml").write_text(
        f"version: 1\nname: s\nmodel: {path}\nduration: 0.05\ndt: 0.01\nintegrator: {{method: rk4}}\n"
    )
    res = subprocess.run(
        [sys.executable, "-m", "mbsfmu", "run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"),
         "--no-progress", "--record", str(tmp_path / "run.mcap")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    model = mbsfmu.load_model(path)
    seen, edges, stamps = recorded_frames(tmp_path / "run.mcap")
    urdf = export_urdf(model).text if urdf_file is None else (MODELS / urdf_file).read_text()
    assert [m.data for m in seen["/robot_description"]] == [urdf]
    assert stamps["/robot_description"] == stamps["/tf_static"] == stamps["/clock"][:1]
    (static,) = seen["/tf_static"]
    own = {name for name, (i, _) in model.frames.items() if name == model.body_names[i - 1]}
    assert sorted(t.child_frame_id for t in static.transforms) == sorted(set(model.frames) - own)
    last = {topic: msgs[-1] for topic, msgs in seen.items()}
    assert stamps["/tf"][-1] == stamps["/joint_states"][-1]
    js = last["/joint_states"]
    q, _ = ms.state_from_joint_state(
        ms.joint_layout(model), js.name, js.position, js.velocity, last.get("/mbs/multi_dof_joint_states")
    )
    traj = read_trajectory(tmp_path / "out" / "trajectory.csv")
    assert math.isclose(traj.time[-1], 0.05, rel_tol=0, abs_tol=1e-12) and len(seen["/joint_states"]) == len(traj.time)
    assert model.frames and model.frames.keys() <= edges.keys()
    for name in model.frames:
        R, p = world_pose(edges, name)
        R_ref, p_ref = model.frame_pose(q, name)
        np.testing.assert_allclose(R, R_ref, rtol=0, atol=1e-12, err_msg=name)
        np.testing.assert_allclose(p, p_ref, rtol=0, atol=1e-12, err_msg=name)
