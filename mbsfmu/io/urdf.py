"""URDF import: a robot description to the same ModelSpec and Model as a YAML model file, plus the
YAML overlay that adds what URDF cannot say (wheels, force elements, joint springs, gravity,
initial state).

Each URDF link becomes a body whose frame is the link frame; each joint becomes the joint of its
child link. Mass properties: the CoM is the inertial origin ``xyz``; the inertia tensor I', given
in the inertial frame rotated by ``rpy`` (R), is rotated into link axes: I = R I' R^T. A link
without <inertial> is massless (as in Pinocchio). Joint types:

| URDF       | mbsfmu                                                                        |
|------------|-------------------------------------------------------------------------------|
| revolute   | revolute (limits read and checked, not enforced: the engine has no limits)    |
| continuous | revolute                                                                      |
| prismatic  | prismatic                                                                     |
| fixed      | fixed                                                                         |
| floating   | free                                                                          |
| planar     | prismatic ``<j>_TX``, prismatic ``<j>_TY``, revolute ``<j>_RZ`` through two     |
|            | massless bodies ``<j>_TX``, ``<j>_TY`` (MuJoCo's names and plane axes)        |

<dynamics damping> becomes a joint damper Spring(k=0, d=damping) (on each 1-DoF joint; ignored on
floating joints); <dynamics friction> (Coulomb friction) is read but not modelled; <mimic> is
rejected. Geometry (<visual>, <collision>, meshes by package:// or file names) is ignored: the
dynamics needs none. The root link is fixed to the
world by a fixed joint ``root_joint``, or floats on a free joint ``root_joint`` (Pinocchio's
name) with ``floating_base``; a root link named ``world`` is the inertial frame itself.

Problems name the URDF element and its line: ``arm.urdf:42: joint 'elbow': unknown type 'hinge'``.
The model's own checks (mass properties, names, a joint that moves no mass) run on the result and
are reported against the URDF elements they come from.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING
from xml.parsers import expat

import numpy as np

from ..engine.spatial import rpy_to_R, z_to
from ..engine.spec.couplings import check_couplings
from ..engine.spec.description import WORLD, Body, Coupling, Joint, ModelSpec, Origin, Spring
from ..engine.spec.elements import parse_forces, parse_wheels
from ..engine.spec.lumping import lump_fixed
from ..engine.spec.repair import OPTION as REPAIR_OPTION
from ..engine.spec.repair import advice as repair_advice
from ..engine.spec.repair import repair_inertia
from ..engine.spec.validation import check_spec, locate
from ..errors import ModelError, Problem, did_you_mean
from ..files import read_bytes
from .model_file import initial_state
from .reader import Reader, describe
from .srdf import read_srdf
from .xml_lines import parse_xml

if TYPE_CHECKING:  # the Model is built from this package's output: import it lazily at run time
    from ..engine.model import Model

URDF_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
AXIS_TYPES = ("revolute", "continuous", "prismatic", "planar")
MIMIC_TYPES = ("revolute", "continuous", "prismatic")
INERTIA_ATTRS = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
ROOT_JOINT = "root_joint"
_WORLD_FLOATS = (
    "floating_base: the root link is 'world', the inertial frame, which cannot float; remove the "
    "'world' link and its joint to float the robot"
)
AXIS_MIN = 1e-12  # shortest joint axis [-] taken as a direction (as the model's own check)

OVERLAY_VERSION = 1
OVERLAY_KEYS = (
    "version", "urdf", "srdf", "name", "floating_base", "repair_inertia", "gravity", "joints", "wheels", "forces",
    "initial",
)  # fmt: skip
OVERLAY_JOINT_KEYS = ("spring", "actuated")
SPRING_KEYS = ("k", "d", "q0")


@dataclass(frozen=True)
class Limit:
    """A URDF <limit>: position bounds [rad or m], effort [N m or N], velocity [rad/s or m/s];
    None where not given. Read and checked, not enforced by the engine."""

    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None


@dataclass(frozen=True)
class Mimic:
    """A URDF <mimic>: this joint's coordinate is multiplier * q_leader + offset."""

    leader: str
    multiplier: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True)
class UrdfLink:
    """A <link>: mass [kg], CoM [m] and inertia about the CoM [kg m^2] in link axes (the
    inertial rotation already applied); ``lines`` maps 'link', 'mass', 'origin', 'inertia' to lines."""

    name: str
    mass: float = 0.0
    com: tuple[float, float, float] = (0.0, 0.0, 0.0)
    inertia: tuple[tuple[float, float, float], ...] = ((0.0, 0.0, 0.0),) * 3
    has_inertial: bool = False
    lines: dict = field(default_factory=dict)


