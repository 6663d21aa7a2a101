"""Scenario files: a model, initial state, input schedules, duration, integrator and the checks
the run must pass; and the runner that writes trajectory.csv and report.json.

The schema (version 1) is documented in docs/reference/scenario-file.md. Paths are relative to the
scenario file.
"""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np
import time as wallclock
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mbsfmu.errors import MbsError, ModelError, brief
from mbsfmu.io.model_file import parse_file
from mbsfmu.io.reader import Reader
from mbsfmu.engine.model import Model
from mbsfmu.sim.pid import JointPID
from mbsfmu.sim.rows import records_row, trajectory_row
from mbsfmu.sim.schedules import Schedule, parse_schedule
from mbsfmu.sim.simulator import INTEGRATORS, SimulationError, Simulator

if TYPE_CHECKING:
    from mbsfmu.cosim.master import CosimSpec

SCENARIO_VERSION = 1
TOP_KEYS = ("version", "name", "description", "model", "gravity", "duration", "quick_duration", "dt", "integrator",
            "initial", "inputs", "controller", "checks", "references", "final", "outputs", "loops", "cosim",
            "campaign")   # campaign: dispersions and outputs of `mbsfmu montecarlo` (mbsfmu/campaign)
REFERENCE_KEYS = ("column", "expr", "params", "tol", "t0", "t1")
PID_KEYS = ("kp", "ki", "kd", "limit", "setpoint", "derivative")
OUTPUT_KEYS = ("records", "plots")
INTEGRATOR_KEYS = ("method", "h_max", "rtol", "atol")
LOOP_KEYS = ("method", "stabilisation", "baumgarte", "assemble")
MAX_ROWS = 10**8            # output rows (duration / dt): a CSV of more rows is beyond any use
MAX_INTERNAL_STEPS = 10**12  # integrator steps (duration / h_max): beyond any run's wall time
ETA_AFTER_PCT = 5           # the progress bar extrapolates the time left from 5 % of the run on


