"""Scenario files: a model, initial state, input schedules, duration, integrator and the checks
the run must pass. The parsed file is a ``Scenario`` of typed records (``Reference``,
``FinalValue``, ``LoopOptions``, ``InlineModel``); ``load_scenario`` reads it section by section
and lists every problem of the file in one ``ScenarioError``, each with its line and field.

The schema (version 1) is documented in docs/reference/scenario-file.md. Paths are relative to the
scenario file.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.model import Model
from ..errors import InputError, MbsError, ModelError, brief
from ..files import read_text
from ..io.model_file import read_document
from ..io.reader import Reader
from ..sim.schedules import Schedule, parse_schedule
from ..sim.simulator import INTEGRATORS
from .grid import check_run_length

if TYPE_CHECKING:
    from .cosim_section import CosimSpec

SCENARIO_VERSION = 1
TOP_KEYS = (
    "version",
    "name",
    "description",
    "model",
    "gravity",
    "duration",
    "quick_duration",
    "dt",
    "integrator",
    "initial",
    "inputs",
    "controller",
    "checks",
    "references",
    "final",
    "outputs",
    "loops",
    "cosim",
    "campaign",
)  # campaign: dispersions and outputs of `mbsfmu montecarlo` (mbsfmu/campaign)
REFERENCE_KEYS = ("column", "expr", "params", "tol", "t0", "t1")
PID_KEYS = ("kp", "ki", "kd", "limit", "setpoint", "derivative")
OUTPUT_KEYS = ("records", "plots")
INTEGRATOR_KEYS = ("method", "h_max", "rtol", "atol")
LOOP_KEYS = ("method", "stabilisation", "baumgarte", "assemble")


class ScenarioError(ModelError):
    """A scenario file that cannot be run; lists every problem with its line."""

    noun = "scenario"


@dataclass(frozen=True)
class InlineModel:
    """A model written in the scenario's ``model:`` section: the parsed document and its line map
    (paths relative to the ``model`` key -> line in the scenario file)."""

    doc: dict
    lines: dict


@dataclass(frozen=True)
class Reference:
    """One entry of ``references:``: the trajectory column ``column`` must follow the analytic
    curve ``expr``(t; params) within ``tol`` (the column's unit) over t0 <= t <= t1 [s]."""

    column: str
    expr: str  # the expression as written
    tree: object  # the compiled expression (expressions.compile_expression)
    params: dict  # parameter name -> value
    tol: float
    t0: float = -math.inf
    t1: float = math.inf

    @property
    def key(self) -> str:
        """The reference's name in report.json: "column ~ expr"."""
        return f"{self.column} ~ {self.expr}"


@dataclass(frozen=True)
class FinalValue:
    """One entry of ``final:``: the column's value at the last row must be ``value`` within
    ``tol`` (the column's unit)."""

    value: float
    tol: float


@dataclass(frozen=True)
class LoopOptions:
    """The ``loops:`` section: the Simulator's closed-loop options (mbsfmu/sim/simulator.py,
    docs/guides/closed-loops.md); None: the Simulator's default. False when no option is given."""

    method: str | None = None  # Simulator loop_method
    stabilisation: str | None = None  # Simulator loop_stabilisation
    baumgarte: tuple[float, float] | None = None  # (alpha, beta) [1/s]
    assemble: bool | None = None

    def simulator_options(self) -> dict:
        """The given options as Simulator keyword arguments."""
        named = {
            "loop_method": self.method,
            "loop_stabilisation": self.stabilisation,
            "baumgarte": self.baumgarte,
            "assemble": self.assemble,
        }
        return {k: v for k, v in named.items() if v is not None}

    def __bool__(self) -> bool:
        return bool(self.simulator_options())


@dataclass(frozen=True)
class Scenario:
    """A parsed scenario; times in s."""

    path: Path
    name: str
    description: str
    model_path: Path
    model_inline: InlineModel | None  # a model written in the scenario (model_path is then the scenario)
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
    controller: dict = field(default_factory=dict)  # joint -> PIDGains
    references: tuple[Reference, ...] = ()
    final: dict[str, FinalValue] = field(default_factory=dict)  # column -> FinalValue
    records: bool = True  # write records.csv (default: when there are checks)
    plots: bool = True
    edits: tuple = ()  # (parameter path, value): model edits (sweeps)
    loops: LoopOptions = LoopOptions()
    cosim: CosimSpec | None = None  # FMUs and connections for `mbsfmu cosim` (scenario/cosim_section.py)
    # the model as load_scenario built it to check the scenario's names (scenario_model: no gravity
    # or edits applied), so that a run parses and validates it once; None: build it again
    model: Model | None = field(default=None, compare=False, repr=False)
    floating_base: bool = False  # a URDF model's root link on a free joint (`mbsfmu run --floating-base`)


def load_scenario(path: str | Path, floating_base: bool = False) -> Scenario:
    """Parse and check a scenario file; ScenarioError lists every problem with file and line.
    floating_base: the model, a URDF (.urdf or overlay), with its root link on a free joint."""
    path = Path(path)
    if path.suffix.lower() == ".urdf":
        raise ScenarioError.wrong_kind(str(path), model_not_scenario(path, "a URDF robot description"))
    try:
        data, lines, duplicates = read_document(path)
    except ModelError as e:
        raise ScenarioError(e.problems, str(path)) from None
    if isinstance(data, dict) and "model" not in data and ("bodies" in data or "urdf" in data):
        overlay = "urdf" in data
        what = f"a {'URDF overlay' if overlay else 'model file'} (it has {'urdf' if overlay else 'bodies'}:)"
        raise ScenarioError.wrong_kind(str(path), model_not_scenario(path, what))
    r = Reader(lines)
    r.problems += duplicates  # with the file's other problems, in one round
    doc = r.mapping(data, (), TOP_KEYS, required=("version", "model", "duration", "dt"))
    if "version" in doc and doc["version"] != SCENARIO_VERSION:
        r.problem(
            ("version",), f"unsupported scenario version {brief(doc['version'])}; this mbsfmu reads {SCENARIO_VERSION}"
        )
    model_path, inline = _model_section(r, doc, path, lines)
    gravity = r.vector(doc["gravity"], ("gravity",), 3) if "gravity" in doc else None
    times = _times(r, doc)
    integ = _integrator(r, doc.get("integrator", {}))
    init_q, init_qd = _initial(r, doc["initial"]) if "initial" in doc else ({}, {})
    inputs = _inputs(r, doc["inputs"], path.parent) if "inputs" in doc else {}
    checks, procedure = _checks(r, doc["checks"]) if "checks" in doc else ({}, 1)
    _check_run_lengths(r, times, integ, controller="controller" in doc, cosim="cosim" in doc)
    controller = _controller(r, doc["controller"], path.parent) if "controller" in doc else {}
    for joint in controller:
        if f"{joint}.tau" in inputs:
            r.problem(("inputs", f"{joint}.tau"), f"input {joint}.tau is driven by the controller too")
    references = _references(r, doc["references"]) if "references" in doc else ()
    final = _final(r, doc["final"]) if "final" in doc else {}
    records, plots = _outputs(r, doc.get("outputs", {}), checks)
    loops = _loop_options(r, doc["loops"]) if "loops" in doc else LoopOptions()
    cosim = None
    if "cosim" in doc:
        from .cosim_section import parse_cosim

        cosim = parse_cosim(r, doc["cosim"], path.parent, has_controller="controller" in doc)
    name = r.string(doc["name"], ("name",)) if "name" in doc else path.stem
    description = doc.get("description", "")
    if not isinstance(description, str):
        r.problem(("description",), f"expected text, got {brief(description)}")
    model = None
    if inline is not None or model_path.is_file():
        model = _check_names(r, path, inline, model_path, init_q, init_qd, inputs, controller, floating_base)
    if model is not None and ("references" in doc or "final" in doc):
        from .columns import check_columns, run_columns

        trajectory, records_columns = run_columns(model, loops.simulator_options())
        fmus = cosim.fmus if cosim is not None else None
        check_columns(r, doc.get("references"), doc.get("final"), trajectory, records_columns, records, fmus)
    if r.problems:
        raise ScenarioError(r.problems, str(path))
    duration = times.get("duration", math.nan)
    return Scenario(
        path=path,
        name=name,
        description=description,
        model_path=model_path,
        gravity=gravity,
        duration=duration,
        quick_duration=min(times.get("quick_duration", duration), duration),
        dt=times["dt"],
        integrator=integ,
        initial_q=init_q,
        initial_qd=init_qd,
        inputs=inputs,
        procedure=procedure,
        checks=checks,
        model_inline=inline,
        controller=controller,
        references=references,
        final=final,
        records=records,
        plots=plots,
        loops=loops,
        cosim=cosim,
        model=model,
        floating_base=floating_base,
    )


# ---- the sections, in the order load_scenario reads them ----------------------------------------


MAX_NEIGHBOURS = 200  # files looked at for the scenarios that use a model (model_not_scenario)


def model_not_scenario(path: Path, what: str) -> str:
    """What to say when the model file ``path`` (``what``: "a model file (it has bodies:)") is given
    as a scenario: what a scenario is, and the scenarios beside it (its folder and the one above)
    whose ``model:`` names it."""
    users = []
    folders = dict.fromkeys((path.parent, path.parent.parent))
    candidates = [p for d in folders if d.is_dir() for p in sorted(d.iterdir()) if p.suffix in (".yaml", ".yml")]
    for p in candidates[:MAX_NEIGHBOURS]:
        try:
            text = read_text(p) if p.is_file() and p.stat().st_size < 1_000_000 else ""
        except (OSError, UnicodeDecodeError):
            continue
        named = re.search(r"^model:[ \t]*['\"]?([^'\"#\s]+)['\"]?[ \t]*(?:#.*)?$", text, re.M)
        if named and (p.parent / named[1]).resolve() == path.resolve():
            users.append(str(p))
    out = (
        f"this is {what}, not a scenario; a scenario names its model (model: {path.name}, the path relative "
        "to the scenario) with duration and dt (docs/reference/scenario-file.md); "
        f"`mbsfmu info {path}` describes the model"
    )
    if users:
        out += f"; scenarios using it: {', '.join(users)} (`mbsfmu run {users[0]} -o OUT` runs the first)"
    return out


def _model_section(r, doc: dict, path: Path, lines: dict) -> tuple[Path, InlineModel | None]:
    """``model:``, a file name relative to the scenario or a model written inline:
    (model path, inline model or None); the path is the scenario's own for an inline model."""
    if isinstance(doc.get("model"), dict):
        return path, InlineModel(doc["model"], {p[1:]: line for p, line in lines.items() if p[:1] == ("model",)})
    model_path = path.parent / (r.string(doc["model"], ("model",)) if "model" in doc else "?")
    if "model" in doc and isinstance(doc["model"], str) and not model_path.is_file():
        r.problem(
            ("model",),
            f"model file {str(model_path)!r} " + ("is not a regular file" if model_path.exists() else "does not exist"),
        )
    return model_path, None


def _times(r, doc: dict) -> dict[str, float]:
    """``duration``, ``dt``, ``quick_duration`` [s], those given, each a positive time."""
    times = {}
    for key in ("duration", "dt", "quick_duration"):
        if key in doc:
            before = len(r.problems)
            times[key] = r.number(doc[key], (key,))
            if len(r.problems) == before and not times[key] > 0:  # one problem per field: not a number, or not > 0
                r.problem((key,), f"{key} must be a positive time [s], got {times[key]}")
    return times


def _integrator(r, raw) -> dict:
    """``integrator: {method, h_max, rtol, atol}`` with the defaults filled in: rk4, h_max 1e-3 s
    for rk4 (0: no limit for dop853), rtol 1e-10, atol 1e-12."""
    integ = {"method": "rk4", "rtol": 1e-10, "atol": 1e-12}
    raw = r.mapping(raw, ("integrator",), INTEGRATOR_KEYS)
    unread = set()  # keys already reported as not a number: no second message about their value
    for key in INTEGRATOR_KEYS:
        if key in raw:
            before = len(r.problems)
            integ[key] = raw[key] if key == "method" else r.number(raw[key], ("integrator", key))
            if len(r.problems) > before:
                unread.add(key)
    if not isinstance(integ["method"], str) or integ["method"] not in INTEGRATORS:
        r.problem(
            ("integrator", "method"), f"unknown integrator {brief(integ['method'])}; expected {', '.join(INTEGRATORS)}"
        )
        integ["method"] = "rk4"
    integ.setdefault("h_max", 1e-3 if integ["method"] == "rk4" else 0.0)  # dop853: unlimited
    for key in ("rtol", "atol"):
        if key not in unread and not integ[key] > 0:
            r.problem(("integrator", key), f"{key} must be a positive number, got {integ[key]:g}")
    h_max = integ["h_max"]
    if "h_max" not in unread and integ["method"] == "rk4" and not h_max > 0:
        r.problem(("integrator", "h_max"), f"h_max must be a positive step [s] for rk4, got {h_max:g}")
    elif "h_max" not in unread and not h_max >= 0:
        r.problem(("integrator", "h_max"), f"h_max must be >= 0 [s] (0: no limit for dop853), got {h_max:g}")
    return integ


def _initial(r, raw) -> tuple[dict, dict]:
    """``initial: {q: {joint: value(s)}, qd: {joint: value(s)}}``: (q, qd), joint -> list of values."""
    init_q, init_qd = {}, {}
    init = r.mapping(raw, ("initial",), ("q", "qd"))
    for key, dest in (("q", init_q), ("qd", init_qd)):
        values = init.get(key, {})
        if not isinstance(values, dict):
            r.problem(("initial", key), "expected a mapping of joint name to value(s)")
            continue
        for jname, val in values.items():
            vals = val if isinstance(val, list) else [val]
            dest[str(jname)] = [r.number(v, ("initial", key, jname)) for v in vals]
    return init_q, init_qd


def _inputs(r, raw, base: Path) -> dict[str, Schedule]:
    """``inputs: {name: number or schedule}`` (schedule files relative to ``base``)."""
    if not isinstance(raw, dict):
        r.problem(("inputs",), "expected a mapping of input name to a number or schedule")
        return {}
    inputs = {}
    for name, sched in raw.items():
        s = parse_schedule(r, sched, ("inputs", name), base)
        if s is not None:
            inputs[str(name)] = s
    return inputs


def _checks(r, raw) -> tuple[dict, int]:
    """``checks: {check: bound, procedure: 1..4}``: (checks, procedure), the bounds as written
    (mbsfmu/checker/ parses them again when it checks)."""
    checks, procedure = {}, 1
    if not isinstance(raw, dict):
        r.problem(("checks",), "expected a mapping of check name to bound")
        return checks, procedure
    from ..checker.conservation import CHECKS, CheckError, parse_bound

    for name, bound in raw.items():
        if name == "procedure":
            if bound not in (1, 2, 3, 4):
                r.problem(("checks", name), f"procedure must be 1, 2, 3 or 4, got {brief(bound)}")
            else:
                procedure = bound
        elif name not in CHECKS:
            import difflib

            close = difflib.get_close_matches(str(name), CHECKS, n=1)
            r.problem(
                ("checks", name),
                f"unknown check {name!r}"
                + (f" (did you mean {close[0]!r}?)" if close else f"; known: {', '.join(CHECKS)}"),
            )
        else:
            try:
                parse_bound(name, bound)
                checks[name] = bound
            except CheckError as e:
                r.problem(("checks", name), str(e))
    return checks, procedure


def _check_run_lengths(r, times: dict, integ: dict, controller: bool, cosim: bool) -> None:
    """The duration and quick_duration against dt and h_max (grid.check_run_length)."""
    for key in ("duration", "quick_duration"):
        if key in times and times[key] > 0 and times.get("dt", 0) > 0:
            try:
                check_run_length(times[key], times["dt"], integ, controller=controller, cosim=cosim)
            except MbsError as e:
                r.problem(("integrator", "h_max") if "h_max" in str(e) else ("dt",), f"{key}: {e}")


def _controller(r, raw, base: Path) -> dict:
    """``controller: {type: pid, joints: {joint: {kp, ki, kd, limit, setpoint}}}``."""
    from ..sim.pid import PIDGains

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
        vals = {
            k: r.number(g[k], at + (k,)) if k in g else d
            for k, d in (("kp", 0.0), ("ki", 0.0), ("kd", 0.0), ("limit", math.inf))
        }
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


def _references(r, raw) -> tuple[Reference, ...]:
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
        if "column" in ref and "expr" in ref and "tol" in ref:  # else: a missing key, listed by r.mapping
            t0, t1 = (
                r.number(ref[key], at + (key,)) if key in ref else default
                for key, default in (("t0", -math.inf), ("t1", math.inf))
            )
            out.append(
                Reference(
                    column=r.string(ref["column"], at + ("column",)),
                    expr=str(ref["expr"]),
                    tree=tree,
                    params=params,
                    tol=r.number(ref["tol"], at + ("tol",)),
                    t0=t0,
                    t1=t1,
                )
            )
    return tuple(out)


def _final(r, raw) -> dict[str, FinalValue]:
    """``final: {column: {value, tol}}``: values the last row must hold."""
    if not isinstance(raw, dict):
        r.problem(("final",), "expected a mapping of column to {value, tol}")
        return {}
    final = {}
    for col, spec in raw.items():
        m = r.mapping(spec, ("final", col), ("value", "tol"), required=("value", "tol"))
        if "value" in m and "tol" in m:
            final[str(col)] = FinalValue(
                r.number(m["value"], ("final", col, "value")), r.number(m["tol"], ("final", col, "tol"))
            )
    return final


def _outputs(r, raw, checks: dict) -> tuple[bool, bool]:
    """``outputs: {records, plots}``: (write records.csv, write the plots); records default to on
    when there are checks (they recompute momentum and energy from the body records)."""
    outputs = r.mapping(raw, ("outputs",), OUTPUT_KEYS)
    for key in OUTPUT_KEYS:
        if key in outputs and not isinstance(outputs[key], bool):
            r.problem(("outputs", key), f"expected true or false, got {brief(outputs[key])}")
    if outputs.get("records") is False and checks:
        r.problem(
            ("outputs", "records"),
            "the checks recompute momentum and energy from the body records: keep records on, or drop the checks",
        )
    return outputs.get("records", bool(checks)) is not False, outputs.get("plots", True) is not False


def _loop_options(r, raw) -> LoopOptions:
    """``loops: {method, stabilisation, baumgarte: [alpha, beta], assemble}``: the Simulator's
    closed-loop options (mbsfmu/sim/simulator.py)."""
    from ..sim.simulator import LOOP_METHODS, LOOP_STABILISATION

    m = r.mapping(raw, ("loops",), LOOP_KEYS)
    out = {}
    for key, allowed in (("method", LOOP_METHODS), ("stabilisation", LOOP_STABILISATION)):
        if key in m:
            if m[key] not in allowed:
                r.problem(("loops", key), f"unknown loop {key} {brief(m[key])}; expected one of {', '.join(allowed)}")
            else:
                out[key] = m[key]
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
    return LoopOptions(**out)


# ---- the model and the names the scenario uses in it -----------------------------------------------


def scenario_model(path: Path, inline: InlineModel | None, model_path: Path, floating_base: bool = False) -> Model:
    """The scenario's model (``inline``, or the file ``model_path``), without gravity or edits;
    path: the scenario file. ScenarioError (inline) or ModelError (file) for a bad model;
    floating_base: as ``load_model``'s (InputError for a model that is no URDF)."""
    if inline is not None and floating_base:
        raise InputError(
            f"{path}: floating_base (--floating-base) applies to a URDF model; this scenario's model is written "
            "in it, where the root body's joint says it (type: free)"
        )
    if inline is not None:
        from ..engine.spec.repair import advice as repair_advice
        from ..io.model_file import spec_from_dict

        try:
            hint = repair_advice(str(path), section="model")
            spec = spec_from_dict(inline.doc, inline.lines, str(path), repair_hint=hint)
            return Model(spec, source=str(path), lines=inline.lines, repair_hint=hint)
        except ModelError as e:  # the inline model's paths start at the scenario's ``model`` key
            raise ScenarioError([replace(p, path=("model", *p.path)) for p in e.problems], str(path)) from None
    from .. import load_model

    return load_model(model_path, floating_base=floating_base)


def is_urdf(path: Path) -> bool:
    """A .urdf file or a URDF overlay (YAML/JSON with a ``urdf`` key)."""
    if path.suffix.lower() == ".urdf":
        return True
    try:
        data, _lines, _duplicates = read_document(path)
    except (MbsError, OSError):
        return False
    return isinstance(data, dict) and "urdf" in data


def _close(name: str, names) -> str:
    """ " (did you mean 'x'?); known: a, b, c" (at most 20 names listed)."""
    import difflib

    names = list(names)
    close = difflib.get_close_matches(name, names, n=1)
    known = ", ".join(names[:20]) + (f", ... ({len(names)} in all)" if len(names) > 20 else "")
    return (f" (did you mean {close[0]!r}?)" if close else "") + f"; known: {known or 'none'}"


def _check_names(
    r,
    path: Path,
    inline: InlineModel | None,
    model_path: Path,
    init_q: dict,
    init_qd: dict,
    inputs: dict,
    controller: dict,
    floating_base: bool = False,
) -> Model | None:
    """Joint and input names of ``initial``, ``inputs`` and ``controller`` against the model, each
    problem with its line (so that one round lists every problem of the scenario); the model (None
    when it has problems)."""
    from ..engine.forces import ForceElements

    try:
        model = scenario_model(path, inline, model_path, floating_base)
    except ScenarioError as e:
        r.problems += e.problems
        return None
    except InputError as e:
        r.problem(("model",), str(e))
        return None
    except ModelError as e:
        for p in e.problems:
            r.problem(
                ("model",), f"model file {e.source}{':' + str(p.line) if p.line else ''}: {p.where()}: {p.message}"
            )
        return None
    input_names = ForceElements(model).layout.names
    for key, vals, slicer in (("q", init_q, model.q_slice), ("qd", init_qd, model.v_slice)):
        for jname, v in vals.items():
            if jname not in model.joint_index:
                r.problem(("initial", key, jname), f"unknown joint {jname!r}{_close(jname, model.joint_names)}")
                continue
            sl = slicer(jname)
            if len(v) != sl.stop - sl.start:
                fixed_root = sl.stop == sl.start and model.L[model.joint_index[jname]] == 0 and is_urdf(model_path)
                hint = " (the URDF's root link is fixed to the world: mbsfmu run --floating-base floats it)"
                r.problem(
                    ("initial", key, jname),
                    f"joint {jname!r} takes {sl.stop - sl.start} value(s), got {len(v)}" + (hint if fixed_root else ""),
                )
    for name in inputs:
        if name not in input_names:
            r.problem(("inputs", name), f"unknown input {name!r}{_close(name, input_names)}")
    actuated = [n for n in input_names if n.endswith(".tau")]
    for joint in controller:
        if f"{joint}.tau" not in input_names:
            r.problem(
                ("controller", "joints", joint),
                f"{joint!r} is not an actuated 1-DoF joint" + _close(joint, [n[: -len(".tau")] for n in actuated]),
            )
    return model
