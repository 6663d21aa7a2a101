"""Checks on a model description that collect every problem, each with its location."""
from __future__ import annotations

import math

import numpy as np

from .. import joints
from ..errors import Problem
from .description import WORLD, ModelSpec

INERTIA_RTOL = 1e-9  # relative slack for symmetry, PSD and triangle-inequality checks


def check_spec(spec: ModelSpec) -> list[Problem]:
    """Every problem in the bodies' names, joints, mass properties and frames."""
    problems: list[Problem] = []
    seen_body: dict[str, int] = {}
    seen_joint: dict[str, int] = {}
    for k, b in enumerate(spec.bodies):
        at = ("bodies", k)
        if b.name == WORLD:
            problems.append(Problem(at + ("name",), "'world' is the inertial frame and cannot name a body"))
        if b.name in seen_body:
            problems.append(Problem(at + ("name",), f"duplicate body name {b.name!r} (also bodies[{seen_body[b.name]}])"))
        seen_body.setdefault(b.name, k)
        if b.joint.name in seen_joint:
            problems.append(Problem(at + ("joint", "name"),
                                    f"duplicate joint name {b.joint.name!r} (also bodies[{seen_joint[b.joint.name]}])"))
        seen_joint.setdefault(b.joint.name, k)
        problems += _check_joint(b.joint, at + ("joint",))
        problems += _check_mass(b, at)
    return problems


def _finite(values) -> bool:
    return all(math.isfinite(float(x)) for x in np.ravel(values))


def _check_joint(joint, at) -> list[Problem]:
    out = []
    if joint.type not in joints.JOINT_TYPES:
        from .topology import _suggest
        out.append(Problem(at + ("type",), f"unknown joint type {joint.type!r}; expected one of "
                           f"{', '.join(joints.JOINT_TYPES)}" + _suggest(joint.type, joints.JOINT_TYPES)))
        return out
    jt = joints.JOINT_TYPES[joint.type]
    if jt in (joints.REVOLUTE, joints.PRISMATIC):
        if not _finite(joint.axis):
            out.append(Problem(at + ("axis",), f"axis {list(joint.axis)} is not finite"))
        elif np.linalg.norm(joint.axis) < 1e-12:
            out.append(Problem(at + ("axis",), "zero-length axis: a revolute or prismatic joint needs a direction"))
    for key, vals in (("xyz", joint.origin.xyz), ("rpy", joint.origin.rpy)):
        if not _finite(vals):
            out.append(Problem(at + ("origin", key), f"{list(vals)} is not finite"))
    if joint.spring is not None:
        if joints.NV[jt] != 1:
            out.append(Problem(at + ("spring",), f"a joint spring needs a 1-DoF joint, this one is {joint.type}"))
        for key in ("k", "d", "q0"):
            val = getattr(joint.spring, key)
            if not math.isfinite(val):
                out.append(Problem(at + ("spring", key), f"{val} is not finite"))
            elif key in ("k", "d") and val < 0:
                out.append(Problem(at + ("spring", key), f"negative {'stiffness' if key == 'k' else 'damping'} {val}"))
    return out


def _check_mass(b, at) -> list[Problem]:
    out = []
    if not math.isfinite(b.mass):
        out.append(Problem(at + ("mass",), f"mass {b.mass} is not finite"))
    elif b.mass < 0:
        out.append(Problem(at + ("mass",), f"negative mass {b.mass} kg"))
    if not _finite(b.com):
        out.append(Problem(at + ("com",), f"{list(b.com)} is not finite"))
    I = np.asarray(b.inertia, dtype=float)
    if not _finite(I):
        out.append(Problem(at + ("inertia",), "inertia has non-finite entries"))
        return out
    scale = max(np.abs(I).max(), 1e-300)
    if np.abs(I - I.T).max() > INERTIA_RTOL * scale:
        out.append(Problem(at + ("inertia",), "inertia is not symmetric"))
        return out
    ev = np.linalg.eigvalsh(I)
    if ev[0] < -INERTIA_RTOL * scale:
        out.append(Problem(at + ("inertia",), f"inertia is not positive semi-definite (principal moments {ev.tolist()})"))
    elif ev[0] + ev[1] < ev[2] - INERTIA_RTOL * scale:
        out.append(Problem(at + ("inertia",), "principal moments violate the triangle inequality "
                           f"I1 + I2 >= I3 ({ev[0]:.6g} + {ev[1]:.6g} < {ev[2]:.6g}): no rigid body has them"))
    for name, fr in b.frames.items():
        for key, vals in (("xyz", fr.xyz), ("rpy", fr.rpy)):
            if not _finite(vals):
                out.append(Problem(at + ("frames", name, key), f"{list(vals)} is not finite"))
    return out
