"""Benchmark of the ROS 2 node over real DDS on loopback (not a test): sustained publish rate and
period jitter of /joint_states for the SCARA at 1 kHz (wall-clock paced; one rk4 step of 1 ms
per cycle), the same at 200 Hz (one 5 ms rk4 step per cycle: a rate the engine sustains, so
the numbers show the pacing itself), and the lock-step round-trip rate with a PD controller in
the client (1 ms cycles); the same at 1 kHz for the G1 humanoid (29 joints, 30 bodies in /tf each
cycle; example-robot-data's URDF, fixed base) where example-robot-data is installed, its client
holding it against gravity (tau = RNEA(q, 0, 0)). The load average is printed at the start and
the end: the machine may be shared, so the node's own work per cycle (its diagnostics) is the
number that depends least on load.

    python benchmarks/bench_ros.py [--seconds 10] [--rate 1000] [--only scara|G1] [--json out.json]
                                   [--thread-priority 50] [--lock-step]
    python benchmarks/bench_ros.py --stages [--only scara|G1]

``--lock-step``: only the lock-step variants (the round trips per second, SCARA and G1, about a
minute at the default 10 s each).

``--stages``: where the time of one 1 kHz cycle goes, in process (the node's own publishers and
executors, no subscriber, every invariant and /tf each cycle, the model held against gravity by
tau = RNEA(q, 0, 0) as the lock-step client holds G1): the effort command's callback (``command``:
a Float64MultiArray of tau into the inputs), the engine step, filling the state messages (CDR
bytes, ``state_messages.py``: ``fill``, of which ``fill_joint_states`` is what a lock-step
controller waits for, published first), publishing them as bytes against publishing the
same messages as rclpy message objects (the object path: rclpy's Python -> C conversion and
serialisation per message), and one ``spin_once(0)`` of each executor; medians of interleaved
cycles in microseconds. ``spin_*`` is mostly the cost of giving up the processor where other
processes are runnable (the GIL released, a system call): ~80 us at a load of 1-2 on two cores,
as ``time.sleep(0)`` costs there, a few us on a quiet machine.

``--thread-priority P``: the node's parameter ``thread_priority`` (SCHED_FIFO P for its loop
and middleware threads, ``scheduling.py``) and the same for this process (the client: a HIL
client would run so too), to measure under a load of other processes.

Each variant starts the node in its own process in its own sandbox (a leased ROS domain,
localhost discovery, unique node name and topics: tests/support/ros_sandbox.py).
Client-side numbers come from the arrival times of /joint_states in this process; node-side
numbers (lateness, work per cycle, overruns) from its real_time diagnostic. Needs the ``ros``
extra (or a sourced ROS 2).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbsfmu  # noqa: E402
from mbsfmu_ros import conversion as cv  # noqa: E402
from mbsfmu_ros import scheduling  # noqa: E402
from mbsfmu_ros.joint_state_reader import JointStateReader  # noqa: E402
from tests.support import ros_sandbox as rt  # noqa: E402

MODEL = ROOT / "scenarios" / "models" / "scara.yaml"


def g1_model() -> Path | None:
    """G1's URDF from example-robot-data (as benchmarks/bench_calls.py), None where not installed."""
    try:
        dist = metadata.distribution("example-robot-data")
    except metadata.PackageNotFoundError:
        print("example-robot-data is not installed (pip install example-robot-data): G1 skipped")
        return None
    return Path(
        dist.locate_file("cmeel.prefix/share/example-robot-data/robots/g1_description/urdf/g1_29dof_rev_1_0.urdf")
    )


def _real_time_values(client) -> dict[str, float]:
    for arr in reversed(client.msgs["/diagnostics"]):
        for s in arr.status:
            if s.name.endswith(": real_time"):
                out = {}
                for kv in s.values:
                    try:
                        out[kv.key] = float(kv.value)
                    except ValueError:
                        pass
                return out
    return {}