@dataclass(frozen=True)
class UrdfJoint:
    """A <joint> between two links: URDF type, origin (joint frame in the parent link frame),
    axis in the joint frame, damping [N m s/rad or N s/m], friction [N m or N], limits;
    ``lines`` maps 'joint', 'origin', 'axis', 'dynamics', 'limit', 'parent', 'child' to lines."""

    name: str
    type: str
    parent: str
    child: str
    origin: Origin = field(default_factory=Origin)
    axis: tuple[float, float, float] = (1.0, 0.0, 0.0)
    damping: float = 0.0
    friction: float = 0.0
    limit: Limit | None = None
    mimic: Mimic | None = None
    lines: dict = field(default_factory=dict)


@dataclass(frozen=True)
class UrdfRobot:
    """What a URDF file says, as mbsfmu reads it: links and joints in file order, the root link."""

    name: str
    source: str
    links: tuple[UrdfLink, ...]
    joints: tuple[UrdfJoint, ...]
    root: str

    @property
    def limits(self) -> dict[str, Limit]:
        """Joint limits by URDF joint name (not enforced by the engine)."""
        return {j.name: j.limit for j in self.joints if j.limit is not None}

    @property
    def friction(self) -> dict[str, float]:
        """Coulomb friction by URDF joint name (not modelled by the engine)."""
        return {j.name: j.friction for j in self.joints if j.friction}


# ---- public entry points --------------------------------------------------------------------


def read_urdf(path: str | Path) -> UrdfRobot:
    """Parse and check a URDF file (XML, names, tree); ModelError names each bad element and line."""
    robot, problems = _read(Path(path))
    if problems:
        raise ModelError(_sorted(problems), str(path))
    return robot


def load_urdf(
    path: str | Path, floating_base: bool = False, lump_fixed: bool = True, repair_inertia: bool = False
) -> Model:
    """The Model of a URDF file; the root link on a free joint ``root_joint`` if floating_base.
    lump_fixed: links welded by fixed joints become one body (their links kept as frames), as
    Pinocchio and MuJoCo read a URDF; False keeps one body per link (each validated alone).
    repair_inertia: non-physical inertias of moving bodies repaired (engine/spec/repair.py), each
    change listed in ``Model.notes``."""
    robot = read_urdf(path)
    if floating_base and robot.root == WORLD:
        raise ModelError([Problem((f"link {WORLD!r}",), _WORLD_FLOATS)], str(path))
    spec, where = urdf_spec(robot, floating_base)
    spec, where, problems = dynamics_spec(spec, where, lump_fixed, repair_inertia)
    if problems:
        raise ModelError(_sorted([_map(p, where, None, None) for p in problems]), str(path))
    srdf = Path(path).with_suffix(".srdf")
    if srdf.is_file():  # MoveIt's semantic description beside the URDF: its group states are named poses
        spec = with_srdf(spec, srdf)
    return _build(spec, where, source=str(path), urdf_label=None, overlay_lines=None)


def with_srdf(spec: ModelSpec, srdf: Path) -> ModelSpec:
    """spec with the group states of the SRDF file ``srdf`` as its named poses; ModelError (naming
    the SRDF's lines) if any is wrong."""
    poses, problems = read_srdf(srdf, spec)
    if problems:
        raise ModelError(_sorted(problems), str(srdf))
    return replace(spec, named_poses=poses)


