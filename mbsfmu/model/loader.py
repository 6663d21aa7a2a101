"""Model files (YAML or JSON) to ModelSpec, reporting every problem with its file line.

The schema is documented in README.md ("Model files"). Parsing keeps a map from each value's
path (keys and list indices) to its 1-based line, so later checks can point into the file too.
"""
from __future__ import annotations

import difflib
import json
import math
from pathlib import Path

import yaml

from ..errors import ModelError, Problem
from .description import Body, Joint, ModelSpec, Origin, Spring

SCHEMA_VERSION = 1
TOP_KEYS = ("version", "name", "gravity", "bodies", "initial")
BODY_KEYS = ("name", "parent", "joint", "mass", "com", "inertia", "frames")
JOINT_KEYS = ("name", "type", "axis", "origin", "spring", "actuated")
ORIGIN_KEYS = ("xyz", "rpy")
SPRING_KEYS = ("k", "d", "q0")
INERTIA_KEYS = ("Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")


class _Reader:
    """Typed access to the parsed document that records problems instead of raising."""

    def __init__(self, lines: dict):
        self.lines = lines
        self.problems: list[Problem] = []

    def problem(self, path: tuple, message: str) -> None:
        p = path
        while p and p not in self.lines:
            p = p[:-1]
        self.problems.append(Problem(path, message, self.lines.get(p)))

    def mapping(self, value, path, keys, required=()) -> dict:
        if not isinstance(value, dict):
            self.problem(path, f"expected a mapping with keys {', '.join(keys)}, got {_kind(value)}")
            return {}
        for key in value:
            if key not in keys:
                close = difflib.get_close_matches(str(key), keys, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else f"; allowed: {', '.join(keys)}"
                self.problem(path + (key,), f"unknown key {key!r}{hint}")
        for key in required:
            if key not in value:
                self.problem(path, f"missing required key {key!r}")
        return value

    def number(self, value, path, default=None):
        if value is None and default is not None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.problem(path, f"expected a number, got {_kind(value)}")
            return default if default is not None else 0.0
        if not math.isfinite(value):
            self.problem(path, f"{value} is not finite")
        return float(value)

    def vector(self, value, path, n, default=None):
        if value is None and default is not None:
            return default
        if not isinstance(value, list) or len(value) != n:
            got = f"{len(value)} entries" if isinstance(value, list) else _kind(value)
            self.problem(path, f"expected a list of {n} numbers, got {got}")
            return default if default is not None else (0.0,) * n
        return tuple(self.number(x, path + (k,)) for k, x in enumerate(value))

    def string(self, value, path, default=None):
        if value is None and default is not None:
            return default
        if not isinstance(value, str) or not value:
            self.problem(path, f"expected a non-empty name, got {_kind(value)}")
            return default or f"<invalid {path[-1]}>"
        return value


def _kind(value) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: f"the text {value!r}", bool: f"{value}"}.get(
        type(value), f"{type(value).__name__} {value!r}")