class ScenarioError(ModelError):
    """A scenario file that cannot be run; lists every problem with its line."""
    noun = "scenario"


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario; times in s."""
    path: Path
    name: str
    description: str
    model_path: Path
    model_inline: tuple | None        # (document, line map) of a model written in the scenario
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
    controller: dict = field(default_factory=dict)          # joint -> PIDGains
    references: tuple = ()                                   # (column, compiled expr, params, tol, t0, t1, text)
    final: dict = field(default_factory=dict)               # column -> (value, tol)
    records: bool = True                                    # write records.csv (default: when there are checks)
    plots: bool = True
    edits: tuple = ()                                        # (parameter path, value): model edits (sweeps)
    loops: dict = field(default_factory=dict)               # Simulator loop options (docs/guides/closed-loops.md)
    cosim: CosimSpec | None = None                           # FMUs and connections for `mbsfmu cosim` (cosim.py)


def output_grid(T: float, dt: float) -> tuple[int, bool]:
    """(n, even): a run of T [s] sampled every dt [s] has rows at t_k = k dt for k < n and t_n = T;
    ``even`` if dt divides T (to 1e-9 relative), else the last interval is shortened to
    T - (n - 1) dt. MbsError for a T or dt that is not a positive finite time or more than
    MAX_ROWS rows."""
    if not (isinstance(T, (int, float)) and math.isfinite(T) and T > 0):
        raise MbsError(f"duration must be a positive, finite time [s], got {T!r}")
    if not (isinstance(dt, (int, float)) and math.isfinite(dt) and dt > 0):
        raise MbsError(f"dt must be a positive, finite time [s], got {dt!r}")
    ratio = T / dt
    if not ratio <= MAX_ROWS:
        raise MbsError(f"duration {T:g} s / dt {dt:g} s = {ratio:.3g} output rows; at most {MAX_ROWS:.0e} "
                       f"(raise dt or shorten the run)")
    n = round(ratio)
    if n >= 1 and abs(ratio - n) <= 1e-9 * ratio:
        return n, True
    return math.ceil(ratio), False


def sample_times(T: float, dt: float) -> list[float]:
    """The output times t_0 = 0, dt, 2 dt, ..., T of a run (``output_grid``)."""
    n, _even = output_grid(T, dt)
    return [k * dt for k in range(n)] + [float(T)]


def check_run_length(T: float, dt: float, integrator: dict, controller: bool = False,
                     cosim: bool = False) -> None:
    """MbsError if a run of T [s] cannot be made as asked: bad or too many rows (``output_grid``),
    more than MAX_INTERNAL_STEPS integrator steps of h_max, or a sampled controller or
    co-simulation (fixed grid k dt) whose dt does not divide T."""
    _n, even = output_grid(T, dt)
    h_max = integrator.get("h_max", 0.0)
    if h_max > 0 and not T / h_max <= MAX_INTERNAL_STEPS:
        raise MbsError(f"duration {T:g} s / integrator.h_max {h_max:g} s = {T / h_max:.3g} integrator steps; "
                       f"at most {MAX_INTERNAL_STEPS:.0e} (raise h_max or shorten the run)")
    if not even and (controller or cosim):
        what = "the sampled controller" if controller else "the co-simulation"
        raise MbsError(f"dt = {dt:g} s does not divide the duration {T:g} s: {what} runs on the fixed grid "
                       f"t_k = k dt; choose a duration that is a multiple of dt")


def load_scenario(path: str | Path) -> Scenario:
    """Parse and check a scenario file; ScenarioError lists every problem with file and line."""
    path = Path(path)
    try:
        data, lines = parse_file(path)
    except ModelError as e:
        raise ScenarioError(e.problems, str(path)) from None
    r = Reader(lines)
    doc = r.mapping(data, (), TOP_KEYS, required=("version", "model", "duration", "dt"))
    if "version" in doc and doc["version"] != SCENARIO_VERSION:
        r.problem(("version",), f"unsupported scenario version {brief(doc['version'])}; this mbsfmu reads {SCENARIO_VERSION}")
    inline = None
    if isinstance(doc.get("model"), dict):
        model_path = path
        inline = (doc["model"], {p[1:]: line for p, line in lines.items() if p[:1] == ("model",)})
    else:
        model_path = path.parent / (r.string(doc["model"], ("model",)) if "model" in doc else "?")
        if "model" in doc and isinstance(doc["model"], str) and not model_path.is_file():
            r.problem(("model",), f"model file {str(model_path)!r} " + ("is not a regular file" if model_path.exists()
                                                                       else "does not exist"))
    gravity = r.vector(doc["gravity"], ("gravity",), 3) if "gravity" in doc else None
    times = {}
    for key in ("duration", "dt", "quick_duration"):
        if key in doc:
            times[key] = r.number(doc[key], (key,))
            if not times[key] > 0:
                r.problem((key,), f"{key} must be a positive time [s], got {times[key]}")
    integ = {"method": "rk4", "rtol": 1e-10, "atol": 1e-12}
    if "integrator" in doc:
        raw = r.mapping(doc["integrator"], ("integrator",), INTEGRATOR_KEYS)
        for key in INTEGRATOR_KEYS:
            if key in raw:
                integ[key] = raw[key] if key == "method" else r.number(raw[key], ("integrator", key))
    if not isinstance(integ["method"], str) or integ["method"] not in INTEGRATORS:
        r.problem(("integrator", "method"), f"unknown integrator {brief(integ['method'])}; expected {', '.join(INTEGRATORS)}")
        integ["method"] = "rk4"
    integ.setdefault("h_max", 1e-3 if integ["method"] == "rk4" else 0.0)   # dop853: unlimited
    for key in ("rtol", "atol"):
        if not integ[key] > 0:
            r.problem(("integrator", key), f"{key} must be a positive number, got {integ[key]:g}")
    if integ["method"] == "rk4" and not integ["h_max"] > 0:
        r.problem(("integrator", "h_max"), f"h_max must be a positive step [s] for rk4, got {integ['h_max']:g}")
    elif not integ["h_max"] >= 0:
        r.problem(("integrator", "h_max"), f"h_max must be >= 0 [s] (0: no limit for dop853), got {integ['h_max']:g}")
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
                s = parse_schedule(r, sched, ("inputs", name), path.parent)
                if s is not None:
                    inputs[str(name)] = s
    checks, procedure = {}, 1
    if "checks" in doc:
        raw = doc["checks"]
        if not isinstance(raw, dict):
            r.problem(("checks",), "expected a mapping of check name to bound")
        else:
            from mbsfmu.checker.checks import CHECKS, CheckError, parse_bound
            for name, bound in raw.items():
                if name == "procedure":
                    if bound not in (1, 2, 3, 4):
                        r.problem(("checks", name), f"procedure must be 1, 2, 3 or 4, got {brief(bound)}")
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
    duration = times.get("duration", math.nan)
    for key in ("duration", "quick_duration"):
        if key in times and times[key] > 0 and times.get("dt", 0) > 0:
            try:
                check_run_length(times[key], times["dt"], integ, controller="controller" in doc,
                                 cosim="cosim" in doc)
            except MbsError as e:
                r.problem(("integrator", "h_max") if "h_max" in str(e) else ("dt",), f"{key}: {e}")
    controller = _controller(r, doc["controller"], path.parent) if "controller" in doc else {}
    for joint in controller:
        if f"{joint}.tau" in inputs:
            r.problem(("inputs", f"{joint}.tau"), f"input {joint}.tau is driven by the controller too")
    references = _references(r, doc["references"]) if "references" in doc else ()
    final = {}
    if "final" in doc:
        raw = doc["final"] if isinstance(doc["final"], dict) else r.problem(("final",), "expected a mapping "
                                                                             "of column to {value, tol}") or {}
        for col, spec in raw.items():
            m = r.mapping(spec, ("final", col), ("value", "tol"), required=("value", "tol"))
            if "value" in m and "tol" in m:
                final[str(col)] = (r.number(m["value"], ("final", col, "value")), r.number(m["tol"], ("final", col, "tol")))
    outputs = r.mapping(doc.get("outputs", {}), ("outputs",), OUTPUT_KEYS)
    for key in OUTPUT_KEYS:
        if key in outputs and not isinstance(outputs[key], bool):
            r.problem(("outputs", key), f"expected true or false, got {brief(outputs[key])}")
    if outputs.get("records") is False and checks:
        r.problem(("outputs", "records"), "the checks recompute momentum and energy from the body records: "
                  "keep records on, or drop the checks")
    loops = _loop_options(r, doc["loops"]) if "loops" in doc else {}
    cosim = None
    if "cosim" in doc:
        from mbsfmu.cosim.master import parse_cosim
        cosim = parse_cosim(r, doc["cosim"], path.parent, has_controller="controller" in doc)
    name = r.string(doc["name"], ("name",)) if "name" in doc else path.stem
    description = doc.get("description", "")
    if not isinstance(description, str):
        r.problem(("description",), f"expected text, got {brief(description)}")
    if inline is not None or model_path.is_file():
        _check_names(r, path, inline, model_path, init_q, init_qd, inputs, controller)
    if r.problems:
        raise ScenarioError(r.problems, str(path))
    return Scenario(path=path, name=name,
                    description=description, model_path=model_path, gravity=gravity, duration=duration,
                    quick_duration=min(times.get("quick_duration", duration), duration), dt=times["dt"],
                    integrator=integ, initial_q=init_q, initial_qd=init_qd, inputs=inputs, procedure=procedure,
                    checks=checks, model_inline=inline, controller=controller, references=references, final=final,
                    records=outputs.get("records", bool(checks)) is not False, plots=outputs.get("plots", True) is not False,
                    loops=loops, cosim=cosim)


def _model(path: Path, inline: tuple | None, model_path: Path) -> Model:
    """The scenario's model (inline, or the file ``model_path``), without gravity or edits."""
    if inline is not None:
        from mbsfmu.io.model_file import spec_from_dict
        doc, lines = inline
        try:
            return Model(spec_from_dict(doc, lines, str(path)), source=str(path), lines=lines)
        except ModelError as e:   # the inline model's paths start at the scenario's ``model`` key
            raise ScenarioError([replace(p, path=("model", *p.path)) for p in e.problems], str(path)) from None
    from mbsfmu import load_model
    return load_model(model_path)


