"""Checks on a model description that collect every problem, each with its location."""

from __future__ import annotations

import numpy as np

from ...errors import Problem, brief, did_you_mean
from .. import joints
from .description import WORLD, ModelSpec
from .elements import check_elements
from .loops import check_loops

INERTIA_RTOL = 1e-9  # relative slack for symmetry, PSD and triangle-inequality checks
AXIS_MIN = 1e-12  # shortest joint axis [-] taken as a direction


RESERVED = frozenset({"engine", "q", "qd", "u", "time", "loop"})  # trajectory column prefixes


def check_spec(spec: ModelSpec) -> list[Problem]:
    """Every problem in the names (bodies, joints, frames), joints, mass properties, gravity,
    wheels and force elements, initial values and loop-closure joints."""
    problems: list[Problem] = []
    _array(spec.gravity, (3,), ("gravity",), problems)
    first: dict[tuple[str, str], tuple] = {}
    for k, b in enumerate(spec.bodies):
        at = ("bodies", k)
        if b.name == WORLD:
            problems.append(Problem(at + ("name",), "'world' is the inertial frame and cannot name a body"))
        named = [("body", b.name, at + ("name",)), ("joint", b.joint.name, at + ("joint", "name"))]
        for what, name, path in named + [("wheel", w.name, at + ("wheels", j, "name")) for j, w in enumerate(b.wheels)]:
            if name in RESERVED:
                problems.append(
                    Problem(
                        path,
                        f"{what} name {name!r} is reserved (trajectory columns start with "
                        f"{', '.join(sorted(RESERVED))}): choose another",
                    )
                )
        for what, name, path in named + [("frame", f, at + ("frames", f)) for f in b.frames]:
            if (what, name) in first:
                problems.append(Problem(path, f"duplicate {what} name {name!r} (also {_where(first[what, name])})"))
            first.setdefault((what, name), path)
        problems += _check_joint(b.joint, at + ("joint",))
        problems += _check_mass(b, at)
        for fname, fr in b.frames.items():
            _array(fr.xyz, (3,), at + ("frames", fname, "xyz"), problems)
            _array(fr.rpy, (3,), at + ("frames", fname, "rpy"), problems)
    for k, f in enumerate(spec.forces):
        if f.name in RESERVED:
            problems.append(
                Problem(
                    ("forces", k, "name"),
                    f"force element name {f.name!r} is reserved ({', '.join(sorted(RESERVED))}): choose another",
                )
            )
    return problems + check_elements(spec) + _check_initial(spec) + check_loops(spec)


def locate(problems: list[Problem], lines: dict | None) -> list[Problem]:
    """``problems`` with the 1-based file line of their path, or of its nearest ancestor in the
    loader's path -> line map, in file order."""
    if not lines:
        return problems
    out = []
    for p in problems:
        path = p.path
        while path and path not in lines:
            path = path[:-1]
        out.append(Problem(p.path, p.message, lines.get(path)))
    return sorted(out, key=lambda p: (p.line is None, p.line or 0))


def _where(path: tuple) -> str:
    return Problem(path, "").where()


def _array(values, shape: tuple, at: tuple, problems: list[Problem]):
    """``values`` as a float array of ``shape`` with finite entries, else None and a problem."""
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        x = None
    if x is None or x.shape != shape:
        what = {(): "a number", (3, 3): "a 3x3 matrix"}.get(shape, f"{shape[0]} numbers")
        problems.append(Problem(at, f"expected {what}, got {brief(values)}"))
        return None
    if not np.all(np.isfinite(x)):
        problems.append(Problem(at, f"{x.tolist()} is not finite"))
        return None
    return x