def load_overlay(
    data, lines: dict, path: str | Path, repair_inertia: bool = False, floating_base: bool = False, problems=()
) -> Model:
    """The Model of a URDF overlay file (parsed document ``data`` with its path -> line map):
    the referenced URDF (path relative to the overlay) plus floating_base, repair_inertia, gravity,
    joint springs, wheels, force elements and initial state. One ModelError lists the problems of
    both files. repair_inertia, floating_base here: as the overlay's keys (either asks for it).
    problems: found before (the overlay's duplicate keys), listed with the rest."""
    path = Path(path)
    r = Reader(lines or {})
    r.problems += problems
    doc = r.mapping(data, (), OVERLAY_KEYS, required=("version", "urdf"))
    if "version" in doc and (isinstance(doc["version"], bool) or doc["version"] != OVERLAY_VERSION):
        r.problem(
            ("version",),
            f"unsupported overlay schema version: got {describe(doc['version'])}, "
            f"this mbsfmu reads version {OVERLAY_VERSION}",
        )
    urdf_rel = r.string(doc.get("urdf"), ("urdf",))
    urdf_path = path.parent / urdf_rel
    srdf = urdf_path.with_suffix(".srdf")  # MoveIt's semantic description: beside the URDF, or named
    if "srdf" in doc:
        srdf = path.parent / r.string(doc["srdf"], ("srdf",))
        if isinstance(doc["srdf"], str) and doc["srdf"] and not srdf.is_file():
            r.problem(("srdf",), f"SRDF file {str(srdf)!r} does not exist")
    floating = doc.get("floating_base", False)
    if not isinstance(floating, bool):
        r.problem(("floating_base",), f"expected true or false, got {describe(floating)}")
        floating = False
    repair = doc.get(REPAIR_OPTION, False)
    if not isinstance(repair, bool):
        r.problem((REPAIR_OPTION,), f"expected true or false, got {describe(repair)}")
        repair = False
    floating = floating or floating_base
    robot, urdf_problems = None, []
    if isinstance(doc.get("urdf"), str):
        if urdf_path.is_file():
            robot, urdf_problems = _read(urdf_path)
        else:
            r.problem(("urdf",), f"URDF file {str(urdf_path)!r} does not exist")
    label = str(urdf_path)
    problems = [_prefixed(p, label) for p in urdf_problems]
    if robot is not None and floating and robot.root == WORLD:
        r.problem(("floating_base",), _WORLD_FLOATS)
        floating = False
    spec, where = urdf_spec(robot, floating) if robot is not None else (None, {})
    if spec is not None:
        spec, where = _apply_overlay(r, doc, spec, where, robot)
        spec, where, lump_problems = dynamics_spec(spec, where, True, repair_inertia or repair)
        problems += [_map(p, where, label, lines) for p in lump_problems]
        if r.problems:  # also the model's checks of meaning, outside what could not be read (as the loader)
            unread = [p.path for p in r.problems]
            for p in check_spec(spec, repair_advice(str(path))):
                if not any(p.path[: len(u)] == u or u[: len(p.path)] == p.path for u in unread):
                    problems.append(_map(p, where, label, lines))
    if r.problems or problems:
        raise ModelError(_sorted(r.problems + problems), str(path))
    if srdf.is_file():
        spec = with_srdf(spec, srdf)
    return _build(spec, where, source=str(path), urdf_label=label, overlay_lines=lines)


class _Elements:
    """Typed reading of URDF attributes, recording problems that name the element and line."""

    def __init__(self, lines: dict):
        self.lines = lines
        self.problems: list[Problem] = []

    def problem(self, label: str, message: str, el: ET.Element | None) -> None:
        self.problems.append(Problem((label,), message, self.lines.get(el)))

    def text(self, el: ET.Element, attr: str, label: str) -> str | None:
        value = el.get(attr)
        if value is None or not value.strip():
            self.problem(label, f"missing attribute {attr!r}", el)
            return None
        return value.strip()

    def numbers(self, el: ET.Element | None, attr: str, n: int, label: str, default=None):
        """``n`` finite numbers from a whitespace-separated attribute; default if absent."""
        raw = None if el is None else el.get(attr)
        if raw is None:
            if default is None:
                self.problem(label, f"missing attribute {attr!r}", el)
                return (0.0,) * n
            return default
        parts = raw.split()
        try:
            values = tuple(float(s) for s in parts)
        except ValueError:
            values = None
        if values is None or len(values) != n or not all(map(math.isfinite, values)):
            what = "a finite number" if n == 1 else f"{n} finite numbers separated by spaces"
            self.problem(f"{label}@{attr}", f"expected {what}, got {raw!r}", el)
            return (0.0,) * n
        return values

    def number(self, el, attr, label, default=None) -> float | None:
        out = self.numbers(el, attr, 1, label, None if default is None else (default,))
        return None if out is None else out[0]


# ---- URDF file to UrdfRobot ---------------------------------------------------------------------


def _read(path: Path) -> tuple[UrdfRobot | None, list[Problem]]:
    try:
        data = read_bytes(path)
    except OSError as e:
        return None, [Problem((), f"cannot read the URDF file: {e.strerror or e}")]
    try:
        root, lines = parse_xml(data)
    except expat.ExpatError as e:
        return None, [Problem((), f"broken XML: {expat.errors.messages[e.code]} (column {e.offset + 1})", e.lineno)]
    except RecursionError:
        return None, [Problem((), "XML nested too deeply")]
    x = _Elements(lines)
    if root.tag != "robot":
        x.problem(f"<{root.tag}>", "the root element of a URDF file must be <robot>", root)
        return None, x.problems
    links = [_link(x, el) for el in root.findall("link")]
    joints = [j for el in root.findall("joint") if (j := _joint(x, el)) is not None]
    root_link = _check_tree(x, links, joints, lines.get(root))
    if x.problems:
        return None, x.problems
    name = root.get("name") or path.stem
    return UrdfRobot(name=name, source=str(path), links=tuple(links), joints=tuple(joints), root=root_link), []