def _close(name: str, names) -> str:
    """" (did you mean 'x'?); known: a, b, c" (at most 20 names listed)."""
    import difflib
    names = list(names)
    close = difflib.get_close_matches(name, names, n=1)
    known = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    return (f" (did you mean {close[0]!r}?)" if close else "") + f"; known: {known or 'none'}"


def _check_names(r, path: Path, inline, model_path: Path, init_q: dict, init_qd: dict, inputs: dict,
                 controller: dict) -> None:
    """Joint and input names of ``initial``, ``inputs`` and ``controller`` against the model, each
    problem with its line (so that one round lists every problem of the scenario)."""
    from mbsfmu.engine.forces import ForceElements
    try:
        model = _model(path, inline, model_path)
    except ScenarioError as e:
        r.problems += e.problems
        return
    except ModelError as e:
        for p in e.problems:
            r.problem(("model",), f"model file {e.source}{':' + str(p.line) if p.line else ''}: {p.where()}: "
                                  f"{p.message}")
        return
    input_names = ForceElements(model).layout.names
    for key, vals, slicer in (("q", init_q, model.q_slice), ("qd", init_qd, model.v_slice)):
        for jname, v in vals.items():
            if jname not in model.joint_index:
                r.problem(("initial", key, jname), f"unknown joint {jname!r}{_close(jname, model.joint_names)}")
                continue
            sl = slicer(jname)
            if len(v) != sl.stop - sl.start:
                r.problem(("initial", key, jname), f"joint {jname!r} takes {sl.stop - sl.start} value(s), "
                                                   f"got {len(v)}")
    for name in inputs:
        if name not in input_names:
            r.problem(("inputs", name), f"unknown input {name!r}{_close(name, input_names)}")
    actuated = [n for n in input_names if n.endswith(".tau")]
    for joint in controller:
        if f"{joint}.tau" not in input_names:
            r.problem(("controller", "joints", joint), f"{joint!r} is not an actuated 1-DoF joint"
                      + _close(joint, [n[:-len(".tau")] for n in actuated]))


