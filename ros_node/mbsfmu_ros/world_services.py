"""simulation_interfaces' world services of the node's world mode (docs/guides/ros2.md, "A world
of several robots"): LoadWorld, UnloadWorld, GetCurrentWorld and GetAvailableWorlds, with the
result codes of their .srv files; worlds are world files (``world.py``): the bundled ones
(a source checkout's scenarios/worlds) and those in the ``worlds_folder`` parameter's folder.
``serve_world`` puts these and the entity services (``entity_services.py``) on the node and adds
their features to GetSimulatorFeatures."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse

from simulation_interfaces.msg import Result, SimulatorFeatures, WorldResource
from simulation_interfaces.srv import GetAvailableWorlds, GetCurrentWorld, LoadWorld, UnloadWorld

from mbsfmu.errors import MbsError

from .entity_services import SPAWN_FORMATS, EntityServices
from .simulation_services import result
from .world import WorldError, WorldSpec, load_world

WORLD_SUFFIXES = (".yaml", ".yml", ".json")
BUNDLED_WORLDS = Path(__file__).resolve().parents[2] / "scenarios" / "worlds"  # a source checkout's
WORLD_FEATURES = (
    SimulatorFeatures.SPAWNING,
    SimulatorFeatures.SPAWNING_ENTITIES,
    SimulatorFeatures.SPAWNING_RESOURCE_STRING,
    SimulatorFeatures.DELETING,
    SimulatorFeatures.ENTITY_TAGS,
    SimulatorFeatures.ENTITY_CATEGORIES,
    SimulatorFeatures.ENTITY_BOUNDS,
    SimulatorFeatures.ENTITY_INFO_GETTING,
    SimulatorFeatures.ENTITY_INFO_SETTING,
    SimulatorFeatures.SPAWNABLES,
    SimulatorFeatures.WORLD_LOADING,
    SimulatorFeatures.WORLD_UNLOADING,
    SimulatorFeatures.WORLD_INFO_GETTING,
    SimulatorFeatures.AVAILABLE_WORLDS,
)


def world_resource(spec: WorldSpec) -> WorldResource:
    out = WorldResource(name=spec.name, description=spec.description)
    out.world_resource.uri = Path(spec.source).resolve().as_uri()
    return out


def world_file(uri: str) -> Path | None:
    """The file of a world URI (a path or ``file://``), None for another scheme."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    return None if parsed.scheme and len(parsed.scheme) > 1 else Path(uri)


class WorldServices:
    """The world services on ``node`` (an MbsNode in world mode: ``world``, ``open_world()``,
    ``close_world()``, ``reset()``, ``paused``, ``stopped``)."""

    def __init__(self, node):
        self.node = node
        srv = node.create_service
        srv(LoadWorld, "load_world", self.load_world)
        srv(UnloadWorld, "unload_world", self.unload_world)
        srv(GetCurrentWorld, "get_current_world", self.get_current_world)
        srv(GetAvailableWorlds, "get_available_worlds", self.get_available_worlds)

    def load_world(self, request, response):
        """Load a world file: its robots replace the current entities, then the simulation is
        stopped (reset, paused). A world that does not load leaves the current one as it is."""
        R = LoadWorld.Response
        res = request.world_resource
        if not res.uri and not res.resource_string:
            response.result = result(R.NO_RESOURCE, "both uri and resource_string are empty")
            return response
        if not res.uri:
            response.result = result(
                Result.RESULT_FEATURE_UNSUPPORTED, "a world as resource_string is unsupported: give its file's uri"
            )
            return response
        path = world_file(res.uri)
        if path is None or path.suffix.lower() not in WORLD_SUFFIXES:
            response.result = result(R.UNSUPPORTED_FORMAT, f"{res.uri}: a world file (path or file://, .yaml/.json)")
            return response
        if not path.is_file():
            response.result = result(Result.RESULT_NOT_FOUND, f"{res.uri}: no such file")
            return response
        try:
            spec = load_world(path)
            self.node.open_world(spec)
        except MbsError as e:  # the world file (WorldError) or a robot's model file
            response.result = result(R.RESOURCE_PARSE_ERROR, str(e))
            return response
        n = self.node
        n.reset(with_time=True)  # STATE_STOPPED: paused after a reset of every scope, time too
        n.paused, n.stopped, n.reanchor = True, True, True
        response.world = world_resource(spec)
        response.result = result(Result.RESULT_OK, f"{len(spec.robots)} robot(s); simulation stopped")
        return response

    def unload_world(self, request, response):
        if self.node.world.spec is None:
            response.result = result(UnloadWorld.Response.NO_WORLD_LOADED, "no world is loaded")
            return response
        self.node.close_world()
        self.node.publish_state()
        response.result = result(Result.RESULT_OK)
        return response

    def get_current_world(self, request, response):
        spec = self.node.world.spec
        if spec is None:
            response.result = result(GetCurrentWorld.Response.NO_WORLD_LOADED, "no world is loaded")
            return response
        response.world = world_resource(spec)
        response.result = result(Result.RESULT_OK)
        return response

    def get_available_worlds(self, request, response):
        if request.filter.tags:
            response.result = result(Result.RESULT_FEATURE_UNSUPPORTED, "worlds have no tags (WORLD_TAGS unsupported)")
            return response
        defaults = [BUNDLED_WORLDS] if BUNDLED_WORLDS.is_dir() else []
        failed = []
        if self.node.config.worlds_folder:
            folder = Path(self.node.config.worlds_folder)
            (defaults.append(folder) if folder.is_dir() else failed.append(str(folder)))
        extra = []
        for source in request.additional_sources:
            folder = world_file(source)
            if folder is None or not folder.is_dir():
                failed.append(source)
            else:
                extra.append(folder)
        if failed and not request.continue_on_error:
            code = GetAvailableWorlds.Response.DEFAULT_SOURCES_FAILED
            response.result = result(code, f"sources not accessible (no folder): {', '.join(failed)}")
            return response
        seen, skipped = set(), []
        for folder in defaults + extra:
            for path in sorted(folder.iterdir()):
                if path.suffix.lower() not in WORLD_SUFFIXES or path.resolve() in seen:
                    continue
                try:
                    spec = load_world(path)
                except WorldError:
                    skipped.append(path.name)
                    continue
                seen.add(path.resolve())
                response.worlds.append(world_resource(spec))
        notes = [f"sources not accessible: {', '.join(failed)}"] if failed else []
        notes += [f"not world files: {', '.join(skipped)}"] if skipped else []
        response.result = result(Result.RESULT_OK, "; ".join(notes))
        return response


def describe_features(features) -> None:
    """Add the world mode's features and spawn formats to a SimulatorFeatures message."""
    features.features = list(features.features) + [f for f in WORLD_FEATURES if f not in features.features]
    features.spawn_formats = list(SPAWN_FORMATS)
    features.custom_info += (
        "; world mode: entities are robots (each its own engine model, no physical interaction between them), "
        "a fixed-base robot's state is its base pose, bounds are a box around its body origins, centres of "
        "mass and frames (no link geometry)"
    )


def serve_world(node) -> None:
    """The entity and world services of a node in world mode, and their features."""
    node.entity_services = EntityServices(node)
    node.world_services = WorldServices(node)
    if node.simulation is not None:
        node.simulation.more_features = describe_features
