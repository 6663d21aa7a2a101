"""Model files (YAML or JSON) to ModelSpec, reporting every problem with its file line.

The schema is documented in docs/reference/model-file.md. Parsing keeps a map from each value's
path (keys and list indices) to its 1-based line, so later checks can point into the file too.
JSON files have no line map: their problems name the field path only.
"""

from __future__ import annotations

import gc
import json
import math
import re
from pathlib import Path

import yaml
from yaml.constructor import ConstructorError
from yaml.events import (
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
    StreamStartEvent,
)

from ..engine.spec.description import Body, Joint, ModelSpec, NamedPose, Origin, Spring
from ..engine.spec.elements import parse_forces, parse_wheels
from ..engine.spec.loops import parse_loops
from ..engine.spec.repair import OPTION as REPAIR_OPTION
from ..engine.spec.repair import advice as repair_advice
from ..engine.spec.repair import repair_inertia
from ..engine.spec.topology import build_topology
from ..engine.spec.validation import check_spec
from ..errors import ModelError, Problem
from ..files import read_text
from .reader import Reader, describe

SCHEMA_VERSION = 1
TOP_KEYS = ("version", "name", "gravity", "bodies", "forces", "loops", "initial", "named_poses", REPAIR_OPTION)
BODY_KEYS = ("name", "parent", "joint", "mass", "com", "inertia", "frames", "wheels")
JOINT_KEYS = ("name", "type", "axis", "origin", "spring", "actuated")
ORIGIN_KEYS = ("xyz", "rpy")
SPRING_KEYS = ("k", "d", "q0")
INERTIA_KEYS = ("Ixx", "Iyy", "Izz", "Ixy", "Ixz", "Iyz")
MERGE_TAG = "tag:yaml.org,2002:merge"


BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser: ~10x faster on 10k-body files


class _Loader(BaseLoader):
    """SafeLoader (libyaml's parser where PyYAML has it) that reads 1e-3 as a number (YAML 1.2)
    and reports a bad tagged scalar (``!!int x``, the date 2001-02-30) as a YAML error with its
    line. A duplicate key's last value is read; ``_node_lines`` reports every duplicate."""

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, LookupError, AttributeError, ArithmeticError) as e:
            # PyYAML's scalar constructors raise these bare, without a file position
            tag = node.tag.rsplit(":", 1)[-1]
            raise ConstructorError(
                None, None, f"cannot read {describe(node.value)} as {tag} ({e})", node.start_mark
            ) from None


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"), list("-+0123456789")
)


def parse_file(path: str | Path) -> tuple[object, dict]:
    """The document at ``path`` and its path -> line map; ModelError on unreadable/broken files
    (listing every duplicate key)."""
    data, lines, duplicates = read_document(path)
    if duplicates:
        raise ModelError(duplicates, str(path))
    return data, lines


def read_document(path: str | Path) -> tuple[object, dict, list[Problem]]:
    """The document at ``path``, its path -> line map and the problem of every duplicate key of a
    YAML file (the document holds each one's last value), so that a loader reports them with the
    file's other problems, in one round; ModelError on unreadable/broken files."""
    path = Path(path)
    try:
        text = read_text(path)
    except (OSError, UnicodeDecodeError) as e:
        why = getattr(e, "strerror", None) or e
        raise ModelError([Problem((), f"cannot read the file: {why}")], str(path)) from None
    try:
        if path.suffix.lower() == ".json":
            return json.loads(text, object_pairs_hook=_json_object), {}, []
        return _parse_yaml(text)
    except json.JSONDecodeError as e:
        raise ModelError([Problem((), f"broken JSON: {e.msg}", e.lineno)], str(path)) from None
    except ValueError as e:  # json: a duplicate key, an integer of more than 4300 digits
        raise ModelError([Problem((), f"broken JSON: {e}")], str(path)) from None
    except yaml.YAMLError as e:
        raise ModelError([_yaml_problem(e, text)], str(path)) from None
    except RecursionError:
        raise ModelError([Problem((), "lists or mappings nested too deeply")], str(path)) from None


