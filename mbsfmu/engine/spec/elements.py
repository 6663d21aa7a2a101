"""Model-file sections for reaction wheels (in a body) and force elements (top-level ``forces``)."""

from __future__ import annotations

import math

import numpy as np

from ...errors import Problem, brief
from .description import WORLD, Anchor, BodyWrench, ModelSpec, SpringDamper, Thruster, Wheel

WHEEL_KEYS = ("name", "axis", "inertia", "position")
FORCE_TYPES = ("spring", "thruster", "wrench")
FORCE_KEYS = {
    "spring": ("name", "type", "a", "b", "k", "d", "l0"),
    "thruster": ("name", "type", "body", "point", "direction"),
    "wrench": ("name", "type", "body", "point", "axes"),
}
REQUIRED = {"spring": ("name", "a", "b"), "thruster": ("name", "body", "direction"), "wrench": ("name", "body")}
ANCHOR_KEYS = ("body", "point")


def parse_wheels(r, raw, at) -> tuple[Wheel, ...]:
    """``wheels: [{name, axis, inertia, position}]`` of a body (r: the loader's _Reader)."""
    if not isinstance(raw, list):
        r.problem(at, f"expected a list of wheels, got {type(raw).__name__}")
        return ()
    out = []
    for k, w in enumerate(raw):
        wat = at + (k,)
        w = r.mapping(w, wat, WHEEL_KEYS, required=("name", "axis", "inertia"))
        out.append(
            Wheel(
                name=r.string(w.get("name"), wat + ("name",)) if "name" in w else f"<wheel {k}>",
                axis=r.vector(w.get("axis", [0.0, 0.0, 1.0]), wat + ("axis",), 3),
                inertia=r.number(w.get("inertia", 0.0), wat + ("inertia",)),
                position=r.vector(w.get("position", [0.0, 0.0, 0.0]), wat + ("position",), 3),
            )
        )
    return tuple(out)


def parse_forces(r, raw, at=("forces",)) -> tuple:
    """``forces: [{type: spring|thruster|wrench, ...}]``."""
    if not isinstance(raw, list):
        r.problem(at, f"expected a list of force elements, got {type(raw).__name__}")
        return ()
    out = []
    complete = True  # after an element that cannot be read, later ones are parsed for form only,
    for k, f in enumerate(raw):  # so that elements keep their file index in the spec
        fat = at + (k,)
        if not isinstance(f, dict):
            r.problem(fat, f"expected a mapping with a 'type' of {', '.join(FORCE_TYPES)}")
            complete = False
            continue
        ftype = f.get("type")
        if ftype not in FORCE_TYPES:
            import difflib

            close = difflib.get_close_matches(ftype, FORCE_TYPES, n=1) if isinstance(ftype, str) else []
            r.problem(
                fat + ("type",),
                f"unknown force element type {brief(ftype)}; expected one of {', '.join(FORCE_TYPES)}"
                + (f" (did you mean {close[0]!r}?)" if close else ""),
            )
            complete = False
            continue
        f = r.mapping(f, fat, FORCE_KEYS[ftype], required=REQUIRED[ftype])
        name = r.string(f.get("name"), fat + ("name",)) if "name" in f else f"<force {k}>"
        if ftype == "spring":
            out.append(
                SpringDamper(
                    name=name,
                    a=_anchor(r, f.get("a"), fat + ("a",)),
                    b=_anchor(r, f.get("b"), fat + ("b",)),
                    k=r.number(f.get("k", 0.0), fat + ("k",)),
                    d=r.number(f.get("d", 0.0), fat + ("d",)),
                    l0=r.number(f.get("l0", 0.0), fat + ("l0",)),
                )
            )
        elif ftype == "thruster":
            out.append(
                Thruster(
                    name=name,
                    body=r.string(f.get("body"), fat + ("body",)),
                    point=r.vector(f.get("point", [0.0, 0.0, 0.0]), fat + ("point",), 3),
                    direction=r.vector(f.get("direction", [1.0, 0.0, 0.0]), fat + ("direction",), 3),
                )
            )
        else:
            axes = f.get("axes", "world")
            if axes not in ("world", "body"):
                r.problem(fat + ("axes",), f"axes must be 'world' or 'body', got {brief(axes)}")
            out.append(
                BodyWrench(
                    name=name,
                    body=r.string(f.get("body"), fat + ("body",)),
                    point=r.vector(f.get("point", [0.0, 0.0, 0.0]), fat + ("point",), 3),
                    axes=axes if isinstance(axes, str) else "world",
                )
            )
    return tuple(out) if complete else tuple(out[: _first_gap(raw)])