def parse_file(path: str | Path) -> tuple[object, dict]:
    """The document at ``path`` and its path -> line map; ModelError on unreadable/broken files."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError([Problem((), f"cannot read the file: {e}")], str(path)) from None
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text), {}
        except json.JSONDecodeError as e:
            raise ModelError([Problem((), f"broken JSON: {e.msg}", e.lineno)], str(path)) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        msg = f"broken YAML: {getattr(e, 'problem', None) or e}"
        raise ModelError([Problem((), msg, mark.line + 1 if mark else None)], str(path)) from None
    lines: dict = {}
    _node_lines(node, (), lines)
    return data, lines


def _node_lines(node, path, lines) -> None:
    if node is None:
        return
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = k.value
            lines[path + (key,)] = k.start_mark.line + 1
            _node_lines(v, path + (key,), lines)
            lines[path + (key,)] = k.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _node_lines(v, path + (i,), lines)


def spec_from_dict(data, lines: dict | None = None, source: str = "<dict>") -> ModelSpec:
    """Build a ModelSpec from a parsed document; ModelError lists every problem."""
    r = _Reader(lines or {})
    doc = r.mapping(data, (), TOP_KEYS, required=("version", "bodies"))
    if "version" in doc and doc["version"] != SCHEMA_VERSION:
        r.problem(("version",), f"unsupported model schema version {doc['version']!r}; this mbsfmu reads version {SCHEMA_VERSION}")
    name = r.string(doc.get("name"), ("name",), default=Path(source).stem)
    gravity = r.vector(doc.get("gravity"), ("gravity",), 3, default=(0.0, 0.0, -9.81))
    bodies_raw = doc.get("bodies", [])
    bodies = []
    if not isinstance(bodies_raw, list) or not bodies_raw:
        r.problem(("bodies",), f"expected a non-empty list of bodies, got {_kind(bodies_raw)}")
    else:
        bodies = [_body(r, b, ("bodies", k)) for k, b in enumerate(bodies_raw)]
    init_q, init_qd = {}, {}
    if "initial" in doc:
        init = r.mapping(doc["initial"], ("initial",), ("q", "qd"))
        init_q = _initial(r, init.get("q", {}), ("initial", "q"))
        init_qd = _initial(r, init.get("qd", {}), ("initial", "qd"))
    if r.problems:
        raise ModelError(r.problems, source)
    return ModelSpec(name=name, bodies=tuple(bodies), gravity=gravity, initial_q=init_q, initial_qd=init_qd)


def _body(r: _Reader, raw, at) -> Body:
    b = r.mapping(raw, at, BODY_KEYS, required=("name", "parent", "joint"))
    name = r.string(b.get("name"), at + ("name",), default=None) if "name" in b else f"<body {at[-1]}>"
    parent = r.string(b.get("parent"), at + ("parent",)) if "parent" in b else "world"
    joint = _joint(r, b.get("joint", {}), at + ("joint",), name) if "joint" in b else Joint(name, "fixed")
    mass = r.number(b.get("mass", 0.0), at + ("mass",))
    com = r.vector(b.get("com", [0.0, 0.0, 0.0]), at + ("com",), 3)
    inertia = _inertia(r, b.get("inertia"), at + ("inertia",))
    frames = {}
    if "frames" in b:
        raw_frames = b["frames"]
        if not isinstance(raw_frames, dict):
            r.problem(at + ("frames",), f"expected a mapping of frame name to [x, y, z] or {{xyz, rpy}}, got {_kind(raw_frames)}")
        else:
            for fname, fr in raw_frames.items():
                fat = at + ("frames", fname)
                if not isinstance(fname, str) or not fname:
                    r.problem(fat, f"frame names must be non-empty text, got {_kind(fname)}")
                    continue
                frames[fname] = _origin(r, fr, fat) if isinstance(fr, dict) else Origin(xyz=r.vector(fr, fat, 3))
    return Body(name=name, parent=parent, joint=joint, mass=mass, com=com, inertia=inertia, frames=frames)


def _joint(r: _Reader, raw, at, body_name) -> Joint:
    j = r.mapping(raw, at, JOINT_KEYS, required=("type",))
    jname = r.string(j.get("name"), at + ("name",)) if "name" in j else body_name
    jtype = r.string(j.get("type"), at + ("type",)) if "type" in j else "fixed"
    axis = r.vector(j.get("axis", [0.0, 0.0, 1.0]), at + ("axis",), 3)
    origin = _origin(r, j["origin"], at + ("origin",)) if "origin" in j else Origin()
    spring = None
    if "spring" in j:
        s = r.mapping(j["spring"], at + ("spring",), SPRING_KEYS)
        spring = Spring(**{k: r.number(s.get(k, 0.0), at + ("spring", k)) for k in SPRING_KEYS})
    actuated = j.get("actuated", True)
    if not isinstance(actuated, bool):
        r.problem(at + ("actuated",), f"expected true or false, got {_kind(actuated)}")
        actuated = True
    return Joint(name=jname, type=jtype, axis=axis, origin=origin, spring=spring, actuated=actuated)


def _origin(r: _Reader, raw, at) -> Origin:
    o = r.mapping(raw, at, ORIGIN_KEYS)
    return Origin(xyz=r.vector(o.get("xyz", [0.0, 0.0, 0.0]), at + ("xyz",), 3),
                  rpy=r.vector(o.get("rpy", [0.0, 0.0, 0.0]), at + ("rpy",), 3))


def _inertia(r: _Reader, raw, at):
    if raw is None:
        return ((0.0, 0.0, 0.0),) * 3
    if isinstance(raw, list):
        if len(raw) != 3:
            r.problem(at, f"expected a 3x3 matrix (3 rows of 3 numbers) or {{Ixx, ...}}, got {len(raw)} rows")
            return ((0.0, 0.0, 0.0),) * 3
        return tuple(r.vector(row, at + (k,), 3) for k, row in enumerate(raw))
    m = r.mapping(raw, at, INERTIA_KEYS)
    v = {k: r.number(m.get(k, 0.0), at + (k,)) for k in INERTIA_KEYS}
    return ((v["Ixx"], v["Ixy"], v["Ixz"]), (v["Ixy"], v["Iyy"], v["Iyz"]), (v["Ixz"], v["Iyz"], v["Izz"]))


def _initial(r: _Reader, raw, at) -> dict:
    if not isinstance(raw, dict):
        r.problem(at, f"expected a mapping of joint name to value(s), got {_kind(raw)}")
        return {}
    out = {}
    for jname, val in raw.items():
        if isinstance(val, list):
            out[str(jname)] = tuple(r.number(x, at + (jname, k)) for k, x in enumerate(val))
        else:
            out[str(jname)] = (r.number(val, at + (jname,)),)
    return out