def _parse_yaml(text: str) -> tuple[object, dict, list[Problem]]:
    """The document, its line map and its duplicate keys (``_plain``, else PyYAML's path)."""
    loader = _Loader(text)
    collecting = gc.isenabled()
    gc.disable()  # what _plain builds holds no cycles: the collector's passes over it find nothing
    try:  # the common document from the parser's events in one pass: 0.5 s for 10k bodies, where
        # composing nodes took 4.0 s (most of it the garbage collector's passes over 500k nodes)
        return (*_plain(loader), [])
    except (_NotPlain, yaml.YAMLError):
        pass  # anchors, merge keys, tags, duplicate keys, bad scalars, broken files: PyYAML's path
    finally:
        if collecting:
            gc.enable()
        loader.dispose()
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
        lines: dict = {}
        duplicates: list[Problem] = []
        _node_lines(node, (), lines, loader, set(), duplicates)
        return data, lines, duplicates
    finally:
        loader.dispose()


class _NotPlain(Exception):
    """A document ``_plain`` leaves to PyYAML's composer and constructor (which report its errors)."""


_PLAIN_SCALARS = {  # resolved tag -> SafeConstructor method of the plain scalars a model file holds
    "tag:yaml.org,2002:str": None,
    "tag:yaml.org,2002:float": "construct_yaml_float",
    "tag:yaml.org,2002:int": "construct_yaml_int",
    "tag:yaml.org,2002:bool": "construct_yaml_bool",
    "tag:yaml.org,2002:null": "construct_yaml_null",
}
_MAX_DEPTH = 100  # deeper documents take PyYAML's path (which reports them): model files nest < 10 deep
_KEY = object()  # a mapping awaiting its next key


def _plain(loader) -> tuple[object, dict]:
    """The document in ``loader``'s event stream and its map of the 1-based line of every key and list
    item (and of the document, at path ()), as PyYAML's construct_document + _node_lines give them, in
    one pass over the parser's events without composing nodes; _NotPlain where the document uses what
    only PyYAML's composer and constructor handle: anchors and aliases, explicit tags, merge keys,
    duplicate or non-scalar keys, scalars resolving to other types (dates), a scalar its type's
    constructor refuses, more than one document, nesting deeper than _MAX_DEPTH.

    Each distinct plain scalar is resolved (PyYAML's implicit resolvers, YAML 1.1 plus 1e-3 as a
    float) and constructed once: ``known`` maps its text to its value (most texts repeat: keys,
    numbers). Quoted and block scalars are text, as PyYAML's resolver makes them."""
    get, known, lines = loader.get_event, {}, {}
    if type(get()) is not StreamStartEvent:
        raise _NotPlain
    event = get()
    if type(event) is StreamEndEvent:
        return None, lines
    if type(event) is not DocumentStartEvent:
        raise _NotPlain
    stack: list = []  # (container, its path, the key it awaits) of the containers being filled
    into, path, key, root = None, (), _KEY, None
    while True:
        event = get()
        kind = type(event)
        if kind is ScalarEvent:  # the most frequent event first
            if event.anchor is not None or event.tag is not None:
                raise _NotPlain
            text = event.value
            if not event.implicit[0]:
                value = text
            elif text in known:
                value = known[text]
            else:
                value = known[text] = _scalar(loader, text)
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            into, path, key = stack.pop()
            continue
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.anchor is not None or event.tag is not None:
                raise _NotPlain
            value = {} if kind is MappingStartEvent else []
        elif kind is DocumentEndEvent:
            break
        else:
            raise _NotPlain
        if into is None:
            root, at = value, ()
            lines[at] = event.start_mark.line + 1
        elif type(into) is list:
            at = path + (len(into),)
            lines[at] = event.start_mark.line + 1
            into.append(value)
        elif key is _KEY:  # a key: the line of its value's path is the key's
            if kind is not ScalarEvent or value in into:
                raise _NotPlain
            key = value
            lines[path + (key,)] = event.start_mark.line + 1
            continue
        else:
            into[key], at, key = value, path + (key,), _KEY
        if kind is not ScalarEvent:
            if len(stack) >= _MAX_DEPTH:
                raise _NotPlain
            stack.append((into, path, key))
            into, path, key = value, at, _KEY
    if type(get()) is not StreamEndEvent:
        raise _NotPlain
    return root, lines