def _link(x: _Elements, el: ET.Element) -> UrdfLink:
    name = el.get("name") or ""
    if not name:
        x.problem("link", "missing attribute 'name'", el)
        name = f"<link at line {x.lines.get(el)}>"
    label = f"link {name!r}"
    ln = {"link": x.lines.get(el)}
    inertial = el.find("inertial")
    if inertial is None:
        return UrdfLink(name=name, lines=ln)
    at = f"{label}/inertial"
    ln["inertial"] = ln["origin"] = ln["mass"] = ln["inertia"] = x.lines.get(inertial)
    origin = inertial.find("origin")
    xyz = x.numbers(origin, "xyz", 3, f"{at}/origin", (0.0, 0.0, 0.0))
    rpy = x.numbers(origin, "rpy", 3, f"{at}/origin", (0.0, 0.0, 0.0))
    if origin is not None:
        ln["origin"] = x.lines.get(origin)
    mass_el = inertial.find("mass")
    if mass_el is None:
        x.problem(at, "missing <mass value=...>", inertial)
        mass = 0.0
    else:
        ln["mass"] = x.lines.get(mass_el)
        mass = x.number(mass_el, "value", f"{at}/mass")
    I_el = inertial.find("inertia")
    if I_el is None:
        x.problem(at, "missing <inertia ixx=... ixy=... ixz=... iyy=... iyz=... izz=...>", inertial)
        I_in = np.zeros((3, 3))
    else:
        ln["inertia"] = x.lines.get(I_el)
        v = {a: x.number(I_el, a, f"{at}/inertia") for a in INERTIA_ATTRS}
        I_in = np.array(
            [[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]]
        )
    R = rpy_to_R(np.asarray(rpy))
    I_link = R @ I_in @ R.T
    I_link = 0.5 * (I_link + I_link.T)
    return UrdfLink(
        name=name, mass=mass, com=tuple(xyz), inertia=tuple(map(tuple, I_link)), has_inertial=True, lines=ln
    )


def _joint(x: _Elements, el: ET.Element) -> UrdfJoint | None:
    name = el.get("name") or ""
    if not name:
        x.problem("joint", "missing attribute 'name'", el)
        name = f"<joint at line {x.lines.get(el)}>"
    label = f"joint {name!r}"
    ln = {"joint": x.lines.get(el)}
    jtype = el.get("type")
    if jtype is None:
        x.problem(label, "missing attribute 'type'; expected one of " + ", ".join(URDF_TYPES), el)
    elif jtype not in URDF_TYPES:
        x.problem(
            label,
            f"unknown type {jtype!r}; expected one of {', '.join(URDF_TYPES)}" + did_you_mean(jtype, URDF_TYPES),
            el,
        )
    ends = {}
    for end in ("parent", "child"):
        sub = el.find(end)
        if sub is None:
            x.problem(label, f"missing <{end} link=...>", el)
            continue
        ln[end] = x.lines.get(sub)
        ends[end] = x.text(sub, "link", f"{label}/{end}")
    mimic_el = el.find("mimic")
    mimic = None
    if mimic_el is not None:
        ln["mimic"] = x.lines.get(mimic_el)
        leader = x.text(mimic_el, "joint", f"{label}/mimic")
        mimic = Mimic(
            leader or "",
            x.number(mimic_el, "multiplier", f"{label}/mimic", 1.0),
            x.number(mimic_el, "offset", f"{label}/mimic", 0.0),
        )
        if jtype is not None and jtype not in MIMIC_TYPES + ("fixed",):  # on a fixed joint: ignored (a note)
            x.problem(
                f"{label}/mimic",
                f"a {jtype} joint cannot mimic another: <mimic> couples 1-DoF joints ({', '.join(MIMIC_TYPES)})",
                mimic_el,
            )
    origin_el = el.find("origin")
    if origin_el is not None:
        ln["origin"] = x.lines.get(origin_el)
    origin = Origin(
        xyz=x.numbers(origin_el, "xyz", 3, f"{label}/origin", (0.0, 0.0, 0.0)),
        rpy=x.numbers(origin_el, "rpy", 3, f"{label}/origin", (0.0, 0.0, 0.0)),
    )
    axis_el = el.find("axis")
    ln["axis"] = x.lines.get(axis_el, ln["joint"])
    known = len(x.problems)
    axis = x.numbers(axis_el, "xyz", 3, f"{label}/axis", (1.0, 0.0, 0.0)) if axis_el is not None else (1.0, 0.0, 0.0)
    if axis_el is not None and axis_el.get("xyz") is None:
        x.problem(f"{label}/axis", "missing attribute 'xyz'", axis_el)
    read = len(x.problems) == known  # an axis that could not be read is reported as such, not as zero-length
    if read and jtype in AXIS_TYPES and np.linalg.norm(axis) < AXIS_MIN:
        x.problem(f"{label}/axis", f"zero-length axis {list(axis)}: a {jtype} joint needs a direction", axis_el)
    dyn = el.find("dynamics")
    damping = friction = 0.0
    if dyn is not None:
        ln["dynamics"] = x.lines.get(dyn)
        damping = x.number(dyn, "damping", f"{label}/dynamics", 0.0)
        friction = x.number(dyn, "friction", f"{label}/dynamics", 0.0)
    limit = None
    lim = el.find("limit")
    if lim is not None:
        ln["limit"] = x.lines.get(lim)
        limit = Limit(
            **{
                a: (x.number(lim, a, f"{label}/limit") if lim.get(a) is not None else None)
                for a in ("lower", "upper", "effort", "velocity")
            }
        )
        if limit.lower is not None and limit.upper is not None and limit.lower > limit.upper:
            x.problem(f"{label}/limit", f"lower limit {limit.lower} is above upper limit {limit.upper}", lim)
        for a in ("effort", "velocity"):
            if (getattr(limit, a) or 0.0) < 0:
                x.problem(f"{label}/limit@{a}", f"negative {a} limit {getattr(limit, a)}", lim)
    if ends.get("parent") is None or ends.get("child") is None:
        return None  # reported; a joint with a bad type still takes part in the name and tree checks
    return UrdfJoint(
        name=name,
        type=jtype,
        parent=ends["parent"],
        child=ends["child"],
        origin=origin,
        axis=axis,
        damping=damping,
        friction=friction,
        limit=limit,
        mimic=mimic,
        lines=ln,
    )