def paced(model_path: Path, rate: float, seconds: float, extra: dict, label: str, log_dir: Path) -> dict:
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    params = {
        "publish_rate": rate,
        "physics_step": 1.0 / rate,
        "real_time_factor": 1.0,
        "diagnostics_rate": 1.0,
        **extra,
    }
    sandbox = rt.Sandbox(label)
    proc = rt.start_node(model_path, params, sandbox, log_dir / f"{label}.log")
    client = rt.Client(sandbox, proc, name="bench_client")
    try:
        client.subscribe("/joint_states", JointState, depth=1000)
        client.subscribe("/diagnostics", DiagnosticArray)
        if not client.spin_until(lambda: len(client.msgs["/joint_states"]) > 50, 30):
            raise RuntimeError(f"{label}: no joint states; node log:\n{rt.read_log(log_dir / f'{label}.log')}")
        client.spin_for(1.0)  # warm-up
        n0 = len(client.msgs["/joint_states"])
        client.spin_for(seconds)
        arr = np.array(client.arrivals["/joint_states"][n0:])
        stamps = (
            np.array(
                [cv.stamp_to_ns(m.header.stamp.sec, m.header.stamp.nanosec) for m in client.msgs["/joint_states"][n0:]]
            )
            * 1e-9
        )
        wall = arr[-1] - arr[0]
        dt = np.diff(arr)
        period = 1.0 / rate
        node = _real_time_values(client)
        return {
            "variant": label,
            "target_hz": rate,
            "received": int(len(arr)),
            "rate_hz": (len(arr) - 1) / wall,
            "real_time_factor": (stamps[-1] - stamps[0]) / wall,
            "period_p50_ms": 1e3 * float(np.percentile(dt, 50)),
            "period_p99_ms": 1e3 * float(np.percentile(dt, 99)),
            "period_p999_ms": 1e3 * float(np.percentile(dt, 99.9)),
            "period_max_ms": 1e3 * float(dt.max()),
            "jitter_p50_ms": 1e3 * float(np.percentile(np.abs(dt - period), 50)),
            "jitter_p99_ms": 1e3 * float(np.percentile(np.abs(dt - period), 99)),
            "missing_stamps": int(round((stamps[-1] - stamps[0]) / period)) + 1 - len(stamps),
            "node_work_p50_ms": 1e3 * node.get("work_p50", np.nan),
            "node_lateness_p99_ms": 1e3 * node.get("lateness_p99", np.nan),
            "node_overrun_fraction": node.get("overrun_fraction", np.nan),
        }
    finally:
        rt.stop_node(proc)
        client.close()
        sandbox.close()