def _scalar(loader, text: str):
    """The value of the plain (unquoted, untagged) scalar ``text``, as PyYAML's resolver and
    SafeConstructor make it; _NotPlain for types a model file does not hold or text they refuse."""
    tag = loader.resolve(yaml.ScalarNode, text, (True, False))
    if tag not in _PLAIN_SCALARS:
        raise _NotPlain
    if _PLAIN_SCALARS[tag] is None:
        return text
    try:
        return getattr(loader, _PLAIN_SCALARS[tag])(yaml.ScalarNode(tag, text))
    except Exception:  # noqa: BLE001 - PyYAML's scalar constructors raise bare errors: its path reports them
        raise _NotPlain from None


def _json_object(pairs: list) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise ValueError(f"duplicate key {next(k for k in out if [p for p, _ in pairs].count(k) > 1)!r}")
    return out


def _yaml_problem(e: yaml.YAMLError, text: str) -> Problem:
    if isinstance(e, yaml.reader.ReaderError):
        return Problem(
            (), f"broken YAML: character #x{e.character:04x}: {e.reason}", text.count("\n", 0, e.position) + 1
        )
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    what = ", ".join(s for s in (getattr(e, "context", None), getattr(e, "problem", None)) if s) or str(e)
    return Problem((), f"broken YAML: {what}", mark.line + 1 if mark else None)


def _node_lines(node, path, lines, loader, seen, duplicates: list[Problem]) -> None:
    """lines[path] = 1-based line of every key and list item under ``node``; an aliased node's
    contents are mapped once (at its anchor), so recursive or exponential aliases stay finite.
    Every duplicate key is a problem in ``duplicates`` (its path and line; the last value is read)."""
    if node is None:
        return
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        first: dict = {}
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.tag != MERGE_TAG:
                name = loader.construct_object(k)
                key = path + (name,)
                line = k.start_mark.line + 1
                try:
                    if name in first:
                        duplicates.append(Problem(key, f"duplicate key {name!r} (also line {first[name]})", line))
                    first.setdefault(name, line)
                except TypeError:  # an unhashable key: the constructor reports it
                    pass
                lines[key] = line
                _node_lines(v, key, lines, loader, seen, duplicates)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            _node_lines(v, path + (i,), lines, loader, seen, duplicates)


