"""GetNamedPoses and GetNamedPoseBounds on the node over real DDS (a client in this process, the
node in a subprocess, a leased domain): the SCARA's named poses in file order with their tags,
the tags filter, a box bounds with its corners in Bounds.msg's order, NOT_FOUND for another name,
and both features announced."""

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS
from tests.support.ros_interfaces import interfaces_loaded

pytestmark = [pytest.mark.slow, pytest.mark.integration]

NS = "/np"


def test_named_poses_over_dds(tmp_path):
    interfaces_loaded()
    from simulation_interfaces.msg import Bounds, Result, SimulatorFeatures, TagsFilter
    from simulation_interfaces.srv import GetNamedPoseBounds, GetNamedPoses, GetSimulatorFeatures

    with rt.Sandbox("namedposes") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(MODELS / "scara.yaml", {"start_paused": True}, sandbox, log, NS)
        client = rt.Client(sandbox, proc)
        try:

            def call(srv, service, **fields):
                response = client.call(srv, f"{NS}/{service}", srv.Request(**fields))
                assert response is not None, client.failure(log)
                return response

            features = call(GetSimulatorFeatures, "get_simulator_features").features.features
            assert {SimulatorFeatures.NAMED_POSES, SimulatorFeatures.POSE_BOUNDS} <= set(features)

            r = call(GetNamedPoses, "get_named_poses")
            assert r.result.result == Result.RESULT_OK
            assert [p.name for p in r.poses] == ["stretched", "hanging", "folded"]
            assert all(list(p.tags) == ["scara"] and p.pose.orientation.w == 1.0 for p in r.poses)
            assert "q1 = -1.57079633" in r.poses[1].description
            for tags, mode, names in (
                (["scara"], TagsFilter.FILTER_MODE_ANY, 3),
                (["scara", "arm"], TagsFilter.FILTER_MODE_ALL, 0),
                (["arm"], TagsFilter.FILTER_MODE_ANY, 0),
            ):
                r = call(GetNamedPoses, "get_named_poses", tags=TagsFilter(tags=tags, filter_mode=mode))
                assert r.result.result == Result.RESULT_OK and len(r.poses) == names, (tags, mode)
            r = call(GetNamedPoses, "get_named_poses", tags=TagsFilter(tags=["scara"], filter_mode=7))
            assert r.result.result == Result.RESULT_FEATURE_UNSUPPORTED

            r = call(GetNamedPoseBounds, "get_named_pose_bounds", name="hanging")
            assert r.result.result == Result.RESULT_OK and r.bounds.type == Bounds.TYPE_BOX
            upper, lower = ([v.x, v.y, v.z] for v in r.bounds.points)  # straight down -y: tip at (0, -1.8)
            assert lower == pytest.approx([0.0, -1.8, 0.0], abs=1e-12)
            assert upper == pytest.approx([0.05, 0.0, 0.0], abs=1e-12)
            r = call(GetNamedPoseBounds, "get_named_pose_bounds", name="away")
            assert r.result.result == Result.RESULT_NOT_FOUND and "stretched" in r.result.error_message
        finally:
            code = rt.stop_node(proc)
            client.close()
    assert code == 0, rt.read_log(log)
