"""simulation_interfaces' entity services of the node's world mode (docs/guides/ros2.md, "A world
of several robots"): the entities are the robots, each named and placed as the world file or
SpawnEntity says. SpawnEntity, SpawnEntities, DeleteEntity, GetEntities and GetEntitiesStates
(name, category and tag filters), GetEntityState and SetEntityState of a robot's base,
GetEntityInfo, SetEntityInfo, GetEntityBounds and GetSpawnables, with the result codes of their
.srv files (definitions/simulation_interfaces).

A resource is a model file the engine reads (``.yaml``, ``.yml``, ``.json``, ``.urdf``), given by
a path or a ``file://`` URI, or a URDF or YAML model as a string; ``package://`` and other schemes
are UNSUPPORTED_FORMAT (the node resolves no ROS packages).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

from geometry_msgs.msg import Point, Pose, Quaternion, Twist, Vector3
from simulation_interfaces.msg import Bounds, EntityInfo, EntityState, Result, Spawnable, SpawnResult
from simulation_interfaces.srv import (
    DeleteEntity,
    GetEntities,
    GetEntitiesStates,
    GetEntityBounds,
    GetEntityInfo,
    GetEntityState,
    GetSpawnables,
    SetEntityInfo,
    SetEntityState,
    SpawnEntities,
    SpawnEntity,
)

import mbsfmu
from mbsfmu.errors import MbsError

from . import conversion as cv
from . import entity_state as es
from .simulation_services import requested_state, result
from .world import RobotSpec, name_problem, namespace_problem, pose_problem

MODEL_SUFFIXES = (".yaml", ".yml", ".json", ".urdf")
SPAWN_FORMATS = ("urdf", "mbsfmu")  # spawn_formats of GetSimulatorFeatures (mbsfmu: YAML/JSON model files)
BUNDLED_MODELS = Path(__file__).resolve().parents[2] / "scenarios" / "models"  # a source checkout's


class SpawnRefusal(Exception):
    """A spawn request refused: ``code`` (a SpawnEntity result code) and why."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


def uri_path(uri: str) -> Path:
    """The file of a resource URI: a path or ``file://``; SpawnRefusal UNSUPPORTED_FORMAT for
    another scheme or suffix, RESULT_NOT_FOUND for no such file."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path))
    elif parsed.scheme and len(parsed.scheme) > 1:  # (one letter: a Windows drive)
        raise SpawnRefusal(
            SpawnResult.UNSUPPORTED_FORMAT, f"{uri}: scheme {parsed.scheme}:// unsupported (a path or file://)"
        )
    else:
        path = Path(uri)
    if path.suffix.lower() not in MODEL_SUFFIXES:
        raise SpawnRefusal(SpawnResult.UNSUPPORTED_FORMAT, f"{uri}: not a model file ({', '.join(MODEL_SUFFIXES)})")
    if not path.is_file():
        raise SpawnRefusal(Result.RESULT_NOT_FOUND, f"{uri}: no such file")
    return path.resolve()


def load_resource(resource):
    """The model of a simulation_interfaces Resource: its uri, else its resource_string (a URDF,
    starting with '<', else a YAML/JSON model); SpawnRefusal with the .srv's code."""
    if resource.uri:
        path = uri_path(resource.uri)
        try:
            return mbsfmu.load_model(path)
        except MbsError as e:
            raise SpawnRefusal(SpawnResult.RESOURCE_PARSE_ERROR, str(e)) from None
    text = resource.resource_string
    if not text.strip():
        raise SpawnRefusal(SpawnResult.NO_RESOURCE, "both uri and resource_string are empty")
    suffix = ".urdf" if text.lstrip().startswith("<") else ".yaml"
    with tempfile.TemporaryDirectory(prefix="mbsfmu-spawn-") as folder:
        path = Path(folder) / f"resource_string{suffix}"
        path.write_text(text)
        try:
            return mbsfmu.load_model(path)
        except MbsError as e:
            raise SpawnRefusal(SpawnResult.RESOURCE_PARSE_ERROR, str(e).replace(str(path), "resource_string")) from None


def model_files(folder: Path) -> list[Path]:
    """The model files directly in ``folder``, sorted (URDF overlays and models alike)."""
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in MODEL_SUFFIXES)


def matches(filters, robot) -> bool:
    """Does ``robot`` pass the categories and tags of EntityFilters (the name is matched apart)?"""
    if filters.categories and robot.category not in [c.category for c in filters.categories]:
        return False
    tags = filters.tags
    if tags.tags:
        hit = [t in robot.tags for t in tags.tags]
        if not (all(hit) if tags.filter_mode == tags.FILTER_MODE_ALL else any(hit)):
            return False
    return True


def entity_state(state: es.BodyState, ns: int, frame_id: str) -> EntityState:
    out = EntityState(
        pose=Pose(
            position=Point(**dict(zip("xyz", state.position))),
            orientation=Quaternion(**dict(zip("xyzw", state.orientation))),
        ),
        twist=Twist(
            linear=Vector3(**dict(zip("xyz", state.linear))), angular=Vector3(**dict(zip("xyz", state.angular)))
        ),
    )
    out.header.frame_id = frame_id
    out.header.stamp.sec, out.header.stamp.nanosec = cv.ns_to_stamp(ns)
    return out