def spec_from_dict(
    data, lines: dict | None = None, source: str = "<dict>", repair_hint: str | None = None, problems=()
) -> ModelSpec:
    """Build a ModelSpec from a parsed document; ModelError lists every problem. With
    ``repair_inertia: true`` the moving bodies' non-physical inertias are repaired (engine/spec/
    repair.py; each change a note); repair_hint: the advice a non-physical inertia's message
    ends with (default: for ``source``'s file kind); problems: found before (duplicate keys,
    ``read_document``), listed with the document's own.

    When the document has problems of form (types, keys, sizes), the checks of meaning (names,
    tree, mass properties) also run on what could be read, so one error lists both; their
    findings at or under a field that could not be read are left out."""
    if isinstance(data, dict) and "model" in data and "bodies" not in data:
        raise ModelError.wrong_kind(source, scenario_not_model(data, source))
    r = Reader(lines or {})
    r.problems += problems
    doc = r.mapping(data, (), TOP_KEYS, required=("version", "bodies"))
    if "version" in doc and (isinstance(doc["version"], bool) or doc["version"] != SCHEMA_VERSION):
        r.problem(
            ("version",),
            f"unsupported model schema version: got {describe(doc['version'])}, "
            f"this mbsfmu reads version {SCHEMA_VERSION}",
        )
    name = r.string(doc["name"], ("name",)) if "name" in doc else Path(source).stem
    gravity = r.vector(doc.get("gravity", [0.0, 0.0, -9.81]), ("gravity",), 3)
    bodies = []
    if "bodies" in doc:
        if not isinstance(doc["bodies"], list) or not doc["bodies"]:
            r.problem(("bodies",), f"expected a non-empty list of bodies, got {describe(doc['bodies'])}")
        else:
            bodies = [_body(r, b, ("bodies", k)) for k, b in enumerate(doc["bodies"])]
    init = r.mapping(doc.get("initial", {}), ("initial",), ("q", "qd"))
    spec = ModelSpec(
        name=name,
        bodies=tuple(bodies),
        gravity=gravity,
        initial_q=initial_state(r, init.get("q", {}), ("initial", "q")),
        initial_qd=initial_state(r, init.get("qd", {}), ("initial", "qd")),
        named_poses=named_poses(r, doc.get("named_poses", {}), ("named_poses",)),
        forces=parse_forces(r, doc["forces"]) if "forces" in doc else (),
        loops=parse_loops(r, doc["loops"]) if "loops" in doc else (),
    )
    repair = doc.get(REPAIR_OPTION, False)
    if not isinstance(repair, bool):
        r.problem((REPAIR_OPTION,), f"expected true or false, got {describe(repair)}")
    elif repair:
        spec, _repairs = repair_inertia(spec)
    if r.problems:
        # the checks of the whole spec, but for fields already reported (or inside them, or holding
        # them): sets of the paths and their prefixes keep this linear in the problems (an alias
        # bomb has thousands; the pairwise comparison took 20 s for 1,500 bodies)
        unread = {p.path for p in r.problems}
        holding = {u[:k] for u in unread for k in range(len(u) + 1)}
        hint = repair_advice(source) if repair_hint is None else repair_hint
        for p in check_spec(spec, hint) + build_topology(spec.bodies)[1]:
            inside = any(p.path[:k] in unread for k in range(len(p.path) + 1))
            if not inside and p.path not in holding:
                r.problem(p.path, p.message)
        raise ModelError(sorted(r.problems, key=lambda p: math.inf if p.line is None else p.line), source)
    return spec


def scenario_not_model(doc: dict, source: str) -> str:
    """What to say when the scenario ``doc`` (read from ``source``) is given as a model file."""
    has = ", ".join(f"{k}:" for k in ("model", "duration", "dt") if k in doc)
    head = f"this is a scenario file (it has {has}), not a model file"
    run = f"`mbsfmu run {source} -o OUT` runs the scenario"
    model = doc["model"]
    if isinstance(model, dict):
        return f"{head}; its model is written in its model: section; {run}"
    if not isinstance(model, str) or not model:
        return f"{head}; {run}"
    path = Path(source).parent / model
    if not path.is_file():
        return f"{head}; its model: names {path}, which is not a file; {run}"
    return f"{head}; its model is {path}: give that file instead (`mbsfmu info {path}` describes it); {run}"


def _body(r: Reader, raw, at) -> Body:
    b = r.mapping(raw, at, BODY_KEYS, required=("name", "parent", "joint"))
    name = r.string(b["name"], at + ("name",)) if "name" in b else f"<body {at[-1]}>"
    parent = r.string(b["parent"], at + ("parent",)) if "parent" in b else "world"
    joint = _joint(r, b["joint"], at + ("joint",), name) if "joint" in b else Joint(name, "fixed")
    mass = r.number(b.get("mass", 0.0), at + ("mass",))
    com = r.vector(b.get("com", [0.0, 0.0, 0.0]), at + ("com",), 3)
    inertia = _inertia(r, b.get("inertia", {}), at + ("inertia",))
    frames = {}
    raw_frames = b.get("frames", {})
    if not isinstance(raw_frames, dict):
        r.problem(
            at + ("frames",),
            f"expected a mapping of frame name to [x, y, z] or {{xyz, rpy}}, got {describe(raw_frames)}",
        )
        raw_frames = {}
    for fname, fr in raw_frames.items():
        fat = at + ("frames", fname)
        if not isinstance(fname, str) or not fname:
            r.problem(fat, f"frame names must be non-empty text, got {describe(fname)}")
        else:
            frames[fname] = _origin(r, fr, fat) if isinstance(fr, dict) else Origin(xyz=r.vector(fr, fat, 3))
    wheels = parse_wheels(r, b["wheels"], at + ("wheels",)) if "wheels" in b else ()
    return Body(
        name=name, parent=parent, joint=joint, mass=mass, com=com, inertia=inertia, frames=frames, wheels=wheels
    )


