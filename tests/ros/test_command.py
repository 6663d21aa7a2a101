"""`mbsfmu ros MODEL --ros-args ...`, the command users run (the other ROS tests start
``python -m mbsfmu_ros``): the node comes up, its parameters reach it, Ctrl-C ends it cleanly."""

import os
import subprocess
import sys

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from mbsfmu_ros import conversion as cv
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS, ROOT
from tests.support.ros_interfaces import interfaces_loaded

pytestmark = pytest.mark.integration


def test_mbsfmu_ros_command_runs_the_node_with_its_parameters(tmp_path):
    from sensor_msgs.msg import JointState

    period = 20_000_000  # publish_rate 50 Hz (the default is 100 Hz): the stamps show the parameter arrived
    interfaces_loaded()  # built once beforehand (as start_node does), not by this node's first start
    with rt.Sandbox("command") as sandbox:
        params = rt.param_args({"publish_rate": 50.0, "real_time_factor": 0.0})
        cmd = [sys.executable, "-m", "mbsfmu", "ros", str(MODELS / "scara.yaml"), *params, *sandbox.ros_args()]
        env = sandbox.env({**os.environ, "PYTHONPATH": str(ROOT)})
        log = tmp_path / "node.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT
            )
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/joint_states", JointState)
            ok = client.spin_until(lambda: len(client.msgs["/joint_states"]) >= 10)
            assert ok, client.failure(log)
            js = client.msgs["/joint_states"]
            assert list(js[-1].name) == ["q1", "q2"]
            stamps = [cv.stamp_to_ns(m.header.stamp.sec, m.header.stamp.nanosec) for m in js]
            assert all(t % period == 0 for t in stamps) and any(t % (2 * period) for t in stamps), stamps[:5]
        finally:
            code = rt.stop_node(proc)
            client.close()
        assert code == 0, rt.read_log(log)
        assert "mbsfmu ros: stopped by a signal (Ctrl-C or SIGTERM) at t = " in rt.read_log(log)


def test_sigterm_stops_the_node_cleanly_and_says_so(tmp_path):
    """docker stop, systemd and batch schedulers send SIGTERM: the node ends as after Ctrl-C (exit 0,
    the shutdown of rclpy, one line saying where the simulation stood)."""
    import signal

    from sensor_msgs.msg import JointState

    interfaces_loaded()
    with rt.Sandbox("sigterm") as sandbox:
        params = rt.param_args({"real_time_factor": 0.0})
        cmd = [sys.executable, "-m", "mbsfmu", "ros", str(MODELS / "scara.yaml"), *params, *sandbox.ros_args()]
        env = sandbox.env({**os.environ, "PYTHONPATH": str(ROOT)})
        log = tmp_path / "node.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(
                cmd, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=ROOT
            )
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/joint_states", JointState)
            assert client.spin_until(lambda: len(client.msgs["/joint_states"]) >= 3), client.failure(log)
            proc.send_signal(signal.SIGTERM)
            code = proc.wait(30)
        finally:
            rt.stop_node(proc)
            client.close()
        text = rt.read_log(log)
        assert code == 0 and "Traceback" not in text, text
        assert "mbsfmu ros: stopped by a signal (Ctrl-C or SIGTERM) at t = " in text