def _check_tree(x: _Elements, links: list[UrdfLink], joints: list[UrdfJoint], robot_line) -> str:
    """Unique names, known links, one parent joint per link, no cycles, one root; the root link."""
    first: dict[str, UrdfLink] = {}
    for lk in links:
        if lk.name in first:
            x.problems.append(
                Problem(
                    (f"link {lk.name!r}",),
                    f"duplicate link name {lk.name!r} (also line {first[lk.name].lines['link']})",
                    lk.lines["link"],
                )
            )
        first.setdefault(lk.name, lk)
    seen_j: dict[str, UrdfJoint] = {}
    parent_joint: dict[str, UrdfJoint] = {}
    for j in joints:
        label = f"joint {j.name!r}"
        if j.name in seen_j:
            x.problems.append(
                Problem(
                    (label,),
                    f"duplicate joint name {j.name!r} (also line {seen_j[j.name].lines['joint']})",
                    j.lines["joint"],
                )
            )
        seen_j.setdefault(j.name, j)
        for end in ("parent", "child"):
            link = getattr(j, end)
            if link not in first:
                x.problems.append(
                    Problem(
                        (f"{label}/{end}",), f"unknown {end} link {link!r}" + did_you_mean(link, first), j.lines[end]
                    )
                )
        if j.parent == j.child:
            x.problems.append(
                Problem((f"{label}/child",), f"joint {j.name!r} connects link {j.child!r} to itself", j.lines["child"])
            )
        elif j.child in parent_joint:
            other = parent_joint[j.child]
            x.problems.append(
                Problem(
                    (f"{label}/child",),
                    f"link {j.child!r} is already the child of joint "
                    f"{other.name!r} (line {other.lines['joint']}): each link has one parent "
                    "joint (closed loops are not supported)",
                    j.lines["child"],
                )
            )
        else:
            parent_joint[j.child] = j
    if not links:
        x.problems.append(Problem(("robot",), "no <link> elements", robot_line))
        return ""
    broken = bool(x.problems)  # the roots and cycles are still looked for: every problem in one round
    named_child = {j.child for j in joints}  # a link named as a child is no root, even by a faulty joint
    roots = [lk for lk in links if lk.name not in named_child]
    for extra in roots[1:]:
        x.problems.append(
            Problem(
                (f"link {extra.name!r}",),
                f"second root link: neither {roots[0].name!r} (line "
                f"{roots[0].lines['link']}) nor {extra.name!r} is the child of a joint; a URDF "
                "describes one tree: connect them with a joint",
                extra.lines["link"],
            )
        )
    reached, stack = set(), [r.name for r in roots]
    kids: dict[str, list[str]] = {}
    for j in joints:
        kids.setdefault(j.parent, []).append(j.child)
    while stack:
        name = stack.pop()
        reached.add(name)
        stack.extend(c for c in kids.get(name, []) if c not in reached)
    reported: set[str] = set()
    for lk in links:
        if lk.name in reached or lk.name in reported:
            continue
        chain = [lk.name]
        while chain[-1] in parent_joint and (p := parent_joint[chain[-1]].parent) not in chain:
            chain.append(p)
        if chain[-1] not in parent_joint:  # hangs from a link reported above (unknown, joined to itself)
            continue
        cycle = chain[chain.index(p) :]
        reported.update(cycle)
        j = parent_joint[cycle[0]]
        loop = " -> ".join([cycle[0]] + [parent_joint[c].parent for c in cycle])
        x.problems.append(
            Problem(
                (f"joint {j.name!r}",),
                f"links {loop} form a cycle (each hangs from the next), so they never reach a root link",
                j.lines["joint"],
            )
        )
    if len(roots) == 1 and roots[0].name == WORLD and not kids.get(WORLD):
        x.problems.append(
            Problem(("robot",), "the only link is 'world' (the inertial frame): nothing moves", robot_line)
        )
    return roots[0].name if roots and not broken else ""


