"""Co-simulation of a scenario (``mbsfmu cosim``): the scenario's model runs as its FMU (``mbs``,
built by ``mbsfmu.fmu.build_fmu``) connected to other FMUs, orchestrated by an existing master:

- ``fmpy``: fmpy's FMU2Slave API in a fixed-step loop on the grid t_k = k dt, every FMU stepped by
  h_k = t_k+1 - t_k from t_k. ``scheme: jacobi`` (default): read every FMU's outputs at t_k,
  propagate the connections, set the inputs, step every FMU. ``scheme: gauss-seidel``: the FMUs
  step one after the other in ``order``, each FMU's inputs set just before its step from its
  sources' outputs at that moment (so a controller ordered before ``mbs`` feeds it the command it
  computed at t_k).
- ``libcosim``: libcosimpy's execution with libcosim's fixed-step algorithm (Jacobi: every FMU
  steps from the inputs transferred at t_k); ``gauss-seidel`` is not available there and falls
  back to Jacobi with a note.

The scenario's ``inputs`` schedules drive the model FMU's inputs as in-process (sampled at t_k,
held). Trajectory rows (t_k) hold the model FMU's outputs at t_k under the in-process column names
(``q.<joint>``, ``qd.<joint>``, ``u.<input>`` = the inputs held over [t_k, t_k+1], ``engine.*``),
and every other FMU's outputs as ``<fmu>.<variable>``, as the master propagated them at t_k. Body
records are not FMU outputs: the conservation checks, which recompute momentum and energy from
them, are skipped with a note; references and final values run on the columns.

The schema (``cosim:`` in a scenario, docs/guides/cosimulation.md) is parsed by ``parse_cosim``
(structure, with file lines); ``check_cosim`` checks the names against the FMUs' variables (the
model FMU's and the builtin controller's variable tables, which are their modelDescriptions, and
``fmpy.read_model_description`` for FMU files), also with file lines, before anything is built.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import time as wallclock
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from mbsfmu.errors import MbsError, brief

MBS = "mbs"                                   # the scenario's own model FMU
MASTERS = ("fmpy", "libcosim")
SCHEMES = ("jacobi", "gauss-seidel")
BUILTINS = ("pid",)
COSIM_KEYS = ("fmus", "connections", "scheme", "order")
FMU_KEYS = ("builtin", "path", "parameters")
TYPES = ("Real", "Integer", "Boolean")       # connectable variable types
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
SKIPPED = ("body records are not FMU outputs: the conservation checks recompute momentum and energy from them "
           "(run `mbsfmu run` for them; the model FMU's own drift.* outputs are in report.json, fmu_drift)")


class CosimError(MbsError):
    """A co-simulation that cannot be set up (a master that is not installed, a time grid libcosim
    cannot represent, ...)."""


@dataclass(frozen=True)
class FmuEntry:
    """One FMU of ``cosim.fmus``: builtin (``"pid"``) or path (an .fmu file); parameters: start
    values by variable name."""
    name: str
    builtin: str | None
    path: Path | None
    parameters: dict


@dataclass(frozen=True)
class Connection:
    """output -> input, each (fmu, variable); ``index`` in ``cosim.connections`` (for file lines)."""
    src: tuple[str, str]
    dst: tuple[str, str]
    index: int


@dataclass(frozen=True)
class CosimSpec:
    """The parsed ``cosim:`` section; ``lines``: the scenario's path -> line map."""
    fmus: dict
    connections: tuple
    scheme: str
    order: tuple
    lines: dict = field(default_factory=dict, repr=False)


@dataclass(frozen=True)
class Var:
    """One FMU variable as the master sees it."""
    name: str
    vr: int
    type: str
    causality: str
    variability: str


# ---- schema -----------------------------------------------------------------------------------------