def _loop_options(r, raw) -> dict:
    """``loops: {method, stabilisation, baumgarte: [alpha, beta], assemble}``: the Simulator's
    closed-loop options (mbsfmu/sim/simulator.py)."""
    from mbsfmu.sim.simulator import LOOP_METHODS, LOOP_STABILISATION
    m = r.mapping(raw, ("loops",), LOOP_KEYS)
    out = {}
    for key, arg, allowed in (("method", "loop_method", LOOP_METHODS), ("stabilisation", "loop_stabilisation",
                                                                          LOOP_STABILISATION)):
        if key in m:
            if m[key] not in allowed:
                r.problem(("loops", key), f"unknown loop {key} {brief(m[key])}; expected one of {', '.join(allowed)}")
            else:
                out[arg] = m[key]
    if "baumgarte" in m:
        ab = r.vector(m["baumgarte"], ("loops", "baumgarte"), 2)
        if min(ab) < 0:
            r.problem(("loops", "baumgarte"), f"baumgarte [alpha, beta] must be >= 0 [1/s], got {list(ab)}")
        out["baumgarte"] = ab
    if "assemble" in m:
        if not isinstance(m["assemble"], bool):
            r.problem(("loops", "assemble"), f"expected true or false, got {brief(m['assemble'])}")
        else:
            out["assemble"] = m["assemble"]
    return out


