"""Checks on a model description that collect every problem, each with its location."""

from __future__ import annotations

import math

import numpy as np

from ...errors import Problem, brief, did_you_mean
from .. import joints
from ..spatial import Array
from .couplings import check_couplings
from .description import WORLD, ModelSpec
from .elements import check_elements
from .loops import check_loops

# Relative slack for the symmetry, PSD and triangle-inequality checks, against the scale S of the
# body's spatial inertia about its frame origin, max(|I_c|, m |c|^2) (the quantity every algorithm
# uses, RBDA Eq. 2.63). Forming it (or a composite of n welded parts, lumping.py) in float64 leaves
# ~n eps S (2e-14 S for n = 100); inputs written as decimal text with 9 significant digits carry up
# to 5e-10 S. A principal moment off by less than 1e-9 S is below what the model itself resolves:
# e.g. a point mass with inertia 1e-35 (a URDF's rounded zero) is accepted, a vendor inertia that
# breaks I1 + I2 >= I3 by a percent is not.
INERTIA_RTOL = 1e-9
# what to do about a non-physical inertia, for a spec built in Python (the loaders pass the advice
# for their file kind: engine/spec/repair.py ``advice``)
REPAIR_HINT = (
    "; to load it anyway with the smallest moments raised (each change reported), repair the spec first: "
    "Model(mbsfmu.engine.spec.repair.repair_inertia(spec)[0])"
)
# Largest mass [kg] and inertia entry [kg m^2] taken: the engine multiplies them by lengths and rates
# (KE = 1/2 m v^2, PE = m g z, momenta), and float64 overflows at 1.8e308, so a mass of 1e308 passed
# the file and gave an infinite PE in the first row (issue 37). 1e150, a round number below
# sqrt(1.8e308) = 1.3e154, keeps those products finite for lengths and rates up to 1e79.
MASS_MAX = 1e150
AXIS_MIN = 1e-12  # shortest joint axis [-] taken as a direction


RESERVED = frozenset({"engine", "q", "qd", "u", "time", "loop"})  # trajectory column prefixes


def check_spec(spec: ModelSpec, repair_hint: str = REPAIR_HINT) -> list[Problem]:
    """Every problem in the names (bodies, joints, frames), joints, mass properties, gravity,
    wheels and force elements, initial values and loop-closure joints; ``repair_hint`` ends the
    message of a non-physical inertia (what to do, for the spec's source)."""
    problems: list[Problem] = []
    _array(spec.gravity, (3,), ("gravity",), problems)
    first: dict[tuple[str, str], tuple] = {}
    welded = welded_to_world(spec)
    bodies = {b.name for b in spec.bodies}
    clean = _mass_clean(spec.bodies, welded)
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
        if not clean[k]:
            problems += _check_mass(b, at, moving=b.name not in welded, repair_hint=repair_hint)
        for fname, fr in b.frames.items():
            _array(fr.xyz, (3,), at + ("frames", fname, "xyz"), problems)
            _array(fr.rpy, (3,), at + ("frames", fname, "rpy"), problems)
            # one TF frame per name: /tf names the bodies, /tf_static the frames
            if fname in bodies and not (fname == b.name and _at_origin(fr)):
                problems.append(
                    Problem(
                        ("bodies", k, "frames", fname),
                        f"frame name {fname!r} names a body: only a body's own frame at its origin "
                        "(xyz and rpy zero) may share its name; choose another",
                    )
                )
    for k, f in enumerate(spec.forces):
        if f.name in RESERVED:
            problems.append(
                Problem(
                    ("forces", k, "name"),
                    f"force element name {f.name!r} is reserved ({', '.join(sorted(RESERVED))}): choose another",
                )
            )
    return problems + check_elements(spec) + _check_initial(spec) + check_loops(spec) + check_couplings(spec)


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


def _at_origin(fr) -> bool:
    """True for a frame origin with xyz = rpy = 0 (False if either is not three numbers)."""
    try:
        return all(float(v) == 0.0 for v in (*fr.xyz, *fr.rpy)) and len(fr.xyz) == len(fr.rpy) == 3
    except (TypeError, ValueError):
        return False


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
    if not math.isfinite(x.sum()) and not np.all(np.isfinite(x)):  # a finite sum: every entry finite
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


