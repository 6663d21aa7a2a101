"""Model-file section ``loops``: loop-closure (cut) joints, parsed and checked.

A closed kinematic chain is described as a tree (``bodies``) plus one cut joint per independent
loop (No's method: "one of the joints in each loop may be cut so that the entire system consists of
open tree configurations"). Schema (docs/guides/closed-loops.md):

    loops:
      - name: closure                 # required, unique; names the outputs loop.<name>.*
        type: revolute                # ball | revolute | prismatic | planar
        a: {body: coupler, point: [0.6, 0, 0], rpy: [0, 0, 0]}   # cut-joint frame on body a
        b: {frame: rocker_tip}        # ... or a named frame; body "world" for the ground
        axis: [0, 0, 1]               # revolute/prismatic/planar; components in frames a and b
        independent: [crank]          # joints held by assembly; u of coordinate partitioning

The dynamics of the constraints are in ``mbsfmu/engine/dynamics/closed_loops.py``.
"""

from __future__ import annotations

import difflib
import math
import re

import numpy as np

from ...errors import Problem
from .description import WORLD, Loop, LoopSide, ModelSpec, Origin

LOOP_TYPES = ("ball", "revolute", "prismatic", "planar")
LOOP_ROWS = {"ball": 3, "revolute": 5, "prismatic": 5, "planar": 3}
LOOP_KEYS = ("name", "type", "a", "b", "axis", "independent")
SIDE_KEYS = ("body", "point", "rpy", "frame")
NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_\-]*$")  # loop names become column/variable names


def parse_loops(r, raw, at=("loops",)) -> tuple[Loop, ...]:
    """``loops: [{name, type, a, b, axis, independent}]`` (r: the loader's _Reader). Entries
    that cannot be read at all are reported and left out."""
    if not isinstance(raw, list):
        r.problem(at, f"expected a list of loop-closure joints, got {type(raw).__name__}")
        return ()
    out = []
    for k, raw_loop in enumerate(raw):
        lat = at + (k,)
        if not isinstance(raw_loop, dict):
            r.problem(lat, f"expected a mapping with keys {', '.join(LOOP_KEYS)}")
            continue
        d = r.mapping(raw_loop, lat, LOOP_KEYS, required=("name", "type", "a", "b"))
        name = r.string(d["name"], lat + ("name",)) if "name" in d else f"<loop {k}>"
        ltype = r.string(d["type"], lat + ("type",)) if "type" in d else "ball"
        independent = ()
        if "independent" in d:
            ind = d["independent"]
            if not isinstance(ind, list):
                r.problem(lat + ("independent",), f"expected a list of joint names, got {type(ind).__name__}")
            else:
                independent = tuple(r.string(j, lat + ("independent", i)) for i, j in enumerate(ind))
        out.append(
            Loop(
                name=name,
                type=ltype,
                a=_side(r, d.get("a"), lat + ("a",)),
                b=_side(r, d.get("b"), lat + ("b",)),
                axis=r.vector(d.get("axis", [0.0, 0.0, 1.0]), lat + ("axis",), 3),
                independent=independent,
            )
        )
    return tuple(out)


def _side(r, raw, at) -> LoopSide:
    if raw is None:  # missing: reported by the loop's required keys
        return LoopSide()
    s = r.mapping(raw, at, SIDE_KEYS)
    if isinstance(raw, dict) and "body" not in s and "frame" not in s:
        r.problem(at, "expected 'body' (with 'point' and 'rpy') or 'frame'")
    if "frame" in s and ("point" in s or "rpy" in s):
        r.problem(at, "give either 'frame' or 'point'/'rpy', not both: a named frame has its own origin and axes")
    return LoopSide(
        body=r.string(s["body"], at + ("body",)) if "body" in s else WORLD,
        point=r.vector(s.get("point", [0.0, 0.0, 0.0]), at + ("point",), 3),
        rpy=r.vector(s.get("rpy", [0.0, 0.0, 0.0]), at + ("rpy",), 3),
        frame=r.string(s["frame"], at + ("frame",)) if "frame" in s else None,
    )


def resolve_side(spec: ModelSpec, side: LoopSide) -> tuple[str, Origin]:
    """(body name, cut-joint frame in that body's frame) of a side; a named frame wins."""
    if side.frame is not None:
        for b in spec.bodies:
            if side.frame in b.frames:
                return b.name, b.frames[side.frame]
    return side.body, Origin(xyz=side.point, rpy=side.rpy)


def loop_joints(spec: ModelSpec, loop: Loop) -> list[str]:
    """Names of the tree joints on the loop: those between body a or b and their deepest common
    ancestor (the symmetric difference of their paths to the world). Empty if the tree is broken."""
    parent = {b.name: b.parent for b in spec.bodies}
    joint = {b.name: b.joint.name for b in spec.bodies}

    def path(body: str) -> list[str]:
        out, seen = [], set()
        while body != WORLD and body in parent and body not in seen:
            seen.add(body)
            out.append(body)
            body = parent[body]
        return out if body == WORLD else []

    pa, pb = path(resolve_side(spec, loop.a)[0]), path(resolve_side(spec, loop.b)[0])
    return [joint[b] for b in pa if b not in pb] + [joint[b] for b in pb if b not in pa]


