"""ros2 launch mbsfmu_ros mbsfmu.launch.py model:=/abs/model.yaml [namespace:=robot1]
[use_sim_time:=true] [robot_state_publisher:=false] [params_file:=/abs/params.yaml]
[real_time_factor:=1.0] [publish_rate:=100.0] [physics_step:=0.001] [lock_step:=false]
[command_timeout:=0.0]

Starts the mbsfmu node (name ``mbsfmu``) in ``namespace``: its topics (joint_states, mbs/...,
robot_description, tf) under it, /clock global. ``use_sim_time`` (default true) is set on every
node started here, so they follow the /clock the simulator publishes. With
``robot_state_publisher:=true`` a stock robot_state_publisher (same namespace) gets the model's
URDF (``mbsfmu export-urdf MODEL -o -``) and makes /tf from joint_states: use it where the node's
own /tf is off (no tf2_msgs) or where its TF conventions are wanted. Every other node parameter
(docs/reference/ros-interface.md) comes from a parameters file: share/mbsfmu_ros/config/mbsfmu.yaml
lists them all with their defaults."""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import Command, LaunchConfiguration, PythonExpression
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGS = {  # name: (default, type, description)
    "real_time_factor": ("1.0", float, "sim time / wall time; 0 = as fast as possible"),
    "publish_rate": ("100.0", float, "cycles (and joint state messages) per second of sim time [Hz]"),
    "physics_step": ("0.001", float, "integrator step [s]"),
    "lock_step": ("false", bool, "advance one cycle per command (controller in the loop)"),
    "command_timeout": (
        "0.0",
        float,
        "opt-in safety: sim time [s] without commands before the inputs drop to zero (0 = off)",
    ),
}


def generate_launch_description():
    model = LaunchConfiguration("model")
    use_sim_time = ParameterValue(LaunchConfiguration("use_sim_time"), value_type=bool)
    params = {"model": model, "use_sim_time": use_sim_time}
    params.update(
        {name: ParameterValue(LaunchConfiguration(name), value_type=typ) for name, (_d, typ, _t) in ARGS.items()}
    )
    has_file = PythonExpression(["'", LaunchConfiguration("params_file"), "' != ''"])
    common = dict(
        package="mbsfmu_ros",
        executable="mbs_node",
        name="mbsfmu",
        namespace=LaunchConfiguration("namespace"),
        output="screen",
    )
    urdf = ParameterValue(Command(["mbsfmu export-urdf ", model, " -o -"]), value_type=str)
    return LaunchDescription(
        [
            DeclareLaunchArgument("model", description="model file (YAML/JSON/URDF/overlay), absolute path"),
            DeclareLaunchArgument("namespace", default_value="", description="namespace of the robot's topics"),
            DeclareLaunchArgument(
                "use_sim_time", default_value="true", description="nodes follow the simulator's /clock"
            ),
            DeclareLaunchArgument(
                "robot_state_publisher", default_value="false", description="also start robot_state_publisher"
            ),
            DeclareLaunchArgument("params_file", default_value="", description="optional YAML parameters file"),
            *[DeclareLaunchArgument(name, default_value=d, description=t) for name, (d, _typ, t) in ARGS.items()],
            Node(**common, parameters=[params], condition=UnlessCondition(has_file)),
            Node(**common, parameters=[params, LaunchConfiguration("params_file")], condition=IfCondition(has_file)),
            Node(
                package="robot_state_publisher",
                executable="robot_state_publisher",
                namespace=LaunchConfiguration("namespace"),
                parameters=[{"robot_description": urdf, "use_sim_time": use_sim_time}],
                condition=IfCondition(LaunchConfiguration("robot_state_publisher")),
                output="screen",
            ),
        ]
    )