def parse_cosim(r, raw, base: Path, has_controller: bool) -> CosimSpec | None:
    """``cosim: {fmus: {name: {builtin: pid} | {path: F.fmu, parameters: {...}}}, connections:
    [[<fmu>.<output>, <fmu>.<input>], ...], scheme: jacobi | gauss-seidel, order: [...]}``;
    problems go to the reader r (with their lines). Names are checked by ``check_cosim``."""
    at = ("cosim",)
    m = r.mapping(raw, at, COSIM_KEYS, required=("fmus", "connections"))
    if not isinstance(raw, dict):
        return None
    fmus: dict[str, FmuEntry] = {}
    raw_fmus = m.get("fmus", {})
    if not isinstance(raw_fmus, dict):
        r.problem(at + ("fmus",), "expected a mapping of FMU name to {builtin: pid} or {path: FILE.fmu, parameters}")
        raw_fmus = {}
    for name, spec in raw_fmus.items():
        p = at + ("fmus", name)
        name = str(name)
        if name == MBS:
            r.problem(p, "'mbs' is the scenario's own model FMU; give this FMU another name")
            continue
        if not NAME.match(name):
            r.problem(p, f"FMU name {name!r}: use letters, digits, _ and - (connections read <fmu>.<variable>)")
        s = r.mapping(spec, p, FMU_KEYS)
        if not isinstance(spec, dict):
            continue
        kinds = [k for k in ("builtin", "path") if k in s]
        if len(kinds) != 1:
            r.problem(p, "expected exactly one of builtin (pid) or path (an .fmu file)")
            continue
        builtin = path = None
        if "builtin" in s:
            if s["builtin"] not in BUILTINS:
                r.problem(p + ("builtin",), f"unknown builtin FMU {brief(s['builtin'])}; expected one of {', '.join(BUILTINS)}")
            elif not has_controller:
                r.problem(p + ("builtin",), "the builtin pid takes its gains and setpoints from the scenario's "
                          "controller: section, and there is none")
            builtin = s["builtin"]
        else:
            rel = r.string(s["path"], p + ("path",))
            path = base / rel
            if isinstance(s["path"], str) and s["path"] and not path.is_file():
                r.problem(p + ("path",), f"FMU file {str(path)!r} does not exist")
        params = {}
        raw_params = s.get("parameters", {})
        if not isinstance(raw_params, dict):
            r.problem(p + ("parameters",), "expected a mapping of variable name to start value")
            raw_params = {}
        for var, value in raw_params.items():     # booleans and integers stay (Boolean, Integer variables)
            params[str(var)] = value if isinstance(value, (bool, int)) else r.number(value, p + ("parameters", var))
        fmus[name] = FmuEntry(name, builtin, path, params)
    known = [MBS, *(str(n) for n in raw_fmus if str(n) != MBS)]
    connections = []
    raw_c = m.get("connections", [])
    if not isinstance(raw_c, list):
        r.problem(at + ("connections",), "expected a list of [<fmu>.<output>, <fmu>.<input>] pairs")
        raw_c = []
    for i, c in enumerate(raw_c):
        p = at + ("connections", i)
        if not (isinstance(c, list) and len(c) == 2 and all(isinstance(x, str) for x in c)):
            r.problem(p, "expected a pair [<fmu>.<output>, <fmu>.<input>], e.g. [mbs.q1.q, ctrl.q1.q]")
            continue
        ends = []
        for e, text in enumerate(c):
            fmu, dot, var = text.partition(".")
            if not (fmu and dot and var):
                r.problem(p + (e,), f"{text!r}: expected <fmu>.<variable> (FMUs: {', '.join(known)})")
            elif fmu not in known:
                r.problem(p + (e,), f"unknown FMU {fmu!r} in {text!r}" + _hint(fmu, known, "FMUs"))
            else:
                ends.append((fmu, var))
        if len(ends) == 2:
            connections.append(Connection(ends[0], ends[1], i))
    scheme = m.get("scheme", "jacobi")
    if scheme not in SCHEMES:
        r.problem(at + ("scheme",), f"unknown scheme {brief(scheme)}" + _hint(brief(scheme), SCHEMES, "schemes"))
        scheme = None
    order = (*fmus, MBS)
    if "order" in m and scheme is not None:
        raw_o = m["order"]
        if scheme != "gauss-seidel":
            r.problem(at + ("order",), "order sets the stepping sequence of scheme gauss-seidel; this section's "
                      f"scheme is {scheme}")
        elif not (isinstance(raw_o, list) and all(isinstance(x, str) for x in raw_o)):
            r.problem(at + ("order",), f"expected a list of the FMU names ({', '.join(known)})")
        else:
            for k, x in enumerate(raw_o):
                if x not in known:
                    r.problem(at + ("order", k), f"unknown FMU {x!r}" + _hint(x, known, "FMUs"))
            dup = sorted({x for x in raw_o if raw_o.count(x) > 1})
            missing = [x for x in known if x not in raw_o]
            if dup or missing:
                r.problem(at + ("order",), "order must name every FMU once"
                          + (f"; repeated: {', '.join(dup)}" if dup else "") + (f"; missing: {', '.join(missing)}"
                                                                               if missing else ""))
            order = tuple(raw_o)
    return CosimSpec(fmus=fmus, connections=tuple(connections), scheme=scheme or "jacobi", order=order,
                     lines=dict(r.lines))


def _hint(name: str, choices, what: str) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    if close:
        return f" (did you mean {close[0]!r}?)"
    choices = list(choices)
    return f"; {what}: {', '.join(choices[:12])}{', ...' if len(choices) > 12 else ''}"


# ---- checks against the FMUs' variables ---------------------------------------------------------------

def interfaces(scn, sim) -> dict[str, dict[str, Var]]:
    """Each FMU's variables by name: the model FMU's variable table (its modelDescription) for
    ``mbs``, the builtin controller's, and fmpy.read_model_description for FMU files. Problems
    reading an FMU file become ScenarioError entries at its ``path`` line."""
    from mbsfmu.fmu.variables import variable_table
    from mbsfmu.io.reader import Reader
    from mbsfmu.scenario.spec import ScenarioError
    spec = scn.cosim
    integ = scn.integrator
    out = {MBS: {v.name: Var(v.name, k, v.type, v.causality, v.variability)
                 for k, v in enumerate(variable_table(sim.model, "structured", integ["method"], integ["h_max"],
                                                      integ["rtol"], integ["atol"]))}}
    r = Reader(spec.lines)
    for name, entry in spec.fmus.items():
        if entry.builtin == "pid":
            try:
                from mbsfmu.fmu.pid import pid_config, pid_variables
            except ImportError:
                raise CosimError("the builtin controller FMU needs pythonfmu: pip install 'mbsfmu[fmu]'") from None
            table = pid_variables(pid_config(scn.controller, scn.dt, _pid_units(sim.model, scn.controller)))
            out[name] = {v.name: Var(v.name, k, v.type, v.causality, v.variability) for k, v in enumerate(table)}
            continue
        try:
            from fmpy import read_model_description
        except ImportError:
            raise CosimError("co-simulation needs fmpy: pip install 'mbsfmu[fmu]'") from None
        try:
            md = read_model_description(str(entry.path), validate=False)
        except Exception as e:      # fmpy raises plain Exceptions for broken files and XML
            r.problem(("cosim", "fmus", name, "path"), f"cannot read the FMU {str(entry.path)!r}: {e}")
            continue
        if md.fmiVersion != "2.0" or md.coSimulation is None:
            r.problem(("cosim", "fmus", name, "path"), f"{entry.path.name} is not an FMI 2.0 Co-Simulation FMU "
                      f"(fmiVersion {md.fmiVersion}, co-simulation {'yes' if md.coSimulation else 'no'})")
            continue
        out[name] = {v.name: Var(v.name, v.valueReference, v.type, v.causality, v.variability)
                     for v in md.modelVariables}
    if r.problems:
        raise ScenarioError(r.problems, str(scn.path))
    return out


