"""Scenario files: a model, initial state, input schedules, duration, integrator and the checks
the run must pass; and the runner that writes trajectory.csv and report.json.

The schema (version 1) is documented in README.md ("Scenario files"). Paths are relative to the
scenario file.
"""
from __future__ import annotations

import json
import math
import sys
import time as wallclock
from dataclasses import dataclass, field, replace
from pathlib import Path

from .errors import MbsError, ModelError
from .model.loader import _Reader, parse_file
from .multibody import Model
from .schedules import Schedule, parse_schedule
from .simulator import INTEGRATORS, SimulationError, Simulator

SCENARIO_VERSION = 1
TOP_KEYS = ("version", "name", "description", "model", "gravity", "duration", "quick_duration", "dt", "integrator",
            "initial", "inputs", "checks")
INTEGRATOR_KEYS = ("method", "h_max", "rtol", "atol")


class ScenarioError(ModelError):
    """A scenario file that cannot be run; lists every problem with its line."""


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario; times in s."""
    path: Path
    name: str
    description: str
    model_path: Path
    gravity: tuple | None
    duration: float
    quick_duration: float
    dt: float
    integrator: dict
    initial_q: dict
    initial_qd: dict
    inputs: dict[str, Schedule]
    procedure: int
    checks: dict[str, object] = field(default_factory=dict)


def load_scenario(path: str | Path) -> Scenario:
    """Parse and check a scenario file; ScenarioError lists every problem with file and line."""
    path = Path(path)
    try:
        data, lines = parse_file(path)
    except ModelError as e:
        raise ScenarioError(e.problems, str(path)) from None
    r = _Reader(lines)
    doc = r.mapping(data, (), TOP_KEYS, required=("version", "model", "duration", "dt"))
    if "version" in doc and doc["version"] != SCENARIO_VERSION:
        r.problem(("version",), f"unsupported scenario version {doc['version']!r}; this mbsfmu reads {SCENARIO_VERSION}")
    model_path = path.parent / (r.string(doc["model"], ("model",)) if "model" in doc else "?")
    if "model" in doc and isinstance(doc["model"], str) and not model_path.is_file():
        r.problem(("model",), f"model file {str(model_path)!r} does not exist")
    gravity = r.vector(doc["gravity"], ("gravity",), 3) if "gravity" in doc else None
    times = {}
    for key in ("duration", "dt", "quick_duration"):
        if key in doc:
            times[key] = r.number(doc[key], (key,))
            if not times[key] > 0:
                r.problem((key,), f"{key} must be a positive time [s], got {doc[key]}")
    integ = {"method": "rk4", "rtol": 1e-10, "atol": 1e-12}
    if "integrator" in doc:
        raw = r.mapping(doc["integrator"], ("integrator",), INTEGRATOR_KEYS)
        for key in INTEGRATOR_KEYS:
            if key in raw:
                integ[key] = raw[key] if key == "method" else r.number(raw[key], ("integrator", key))
    if integ["method"] not in INTEGRATORS:
        r.problem(("integrator", "method"), f"unknown integrator {integ['method']!r}; expected {', '.join(INTEGRATORS)}")
    integ.setdefault("h_max", 1e-3 if integ["method"] == "rk4" else 0.0)   # dop853: unlimited
    init_q, init_qd = {}, {}
    if "initial" in doc:
        init = r.mapping(doc["initial"], ("initial",), ("q", "qd"))
        for key, dest in (("q", init_q), ("qd", init_qd)):
            raw = init.get(key, {})
            if not isinstance(raw, dict):
                r.problem(("initial", key), "expected a mapping of joint name to value(s)")
                continue
            for jname, val in raw.items():
                vals = val if isinstance(val, list) else [val]
                dest[str(jname)] = [r.number(v, ("initial", key, jname)) for v in vals]
    inputs = {}
    if "inputs" in doc:
        raw = doc["inputs"]
        if not isinstance(raw, dict):
            r.problem(("inputs",), "expected a mapping of input name to a number or schedule")
        else:
            for name, sched in raw.items():
                s = parse_schedule(r, sched, ("inputs", name))
                if s is not None:
                    inputs[str(name)] = s
    checks, procedure = {}, 1
    if "checks" in doc:
        raw = doc["checks"]
        if not isinstance(raw, dict):
            r.problem(("checks",), "expected a mapping of check name to bound")
        else:
            from .invariants import CHECKS, CheckError, parse_bound
            for name, bound in raw.items():
                if name == "procedure":
                    if bound not in (1, 2, 3, 4):
                        r.problem(("checks", name), f"procedure must be 1, 2, 3 or 4, got {bound!r}")
                    else:
                        procedure = bound
                elif name not in CHECKS:
                    import difflib
                    close = difflib.get_close_matches(str(name), CHECKS, n=1)
                    r.problem(("checks", name), f"unknown check {name!r}"
                              + (f" (did you mean {close[0]!r}?)" if close else f"; known: {', '.join(CHECKS)}"))
                else:
                    try:
                        parse_bound(name, bound)
                        checks[name] = bound
                    except CheckError as e:
                        r.problem(("checks", name), str(e))
    if r.problems:
        raise ScenarioError(r.problems, str(path))
    duration = times["duration"]
    name = r.string(doc["name"], ("name",)) if "name" in doc else path.stem
    if r.problems:
        raise ScenarioError(r.problems, str(path))
    return Scenario(path=path, name=name,
                    description=str(doc.get("description", "")), model_path=model_path, gravity=gravity, duration=duration,
                    quick_duration=min(times.get("quick_duration", duration), duration), dt=times["dt"],
                    integrator=integ, initial_q=init_q, initial_qd=init_qd, inputs=inputs, procedure=procedure,
                    checks=checks)


def build_simulator(scn: Scenario) -> Simulator:
    """Load the model, apply the initial-state overrides and check input names."""
    from . import load_model
    model = load_model(scn.model_path)
    if scn.gravity is not None:
        model = Model(replace(model.spec, gravity=scn.gravity), source=model.source)
    sim = Simulator(model, integrator=scn.integrator["method"], h_max=scn.integrator["h_max"],
                    rtol=scn.integrator["rtol"], atol=scn.integrator["atol"])
    q, qd = model.initial_state()
    problems = []
    for key, vals, vec, slicer in (("q", scn.initial_q, q, model.q_slice), ("qd", scn.initial_qd, qd, model.v_slice)):
        for jname, v in vals.items():
            if jname not in model.joint_index:
                problems.append(f"initial.{key}.{jname}: unknown joint; joints: {', '.join(model.joint_names)}")
                continue
            sl = slicer(jname)
            if len(v) != sl.stop - sl.start:
                problems.append(f"initial.{key}.{jname}: takes {sl.stop - sl.start} value(s), got {len(v)}")
                continue
            vec[sl] = v
    for name in scn.inputs:
        if name not in sim.input_names:
            problems.append(f"inputs.{name}: unknown input; model {model.source} has: {', '.join(sim.input_names) or 'none'}")
    if problems:
        raise MbsError(f"scenario {scn.path}:\n  " + "\n  ".join(problems))
    sim.set_configuration(q, qd)
    return sim


def run_scenario(scn: Scenario, out_dir: str | Path, duration: float | None = None, progress: bool = True) -> dict:
    """Run, writing ``trajectory.csv`` row by row and ``report.json`` at the end (also after a
    failure, with what was computed). Returns the report; its "passed" says if every check held."""
    from .invariants import conservation_report
    from .trajectory import TrajectoryWriter, read_trajectory
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    sim = build_simulator(scn)
    T = scn.duration if duration is None else duration
    n_steps = max(1, round(T / scn.dt))
    error = None
    start = wallclock.perf_counter()
    bar = _Progress(n_steps, progress)
    with TrajectoryWriter(out / "trajectory.csv") as writer:
        try:
            for k in range(n_steps + 1):
                t = k * scn.dt
                for name, sched in scn.inputs.items():
                    sim.set_input(name, sched(t))
                writer.write(_row(sim))
                if k < n_steps:
                    sim.advance_to((k + 1) * scn.dt)
                bar.update(k, wallclock.perf_counter() - start)
        except SimulationError as e:
            error = str(e)
    bar.close()
    wall = wallclock.perf_counter() - start
    traj = read_trajectory(out / "trajectory.csv")
    report = {"scenario": scn.name, "scenario_file": str(scn.path), "model": str(scn.model_path),
              "duration": T, "dt": scn.dt, "integrator": scn.integrator, "procedure": scn.procedure,
              "steps": int(len(traj.time) - 1), "wall_time_s": wall,
              "real_time_factor": (traj.time[-1] / wall) if wall > 0 else math.inf,
              "solver": {"n_steps": sim.n_steps, "n_rhs": sim.n_rhs}, "error": error}
    report.update(conservation_report(traj, scn.checks, scn.procedure) if len(traj.time) > 1 and scn.checks
                  else {"checks": {}, "passed": True})
    if error:
        report["passed"] = False
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float))
    return report


def _row(sim: Simulator) -> dict[str, float]:
    """One trajectory row: time, joint states, inputs, records, engine invariants."""
    row = {"time": sim.t}
    q, qd = sim.q, sim.qd
    names = sim.state_names
    nq = len(q)
    for k, v in enumerate(q):
        row[names[k]] = v
    for k, v in enumerate(qd):
        row[names[nq + k]] = v
    for name, v in zip(sim.input_names, sim.u):
        row[f"u.{name}"] = v
    row.update(sim.records())
    inv = sim.invariants()
    for key in ("p_sys", "P_sys", "H_sys", "R", "Rdot"):
        for c, v in enumerate(getattr(inv, key)):
            row[f"engine.{key}[{c + 1}]"] = v
    W_in, W_diss = sim.work
    row.update({"engine.KE": inv.KE, "engine.PE": inv.PE, "engine.E": inv.E, "engine.W_in": W_in, "engine.W_diss": W_diss})
    return row


class _Progress:
    """A progress bar on stderr, shown once a run has taken longer than a second."""

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.shown, self.last = total, enabled, False, -1

    def update(self, k: int, elapsed: float) -> None:
        if not self.enabled or elapsed < 1.0:
            return
        pct = int(100 * (k + 1) / (self.total + 1))
        if pct == self.last:
            return
        self.last, self.shown = pct, True
        eta = elapsed / (k + 1) * (self.total - k)
        bar = "#" * (pct // 4) + "-" * (25 - pct // 4)
        end = "" if sys.stderr.isatty() else "\n"
        if sys.stderr.isatty() or pct % 10 == 0:
            print(f"\r[{bar}] {pct:3d}%  {elapsed:6.1f} s elapsed, ~{eta:5.1f} s left", end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown and sys.stderr.isatty():
            print(file=sys.stderr)