def _first_gap(raw: list) -> int:
    """Index of the first force element that could not be read at all."""
    return next(k for k, f in enumerate(raw) if not isinstance(f, dict) or f.get("type") not in FORCE_TYPES)


def _anchor(r, raw, at) -> Anchor:
    if raw is None:  # missing: reported by the element's required keys
        return Anchor(WORLD)
    a = r.mapping(raw, at, ANCHOR_KEYS, required=("body",))
    return Anchor(
        body=r.string(a.get("body"), at + ("body",)) if "body" in a else WORLD,
        point=r.vector(a.get("point", [0.0, 0.0, 0.0]), at + ("point",), 3),
    )


def check_elements(spec: ModelSpec) -> list[Problem]:
    """Wheels and force elements: finite, positive where needed, referring to known bodies,
    names unique among bodies, joints, wheels and force elements (they name inputs)."""
    problems = []
    bodies = {b.name for b in spec.bodies}
    names: dict[str, tuple] = {}
    for k, b in enumerate(spec.bodies):
        names.setdefault(b.joint.name, ("bodies", k, "joint", "name"))
    for k, b in enumerate(spec.bodies):
        for w_idx, w in enumerate(b.wheels):
            at = ("bodies", k, "wheels", w_idx)
            if w.name in names or w.name in bodies:
                problems.append(
                    Problem(at + ("name",), f"wheel name {w.name!r} is already used by a body, joint or wheel")
                )
            names.setdefault(w.name, at)
            if not (math.isfinite(w.inertia) and w.inertia > 0):
                problems.append(
                    Problem(at + ("inertia",), f"wheel spin inertia must be positive [kg m^2], got {w.inertia}")
                )
            if not all(map(math.isfinite, w.axis)) or np.linalg.norm(w.axis) < 1e-12:
                problems.append(Problem(at + ("axis",), f"wheel axis {list(w.axis)} must be a finite, non-zero vector"))
    for k, f in enumerate(spec.forces):
        at = ("forces", k)
        if f.name in names:
            problems.append(Problem(at + ("name",), f"force element name {f.name!r} is already used"))
        names.setdefault(f.name, at)
        refs = (
            [("a", "body", f.a.body), ("b", "body", f.b.body)]
            if isinstance(f, SpringDamper)
            else [("body", None, f.body)]
        )
        for key, sub, body in refs:
            if body not in bodies and not (isinstance(f, SpringDamper) and body == WORLD):
                import difflib

                close = difflib.get_close_matches(body, sorted(bodies), n=1)
                problems.append(
                    Problem(
                        at + ((key, sub) if sub else (key,)),
                        f"unknown body {body!r}" + (f" (did you mean {close[0]!r}?)" if close else ""),
                    )
                )
        if isinstance(f, SpringDamper):
            for key in ("k", "d", "l0"):
                if getattr(f, key) < 0:
                    problems.append(Problem(at + (key,), f"{key} must not be negative, got {getattr(f, key)}"))
            if f.a.body == f.b.body:
                problems.append(Problem(at + ("b", "body"), f"spring {f.name!r} connects body {f.a.body!r} to itself"))
        if isinstance(f, Thruster) and np.linalg.norm(f.direction) < 1e-12:
            problems.append(Problem(at + ("direction",), "zero-length thrust direction"))
    return problems
