"""Record a run as ROS 2 messages in an MCAP file (Foxglove opens it, `ros2 bag play` replays it)
with no ROS install: the `mcap` and `mcap-ros2-support` packages write CDR-encoded messages from
the standard message definitions below.

The messages are the ROS 2 node's state outputs with the same content for the same state: both
take them from ``mbsfmu.sim.messages`` (docs/reference/ros-interface.md, "Recording"). A
recording holds every state topic the node publishes (/clock, /joint_states,
/mbs/multi_dof_joint_states for models with spherical or free joints, /mbs/centroidal_momentum,
/mbs/com, /mbs/com_velocity, /mbs/energy, /tf), one message each per trajectory row, and once, at
the first row (log time = its stamp, before that row's state messages), /robot_description (the
model's URDF: ``mbsfmu.io.urdf_export.robot_description``) and /tf_static (the named frames, e.g.
the URDF links lumped into a body, on their bodies): so Foxglove shows the robot moving in 3D from
any recording, ROS installed or not. Not the node's /diagnostics and /mbs/real_time_factor, which
describe a live run (wall-clock pacing, commands) and whose checks a scenario run writes to
report.json instead.

Each channel carries, as rosbag2 writes it, the QoS the node's publisher offers (channel metadata
``offered_qos_profiles``: a YAML list of profiles in rosbag2's metadata version 9 form, policies by
name): ``ros2 bag play`` offers that QoS again, so /robot_description and /tf_static are
republished transient local (latched) and a late robot_state_publisher or RViz still gets them.
"""

from __future__ import annotations

from pathlib import Path

from ..sim import messages as ms

SEP = "\n" + "=" * 80 + "\nMSG: "
DEFS = {  # ROS 2 Jazzy definitions (comments and defaults dropped) and the types each uses
    "builtin_interfaces/Time": ("int32 sec\nuint32 nanosec", ()),
    "std_msgs/Header": ("builtin_interfaces/Time stamp\nstring frame_id", ("builtin_interfaces/Time",)),
    "geometry_msgs/Vector3": ("float64 x\nfloat64 y\nfloat64 z", ()),
    "geometry_msgs/Point": ("float64 x\nfloat64 y\nfloat64 z", ()),
    "geometry_msgs/Quaternion": ("float64 x\nfloat64 y\nfloat64 z\nfloat64 w", ()),
    "geometry_msgs/Transform": (
        "Vector3 translation\nQuaternion rotation",
        ("geometry_msgs/Vector3", "geometry_msgs/Quaternion"),
    ),
    "geometry_msgs/Twist": ("Vector3 linear\nVector3 angular", ("geometry_msgs/Vector3",)),
    "geometry_msgs/Wrench": ("Vector3 force\nVector3 torque", ("geometry_msgs/Vector3",)),
    "geometry_msgs/TransformStamped": (
        "std_msgs/Header header\nstring child_frame_id\nTransform transform",
        ("std_msgs/Header", "geometry_msgs/Transform"),
    ),
    "rosgraph_msgs/Clock": ("builtin_interfaces/Time clock", ("builtin_interfaces/Time",)),
    "sensor_msgs/JointState": (
        "std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\nfloat64[] effort",
        ("std_msgs/Header",),
    ),
    "sensor_msgs/MultiDOFJointState": (
        "std_msgs/Header header\nstring[] joint_names\n"
        "geometry_msgs/Transform[] transforms\ngeometry_msgs/Twist[] twist\n"
        "geometry_msgs/Wrench[] wrench",
        ("std_msgs/Header", "geometry_msgs/Transform", "geometry_msgs/Twist", "geometry_msgs/Wrench"),
    ),
    "geometry_msgs/WrenchStamped": (
        "std_msgs/Header header\nWrench wrench",
        ("std_msgs/Header", "geometry_msgs/Wrench"),
    ),
    "geometry_msgs/PointStamped": ("std_msgs/Header header\nPoint point", ("std_msgs/Header", "geometry_msgs/Point")),
    "geometry_msgs/Vector3Stamped": (
        "std_msgs/Header header\nVector3 vector",
        ("std_msgs/Header", "geometry_msgs/Vector3"),
    ),
    "std_msgs/MultiArrayDimension": ("string label\nuint32 size\nuint32 stride", ()),
    "std_msgs/MultiArrayLayout": ("MultiArrayDimension[] dim\nuint32 data_offset", ("std_msgs/MultiArrayDimension",)),
    "std_msgs/Float64MultiArray": ("MultiArrayLayout layout\nfloat64[] data", ("std_msgs/MultiArrayLayout",)),
    "tf2_msgs/TFMessage": ("geometry_msgs/TransformStamped[] transforms", ("geometry_msgs/TransformStamped",)),
    "std_msgs/String": ("string data", ()),
}


