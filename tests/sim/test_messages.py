"""mbsfmu.sim.messages: the one builder of the ROS 2 state messages, and that the MCAP recording
(read back by an independent reader, rosbags) and the node's rclpy messages carry the same
content for the same state (no DDS: the node's conversion path only)."""

import array
import dataclasses
import math

import numpy as np
import pytest

import mbsfmu
from mbsfmu.sim import messages as ms
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import MODELS


@pytest.fixture(scope="module")
def spacecraft():
    return mbsfmu.load_model(MODELS / "spacecraft.yaml")


@pytest.fixture(scope="module")
def robot():
    return mbsfmu.load_model(MODELS / "branched_robot.yaml")


# ---- joint states ----------------------------------------------------------------------------
def test_joint_states_hold_one_dof_joints_and_multi_dof_joints_apart(spacecraft, robot):
    """/joint_states: the revolute, prismatic and wheel joints by name, in tree order (ROS
    JointState: "revolute or prismatic"); free and spherical joints only in the
    MultiDOFJointState; fixed joints nowhere. (Before, the node published base[1..7] entries with
    NaN and the recorder left the base out: the two disagreed.)"""
    lay = ms.joint_layout(spacecraft)
    assert lay.names == ("hinge_l", "hinge_r", "rw1", "rw2", "rw3", "rw4") and lay.multi_names == ("base",)
    assert lay.q_index.tolist() == [7, 8, 9, 10, 11, 12] and lay.v_index.tolist() == [6, 7, 8, 9, 10, 11]
    lay = ms.joint_layout(robot)
    assert lay.multi_names == ("base", "neck") and lay.multi_free == (True, False)
    assert "neck" not in lay.names and not any("[" in n for n in lay.names)
    assert len(lay.names) + 6 + 3 == robot.nv
    assert ms.MULTI_DOF_JOINT_STATES not in ms.state_topics(ms.joint_layout(mbsfmu.load_model(MODELS / "scara.yaml")))


def test_fields_and_inverse_are_exact(robot, rng):
    """Positions, velocities, efforts, transforms, twists and wrenches are q, qd, tau unchanged
    (quaternion reordered to x, y, z, w); the inverse (any entry order) gives q, qd back bit for
    bit; no NaN anywhere; a missing joint is named."""
    lay = ms.joint_layout(robot)
    q, qd = robot.random_state(rng)
    tau = rng.normal(size=robot.nv)
    js = ms.joint_state(lay, q, qd, tau, 5, "world")
    mj = ms.multi_dof_joint_state(lay, q, qd, tau, 5, "world")
    for e, n in enumerate(js["name"]):
        assert js["position"][e] == q[robot.q_slice(n)][0] and js["velocity"][e] == qd[robot.v_slice(n)][0]
        assert js["effort"][e] == tau[robot.v_slice(n)][0]
    base, neck = (
        dict(zip(("transform", "twist", "wrench"), (mj["transforms"][k], mj["twist"][k], mj["wrench"][k])))
        for k in (0, 1)
    )
    vals = lambda d: [d[c] for c in "xyz"]  # noqa: E731
    qb, vb, tb = q[robot.q_slice("base")], qd[robot.v_slice("base")], tau[robot.v_slice("base")]
    assert vals(base["transform"]["translation"]) == qb[:3].tolist()
    assert [base["transform"]["rotation"][c] for c in "wxyz"] == qb[3:].tolist()
    assert vals(base["twist"]["linear"]) + vals(base["twist"]["angular"]) == vb.tolist()
    assert vals(base["wrench"]["force"]) + vals(base["wrench"]["torque"]) == tb.tolist()
    qn, vn, tn = q[robot.q_slice("neck")], qd[robot.v_slice("neck")], tau[robot.v_slice("neck")]
    assert [neck["transform"]["rotation"][c] for c in "wxyz"] == qn.tolist()
    assert (
        vals(neck["transform"]["translation"])
        == vals(neck["twist"]["linear"])
        == vals(neck["wrench"]["force"])
        == [0.0, 0.0, 0.0]
    )
    assert vals(neck["twist"]["angular"]) == vn.tolist() and vals(neck["wrench"]["torque"]) == tn.tolist()
    assert not any(math.isnan(v) for v in js["position"] + js["velocity"] + js["effort"])
    perm = rng.permutation(len(js["name"]))
    q2, qd2 = ms.state_from_joint_state(
        lay, [js["name"][k] for k in perm], [js["position"][k] for k in perm], [js["velocity"][k] for k in perm], mj
    )
    assert np.array_equal(q2, q) and np.array_equal(qd2, qd)
    # in the node's own order (the direct path), as rclpy hands them (array.array), an extra joint after
    q3, qd3 = ms.state_from_joint_state(
        lay,
        js["name"] + ["other_robot_joint"],
        array.array("d", js["position"] + [7.0]),
        array.array("d", js["velocity"] + [8.0]),
        mj,
    )
    assert np.array_equal(q3, q) and np.array_equal(qd3, qd)
    with pytest.raises(mbsfmu.InputError, match="lacks r_ankle"):
        ms.state_from_joint_state(lay, js["name"][:-1], js["position"][:-1], js["velocity"][:-1], mj)
    with pytest.raises(mbsfmu.InputError, match="lacks base, neck"):
        ms.state_from_joint_state(lay, js["name"], js["position"], js["velocity"])


