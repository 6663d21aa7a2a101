"""The plan of a co-simulation (``Plan``): what a master needs, the FMU files, their variables, the
connections, start values and recorded columns resolved to variables, and the trajectory row it
builds from the values it read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..fmu.variables import variable_table
from ..scenario.cosim_section import MBS
from ..sim.rows import trajectory_row
from .errors import CosimError
from .interface import TYPES, Var

# the model FMU's values the report takes from its last step (solver counters, drift)
FINAL = ("solver.n_steps", "solver.n_rhs", "drift.H_sys", "drift.H_sys_abs", "drift.E_balance", "drift.E_balance_abs")


@dataclass
class Plan:
    """What a master needs: FMU files, variables, connections, start values, recorded columns."""

    fmus: dict  # name -> Path
    ifs: dict  # name -> {variable: Var}
    connections: list  # (src fmu, src Var, dst fmu, dst Var)
    parameters: dict  # name -> [(Var, value)]
    scheduled: list  # [(Var, Schedule)] model FMU inputs driven by the scenario's inputs
    columns: list  # [(column, Var)] model FMU values in in-process column order
    other: list  # [(column, fmu, Var)] other FMUs' outputs
    inputs: list  # [(column, Var)] model FMU inputs (u.*)
    missing: list  # in-process columns the FMU does not expose
    cached: set  # FMUs built here (extracted next to their cached file)

    def row(self, t: float, values: dict, inputs: dict) -> dict:
        """A trajectory row at t [s] from values by (fmu, vr) and the model FMU's held inputs by vr."""
        row = {"time": t}
        for c, v in self.columns:
            row[c] = inputs[v.vr] if v.causality == "input" else values[MBS, v.vr]
        for c, name, v in self.other:
            row[c] = float(values[name, v.vr])
        return row

    def reads(self, observe: bool) -> dict:
        """name -> type -> sorted value references the rows and connections need; with observe (an
        observer reads them all) also the model FMU's inputs and FINAL values."""
        reads: dict = {name: {} for name in self.fmus}

        def need(name: str, v: Var) -> None:
            reads[name].setdefault(v.type, set()).add(v.vr)

        for _c, v in self.columns:
            if v.causality != "input" or observe:
                need(MBS, v)
        for _c, name, v in self.other:
            need(name, v)
        for s, sv, _d, _dv in self.connections:
            need(s, sv)
        if observe:
            for name in FINAL:
                if name in self.ifs[MBS]:
                    need(MBS, self.ifs[MBS][name])
        return {name: {typ: sorted(vrs) for typ, vrs in by.items()} for name, by in reads.items()}

    def final_values(self, get) -> dict:
        """The model FMU's FINAL values it has, get(type, [vr]) -> [value] reading them."""
        out = {}
        for name in FINAL:
            v = self.ifs[MBS].get(name)
            if v is not None:
                out[name] = get(v.type, [v.vr])[0]
        return out


def plan_cosim(scn, fmus: dict[str, Path], ifs: dict, sim) -> Plan:
    """Connections and recorded columns resolved to variables (the built FMUs' modelDescriptions
    must match the variable tables the checks used); sim: the scenario's Simulator (column names)."""
    from fmpy import read_model_description

    for name, path in fmus.items():
        if name == MBS or scn.cosim.fmus[name].builtin:
            md = {v.name: v.valueReference for v in read_model_description(str(path)).modelVariables}
            if md != {n: v.vr for n, v in ifs[name].items()}:
                raise CosimError(
                    f"the built FMU {path} does not have the variables its checks used (stale cache?): "
                    f"delete {path.parent} and run again"
                )
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
    other = [
        (f"{name}.{v.name}", name, v)
        for name in scn.cosim.fmus
        for v in ifs[name].values()
        if v.causality == "output" and v.type in TYPES and not any(ch in v.name for ch in ',"\r\n')
    ]
    params = {name: [(ifs[name][k], value) for k, value in e.parameters.items()] for name, e in scn.cosim.fmus.items()}
    return Plan(
        fmus=fmus,
        ifs=ifs,
        connections=conns,
        parameters=params,
        scheduled=[(mbs[n], s) for n, s in scn.inputs.items()],
        columns=columns,
        other=other,
        inputs=[(c, v) for c, v in columns if c.startswith("u.")],
        missing=[c for c in row if c not in by_col and c != "time"],
        cached={name for name in fmus if name == MBS or scn.cosim.fmus[name].builtin},
    )


__all__ = ["FINAL", "Plan", "plan_cosim"]