def msgdef(dtype: str) -> str:
    """The ROS 2 message definition of dtype ("pkg/msg/Name"), its dependencies appended (the
    format ``ros2 bag`` writes and mcap-ros2-support parses)."""
    name = dtype.replace("/msg/", "/")
    seen: list[str] = []

    def walk(n: str) -> None:
        for d in DEFS[n][1]:
            if d not in seen:
                seen.append(d)
                walk(d)

    walk(name)
    return DEFS[name][0] + "".join(SEP + d + "\n" + DEFS[d][0] for d in seen)


INFINITE = "    sec: 9223372036\n    nsec: 854775807\n"  # RMW_DURATION_INFINITE as rmw reports an unset one


def offered_qos_profiles(topic: str) -> str:
    """The ``offered_qos_profiles`` channel metadata of ``topic``: the node's publisher's QoS (reliable,
    keep last; transient local with depth LATCHED_DEPTH for the latched topics, else volatile), as
    rosbag2_storage's YAML encoder writes it (metadata version 9: policies by name)."""
    latched = topic in ms.LATCHED_TOPICS
    depth = ms.LATCHED_DEPTH if latched else ms.TF_DEPTH if topic == ms.TF else ms.STATE_DEPTH
    return (
        f"- history: keep_last\n  depth: {depth}\n  reliability: reliable\n"
        f"  durability: {'transient_local' if latched else 'volatile'}\n"
        f"  deadline:\n{INFINITE}  lifespan:\n{INFINITE}  liveliness: automatic\n"
        f"  liveliness_lease_duration:\n{INFINITE}  avoid_ros_namespace_conventions: false"
    )


MSGDEFS = {dtype: msgdef(dtype) for dtype in (*ms.STATE_TOPICS.values(), *ms.LATCHED_TOPICS.values())}


def ros2_writer(stream):
    """An mcap_ros2 Writer on ``stream`` whose ``register_channel`` adds a channel with metadata
    (mcap_ros2's ``write_message`` registers channels without any)."""
    from mcap_ros2.writer import Writer

    class ChannelWriter(Writer):
        def register_channel(self, topic: str, schema, metadata: dict[str, str]) -> None:
            self._channel_ids[topic] = self._writer.register_channel(
                topic=topic, message_encoding="cdr", schema_id=schema.id, metadata=metadata
            )

    return ChannelWriter(stream)


class McapRecorder:
    """Streams the state messages of a simulator into an MCAP file; ``close`` finishes it (also on
    errors, so a failed run's recording up to the failure stays readable)."""

    def __init__(self, path: str | Path, model, frame_id: str = ms.WORLD):
        self.layout = ms.joint_layout(model)
        self.frame_id = frame_id
        self._file = open(path, "wb")
        self._writer = ros2_writer(self._file)
        self._schemas = {
            topic: self._writer.register_msgdef(dtype, MSGDEFS[dtype])
            for topic, dtype in (*ms.state_topics(self.layout).items(), *ms.LATCHED_TOPICS.items())
        }
        for topic, schema in self._schemas.items():
            self._writer.register_channel(topic, schema, {"offered_qos_profiles": offered_qos_profiles(topic)})
        self._seq = 0
        self.model = model

    def write(self, sim, ns: int | None = None) -> None:
        """One message per state topic for the simulator's current state, stamped ns [ns]
        (default: its time sim.t)."""
        ns = ms.time_to_ns(sim.t) if ns is None else ns
        if self._seq == 0:  # what RViz and Foxglove need once: the URDF and the fixed frames
            from ..io.urdf_export import robot_description

            latched = {
                ms.ROBOT_DESCRIPTION: ms.robot_description_message(robot_description(self.model)),
                ms.TF_STATIC: ms.tf_static(self.model, ns),
            }
            for topic, msg in latched.items():
                self._writer.write_message(topic, self._schemas[topic], msg, log_time=ns, publish_time=ns, sequence=0)
        for topic, msg in ms.state_messages(sim, self.layout, ns, self.frame_id).items():
            self._writer.write_message(
                topic, self._schemas[topic], msg, log_time=ns, publish_time=ns, sequence=self._seq
            )
        self._seq += 1

    def close(self) -> None:
        self._writer.finish()
        self._file.close()
