"""Conservation, constraint, real-time and command diagnostics as pure functions (no rclpy): each
returns a ``Status`` (name, level, message, key/values) that ``node.py`` copies into a
diagnostic_msgs/DiagnosticStatus.

The conservation checks are the independent checker's (``mbsfmu.checker``,
docs/reference/cli.md, "mbsfmu check"), run on two rows: the state at the start (or the last reset) and the
current one. Each status's level compares the check's ``max_rel`` (deviation / the checker's
scale) with two thresholds: OK below ``warn``, WARN below ``error``, ERROR from ``error`` on (and
for a non-finite value).

| check | meaningful when | default warn / error (relative) |
|---|---|---|
| ``H_sys_constant`` | no external force or torque: every root joint is free, no spring anchored to the world (uniform gravity allowed: no torque about the CM) | 1e-8 / 1e-5 |
| ``P_sys_constant`` | as above and gravity zero | 1e-8 / 1e-5 |
| ``p_sys_zero`` | always (momentum about the CM, MBS Momentum Testing Eq. 9) | 1e-9 / 1e-6 |
| ``energy_balance`` | always: KE + PE - W_in - W_diss constant | 1e-8 / 1e-5 |
| ``engine_agreement`` | always: checker vs the engine's own p_sys, H_sys, R, Rdot, KE, PE | 1e-9 / 1e-6 |

Thrusters and body wrenches are external forces: when a command fires them, the momentum checks
leave OK, as they should. ``auto_checks`` picks the meaningful ones for a model.
"""  # noqa: E501 - a markdown table

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from mbsfmu.checker import CHECKS, conservation_report
from mbsfmu.errors import MbsError
from mbsfmu.sim.rows import records_row
from mbsfmu.trajectory import Trajectory

OK, WARN, ERROR, STALE = 0, 1, 2, 3
LEVEL_NAMES = {OK: "OK", WARN: "WARN", ERROR: "ERROR", STALE: "STALE"}

CONSERVATION_CHECKS = ("H_sys_constant", "P_sys_constant", "p_sys_zero", "energy_balance", "engine_agreement")
DEFAULT_THRESHOLDS: dict[str, tuple[float, float]] = {
    "H_sys_constant": (1e-8, 1e-5),
    "P_sys_constant": (1e-8, 1e-5),
    "p_sys_zero": (1e-9, 1e-6),
    "energy_balance": (1e-8, 1e-5),
    "engine_agreement": (1e-9, 1e-6),
    "constraints": (1e-8, 1e-5),  # loop closure |Phi| [m or -] and |Phidot| [m/s or 1/s], absolute
    "overrun_fraction": (0.01, 0.1),  # share of paced cycles that finished after the next deadline
}
ABOUT = {
    "H_sys_constant": "angular momentum about the system CM",
    "P_sys_constant": "total linear momentum",
    "p_sys_zero": "linear momentum about the system CM",
    "energy_balance": "energy balance KE + PE - W_in - W_diss",
    "engine_agreement": "checker vs engine momentum and energy",
}


@dataclass
class Status:
    """One diagnostic: name, level (OK, WARN, ERROR, STALE), message, key -> value strings."""

    name: str
    level: int
    message: str
    values: dict[str, str] = field(default_factory=dict)


def level_for(value: float, warn: float, error: float) -> int:
    """OK if value < warn, WARN if value < error, else ERROR (also for NaN or None)."""
    if value is None or not math.isfinite(value):
        return ERROR
    if value < warn:
        return OK
    return WARN if value < error else ERROR


def is_floating(model) -> bool:
    """True when nothing ties the system to the world: every root joint free, no spring or loop
    anchored to the world."""
    t = model.tree
    from mbsfmu.engine.joints import FREE

    roots_free = all(int(t.jtype[i]) == FREE for i in range(1, model.N + 1) if int(model.L[i]) == 0)
    springs = any(getattr(el, "a", None) is not None and "world" in (el.a.body, el.b.body) for el in model.spec.forces)
    loops = any("world" in (c.a.body, c.b.body) for c in getattr(model.spec, "loops", ()))
    return roots_free and not springs and not loops