# ---- UrdfRobot to ModelSpec ---------------------------------------------------------------------


def root_joint_name(joint_names) -> str:
    """The name of the root link's joint to the world: ``root_joint`` (Pinocchio's), with '_'
    appended while a URDF joint has it."""
    names = set(joint_names)
    name = ROOT_JOINT
    while name in names:
        name += "_"
    return name


def urdf_spec(robot: UrdfRobot, floating_base: bool = False) -> tuple[ModelSpec, dict]:
    """The ModelSpec of a URDF robot (bodies in depth-first order, siblings in file order) and the
    map from spec paths to URDF locations: {("bodies", k, ...): (label, line)}."""
    if floating_base and robot.root == WORLD:
        raise ValueError("floating_base needs a root link other than 'world'")  # checked by the callers
    links = {lk.name: lk for lk in robot.links}
    kids: dict[str, list[UrdfJoint]] = {}
    for j in robot.joints:
        kids.setdefault(j.parent, []).append(j)
    bodies: list[Body] = []
    where: dict[tuple, tuple[str, int | None]] = {}
    root_joint = root_joint_name(j.name for j in robot.joints)
    root = links[robot.root]
    if robot.root != WORLD:  # a root link named 'world' is the inertial frame itself
        bodies.append(_body(root, Joint(root_joint, "free" if floating_base else "fixed"), WORLD))
        _where_link(
            where,
            0,
            root,
            f"link {root.name!r} (the root link, {'free' if floating_base else 'fixed'} joint {root_joint!r})",
        )
    stack = list(reversed(kids.get(robot.root, [])))
    while stack:
        j = stack.pop()
        child = links[j.child]
        parent = j.parent  # a link 'world' is the inertial frame WORLD
        spring = Spring(k=0.0, d=j.damping) if j.damping else None
        label = f"joint {j.name!r}"
        if j.type == "planar":
            n = np.asarray(j.axis) / np.linalg.norm(j.axis)
            R = z_to(n)
            for suffix, axis, origin in (("_TX", R[:, 0], j.origin), ("_TY", R[:, 1], Origin())):
                name = j.name + suffix
                k = len(bodies)
                bodies.append(Body(name, parent, Joint(name, "prismatic", tuple(axis), origin, spring)))
                _where_joint(where, k, j, label)
                where[("bodies", k)] = where[("bodies", k, "name")] = (label, j.lines["joint"])
                parent = name
            joint = Joint(j.name + "_RZ", "revolute", tuple(n), Origin(), spring)
        else:
            jtype = {"continuous": "revolute", "floating": "free"}.get(j.type, j.type)
            joint = Joint(
                j.name,
                jtype,
                j.axis,
                j.origin,
                spring if jtype in ("revolute", "prismatic") else None,
                actuated=False if j.mimic is not None else None,  # moved by its leader, not an input
            )
        k = len(bodies)
        bodies.append(_body(child, joint, parent))
        _where_link(where, k, child, f"link {child.name!r}")
        _where_joint(where, k, j, label)
        stack.extend(reversed(kids.get(j.child, [])))
    couplings = []
    for j in robot.joints:
        if j.mimic is not None and j.type != "fixed":
            where[("couplings", len(couplings))] = (f"joint {j.name!r}/mimic", j.lines.get("mimic", j.lines["joint"]))
            couplings.append(Coupling(j.name, j.mimic.leader, j.mimic.multiplier, j.mimic.offset))
    notes = []
    fixed_mimics = [j.name for j in robot.joints if j.mimic is not None and j.type == "fixed"]
    if fixed_mimics:
        notes.append(
            f"<mimic> ignored on {len(fixed_mimics)} fixed joint(s) ({_listed(fixed_mimics)}): a fixed joint has "
            "no coordinate to couple (as Pinocchio reads it)"
        )
    if robot.friction:
        notes.append(
            f"joint Coulomb friction (<dynamics friction>) is read but not modelled on {len(robot.friction)} "
            f"joint(s) ({_listed(list(robot.friction))}): the joints move without it (damping is modelled); "
            "UrdfRobot.friction holds the values"
        )
    spec = ModelSpec(name=robot.name, bodies=tuple(bodies), couplings=tuple(couplings), notes=tuple(notes))
    return spec, where