class EntityServices:
    """The entity services on ``node`` (an MbsNode in world mode: its ``world``, ``robot()``,
    ``delete_robot()``, ``frame_id``, ``now_ns()``, ``publish_state()``)."""

    def __init__(self, node):
        self.node = node
        srv = node.create_service
        srv(SpawnEntity, "spawn_entity", self.spawn_entity)
        srv(SpawnEntities, "spawn_entities", self.spawn_entities)
        srv(DeleteEntity, "delete_entity", self.delete_entity)
        srv(GetEntities, "get_entities", self.get_entities)
        srv(GetEntitiesStates, "get_entities_states", self.get_entities_states)
        srv(GetEntityState, "get_entity_state", self.get_entity_state)
        srv(SetEntityState, "set_entity_state", self.set_entity_state)
        srv(GetEntityInfo, "get_entity_info", self.get_entity_info)
        srv(SetEntityInfo, "set_entity_info", self.set_entity_info)
        srv(GetEntityBounds, "get_entity_bounds", self.get_entity_bounds)
        srv(GetSpawnables, "get_spawnables", self.get_spawnables)

    @property
    def robots(self) -> dict:
        return self.node.world.robots

    # ---- spawning -------------------------------------------------------------------------
    def unique_name(self, name: str, rename: bool) -> str:
        """``name``, or with ``rename`` the first free ``name_2``, ``name_3``...; SpawnRefusal
        NAME_NOT_UNIQUE where it is taken (by a robot's name, namespace or frame prefix)."""
        taken = {r.name for r in self.robots.values()} | {r.spec.namespace.strip("/") for r in self.robots.values()}
        taken |= {r.spec.frame_prefix.rstrip("/") for r in self.robots.values()}
        if name not in taken:
            return name
        if not rename:
            raise SpawnRefusal(SpawnResult.NAME_NOT_UNIQUE, f"entity name {name!r} is taken")
        k = 2
        while f"{name}_{k}" in taken:
            k += 1
        return f"{name}_{k}"

    def spawn(self, request) -> str:
        """Spawn one SpawnEntity request; the entity's name, or SpawnRefusal."""
        n = self.node
        if request.name and name_problem(request.name):
            raise SpawnRefusal(SpawnResult.NAME_INVALID, name_problem(request.name))
        if request.entity_namespace and namespace_problem(request.entity_namespace):
            raise SpawnRefusal(SpawnResult.NAMESPACE_INVALID, namespace_problem(request.entity_namespace))
        frame = request.initial_pose.header.frame_id
        if frame not in ("", n.frame_id):
            raise SpawnRefusal(SpawnResult.INVALID_POSE, f"frame {frame!r} unknown: poses are in {n.frame_id!r}")
        p, o = request.initial_pose.pose.position, request.initial_pose.pose.orientation
        position, orientation = (p.x, p.y, p.z), (o.x, o.y, o.z, o.w)
        why = pose_problem(position, orientation)
        if why:
            raise SpawnRefusal(SpawnResult.INVALID_POSE, why)
        model = load_resource(request.entity_resource)
        name = request.name or re.sub(r"\W", "_", model.name)
        if name_problem(name):
            if not request.allow_renaming:
                raise SpawnRefusal(SpawnResult.NAME_INVALID, f"no name given, and the model's: {name_problem(name)}")
            name = "entity"
        name = self.unique_name(name, request.allow_renaming)
        namespace = request.entity_namespace or name
        if namespace.strip("/") in {r.spec.namespace.strip("/") for r in self.robots.values()}:
            raise SpawnRefusal(SpawnResult.NAMESPACE_INVALID, f"namespace {namespace!r} is taken by another entity")
        norm = sum(v * v for v in orientation) ** 0.5
        spec = RobotSpec(
            name=name,
            model=model.source,
            namespace=namespace,
            frame_prefix=f"{name}/",
            position=position,
            orientation=tuple(v / norm for v in orientation),
        )
        try:
            n.robot(spec, model)
        except MbsError as e:  # a model the engine cannot simulate (its Simulator refuses it)
            raise SpawnRefusal(Result.RESULT_OPERATION_FAILED, str(e)) from None
        n.publish_static()
        n.publish_state()
        return name

    def spawn_entity(self, request, response):
        try:
            response.entity_name = self.spawn(request)
            response.result = result(Result.RESULT_OK)
        except SpawnRefusal as e:
            response.result = result(e.code, str(e))
        return response

    def spawn_entities(self, request, response):
        failed = 0
        for one in request.spawn_requests:
            r = SpawnResult()
            try:
                r.entity_name = self.spawn(one)
                r.result = result(Result.RESULT_OK)
            except SpawnRefusal as e:
                r.result = result(e.code, str(e))
                failed += 1
            response.results.append(r)
        code = SpawnEntities.Response.ENTITIES_SPAWN_FAILED if failed else Result.RESULT_OK
        response.result = result(code, f"{failed} of {len(request.spawn_requests)} failed" if failed else "")
        return response

    def delete_entity(self, request, response):
        if request.entity not in self.robots:
            response.result = result(Result.RESULT_NOT_FOUND, self.unknown(request.entity))
            return response
        self.node.delete_robot(request.entity)
        response.result = result(Result.RESULT_OK)
        return response

    def unknown(self, name: str) -> str:
        return f"no entity {name!r}; entities: {', '.join(self.robots) or 'none'}"

    # ---- queries ----------------------------------------------------------------------------
    def filtered(self, filters, response) -> list[str] | None:
        """Names of the robots passing EntityFilters (name as a regular expression, categories,
        tags); None with the result set where the filter is refused (bounds: unsupported)."""
        if filters.bounds.type != Bounds.TYPE_EMPTY or filters.bounds.points:
            response.result = result(Result.RESULT_FEATURE_UNSUPPORTED, "the bounds (overlap) filter is unsupported")
            return None
        try:
            pattern = re.compile(filters.filter) if filters.filter else None
        except re.error as e:
            response.result = result(Result.RESULT_OPERATION_FAILED, f"filter {filters.filter!r}: {e}")
            return None
        return [
            name for name, r in self.robots.items() if (pattern is None or pattern.search(name)) and matches(filters, r)
        ]

    def get_entities(self, request, response):
        names = self.filtered(request.filters, response)
        if names is not None:
            response.entities = names
            response.result = result(Result.RESULT_OK)
        return response

    def get_entities_states(self, request, response):
        names = self.filtered(request.filters, response)
        if names is not None:
            ns = self.node.now_ns()
            response.entities = names
            response.states = [entity_state(self.robots[n].base_state(), ns, self.node.frame_id) for n in names]
            response.result = result(Result.RESULT_OK)
        return response

    def get_entity_state(self, request, response):
        r = self.robots.get(request.entity)
        if r is None:
            response.result = result(Result.RESULT_NOT_FOUND, self.unknown(request.entity))
            return response
        response.state = entity_state(r.base_state(), self.node.now_ns(), self.node.frame_id)
        response.result = result(Result.RESULT_OK)
        return response

    def set_entity_state(self, request, response):
        n = self.node
        r = self.robots.get(request.entity)
        if r is None:
            response.result = result(Result.RESULT_NOT_FOUND, self.unknown(request.entity))
            return response
        try:
            pose, twist = requested_state(request, n.frame_id)
            r.set_base_state(pose, twist)
        except es.InvalidState as e:
            response.result = result(SetEntityState.Response.INVALID_POSE, str(e))
            return response
        except es.EntityError as e:
            response.result = result(Result.RESULT_OPERATION_FAILED, str(e))
            return response
        n.publish_static()
        n.publish_state()
        response.result = result(Result.RESULT_OK)
        return response

    def get_entity_info(self, request, response):
        r = self.robots.get(request.entity)
        if r is None:
            response.result = result(Result.RESULT_NOT_FOUND, self.unknown(request.entity))
            return response
        response.info = EntityInfo(description=r.description or f"model {r.model.name} ({r.model.source})", tags=r.tags)
        response.info.category.category = r.category
        response.result = result(Result.RESULT_OK)
        return response

    def set_entity_info(self, request, response):
        r = self.robots.get(request.entity)
        if r is None:
            response.result = result(Result.RESULT_NOT_FOUND, self.unknown(request.entity))
            return response
        r.category, r.description, r.tags = (
            request.info.category.category,
            request.info.description,
            list(request.info.tags),
        )
        response.result = result(Result.RESULT_OK)
        return response

    def get_entity_bounds(self, request, response):
        r = self.robots.get(request.entity)
        if r is None:
            response.result = result(Result.RESULT_NOT_FOUND, self.unknown(request.entity))
            return response
        lower, upper = r.bounds()
        response.bounds = Bounds(
            type=Bounds.TYPE_BOX,
            points=[Vector3(**dict(zip("xyz", map(float, upper)))), Vector3(**dict(zip("xyz", map(float, lower))))],
        )
        response.result = result(Result.RESULT_OK)
        return response

    def get_spawnables(self, request, response):
        folders = [BUNDLED_MODELS] if BUNDLED_MODELS.is_dir() else []
        if self.node.config.spawnables_folder:
            folders.append(Path(self.node.config.spawnables_folder))
        unknown = []
        for source in request.sources:
            path = Path(unquote(urlparse(source).path)) if source.startswith("file://") else Path(source)
            (folders if path.is_dir() else unknown).append(path if path.is_dir() else source)
        seen = set()
        for folder in folders:
            if not folder.is_dir():
                unknown.append(str(folder))
                continue
            for path in model_files(folder):
                if path.resolve() in seen:
                    continue
                seen.add(path.resolve())
                s = Spawnable(description=f"{path.suffix.lstrip('.')} model {path.stem}")
                s.entity_resource.uri = path.resolve().as_uri()
                response.spawnables.append(s)
        message = f"unrecognized sources (no folder): {', '.join(map(str, unknown))}" if unknown else ""
        response.result = result(Result.RESULT_OK, message)
        return response