def check_loops(spec: ModelSpec) -> list[Problem]:
    """Every problem in the ``loops`` section: names (unique, usable as output names), types,
    bodies and frames that exist, a cut joint between two different bodies with a moving joint
    between them, non-zero axes, and independent joints that exist and lie on the loop."""
    problems: list[Problem] = []
    bodies = {b.name: b for b in spec.bodies}
    frames = {f: b.name for b in spec.bodies for f in b.frames}
    jtype = {b.joint.name: b.joint.type for b in spec.bodies}
    seen: dict[str, int] = {}
    for k, loop in enumerate(spec.loops):
        at = ("loops", k)
        if loop.name in seen:
            problems.append(
                Problem(at + ("name",), f"duplicate loop name {loop.name!r} (also loops[{seen[loop.name]}])")
            )
        seen.setdefault(loop.name, k)
        if not NAME_RE.match(loop.name) and not loop.name.startswith("<"):
            problems.append(
                Problem(
                    at + ("name",),
                    f"loop name {loop.name!r} must start with a letter or '_' and hold "
                    "only letters, digits, '_' and '-' (it names outputs loop.<name>.phi ...)",
                )
            )
        if loop.type not in LOOP_TYPES:
            close = difflib.get_close_matches(loop.type, LOOP_TYPES, n=1)
            problems.append(
                Problem(
                    at + ("type",),
                    f"loop {loop.name!r}: unknown cut-joint type {loop.type!r}; expected "
                    f"one of {', '.join(LOOP_TYPES)}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                )
            )
        ends = []
        for key in ("a", "b"):
            side = getattr(loop, key)
            if side.frame is not None:
                if side.frame not in frames:
                    close = difflib.get_close_matches(side.frame, sorted(frames), n=1)
                    problems.append(
                        Problem(
                            at + (key, "frame"),
                            f"loop {loop.name!r}: unknown frame {side.frame!r}"
                            + (f" (did you mean {close[0]!r}?)" if close else ""),
                        )
                    )
                    continue
                if side.body != WORLD and side.body != frames[side.frame]:
                    problems.append(
                        Problem(
                            at + (key, "body"),
                            f"loop {loop.name!r}: frame {side.frame!r} is on body "
                            f"{frames[side.frame]!r}, not {side.body!r}",
                        )
                    )
                ends.append(frames[side.frame])
            elif side.body != WORLD and side.body not in bodies:
                close = difflib.get_close_matches(side.body, [WORLD, *bodies], n=1)
                problems.append(
                    Problem(
                        at + (key, "body"),
                        f"loop {loop.name!r}: unknown body {side.body!r}"
                        + (f" (did you mean {close[0]!r}?)" if close else ""),
                    )
                )
            else:
                ends.append(side.body)
        axis = np.asarray(loop.axis, dtype=float)
        if loop.type != "ball" and not (np.all(np.isfinite(axis)) and 1e-12 < np.linalg.norm(axis) < math.inf):
            problems.append(
                Problem(at + ("axis",), f"loop {loop.name!r}: axis {list(loop.axis)} must be a finite, non-zero vector")
            )
        for i, j in enumerate(loop.independent):
            if j not in jtype:
                close = difflib.get_close_matches(j, sorted(jtype), n=1)
                problems.append(
                    Problem(
                        at + ("independent", i),
                        f"loop {loop.name!r}: unknown joint {j!r}"
                        + (f" (did you mean {close[0]!r}?)" if close else ""),
                    )
                )
            elif jtype[j] == "fixed":
                problems.append(
                    Problem(
                        at + ("independent", i),
                        f"loop {loop.name!r}: joint {j!r} is fixed and has no coordinate to hold",
                    )
                )
            if j in loop.independent[:i]:
                problems.append(Problem(at + ("independent", i), f"loop {loop.name!r}: joint {j!r} is listed twice"))
        if len(ends) < 2:
            continue
        if ends[0] == ends[1]:
            what = "the world to itself" if ends[0] == WORLD else f"body {ends[0]!r} to itself"
            problems.append(
                Problem(at + ("b",), f"loop {loop.name!r} connects {what}: a cut joint needs two different bodies")
            )
            continue
        on_loop = loop_joints(spec, loop)
        moving = [j for j in on_loop if jtype.get(j) not in ("fixed", None)]
        if on_loop and not moving:
            problems.append(
                Problem(
                    at,
                    f"loop {loop.name!r}: no moving joint lies between {ends[0]!r} and {ends[1]!r} "
                    "(only fixed joints), so the cut joint constrains nothing or cannot close",
                )
            )
        for i, j in enumerate(loop.independent):
            if on_loop and j in jtype and j not in on_loop:
                problems.append(
                    Problem(
                        at + ("independent", i),
                        f"loop {loop.name!r}: joint {j!r} is not on the loop "
                        f"(joints on the loop: {', '.join(on_loop)})",
                    )
                )
    return problems