def _listed(names: list[str], n: int = 5) -> str:
    """Up to n names, then how many more."""
    return ", ".join(names[:n]) + (f" and {len(names) - n} more" if len(names) > n else "")


def dynamics_spec(spec: ModelSpec, where: dict, lump: bool, repair: bool) -> tuple[ModelSpec, dict, list[Problem]]:
    """The bodies the dynamics sees: fixed links lumped (if ``lump``), then non-physical moving
    inertias repaired (if ``repair``, each change a note); problems as ``lumped_spec``."""
    problems = check_couplings(spec)  # before lumping: a mimic of a fixed joint is named as such
    if problems:
        return spec, where, problems
    if lump:
        spec, where, problems = lumped_spec(spec, where)
    if repair:
        spec, _repairs = repair_inertia(spec)
    return spec, where, problems


def lumped_spec(spec: ModelSpec, where: dict) -> tuple[ModelSpec, dict, list[Problem]]:
    """``spec`` with links welded by fixed joints merged into composite bodies (engine/spec/
    lumping.py), the URDF location map moved to the composites (their mass properties reported
    at the host link, naming the merged links), and what could not be moved as problems."""
    lumped = lump_fixed(spec)
    if lumped.spec is spec:
        return spec, where, []
    out = {key: val for key, val in where.items() if key[0] != "bodies"}
    for key, val in where.items():  # a kept body's entries move to its new index
        if key[0] == "bodies" and len(key) >= 2 and lumped.host[spec.bodies[key[1]].name] == spec.bodies[key[1]].name:
            out[("bodies", lumped.index[key[1]]) + key[2:]] = val
    merged, old_index = lumped.merged, {b.name: k for k, b in enumerate(spec.bodies)}
    for k, b in enumerate(lumped.spec.bodies):
        if b.name in merged:
            _label, line = where[("bodies", old_index[b.name])]
            whole = f"link {b.name!r} with the links fixed to it ({', '.join(map(repr, merged[b.name]))})"
            for key in ("mass", "com", "inertia"):
                out[("bodies", k, key)] = (f"{whole}: composite {key}", line)
    return lumped.spec, out, [Problem(path, msg) for path, msg in lumped.problems]


def _body(link: UrdfLink, joint: Joint, parent: str) -> Body:
    return Body(
        name=link.name,
        parent=parent,
        joint=joint,
        mass=link.mass,
        com=link.com,
        inertia=link.inertia,
        frames={link.name: Origin()},
    )


def _where_link(where: dict, k: int, link: UrdfLink, label: str) -> None:
    ln = link.lines
    where[("bodies", k)] = where[("bodies", k, "name")] = where[("bodies", k, "frames")] = (label, ln["link"])
    where[("bodies", k, "mass")] = (f"{label}/inertial/mass", ln.get("mass", ln["link"]))
    where[("bodies", k, "com")] = (f"{label}/inertial/origin@xyz", ln.get("origin", ln["link"]))
    where[("bodies", k, "inertia")] = (f"{label}/inertial/inertia", ln.get("inertia", ln["link"]))
    where[("bodies", k, "joint")] = (label, ln["link"])
    where[("bodies", k, "parent")] = (label, ln["link"])


def _where_joint(where: dict, k: int, j: UrdfJoint, label: str) -> None:
    ln = j.lines
    where[("bodies", k, "parent")] = (f"{label}/parent", ln.get("parent", ln["joint"]))
    where[("bodies", k, "joint")] = where[("bodies", k, "joint", "name")] = (label, ln["joint"])
    where[("bodies", k, "joint", "type")] = (label, ln["joint"])
    where[("bodies", k, "joint", "axis")] = (f"{label}/axis", ln.get("axis", ln["joint"]))
    where[("bodies", k, "joint", "origin")] = (f"{label}/origin", ln.get("origin", ln["joint"]))
    where[("bodies", k, "joint", "spring")] = (f"{label}/dynamics@damping", ln.get("dynamics", ln["joint"]))


# ---- overlay ---------------------------------------------------------------------------------


