"""SRDF group states (MoveIt's semantic robot description) as named poses of a URDF model: each
``<group_state name group>`` with its ``<joint name value>`` entries becomes a NamedPose (joint
values in the model's q order, quaternions (w, x, y, z) last, as in a model file's
``named_poses``). Every problem names the SRDF file's line; the rest of the SRDF (groups, disabled
collisions, end effectors) is left to MoveIt."""

from __future__ import annotations

import math
from pathlib import Path
from xml.parsers import expat

from ..engine import joints
from ..engine.spec.description import ModelSpec, NamedPose
from ..errors import Problem, did_you_mean
from ..files import read_bytes
from .xml_lines import parse_xml


def read_srdf(path: str | Path, spec: ModelSpec) -> tuple[dict[str, NamedPose], list[Problem]]:
    """The group states of the SRDF file ``path`` for the joints of ``spec`` by name, and the
    problems found (unreadable file, unknown joints, values that are not nq finite numbers,
    a pose name given twice)."""
    try:
        root, lines = parse_xml(read_bytes(Path(path)))
    except OSError as e:
        return {}, [Problem((), f"cannot read the SRDF file: {e.strerror or e}")]
    except expat.ExpatError as e:
        return {}, [Problem((), f"broken XML: {expat.errors.messages[e.code]} (column {e.offset + 1})", e.lineno)]
    problems: list[Problem] = []
    if root.tag != "robot":
        return {}, [Problem((f"<{root.tag}>",), "the root element of an SRDF file must be <robot>", lines.get(root))]
    jtypes = {b.joint.name: b.joint.type for b in spec.bodies}
    poses: dict[str, NamedPose] = {}
    first: dict[str, int | None] = {}
    for el in root.findall("group_state"):
        name, group = el.get("name", "").strip(), el.get("group", "").strip()
        label = f"group_state {name!r}"
        if not name:
            problems.append(Problem(("group_state",), "missing attribute 'name'", lines.get(el)))
            continue
        if name in first:
            why = f"the name {name!r} is given twice (also line {first[name]}): names must be unique"
            problems.append(Problem((label,), why, lines.get(el)))
            continue
        first[name] = lines.get(el)
        q: dict[str, tuple[float, ...]] = {}
        for j in el.findall("joint"):
            jname = j.get("name", "").strip()
            at = (f"{label} joint {jname!r}",)
            if jname not in jtypes:
                why = (
                    f"unknown joint {jname!r}" + did_you_mean(jname, jtypes) + " (a fixed joint takes no value)"
                    if jname
                    else "missing attribute 'name'"
                )
                problems.append(Problem(at, why, lines.get(j)))
                continue
            nq = joints.NQ[joints.JOINT_TYPES[jtypes[jname]]] if jtypes[jname] in joints.JOINT_TYPES else 1
            raw = j.get("value", "")
            try:
                values = tuple(float(v) for v in raw.split())
            except ValueError:
                values = ()
            if len(values) != nq or not all(map(math.isfinite, values)):
                problems.append(Problem(at, f"expected {nq} finite number(s) in 'value', got {raw!r}", lines.get(j)))
                continue
            q[jname] = values
        if not q:
            problems.append(Problem((label,), "no joint values (<joint name value/>)", lines.get(el)))
            continue
        poses[name] = NamedPose(q=q, group=group)
    return poses, problems
