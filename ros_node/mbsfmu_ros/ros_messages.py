"""The node's outputs as rclpy messages: the contents ``mbsfmu.sim.messages`` builds (shared with
the MCAP recorder) copied field by field, pure functions of those contents. tf2_msgs has no PyPI
wheel: ``bind_interfaces`` imports it (a sourced ROS 2's, or built into the per-user cache by
``interface_packages``) and registers /tf where it imports."""

from __future__ import annotations

from builtin_interfaces.msg import Time
from geometry_msgs.msg import (
    Point,
    PointStamped,
    Quaternion,
    Transform,
    Twist,
    Vector3,
    Vector3Stamped,
    Wrench,
    WrenchStamped,
)
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState, MultiDOFJointState
from std_msgs.msg import Float64MultiArray, Header, MultiArrayDimension, MultiArrayLayout

from . import conversion as cv
from . import interface_packages
from . import topics as tp

TFMessage = None  # tf2_msgs/TFMessage once bind_interfaces() found it (no PyPI wheel: interface_packages)
INTERFACES_MISSING: str | None = "not looked up yet"  # why tf2_msgs/simulation_interfaces do not import

MESSAGE_CLASSES = {
    tp.CLOCK: Clock,
    tp.JOINT_STATES: JointState,
    tp.MULTI_DOF_JOINT_STATES: MultiDOFJointState,
    tp.CENTROIDAL_MOMENTUM: WrenchStamped,
    tp.COM: PointStamped,
    tp.COM_VELOCITY: Vector3Stamped,
    tp.ENERGY: Float64MultiArray,
}


# ---- contents (mbsfmu.sim.messages) -> rclpy messages, field by field ----------------------------
def stamp(ns: int) -> Time:
    """builtin_interfaces/Time of a sim time [ns]."""
    sec, nsec = cv.ns_to_stamp(ns)
    return Time(sec=sec, nanosec=nsec)


def _time(d: dict) -> Time:
    return Time(sec=d["sec"], nanosec=d["nanosec"])


def _header(d: dict) -> Header:
    return Header(stamp=_time(d["stamp"]), frame_id=d["frame_id"])


def _transform(d: dict) -> Transform:
    return Transform(translation=Vector3(**d["translation"]), rotation=Quaternion(**d["rotation"]))


BUILDERS = {
    tp.CLOCK: lambda c: Clock(clock=_time(c["clock"])),
    tp.JOINT_STATES: lambda c: JointState(
        header=_header(c["header"]), name=c["name"], position=c["position"], velocity=c["velocity"], effort=c["effort"]
    ),
    tp.MULTI_DOF_JOINT_STATES: lambda c: MultiDOFJointState(
        header=_header(c["header"]),
        joint_names=c["joint_names"],
        transforms=[_transform(t) for t in c["transforms"]],
        twist=[Twist(linear=Vector3(**t["linear"]), angular=Vector3(**t["angular"])) for t in c["twist"]],
        wrench=[Wrench(force=Vector3(**w["force"]), torque=Vector3(**w["torque"])) for w in c["wrench"]],
    ),
    tp.CENTROIDAL_MOMENTUM: lambda c: WrenchStamped(
        header=_header(c["header"]),
        wrench=Wrench(force=Vector3(**c["wrench"]["force"]), torque=Vector3(**c["wrench"]["torque"])),
    ),
    tp.COM: lambda c: PointStamped(header=_header(c["header"]), point=Point(**c["point"])),
    tp.COM_VELOCITY: lambda c: Vector3Stamped(header=_header(c["header"]), vector=Vector3(**c["vector"])),
    tp.ENERGY: lambda c: Float64MultiArray(
        layout=MultiArrayLayout(
            dim=[MultiArrayDimension(**d) for d in c["layout"]["dim"]], data_offset=c["layout"]["data_offset"]
        ),
        data=c["data"],
    ),
}


def bind_interfaces(build: bool, progress=None) -> str | None:
    """Import tf2_msgs and simulation_interfaces (``interface_packages.load``: a sourced ROS 2's, or
    built into the per-user cache, first if ``build``) and register /tf; None, or why not."""
    global TFMessage, INTERFACES_MISSING
    if TFMessage is None:
        INTERFACES_MISSING = interface_packages.load(build=build, progress=progress)
        if INTERFACES_MISSING is None:
            from geometry_msgs.msg import TransformStamped
            from tf2_msgs.msg import TFMessage as tf_message

            TFMessage = MESSAGE_CLASSES[tp.TF] = tf_message
            BUILDERS[tp.TF] = lambda c: tf_message(
                transforms=[
                    TransformStamped(
                        header=_header(t["header"]),
                        child_frame_id=t["child_frame_id"],
                        transform=_transform(t["transform"]),
                    )
                    for t in c["transforms"]
                ]
            )
    return INTERFACES_MISSING


bind_interfaces(build=False)  # cheap: the cache's packages when built, nothing is compiled here


def ros_messages(contents: dict[str, dict]) -> dict:
    """topic -> rclpy message of the contents ``mbsfmu.sim.messages.state_messages`` builds."""
    return {topic: BUILDERS[topic](c) for topic, c in contents.items()}
