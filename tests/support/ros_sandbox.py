"""Helpers for tests and benchmarks that run the node over real DDS on loopback: start it in a
subprocess inside a ``Sandbox`` and talk to it from a client rclpy context in the calling process.
rclpy is imported only inside ``Client``.

A ``Sandbox`` makes a run immune to any other ROS graph on the machine, including a second test
run started at the same time:

- its ROS domain id is leased (``lease_domain``): an exclusive ``flock`` on a file per id in the
  temp directory, held until ``close()`` (or the process's end), so two runs that use these
  helpers never share a domain; discovery stays on this machine
  (``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST``);
- a graph that does not take part in the leases (another tool, an older checkout picking a random
  id) may still share the domain, so the node also gets a unique name (its services
  ``/<name>/pause``..., its ``/rosout`` entries and diagnostics carry it) and every topic of
  ``mbsfmu_ros.topics`` is remapped under a unique prefix: the run neither hears nor is heard by
  anyone else.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from mbsfmu_ros import topics
from tests.support.ros_interfaces import interfaces_loaded

# ROS 2's portable domain ids on Linux are 0..101 (above, the RTPS ports reach the ephemeral
# range); 0 is everyone's default, so it is left out.
DOMAIN_IDS = range(1, 102)
LOCK_DIR = Path(tempfile.gettempdir()) / "mbsfmu-ros-domains"
# [s] the longest a client waits for the node to reach a state (``Client.spin_until``, ``call``).
# Waits end as soon as the state is reached (or the node process exits), so this bounds only a
# failure; it is long because on a machine short of memory a node's start alone took over 60 s.
PATIENCE = 300.0
# Environment variable naming the rclpy executor ("single" or "events", parameter ``executor``)
# that ``start_node`` gives every node whose test does not set one: a run of tests/ros with it
# set exercises the services, actions and loop under that executor.
EXECUTOR_ENV = "MBSFMU_TEST_EXECUTOR"


class DomainLease:
    """A ROS domain id held exclusively by this object until ``release()``: an flock on
    ``LOCK_DIR/<id>.lock`` (the kernel drops it when the process ends, so a crashed run leaks
    nothing)."""

    def __init__(self, domain_id: int, fd: int):
        self.domain_id, self._fd = domain_id, fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> DomainLease:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def lease_domain(ids=DOMAIN_IDS, lock_dir: str | os.PathLike = LOCK_DIR) -> DomainLease:
    """The first id of ``ids`` (tried in a random order) whose lock file no other process or
    lease holds. RuntimeError when every id is held."""
    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    order = list(ids)
    random.Random(f"{os.getpid()}-{time.time_ns()}").shuffle(order)
    for domain_id in order:
        path = lock_dir / f"{domain_id}.lock"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError:
            continue  # e.g. a file of another user without write access: treat as taken
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                continue
            raise
        return DomainLease(domain_id, fd)
    raise RuntimeError(f"every ROS domain id in {ids} is leased (lock files in {lock_dir})")


class Sandbox:
    """One run's private ROS graph: a leased domain id, a unique node name and a unique prefix
    for the node's topics. ``label`` (letters, digits, _) only makes names readable."""

    def __init__(self, label: str = "test", ids=DOMAIN_IDS, lock_dir: str | os.PathLike = LOCK_DIR):
        self.lease = lease_domain(ids, lock_dir)
        self.domain_id = self.lease.domain_id
        token = f"{re.sub(r'[^A-Za-z0-9_]', '_', label)}_{os.getpid()}_{secrets.token_hex(4)}"
        self.node_name = f"mbsfmu_{token}"
        self.prefix = f"/mbs_test_{token}"

    def topic(self, name: str) -> str:
        """The remapped name of one of the node's topics (others, e.g. /rosout, unchanged)."""
        return self.prefix + name if name in topics.ALL else name

    def service(self, name: str) -> str:
        """``~/pause`` -> ``/<node name>/pause``."""
        return f"/{self.node_name}/{name[2:]}" if name.startswith("~/") else name

    def ros_args(self) -> list[str]:
        """Remapping rules for the node: its name and every topic under the prefix."""
        args = ["-r", f"__node:={self.node_name}"]
        for name in topics.ALL:
            args += ["-r", f"{name}:={self.topic(name)}"]
        return args

    def env(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        return ros_env(self.domain_id, base)

    def close(self) -> None:
        self.lease.release()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def ros_env(domain_id: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """Environment for an isolated node: the domain id, localhost-only discovery."""
    env = dict(os.environ if base is None else base)
    env["ROS_DOMAIN_ID"] = str(domain_id)
    env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    env.pop("ROS_LOCALHOST_ONLY", None)  # deprecated since Jazzy; the range above replaces it
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


def start_node(
    model: str | os.PathLike | None,
    params: Mapping[str, object],
    sandbox: Sandbox,
    log: str | os.PathLike,
    namespace: str | None = None,
    prefix: Sequence[str] = (),
) -> subprocess.Popen:
    """``python -m mbsfmu_ros MODEL --ros-args -r ... -p ...`` in a subprocess inside ``sandbox``
    (its domain, node name and topic prefix), stdout and stderr to ``log``. With ``namespace``
    (``/robot1``) the node runs in it: its relative topics are ``/robot1/joint_states``..., which
    the sandbox's prefix rules (names in the root namespace) leave alone. ``model`` None: none on
    the command line (a world file given as parameter ``world``). Parameter ``executor`` comes
    from ``$MBSFMU_TEST_EXECUTOR`` (``EXECUTOR_ENV``) when set and ``params`` has none. ``prefix``:
    a command the node runs under (``setpriv ...``)."""
    if os.environ.get(EXECUTOR_ENV):
        params = {"executor": os.environ[EXECUTOR_ENV], **params}
    interfaces_loaded()  # built once here, so no node spends its start building tf2_msgs and simulation_interfaces
    ns = ["-r", f"__ns:={namespace}"] if namespace else []
    given = [] if model is None else [str(model)]
    cmd = [*prefix, sys.executable, "-m", "mbsfmu_ros", *given, *param_args(params), *sandbox.ros_args(), *ns]
    with open(log, "w") as out:
        return subprocess.Popen(cmd, env=sandbox.env(), stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)


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
    """A client node in its own rclpy context inside ``sandbox``: records every message of the
    topics given to ``subscribe`` (with the wall time of arrival) and spins until a condition.
    Topics and services are named as the node names them (``/joint_states``, ``~/pause``); the
    client talks to their sandboxed names."""

    def __init__(
        self,
        sandbox: Sandbox,
        proc: subprocess.Popen | None = None,
        name: str = "mbs_test_client",
        executor: str = "single",
    ):
        """``executor``: "single" (rclpy's SingleThreadedExecutor) or "events" (its EventsExecutor,
        and no parameter services on the client node: a lean client for benchmarks)."""
        self.proc = proc  # the node's process: waits end early when it has exited
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.rclpy = rclpy
        self.sandbox = sandbox
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=sandbox.domain_id)
        lean = executor == "events"
        self.node = rclpy.create_node(
            f"{name}_{sandbox.node_name}", context=self.context, start_parameter_services=not lean
        )
        if lean:
            from rclpy.experimental import EventsExecutor

            self.executor = EventsExecutor(context=self.context)
        else:
            self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.msgs: dict[str, list] = {}
        self.arrivals: dict[str, list[float]] = {}

    def subscribe(
        self,
        topic: str,
        msg_type,
        callback: Callable | None = None,
        depth: int = 1000,
        record: bool = True,
        raw: bool = False,
    ) -> None:
        """Record ``topic`` in ``msgs[topic]`` (reliable, keep last ``depth``). ``record`` False:
        only ``callback`` gets the messages (a benchmark's client: thousands of messages held
        would make each of the garbage collector's passes longer); ``raw``: as CDR bytes."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        self.msgs[topic], self.arrivals[topic] = [], []

        def cb(msg, topic=topic):
            self.arrivals[topic].append(time.perf_counter())
            self.msgs[topic].append(msg)
            if callback is not None:
                callback(msg)

        qos = QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)
        self.node.create_subscription(msg_type, self.sandbox.topic(topic), cb if record else callback, qos, raw=raw)

    def publisher(self, topic: str, msg_type, depth: int = 10):
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        return self.node.create_publisher(
            msg_type, self.sandbox.topic(topic), QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE)
        )

    def node_logs(self, since: int = 0, min_level: int = 0) -> list[str]:
        """Texts of the sandboxed node's /rosout entries (``subscribe("/rosout", Log)`` first) from
        index ``since`` on, of at least ``min_level`` (30 = warning)."""
        return [
            m.msg for m in self.msgs["/rosout"][since:] if m.name == self.sandbox.node_name and m.level >= min_level
        ]

    def spin_until(self, condition: Callable[[], bool], timeout: float = PATIENCE, step: float = 0.02) -> bool:
        """Spin until condition() is true (True), or ``timeout`` s pass or the node process exits
        (False)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if condition():
                return True
            if self.proc is not None and self.proc.poll() is not None:
                break
            self.executor.spin_once(timeout_sec=step)
        return condition()

    def spin_for(self, seconds: float) -> None:
        self.spin_until(lambda: False, seconds)

    def call(self, srv_type, name: str, request, timeout: float = PATIENCE):
        """Call a service (``~/x``: the node's) and wait for the response (None on timeout)."""
        cli = self.node.create_client(srv_type, self.sandbox.service(name))
        try:
            if not cli.wait_for_service(timeout_sec=timeout):
                return None
            fut = cli.call_async(request)
            self.spin_until(fut.done, timeout)
            return fut.result() if fut.done() else None
        finally:
            self.node.destroy_client(cli)

    def graph(self) -> str:
        """What this client sees of the graph (for failure messages): nodes and topics."""
        nodes = ", ".join(f"{ns.rstrip('/')}/{n}" for n, ns in self.node.get_node_names_and_namespaces())
        names = ", ".join(t for t, _ in self.node.get_topic_names_and_types())
        return f"domain {self.sandbox.domain_id}; nodes: {nodes}; topics: {names}"

    def failure(self, log: str | os.PathLike) -> str:
        """Why a wait on the node failed, for the test report: the node's process state, the
        graph as this client sees it, and the node's log."""
        code = None if self.proc is None else self.proc.poll()
        state = "running" if code is None else f"exited with code {code}"
        return f"node process {state}; client sees {self.graph()}; node log:\n{read_log(log)}"

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.rclpy.try_shutdown(context=self.context)
