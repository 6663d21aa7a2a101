"""URDF export: a ModelSpec (or Model) to a URDF robot description, the inverse of mbsfmu/io/urdf.py,
written so that ``load_urdf`` of the result gives the same M, RNEA and ABA (gravity set alike).

Each body becomes a <link> whose frame is the body frame, with an exact <inertial> (mass, CoM as
origin xyz, inertia about the CoM in body axes, rpy zero; numbers as ``repr(float)``, so they
read back bit for bit). Each body's joint becomes the <joint> to its link:

| mbsfmu                 | URDF                                                                   |
|------------------------|------------------------------------------------------------------------|
| revolute               | continuous, or revolute with the <limit> of the source URDF            |
| prismatic              | prismatic; <limit> of the source URDF, else a placeholder (URDF needs  |
|                        | one: bounds +-1e16, effort and velocity 0, with a comment saying so)   |
| fixed                  | fixed                                                                  |
| free                   | floating; a root body alone on the world on a free joint with identity |
|                        | origin is the root link itself (load it with floating_base: Pinocchio's |
|                        | ``root_joint``)                                                        |
| spherical              | revolute ``<j>_rx``, ``<j>_ry``, ``<j>_rz`` about x, y, z through the  |
|                        | massless links ``<j>_rx``, ``<j>_ry`` (URDF has no ball joint): the    |
|                        | same motion with x-y-z Euler angles for coordinates (singular at       |
|                        | pitch +-pi/2, where the quaternion is not)                             |
| Spring d               | <dynamics damping>                                                     |
| Spring k, q0           | dropped (URDF has no joint stiffness): an XML comment and a warning    |
| Body.frames            | massless child links on fixed joints ``<frame>_joint``                 |
| Body.wheels            | continuous joint and rotor link named as the wheel (as the Model       |
|                        | builds them, mbsfmu/engine/model.py)                                   |
| ModelSpec.couplings    | <mimic joint multiplier offset> on the follower                        |

Reaction wheel rotors: the Model's rotor carries I_w g g^T, whose principal moments (0, 0, I_w)
violate the triangle inequality, so no URDF reader (ours included) accepts it as a link. The
export gives the rotor a thin disc's inertia I_w g g^T + I_t (1 - g g^T) with I_t = I_w / 2 (the
smallest transverse moment the triangle inequality allows, I_t + I_t >= I_w) and takes
I_t (1 - g g^T) off the host body's inertia. The dynamics are the same: the rotor's angular
velocity is w_host + g thetadot and (1 - g g^T) g = 0, so the transverse part's kinetic energy
1/2 w_host^T I_t (1 - g g^T) w_host is the host's, whatever the spin (a massless rotor's inertia
is the same about every point). A host whose inertia would stop being physical is refused.

Loops (ModelSpec.loops, cut joints) are refused with an error naming them: URDF describes one tree,
and the tree alone would be a different mechanism (more degrees of freedom) that simulates without
complaint, which is worse than no file. Not exported either (listed as warnings): gravity (URDF has
none; readers assume (0, 0, -9.81)), joint springs' stiffness, actuated flags, force elements, the
initial state, and the name of a free root joint. ``overlay_export.export_overlay`` writes
these (but the root joint's name, which becomes ``root_joint``) as a URDF overlay
(mbsfmu/io/urdf.py) beside the URDF: loading the overlay gives the model back.

For a viewer, each link with mass gets a <visual> box: the equivalent-inertia box (uniform density,
same mass and principal moments, along the principal axes; none when degenerate), and a cylinder
from the link origin to each child joint's origin. The URDF reader ignores visuals.

The output is deterministic: bodies depth first from the world, siblings in the spec's order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from xml.sax.saxutils import quoteattr

import numpy as np

from ..engine.spatial import R_to_rpy, z_to
from ..engine.spec.couplings import check_couplings
from ..engine.spec.description import WORLD, Body, Joint, ModelSpec, Origin
from ..engine.spec.validation import check_spec
from ..errors import InputError, ModelError, Problem
from ..files import read_text
from .model_file import parse_file
from .urdf import Limit, UrdfRobot, read_urdf

if TYPE_CHECKING:
    from ..engine.model import Model

INDENT = "  "
URDF_GRAVITY = (0.0, 0.0, -9.81)  # what URDF readers (ours, Pinocchio's) assume: URDF has no gravity
PLACEHOLDER_BOUND = 1e16  # [m] the bounds of a prismatic joint whose limits are unknown (URDF needs some)
ROD_RADIUS = 0.05  # radius of a visual rod as a fraction of its length [-]
DEGENERATE = 1e-9  # an equivalent box edge^2 below this fraction of the largest is a flat box: no box


@dataclass(frozen=True)
class UrdfExport:
    """A URDF document and what of the model it could not say (one sentence each)."""

    text: str
    dropped: tuple[str, ...]
    overlaid: tuple[str, ...] = ()  # the dropped items that the overlay (overlay_export.py) carries
    floating_root: str | None = None  # the free root joint that is the root link itself (no world link)
    joints: tuple[str, ...] = ()  # the URDF's joint names


def export_urdf(
    spec_or_model: ModelSpec | Model, limits: dict[str, Limit] | None = None, source: str | None = None
) -> UrdfExport:
    """The URDF of a model: text and the dropped items. ``limits``: URDF joint limits by joint name
    (``read_urdf(path).limits`` for a model read from a URDF); ``source``: the model file (only its
    name is written). ModelError for loops, an invalid spec or names that collide in the URDF."""
    spec = spec_or_model if isinstance(spec_or_model, ModelSpec) else spec_or_model.spec
    if source is None and not isinstance(spec_or_model, ModelSpec):
        source = spec_or_model.source
    label = source or "<python>"
    if spec.loops:
        names = ", ".join(repr(lp.name) for lp in spec.loops)
        raise ModelError(
            [
                Problem(
                    ("loops",),
                    f"closed loops cannot be exported to URDF (one tree, no cut joints): {names}; the tree "
                    "without them would be a different mechanism",
                )
            ],
            label,
        )
    problems = check_spec(spec)
    if problems:
        raise ModelError(problems, label)
    writer = _Writer(spec, limits or {}, Path(source).name if source else None)
    text = writer.document()
    if spec.named_poses:  # MoveIt keeps them in an SRDF beside the URDF (srdf.py reads its group states)
        writer.dropped.append(f"the named poses {', '.join(spec.named_poses)} (an SRDF carries them, a URDF cannot)")
    return UrdfExport(text, tuple(writer.dropped), tuple(writer.overlaid), writer.floating_root, tuple(writer.joints))


def urdf_text(spec_or_model: ModelSpec | Model, limits: dict[str, Limit] | None = None) -> str:
    """The URDF document of a model (see ``export_urdf``)."""
    return export_urdf(spec_or_model, limits).text


def write_urdf(
    spec_or_model: ModelSpec | Model, path: str | Path, limits: dict[str, Limit] | None = None, source=None
) -> tuple[str, ...]:
    """Write the URDF of a model to ``path``; returns the dropped items. InputError if it cannot
    be written."""
    out = export_urdf(spec_or_model, limits, source)
    try:
        Path(path).write_text(out.text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot write the URDF file {str(path)!r}: {e.strerror or e}") from None
    return out.dropped


def source_urdf(path: str | Path) -> UrdfRobot | None:
    """The URDF behind a model file: a .urdf file itself, an overlay's URDF (its ``urdf`` key,
    relative to the overlay); None for a YAML/JSON model file. Its ``limits`` go into the export,
    its ``friction`` is what the export drops (the engine does not model it)."""
    path = Path(path)
    if path.suffix.lower() == ".urdf":
        return read_urdf(path)
    data, _ = parse_file(path)
    if isinstance(data, dict) and isinstance(data.get("urdf"), str):
        return read_urdf(path.parent / data["urdf"])
    return None


def robot_description(model) -> str:
    """The model's URDF, as ROS's robot_description carries it: the file itself for a URDF model,
    the overlay's URDF for an overlay (the links and joints the user wrote, with their meshes),
    the export (``export_urdf``) for any other model file or a model built in Python."""
    source = Path(model.source)
    robot = source_urdf(source) if source.is_file() else None
    if robot is not None:
        return read_text(Path(robot.source))
    return export_urdf(model).text


# ---- numbers and geometry -------------------------------------------------------------------------


def num(x) -> str:
    """A float as the shortest text that reads back to the same double (Python's repr)."""
    return repr(float(x))


def nums(v) -> str:
    return " ".join(num(x) for x in v)


def equivalent_box(mass: float, I: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(edges (3,) [m], R (3, 3) principal axes as columns) of the uniform box with the body's mass and
    principal moments; None if massless or flat. A box of edges a, b, c has I1 = m/12 (b^2 + c^2),
    I2 = m/12 (a^2 + c^2), I3 = m/12 (a^2 + b^2) (Wikipedia, List of moments of inertia, solid cuboid),
    so a^2 = 6/m (I2 + I3 - I1), b^2 = 6/m (I1 + I3 - I2), c^2 = 6/m (I1 + I2 - I3)."""
    if mass <= 0:
        return None
    Ip, R = np.linalg.eigh(0.5 * (I + I.T))
    if np.linalg.det(R) < 0:
        R[:, 2] = -R[:, 2]
    sq = 6.0 / mass * np.array([Ip[1] + Ip[2] - Ip[0], Ip[0] + Ip[2] - Ip[1], Ip[0] + Ip[1] - Ip[2]])
    if sq.max() <= 0 or sq.min() <= DEGENERATE * sq.max():
        return None
    return np.sqrt(sq), R


def unit(v) -> tuple[float, ...]:
    a = np.asarray(v, dtype=float)
    return tuple(float(x) for x in a / np.linalg.norm(a))


# ---- the document ---------------------------------------------------------------------------------


def attrs(**kw) -> str:
    return "".join(f" {k}={quoteattr(str(v))}" for k, v in kw.items())


def comment(text: str) -> str:
    """An XML comment (a comment may not hold "--")."""
    while "--" in text:
        text = text.replace("--", "- -")
    return f"<!-- {text} -->"


class _Writer:
    """Builds the URDF lines of a spec, collecting the dropped items."""

    def __init__(self, spec: ModelSpec, limits: dict[str, Limit], source_name: str | None):
        self.spec = spec
        self.limits = limits
        self.source_name = source_name
        self.lines: list[str] = []
        self.dropped: list[str] = []
        self.overlaid: list[str] = []
        self.floating_root: str | None = None  # the free root joint that is the root link itself
        self.links: dict[str, str] = {}  # URDF link name -> what made it
        self.joints: dict[str, str] = {}
        self.problems: list[Problem] = []
        self.children: dict[str, list[Body]] = {}
        for b in spec.bodies:
            self.children.setdefault(b.parent, []).append(b)
        self.mimic = {c.follower: c for c in spec.couplings}

    def document(self) -> str:
        from .. import __version__

        spec = self.spec
        roots = self.children.get(WORLD, [])
        floating_root = (
            len(roots) == 1 and roots[0].joint.type == "free" and roots[0].joint.origin == Origin()
        )  # the robot's root link itself floats: no world link
        origin = f" from {self.source_name}" if self.source_name else ""
        self.lines += ['<?xml version="1.0"?>', comment(f"exported by mbsfmu {__version__}{origin}")]
        self.lines.append(f"<robot{attrs(name=spec.name)}>")
        if tuple(map(float, spec.gravity)) != URDF_GRAVITY:
            self.drop(
                f"gravity {list(map(float, spec.gravity))} m/s^2 (URDF has none; readers assume {list(URDF_GRAVITY)})"
            )
            self.put(1, comment(f"gravity {nums(spec.gravity)} m/s^2 not exported: URDF has no gravity"))
        if floating_root:
            j = roots[0].joint
            self.floating_root = j.name
            self.drop(f"joint {j.name!r}: the free root joint is the root link itself; load with floating_base")
            self.drop(f"the name of free root joint {j.name!r}: URDF readers call it root_joint", overlay=False)
            self.put(1, comment(f"root link {roots[0].name!r} floats (free joint {j.name!r}): load with floating_base"))
            self.body(roots[0], 1, joint=False)
        else:
            self.link_name(WORLD, "the inertial frame")
            self.put(1, f"<link{attrs(name=WORLD)}/>")
            for b in roots:
                self.body(b, 1)
        self.drop_rest()
        self.problems += check_couplings(spec)  # the model's own coupling checks (engine/spec/couplings.py)
        if self.problems:
            raise ModelError(self.problems, self.source_name or "<python>")
        self.lines.append("</robot>")
        return "\n".join(self.lines) + "\n"

    # -- helpers
    def put(self, depth: int, line: str) -> None:
        self.lines.append(INDENT * depth + line)

    def drop(self, what: str, overlay: bool = True) -> None:
        """``what`` is not in the URDF; ``overlay``: the overlay (overlay_export.py) carries it."""
        self.dropped.append(what)
        if overlay:
            self.overlaid.append(what)

    def link_name(self, name: str, what: str) -> str:
        if name in self.links:
            self.problems.append(
                Problem((f"link {name!r}",), f"URDF link name {name!r} of {what} is also that of {self.links[name]}")
            )
        self.links.setdefault(name, what)
        return name

    def joint_name(self, name: str, what: str) -> str:
        if name in self.joints:
            self.problems.append(
                Problem((f"joint {name!r}",), f"URDF joint name {name!r} of {what} is also that of {self.joints[name]}")
            )
        self.joints.setdefault(name, what)
        return name

    def drop_rest(self) -> None:
        spec = self.spec
        for b in spec.bodies:
            if b.joint.name in self.mimic:  # a follower is no input: <mimic> says so
                continue
            if b.joint.actuated is not None and b.joint.actuated != (b.joint.type != "free"):
                self.drop(f"joint {b.joint.name!r}: actuated: {str(b.joint.actuated).lower()} (URDF has no such flag)")
        for f in spec.forces:
            self.drop(f"force element {f.name!r} ({type(f).__name__}): URDF has no force elements")
        if spec.initial_q or spec.initial_qd:
            self.drop("the initial state (initial q and qd): URDF has none")

    # -- elements
    def body(self, b: Body, depth: int, joint: bool = True) -> None:
        """The joint to body b (unless b is the floating root), its link, frames, wheels, children."""
        inertia = np.asarray(b.inertia, dtype=float)
        rotors = []
        for w in b.wheels:
            g = np.asarray(unit(w.axis))
            I_t = 0.5 * w.inertia  # thin disc: the smallest transverse moment with I_t + I_t >= I_w
            P = np.eye(3) - np.outer(g, g)
            inertia = inertia - I_t * P
            rotors.append((w, g, w.inertia * np.outer(g, g) + I_t * P))
        if rotors:
            ev = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
            if ev[0] < -1e-12 * max(abs(ev[-1]), 1e-300) or ev[0] + ev[1] < ev[2] * (1 - 1e-12):
                self.problems.append(
                    Problem(
                        (f"body {b.name!r}",),
                        f"its inertia less the wheels' rotor transverse inertia I_w/2 (1 - g g^T) is no rigid body's "
                        f"(principal moments {ev.tolist()}): the wheels cannot be exported as URDF links",
                    )
                )
        if joint:
            self.joint(b, depth)
        self.link_name(b.name, f"body {b.name!r}")
        kids = self.children.get(b.name, [])
        ends = [k.joint.origin.p for k in kids] + [fr.p for f, fr in b.frames.items() if f != b.name]
        ends += [np.asarray(w.position, dtype=float) for w in b.wheels]
        self.link(b.name, b.mass, b.com, inertia, depth, visual=(b.mass, np.asarray(b.inertia, float), ends))
        for fname, fr in b.frames.items():
            if fname == b.name:
                if fr != Origin():
                    self.problems.append(
                        Problem(
                            (f"body {b.name!r}", "frames", fname),
                            f"frame {fname!r} has the body's name but not its pose: URDF names one link so",
                        )
                    )
                continue
            jn = self.joint_name(f"{fname}_joint", f"frame {fname!r}")
            self.put(depth, f"<joint{attrs(name=jn, type='fixed')}>")
            self.origin(depth + 1, fr)
            self.put(depth + 1, f"<parent{attrs(link=b.name)}/>")
            self.put(depth + 1, f"<child{attrs(link=self.link_name(fname, f'frame {fname!r}'))}/>")
            self.put(depth, "</joint>")
            self.put(depth, f"<link{attrs(name=fname)}/>")
        for w, g, I_r in rotors:
            self.put(depth, comment(f"reaction wheel {w.name!r}: rotor I_w = {num(w.inertia)} kg m^2 about {nums(g)}"))
            jn = self.joint_name(w.name, f"wheel {w.name!r}")
            self.put(depth, f"<joint{attrs(name=jn, type='continuous')}>")
            self.origin(depth + 1, Origin(xyz=tuple(w.position)))
            self.put(depth + 1, f"<parent{attrs(link=b.name)}/>")
            self.put(depth + 1, f"<child{attrs(link=self.link_name(w.name, f'wheel {w.name!r}'))}/>")
            self.put(depth + 1, f"<axis{attrs(xyz=nums(g))}/>")
            self.put(depth, "</joint>")
            self.link(w.name, 0.0, (0.0, 0.0, 0.0), I_r, depth, visual=None, force=True)
        for k in kids:
            self.body(k, depth)

    def link(self, name, mass, com, I, depth, visual, force: bool = False) -> None:
        I = np.asarray(I, dtype=float)
        inner = []
        if force or mass != 0 or np.any(I != 0) or np.any(np.asarray(com) != 0):
            inner += [
                "<inertial>",
                INDENT + f"<origin{attrs(xyz=nums(com), rpy=nums((0.0, 0.0, 0.0)))}/>",
                INDENT + f"<mass{attrs(value=num(mass))}/>",
                INDENT
                + "<inertia"
                + attrs(
                    ixx=num(I[0, 0]),
                    ixy=num(I[0, 1]),
                    ixz=num(I[0, 2]),
                    iyy=num(I[1, 1]),
                    iyz=num(I[1, 2]),
                    izz=num(I[2, 2]),
                )
                + "/>",
                "</inertial>",
            ]
        if visual is not None:
            inner += self.visuals(name, *visual, com)
        if not inner:
            self.put(depth, f"<link{attrs(name=name)}/>")
            return
        self.put(depth, f"<link{attrs(name=name)}>")
        for line in inner:
            self.put(depth + 1, line)
        self.put(depth, "</link>")

    def visuals(self, name, mass, I, ends, com) -> list[str]:
        out = []
        box = equivalent_box(float(mass), I)
        if box is not None:
            edges, R = box
            out += self.visual(f"{name}_inertia_box", com, R_to_rpy(R), f"<box{attrs(size=nums(edges))}/>")
        for k, p in enumerate(ends):
            length = float(np.linalg.norm(p))
            if length < 1e-9:
                continue
            R = z_to(np.asarray(p) / length)
            out += self.visual(
                f"{name}_rod{k}",
                0.5 * np.asarray(p),
                R_to_rpy(R),
                f"<cylinder{attrs(radius=num(ROD_RADIUS * length), length=num(length))}/>",
            )
        return out

    @staticmethod
    def visual(name, xyz, rpy, geometry) -> list[str]:
        return [
            f"<visual{attrs(name=name)}>",
            INDENT + f"<origin{attrs(xyz=nums(xyz), rpy=nums(rpy))}/>",
            INDENT + "<geometry>",
            INDENT * 2 + geometry,
            INDENT + "</geometry>",
            "</visual>",
        ]

    def origin(self, depth: int, o: Origin) -> None:
        self.put(depth, f"<origin{attrs(xyz=nums(o.xyz), rpy=nums(o.rpy))}/>")

    def joint(self, b: Body, depth: int) -> None:
        j = b.joint
        if j.type == "spherical":
            self.spherical(b, depth)
            return
        if j.type in ("revolute", "prismatic"):
            self.one_dof(j, b.parent, b.name, depth, j.origin)
            return
        jtype = {"fixed": "fixed", "free": "floating"}[j.type]
        self.put(depth, f"<joint{attrs(name=self.joint_name(j.name, f'joint {j.name!r}'), type=jtype)}>")
        self.origin(depth + 1, j.origin)
        self.put(depth + 1, f"<parent{attrs(link=b.parent)}/>")
        self.put(depth + 1, f"<child{attrs(link=b.name)}/>")
        self.put(depth, "</joint>")

    def spherical(self, b: Body, depth: int) -> None:
        """A ball joint as revolute joints about x, y, z through two massless links."""
        j = b.joint
        self.put(
            depth,
            comment(
                f"spherical joint {j.name!r} as revolute joints {j.name}_rx, {j.name}_ry, {j.name}_rz about x, y, z "
                f"(URDF has no ball joint)"
            ),
        )
        parent = b.parent
        for suffix, axis, child in (("_rx", (1.0, 0.0, 0.0), j.name + "_rx"), ("_ry", (0.0, 1.0, 0.0), j.name + "_ry")):
            sub = Joint(j.name + suffix, "revolute", axis, j.origin if suffix == "_rx" else Origin())
            self.one_dof(sub, parent, child, depth, sub.origin, source=j.name)
            self.put(depth, f"<link{attrs(name=self.link_name(child, f'spherical joint {j.name!r}'))}/>")
            parent = child
        self.one_dof(Joint(j.name + "_rz", "revolute", (0.0, 0.0, 1.0)), parent, b.name, depth, Origin(), source=j.name)

    def one_dof(self, j: Joint, parent: str, child: str, depth: int, origin: Origin, source: str | None = None) -> None:
        lim = self.limits.get(j.name)
        if j.type == "revolute":
            jtype = "revolute" if lim is not None and lim.lower is not None and lim.upper is not None else "continuous"
        else:
            jtype = "prismatic"
        what = f"spherical joint {source!r}" if source else f"joint {j.name!r}"
        self.put(depth, f"<joint{attrs(name=self.joint_name(j.name, what), type=jtype)}>")
        self.origin(depth + 1, origin)
        self.put(depth + 1, f"<parent{attrs(link=parent)}/>")
        self.put(depth + 1, f"<child{attrs(link=child)}/>")
        self.put(depth + 1, f"<axis{attrs(xyz=nums(unit(j.axis)))}/>")
        if lim is not None:
            kw = {a: num(getattr(lim, a)) for a in ("lower", "upper") if getattr(lim, a) is not None}
            kw |= {a: num(getattr(lim, a) or 0.0) for a in ("effort", "velocity")}
            self.put(depth + 1, f"<limit{attrs(**kw)}/>")
        elif jtype == "prismatic":
            self.put(depth + 1, comment("limits unknown; URDF requires <limit> on a prismatic joint: a placeholder"))
            big = num(PLACEHOLDER_BOUND)
            self.put(depth + 1, f"<limit{attrs(lower='-' + big, upper=big, effort='0.0', velocity='0.0')}/>")
        s = j.spring
        if s is not None and s.d:
            self.put(depth + 1, f"<dynamics{attrs(damping=num(s.d))}/>")
        if s is not None and (s.k or s.q0):
            unit_k = "N m/rad" if j.type == "revolute" else "N/m"
            self.put(
                depth + 1,
                comment(f"joint spring k = {num(s.k)} {unit_k}, q0 = {num(s.q0)} not exported: URDF has no stiffness"),
            )
            self.drop(f"joint {j.name!r}: spring k = {num(s.k)} {unit_k}, q0 = {num(s.q0)} (URDF has no stiffness)")
        c = self.mimic.get(j.name)
        if c is not None:
            self.put(depth + 1, f"<mimic{attrs(joint=c.leader, multiplier=num(c.multiplier), offset=num(c.offset))}/>")
        self.put(depth, "</joint>")