def welded_to_world(spec: ModelSpec) -> set[str]:
    """Names of the bodies joined to the world by fixed joints only: they never move, so their
    mass properties never enter the dynamics (only the constant PE of gravity)."""
    by_name = {b.name: b for b in spec.bodies}
    welded: dict[str, bool] = {}  # each body decided once: O(N) for any tree
    for b in spec.bodies:
        chain: dict[str, None] = {}  # the bodies walked to decide b, in order (a cycle is not welded)
        name, answer = b.name, False
        while True:
            if name in welded:
                answer = welded[name]
                break
            body = by_name.get(name)
            if body is None or body.joint.type != "fixed" or name in chain:
                break
            chain[name] = None
            if body.parent == WORLD:
                answer = True
                break
            name = body.parent
        welded.update(dict.fromkeys(chain, answer))
    return {name for name, yes in welded.items() if yes}


def inertia_scale(m: float, c: Array, I: Array) -> float:
    """S = max(|I_c|, m |c|^2) [kg m^2]: the scale of the spatial inertia about the body's frame
    origin (RBDA Eq. 2.63), against which INERTIA_RTOL is taken."""
    scale = max(float(np.abs(I).max()), 1e-300)
    return max(scale, m * float(c @ c)) if m > 0 else scale


_OVERFLOW = (
    " (energies and momenta multiply it by squared lengths and rates: past this they overflow float64's "
    "1.8e308 and a run's energy is infinite); check the unit"
)


def _check_mass(b, at, moving: bool = True, repair_hint: str = REPAIR_HINT) -> list[Problem]:
    """Finite mass properties; for a moving body also m >= 0, I_c symmetric, PSD, triangle
    inequality (tolerance: INERTIA_RTOL)."""
    out: list[Problem] = []
    m = _array(b.mass, (), at + ("mass",), out)
    if m is not None and m < 0 and moving:
        out.append(Problem(at + ("mass",), f"negative mass {m} kg"))
    if m is not None and abs(m) > MASS_MAX:
        out.append(Problem(at + ("mass",), f"mass {m:g} kg is beyond {MASS_MAX:g} kg{_OVERFLOW}"))
        m = None
    c = _array(b.com, (3,), at + ("com",), out)
    with np.errstate(over="ignore", invalid="ignore"):  # 0 kg x inf: not finite either
        overflows = m is not None and c is not None and not np.isfinite(m * np.abs(c).max() ** 2)
    if overflows:
        out.append(Problem(at + ("com",), f"mass {m} kg with com {c.tolist()} m overflows m |c|^2"))
    I = _array(b.inertia, (3, 3), at + ("inertia",), out)
    if I is not None and np.abs(I).max() > MASS_MAX:
        out.append(
            Problem(at + ("inertia",), f"an entry {np.abs(I).max():g} kg m^2 is beyond {MASS_MAX:g} kg m^2{_OVERFLOW}")
        )
        return out
    if I is None or not moving:
        return out
    scale = inertia_scale(m if m is not None and not overflows else 0.0, c if c is not None else np.zeros(3), I)
    if np.abs(I - I.T).max() > INERTIA_RTOL * scale:
        out.append(Problem(at + ("inertia",), "inertia is not symmetric"))
        return out
    ev = np.linalg.eigvalsh(I / scale) * scale
    if ev[0] < -INERTIA_RTOL * scale:
        out.append(
            Problem(
                at + ("inertia",),
                f"inertia is not positive semi-definite (principal moments {ev.tolist()}){repair_hint}",
            )
        )
    elif ev[0] + ev[1] < ev[2] - INERTIA_RTOL * scale:
        out.append(
            Problem(
                at + ("inertia",),
                "principal moments violate the triangle inequality "
                f"I1 + I2 >= I3 ({ev[0]:.6g} + {ev[1]:.6g} < {ev[2]:.6g}): no rigid body has them{repair_hint}",
            )
        )
    return out