def _check_joint(joint, at) -> list[Problem]:
    out: list[Problem] = []
    _array(joint.origin.xyz, (3,), at + ("origin", "xyz"), out)
    _array(joint.origin.rpy, (3,), at + ("origin", "rpy"), out)
    if joint.type not in joints.JOINT_TYPES:
        out.append(
            Problem(
                at + ("type",),
                f"unknown joint type {joint.type!r}; expected one of "
                f"{', '.join(joints.JOINT_TYPES)}" + did_you_mean(joint.type, joints.JOINT_TYPES),
            )
        )
        return out
    jt = joints.JOINT_TYPES[joint.type]
    axis = _array(joint.axis, (3,), at + ("axis",), out)
    if axis is not None and jt in (joints.REVOLUTE, joints.PRISMATIC):
        with np.errstate(over="ignore", under="ignore"):
            n = np.linalg.norm(axis)
        if n < AXIS_MIN:
            out.append(
                Problem(at + ("axis",), f"zero-length axis {axis.tolist()}: a {joint.type} joint needs a direction")
            )
        elif not np.isfinite(n):
            out.append(Problem(at + ("axis",), f"axis {axis.tolist()} is too long to normalise; give a unit vector"))
    if joint.spring is not None:
        if joints.NV[jt] != 1:
            out.append(Problem(at + ("spring",), f"a joint spring needs a 1-DoF joint, this one is {joint.type}"))
        for key in ("k", "d", "q0"):
            val = _array(getattr(joint.spring, key), (), at + ("spring", key), out)
            if val is not None and key in ("k", "d") and val < 0:
                out.append(Problem(at + ("spring", key), f"negative {'stiffness' if key == 'k' else 'damping'} {val}"))
    return out


def _check_mass(b, at) -> list[Problem]:
    out: list[Problem] = []
    m = _array(b.mass, (), at + ("mass",), out)
    if m is not None and m < 0:
        out.append(Problem(at + ("mass",), f"negative mass {m} kg"))
    c = _array(b.com, (3,), at + ("com",), out)
    with np.errstate(over="ignore"):
        overflows = m is not None and c is not None and not np.isfinite(m * np.abs(c).max() ** 2)
    if overflows:
        out.append(Problem(at + ("com",), f"mass {m} kg with com {c.tolist()} m overflows m |c|^2"))
    I = _array(b.inertia, (3, 3), at + ("inertia",), out)
    if I is None:
        return out
    scale = max(np.abs(I).max(), 1e-300)
    if np.abs(I - I.T).max() > INERTIA_RTOL * scale:
        out.append(Problem(at + ("inertia",), "inertia is not symmetric"))
        return out
    ev = np.linalg.eigvalsh(I / scale) * scale
    if ev[0] < -INERTIA_RTOL * scale:
        out.append(
            Problem(at + ("inertia",), f"inertia is not positive semi-definite (principal moments {ev.tolist()})")
        )
    elif ev[0] + ev[1] < ev[2] - INERTIA_RTOL * scale:
        out.append(
            Problem(
                at + ("inertia",),
                "principal moments violate the triangle inequality "
                f"I1 + I2 >= I3 ({ev[0]:.6g} + {ev[1]:.6g} < {ev[2]:.6g}): no rigid body has them",
            )
        )
    return out


def _check_initial(spec: ModelSpec) -> list[Problem]:
    """Initial q and qd by joint (or wheel) name: nq or nv finite values, unit quaternions."""
    jtypes = {b.joint.name: b.joint.type for b in spec.bodies}
    jtypes |= {w.name: "revolute" for b in spec.bodies for w in b.wheels}
    out: list[Problem] = []
    for key, values, size in (("q", spec.initial_q, joints.NQ), ("qd", spec.initial_qd, joints.NV)):
        for name, val in values.items():
            at = ("initial", key, name)
            if name not in jtypes:
                out.append(Problem(at, f"unknown joint {name!r}" + did_you_mean(name, jtypes)))
                continue
            if jtypes[name] not in joints.JOINT_TYPES:
                continue
            jt = joints.JOINT_TYPES[jtypes[name]]
            vals = tuple(val) if isinstance(val, (list, tuple)) else (val,)
            x = _array(vals, (len(vals),), at, out)
            if x is not None and x.shape != (size[jt],):
                out.append(
                    Problem(at, f"joint {name!r} ({jtypes[name]}) takes {size[jt]} value(s) for {key}, got {x.size}")
                )
            elif x is not None and key == "q" and jt in (joints.SPHERICAL, joints.FREE):
                if abs(np.linalg.norm(x[-4:]) - 1.0) > 1e-9:
                    out.append(
                        Problem(
                            at,
                            f"quaternion (w, x, y, z) {x[-4:].tolist()} has norm "
                            f"{np.linalg.norm(x[-4:]):.12g}, must be 1",
                        )
                    )
    return out