def check_cosim(scn, sim) -> dict[str, dict[str, Var]]:
    """Every problem of the ``cosim`` section that needs the FMUs' variables (unknown variables with
    a did-you-mean, causality and type mismatches, inputs connected twice or also scheduled, the
    builtin controller's unconnected inputs, parameters), raised at once as a ScenarioError with
    the scenario file's lines. Returns the interfaces."""
    from mbsfmu.io.reader import Reader
    from mbsfmu.scenario.spec import ScenarioError
    spec = scn.cosim
    ifs = interfaces(scn, sim)
    r = Reader(spec.lines)
    driven: dict[tuple[str, str], int] = {}
    for c in spec.connections:
        at = ("cosim", "connections", c.index)
        ok = True
        for e, ((fmu, var), role) in enumerate(((c.src, "output"), (c.dst, "input"))):
            vars_ = ifs[fmu]
            if var not in vars_:
                wanted = [n for n, v in vars_.items() if v.causality == role]
                close = difflib.get_close_matches(var, wanted, n=1) or difflib.get_close_matches(var, list(vars_), n=1)
                r.problem(at + (e,), f"FMU {fmu!r} has no variable {var!r}" + (
                    f" (did you mean {fmu}.{close[0]}?)" if close else
                    f"; its {role}s: {', '.join(wanted[:12])}{', ...' if len(wanted) > 12 else ''}"))
                ok = False
            elif vars_[var].causality != role:
                r.problem(at + (e,), f"{fmu}.{var} is {_a(vars_[var].causality)}, not {_a(role)}: a connection runs "
                          "from an output to an input ([<fmu>.<output>, <fmu>.<input>])")
                ok = False
        if not ok:
            continue
        s, d = ifs[c.src[0]][c.src[1]], ifs[c.dst[0]][c.dst[1]]
        if s.type != d.type:
            r.problem(at, f"type mismatch: {c.src[0]}.{s.name} is {s.type}, {c.dst[0]}.{d.name} is {d.type}")
        elif s.type not in TYPES:
            r.problem(at, f"{c.src[0]}.{s.name}: {s.type} variables cannot be connected (only {', '.join(TYPES)})")
        if c.dst in driven:
            j = driven[c.dst]
            line = spec.lines.get(("cosim", "connections", j))
            r.problem(at + (1,), f"input {c.dst[0]}.{c.dst[1]} is connected twice: also by connections[{j}]"
                      + (f" (line {line})" if line else ""))
        else:
            driven[c.dst] = c.index
        if c.dst[0] == MBS and c.dst[1] in scn.inputs:
            line = spec.lines.get(("inputs", c.dst[1]))
            r.problem(at + (1,), f"input mbs.{c.dst[1]} is connected and also scheduled by inputs.{c.dst[1]}"
                      + (f" (line {line})" if line else "") + ": keep one")
    for name, entry in spec.fmus.items():
        vars_ = ifs[name]
        for var, value in entry.parameters.items():
            at = ("cosim", "fmus", name, "parameters", var)
            settable = [n for n, v in vars_.items() if v.causality in ("parameter", "input")]
            if var not in vars_:
                params = [n for n in settable if vars_[n].causality == "parameter"]
                close = difflib.get_close_matches(var, params, n=1) or difflib.get_close_matches(var, settable, n=1)
                r.problem(at, f"FMU {name!r} has no variable {var!r}" + (f" (did you mean {close[0]!r}?)" if close else
                                                                         _hint(var, settable, "parameters and inputs")))
            elif vars_[var].causality not in ("parameter", "input"):
                r.problem(at, f"{name}.{var} is {_a(vars_[var].causality)}: only parameters and inputs take start values")
            elif not _fits(vars_[var].type, value):
                r.problem(at, f"{name}.{var} is {vars_[var].type}, got {brief(value)}")
        if entry.builtin == "pid":
            loose = [n for n, v in vars_.items() if v.causality == "input" and (name, n) not in driven]
            if loose:
                r.problem(("cosim", "fmus", name), f"the builtin pid's input(s) {', '.join(f'{name}.{n}' for n in loose)} "
                          f"are not connected (e.g. [mbs.{loose[0]}, {name}.{loose[0]}])")
    if scn.controller and not any(e.builtin == "pid" for e in spec.fmus.values()):
        r.problem(("controller",), "a co-simulation runs no in-process controller: add {builtin: pid} to cosim.fmus "
                  "(and connect it), or remove controller")
    if scn.loops:
        r.problem(("loops",), "the model FMU runs the Simulator's default loop options: remove loops: to co-simulate")
    if r.problems:
        raise ScenarioError(r.problems, str(scn.path))
    return ifs


def _a(word: str) -> str:
    return ("an " if word[0] in "aeiou" else "a ") + word


def _fits(typ: str, value) -> bool:
    if typ == "Boolean":
        return isinstance(value, bool)
    if typ == "Integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _pid_units(model, gains) -> dict[str, tuple[str, str, str]]:
    """joint -> (q, qd, tau) units of the controlled joints (revolute or prismatic)."""
    types = {b.joint.name: b.joint.type for b in model.spec.bodies}
    return {j: ("m", "m/s", "N") if types.get(j) == "prismatic" else ("rad", "rad/s", "N.m") for j in gains}


# ---- building (cached) --------------------------------------------------------------------------------

