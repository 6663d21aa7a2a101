"""A client process gets the interface packages the node builds (tf2_msgs, simulation_interfaces)
from one documented command, ``eval "$(python -m mbsfmu_ros env)"``, and using them (publish and
take a TFMessage over DDS, serve and call a simulation_interfaces service, an action server) prints
nothing on stderr: no rcutils error block (their C type support now includes the introspection
type support Fast DDS asks for when it registers a type)."""

import subprocess
import sys

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from tests.support import ros_sandbox as rt
from tests.support.ros_interfaces import interfaces_loaded

pytestmark = [pytest.mark.slow, pytest.mark.integration]

CLIENT = f"""
import time
import rclpy
from rclpy.action import ActionServer
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import SimulationState
from simulation_interfaces.srv import GetSimulationState
from tf2_msgs.msg import TFMessage
from geometry_msgs.msg import TransformStamped

rclpy.init()
node = rclpy.create_node("env_client")
got = []
node.create_subscription(TFMessage, "tf_probe", got.append, 10)
pub = node.create_publisher(TFMessage, "tf_probe", 10)
node.create_service(GetSimulationState, "probe_state", lambda req, res: (setattr(res.state, "state", 2), res)[1])
ActionServer(node, SimulateSteps, "probe_steps", execute_callback=lambda handle: SimulateSteps.Result())
client = node.create_client(GetSimulationState, "probe_state")
future = None
end = time.monotonic() + {rt.PATIENCE}
while time.monotonic() < end and not (got and future is not None and future.done()):
    pub.publish(TFMessage(transforms=[TransformStamped(child_frame_id="probe")]))
    if future is None and client.service_is_ready():
        future = client.call_async(GetSimulationState.Request())
    rclpy.spin_once(node, timeout_sec=0.05)
assert got[0].transforms[0].child_frame_id == "probe", got
assert future.result().state.state == SimulationState.STATE_PAUSED
node.destroy_node()
rclpy.shutdown()
print("ok")
"""


def run(command: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)


def test_env_line_lets_a_client_use_the_packages_silently(tmp_path):
    interfaces_loaded()
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    with rt.Sandbox("clientenv") as sandbox:
        env = sandbox.env()
        line = run(f"{sys.executable} -m mbsfmu_ros env", env)
        assert line.returncode == 0 and line.stderr == "", line.stderr
        if line.stdout.startswith("export PYTHONPATH="):  # else a sourced ROS 2 brings its own
            bare = run(f"{sys.executable} -c 'import tf2_msgs.msg'", env)
            assert bare.returncode != 0 and "tf2_msgs" in bare.stderr  # what the line is for
        client = run(f'eval "$({sys.executable} -m mbsfmu_ros env)" && {sys.executable} {script}', env)
    assert client.returncode == 0 and client.stdout == "ok\n", client.stdout + client.stderr
    assert client.stderr == "", client.stderr