def _controller(r, raw, base: Path) -> dict:
    """``controller: {type: pid, joints: {joint: {kp, ki, kd, limit, setpoint}}}``."""
    from mbsfmu.sim.pid import PIDGains
    m = r.mapping(raw, ("controller",), ("type", "joints"), required=("type", "joints"))
    if m.get("type", "pid") != "pid":
        r.problem(("controller", "type"), f"unknown controller type {brief(m.get('type'))}; expected 'pid'")
    joints = m.get("joints", {})
    if not isinstance(joints, dict) or not joints:
        r.problem(("controller", "joints"), "expected a mapping of joint name to {kp, ki, kd, limit, setpoint}")
        return {}
    out = {}
    for joint, g in joints.items():
        at = ("controller", "joints", joint)
        g = r.mapping(g, at, PID_KEYS, required=("kp", "setpoint"))
        vals = {k: r.number(g[k], at + (k,)) if k in g else d for k, d in (("kp", 0.0), ("ki", 0.0), ("kd", 0.0),
                                                                             ("limit", math.inf))}
        for k, v in vals.items():
            if not v >= 0:
                r.problem(at + (k,), f"{k} must be >= 0, got {v}")
        sp = parse_schedule(r, g["setpoint"], at + ("setpoint",), base) if "setpoint" in g else None
        derivative = g.get("derivative", "measurement")
        if derivative not in ("measurement", "error"):
            r.problem(at + ("derivative",), f"derivative must be 'measurement' or 'error', got {brief(derivative)}")
        if sp is not None:
            out[str(joint)] = PIDGains(setpoint=sp, derivative=derivative, **vals)
    return out


def _references(r, raw) -> tuple:
    """``references: [{column, expr, params, tol, t0, t1}]``: analytic curves a column must follow."""
    from .expressions import ExpressionError, compile_expression
    if not isinstance(raw, list):
        r.problem(("references",), "expected a list of {column, expr, params, tol, t0, t1}")
        return ()
    out = []
    for k, ref in enumerate(raw):
        at = ("references", k)
        ref = r.mapping(ref, at, REFERENCE_KEYS, required=("column", "expr", "tol"))
        params = ref.get("params", {})
        if not isinstance(params, dict):
            r.problem(at + ("params",), "expected a mapping of parameter name to number")
            params = {}
        params = {str(n): r.number(v, at + ("params", n)) for n, v in params.items()}
        if not isinstance(ref.get("expr", "0"), str):
            r.problem(at + ("expr",), f"expected an expression (text), got {brief(ref['expr'])}")
            continue
        try:
            tree = compile_expression(ref.get("expr", "0"), set(params))
        except ExpressionError as e:
            r.problem(at + ("expr",), str(e))
            continue
        if "column" in ref and "tol" in ref:
            window = [r.number(ref[key], at + (key,)) if key in ref else default
                      for key, default in (("t0", -math.inf), ("t1", math.inf))]
            out.append((r.string(ref["column"], at + ("column",)), tree, params, r.number(ref["tol"], at + ("tol",)),
                        *window, str(ref["expr"])))
    return tuple(out)


def build_simulator(scn: Scenario) -> Simulator:
    """Load the model, apply the initial-state overrides and check input names."""
    model = _model(scn.path, scn.model_inline, scn.model_path)
    if scn.gravity is not None or scn.edits:
        from mbsfmu.engine.spec.edits import edit_spec
        spec = model.spec if scn.gravity is None else replace(model.spec, gravity=scn.gravity)
        for path, value in scn.edits:
            spec = edit_spec(spec, path, value)
        model = Model(spec, source=model.source)
    sim = Simulator(model, integrator=scn.integrator["method"], h_max=scn.integrator["h_max"],
                    rtol=scn.integrator["rtol"], atol=scn.integrator["atol"], **scn.loops)
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
    for joint in scn.controller:
        if f"{joint}.tau" not in sim.input_names:
            problems.append(f"controller.joints.{joint}: not an actuated 1-DoF joint; actuated inputs: "
                            f"{', '.join(n for n in sim.input_names if n.endswith('.tau')) or 'none'}")
    if problems:
        raise MbsError(f"scenario {scn.path}:\n  " + "\n  ".join(problems))
    sim.set_configuration(q, qd)
    return sim


