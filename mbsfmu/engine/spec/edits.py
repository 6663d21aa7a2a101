"""Parameter paths into a model description, for sweeps and tunable parameters:
``body.<name>.mass`` [kg], ``body.<name>.com[k]`` [m], ``gravity[k]`` [m/s^2] (k = 1..3),
``body.<name>.inertia.Ixx|Iyy|Izz|Ixy|Ixz|Iyz`` [kg m^2] (about the CoM, body axes; a product of
inertia sets both symmetric entries), ``joint.<name>.spring.k|d|q0``. ``edit_spec`` returns a new
ModelSpec; the Model built from it is validated as any other."""

from __future__ import annotations

import re
from dataclasses import replace

from ...errors import InputError
from .description import ModelSpec, Spring

_PATTERNS = (
    (re.compile(r"body\.(?P<name>[^\[\]]+)\.mass"), "mass"),
    (re.compile(r"body\.(?P<name>[^\[\]]+)\.com\[(?P<k>[123])\]"), "com"),
    (re.compile(r"body\.(?P<name>[^\[\]]+)\.inertia\.(?P<field>I(?:xx|yy|zz|xy|xz|yz))"), "inertia"),
    (re.compile(r"gravity\[(?P<k>[123])\]"), "gravity"),
    (re.compile(r"joint\.(?P<name>[^\[\]]+)\.spring\.(?P<field>k|d|q0)"), "spring"),
)


def edit_spec(spec: ModelSpec, path: str, value: float) -> ModelSpec:
    """spec with the parameter at ``path`` set to ``value``; InputError for an unknown path."""
    for pattern, kind in _PATTERNS:
        m = pattern.fullmatch(path)
        if m is None:
            continue
        if kind == "gravity":
            g = list(spec.gravity)
            g[int(m["k"]) - 1] = value
            return replace(spec, gravity=tuple(g))
        names = [b.name for b in spec.bodies] if kind != "spring" else [b.joint.name for b in spec.bodies]
        if m["name"] not in names:
            raise InputError(
                f"parameter {path!r}: no {'joint' if kind == 'spring' else 'body'} {m['name']!r} in model "
                f"{spec.name}; there are: {', '.join(names)}"
            )
        k = names.index(m["name"])
        b = spec.bodies[k]
        if kind == "mass":
            b = replace(b, mass=value)
        elif kind == "com":
            com = list(b.com)
            com[int(m["k"]) - 1] = value
            b = replace(b, com=tuple(com))
        elif kind == "inertia":
            i, j = ("xyz".index(m["field"][1]), "xyz".index(m["field"][2]))
            I = [list(row) for row in b.inertia]
            I[i][j] = I[j][i] = value
            b = replace(b, inertia=tuple(tuple(row) for row in I))
        else:
            spring = b.joint.spring or Spring()
            b = replace(b, joint=replace(b.joint, spring=replace(spring, **{m["field"]: value})))
        return replace(spec, bodies=spec.bodies[:k] + (b,) + spec.bodies[k + 1 :])
    raise InputError(
        f"unknown parameter path {path!r}: expected body.<name>.mass, body.<name>.com[1..3], "
        "body.<name>.inertia.Ixx|Iyy|Izz|Ixy|Ixz|Iyz, gravity[1..3] or joint.<name>.spring.k|d|q0"
    )
