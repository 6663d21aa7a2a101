"""ros2 launch mbsfmu_ros mbsfmu.launch.py model:=/path/model.yaml [real_time_factor:=1.0]
[publish_rate:=100.0] [physics_step:=0.001] [lock_step:=false] [command_timeout:=0.5]

Starts the mbsfmu node (name ``mbsfmu``); every other parameter (docs/reference/ros-interface.md) can be set with
a parameters file: ``params_file:=/path/params.yaml``."""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition, UnlessCondition
from launch.substitutions import LaunchConfiguration, PythonExpression
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGS = {  # name: (default, type, description)
    "real_time_factor": ("1.0", float, "sim time / wall time; 0 = as fast as possible"),
    "publish_rate": ("100.0", float, "cycles (and joint state messages) per second of sim time [Hz]"),
    "physics_step": ("0.001", float, "integrator step [s]"),
    "lock_step": ("false", bool, "advance one cycle per command (controller in the loop)"),
    "command_timeout": ("0.5", float, "sim time [s] without commands before the inputs drop to zero"),
}


def generate_launch_description():
    params = {"model": LaunchConfiguration("model")}
    params.update(
        {name: ParameterValue(LaunchConfiguration(name), value_type=typ) for name, (_d, typ, _t) in ARGS.items()}
    )
    has_file = PythonExpression(["'", LaunchConfiguration("params_file"), "' != ''"])
    common = dict(package="mbsfmu_ros", executable="mbs_node", name="mbsfmu", output="screen")
    return LaunchDescription(
        [
            DeclareLaunchArgument("model", description="model file (YAML/JSON/URDF), absolute path"),
            DeclareLaunchArgument("params_file", default_value="", description="optional YAML parameters file"),
            *[DeclareLaunchArgument(name, default_value=d, description=t) for name, (d, _typ, t) in ARGS.items()],
            Node(**common, parameters=[params], condition=UnlessCondition(has_file)),
            Node(**common, parameters=[params, LaunchConfiguration("params_file")], condition=IfCondition(has_file)),
        ]
    )
