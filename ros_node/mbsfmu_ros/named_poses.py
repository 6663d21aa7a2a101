"""Named poses of simulation_interfaces (NamedPose: name, description, tags, pose "relative to
world") from the model's named joint configurations (a model file's ``named_poses``, an SRDF's
group states). Pure functions of the model; no ROS types.

A named pose here is a robot configuration, while NamedPose carries a world pose: its ``pose`` is
where the model stands in that configuration: the floating base's pose there (the root body on a
free joint, ``entity_state.floating_base``), or else the identity (a fixed-base model's joints hang
from the world frame); the joint values are in ``description``; the tags are
the model's name (the entity the pose fits) and the SRDF group. Its bounds (GetNamedPoseBounds)
are the axis-aligned box, in world axes relative to that pose, around every point the model
defines in that configuration: the body frame origins, centres of mass and named frames (the
model has no collision shapes)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from mbsfmu.engine.spatial import R_to_quat, quat_mul

from . import entity_state as es


@dataclass(frozen=True)
class PoseInfo:
    """One NamedPose's contents: position [m] and orientation quaternion (x, y, z, w) (message
    order) in world axes."""

    name: str
    description: str
    tags: tuple[str, ...]
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]


def base_pose(model, kin) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(position [m], quaternion (x, y, z, w)) in world of the model's floating base in kinematics
    ``kin``, else the identity."""
    i = es.floating_base(model)
    if i is None:
        return (0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0)
    s = es.body_state(kin, i)
    return s.position, s.orientation


def pose_info(model, name: str) -> PoseInfo:
    """The NamedPose contents of the model's named pose ``name`` (InputError if none)."""
    q = model.named_configuration(name)
    pose = model.spec.named_poses[name]
    values = ", ".join(f"{j} = {' '.join(f'{v:.9g}' for v in val)}" for j, val in pose.q.items())
    group = f" of group {pose.group}" if pose.group else ""
    position, orientation = base_pose(model, model.forward_kinematics(q))
    return PoseInfo(
        name=name,
        description=f"joint configuration{group}: {values} (other joints at their initial values)",
        tags=(model.name, *((pose.group,) if pose.group else ())),
        position=position,
        orientation=orientation,
    )


def matches(tags: tuple[str, ...], wanted: list[str], all_of: bool) -> bool:
    """TagsFilter: True for no wanted tags, else any (or, with all_of, all) of them in ``tags``."""
    if not wanted:
        return True
    hits = [t in tags for t in wanted]
    return all(hits) if all_of else any(hits)


def pose_bounds(model, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) (3,) corners [m] of the box around the body origins, centres of mass and named
    frames at the named pose ``name``, world axes, relative to the pose's position."""
    q = model.named_configuration(name)
    kin = model.forward_kinematics(q)
    bodies = range(1, model.N + 1)
    points = [kin.p[i] for i in bodies]
    points += [kin.point_position(i, model.tree.com[i]) for i in bodies]
    points += [kin.point_position(i, frame.p) for i, frame in model.frames.values()]
    P = np.array(points) - np.array(base_pose(model, kin)[0])
    return P.min(axis=0), P.max(axis=0)


def placed(info: PoseInfo, name: str, placement: tuple[np.ndarray, np.ndarray] | None) -> PoseInfo:
    """``info`` served as ``name``, its pose moved by a robot's placement (R_w (3, 3), p_w (3,) [m],
    its world frame in the node's): p = p_w + R_w p_r, q = q_w (x) q_r (None: as it is)."""
    if placement is None:
        return replace(info, name=name)
    R_w, p_w = placement
    position = p_w + R_w @ np.asarray(info.position)
    x, y, z, w = info.orientation
    qw, qx, qy, qz = quat_mul(R_to_quat(R_w), np.array([w, x, y, z]))
    return replace(
        info,
        name=name,
        position=tuple(float(v) for v in position),
        orientation=(float(qx), float(qy), float(qz), float(qw)),
    )


def turned_box(R: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) of the axis-aligned box holding the box [lower, upper] turned by R (3, 3):
    its corners turned, their extremes (a box around the points, larger than theirs when R is
    not a signed permutation)."""
    corners = np.array([[(lower, upper)[b][k] for k, b in enumerate(bits)] for bits in np.ndindex(2, 2, 2)])
    turned = corners @ R.T
    return turned.min(axis=0), turned.max(axis=0)
