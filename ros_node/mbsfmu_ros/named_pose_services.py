"""simulation_interfaces' GetNamedPoses and GetNamedPoseBounds on the node (names relative to its
namespace, as ``simulation_services.py`` names the others): the model's named joint
configurations as NamedPose messages, their contents from ``named_poses.py``; in a world, every
robot's, named ``<robot>/<pose>`` and placed where the robot is (``named_poses.placed``). The
standard has no service that moves a robot to a named pose (SetEntityState sets an entity's pose
and twist)."""

from __future__ import annotations

from geometry_msgs.msg import Point, Pose, Quaternion, Vector3
from simulation_interfaces.msg import Bounds, NamedPose, Result, TagsFilter
from simulation_interfaces.srv import GetNamedPoseBounds, GetNamedPoses

from . import named_poses as nps

FILTER_MODES = {TagsFilter.FILTER_MODE_ANY: False, TagsFilter.FILTER_MODE_ALL: True}  # mode -> all_of


class NamedPoseServices:
    """Serves the named poses of ``node``'s model (an MbsNode), or of its world's robots."""

    def __init__(self, node):
        self.node = node
        node.create_service(GetNamedPoses, "get_named_poses", self.get_named_poses)
        node.create_service(GetNamedPoseBounds, "get_named_pose_bounds", self.get_named_pose_bounds)

    def named(self) -> dict[str, tuple]:
        """Served name -> (model, its pose name, placement (R_w, p_w) or None) in serving order."""
        world = getattr(self.node, "world", None)
        if world is None:
            return {name: (self.node.model, name, None) for name in self.node.model.named_poses}
        return {
            f"{r.name}/{name}": (r.model, name, r.placement())
            for r in world.robots.values()
            for name in r.model.named_poses
        }

    def get_named_poses(self, request, response):
        """Every named pose whose tags pass the request's TagsFilter (none given: all), file order."""
        f = request.tags
        if f.filter_mode not in FILTER_MODES:
            response.result = Result(
                result=Result.RESULT_FEATURE_UNSUPPORTED, error_message=f"tags filter_mode {f.filter_mode}"
            )
            return response
        infos = [
            nps.placed(nps.pose_info(model, pose), served, at) for served, (model, pose, at) in self.named().items()
        ]
        response.poses = [
            NamedPose(
                name=i.name,
                description=i.description,
                tags=list(i.tags),
                pose=Pose(
                    position=Point(**dict(zip("xyz", i.position))),
                    orientation=Quaternion(**dict(zip("xyzw", i.orientation))),
                ),
            )
            for i in infos
            if nps.matches(i.tags, list(f.tags), FILTER_MODES[f.filter_mode])
        ]
        response.result = Result(result=Result.RESULT_OK)
        return response

    def get_named_pose_bounds(self, request, response):
        """A TYPE_BOX around the model's points at the pose: points [upper, lower] corners (the order
        Bounds.msg gives), relative to the pose's position, world axes; NOT_FOUND for another name."""
        named = self.named()
        if request.name not in named:
            poses = ", ".join(named) or "none"
            response.result = Result(
                result=Result.RESULT_NOT_FOUND, error_message=f"no named pose {request.name!r}; named poses: {poses}"
            )
            return response
        model, pose, at = named[request.name]
        lower, upper = nps.pose_bounds(model, pose)
        if at is not None:  # the box around the robot's box turned by its placement
            lower, upper = nps.turned_box(at[0], lower, upper)
        response.bounds = Bounds(
            type=Bounds.TYPE_BOX,
            points=[Vector3(**dict(zip("xyz", map(float, c)))) for c in (upper, lower)],
        )
        response.result = Result(result=Result.RESULT_OK)
        return response
