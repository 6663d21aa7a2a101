"""A world of several robots in one node (mbsfmu_ros world mode), over real DDS on loopback from
this separate process: the bundled world's three robots (SCARA, 7-DoF URDF arm, spacecraft) under
one /clock that never goes back, each robot's joint states in its namespace with prefixed frames,
its base pose on /tf_static, commands per namespace; the entity services (spawn from a file, a
URDF string, a bundled spawnable; delete; names and resources refused with their .srv codes;
entity states, info, bounds) and the world services (current, available, unload, load)."""

import math

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.spatial import quat_to_R
from mbsfmu.sim.simulator import Simulator

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from mbsfmu_ros import named_poses as nps
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS, ROOT
from tests.support.ros_interfaces import interfaces_loaded

pytestmark = [pytest.mark.slow, pytest.mark.integration]

NS = "/w"
WORLD = ROOT / "scenarios" / "worlds" / "three_robots.yaml"
ROBOTS = ("scara", "arm7", "spacecraft")
TIMEOUT = 0.2  # command_timeout [s of sim time]


def stamp_ns(header) -> int:
    return header.stamp.sec * 10**9 + header.stamp.nanosec


def test_three_robots_in_one_world(tmp_path):
    interfaces_loaded()
    from diagnostic_msgs.msg import DiagnosticArray
    from geometry_msgs.msg import Vector3
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState
    from simulation_interfaces.msg import Result, SimulationState, SimulatorFeatures, SpawnResult
    from simulation_interfaces.srv import (
        DeleteEntity,
        GetAvailableWorlds,
        GetCurrentWorld,
        GetEntities,
        GetEntitiesStates,
        GetEntityBounds,
        GetEntityInfo,
        GetEntityState,
        GetNamedPoseBounds,
        GetNamedPoses,
        GetSimulationState,
        GetSimulatorFeatures,
        GetSpawnables,
        LoadWorld,
        ResetSimulation,
        SetEntityInfo,
        SetEntityState,
        SetSimulationState,
        SpawnEntities,
        SpawnEntity,
        UnloadWorld,
    )
    from std_msgs.msg import Float64MultiArray, String
    from tf2_msgs.msg import TFMessage

    OK = Result.RESULT_OK
    params = {"world": str(WORLD), "publish_rate": 100.0, "real_time_factor": 1.0, "command_timeout": TIMEOUT}
    params["diagnostics_rate"] = 10.0
    with rt.Sandbox("world") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(None, params, sandbox, log, namespace=NS)
        client = rt.Client(sandbox, proc)
        try:

            def call(srv, name, request=None, **fields):
                response = client.call(srv, f"{NS}/{name}", request if request is not None else srv.Request(**fields))
                assert response is not None, client.failure(log)
                return response

            clock = []
            client.node.create_subscription(Clock, sandbox.topic("/clock"), clock.append, 1000)
            js = {name: [] for name in (*ROBOTS, "pend", "arm_b", "scara_b")}
            for name, got in js.items():
                client.node.create_subscription(JointState, f"{NS}/{name}/joint_states", got.append, 1000)
            static = []
            from rclpy.qos import DurabilityPolicy, QoSProfile

            latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
            client.node.create_subscription(TFMessage, f"{NS}/tf_static", static.append, latched)
            tf = []
            client.node.create_subscription(TFMessage, f"{NS}/tf", tf.append, 100)
            diag = []
            client.node.create_subscription(DiagnosticArray, sandbox.topic("/diagnostics"), diag.append, 100)

            # the three robots run: each its joint states in its namespace, frames prefixed
            assert client.spin_until(lambda: all(len(js[r]) >= 10 for r in ROBOTS)), client.failure(log)
            assert [m.name for m in (js["scara"][-1],)] == [["q1", "q2"]]
            assert js["arm7"][-1].name[:7] == [f"panda_joint{k}" for k in range(1, 8)]  # and the fingers
            for r in ROBOTS:
                assert {m.header.frame_id for m in js[r]} == {f"{r}/world"}
            # one step for all: the robots' joint states share their stamps, one /clock per step
            stamps = {r: {stamp_ns(m.header) for m in js[r]} for r in ROBOTS}
            common = stamps["scara"] & stamps["arm7"] & stamps["spacecraft"]
            assert len(common) >= 5, stamps
            clock_ns = lambda: {c.clock.sec * 10**9 + c.clock.nanosec for c in clock}  # noqa: E731
            assert client.spin_until(lambda: common <= clock_ns()), client.failure(log)  # topics race
            # each robot as if alone: its joint states are those of its own Simulator advanced
            # cycle by cycle (the same integrator and steps: float64 round-off only, 1e-12)
            # (the SCARA's q1, q2 and the arm's seven joints lead their q and qd)
            for name, file, n in (("scara", "scara.yaml", 2), ("arm7", "urdf_arm7.urdf", 7)):
                sim = Simulator(mbsfmu.load_model(MODELS / file), integrator="rk4", h_max=1e-3)
                for m in js[name][:8]:
                    if stamp_ns(m.header):
                        sim.advance_to(stamp_ns(m.header) / 1e9)
                    assert list(m.position[:n]) == pytest.approx(sim.q[:n].tolist(), rel=0, abs=1e-12)
                    assert list(m.velocity[:n]) == pytest.approx(sim.qd[:n].tolist(), rel=0, abs=1e-12)
                assert sim.t > 0.05  # the robot moved: its state changed along these messages
            # /tf: every robot's bodies, prefixed; /tf_static: each base pose in the world
            assert client.spin_until(lambda: tf and static), client.failure(log)
            children = {t.child_frame_id for t in tf[-1].transforms}
            assert {"scara/link1", "spacecraft/hub"} <= children and "arm7/panda_link1" in children
            base = {t.child_frame_id: t for t in static[-1].transforms if t.header.frame_id == "world"}
            assert set(base) == {f"{r}/world" for r in ROBOTS}
            sc = base["spacecraft/world"].transform
            assert [sc.translation.x, sc.translation.y, sc.translation.z] == [0.0, 4.0, 2.0]
            assert sc.rotation.z == pytest.approx(2**-0.5, rel=0, abs=1e-15)

            # commands in a robot's namespace reach that robot only (effort = the held input), and
            # drop to zero after command_timeout of sim time without another
            pub = client.node.create_publisher(Float64MultiArray, f"{NS}/scara/mbs/effort_commands", 10)
            assert client.spin_until(lambda: pub.get_subscription_count() > 0), client.failure(log)
            pub.publish(Float64MultiArray(data=[1.5, -0.5]))
            held = lambda: [m for m in js["scara"] if list(m.effort) == [1.5, -0.5]]  # noqa: E731
            assert client.spin_until(lambda: held() and js["scara"][-1] is not held()[-1]), client.failure(log)
            assert list(js["scara"][-1].effort) == [0.0, 0.0]
            span = stamp_ns(held()[-1].header) - stamp_ns(held()[0].header)
            assert TIMEOUT * 1e9 - 20e6 <= span <= TIMEOUT * 1e9 + 20e6  # +- a cycle each end (10 ms)
            assert not any(any(m.effort) for m in js["arm7"])
            pub.publish(Float64MultiArray(data=[1.0]))  # one entry for two inputs: rejected
            status = lambda: [s for m in diag for s in m.status if s.name.endswith(": commands")]  # noqa: E731
            assert client.spin_until(lambda: any("scara: effort command" in s.message for s in status()))
            names = {s.name.split(": ", 1)[1] for m in diag for s in m.status}  # after the node's name
            assert {"scara: energy_balance", "arm7: energy_balance", "spacecraft: H_sys_constant"} <= names, names

            features = call(GetSimulatorFeatures, "get_simulator_features").features
            want = {SimulatorFeatures.SPAWNING, SimulatorFeatures.DELETING, SimulatorFeatures.WORLD_LOADING}
            assert want <= set(features.features) and "urdf" in features.spawn_formats

            # named poses: every robot's, named <robot>/<pose>, placed where the robot stands
            poses = {p.name: p for p in call(GetNamedPoses, "get_named_poses").poses}
            arm_poses = ("ready", "extended", "open", "closed")
            assert list(poses) == [f"scara/{n}" for n in ("stretched", "hanging", "folded")] + [
                f"arm7/{n}" for n in arm_poses
            ]
            ready = poses["arm7/ready"].pose.position
            assert (ready.x, ready.y, ready.z) == (2.0, 0.0, 0.0)  # a fixed base at its placement
            box = call(
                GetNamedPoseBounds, "get_named_pose_bounds", GetNamedPoseBounds.Request(name="arm7/ready")
            ).bounds.points
            lower, upper = nps.pose_bounds(mbsfmu.load_model(MODELS / "urdf_arm7.urdf"), "ready")  # not turned
            np.testing.assert_allclose([[box[0].x, box[0].y, box[0].z], [box[1].x, box[1].y, box[1].z]], [upper, lower])
            r = call(GetNamedPoseBounds, "get_named_pose_bounds", GetNamedPoseBounds.Request(name="ready"))
            assert r.result.result == Result.RESULT_NOT_FOUND

            # entities: the robots, by name filter, category, tags
            assert call(GetEntities, "get_entities").entities == list(ROBOTS)
            r = call(GetEntities, "get_entities", filters=GetEntities.Request().filters.__class__(filter="^s"))
            assert r.entities == ["scara", "spacecraft"]
            info = call(GetEntityInfo, "get_entity_info", entity="arm7")
            assert info.result.result == OK and info.info.category.category == 1  # CATEGORY_ROBOT
            req = SetEntityInfo.Request(entity="arm7", info=info.info)
            req.info.tags = ["arm", "urdf"]
            assert call(SetEntityInfo, "set_entity_info", req).result.result == OK
            q = GetEntities.Request()
            q.filters.tags.tags = ["urdf"]
            assert call(GetEntities, "get_entities", q).entities == ["arm7"]
            assert call(GetEntityInfo, "get_entity_info", entity="nope").result.result == Result.RESULT_NOT_FOUND

            # paused from here on: states read back are the states set (no step in between)
            paused = call(SetSimulationState, "set_simulation_state", state=SimulationState(state=2))
            assert paused.result.result == OK

            # base states: a fixed base is its placement; setting it moves the robot (on /tf_static)
            s = call(GetEntityState, "get_entity_state", entity="arm7")
            assert s.result.result == OK and [s.state.pose.position.x, s.state.pose.position.y] == [2.0, 0.0]
            move = SetEntityState.Request(entity="arm7", set_pose=True)
            move.state.pose.position.x, move.state.pose.position.y = 2.0, 1.0
            assert call(SetEntityState, "set_entity_state", move).result.result == OK
            assert call(GetEntityState, "get_entity_state", entity="arm7").state.pose.position.y == 1.0

            def arm_moved():
                return any(
                    t.child_frame_id == "arm7/world" and t.transform.translation.y == 1.0 for t in static[-1].transforms
                )

            assert client.spin_until(arm_moved), client.failure(log)
            q = GetEntities.Request()
            q.filters.bounds.type, q.filters.bounds.points = 3, [Vector3(), Vector3(x=1.0)]  # a sphere
            assert call(GetEntities, "get_entities", q).result.result == Result.RESULT_FEATURE_UNSUPPORTED
            spin = SetEntityState.Request(entity="arm7", set_twist=True)
            spin.state.twist.angular.z = 1.0
            r = call(SetEntityState, "set_entity_state", spin)
            assert r.result.result == Result.RESULT_OPERATION_FAILED, r.result.error_message
            # the floating base: the hub's state in the world (placement o hub pose)
            states = call(GetEntitiesStates, "get_entities_states")
            assert states.entities == list(ROBOTS) and len(states.states) == 3
            hub = states.states[2].pose
            # the hub starts at its origin's place in the spacecraft frame, within a few cm of it
            # (its initial velocity is ~mm/s): the world pose puts it near (0, 4, 2)
            assert math.dist([hub.position.x, hub.position.y, hub.position.z], [0.0, 4.0, 2.0]) < 0.5
            description = []
            client.node.create_subscription(String, f"{NS}/arm7/robot_description", description.append, latched)
            assert client.spin_until(lambda: description) and "panda_joint7" in description[0].data

            # the floating base: set its world pose (a 0.6 rad turn about x, in a frame placed by a
            # quarter turn about z), read it back, and find it again as /tf_static's placement
            # composed with /tf's hub transform (float64 round-off of a few products: 1e-12)
            put = SetEntityState.Request(entity="spacecraft", set_pose=True)
            p, o = put.state.pose.position, put.state.pose.orientation
            p.x, p.y, p.z = 1.0, 2.0, 3.0
            o.x, o.w = math.sin(0.3), math.cos(0.3)
            tf.clear()
            assert call(SetEntityState, "set_entity_state", put).result.result == OK
            got = call(GetEntityState, "get_entity_state", entity="spacecraft").state.pose
            assert [got.position.x, got.position.y, got.position.z] == pytest.approx([1.0, 2.0, 3.0], rel=0, abs=1e-12)
            assert [got.orientation.x, got.orientation.y, got.orientation.z, got.orientation.w] == pytest.approx(
                [o.x, 0.0, 0.0, o.w], rel=0, abs=1e-12
            )
            assert client.spin_until(
                lambda: any(t.child_frame_id == "spacecraft/hub" for m in tf for t in m.transforms)
            )
            (hub_tf,) = [t.transform for m in tf[-1:] for t in m.transforms if t.child_frame_id == "spacecraft/hub"]
            R_w = quat_to_R(np.array([sc.rotation.w, sc.rotation.x, sc.rotation.y, sc.rotation.z]))
            h = hub_tf.translation
            p_hub = np.array([sc.translation.x, sc.translation.y, sc.translation.z]) + R_w @ np.array([h.x, h.y, h.z])
            assert p_hub.tolist() == pytest.approx([1.0, 2.0, 3.0], rel=0, abs=1e-12)
            r = hub_tf.rotation
            R = R_w @ quat_to_R(np.array([r.w, r.x, r.y, r.z]))
            assert R.ravel().tolist() == pytest.approx(
                quat_to_R(np.array([o.w, o.x, 0.0, 0.0])).ravel().tolist(), abs=1e-12
            )
            # reset: every robot to its initial state and its world-file base pose
            assert call(ResetSimulation, "reset_simulation").result.result == OK
            s = call(GetEntityState, "get_entity_state", entity="arm7").state.pose.position
            assert [s.x, s.y, s.z] == [2.0, 0.0, 0.0]
            bounds = call(GetEntityBounds, "get_entity_bounds", entity="scara").bounds
            assert bounds.type == 1 and len(bounds.points) == 2  # TYPE_BOX: upper, lower corner
            up, lo = bounds.points

            # closed form at the initial q = (0.3, -0.5) (reset, paused), scenarios/models/scara.yaml's
            # numbers: the origins, centres of mass and frames (elbow, tip) of the planar SCARA
            def rot(a, x, y):
                return np.array([math.cos(a) * x - math.sin(a) * y, math.sin(a) * x + math.cos(a) * y, 0.0])

            q1, q12 = 0.3, 0.3 - 0.5
            o2 = rot(q1, 1.0, 0.0)
            points = [np.zeros(3), o2, rot(q1, 0.5, 0.02), o2 + rot(q12, 0.4, 0.05), o2 + rot(q12, 0.8, 0.0)]
            P = np.array(points)
            assert [up.x, up.y, up.z] == pytest.approx(P.max(axis=0).tolist(), rel=0, abs=1e-12)
            assert [lo.x, lo.y, lo.z] == pytest.approx(P.min(axis=0).tolist(), rel=0, abs=1e-12)

            # spawn: from a file, a URDF string, a bundled spawnable; refusals with their codes
            PoseStamped = SpawnEntity.Request().initial_pose.__class__

            def spawn(**fields):
                req = SpawnEntity.Request(**{k: v for k, v in fields.items() if k not in ("uri", "text")})
                req.entity_resource.uri = fields.get("uri", "")
                req.entity_resource.resource_string = fields.get("text", "")
                return call(SpawnEntity, "spawn_entity", req)

            r = spawn(name="pend", uri=str(MODELS / "compound_pendulum.yaml"), initial_pose=PoseStamped())
            assert r.result.result == OK and r.entity_name == "pend", r.result.error_message
            assert client.spin_until(lambda: js["pend"]), client.failure(log)
            assert js["pend"][-1].header.frame_id == "pend/world" and js["pend"][-1].name == ["q1"]
            assert spawn(name="pend", uri=str(MODELS / "scara.yaml")).result.result == SpawnResult.NAME_NOT_UNIQUE
            at = PoseStamped()
            at.pose.position.x, at.pose.orientation.z, at.pose.orientation.w = -3.0, 0.6, 0.8
            r = spawn(name="pend", allow_renaming=True, uri=(MODELS / "scara.yaml").as_uri(), initial_pose=at)
            assert r.result.result == OK and r.entity_name == "pend_2"
            s = call(GetEntityState, "get_entity_state", entity="pend_2").state.pose
            assert [s.position.x, s.orientation.z, s.orientation.w] == [-3.0, 0.6, 0.8]
            at.header.frame_id = "elsewhere"
            r = spawn(name="z", uri=str(MODELS / "scara.yaml"), initial_pose=at)
            assert r.result.result == SpawnResult.INVALID_POSE
            at.header.frame_id, at.pose.orientation.w = "", 0.9
            r = spawn(name="z", uri=str(MODELS / "scara.yaml"), initial_pose=at)
            assert r.result.result == SpawnResult.INVALID_POSE
            assert spawn(name="2x", uri=str(MODELS / "scara.yaml")).result.result == SpawnResult.NAME_INVALID
            r = spawn(name="x", uri=str(tmp_path / "missing.yaml"))
            assert r.result.result == Result.RESULT_NOT_FOUND
            r = spawn(name="x", uri="package://robot/urdf/robot.urdf")
            assert r.result.result == SpawnResult.UNSUPPORTED_FORMAT
            assert spawn(name="x").result.result == SpawnResult.NO_RESOURCE
            r = spawn(name="x", text="bodies: [1, 2]\n")
            assert r.result.result == SpawnResult.RESOURCE_PARSE_ERROR and "resource_string" in r.result.error_message
            assert spawn(name="x", entity_namespace="a//b", uri=str(MODELS / "scara.yaml")).result.result == (
                SpawnResult.NAMESPACE_INVALID
            )
            r = spawn(name="arm_b", text=(MODELS / "urdf_arm7.urdf").read_text())
            assert r.result.result == OK, r.result.error_message
            assert client.spin_until(lambda: js["arm_b"]), client.failure(log)
            assert js["arm_b"][-1].name == js["arm7"][-1].name
            extra = tmp_path / "models"
            extra.mkdir()
            (extra / "mine.urdf").write_text((MODELS / "urdf_arm7.urdf").read_text())
            r = call(GetSpawnables, "get_spawnables", sources=[str(extra), "nowhere"])
            assert r.result.result == OK and "nowhere" in r.result.error_message  # named, no failure
            assert (extra / "mine.urdf").as_uri() in [s.entity_resource.uri for s in r.spawnables]
            spawnables = call(GetSpawnables, "get_spawnables").spawnables
            assert (extra / "mine.urdf").as_uri() not in [s.entity_resource.uri for s in spawnables]
            (scara,) = [s.entity_resource.uri for s in spawnables if s.entity_resource.uri.endswith("/scara.yaml")]
            r = spawn(name="scara_b", uri=scara)
            assert r.result.result == OK, r.result.error_message
            assert client.spin_until(lambda: js["scara_b"]), client.failure(log)
            many = SpawnEntities.Request(spawn_requests=[SpawnEntity.Request(name="y"), SpawnEntity.Request(name="2")])
            many.spawn_requests[0].entity_resource.uri = str(MODELS / "scara.yaml")
            r = call(SpawnEntities, "spawn_entities", many)
            assert r.result.result == SpawnEntities.Response.ENTITIES_SPAWN_FAILED
            assert [x.result.result for x in r.results] == [OK, SpawnResult.NAME_INVALID]
            assert spawn(name="fb", uri=str(MODELS / "fourbar.yaml")).result.result == OK  # a loop
            entities = call(GetEntities, "get_entities").entities
            assert entities == [*ROBOTS, "pend", "pend_2", "arm_b", "scara_b", "y", "fb"]
            n = len(diag)  # its loop closure in /diagnostics, named by the robot
            fb = lambda: [s for m in diag[n:] for s in m.status if s.name.endswith(": fb: constraints")]  # noqa: E731
            assert client.spin_until(fb), client.failure(log)
            assert call(DeleteEntity, "delete_entity", entity="pend").result.result == OK
            assert call(DeleteEntity, "delete_entity", entity="pend").result.result == Result.RESULT_NOT_FOUND
            assert "pend" not in call(GetEntities, "get_entities").entities
            assert client.spin_until(lambda: client.node.count_publishers(f"{NS}/pend/joint_states") == 0)

            # worlds: current, available, unload, load (stopped afterwards), refusals
            current = call(GetCurrentWorld, "get_current_world")
            assert current.result.result == OK and current.world.name == "three_robots"
            assert current.world.world_resource.uri == WORLD.as_uri()
            available = call(GetAvailableWorlds, "get_available_worlds").worlds
            assert WORLD.as_uri() in [w.world_resource.uri for w in available]
            worlds = tmp_path / "worlds"
            worlds.mkdir()
            (worlds / "one.yaml").write_text(f"robots:\n  - {{name: solo, model: {MODELS / 'scara.yaml'}}}\n")
            (worlds / "notes.yaml").write_text("just: notes\n")  # not a world file: left out
            r = call(GetAvailableWorlds, "get_available_worlds", additional_sources=[str(worlds)])
            assert r.result.result == OK and "notes.yaml" in r.result.error_message
            assert [w.name for w in r.worlds if w.world_resource.uri == (worlds / "one.yaml").as_uri()] == ["one"]
            r = call(GetAvailableWorlds, "get_available_worlds", additional_sources=["nowhere"])
            assert r.result.result == GetAvailableWorlds.Response.DEFAULT_SOURCES_FAILED
            r = call(GetAvailableWorlds, "get_available_worlds", additional_sources=["nowhere"], continue_on_error=True)
            assert r.result.result == OK and WORLD.as_uri() in [w.world_resource.uri for w in r.worlds]
            q = GetAvailableWorlds.Request()
            q.filter.tags = ["indoor"]
            r = call(GetAvailableWorlds, "get_available_worlds", q)
            assert r.result.result == Result.RESULT_FEATURE_UNSUPPORTED

            def load(uri):
                req = LoadWorld.Request()
                req.world_resource.uri = uri
                return call(LoadWorld, "load_world", req)

            before = call(GetEntities, "get_entities").entities
            broken = tmp_path / "broken_model.yaml"
            broken.write_text("bodies: [1]\n")
            (tmp_path / "two.yaml").write_text(f"robots:\n  - {{name: a, model: {MODELS / 'scara.yaml'}}}\n"
                                               f"  - {{name: b, model: {broken}}}\n")  # fmt: skip
            r = load(str(tmp_path / "two.yaml"))
            assert r.result.result == LoadWorld.Response.RESOURCE_PARSE_ERROR
            assert "robots[1].model: the model does not load:" in r.result.error_message
            assert str(broken) in r.result.error_message
            assert call(GetEntities, "get_entities").entities == before and "scara" in before  # it stays
            assert call(UnloadWorld, "unload_world").result.result == OK
            assert call(GetEntities, "get_entities").entities == []
            assert call(UnloadWorld, "unload_world").result.result == UnloadWorld.Response.NO_WORLD_LOADED
            assert call(GetCurrentWorld, "get_current_world").result.result == GetCurrentWorld.Response.NO_WORLD_LOADED

            bad = tmp_path / "bad.yaml"
            bad.write_text("robots:\n  - name: a\n")
            r = load(str(bad))
            assert r.result.result == LoadWorld.Response.RESOURCE_PARSE_ERROR and "bad.yaml:2" in r.result.error_message
            assert load(str(tmp_path / "none.yaml")).result.result == Result.RESULT_NOT_FOUND
            assert load("package://w/worlds/x.yaml").result.result == LoadWorld.Response.UNSUPPORTED_FORMAT
            assert call(LoadWorld, "load_world").result.result == LoadWorld.Response.NO_RESOURCE
            r = load(WORLD.as_uri())
            assert r.result.result == OK and r.world.name == "three_robots", r.result.error_message
            assert call(GetEntities, "get_entities").entities == list(ROBOTS)
            state = call(GetSimulationState, "get_simulation_state").state.state
            assert state == SimulationState.STATE_STOPPED
            s = call(GetEntityState, "get_entity_state", entity="arm7")  # the world file's pose again
            assert [s.state.pose.position.x, s.state.pose.position.y] == [2.0, 0.0]

            # one /clock across spawning, deleting, unloading and loading, back only where time was
            # reset (ResetSimulation's default scope, LoadWorld's STATE_STOPPED: to 0, as relaunched)
            t = [c.clock.sec * 10**9 + c.clock.nanosec for c in clock]
            back = [b for a, b in zip(t, t[1:]) if b < a]
            assert len(t) > 20 and back and set(back) == {0}, back
            assert t[-1] == 0  # stopped since LoadWorld
            assert client.node.count_publishers(sandbox.topic("/clock")) == 1
        finally:
            client.close()
            rt.stop_node(proc)


def test_a_bad_world_file_stops_the_node_with_its_problems(tmp_path):
    world = tmp_path / "bad.yaml"
    scara = MODELS / "scara.yaml"
    world.write_text(f"robots:\n  - name: a\n    model: {scara}\n  - name: a\n    model: nothere.yaml\n")
    with rt.Sandbox("badworld") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(None, {"world": str(world)}, sandbox, log)
        try:
            assert proc.wait(rt.PATIENCE) == 2
        finally:
            rt.stop_node(proc)
        text = rt.read_log(log)
    assert f"mbsfmu ros: error: 2 problem(s) in world {world}:" in text, text
    assert f"{world}:4: robots[1].name: 'a' is taken by robots[0]" in text
    assert f"{world}:5: robots[1].model: no model file 'nothere.yaml'" in text
    assert "Traceback" not in text