def run_scenario(scn: Scenario, out_dir: str | Path, duration: float | None = None, progress: bool = True,
                 record: str | Path | None = None) -> dict:
    """Run, writing ``trajectory.csv`` row by row and ``report.json`` at the end (also after a
    failure or Ctrl-C, with what was computed). Rows at t_k = k dt and at the duration T (the last
    interval shortened when dt does not divide T). Returns the report; its "passed" says if every
    check held; "interrupted" is set when Ctrl-C stopped the run."""
    from mbsfmu.sim.rows import RECORDS_FILE, TRAJECTORY_FILE
    from mbsfmu.trajectory import TrajectoryError, TrajectoryWriter
    if scn.cosim is not None:
        external = [(c.src[0], c.dst[1]) for c in scn.cosim.connections
                    if c.dst[0] == "mbs" and c.src[0] != "mbs" and scn.cosim.fmus[c.src[0]].builtin is None]
        if external:
            raise MbsError(f"scenario {scn.path}: FMU {external[0][0]!r} drives mbs.{external[0][1]} (cosim.fmus): "
                           "`mbsfmu run` cannot run it in-process; use `mbsfmu cosim`")
    T = scn.duration if duration is None else duration
    check_run_length(T, scn.dt, scn.integrator, controller=bool(scn.controller))
    times = sample_times(T, scn.dt)
    out = make_out_dir(out_dir)
    sim = build_simulator(scn)
    n_steps = len(times) - 1
    error = interrupted = None
    start = wallclock.perf_counter()
    bar = Progress(n_steps, progress)
    recorder = None
    if record is not None:
        from .mcap import McapRecorder
        try:
            recorder = McapRecorder(record, sim.model)
        except OSError as e:
            raise MbsError(f"--record {record}: cannot write the recording: {e.strerror or e}") from None
    pid = JointPID(scn.controller, scn.dt) if scn.controller else None
    joints = list(scn.controller)
    (out / RECORDS_FILE).unlink(missing_ok=True)   # a previous run's records must not be checked with this run
    records = TrajectoryWriter(out / RECORDS_FILE) if scn.records else None
    with TrajectoryWriter(out / TRAJECTORY_FILE) as writer:
        try:
            for k, t in enumerate(times):
                for name, sched in scn.inputs.items():
                    sim.set_input(name, sched(t))
                if pid is not None:
                    q, qd = sim.q, sim.qd
                    u = pid(t, {j: q[sim.model.q_slice(j)][0] for j in joints}, {j: qd[sim.model.v_slice(j)][0] for j in joints})
                    for j, value in u.items():
                        sim.set_input(f"{j}.tau", value)
                row = trajectory_row(sim)
                writer.write(row)
                if records is not None:
                    records.write(records_row(sim))
                if recorder is not None:
                    recorder.write(sim)
                if k < n_steps:
                    sim.advance_to(times[k + 1])
                bar.update(k, wallclock.perf_counter() - start)
        except (SimulationError, TrajectoryError) as e:
            error = str(e)
        except KeyboardInterrupt:
            last = writer.last_time if writer.n_rows else None
            interrupted = (f"interrupted at t = {sim.t:.9g} s" + ("" if last is None else
                           f" (last row written: t = {last:.9g} s)"))
        finally:
            if recorder is not None:
                recorder.close()
            if records is not None:
                records.close()
    bar.close()
    from .plots import joint_kinds
    extra = {"interrupted": interrupted} if interrupted else None
    return finish_run(scn, out, T, wallclock.perf_counter() - start, error or interrupted,
                      {"n_steps": sim.n_steps, "n_rhs": sim.n_rhs},
                      skip_checks="the run was interrupted (Ctrl-C)" if interrupted else None, extra=extra,
                      kinds=joint_kinds(sim.model))