def auto_checks(model) -> list[str]:
    """The conservation checks that hold for a model without inputs (see the module table)."""
    checks = []
    if is_floating(model):
        checks.append("H_sys_constant")
        if not np.any(model.gravity != 0):
            checks.append("P_sys_constant")
    return checks + ["p_sys_zero", "energy_balance", "engine_agreement"]


def resolve_checks(requested: Sequence[str], model) -> list[str]:
    """Check names from the ``checks`` parameter: names from CONSERVATION_CHECKS, "auto" for
    ``auto_checks``, "none" for none. ValueError names an unknown entry."""
    out: list[str] = []
    for name in requested:
        if name == "auto":
            out += [c for c in auto_checks(model) if c not in out]
        elif name == "none":
            continue
        elif name in CONSERVATION_CHECKS:
            if name not in out:
                out.append(name)
        else:
            raise ValueError(
                f"checks: unknown check {name!r}; expected auto, none or any of {', '.join(CONSERVATION_CHECKS)}"
            )
    return out


def checker_row(sim, t: float | None = None) -> dict[str, float]:
    """One checker row (column format of mbsfmu/trajectory.py) from the simulator's current
    state: time [s], body/wheel/spring records, engine.* invariants and work (mbsfmu/sim/rows.py)."""
    return records_row(sim, t)


def _fmt(x) -> str:
    return "nan" if x is None else f"{x:.6g}"


def conservation_statuses(
    ref: Mapping[str, float],
    row: Mapping[str, float],
    checks: Sequence[str],
    thresholds: Mapping[str, tuple[float, float]],
) -> list[Status]:
    """One Status per check: the independent checker on the rows [ref, row] (ref: the start or
    last reset), level from the check's max_rel and its (warn, error) thresholds."""
    if not checks:
        return []
    if row["time"] == ref["time"]:
        row = {**row, "time": ref["time"] + 1e-9}  # the checker wants increasing time
    names = [c for c in ref if c in row]
    rows = [[ref[c] for c in names], [row[c] for c in names]]
    report = conservation_report(Trajectory.from_rows(names, rows, "<diagnostics>"), list(checks), procedure=1)
    out = []
    for name in checks:
        e = report["checks"][name]
        warn, error = thresholds[name]
        rel = e["max_rel"]
        level = level_for(rel, warn, error)
        what = ABOUT[name]
        if e.get("not_computable"):  # the checker could not compute it: an error, said as such
            msg = f"{what}: not computable: {e['not_computable']}"
        elif level == OK:
            msg = f"{what}: relative deviation {_fmt(rel)} < {warn:g}"
        else:
            msg = f"{what}: relative deviation {_fmt(rel)} >= {warn if level == WARN else error:g}" + (
                " (external force or torque acting?)" if name in ("H_sys_constant", "P_sys_constant") else ""
            )
        values = {
            "max_rel": _fmt(rel),
            "max_abs": _fmt(e["max_abs"]),
            "unit": e["unit"],
            "scale": _fmt(e["scale"]),
            "warn": f"{warn:g}",
            "error": f"{error:g}",
            "since_t": f"{ref['time']:.9f}",
            "quantity": CHECKS[name].quantity,
        }
        if name == "engine_agreement":
            values["worst"] = str(e.get("worst"))
        out.append(Status(name, level, msg, values))
    return out


@dataclass(frozen=True)
class EngineSnapshot:
    """What the engine's statuses of one model need, copied from the simulator in the cycle (the
    checks then run on it elsewhere, ``engine_statuses``): the checker rows at the reference (start
    or last reset) and now, the checks, the closed loops' outputs, and the prefix of the statuses'
    names ("" for the node's model, "<robot>: " in a world)."""

    ref: Mapping[str, float]
    row: Mapping[str, float]
    checks: tuple[str, ...]
    loop_outputs: Mapping[str, Mapping]
    label: str = ""