def default_fmu_dir() -> Path:
    """Where built FMUs are cached: $MBSFMU_FMU_CACHE, else $XDG_CACHE_HOME/mbsfmu/fmus, else
    ~/.cache/mbsfmu/fmus. Entries are keyed by a hash of everything that goes into the FMU (the
    engine's sources, the model file with the scenario's overrides, the solver settings, the Python)."""
    env = os.environ.get("MBSFMU_FMU_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mbsfmu" / "fmus"


def _cached(fmu_dir: Path, kind: str, key: dict, build) -> Path:
    """The FMU ``<fmu_dir>/<kind>-<hash>/<kind>.fmu``, built by build(folder) -> path on a miss (in
    a private folder, then moved into place: concurrent runs do not see half-written files)."""
    from mbsfmu.fmu.build import engine_hash
    key = {**key, "engine": engine_hash(), "python": sys.executable, "version": list(sys.version_info[:3])}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    folder = Path(fmu_dir) / f"{kind}-{digest}"
    fmu = folder / f"{kind}.fmu"
    if fmu.is_file():
        return fmu
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        try:
            os.link(build(Path(tmp)), fmu)
        except FileExistsError:  # another process built the same FMU meanwhile: keep its file (and extraction)
            pass
    return fmu


def _extracted(fmu: Path) -> Path:
    """The FMU's files, extracted once next to it (``<name>.x/``)."""
    target = fmu.with_suffix(".x")
    if target.is_dir():
        return target
    tmp = Path(tempfile.mkdtemp(dir=fmu.parent, prefix=".x-"))
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp)
    for so in (tmp / "binaries").rglob("*.so"):
        so.chmod(0o755)
    try:
        tmp.rename(target)
    except OSError:             # another process got there first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def model_files(scn) -> dict[str, bytes]:
    """The model file(s) the model FMU is built from, by file name, the first one the model: the
    scenario's model with its ``gravity`` and ``initial`` overrides written in (an inline model as
    a file named like the scenario, a URDF through an overlay), plus the URDF an overlay names."""
    from mbsfmu.io.model_file import parse_file
    path = Path(scn.model_path)
    overrides = scn.gravity is not None or scn.initial_q or scn.initial_qd
    if scn.model_inline is None and not overrides:
        files = {path.name: path.read_bytes()}
        doc = None
        if path.suffix.lower() in (".yaml", ".yml", ".json"):
            doc, _ = parse_file(path)
        return {**files, **_urdf_of(doc, path.parent)}
    if scn.model_inline is not None:
        doc, name = _plain(scn.model_inline.doc), f"{scn.path.stem}.json"
    elif path.suffix.lower() in (".yaml", ".yml", ".json"):
        doc, name = _plain(parse_file(path)[0]), f"{path.stem}.json"
    else:                        # a URDF: an overlay carries the overrides
        doc, name = {"version": 1, "urdf": path.name}, f"{path.stem}.json"
    if scn.gravity is not None:
        doc["gravity"] = list(scn.gravity)
    init = doc.setdefault("initial", {})
    for key, values in (("q", scn.initial_q), ("qd", scn.initial_qd)):
        if values:
            dest = init.setdefault(key, {})
            for joint, v in values.items():
                dest[joint] = v[0] if len(v) == 1 else list(v)
    extra = _urdf_of(doc, path.parent if scn.model_inline is None else scn.path.parent)
    return {name: json.dumps(doc, indent=1).encode(), **extra}


def _plain(doc):
    return json.loads(json.dumps(doc))


def _urdf_of(doc, folder: Path) -> dict[str, bytes]:
    if isinstance(doc, dict) and isinstance(doc.get("urdf"), str):
        return {doc["urdf"]: (folder / doc["urdf"]).read_bytes()}
    return {}


def build_fmus(scn, fmu_dir: str | Path | None = None, sim=None) -> dict[str, Path]:
    """The FMU file of every FMU of the scenario's co-simulation, ``mbs`` first; the model FMU and
    builtin controllers are built (``build_fmu``, ``build_pid_fmu``) into the cache ``fmu_dir``
    (default ``default_fmu_dir()``) unless an identical build is there. sim: the scenario's
    Simulator (``build_simulator``), if at hand."""
    from mbsfmu.fmu import build_fmu
    from mbsfmu.scenario.run import build_simulator
    fmu_dir = Path(fmu_dir) if fmu_dir is not None else default_fmu_dir()
    integ = scn.integrator
    files = model_files(scn)

    def build_model(tmp: Path) -> Path:
        for rel, data in files.items():
            (tmp / "model" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "model" / rel).write_bytes(data)
        return build_fmu(tmp / "model" / next(iter(files)), tmp / "mbs.fmu", naming="structured",
                         integrator=integ["method"], h_max=integ["h_max"], rtol=integ["rtol"], atol=integ["atol"])

    key = {"files": {k: hashlib.sha256(v).hexdigest() for k, v in files.items()}, "solver": integ}
    out = {MBS: _cached(fmu_dir, "mbs", key, build_model)}
    for name, entry in scn.cosim.fmus.items():
        if entry.builtin == "pid":
            from mbsfmu.fmu.pid import build_pid_fmu, pid_config
            sim = build_simulator(scn) if sim is None else sim
            units = _pid_units(sim.model, scn.controller)
            cfg = pid_config(scn.controller, scn.dt, units, scn.name)
            out[name] = _cached(fmu_dir, "pid", {"config": cfg},
                                lambda tmp: build_pid_fmu(scn.controller, scn.dt, tmp / "pid.fmu", units=units,
                                                          name=scn.name))
        else:
            out[name] = entry.path
    return out


# ---- the run ------------------------------------------------------------------------------------------

@dataclass
class _Plan:
    """What a master needs: FMU files, variables, connections, start values, recorded columns."""
    fmus: dict                   # name -> Path
    ifs: dict                    # name -> {variable: Var}
    connections: list            # (src fmu, src Var, dst fmu, dst Var)
    parameters: dict             # name -> [(Var, value)]
    scheduled: list              # [(Var, Schedule)] model FMU inputs driven by the scenario's inputs
    columns: list                # [(column, Var)] model FMU values in in-process column order
    other: list                  # [(column, fmu, Var)] other FMUs' outputs
    inputs: list                 # [(column, Var)] model FMU inputs (u.*)
    missing: list                # in-process columns the FMU does not expose
    cached: set                  # FMUs built here (extracted next to their cached file)