def make_out_dir(out_dir: str | Path) -> Path:
    """The output folder, created with its parents; MbsError saying why it cannot be."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        why = ("it is an existing file" if out.is_file() else
               "a part of its path is a file, not a folder" if isinstance(e, (FileExistsError, NotADirectoryError))
               else e.strerror or str(e))
        raise MbsError(f"--out {out}: cannot create the output folder: {why}") from None
    if not os.access(out, os.W_OK):
        raise MbsError(f"--out {out}: the output folder is not writable")
    return out


def write_json(path: Path, data: dict) -> None:
    """Write ``data`` as JSON atomically: a temporary file in the same folder, then renamed over
    ``path`` (a reader never sees half a file). OSError (e.g. disk full) leaves ``path`` as it was."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(json.dumps(data, indent=2, default=float))
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def finish_run(scn: Scenario, out: Path, T: float, wall: float, error: str | None, solver: dict,
               skip_checks: str | None = None, extra: dict | None = None, plot_traj=None,
               kinds: dict | None = None) -> dict:
    """Check ``out/trajectory.csv`` (joined with ``out/records.csv`` when the run wrote one) and
    write ``out/report.json`` (and the plots): the scenario's
    conservation checks (or, with ``skip_checks`` = the reason, none: each listed as skipped),
    references and final values; ``extra`` entries join the report. plot_traj: a function giving
    the trajectory to plot (default: the file); kinds: joint kinds for the plots
    (``plots.joint_kinds``). Returns the report; "passed" says if every check that ran held and
    the run completed; "checked" if anything was checked at all; "t_end" [s] is the time of the
    last row written (what was simulated); "write_error" / "plot_error" say why the report or the
    plots could not be written."""
    from mbsfmu.checker.checks import conservation_report
    from mbsfmu.trajectory import TrajectoryError, join_trajectories, read_trajectory
    t_end = None
    try:
        if not (out / "trajectory.csv").is_file():   # a device or FIFO (e.g. a link to /dev/full) is never read
            raise TrajectoryError(f"{out / 'trajectory.csv'} is not a regular file")
        traj = read_trajectory(out / "trajectory.csv")
        t_end = float(traj.time[-1])   # what was simulated: records.csv may lack the last row (Ctrl-C)
        if (out / "records.csv").is_file():
            traj = join_trajectories(traj, read_trajectory(out / "records.csv"))
    except TrajectoryError as e:   # the run stopped before its first row
        traj, error = None, error or str(e)
    steps = int(len(traj.time) - 1) if traj is not None else 0
    series: dict = {}   # per-row values the checks bound, for conservation.png
    report = {"scenario": scn.name, "scenario_file": str(scn.path), "model": str(scn.model_path),
              "duration": T, "t_end": t_end, "dt": scn.dt, "integrator": scn.integrator, "procedure": scn.procedure,
              "steps": steps, "wall_time_s": wall,
              "real_time_factor": (t_end / wall) if wall > 0 and traj is not None else math.inf,
              "solver": solver, "error": error, **(extra or {})}
    if skip_checks is not None or traj is None:
        why = skip_checks or "no trajectory rows"
        report.update({"checks": {}, "passed": True, "skipped_checks": {name: why for name in scn.checks}})
    else:
        try:
            report.update(conservation_report(traj, scn.checks, scn.procedure, series=series)
                          if len(traj.time) > 1 and scn.checks
                          else {"checks": {}, "passed": True})
        except MbsError as e:   # the trajectory stays; the report says why it could not be checked
            report.update({"checks": {}, "passed": False, "check_error": str(e)})
    if traj is None:
        report["references"] = {key: {"passed": False, "error": "no trajectory rows"}
                                for key in (f"{c} ~ {text}" for c, *_, text in scn.references)}
        report["final"] = {c: {"passed": False, "error": "no trajectory rows"} for c in scn.final}
    else:
        report["references"] = _reference_results(scn, traj)
        report["final"] = _final_results(scn, traj, complete=error is None)
    report["passed"] = bool(report["passed"] and error is None
                            and all(e["passed"] for e in (*report["references"].values(), *report["final"].values())))
    report["checked"] = bool(report["checks"] or report["references"] or report["final"])
    try:
        write_json(out / "report.json", report)
    except OSError as e:
        report["write_error"] = f"cannot write {out / 'report.json'}: {e.strerror or e}"
        return report
    if scn.plots and traj is not None and not report.get("interrupted"):
        from .plots import plot_run
        checks = {name: (series.get(name), e) for name, e in report["checks"].items()}
        try:
            report["plots"] = [str(p) for p in plot_run(plot_traj(traj) if plot_traj else traj, out, scn.name,
                                                        kinds, checks)]
        except Exception as e:   # noqa: BLE001 - a plot is never worth the report: say why and go on
            report["plot_error"] = f"{type(e).__name__}: {e}"
        try:
            write_json(out / "report.json", report)
        except OSError as e:
            report["write_error"] = f"cannot write {out / 'report.json'}: {e.strerror or e}"
    return report