def engine_snapshot(sim, ref: Mapping[str, float], checks: Sequence[str], label: str = "") -> EngineSnapshot:
    """The EngineSnapshot of ``sim``'s current state (``checker_row``, ``Simulator.loop_outputs``)."""
    return EngineSnapshot(ref, checker_row(sim), tuple(checks), sim.loop_outputs(), label)


def engine_statuses(snapshots: Sequence[EngineSnapshot], thresholds: Mapping[str, tuple[float, float]]) -> list[Status]:
    """Conservation (``conservation_statuses``) and constraint (``constraint_status``) statuses of
    each snapshot, named with its label; a checker failure is an ERROR status saying so."""
    out: list[Status] = []
    for snap in snapshots:
        try:
            statuses = conservation_statuses(snap.ref, snap.row, snap.checks, thresholds)
            c = constraint_status(snap.loop_outputs, *thresholds["constraints"])
        except (MbsError, FloatingPointError, ValueError) as e:
            out.append(Status(f"{snap.label}conservation", ERROR, f"checker failed: {e}"))
            continue
        for st in statuses + ([c] if c is not None else []):
            out.append(Status(f"{snap.label}{st.name}", st.level, st.message, st.values))
    return out


def constraint_status(loop_outputs: Mapping[str, Mapping], warn: float, error: float) -> Status | None:
    """Loop-closure violation: worst |Phi| and |Phidot| over the loops (absolute); None without loops."""
    if not loop_outputs:
        return None
    phi = max(float(v["phi"]) for v in loop_outputs.values())
    phidot = max(float(v["phidot"]) for v in loop_outputs.values())
    worst = max(phi, phidot) if math.isfinite(phi) and math.isfinite(phidot) else math.nan
    level = level_for(worst, warn, error)
    values = {f"{name}.phi": _fmt(v["phi"]) for name, v in loop_outputs.items()}
    values.update({f"{name}.phidot": _fmt(v["phidot"]) for name, v in loop_outputs.items()})
    values.update(warn=f"{warn:g}", error=f"{error:g}")
    return Status("constraints", level, f"loop closure: max |Phi| {_fmt(phi)}, max |Phidot| {_fmt(phidot)}", values)


def real_time_status(
    summary: Mapping[str, float],
    target_rtf: float,
    lock_step: bool,
    paused: bool,
    warn: float,
    error: float,
    scheduling: tuple[str, int] = ("SCHED_OTHER", 0),
) -> Status:
    """Pacing: overrun share of the cycles since the last report, lateness and work time, and the
    loop thread's scheduling (policy, priority) in effect."""
    values = {k: _fmt(v) for k, v in summary.items()}
    values["target_real_time_factor"] = f"{target_rtf:g}"
    values["scheduling"], values["thread_priority"] = scheduling[0], str(scheduling[1])
    if paused:
        return Status("real_time", OK, "paused", values)
    if lock_step:
        return Status(
            "real_time",
            OK,
            f"lock-step: {summary.get('cycles', 0):.0f} cycles since last report, "
            f"real-time factor {_fmt(summary.get('real_time_factor'))}",
            values,
        )
    if target_rtf <= 0:
        return Status(
            "real_time", OK, f"as fast as possible: real-time factor {_fmt(summary.get('real_time_factor'))}", values
        )
    frac = summary.get("overrun_fraction", 0.0)
    level = level_for(frac, warn, error) if summary.get("cycles", 0) else OK
    msg = (
        f"real-time factor {_fmt(summary.get('real_time_factor'))} (target {target_rtf:g}), "
        f"{summary.get('overruns', 0):.0f} of {summary.get('cycles', 0):.0f} cycles overran, "
        f"lateness p99 {1e3 * summary.get('lateness_p99', 0.0):.3g} ms"
    )
    return Status("real_time", level, msg, values)
