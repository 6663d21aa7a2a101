"""The MCAP recorder's channels carry the QoS the node's publishers offer (channel metadata
``offered_qos_profiles``, as rosbag2 writes it), read back by two independent readers: the ``mcap``
package (the raw YAML, parsed here) and rosbags (its rosbag2 QoS parser, which normalises the
policies as rosbag2_storage decodes them)."""

import pytest
import yaml

import mbsfmu
from mbsfmu.sim import messages as ms
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import MODELS

pytest.importorskip("mcap_ros2")

INFINITE = {"sec": 9223372036, "nsec": 854775807}


def record(path, model_name="scara.yaml"):
    from mbsfmu.scenario.mcap import McapRecorder

    model = mbsfmu.load_model(MODELS / model_name)
    sim = Simulator(model)
    recorder = McapRecorder(path, model)
    for _ in range(3):
        recorder.write(sim)
        sim.advance_to(sim.t + 0.01)
    recorder.close()
    return recorder


def test_channels_carry_the_offered_qos(tmp_path):
    """Every channel has one profile: reliable, keep last; /robot_description and /tf_static
    transient local with depth 1 (what `ros2 bag play` republishes latched), the state topics
    volatile (depth 10, /tf 100), durations infinite, as rosbag2 writes them."""
    from mcap.reader import make_reader

    recorder = record(tmp_path / "run.mcap")
    with open(tmp_path / "run.mcap", "rb") as f:
        channels = {c.topic: c for c in make_reader(f).get_summary().channels.values()}
    assert set(channels) == {*ms.state_topics(recorder.layout), *ms.LATCHED_TOPICS}
    for topic, channel in channels.items():
        (profile,) = yaml.safe_load(channel.metadata["offered_qos_profiles"])
        latched = topic in ms.LATCHED_TOPICS
        assert profile == {
            "history": "keep_last",
            "depth": 1 if latched else 100 if topic == ms.TF else 10,
            "reliability": "reliable",
            "durability": "transient_local" if latched else "volatile",
            "deadline": INFINITE,
            "lifespan": INFINITE,
            "liveliness": "automatic",
            "liveliness_lease_duration": INFINITE,
            "avoid_ros_namespace_conventions": False,
        }, topic


def test_rosbags_reads_the_latched_durability(tmp_path):
    """rosbags, an independent rosbag2 reader, finds transient local on exactly the latched topics."""
    rosbags = pytest.importorskip("rosbags.highlevel")
    from rosbags.interfaces import QosDurability, QosReliability
    from rosbags.typesys import Stores, get_typestore

    record(tmp_path / "run.mcap")
    with rosbags.AnyReader([tmp_path / "run.mcap"], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        qos = {c.topic: c.ext.offered_qos_profiles for c in reader.connections}
    latched = {t for t, (p,) in qos.items() if p.durability == QosDurability.TRANSIENT_LOCAL}
    assert latched == set(ms.LATCHED_TOPICS)
    assert all(p.reliability == QosReliability.RELIABLE for (p,) in qos.values())