def test_effort_is_the_applied_actuator_input(spacecraft, robot):
    """effort = tau of the joint's actuator or wheel motor, 0.0 where none acts; a thruster is a
    body force and appears in no effort; a spherical joint's tau[k] is its wrench's torque."""
    sim = Simulator(spacecraft, h_max=0.01)
    sim.set_inputs({"rw2.torque": 0.25, "thr1.thrust": 2.0})
    sim.step(0.02)
    c = ms.state_messages(sim, ms.joint_layout(spacecraft), 0)
    assert c[ms.JOINT_STATES]["effort"] == [0.0, 0.0, 0.0, 0.25, 0.0, 0.0]
    assert c[ms.MULTI_DOF_JOINT_STATES]["wrench"] == [
        {"force": {"x": 0.0, "y": 0.0, "z": 0.0}, "torque": {"x": 0.0, "y": 0.0, "z": 0.0}}
    ]
    sim = Simulator(robot)
    sim.set_inputs({"neck.tau[2]": -0.5, "l_knee.tau": 3.0})
    c = ms.state_messages(sim, ms.joint_layout(robot), 0)
    js = c[ms.JOINT_STATES]
    assert js["effort"][js["name"].index("l_knee")] == 3.0 and sum(abs(e) for e in js["effort"]) == 3.0
    assert c[ms.MULTI_DOF_JOINT_STATES]["wrench"][1]["torque"] == {"x": 0.0, "y": -0.5, "z": 0.0}


# ---- momentum, energy ------------------------------------------------------------------------
def test_momentum_com_energy_are_the_engine_values(spacecraft):
    """force = P_sys (total linear momentum, not p_sys about the CM), torque = H_sys about the CM,
    R, Rdot; energy data in the labelled order KE, PE, E, W_in, W_diss; size = stride = 5."""
    sim = Simulator(spacecraft, h_max=0.01)
    sim.set_input("thr1.thrust", 2.0)
    sim.step(0.1)
    inv = sim.invariants()
    c = ms.state_messages(sim, ms.joint_layout(spacecraft), 7, "inertial")
    w = c[ms.CENTROIDAL_MOMENTUM]["wrench"]
    force, torque = ([w[k][a] for a in "xyz"] for k in ("force", "torque"))
    assert force == inv.P_sys.tolist() and torque == inv.H_sys.tolist()
    assert np.linalg.norm(force) > 0.1 and np.linalg.norm(inv.p_sys) < 1e-12
    assert [c[ms.COM]["point"][a] for a in "xyz"] == inv.R.tolist()
    assert [c[ms.COM_VELOCITY]["vector"][a] for a in "xyz"] == inv.Rdot.tolist()
    en = c[ms.ENERGY]
    assert en["data"] == [inv.KE, inv.PE, inv.E, *sim.work] and sim.work[0] > 0
    assert en["layout"]["dim"] == [{"label": "KE,PE,E,W_in,W_diss", "size": 5, "stride": 5}]
    assert c[ms.COM]["header"] == {"stamp": {"sec": 0, "nanosec": 7}, "frame_id": "inertial"}
    assert {t["header"]["frame_id"] for t in c[ms.TF]["transforms"]} >= {"inertial"}