def plan_cosim(scn, fmus: dict[str, Path], ifs: dict, sim) -> _Plan:
    """Connections and recorded columns resolved to variables (the built FMUs' modelDescriptions
    must match the variable tables the checks used); sim: the scenario's Simulator (column names)."""
    from fmpy import read_model_description
    from mbsfmu.fmu.variables import variable_table
    from mbsfmu.sim.rows import trajectory_row
    for name, path in fmus.items():
        if name == MBS or scn.cosim.fmus[name].builtin:
            md = {v.name: v.valueReference for v in read_model_description(str(path)).modelVariables}
            if md != {n: v.vr for n, v in ifs[name].items()}:
                raise CosimError(f"the built FMU {path} does not have the variables its checks used (stale cache?): "
                                 f"delete {path.parent} and run again")
    integ = scn.integrator
    by_col = {}
    for v in variable_table(sim.model, "structured", integ["method"], integ["h_max"], integ["rtol"], integ["atol"]):
        kind, key = v.source[0], v.source[1:]
        if kind == "x":
            by_col[sim.state_names[key[0]]] = v.name
        elif kind == "input":
            by_col[f"u.{sim.input_names[key[0]]}"] = v.name
        elif kind == "inv":
            by_col[f"engine.{key[0]}" if key[0] in ("KE", "PE", "E") else f"engine.{key[0]}[{key[1] + 1}]"] = v.name
        elif kind == "energy":
            by_col[f"engine.{key[0]}"] = v.name
    row = list(trajectory_row(sim))
    mbs = ifs[MBS]
    columns = [(c, mbs[by_col[c]]) for c in row if c in by_col]
    conns = [(c.src[0], ifs[c.src[0]][c.src[1]], c.dst[0], ifs[c.dst[0]][c.dst[1]]) for c in scn.cosim.connections]
    other = [(f"{name}.{v.name}", name, v) for name in scn.cosim.fmus for v in ifs[name].values()
             if v.causality == "output" and v.type in TYPES and not any(ch in v.name for ch in ',"\r\n')]
    params = {name: [(ifs[name][k], value) for k, value in e.parameters.items()] for name, e in scn.cosim.fmus.items()}
    return _Plan(fmus=fmus, ifs=ifs, connections=conns, parameters=params,
                 scheduled=[(mbs[n], s) for n, s in scn.inputs.items()],
                 columns=columns,
                 other=other, inputs=[(c, v) for c, v in columns if c.startswith("u.")],
                 missing=[c for c in row if c not in by_col and c != "time"],
                 cached={name for name in fmus if name == MBS or scn.cosim.fmus[name].builtin})


def run_cosim(scn, out_dir: str | Path, duration: float | None = None, master: str = "fmpy",
              scheme: str | None = None, fmu_dir: str | Path | None = None, progress: bool = True) -> dict:
    """Co-simulate the scenario (module docstring): build or reuse the FMUs, run ``master``
    ("fmpy" or "libcosim") with ``scheme`` (default: the scenario's), write ``trajectory.csv`` row
    by row and ``report.json`` (also after a failure, with what was computed). Returns the report;
    its "passed" says if every check that ran held; "cosim" says how the run was made."""
    from mbsfmu.scenario.grid import check_run_length
    from mbsfmu.scenario.progress import Progress
    from mbsfmu.scenario.report import finish_run, make_out_dir
    from mbsfmu.scenario.run import build_simulator
    from mbsfmu.trajectory import TrajectoryWriter
    if scn.cosim is None:
        raise CosimError(f"scenario {scn.path} has no cosim: section (docs/guides/cosimulation.md)")
    if master not in MASTERS:
        raise CosimError(f"unknown master {master!r}; expected one of {', '.join(MASTERS)}")
    scheme = scheme or scn.cosim.scheme
    if scheme not in SCHEMES:
        raise CosimError(f"unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    notes = []
    if master == "libcosim" and scheme == "gauss-seidel":
        notes.append("libcosim's fixed-step algorithm is Jacobi: every FMU steps from the values transferred at t_k, "
                     "so the scheme gauss-seidel of the scenario is not applied (a controller's command reaches "
                     "the model one step later than in-process)")
        scheme = "jacobi"
    T = scn.duration if duration is None else duration
    check_run_length(T, scn.dt, scn.integrator, cosim=True)
    n_steps = max(1, round(T / scn.dt))
    if master == "libcosim":
        _require("libcosimpy", "the libcosim master needs libcosimpy: pip install libcosimpy")
        if abs(scn.dt * 1e9 - round(scn.dt * 1e9)) > 1e-6 * scn.dt * 1e9:
            raise CosimError(f"libcosim counts time in whole nanoseconds: dt = {scn.dt!r} s is not one")
    _require("fmpy", "co-simulation needs fmpy: pip install 'mbsfmu[fmu]'")
    sim = build_simulator(scn)                 # the scenario's own checks (initial state, inputs, controller)
    ifs = check_cosim(scn, sim)
    out = make_out_dir(out_dir)
    fmus = build_fmus(scn, fmu_dir, sim)
    plan = plan_cosim(scn, fmus, ifs, sim)
    if master == "libcosim" and any(v.type == "Boolean" for _c, _n, v in plan.other):
        raise CosimError("libcosim's time-series observer keeps no Boolean samples (the rows at t_0 need them): "
                         "use --master fmpy for FMUs with Boolean outputs")
    order = scn.cosim.order if scheme == "gauss-seidel" else (MBS, *scn.cosim.fmus)
    start = wallclock.perf_counter()
    bar = Progress(n_steps, progress)
    log: list[tuple[str, int, str]] = []
    (out / "records.csv").unlink(missing_ok=True)   # no body records here: drop a previous run's
    # Ctrl-C only sets a flag: a KeyboardInterrupt raised inside an FMU's own (Python) code would
    # make that FMU fail fatally; the loop stops after the row it is writing instead
    ctrl_c = []
    previous = _on_sigint(lambda *_a: ctrl_c.append(True))
    with TrajectoryWriter(out / "trajectory.csv",
                          ["time", *(c for c, _ in plan.columns), *(c for c, *_ in plan.other)]) as writer:
        def write(k: int, row: dict) -> None:
            writer.write(row)
            bar.update(k, wallclock.perf_counter() - start)
            if ctrl_c:
                raise KeyboardInterrupt
        runner = _run_fmpy if master == "fmpy" else _run_libcosim
        interrupted = None
        try:
            error, final = runner(plan, scn.dt, n_steps, scheme, order, write, log)
        except KeyboardInterrupt:       # Ctrl-C: the runner has freed its FMUs; keep the rows written
            error, final = None, {}
            interrupted = ("interrupted at t = " + (f"{writer.last_time:.9g} s (last row written)"
                                                    if writer.n_rows else "0 s (no row written)"))
        finally:
            _on_sigint(previous)
    bar.close()
    wall = wallclock.perf_counter() - start
    solver = {"n_steps": final.get("solver.n_steps"), "n_rhs": final.get("solver.n_rhs")}
    extra = {"cosim": {
        "master": master, "scheme": scheme, "order": list(order) if scheme == "gauss-seidel" else None,
        "fmus": {name: {"path": str(path), "builtin": None if name == MBS else scn.cosim.fmus[name].builtin}
                 for name, path in fmus.items()},
        "connections": [f"{s}.{sv.name} -> {d}.{dv.name}" for s, sv, d, dv in plan.connections],
        "columns_not_exposed": plan.missing, "notes": notes,
        "log": [f"{name}: {_STATUS.get(status, status)}: {msg}" for name, status, msg in log if status >= 1][:50]},
        "fmu_drift": {k: v for k, v in final.items() if k.startswith("drift.")}}
    if interrupted:
        extra["interrupted"] = interrupted
    return finish_run(scn, out, T, wall, error or interrupted, solver,
                      skip_checks="the run was interrupted (Ctrl-C)" if interrupted else SKIPPED if scn.checks else None,
                      extra=extra, plot_traj=_with_P_sys(sim.model))


def _on_sigint(handler):
    """Install a SIGINT handler (None: Python's default, KeyboardInterrupt) in the main thread
    (elsewhere nothing changes); returns the previous one."""
    import signal
    import threading
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGINT, signal.default_int_handler if handler is None else handler)


