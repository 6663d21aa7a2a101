"""Record a run as ROS 2 messages in an MCAP file (Foxglove opens it, `ros2 bag play` replays it)
with no ROS install: the `mcap` and `mcap-ros2-support` packages write CDR-encoded messages from
the standard message definitions below. Topics and types are those of the ROS 2 face
(docs/reference/ros-interface.md): /clock, /joint_states, /mbs/centroidal_momentum, /mbs/com, /mbs/com_velocity,
/mbs/energy. Message fields come from pure functions of one trajectory row.
"""
from __future__ import annotations

from pathlib import Path

HEADER = "builtin_interfaces/Time stamp\nstring frame_id"
TIME = "int32 sec\nuint32 nanosec"
VECTOR3 = "float64 x\nfloat64 y\nfloat64 z"
SEP = "\n" + "=" * 80 + "\nMSG: "
MSGDEFS = {   # ROS 2 Jazzy definitions (comments and defaults dropped), dependencies appended
    "rosgraph_msgs/msg/Clock": "builtin_interfaces/Time clock" + SEP + "builtin_interfaces/Time\n" + TIME,
    "sensor_msgs/msg/JointState": ("std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\n"
                                   "float64[] effort" + SEP + "std_msgs/Header\n" + HEADER + SEP
                                   + "builtin_interfaces/Time\n" + TIME),
    "geometry_msgs/msg/WrenchStamped": ("std_msgs/Header header\nWrench wrench" + SEP + "geometry_msgs/Wrench\n"
                                        "Vector3 force\nVector3 torque" + SEP + "geometry_msgs/Vector3\n" + VECTOR3
                                        + SEP + "std_msgs/Header\n" + HEADER + SEP + "builtin_interfaces/Time\n" + TIME),
    "geometry_msgs/msg/PointStamped": ("std_msgs/Header header\nPoint point" + SEP + "geometry_msgs/Point\n" + VECTOR3
                                       + SEP + "std_msgs/Header\n" + HEADER + SEP + "builtin_interfaces/Time\n" + TIME),
    "geometry_msgs/msg/Vector3Stamped": ("std_msgs/Header header\nVector3 vector" + SEP + "geometry_msgs/Vector3\n"
                                         + VECTOR3 + SEP + "std_msgs/Header\n" + HEADER + SEP
                                         + "builtin_interfaces/Time\n" + TIME),
    "std_msgs/msg/Float64MultiArray": ("MultiArrayLayout layout\nfloat64[] data" + SEP + "std_msgs/MultiArrayLayout\n"
                                       "MultiArrayDimension[] dim\nuint32 data_offset" + SEP
                                       + "std_msgs/MultiArrayDimension\nstring label\nuint32 size\nuint32 stride"),
}
TOPICS = {"/clock": "rosgraph_msgs/msg/Clock", "/joint_states": "sensor_msgs/msg/JointState",
          "/mbs/centroidal_momentum": "geometry_msgs/msg/WrenchStamped", "/mbs/com": "geometry_msgs/msg/PointStamped",
          "/mbs/com_velocity": "geometry_msgs/msg/Vector3Stamped", "/mbs/energy": "std_msgs/msg/Float64MultiArray"}
ENERGY_LABELS = ("KE", "PE", "E", "W_in", "W_diss")


def stamp(t: float) -> dict:
    """builtin_interfaces/Time of t [s] >= 0."""
    ns = round(t * 1e9)
    return {"sec": ns // 1_000_000_000, "nanosec": ns % 1_000_000_000}


def messages(row: dict, joints: list[tuple[str, str, str, str | None]], frame: str = "world") -> dict[str, dict]:
    """The messages of one trajectory row, by topic. joints: (name, q column, qd column, effort
    input column or None) per joint coordinate."""
    header = {"stamp": stamp(row["time"]), "frame_id": frame}
    vec = lambda key: dict(zip("xyz", (row[f"engine.{key}[{k}]"] for k in (1, 2, 3))))  # noqa: E731
    return {
        "/clock": {"clock": stamp(row["time"])},
        "/joint_states": {"header": header, "name": [j[0] for j in joints], "position": [row[j[1]] for j in joints],
                          "velocity": [row[j[2]] for j in joints],
                          "effort": [row[j[3]] if j[3] else 0.0 for j in joints]},
        "/mbs/centroidal_momentum": {"header": header, "wrench": {"force": vec("P_sys"), "torque": vec("H_sys")}},
        "/mbs/com": {"header": header, "point": vec("R")},
        "/mbs/com_velocity": {"header": header, "vector": vec("Rdot")},
        "/mbs/energy": {"layout": {"dim": [{"label": "KE,PE,E,W_in,W_diss", "size": len(ENERGY_LABELS), "stride": 1}],
                                   "data_offset": 0},
                        "data": [row[f"engine.{k}"] for k in ENERGY_LABELS]},
    }


class McapRecorder:
    """Streams rows into an MCAP file; ``close`` finishes it (also on errors, so a failed run's
    recording up to the failure stays readable)."""

    def __init__(self, path: str | Path, joints: list[tuple[str, str, str, str | None]]):
        from mcap_ros2.writer import Writer
        self._file = open(path, "wb")
        self._writer = Writer(self._file)
        self._schemas = {topic: self._writer.register_msgdef(dtype, MSGDEFS[dtype]) for topic, dtype in TOPICS.items()}
        self.joints = joints
        self._seq = 0

    def write(self, row: dict) -> None:
        ns = round(row["time"] * 1e9)
        for topic, msg in messages(row, self.joints).items():
            self._writer.write_message(topic, self._schemas[topic], msg, log_time=ns, publish_time=ns, sequence=self._seq)
        self._seq += 1

    def close(self) -> None:
        self._writer.finish()
        self._file.close()
