"""ros2 launch mbsfmu_ros mbsfmu.launch.py model:=/abs/model.yaml | world:=/abs/world.yaml [namespace:=robot1]
[use_sim_time:=true] [robot_state_publisher:=false] [params_file:=/abs/params.yaml]
[real_time_factor:=1.0] [publish_rate:=100.0] [physics_step:=0.001] [lock_step:=false]
[command_timeout:=0.0] [frame_prefix:=robot1/] [publish_tf:=true] [clock_conflict:=stop]

Starts the mbsfmu node (name ``mbsfmu``) on one model, or on a world file of several robots (each
under its own namespace: docs/guides/ros2.md, "A world of several robots"), in ``namespace``: its
topics (joint_states, mbs/..., robot_description, tf) under it, /clock global. ``use_sim_time``
(default true) is set on every node started here, so they follow the /clock the simulator publishes. With
``robot_state_publisher:=true`` a stock robot_state_publisher (same namespace, same
``frame_prefix``) gets the model's URDF (``mbsfmu export-urdf MODEL -o -``) and makes /tf from
joint_states, and the node's own /tf is off (``publish_tf`` false unless given). Every other node
parameter (docs/reference/ros-interface.md) comes from a parameters file:
share/mbsfmu_ros/config/mbsfmu.yaml lists them all with their defaults. A node parameter given
as a launch argument wins over the parameters file; one not given keeps the file's value (or
the node's default): ``mbsfmu_ros.config.launch_parameters``."""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import Command, LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from mbsfmu_ros.config import launch_parameters

ARGS = {  # node parameters as launch arguments: name: description (not given = the file's or the default)
    "real_time_factor": "sim time / wall time; 0 = as fast as possible (default 1.0)",
    "publish_rate": "cycles (and joint state messages) per second of sim time [Hz] (default 100.0)",
    "physics_step": "integrator step [s] (default 0.001)",
    "lock_step": "advance one cycle per command (controller in the loop) (default false)",
    "command_timeout": "opt-in safety: sim time [s] without commands before the inputs drop to zero (default 0: off)",
    "frame_prefix": "prefix of every frame name the node publishes, e.g. robot1/ (default none)",
    "publish_tf": "publish /tf and /tf_static (default true; false with robot_state_publisher:=true)",
    "clock_conflict": "another /clock on the domain: stop publishing /clock, or follow it (default stop)",
    "thread_priority": "SCHED_FIFO priority 1-99 of the node's loop (ros2_control_node uses 50) (default 0: off)",
    "lock_memory": "lock the node's memory in RAM (mlockall) (default false)",
}


def node_actions(context):
    """The node (and robot_state_publisher) with the parameters as given at launch."""
    value = lambda name: LaunchConfiguration(name).perform(context)  # noqa: E731
    rsp = value("robot_state_publisher").strip().lower() == "true"
    params = launch_parameters({name: value(name) for name in ARGS}, value("params_file"), rsp)
    params[-1].update(
        model=value("model"), world=value("world"), use_sim_time=value("use_sim_time").strip().lower() == "true"
    )
    actions = [
        Node(
            package="mbsfmu_ros",
            executable="mbs_node",
            name="mbsfmu",
            namespace=value("namespace"),
            output="screen",
            parameters=params,
        )
    ]
    if rsp and value("model"):  # a world publishes each robot's robot_description in its namespace
        urdf = ParameterValue(Command(["mbsfmu export-urdf ", value("model"), " -o -"]), value_type=str)
        rsp_params = {"robot_description": urdf, "use_sim_time": params[-1]["use_sim_time"]}
        prefix = params[-1].get("frame_prefix")
        if prefix:
            rsp_params["frame_prefix"] = prefix
        actions.append(
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                namespace=value("namespace"),
                parameters=[rsp_params],
                output="screen",
            )
        )
    return actions


def generate_launch_description():
    return LaunchDescription(
        [
            DeclareLaunchArgument(
                "model", default_value="", description="model file (YAML/JSON/URDF/overlay), absolute path"
            ),
            DeclareLaunchArgument(
                "world", default_value="", description="world file (several robots) instead of a model, absolute path"
            ),
            DeclareLaunchArgument("namespace", default_value="", description="namespace of the robot's topics"),
            DeclareLaunchArgument(
                "use_sim_time", default_value="true", description="nodes follow the simulator's /clock"
            ),
            DeclareLaunchArgument(
                "robot_state_publisher", default_value="false", description="also start robot_state_publisher"
            ),
            DeclareLaunchArgument("params_file", default_value="", description="optional YAML parameters file"),
            *[DeclareLaunchArgument(name, default_value="", description=text) for name, text in ARGS.items()],
            OpaqueFunction(function=node_actions),
        ]
    )