_STATUS = {0: "ok", 1: "warning", 2: "discard", 3: "error", 4: "fatal", 5: "pending"}
FINAL = ("solver.n_steps", "solver.n_rhs", "drift.H_sys", "drift.H_sys_abs", "drift.E_balance", "drift.E_balance_abs")


def _require(module: str, message: str) -> None:
    import importlib.util
    if importlib.util.find_spec(module) is None:
        raise CosimError(message)


def _with_P_sys(model):
    """For the plots only: engine.P_sys = M Rdot (not an FMU output) from the model's total mass."""
    def derive(traj):
        from mbsfmu.trajectory import Trajectory
        M = float(sum(b.mass for b in model.spec.bodies))
        cols = dict(traj)
        for k in (1, 2, 3):
            cols.setdefault(f"engine.P_sys[{k}]", M * traj[f"engine.Rdot[{k}]"])
        return Trajectory(cols, traj.source)
    return derive


def _cosim_row(plan: _Plan, t: float, values: dict, inputs: dict) -> dict:
    """A trajectory row from values by (fmu, vr) and the model FMU's held inputs by vr."""
    row = {"time": t}
    for c, v in plan.columns:
        row[c] = inputs[v.vr] if v.causality == "input" else values[MBS, v.vr]
    for c, name, v in plan.other:
        row[c] = float(values[name, v.vr])
    return row


# ---- fmpy ---------------------------------------------------------------------------------------------

class _FmpyLog:
    """fmpy logger callbacks that keep (instance, status, message)."""

    def __init__(self, sink: list):
        import ctypes
        from fmpy.fmi2 import (fmi2CallbackAllocateMemoryTYPE, fmi2CallbackFreeMemoryTYPE, fmi2CallbackFunctions,
                               fmi2CallbackLoggerTYPE)

        def logger(_env, name, status, _category, message):
            sink.append(((name or b"").decode(errors="replace"), int(status),
                         (message or b"").decode(errors="replace")))

        libc = ctypes.CDLL(None)
        self.callbacks = fmi2CallbackFunctions()
        self.callbacks.logger = fmi2CallbackLoggerTYPE(logger)
        self.callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(libc.calloc)
        self.callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(libc.free)


def _get(f, typ: str, vrs: list[int]) -> list:
    if not vrs:
        return []
    return {"Real": f.getReal, "Integer": f.getInteger, "Boolean": f.getBoolean}[typ](vrs)


def _set(f, typ: str, vrs: list[int], values: list) -> None:
    if vrs:
        {"Real": f.setReal, "Integer": f.setInteger, "Boolean": f.setBoolean}[typ](vrs, values)


