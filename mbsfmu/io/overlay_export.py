"""URDF overlay export: what a model's URDF export (urdf_export.py) cannot say, as the URDF overlay
that the URDF reader takes (mbsfmu/io/urdf.py, ``load_overlay``; docs/guides/urdf.md, "Overlay"),
so that loading the overlay gives the model back: the same bodies, joints, gravity, joint springs,
actuated flags, force elements and initial state, hence the same trajectory.

What changes: a free root joint that is the root link itself is named ``root_joint`` (the URDF
readers' name; its initial state is written under it), and reaction wheels are rotor links on
continuous joints (inputs ``<wheel>.tau`` instead of ``<wheel>.torque``; the same dynamics,
urdf_export.py). The initial state of a spherical joint is not written: its URDF coordinates are
x-y-z Euler angles (listed as dropped).

The document is YAML in flow style, names as JSON strings (valid YAML), numbers as ``repr(float)``
(they read back bit for bit)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from ..engine.spec.description import BodyWrench, ModelSpec, SpringDamper, Thruster
from .urdf import OVERLAY_VERSION, root_joint_name
from .urdf_export import UrdfExport, export_urdf, num

if TYPE_CHECKING:
    from ..engine.model import Model


def export_overlay(spec_or_model: ModelSpec | Model, urdf: str, source: str | None = None) -> UrdfExport:
    """The overlay of a model whose URDF export is the file ``urdf`` (a path relative to the
    overlay): text, and ``dropped``, what neither file says. ModelError as ``export_urdf``."""
    spec = spec_or_model if isinstance(spec_or_model, ModelSpec) else spec_or_model.spec
    if source is None and not isinstance(spec_or_model, ModelSpec):
        source = spec_or_model.source
    out = export_urdf(spec_or_model, None, source)
    root = root_joint_name(out.joints)
    rename = {out.floating_root: root} if out.floating_root else {}
    origin = f" from {Path(source).name}" if source else ""
    lines = [
        f"# URDF overlay written by mbsfmu export-urdf{origin}: what {urdf} cannot say. Load this file",
        "# (mbsfmu info / build-fmu, or a scenario's model:) to get the model back; docs/guides/urdf-export.md",
        f"version: {OVERLAY_VERSION}",
        f"urdf: {text(urdf)}",
        f"name: {text(spec.name)}",
    ]
    if out.floating_root:
        lines.append(f"floating_base: true  # joint {text(out.floating_root)} of the model, named {text(root)} here")
    lines.append(f"gravity: {vector(spec.gravity)}  # [m/s^2], world axes")
    joints = joint_entries(spec, rename)
    if joints:
        lines.append("joints:")
        lines += [f"  {text(name)}: {entry}" for name, entry in joints]
    if spec.forces:
        lines.append("forces:")
        lines += [f"  - {force_entry(f)}" for f in spec.forces]
    spherical = {b.joint.name for b in spec.bodies if b.joint.type == "spherical"}
    dropped = []
    initial = []
    for key, values in (("q", spec.initial_q), ("qd", spec.initial_qd)):
        kept = {rename.get(j, j): v for j, v in values.items() if j not in spherical}
        dropped += [
            f"the initial {key} of spherical joint {j!r} (its URDF coordinates are x-y-z Euler angles)"
            for j in values
            if j in spherical
        ]
        if kept:
            initial += [f"  {key}:", *(f"    {text(j)}: {vector(v)}" for j, v in kept.items())]
    if initial:
        lines += ["initial:", *initial]
    return UrdfExport("\n".join(lines) + "\n", tuple(dropped))


def joint_entries(spec: ModelSpec, rename: dict) -> list[tuple[str, str]]:
    """(URDF joint name, ``{spring: {k, d, q0}, actuated: ...}``) of the joints with a spring
    stiffness or rest position, or an actuated flag other than the default (free: no, else yes)."""
    out = []
    for b in spec.bodies:
        j, fields = b.joint, []
        if j.spring is not None and (j.spring.k or j.spring.q0):
            s = j.spring
            fields.append(f"spring: {{k: {num(s.k)}, d: {num(s.d)}, q0: {num(s.q0)}}}")
        if j.actuated is not None and j.actuated != (j.type != "free"):
            fields.append(f"actuated: {str(j.actuated).lower()}")
        if fields:
            out.append((rename.get(j.name, j.name), "{" + ", ".join(fields) + "}"))
    return out


def force_entry(f) -> str:
    """A force element in the model file's form (mbsfmu/engine/spec/elements.py, parse_forces)."""
    if isinstance(f, SpringDamper):
        a, b = (f"{{body: {text(x.body)}, point: {vector(x.point)}}}" for x in (f.a, f.b))
        items = f"type: spring, name: {text(f.name)}, a: {a}, b: {b}, k: {num(f.k)}, d: {num(f.d)}, l0: {num(f.l0)}"
    elif isinstance(f, Thruster):
        items = (
            f"type: thruster, name: {text(f.name)}, body: {text(f.body)}, point: {vector(f.point)}, "
            f"direction: {vector(f.direction)}"
        )
    elif isinstance(f, BodyWrench):
        items = (
            f"type: wrench, name: {text(f.name)}, body: {text(f.body)}, point: {vector(f.point)}, axes: {text(f.axes)}"
        )
    else:  # a new force element type must be written here too
        raise TypeError(f"no overlay form for force element {f!r}")
    return "{" + items + "}"


def text(s: str) -> str:
    """A name as a YAML scalar: a JSON string (double-quoted, escaped)."""
    return json.dumps(str(s))


def vector(v) -> str:
    """Numbers as a YAML flow list, each the shortest text that reads back to the same double."""
    return "[" + ", ".join(num(x) for x in v) + "]"


__all__ = ["export_overlay"]