def lock_step(
    model_path: Path,
    rate: float,
    seconds: float,
    extra: dict,
    label: str,
    log_dir: Path,
    client_executor: str,
    client_reads: str = "messages",
    peer: str = "node",
) -> dict:
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray

    model = mbsfmu.load_model(model_path)
    lay = cv.joint_layout(model)
    params = {"publish_rate": rate, "physics_step": 1.0 / rate, "lock_step": True, "diagnostics_rate": 1.0, **extra}
    sandbox = rt.Sandbox(label)
    if peer == "echo":  # the floor: the same messages answered at once, nothing computed (ros_echo.py)
        with open(log_dir / f"{label}.log", "w") as out:
            echo = [
                sys.executable,
                str(ROOT / "benchmarks" / "ros_echo.py"),
                str(model_path),
                "--period",
                str(1 / rate),
            ]
            proc = subprocess.Popen(
                [*echo, "--ros-args", *sandbox.ros_args()], env=sandbox.env(), stdout=out, stderr=subprocess.STDOUT
            )
    else:
        proc = rt.start_node(model_path, params, sandbox, log_dir / f"{label}.log")
    client = rt.Client(sandbox, proc, name="bench_client", executor=client_executor)
    try:
        pub = client.publisher("/mbs/effort_commands", Float64MultiArray)
        if not client.spin_until(lambda: pub.get_subscription_count() > 0, 30):
            raise RuntimeError(f"{label}: node not found")
        client.subscribe("/diagnostics", DiagnosticArray)
        sent, rtt, client_work = [], [], []  # client_work: its callback, message in to command out
        if model.nv == 2:  # the SCARA: a PD controller to (1.0, 0.5) rad
            q_ref, kp, kd = np.array([1.0, 0.5]), np.array([60.0, 40.0]), np.array([15.0, 8.0])
        else:  # held against gravity where it is
            q_ref, kp, kd = np.zeros(model.nv), np.zeros(model.nv), np.zeros(model.nv)
        last = [-1]

        reader = JointStateReader()

        def on_state(msg):
            if client_reads == "raw":  # CDR bytes, read in place (joint_state_reader.py)
                msg = reader.read(msg)
                t, names, position, velocity = (
                    cv.stamp_to_ns(msg.sec, msg.nanosec),
                    msg.name,
                    msg.position,
                    msg.velocity,
                )
            else:  # rclpy's message object
                t = cv.stamp_to_ns(msg.header.stamp.sec, msg.header.stamp.nanosec)
                names, position, velocity = msg.name, msg.position, msg.velocity
            if t == last[0]:
                return
            last[0] = t
            now = time.perf_counter()
            if sent:
                rtt.append(now - sent[-1])
            q, qd = cv.state_from_joint_state(lay, names, position, velocity)
            u = model.inverse_dynamics(q, np.zeros(model.nv), np.zeros(model.nv)) + kp * (q_ref - q) - kd * qd
            sent.append(time.perf_counter())
            pub.publish(Float64MultiArray(data=u.tolist()))
            client_work.append(time.perf_counter() - now)

        # not recorded: 10,000s of messages held would lengthen every pass of the garbage collector
        client.subscribe("/joint_states", JointState, on_state, record=False, raw=client_reads == "raw")
        client.spin_until(lambda: len(rtt) > 20, 30)
        n0, w0 = len(rtt), time.perf_counter()
        client.spin_for(seconds)
        n, w = len(rtt) - n0, time.perf_counter() - w0
        r = np.array(rtt[n0:])
        client.spin_for(1.5)  # the next diagnostics
        node = _real_time_values(client)
        return {
            "variant": label,
            "client_executor": client_executor,
            "client_reads": client_reads,
            "peer": peer,
            "cycle_s": 1.0 / rate,
            "round_trips": n,
            "round_trips_per_s": n / w,
            "real_time_factor": n / rate / w,
            "rtt_p50_ms": 1e3 * float(np.percentile(r, 50)),
            "rtt_p99_ms": 1e3 * float(np.percentile(r, 99)),
            "rtt_p999_ms": 1e3 * float(np.percentile(r, 99.9)),
            "node_work_p50_ms": 1e3 * node.get("work_p50", np.nan),
            "client_work_p50_ms": 1e3 * float(np.median(client_work[n0:])),
        }
    finally:
        rt.stop_node(proc)
        client.close()
        sandbox.close()