def _reference_results(scn: Scenario, traj) -> dict:
    """Max |column - expr(t)| over each reference's time window, against its tolerance."""
    from .expressions import evaluate
    out = {}
    for column, tree, params, tol, t0, t1, text in scn.references:
        key = f"{column} ~ {text}"
        if column not in traj:
            out[key] = {"passed": False, "error": f"no column {column!r} in the trajectory"}
            continue
        sel = (traj.time >= t0) & (traj.time <= t1)
        try:
            err = np.abs(traj[column][sel] - evaluate(tree, traj.time[sel], params))
        except Exception as e:   # noqa: BLE001 - checked at load; never lose the report over one reference
            out[key] = {"passed": False, "error": f"the expression does not evaluate: {type(e).__name__}: {e}"}
            continue
        worst = float(np.max(err)) if err.size else math.nan
        out[key] = {"max_abs": worst, "at_t": float(traj.time[sel][np.argmax(err)]) if err.size else None,
                    "tol": tol, "passed": bool(err.size and worst <= tol)}
    return out


def _final_results(scn: Scenario, traj, complete: bool) -> dict:
    """|column(T) - value| against tol at the last row (fails if the run stopped early)."""
    out = {}
    for column, (value, tol) in scn.final.items():
        if column not in traj:
            out[column] = {"passed": False, "error": f"no column {column!r} in the trajectory"}
            continue
        got = float(traj[column][-1])
        out[column] = {"value": got, "expected": value, "tol": tol, "t": float(traj.time[-1]),
                       "passed": bool(complete and abs(got - value) <= tol)}
    return out


def estimate_wall(scn: Scenario, duration: float | None = None, budget: float = 0.3) -> tuple[float, str]:
    """(estimated wall time [s], how) of ``run_scenario`` over ``duration`` (default: the
    scenario's): the run's own loop (inputs, step, one trajectory row per output time) is timed
    on this machine over its first output intervals for about ``budget`` s of wall time, after one
    untimed interval (imports, compilation, the integrator's first step size), and the wall time
    per simulated second is extrapolated to the duration. The dynamics may get faster or slower
    later (an adaptive step follows them), so this is an estimate, not a promise."""
    T = scn.duration if duration is None else duration
    times = sample_times(T, scn.dt)
    sim = build_simulator(scn)

    def interval(k: int) -> None:
        for name, sched in scn.inputs.items():
            sim.set_input(name, sched(times[k]))
        trajectory_row(sim)
        if scn.records:
            records_row(sim)
        sim.advance_to(times[k + 1])

    n = len(times) - 1
    try:
        interval(0)
        start = k = wallclock.perf_counter()
        k = 1
        while k < n and wallclock.perf_counter() - start < budget:
            interval(k)
            k += 1
    except SimulationError as e:
        raise MbsError(f"the probe run failed: {e}") from None
    wall = wallclock.perf_counter() - start
    if k == n or times[k] <= times[1]:
        return wall, "measured: the probe ran the whole duration"
    per_s = wall / (times[k] - times[1])
    return per_s * T, (f"extrapolated from {times[k]:.3g} s simulated in {wall:.2g} s of wall time on this "
                       f"machine, first interval not counted")


class Progress:
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
        # the time left is extrapolated only once 5 % of the run has shown its pace (before that
        # the first steps, with imports, compilation and the first step size search, dominate)
        left = f"~{elapsed / (k + 1) * (self.total - k):5.1f} s left" if pct >= ETA_AFTER_PCT else "time left: after 5 %"
        bar = "#" * (pct // 4) + "-" * (25 - pct // 4)
        end = "" if sys.stderr.isatty() else "\n"
        if sys.stderr.isatty() or pct % 10 == 0:
            print(f"\r[{bar}] {pct:3d}%  {elapsed:6.1f} s elapsed, {left}", end=end, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.shown and sys.stderr.isatty():
            print(file=sys.stderr)
