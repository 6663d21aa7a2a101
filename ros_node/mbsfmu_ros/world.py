"""World files of the ROS node (docs/guides/ros2.md, "A world of several robots"): a YAML file
listing the robots one node simulates under one /clock, each with its model file (relative to the
world file), base pose in the world, namespace and frame_prefix. ``load_world`` checks the whole
file and raises one ``WorldError`` listing every problem with its line and field (the project's
loaders' convention, ``mbsfmu.io.reader``). No rclpy here.

    world: three_robots            # optional; the file's stem otherwise
    description: ...               # optional
    robots:
      - name: scara                # the entity name: unique, letters/digits/_ (a ROS name token)
        model: ../models/scara.yaml
        namespace: scara           # optional, default the name: topics <namespace>/joint_states ...
        frame_prefix: scara/       # optional, default "<name>/": every frame the robot publishes
        pose:                      # optional, default identity: the robot's world frame in the world
          position: [0, 0, 0]      # [m]
          orientation: [0, 0, 0, 1]  # unit quaternion (x, y, z, w), message order
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from mbsfmu.errors import ModelError
from mbsfmu.io.model_file import read_document
from mbsfmu.io.reader import Reader, describe

NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")  # a ROS name token (rcl's validate_node_name rules)
NAMESPACE = re.compile(r"/?[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*\Z")  # tokens joined by /
FRAME_PREFIX = re.compile(r"[A-Za-z0-9_/.\-]*\Z")  # tf2 frame characters, no spaces
UNIT_TOLERANCE = 1e-6  # |1 - |quat|| above which an orientation is refused (as entity_state's)
WORLD_KEYS = ("world", "description", "robots")
ROBOT_KEYS = ("name", "model", "namespace", "frame_prefix", "pose")
POSE_KEYS = ("position", "orientation")
IDENTITY = ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0, 1.0))


class WorldError(ModelError):
    """A world file the node cannot load; lists every problem with its line and field."""

    noun = "world"


@dataclass(frozen=True)
class RobotSpec:
    """One robot of a world: entity ``name``; ``model`` file (absolute path; for a model spawned
    from a string, the temporary file it was read from); topics under ``namespace``; every frame it publishes
    prefixed by ``frame_prefix``; ``position`` [m] and ``orientation`` (x, y, z, w) of its world
    frame (``<frame_prefix><frame_id>``) in the world frame."""

    name: str
    model: str
    namespace: str
    frame_prefix: str
    position: tuple[float, float, float] = IDENTITY[0]
    orientation: tuple[float, float, float, float] = IDENTITY[1]


@dataclass(frozen=True)
class WorldSpec:
    """A world: its ``name``, the file it came from (``source``), a description and its robots."""

    name: str
    source: str
    description: str
    robots: tuple[RobotSpec, ...]


def name_problem(name: object) -> str | None:
    """Why ``name`` cannot name an entity (a ROS name token: its topics' namespace), else None."""
    if not isinstance(name, str) or not NAME.match(name):
        return f"{describe(name)} is no entity name: letters, digits and _, not starting with a digit"
    return None


def namespace_problem(ns: object) -> str | None:
    """Why ``ns`` is no ROS namespace (tokens joined by /, optionally absolute), else None."""
    if not isinstance(ns, str) or not NAMESPACE.match(ns):
        return f"{describe(ns)} is no namespace: name tokens (letters, digits, _) joined by '/'"
    return None


def pose_problem(position, orientation) -> str | None:
    """Why a base pose is invalid (non-finite, no unit quaternion), else None."""
    if not all(math.isfinite(v) for v in (*position, *orientation)):
        return "pose has a non-finite value"
    norm = math.sqrt(sum(v * v for v in orientation))
    if abs(norm - 1.0) > UNIT_TOLERANCE:
        return f"orientation is no unit quaternion (x, y, z, w): norm {norm:.9g}"
    return None


def load_world(path: str | Path) -> WorldSpec:
    """The world file at ``path``, checked; WorldError lists every problem (file, line, field)."""
    path = Path(path)
    try:
        data, lines, problems = read_document(path)
    except ModelError as e:
        raise WorldError(e.problems, str(path)) from None
    r = Reader(lines)
    r.problems += problems
    if isinstance(data, dict) and "bodies" in data:
        raise WorldError.wrong_kind(str(path), "this is a model file, not a world file (a world lists 'robots')")
    top = r.mapping(data, (), WORLD_KEYS, required=("robots",))
    name = r.string(top["world"], ("world",)) if "world" in top else path.stem
    description = top.get("description", "")
    if not isinstance(description, str):
        r.problem(("description",), f"expected a text, got {describe(description)}")
        description = ""
    entries = top.get("robots", [])
    if not isinstance(entries, list) or not entries:
        if "robots" in top:
            r.problem(("robots",), f"expected a list of one robot or more, got {describe(entries)}")
        entries = []
    robots = [_robot(r, entry, ("robots", k), path.parent) for k, entry in enumerate(entries)]
    for field in ("name", "namespace", "frame_prefix"):
        seen: dict[str, int] = {}
        for k, robot in enumerate(robots):
            if robot is None:
                continue
            value = getattr(robot, field)
            derived = field not in entries[k] and robot.name == robots[seen.get(value, k)].name
            if value in seen and not derived:  # (a defaulted namespace or prefix of a taken name: said once)
                r.problem(("robots", k, field), f"{value!r} is taken by robots[{seen[value]}]: one per robot")
            seen.setdefault(value, k)
    if r.problems:
        raise WorldError(sorted(r.problems, key=lambda p: (p.line is None, p.line or 0)), str(path))
    return WorldSpec(name=name, source=str(path), description=description, robots=tuple(robots))


def _robot(r: Reader, entry, at: tuple, folder: Path) -> RobotSpec | None:
    """One robots[k] entry, its problems recorded in ``r`` (None where it is no mapping)."""
    if not isinstance(entry, dict):
        r.problem(at, f"expected a mapping with keys {', '.join(ROBOT_KEYS)}, got {describe(entry)}")
        return None
    r.mapping(entry, at, ROBOT_KEYS, required=("name", "model"))
    name = entry.get("name", "")
    why = name_problem(name)
    if why and "name" in entry:
        r.problem(at + ("name",), why)
    name = name if isinstance(name, str) else str(name)
    model = entry.get("model", "")
    file = ""
    if "model" in entry:
        if not isinstance(model, str) or not model:
            r.problem(at + ("model",), f"expected a model file name, got {describe(model)}")
        else:
            file = str((folder / model).resolve())
            if not Path(file).is_file():
                r.problem(at + ("model",), f"no model file {model!r} (looked for {file})")
    namespace = entry.get("namespace", name)
    why = namespace_problem(namespace)
    if why and "namespace" in entry:
        r.problem(at + ("namespace",), why)
    prefix = entry.get("frame_prefix", f"{name}/")
    if not isinstance(prefix, str) or not prefix or not FRAME_PREFIX.match(prefix):
        r.problem(
            at + ("frame_prefix",),
            f"{describe(prefix)}: a robot in a world needs a non-empty frame prefix (letters, digits, _ / . -)",
        )
        prefix = f"{name}/"
    position, orientation = IDENTITY
    pose = entry.get("pose")
    if pose is not None:
        r.mapping(pose, at + ("pose",), POSE_KEYS)
        if isinstance(pose, dict):
            position = r.vector(pose.get("position", position), at + ("pose", "position"), 3)
            orientation = r.vector(pose.get("orientation", orientation), at + ("pose", "orientation"), 4)
            why = pose_problem(position, orientation)
            if why:
                r.problem(at + ("pose",), why)
    return RobotSpec(
        name=name,
        model=file,
        namespace=str(namespace),
        frame_prefix=prefix,
        position=position,
        orientation=orientation,
    )
