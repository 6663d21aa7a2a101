"""The FMUs' variables as the master sees them (``Var``) and the checks of a scenario's ``cosim:``
section against them: ``interfaces`` reads each FMU's variables (the model FMU's and the builtin
controller's variable tables, which are their modelDescriptions, and
``fmpy.read_model_description`` for FMU files); ``check_cosim`` checks every name, causality and
type with the scenario file's lines, before anything is built."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from ..errors import brief
from ..extras import require
from ..fmu.variables import variable_table
from ..io.reader import Reader
from ..scenario.cosim_section import MBS, choices_hint
from ..scenario.spec import ScenarioError

TYPES = ("Real", "Integer", "Boolean")  # connectable variable types


@dataclass(frozen=True)
class Var:
    """One FMU variable as the master sees it."""

    name: str
    vr: int
    type: str
    causality: str
    variability: str


def interfaces(scn, sim) -> dict[str, dict[str, Var]]:
    """Each FMU's variables by name: the model FMU's variable table (its modelDescription) for
    ``mbs``, the builtin controller's, and fmpy.read_model_description for FMU files. Problems
    reading an FMU file become ScenarioError entries at its ``path`` line."""
    spec = scn.cosim
    integ = scn.integrator
    out = {
        MBS: {
            v.name: Var(v.name, k, v.type, v.causality, v.variability)
            for k, v in enumerate(
                variable_table(sim.model, "structured", integ["method"], integ["h_max"], integ["rtol"], integ["atol"])
            )
        }
    }
    r = Reader(spec.lines)
    for name, entry in spec.fmus.items():
        if entry.builtin == "pid":
            require("fmu", "the builtin controller FMU", "pythonfmu")
            from ..fmu.pid import pid_config, pid_variables

            table = pid_variables(pid_config(scn.controller, scn.dt, pid_units(sim.model, scn.controller)))
            out[name] = {v.name: Var(v.name, k, v.type, v.causality, v.variability) for k, v in enumerate(table)}
            continue
        require("cosim", "co-simulation", "fmpy")
        from fmpy import read_model_description

        try:
            md = read_model_description(str(entry.path), validate=False)
        except Exception as e:  # noqa: BLE001 - fmpy raises plain Exceptions for broken files and XML
            r.problem(("cosim", "fmus", name, "path"), f"cannot read the FMU {str(entry.path)!r}: {e}")
            continue
        if md.fmiVersion != "2.0" or md.coSimulation is None:
            r.problem(
                ("cosim", "fmus", name, "path"),
                f"{entry.path.name} is not an FMI 2.0 Co-Simulation FMU "
                f"(fmiVersion {md.fmiVersion}, co-simulation {'yes' if md.coSimulation else 'no'})",
            )
            continue
        out[name] = {
            v.name: Var(v.name, v.valueReference, v.type, v.causality, v.variability) for v in md.modelVariables
        }
    if r.problems:
        raise ScenarioError(r.problems, str(scn.path))
    return out


def check_cosim(scn, sim) -> dict[str, dict[str, Var]]:
    """Every problem of the ``cosim`` section that needs the FMUs' variables (unknown variables with
    a did-you-mean, causality and type mismatches, inputs connected twice or also scheduled, the
    builtin controller's unconnected inputs, parameters), raised at once as a ScenarioError with
    the scenario file's lines. Returns the interfaces."""
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
                r.problem(
                    at + (e,),
                    f"FMU {fmu!r} has no variable {var!r}"
                    + (
                        f" (did you mean {fmu}.{close[0]}?)"
                        if close
                        else f"; its {role}s: {', '.join(wanted[:12])}{', ...' if len(wanted) > 12 else ''}"
                    ),
                )
                ok = False
            elif vars_[var].causality != role:
                r.problem(
                    at + (e,),
                    f"{fmu}.{var} is {_a(vars_[var].causality)}, not {_a(role)}: a connection runs "
                    "from an output to an input ([<fmu>.<output>, <fmu>.<input>])",
                )
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
            r.problem(
                at + (1,),
                f"input {c.dst[0]}.{c.dst[1]} is connected twice: also by connections[{j}]"
                + (f" (line {line})" if line else ""),
            )
        else:
            driven[c.dst] = c.index
        if c.dst[0] == MBS and c.dst[1] in scn.inputs:
            line = spec.lines.get(("inputs", c.dst[1]))
            r.problem(
                at + (1,),
                f"input mbs.{c.dst[1]} is connected and also scheduled by inputs.{c.dst[1]}"
                + (f" (line {line})" if line else "")
                + ": keep one",
            )
    for name, entry in spec.fmus.items():
        vars_ = ifs[name]
        for var, value in entry.parameters.items():
            at = ("cosim", "fmus", name, "parameters", var)
            settable = [n for n, v in vars_.items() if v.causality in ("parameter", "input")]
            if var not in vars_:
                params = [n for n in settable if vars_[n].causality == "parameter"]
                close = difflib.get_close_matches(var, params, n=1) or difflib.get_close_matches(var, settable, n=1)
                r.problem(
                    at,
                    f"FMU {name!r} has no variable {var!r}"
                    + (
                        f" (did you mean {close[0]!r}?)"
                        if close
                        else choices_hint(var, settable, "parameters and inputs")
                    ),
                )
            elif vars_[var].causality not in ("parameter", "input"):
                r.problem(
                    at, f"{name}.{var} is {_a(vars_[var].causality)}: only parameters and inputs take start values"
                )
            elif not _fits(vars_[var].type, value):
                r.problem(at, f"{name}.{var} is {vars_[var].type}, got {brief(value)}")
        if entry.builtin == "pid":
            loose = [n for n, v in vars_.items() if v.causality == "input" and (name, n) not in driven]
            if loose:
                r.problem(
                    ("cosim", "fmus", name),
                    "the builtin pid's input(s) "
                    f"{', '.join(f'{name}.{n}' for n in loose)} are not connected "
                    f"(e.g. [mbs.{loose[0]}, {name}.{loose[0]}])",
                )
    if scn.controller and not any(e.builtin == "pid" for e in spec.fmus.values()):
        r.problem(
            ("controller",),
            "a co-simulation runs no in-process controller: add {builtin: pid} to cosim.fmus "
            "(and connect it), or remove controller",
        )
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


def pid_units(model, gains) -> dict[str, tuple[str, str, str]]:
    """joint -> (q, qd, tau) units of the controlled joints (revolute or prismatic)."""
    types = {b.joint.name: b.joint.type for b in model.spec.bodies}
    return {j: ("m", "m/s", "N") if types.get(j) == "prismatic" else ("rad", "rad/s", "N.m") for j in gains}


__all__ = ["TYPES", "Var", "check_cosim", "interfaces", "pid_units"]
