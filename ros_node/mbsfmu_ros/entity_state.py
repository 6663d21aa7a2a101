"""Entity states of simulation_interfaces (EntityState: pose and twist "in the reference frame",
here the world): every body is an entity named like the body; the floating base (a root body on a
free joint) is the one whose state can be set. Pure functions of the model, its kinematics and
(q, qd); no ROS types."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mbsfmu.engine.joints import FREE
from mbsfmu.engine.spatial import R_to_quat, quat_to_R

UNIT_TOLERANCE = 1e-6  # |1 - |quat|| above which a requested orientation is refused (not rescaled)


class EntityError(ValueError):
    """A request names no entity or an entity whose state cannot be set."""


class InvalidState(EntityError):
    """A requested pose or twist is invalid: a non-unit quaternion, a non-finite value."""


@dataclass(frozen=True)
class BodyState:
    """One body's pose and twist, world axes: position of the body origin [m], orientation as a
    quaternion (x, y, z, w) (message order), linear velocity of the body origin [m/s], angular
    velocity [rad/s]."""

    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]
    linear: tuple[float, float, float]
    angular: tuple[float, float, float]


def body_index(model, name: str) -> int:
    """1-based index of the body ``name``; EntityError (listing the entities) if none."""
    try:
        return model.body_names.index(name) + 1
    except ValueError:
        raise EntityError(f"no entity {name!r}; entities: {', '.join(model.body_names)}") from None


def floating_base(model) -> int | None:
    """1-based index of the first root body on a free joint (the floating base), else None."""
    for i in range(1, model.N + 1):
        if int(model.L[i]) == 0 and int(model.tree.jtype[i]) == FREE:
            return i
    return None


def body_state(kin, i: int) -> BodyState:
    """State of body i from kinematics ``kin`` (R (N+1,3,3), p (N+1,3), v (N+1,6) = [omega; v_o],
    body axes): pose and twist in world axes."""
    R = kin.R[i]
    w, x, y, z = R_to_quat(R)
    return BodyState(
        position=tuple(float(v) for v in kin.p[i]),
        orientation=(float(x), float(y), float(z), float(w)),
        linear=tuple(float(v) for v in R @ kin.v[i, 3:]),
        angular=tuple(float(v) for v in R @ kin.v[i, :3]),
    )


def set_base_state(
    model, kin, q, qd, name: str, pose: BodyState | None, twist: BodyState | None
) -> tuple[np.ndarray, np.ndarray]:
    """(q, qd) with the floating base ``name`` at ``pose``'s position and orientation (if given)
    and moving with ``twist``'s linear and angular velocity (if given), world axes; the other
    coordinates unchanged. The free joint's frame in the world follows from the current state:
    R0 = R_b R(q_b)^T, p0 = p_b - R0 q_b[0:3]. EntityError for another body, InvalidState for a
    non-unit quaternion or a non-finite value."""
    i = body_index(model, name)
    base = floating_base(model)
    if i != base:
        how = "has no floating base" if base is None else f"has one floating base, {model.body_names[base - 1]!r}"
        raise EntityError(f"entity {name!r} is moved by its joint, not set freely: the model {how}")
    iq, iv = int(model.tree.iq[i]), int(model.tree.iv[i])
    q, qd = np.array(q, dtype=float), np.array(qd, dtype=float)
    R_b, p_b = kin.R[i], kin.p[i]
    R0 = R_b @ quat_to_R(q[iq + 3 : iq + 7]).T
    p0 = p_b - R0 @ q[iq : iq + 3]
    R = R_b
    if pose is not None:
        x, y, z, w = pose.orientation
        quat = np.array([w, x, y, z], dtype=float)
        norm = float(np.linalg.norm(quat))
        if not np.all(np.isfinite(quat)) or abs(norm - 1.0) > UNIT_TOLERANCE:
            raise InvalidState(f"orientation of {name!r} is no unit quaternion (norm {norm:.9g})")
        if not np.all(np.isfinite(pose.position)):
            raise InvalidState(f"position of {name!r} is not finite: {pose.position}")
        R = quat_to_R(quat / norm)
        q[iq : iq + 3] = R0.T @ (np.asarray(pose.position, dtype=float) - p0)
        q[iq + 3 : iq + 7] = R_to_quat(R0.T @ R)
    if twist is not None:
        v, omega = np.asarray(twist.linear, dtype=float), np.asarray(twist.angular, dtype=float)
        if not (np.all(np.isfinite(v)) and np.all(np.isfinite(omega))):
            raise InvalidState(f"twist of {name!r} is not finite")
        qd[iv : iv + 3] = R.T @ v
        qd[iv + 3 : iv + 6] = R.T @ omega
    return q, qd