def _run_fmpy(plan: _Plan, dt: float, n: int, scheme: str, order: tuple, write, log: list):
    """The fmpy fixed-step loop (module docstring). Returns (error or None, final model FMU values)."""
    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave
    from fmpy import extract
    sink = _FmpyLog(log)
    insts: dict = {}
    reads = _reads(plan, observe=False)               # name -> type -> [vr]: what rows and connections need
    feeds = {name: [(s, sv, dv) for s, sv, d, dv in plan.connections if d == name] for name in plan.fmus}
    sched = plan.scheduled
    in_vrs = [v.vr for _, v in plan.inputs]
    error, final, where = None, {}, "instantiate"
    scratch = []                                    # extracted FMU files, removed at the end

    def read(name: str, values: dict) -> None:
        for typ, vrs in reads[name].items():
            for vr, x in zip(vrs, _get(insts[name], typ, vrs)):
                values[name, vr] = x

    def set_inputs(name: str, t: float, values: dict) -> None:
        by_type: dict = {}
        for s, sv, dv in feeds[name]:
            by_type.setdefault(dv.type, ([], []))
            by_type[dv.type][0].append(dv.vr)
            by_type[dv.type][1].append(values[s, sv.vr])
        if name == MBS and sched:
            by_type.setdefault("Real", ([], []))
            for v, s in sched:
                by_type["Real"][0].append(v.vr)
                by_type["Real"][1].append(float(s(t)))
        for typ, (vrs, xs) in by_type.items():
            _set(insts[name], typ, vrs, xs)

    def record(k: int, t: float, values: dict) -> None:
        read(MBS, values)
        write(k, _cosim_row(plan, t, values, dict(zip(in_vrs, _get(insts[MBS], "Real", in_vrs)))))

    try:
        for name, path in plan.fmus.items():
            md = read_model_description(str(path), validate=False)
            where = f"{name}: instantiate"
            if name in plan.cached:
                folder = _extracted(path)
            else:
                folder = extract(str(path))
                scratch.append(folder)
            f = FMU2Slave(guid=md.guid, unzipDirectory=str(folder), modelIdentifier=md.coSimulation.modelIdentifier,
                          instanceName=name)
            f.instantiate(callbacks=sink.callbacks, loggingOn=False)
            insts[name] = f
            f.setupExperiment(startTime=0.0)
            for v, value in plan.parameters.get(name, []):
                _set(f, v.type, [v.vr], [value])
            where = f"{name}: initialisation"
            f.enterInitializationMode()
            f.exitInitializationMode()
        for k in range(n + 1):
            t, last = k * dt, k == n
            h = (k + 1) * dt - t
            values: dict = {}
            if scheme == "jacobi":
                for name in plan.fmus:
                    read(name, values)
                for name in plan.fmus:
                    where = f"{name}: set inputs at t = {t!r} s"
                    set_inputs(name, t, values)
                record(k, t, values)
                if not last:
                    for name in order:
                        where = f"{name}: fmi2DoStep from t = {t!r} s"
                        insts[name].doStep(currentCommunicationPoint=t, communicationStepSize=h)
            else:
                for name in order:
                    for s in {s for s, _sv, _dv in feeds[name]}:
                        read(s, values)
                    where = f"{name}: set inputs at t = {t!r} s"
                    set_inputs(name, t, values)
                    if name == MBS:
                        for other in plan.fmus:
                            if other != MBS:
                                read(other, values)
                        record(k, t, values)
                        if last:
                            break
                    where = f"{name}: fmi2DoStep from t = {t!r} s"
                    insts[name].doStep(currentCommunicationPoint=t, communicationStepSize=h)
    except Exception as e:          # fmpy: FMICallException for fmi2Discard/Error/Fatal, a plain Exception
        error = _fmu_error(where, e, log)   # when fmi2Instantiate fails; the run stops, its rows stay
    finally:
        if MBS in insts:
            try:
                final = _final_values(plan, lambda typ, vrs: _get(insts[MBS], typ, vrs))
            except Exception:       # fmpy's FMICallException: an instance in fmi2Error/Fatal answers nothing
                final = {}
        for f in insts.values():
            for end in (f.terminate, f.freeInstance):
                try:
                    end()
                except Exception:   # as above: a failed instance may refuse fmi2Terminate; free it anyway
                    pass
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)
    return error, final


def _reads(plan: _Plan, observe: bool) -> dict:
    """name -> type -> sorted value references the rows and connections need; with observe (an
    observer reads them all) also the model FMU's inputs and FINAL values."""
    reads: dict = {name: {} for name in plan.fmus}

    def need(name: str, v: Var) -> None:
        reads[name].setdefault(v.type, set()).add(v.vr)

    for _c, v in plan.columns:
        if v.causality != "input" or observe:
            need(MBS, v)
    for _c, name, v in plan.other:
        need(name, v)
    for s, sv, _d, _dv in plan.connections:
        need(s, sv)
    if observe:
        for name in FINAL:
            if name in plan.ifs[MBS]:
                need(MBS, plan.ifs[MBS][name])
    return {name: {typ: sorted(vrs) for typ, vrs in by.items()} for name, by in reads.items()}


def _fmu_error(where: str, e: Exception, log: list) -> str:
    name = where.split(":")[0]
    msgs = [m for n, s, m in log if n == name and s >= 2] or [m for _n, s, m in log if s >= 2]
    return f"{where} failed ({str(e).rstrip('.')})" + (f": {msgs[-1]}" if msgs else "")


def _final_values(plan: _Plan, get) -> dict:
    out = {}
    for name in FINAL:
        v = plan.ifs[MBS].get(name)
        if v is not None:
            out[name] = get(v.type, [v.vr])[0]
    return out


# ---- libcosim -----------------------------------------------------------------------------------------