def _joint(r: Reader, raw, at, body_name) -> Joint:
    j = r.mapping(raw, at, JOINT_KEYS, required=("type",))
    jname = r.string(j["name"], at + ("name",)) if "name" in j else body_name
    jtype = r.string(j["type"], at + ("type",)) if "type" in j else "fixed"
    axis = r.vector(j.get("axis", [0.0, 0.0, 1.0]), at + ("axis",), 3)
    origin = _origin(r, j.get("origin", {}), at + ("origin",))
    spring = None
    if "spring" in j:
        s = r.mapping(j["spring"], at + ("spring",), SPRING_KEYS)
        spring = Spring(**{k: r.number(s.get(k, 0.0), at + ("spring", k)) for k in SPRING_KEYS})
    actuated = j.get("actuated")
    if actuated is not None and not isinstance(actuated, bool):
        r.problem(at + ("actuated",), f"expected true or false, got {describe(actuated)}")
        actuated = None
    return Joint(name=jname, type=jtype, axis=axis, origin=origin, spring=spring, actuated=actuated)


def _origin(r: Reader, raw, at) -> Origin:
    o = r.mapping(raw, at, ORIGIN_KEYS)
    return Origin(
        xyz=r.vector(o.get("xyz", [0.0, 0.0, 0.0]), at + ("xyz",), 3),
        rpy=r.vector(o.get("rpy", [0.0, 0.0, 0.0]), at + ("rpy",), 3),
    )


def _inertia(r: Reader, raw, at):
    """{Ixx, Iyy, Izz, Ixy, Ixz, Iyz} (missing entries 0) or a 3x3 matrix, about the CoM."""
    if isinstance(raw, list):
        if len(raw) != 3:
            r.problem(at, f"expected a 3x3 matrix (3 rows of 3 numbers) or {{Ixx, ...}}, got {len(raw)} rows")
            return ((0.0, 0.0, 0.0),) * 3
        return tuple(r.vector(row, at + (k,), 3) for k, row in enumerate(raw))
    m = r.mapping(raw, at, INERTIA_KEYS)
    v = {k: r.number(m.get(k, 0.0), at + (k,)) for k in INERTIA_KEYS}
    return ((v["Ixx"], v["Ixy"], v["Ixz"]), (v["Ixy"], v["Iyy"], v["Iyz"]), (v["Ixz"], v["Iyz"], v["Izz"]))


def named_poses(r: Reader, raw, at) -> dict[str, NamedPose]:
    """A ``named_poses`` section ({pose name: {joint: value or [values]}}) as {name: NamedPose};
    problems go to r."""
    if not isinstance(raw, dict):
        r.problem(at, f"expected a mapping of pose name to {{joint: value}}, got {describe(raw)}")
        return {}
    out = {}
    for name, q in raw.items():
        if not isinstance(name, str) or not name:
            r.problem(at + (name,), f"pose names must be non-empty text, got {describe(name)}")
        elif not isinstance(q, dict) or not q:
            r.problem(at + (name,), f"expected a non-empty mapping of joint name to value(s), got {describe(q)}")
        else:
            out[name] = NamedPose(q=initial_state(r, q, at + (name,)))
    return out


def initial_state(r: Reader, raw, at) -> dict:
    """An ``initial`` section ({joint: value or [values]}) as {joint: tuple of floats}; problems go to r."""
    if not isinstance(raw, dict):
        r.problem(at, f"expected a mapping of joint name to value(s), got {describe(raw)}")
        return {}
    out = {}
    for jname, val in raw.items():
        if not isinstance(jname, str):
            r.problem(at + (jname,), f"expected a joint name, got {describe(jname)}")
        elif isinstance(val, (list, tuple)):
            out[jname] = tuple(r.number(x, at + (jname, k)) for k, x in enumerate(val))
        else:
            out[jname] = (r.number(val, at + (jname,)),)
    return out