def stages(model_path: Path, cycles: int = 3000) -> dict:
    """Median microseconds of each stage of one cycle, in process (see ``--stages``)."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.experimental import EventsExecutor
    from rclpy.parameter import Parameter
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import Float64MultiArray

    from mbsfmu_ros import ros_messages as rm
    from mbsfmu_ros.node import MbsNode

    rm.bind_interfaces(build=True)
    wall = time.perf_counter
    with rt.Sandbox("stages") as sandbox:
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=sandbox.domain_id)
        try:
            params = [Parameter("publish_rate", value=1000.0), Parameter("physics_step", value=1e-3)]
            node = MbsNode(model=str(model_path), context=context, parameter_overrides=params)
            single, events = SingleThreadedExecutor(context=context), EventsExecutor(context=context)
            stage_names = ("command", "step", "fill_joint_states", "fill", "publish", "publish_objects")
            times: dict[str, list[float]] = {k: [] for k in stage_names}
            times.update(spin_single=[], spin_events=[])
            classes = rm.MESSAGE_CLASSES | {"/tf": rm.TFMessage}
            model, zeros = node.model, np.zeros(node.model.nv)
            for k in range(cycles):
                # held against gravity (tau = RNEA(q, 0, 0)), as the lock-step client holds G1
                command = Float64MultiArray(data=model.inverse_dynamics(node.sim.q, zeros, zeros).tolist())
                tc = wall()
                node.on_effort(command)
                t0 = wall()
                node.sim.advance_to(node.sim.t + node.period)
                t1 = wall()
                if k % 2:  # the whole fill, or only its first part (the state a controller waits for)
                    msgs = node.state_msgs.fill(node.sim, node.now_ns(), invariants=True, with_clock=True)
                else:
                    node.state_msgs.fill_joint_states(node.sim, node.now_ns(), with_clock=True)
                t2 = wall()
                t3 = t4 = t2
                if k % 2:
                    for topic, data in msgs.items():
                        node.pubs[topic].publish(data)
                    t3 = wall()
                    if k == 1:  # the same messages as objects (the path before the CDR bytes)
                        objects = {t: deserialize_message(b, classes[t]) for t, b in msgs.items()}
                    for topic, msg in objects.items():
                        node.pubs[topic].publish(msg)
                    t4 = wall()
                times["command"].append(t0 - tc)
                times["step"].append(t1 - t0)
                times["fill" if k % 2 else "fill_joint_states"].append(t2 - t1)
                if k % 2:
                    times["publish"].append(t3 - t2)
                    times["publish_objects"].append(t4 - t3)
                executor = single if k % 2 else events  # one node in one executor at a time
                executor.add_node(node)
                t5 = wall()
                executor.spin_once(timeout_sec=0.0)
                times["spin_single" if k % 2 else "spin_events"].append(wall() - t5)
                executor.remove_node(node)
            out = {"model": model_path.stem, "topics": len(msgs)}
            out.update({k: 1e6 * float(np.median(v)) for k, v in times.items()})
            events.shutdown()
            single.shutdown()
            node.destroy_node()
            return out
        finally:
            rclpy.try_shutdown(context=context)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="measured wall time per variant [s]")
    ap.add_argument("--rate", type=float, default=1000.0, help="publish rate [Hz]")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--only", choices=("scara", "G1"), help="one model's variants only")
    ap.add_argument("--variant", action="append", help="only this variant (repeatable)")
    ap.add_argument("--repeat", type=int, default=1, help="run the variants this many times, alternated")
    ap.add_argument("--logs", default="/tmp/mbsfmu_bench_ros", help="folder for the node logs")
    ap.add_argument("--stages", action="store_true", help="only the in-process time of each stage of a cycle")
    ap.add_argument("--lock-step", action="store_true", help="only the lock-step variants (round trips per second)")
    ap.add_argument(
        "--thread-priority",
        type=int,
        default=0,
        help="SCHED_FIFO priority of the node (its thread_priority) and of this client (0: normal scheduling)",
    )
    args = ap.parse_args(argv)
    if args.stages:
        print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
        for name, path in {"scara": MODEL, "G1": g1_model()}.items():
            if path is not None and args.only in (None, name):
                print(json.dumps(stages(path)), flush=True)
        print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
        return 0
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    prio = {"thread_priority": args.thread_priority} if args.thread_priority else {}
    if args.thread_priority:  # before any client exists: its middleware threads inherit the policy
        got = scheduling.apply(args.thread_priority, False)
        print(f"client scheduling: {got.policy} {got.priority}; " + "; ".join(got.warnings), flush=True)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)", flush=True)
    models = {"scara": MODEL, "G1": g1_model()}
    SINGLE = {"executor": "single"}  # "_single": rclpy's SingleThreadedExecutor (else the default, events)
    paced_variants = {
        "scara": (
            ("paced", args.rate, {}),
            ("paced_single", args.rate, SINGLE),
            ("paced_decim10", args.rate, {"invariants_decimation": 10}),
            ("paced_200Hz", 200.0, {}),
            ("paced_200Hz_single", 200.0, SINGLE),
        ),
        "G1": (("G1_paced", args.rate, {}), ("G1_paced_single", args.rate, SINGLE)),
    }
    # (label, node parameters, the client's executor[, how it reads the state]): the client is a lean
    # one (EventsExecutor, no parameter services) but in "_client_*" (rclpy's SingleThreadedExecutor,
    # parameter services); it reads rclpy's message objects but in "_raw" (the CDR bytes through
    # mbsfmu_ros.joint_state_reader, as a Python controller can: docs/guides/ros2.md, "Lock-step");
    # "_echo": the floor, no node but ros_echo.py answering with the same messages at once
    lock_variants = {
        "scara": (
            ("lockstep", {}, "events"),
            ("lockstep_single", SINGLE, "events"),
            ("lockstep_client_single", {}, "single"),
            ("lockstep_client_raw", {}, "single", "raw"),
            ("echo_client_single", {}, "single", "messages", "echo"),
        ),
        "G1": (
            ("G1_lockstep", {}, "events"),
            ("G1_lockstep_single", SINGLE, "events"),
            ("G1_lockstep_client_single", {}, "single"),
            ("G1_lockstep_client_raw", {}, "single", "raw"),
            ("G1_echo_client_single", {}, "single", "messages", "echo"),
        ),
    }
    results = []
    for _ in range(args.repeat):
        for name, path in models.items():
            if path is None or args.only not in (None, name):
                continue
            for label, rate, extra in () if args.lock_step else paced_variants[name]:
                if args.variant in (None, []) or label in args.variant:
                    results.append(paced(path, rate, args.seconds, {**prio, **extra}, label, logs))
                    print(json.dumps(results[-1]), flush=True)
            for label, extra, *client in lock_variants[name]:
                if args.variant in (None, []) or label in args.variant:
                    results.append(lock_step(path, args.rate, args.seconds, {**prio, **extra}, label, logs, *client))
                    print(json.dumps(results[-1]), flush=True)
    print()
    print(
        f"{'variant':<22} {'rate [Hz]':>10} {'RTF':>6} {'period p50/p99 [ms]':>20} {'jitter p50/p99 [ms]':>20} "
        f"{'node work p50 [ms]':>18} {'overruns':>8} {'period p99.9/max [ms]':>22}"
    )
    for r in results:
        if "rate_hz" in r:
            print(
                f"{r['variant']:<22} {r['rate_hz']:>10.1f} {r['real_time_factor']:>6.3f} "
                f"{r['period_p50_ms']:>9.3f}/{r['period_p99_ms']:<10.3f} "
                f"{r['jitter_p50_ms']:>9.3f}/{r['jitter_p99_ms']:<10.3f} "
                f"{r['node_work_p50_ms']:>18.3f} {r['node_overrun_fraction']:>8.3f} "
                f"{r['period_p999_ms']:>10.3f}/{r['period_max_ms']:<10.3f}"
            )
        else:
            print(
                f"{r['variant']:<22} {r['round_trips_per_s']:>10.1f} {r['real_time_factor']:>6.3f} "
                f"round trip p50/p99/p99.9 {r['rtt_p50_ms']:.3f}/{r['rtt_p99_ms']:.3f}/{r['rtt_p999_ms']:.3f} ms "
                "(lock-step, cycle "
                f"{1e3 * r['cycle_s']:g} ms), node work p50 {r['node_work_p50_ms']:.3f} ms, client callback p50 "
                f"{r['client_work_p50_ms']:.3f} ms"
            )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (1, 5, 15 min)")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