def _apply_overlay(r: Reader, doc: dict, spec: ModelSpec, where: dict, robot: UrdfRobot) -> tuple[ModelSpec, dict]:
    """spec with the overlay's name, gravity, joint springs/actuation, wheels, forces, initial."""
    bodies = list(spec.bodies)
    k_of_joint = {b.joint.name: k for k, b in enumerate(bodies)}
    k_of_link = {b.name: k for k, b in enumerate(bodies) if b.frames}
    joints_raw = doc.get("joints", {})
    if not isinstance(joints_raw, dict):
        r.problem(("joints",), f"expected a mapping of joint name to {{spring, actuated}}, got {describe(joints_raw)}")
        joints_raw = {}
    for jname, raw in joints_raw.items():
        at = ("joints", jname)
        if jname not in k_of_joint:
            r.problem(at, f"unknown joint {jname!r}" + did_you_mean(jname, k_of_joint))
            continue
        j = r.mapping(raw, at, OVERLAY_JOINT_KEYS)
        k = k_of_joint[jname]
        joint = bodies[k].joint
        if "spring" in j:
            s = r.mapping(j["spring"], at + ("spring",), SPRING_KEYS)
            old = joint.spring or Spring()
            joint = replace(
                joint,
                spring=Spring(
                    **{
                        key: r.number(s[key], at + ("spring", key)) if key in s else getattr(old, key)
                        for key in SPRING_KEYS
                    }
                ),
            )
            where[("bodies", k, "joint", "spring")] = ("overlay", at + ("spring",))
        if "actuated" in j:
            if isinstance(j["actuated"], bool):
                joint = replace(joint, actuated=j["actuated"])
            else:
                r.problem(at + ("actuated",), f"expected true or false, got {describe(j['actuated'])}")
        bodies[k] = replace(bodies[k], joint=joint)
    wheels_raw = doc.get("wheels", {})
    if not isinstance(wheels_raw, dict):
        r.problem(("wheels",), f"expected a mapping of link name to a list of wheels, got {describe(wheels_raw)}")
        wheels_raw = {}
    for link, raw in wheels_raw.items():
        at = ("wheels", link)
        wheels = parse_wheels(r, raw, at)
        if link not in k_of_link:
            r.problem(at, f"unknown link {link!r}" + did_you_mean(link, k_of_link))
            continue
        k = k_of_link[link]
        bodies[k] = replace(bodies[k], wheels=bodies[k].wheels + wheels)
        where[("bodies", k, "wheels")] = ("overlay", at)
    init = r.mapping(doc.get("initial", {}), ("initial",), ("q", "qd"))
    spec = replace(
        spec,
        name=r.string(doc["name"], ("name",)) if "name" in doc else spec.name,
        bodies=tuple(bodies),
        gravity=r.vector(doc["gravity"], ("gravity",), 3) if "gravity" in doc else spec.gravity,
        initial_q=initial_state(r, init.get("q", {}), ("initial", "q")),
        initial_qd=initial_state(r, init.get("qd", {}), ("initial", "qd")),
        forces=parse_forces(r, doc["forces"]) if "forces" in doc else (),
    )
    return spec, where


# ---- the Model, with problems mapped back to the files -----------------------------------------


def _build(spec: ModelSpec, where: dict, source: str, urdf_label: str | None, overlay_lines: dict | None):
    """Model(spec); the model's own problems are reported at the URDF elements (and overlay
    entries) they come from."""
    from ..engine.model import Model

    try:
        return Model(spec, source=source)
    except ModelError as e:
        mapped = [_map(p, where, urdf_label, overlay_lines) for p in e.problems]
        raise ModelError(_sorted(mapped), source) from None


def _map(p: Problem, where: dict, urdf_label: str | None, overlay_lines: dict | None) -> Problem:
    path = p.path
    for n in range(len(path), 0, -1):
        if path[:n] in where:
            label, line = where[path[:n]]
            if label == "overlay":
                return locate([Problem(line + path[n:], p.message)], overlay_lines)[0]
            q = Problem((label,), p.message, line)
            return _prefixed(q, urdf_label) if urdf_label else q
    if urdf_label is None and path and path[0] == "bodies":  # unreachable: every body has a where entry
        return p
    return locate([p], overlay_lines)[0] if overlay_lines else p


def _prefixed(p: Problem, label: str) -> Problem:
    """A URDF problem inside an overlay's error: the URDF file and line lead its location."""
    where = p.where() if p.path else ""
    loc = f"{label}:{p.line}" if p.line else label
    return Problem((f"{loc}: {where}" if where else loc,), p.message, None)


def _sorted(problems: list[Problem]) -> list[Problem]:
    return sorted(problems, key=lambda p: (p.line is None, p.line or 0, p.where()))