def _run_libcosim(plan: _Plan, dt: float, n: int, scheme: str, order: tuple, write, log: list):
    """libcosim's fixed-step (Jacobi) algorithm through libcosimpy: the connections are libcosim's,
    the scheduled inputs an override manipulator's, the rows its observers' (a time-series observer
    for the initial values at t_0, the last-value observer after each step). Returns (error or None,
    final model FMU values)."""
    from libcosimpy.CosimEnums import CosimVariableType
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimManipulator import CosimManipulator
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave
    log_output_level(CosimLogLevel.WARNING)
    step_ns = round(dt * 1e9)
    ex = CosimExecution.from_step_size(step_size=step_ns)
    slaves, idx = [], {}
    for name, path in plan.fmus.items():
        slave = CosimLocalSlave(fmu_path=str(Path(path).resolve()), instance_name=name)
        slaves.append(slave)
        idx[name] = ex.add_local_slave(local_slave=slave)
        if idx[name] < 0:
            return f"{name}: libcosim cannot load {path}: {_last_error()}", {}
    for name, params in plan.parameters.items():
        for v, value in params:
            set_initial = {"Real": ex.real_initial_value, "Integer": ex.integer_initial_value,
                           "Boolean": ex.boolean_initial_value}[v.type]
            if not set_initial(idx[name], v.vr, value):
                return f"{name}: libcosim rejects {v.name} = {value!r}: {_last_error()}", {}
    for s, sv, d, dv in plan.connections:
        connect = {"Real": ex.connect_real_variables, "Integer": ex.connect_integer_variables,
                   "Boolean": ex.connect_boolean_variables}[sv.type]
        if connect(idx[s], sv.vr, idx[d], dv.vr) != 0:       # libcosimc's status (0 = success), not a bool
            return f"libcosim cannot connect {s}.{sv.name} -> {d}.{dv.name}: {_last_error()}", {}
    manip = CosimManipulator.create_override()
    ex.add_manipulator(manipulator=manip)
    last = CosimObserver.create_last_value()
    ex.add_observer(observer=last)
    series = CosimObserver.create_time_series()
    ex.add_observer(observer=series)
    wanted = _reads(plan, observe=True)
    kinds = {"Real": CosimVariableType.REAL, "Integer": CosimVariableType.INTEGER,
             "Boolean": CosimVariableType.BOOLEAN}
    for name, by in wanted.items():
        for typ, vrs in by.items():
            for vr in vrs:
                series.start_time_series(idx[name], vr, kinds[typ])
    feeds = {dv.vr: (s, sv.vr) for s, sv, d, dv in plan.connections if d == MBS}
    sched = {v.vr: s for v, s in plan.scheduled}

    def observed_last() -> dict:
        values = {}
        for name, by in wanted.items():
            for typ, vrs in by.items():
                get = {"Real": last.last_real_values, "Integer": last.last_integer_values,
                       "Boolean": last.last_boolean_values}[typ]
                values.update({(name, vr): x for vr, x in zip(vrs, get(idx[name], vrs))})
        return values

    def row(k: int, values: dict) -> dict:
        t = k * dt
        held = {}
        for _c, v in plan.inputs:     # what libcosim holds over [t_k, t_k+1]: transferred, overridden or kept
            held[v.vr] = (values[feeds[v.vr]] if v.vr in feeds else float(sched[v.vr](t)) if v.vr in sched
                          else values[MBS, v.vr])
        return _cosim_row(plan, t, values, held)

    error, final, done = None, {}, 0
    try:
        for k in range(n):
            if sched and not manip.slave_real_values(idx[MBS], list(sched), [float(s(k * dt)) for s in sched.values()]):
                error = f"libcosim rejects the scheduled inputs at t = {k * dt!r} s: {_last_error()}"
                break
            if not ex.step(1):
                error = f"libcosim step from t = {k * dt!r} s failed: {_last_error()}"
                break
            if k == 0:
                write(0, row(0, _first_samples(series, idx, wanted)))
                for name, by in wanted.items():
                    for typ, vrs in by.items():
                        for vr in vrs:
                            series.stop_time_series(idx[name], vr, kinds[typ])
            write(k + 1, row(k + 1, observed_last()))
            done = k + 1
    except CosimError as e:
        error = str(e)
    finally:
        if done:
            values = observed_last()
            final = {name: values[MBS, plan.ifs[MBS][name].vr] for name in FINAL if name in plan.ifs[MBS]}
        del ex, slaves
    return error, final


def _last_error() -> str:
    from libcosimpy._internal import get_last_error_message
    return " ".join(get_last_error_message().split())


def _first_samples(series, idx: dict, wanted: dict) -> dict:
    """The values at step 0 (after initialisation) from a time-series observer (libcosimpy's own
    accessor drops samples of step 0 when asked for one, so this asks libcosimc directly)."""
    import ctypes
    from libcosimpy._internal import libcosimc, wrap_function
    from libcosimpy.CosimObserver import CosimObserver
    out = {}
    for name, by in wanted.items():
        for typ, vrs in by.items():
            ctype, fn = {"Real": (ctypes.c_double, "cosim_observer_slave_get_real_samples"),
                         "Integer": (ctypes.c_int, "cosim_observer_slave_get_integer_samples")}[typ]
            get = wrap_function(lib=libcosimc(), funcname=fn, restype=ctypes.c_int64,
                                argtypes=[ctypes.POINTER(CosimObserver), ctypes.c_int, ctypes.c_uint32, ctypes.c_int64,
                                          ctypes.c_size_t, ctype * 1, ctypes.c_int64 * 1, ctypes.c_int64 * 1])
            for vr in vrs:
                value, steps, times = (ctype * 1)(), (ctypes.c_int64 * 1)(), (ctypes.c_int64 * 1)()
                got = get(series.ptr(), idx[name], vr, 0, 1, value, steps, times)
                if got != 1 or steps[0] != 0:
                    raise CosimError(f"libcosim kept no initial sample of {name} variable {vr}")
                out[name, vr] = value[0]
    return out


__all__ = ["BUILTINS", "CosimError", "CosimSpec", "MASTERS", "SCHEMES", "build_fmus", "check_cosim",
           "default_fmu_dir", "model_files", "parse_cosim", "run_cosim"]