def _mass_clean(bodies, welded: set[str]) -> np.ndarray:
    """(N,) bool: bodies in which ``_check_mass`` finds nothing, shown for all bodies at once over
    arrays (a 10,000-body model in ~10 ms, one by one ~0.5 s); the others go through
    ``_check_mass``, which alone writes the messages. The tolerances here are half of
    ``_check_mass``'s, so a body is passed only with a margin far above the round-off by which a
    batched sum or eigenvalue may differ from the single one. All False when the values do not
    form (N,), (N, 3), (N, 3, 3) arrays of numbers."""
    n = len(bodies)
    none = np.zeros(n, dtype=bool)
    if n == 0:
        return none
    try:
        m = np.array([b.mass for b in bodies], dtype=float)
        c = np.array([b.com for b in bodies], dtype=float)
        I = np.array([b.inertia for b in bodies], dtype=float)
    except (TypeError, ValueError, OverflowError):
        return none
    if m.shape != (n,) or c.shape != (n, 3) or I.shape != (n, 3, 3):
        return none
    with np.errstate(all="ignore"):
        ok = np.isfinite(m) & np.isfinite(c).all(axis=1) & np.isfinite(I).all(axis=(1, 2))
        ok &= (np.abs(m) <= MASS_MAX) & (np.abs(I).max(axis=(1, 2)) <= MASS_MAX)
        ok &= np.isfinite(m * np.abs(c).max(axis=1) ** 2)
        moving = ok & np.array([b.name not in welded for b in bodies], dtype=bool)
        ok &= ~moving | (m >= 0)
        scale = np.maximum(np.abs(I).max(axis=(1, 2)), 1e-300)
        scale = np.where(m > 0, np.maximum(scale, m * np.einsum("ij,ij->i", c, c)), scale)
        tol = 0.5 * INERTIA_RTOL * scale
        ok &= ~moving | (np.abs(I - I.transpose(0, 2, 1)).max(axis=(1, 2)) <= tol)
        check = np.flatnonzero(moving & ok)
        ev = np.linalg.eigvalsh(I[check] / scale[check, None, None]) * scale[check, None]
        ok[check] &= (ev[:, 0] >= -tol[check]) & (ev[:, 0] + ev[:, 1] >= ev[:, 2] - tol[check])
    return ok


def _check_initial(spec: ModelSpec) -> list[Problem]:
    """Initial q and qd by joint (or wheel) name, and each named pose's q: nq or nv finite values,
    unit quaternions."""
    jtypes = {b.joint.name: b.joint.type for b in spec.bodies}
    jtypes |= {w.name: "revolute" for b in spec.bodies for w in b.wheels}
    out: list[Problem] = []
    for key, values, size in (("q", spec.initial_q, joints.NQ), ("qd", spec.initial_qd, joints.NV)):
        out += _check_joint_values(values, ("initial", key), key, size, jtypes)
    for name, pose in spec.named_poses.items():
        out += _check_joint_values(pose.q, ("named_poses", name), "q", joints.NQ, jtypes)
    return out


def _check_joint_values(values: dict, where: tuple, key: str, size, jtypes: dict) -> list[Problem]:
    """Problems of joint values ``values`` (by joint name) found at ``where``: unknown joints,
    wrong counts (``size`` per joint type), non-unit quaternions (key "q")."""
    out: list[Problem] = []
    for name, val in values.items():
        at = (*where, name)
        if name not in jtypes:
            out.append(Problem(at, f"unknown joint {name!r}" + did_you_mean(name, jtypes)))
            continue
        if jtypes[name] not in joints.JOINT_TYPES:
            continue
        jt = joints.JOINT_TYPES[jtypes[name]]
        vals = tuple(val) if isinstance(val, (list, tuple)) else (val,)
        x = _array(vals, (len(vals),), at, out)
        if x is not None and x.shape != (size[jt],):
            what = f"joint {name!r} ({jtypes[name]}) takes {size[jt]} value(s) for {key}, got {x.size}"
            out.append(Problem(at, what))
        elif x is not None and key == "q" and jt in (joints.SPHERICAL, joints.FREE):
            if abs(np.linalg.norm(x[-4:]) - 1.0) > 1e-9:
                out.append(
                    Problem(
                        at,
                        f"quaternion (w, x, y, z) {x[-4:].tolist()} has norm {np.linalg.norm(x[-4:]):.12g}, must be 1",
                    )
                )
    return out
