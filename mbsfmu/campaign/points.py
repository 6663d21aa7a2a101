"""Parameter paths of a campaign: which scenario or model number a drawn or grid value replaces.

One addressing for ``mbsfmu sweep`` and ``mbsfmu montecarlo``:

- model parameters (mbsfmu/engine/spec/edits.py): ``body.<name>.mass`` [kg], ``body.<name>.com[k]`` [m],
  ``body.<name>.inertia.Ixx|Iyy|Izz|Ixy|Ixz|Iyz`` [kg m^2], ``gravity[k]`` [m/s^2],
  ``joint.<name>.spring.k|d|q0``;
- initial state: ``initial.q.<joint>`` / ``initial.qd.<joint>`` (1-DoF joints) or
  ``initial.q.<joint>[k]`` (k = 1.., a component of a joint whose full initial value the scenario
  sets) [rad, m, rad/s, m/s];
- input schedules: ``inputs.<input>.<param>``, a number of the schedule (``inputs.q1.tau.value``,
  ``inputs.q1.tau.amplitude``, ``inputs.q1.tau.t0``; see mbsfmu/sim/schedules.py).

A point is {path: value}; ``apply_point`` gives the scenario that runs it.
"""

from __future__ import annotations

import re
from dataclasses import replace

from ..errors import InputError, MbsError
from ..sim.schedules import KINDS, Schedule

_INITIAL = re.compile(r"initial\.(?P<key>qd|q)\.(?P<joint>[^\[\]]+?)(?:\[(?P<k>[1-9][0-9]*)\])?")
_INPUT = re.compile(r"inputs\.(?P<name>.+)\.(?P<param>[A-Za-z0-9_]+)")


def apply_point(scn, point: dict[str, float]):
    """The scenario ``scn`` with every path of ``point`` set to its value (plots off: a campaign
    draws its own picture). InputError names a path that addresses nothing."""
    edits, init = list(scn.edits), {"q": dict(scn.initial_q), "qd": dict(scn.initial_qd)}
    inputs = dict(scn.inputs)
    for path, value in point.items():
        value = float(value)
        m = _INITIAL.fullmatch(path)
        if m:
            dest = init[m["key"]]
            if m["k"] is None:
                dest[m["joint"]] = [value]
                continue
            k = int(m["k"]) - 1
            base = dest.get(m["joint"])
            if base is None or k >= len(base):
                raise InputError(
                    f"parameter {path!r}: set initial.{m['key']}.{m['joint']} (all its values) in the "
                    f"scenario to disperse component {k + 1} of it"
                )
            dest[m["joint"]] = [*base[:k], value, *base[k + 1 :]]
            continue
        m = _INPUT.fullmatch(path)
        if m:
            sched = inputs.get(m["name"])
            if sched is None:
                raise InputError(
                    f"parameter {path!r}: the scenario has no input {m['name']!r}"
                    f"; inputs: {', '.join(inputs) or 'none'}"
                )
            if m["param"] not in KINDS[sched.kind] or sched.kind in ("table", "csv"):
                numbers = ", ".join(KINDS[sched.kind]) if sched.kind not in ("table", "csv") else "none"
                raise InputError(
                    f"parameter {path!r}: a {sched.kind} schedule has no number {m['param']!r}; numbers: {numbers}"
                )
            inputs[m["name"]] = Schedule(sched.kind, {**sched.params, m["param"]: value})
            continue
        edits.append((path, value))
    return replace(scn, edits=tuple(edits), initial_q=init["q"], initial_qd=init["qd"], inputs=inputs, plots=False)


def check_paths(scn, paths) -> None:
    """Refuse paths that address nothing in ``scn`` (InputError listing every problem), before
    any run starts. Only the addressing is checked: a value that makes an invalid model (a drawn
    negative mass) is that run's error, in its row."""
    from ..engine.spec.edits import edit_spec
    from ..scenario.run import build_simulator

    problems = []
    sim = build_simulator(scn)  # the nominal scenario itself must build
    model = sim.model
    for path in paths:
        try:
            apply_point(scn, {path: 1.0})
        except InputError as e:
            problems.append(str(e))
            continue
        m = _INITIAL.fullmatch(path)
        if m and m["joint"] not in model.joint_index:
            problems.append(f"parameter {path!r}: no joint {m['joint']!r}; joints: {', '.join(model.joint_names)}")
        elif m and m["k"] is None:
            sl = (model.q_slice if m["key"] == "q" else model.v_slice)(m["joint"])
            if sl.stop - sl.start != 1:
                problems.append(
                    f"parameter {path!r}: joint {m['joint']!r} takes {sl.stop - sl.start} values; "
                    f"address one of them as {path}[k]"
                )
        elif not m and not _INPUT.fullmatch(path):
            try:
                edit_spec(model.spec, path, 1.0)
            except MbsError as e:
                problems.append(str(e))
    if len(problems) == 1:
        raise InputError(f"scenario {scn.path}: {problems[0]}")
    if problems:
        raise InputError(f"scenario {scn.path}: {len(problems)} parameter problems:\n  " + "\n  ".join(problems))