# ---- the recording and the node carry the same content ------------------------------------------
# ---- fixed frames --------------------------------------------------------------------------
@pytest.mark.parametrize("model_name", ["urdf_quadruped.urdf", "urdf_arm7.urdf", "branched_robot.yaml", "scara.yaml"])
def test_tf_static_holds_every_named_frame_on_its_body(model_name):
    """/tf_static: one TransformStamped per named frame, parent = its host body, the frame's pose
    in the body (quaternion x, y, z, w back to R to 1e-15; translation exact); a body's frame of
    its own name at the body origin (every URDF body has one) is /tf's, not repeated."""
    from mbsfmu.engine.spatial import quat_to_R

    model = mbsfmu.load_model(MODELS / model_name)
    msg = ms.tf_static(model, 1_500_000_000)
    got = {t["child_frame_id"]: t for t in msg["transforms"]}
    own = [n for n, (i, _) in model.frames.items() if n == model.body_names[i - 1]]
    assert len(got) == len(msg["transforms"]) == len(model.frames) - len(own) > 0
    assert set(got) == set(model.frames) - set(own) and not set(got) & set(model.body_names)
    for name, t in got.items():
        i, fr = model.frames[name]
        assert t["header"] == {"stamp": {"sec": 1, "nanosec": 500_000_000}, "frame_id": model.body_names[i - 1]}
        r, x = t["transform"]["rotation"], t["transform"]["translation"]
        assert [x["x"], x["y"], x["z"]] == [float(v) for v in fr.p]
        np.testing.assert_allclose(quat_to_R([r["w"], r["x"], r["y"], r["z"]]), fr.R, rtol=0, atol=1e-15)
    for name in own:
        i, fr = model.frames[name]
        assert np.array_equal(fr.R, np.eye(3)) and not np.any(fr.p)


def plain(obj):
    """A message (rclpy or rosbags) or content as nested dicts, lists and Python scalars."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, np.ndarray, array.array)):
        return [plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if hasattr(type(obj), "get_fields_and_field_types"):  # rclpy
        return {k: plain(getattr(obj, k)) for k in type(obj).get_fields_and_field_types()}
    if dataclasses.is_dataclass(obj):  # rosbags
        return {f.name: plain(getattr(obj, f.name)) for f in dataclasses.fields(obj) if not f.name.startswith("_")}
    return obj


def run(model_name, inputs):
    """A short simulation: yields the simulator at 6 states 0.01 s apart, inputs set."""
    sim = Simulator(mbsfmu.load_model(MODELS / model_name), h_max=2e-3)
    sim.set_inputs(inputs)
    for k in range(6):
        if k:
            sim.advance_to(0.01 * k)
        yield sim


@pytest.mark.parametrize(
    "model_name, inputs",
    [
        ("scara.yaml", {"q1.tau": 1.5}),
        ("spacecraft.yaml", {"rw1.torque": 0.2, "thr1.thrust": 1.0}),
        ("branched_robot.yaml", {"neck.tau[3]": 0.1, "r_knee.tau": -2.0}),
    ],
)
def test_recording_and_node_publish_the_same_messages(tmp_path, model_name, inputs):
    """The same simulation through McapRecorder (read back with rosbags) and through the node's
    conversion path (mbsfmu.sim.messages -> mbsfmu_ros.node.ros_messages, rclpy messages): the same
    topics, and per topic and state equal names and values, bit for bit. /tf, which the node
    publishes only where tf2_msgs imports, is compared with its content there."""
    pytest.importorskip("rclpy", reason="the node's messages need rclpy")
    pytest.importorskip("mcap_ros2")
    rosbags = pytest.importorskip("rosbags.highlevel")
    from rosbags.typesys import Stores, get_typestore

    from mbsfmu.scenario.mcap import McapRecorder
    from mbsfmu_ros import node

    path = tmp_path / "run.mcap"
    recorder = McapRecorder(path, mbsfmu.load_model(MODELS / model_name))
    want: dict[str, list] = {}
    for sim in run(model_name, inputs):
        recorder.write(sim)
        contents = ms.state_messages(sim, recorder.layout, ms.time_to_ns(sim.t))
        built = node.ros_messages({t: c for t, c in contents.items() if t in node.BUILDERS})
        for topic, c in contents.items():
            want.setdefault(topic, []).append(plain(built.get(topic, c)))
    recorder.close()
    got: dict[str, list] = {}
    with rosbags.AnyReader([path], default_typestore=get_typestore(Stores.ROS2_JAZZY)) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        for conn, _ts, raw in reader.messages():
            got.setdefault(conn.topic, []).append(plain(reader.deserialize(raw, conn.msgtype)))
    assert types == {**ms.state_topics(recorder.layout), **ms.LATCHED_TOPICS}
    latched = {topic: got.pop(topic) for topic in ms.LATCHED_TOPICS}  # once, at the first row
    assert [len(v) for v in latched.values()] == [1, 1]
    assert latched[ms.TF_STATIC][0] == plain(ms.tf_static(recorder.model, 0))
    assert set(got) == set(want) and set(node.BUILDERS) >= set(want) - {ms.TF}
    for topic in want:
        assert len(got[topic]) == len(want[topic]) == 6
        for k, (g, w) in enumerate(zip(got[topic], want[topic])):
            assert g == w, (topic, k)
    names = got[ms.JOINT_STATES][-1]["name"]
    assert names and not any("[" in n for n in names)
