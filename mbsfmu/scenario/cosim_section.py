"""The ``cosim:`` section of a scenario file (docs/guides/cosimulation.md): its schema, parsed with
file lines by ``parse_cosim`` into a ``CosimSpec``. Structure only: the names are checked against
the FMUs' variables by ``mbsfmu.cosim.interface.check_cosim``, which needs the FMUs."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import brief, did_you_mean

MBS = "mbs"  # the scenario's own model FMU
SCHEMES = ("jacobi", "gauss-seidel")
BUILTINS = ("pid",)
COSIM_KEYS = ("fmus", "connections", "scheme", "order")
FMU_KEYS = ("builtin", "path", "parameters")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


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
                r.problem(
                    p + ("builtin",),
                    f"unknown builtin FMU {brief(s['builtin'])}; expected one of {', '.join(BUILTINS)}",
                )
            elif not has_controller:
                r.problem(
                    p + ("builtin",),
                    "the builtin pid takes its gains and setpoints from the scenario's "
                    "controller: section, and there is none",
                )
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
        for var, value in raw_params.items():  # booleans and integers stay (Boolean, Integer variables)
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
                r.problem(p + (e,), f"unknown FMU {fmu!r} in {text!r}" + choices_hint(fmu, known, "FMUs"))
            else:
                ends.append((fmu, var))
        if len(ends) == 2:
            connections.append(Connection(ends[0], ends[1], i))
    scheme = m.get("scheme", "jacobi")
    if scheme not in SCHEMES:
        r.problem(at + ("scheme",), f"unknown scheme {brief(scheme)}" + choices_hint(brief(scheme), SCHEMES, "schemes"))
        scheme = None
    order = (*fmus, MBS)
    if "order" in m and scheme is not None:
        raw_o = m["order"]
        if scheme != "gauss-seidel":
            r.problem(
                at + ("order",),
                f"order sets the stepping sequence of scheme gauss-seidel; this section's scheme is {scheme}",
            )
        elif not (isinstance(raw_o, list) and all(isinstance(x, str) for x in raw_o)):
            r.problem(at + ("order",), f"expected a list of the FMU names ({', '.join(known)})")
        else:
            for k, x in enumerate(raw_o):
                if x not in known:
                    r.problem(at + ("order", k), f"unknown FMU {x!r}" + choices_hint(x, known, "FMUs"))
            dup = sorted({x for x in raw_o if raw_o.count(x) > 1})
            missing = [x for x in known if x not in raw_o]
            if dup or missing:
                r.problem(
                    at + ("order",),
                    "order must name every FMU once"
                    + (f"; repeated: {', '.join(dup)}" if dup else "")
                    + (f"; missing: {', '.join(missing)}" if missing else ""),
                )
            order = tuple(raw_o)
    return CosimSpec(
        fmus=fmus, connections=tuple(connections), scheme=scheme or "jacobi", order=order, lines=dict(r.lines)
    )


def choices_hint(name: str, choices, what: str) -> str:
    """' (did you mean 'x'?)' for the closest of choices to name, else '; <what>: <the first 12>'."""
    choices = list(choices)
    return did_you_mean(name, choices) or f"; {what}: {', '.join(choices[:12])}{', ...' if len(choices) > 12 else ''}"


__all__ = ["BUILTINS", "MBS", "SCHEMES", "Connection", "CosimSpec", "FmuEntry", "choices_hint", "parse_cosim"]
