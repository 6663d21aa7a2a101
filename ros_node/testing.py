"""Helpers for tests and benchmarks that run the node over real DDS on loopback: start it in a
subprocess on an isolated ROS domain (``ROS_DOMAIN_ID`` of the caller's choice, discovery limited to
this machine by ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``) and talk to it from a client rclpy
context in the calling process. rclpy is imported only inside ``Client``.
"""
from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path


def free_domain_id(seed: object = None) -> int:
    """A ROS domain id in 20..99, varied by process id and seed (concurrent runs rarely collide)."""
    return random.Random(f"{os.getpid()}-{time.time_ns()}-{seed}").randint(20, 99)


def ros_env(domain_id: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for an isolated node: the domain id, localhost-only discovery."""
    env = dict(os.environ if base is None else base)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.pop("ROS_LOCALHOST_ONLY", None)            # deprecated since Jazzy; the range above replaces it
    env.setdefault("RCUTILS_COLORIZED_OUTPUT", "0")
    return env


def param_args(params: Mapping[str, object]) -> list[str]:
    """``--ros-args -p name:=value ...`` for a parameter dict (bools lower-case, lists as YAML)."""
    args = ["--ros-args"]
    for k, v in params.items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, (list, tuple)):
            v = "[" + ",".join(str(x) for x in v) + "]"
        args += ["-p", f"{k}:={v}"]
    return args


def start_node(model: str | os.PathLike, params: Mapping[str, object], domain_id: int,
               log: str | os.PathLike) -> subprocess.Popen:
    """``python -m ros_node MODEL --ros-args -p ...`` in a subprocess, stdout and stderr to ``log``."""
    cmd = [sys.executable, "-m", "ros_node", str(model), *param_args(params)]
    out = open(log, "w")
    return subprocess.Popen(cmd, env=ros_env(domain_id), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


def stop_node(proc: subprocess.Popen, timeout: float = 10.0) -> int | None:
    """SIGINT (clean rclpy shutdown), then SIGKILL after ``timeout`` s; the exit code."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    return proc.returncode


def read_log(log: str | os.PathLike) -> str:
    p = Path(log)
    return p.read_text(errors="replace") if p.exists() else ""


class Client:
    """A client node in its own rclpy context on ``domain_id``: records every message of the
    topics given to ``subscribe`` (with the wall time of arrival) and spins until a condition."""

    def __init__(self, domain_id: int, name: str = "mbs_test_client"):
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        self.rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.msgs: dict[str, list] = {}
        self.arrivals: dict[str, list[float]] = {}

    def subscribe(self, topic: str, msg_type, callback: Callable | None = None, depth: int = 1000) -> None:
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        self.msgs[topic], self.arrivals[topic] = [], []

        def cb(msg, topic=topic):
            self.arrivals[topic].append(time.perf_counter())
            self.msgs[topic].append(msg)
            if callback is not None:
                callback(msg)
        self.node.create_subscription(msg_type, topic, cb, QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE))

    def publisher(self, topic: str, msg_type, depth: int = 10):
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        return self.node.create_publisher(msg_type, topic, QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE))

    def spin_until(self, condition: Callable[[], bool], timeout: float, step: float = 0.02) -> bool:
        """Spin until condition() is true (True) or ``timeout`` s pass (False)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if condition():
                return True
            self.executor.spin_once(timeout_sec=step)
        return condition()

    def spin_for(self, seconds: float) -> None:
        self.spin_until(lambda: False, seconds)

    def call(self, srv_type, name: str, request, timeout: float = 10.0):
        """Call a service and wait for the response (None on timeout)."""
        cli = self.node.create_client(srv_type, name)
        if not cli.wait_for_service(timeout_sec=timeout):
            return None
        fut = cli.call_async(request)
        self.spin_until(fut.done, timeout)
        self.node.destroy_client(cli)
        return fut.result() if fut.done() else None

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)
