"""One /clock per graph (mbsfmu_ros.clock): two nodes in /r1 and /r2 on one domain (over real DDS
on loopback) never make /clock go backwards: the one started second finds the first one's /clock,
says so naming it (log error, ``clock`` status) and stops publishing its own or follows it. The
rule that picks who yields, without ROS."""

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from mbsfmu_ros import clock
from mbsfmu_ros import conversion as cv
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS

pytestmark = pytest.mark.integration


def test_who_yields_the_clock():
    # a node that has published no /clock yet yields at once (the newcomer)
    assert clock.yields("/r2/mbsfmu", ["/r1/mbsfmu"], published=False, sightings=1)
    assert not clock.yields("/r2/mbsfmu", [], published=False, sightings=0)
    # two running publishers: the later name yields from the third sighting on, the other keeps it
    assert not clock.yields("/r2/mbsfmu", ["/r1/mbsfmu"], published=True, sightings=2)
    assert clock.yields("/r2/mbsfmu", ["/r1/mbsfmu"], published=True, sightings=3)
    assert not clock.yields("/r1/mbsfmu", ["/r2/mbsfmu"], published=True, sightings=clock.PERSIST - 1)
    # ... unless the other one never yields (a bag replay sorting after us)
    assert clock.yields("/r1/mbsfmu", ["/rosbag2_player"], published=True, sightings=clock.PERSIST)
    # after yielding, with no other publisher left: the first name takes over at once (two nodes
    # that started together both yielded), any other after PERSIST checks (the other one ended)
    assert clock.resumes("/r1/mbsfmu", ["/r2/mbsfmu"], absences=1)
    assert not clock.resumes("/r2/mbsfmu", ["/r1/mbsfmu"], absences=clock.PERSIST - 1)
    assert clock.resumes("/r2/mbsfmu", ["/r1/mbsfmu"], absences=clock.PERSIST)
    assert not clock.resumes("/r1/mbsfmu", ["/r2/mbsfmu"], absences=0)


def stamp_ns(m) -> int:
    return cv.stamp_to_ns(m.clock.sec, m.clock.nanosec)


def clock_status(client, node: str):
    """The latest ``clock`` status of ``node`` (fully qualified name) on /diagnostics, as a dict."""
    for arr in reversed(client.msgs["/diagnostics"]):
        for st in arr.status:
            if st.name == f"{node}: clock":
                return {"level": st.level[0], "message": st.message, **{kv.key: kv.value for kv in st.values}}
    return None


@pytest.mark.parametrize("conflict", ["stop", "follow"])
def test_two_robots_on_one_domain_never_send_clock_backwards(tmp_path, conflict):
    """/r1 runs and publishes /clock; /r2 starts on the same domain with clock_conflict = conflict:
    it publishes no /clock of its own (every /clock message in the run is no earlier than the one
    before, from the first to the last), logs an error naming /r1's node and reports it in its
    ``clock`` status; with ``follow`` its joint states carry /r1's clock times."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rosgraph_msgs.msg import Clock
    from sensor_msgs.msg import JointState

    params = {"real_time_factor": 1.0, "diagnostics_rate": 10.0, "clock_conflict": conflict}
    logs = {ns: tmp_path / f"{ns[1:]}.log" for ns in ("/r1", "/r2")}
    with rt.Sandbox("clock2") as sandbox:
        r1 = rt.start_node(MODELS / "scara.yaml", params, sandbox, logs["/r1"], namespace="/r1")
        client = rt.Client(sandbox, r1)
        r2 = None
        try:
            client.subscribe("/clock", Clock, depth=10_000)
            client.subscribe("/diagnostics", DiagnosticArray)
            client.subscribe("/r2/joint_states", JointState)
            assert client.spin_until(lambda: len(client.msgs["/clock"]) >= 10), client.failure(logs["/r1"])
            r2 = rt.start_node(MODELS / "compound_pendulum.yaml", params, sandbox, logs["/r2"], namespace="/r2")
            client.proc = r2
            me1, me2 = f"/r1/{sandbox.node_name}", f"/r2/{sandbox.node_name}"

            def yielded() -> bool:  # and named /r1's node (DDS may deliver node names after endpoints)
                st = clock_status(client, me2)
                return st is not None and st["publishing"] == "false" and st["other_publishers"] == me1

            assert client.spin_until(yielded), client.failure(logs["/r2"])
            n = len(client.msgs["/clock"])
            assert client.spin_until(lambda: len(client.msgs["/clock"]) >= n + 100), client.failure(logs["/r1"])
            if conflict == "follow":
                assert client.spin_until(lambda: len(client.msgs["/r2/joint_states"]) >= 20), client.failure(
                    logs["/r2"]
                )
            st2, st1 = clock_status(client, me2), clock_status(client, me1)
        finally:
            client.close()
            codes = [rt.stop_node(p) for p in (r1, r2) if p is not None]
    times = [stamp_ns(m) for m in client.msgs["/clock"]]
    backwards = [(a, b) for a, b in zip(times, times[1:]) if b < a]
    assert backwards == [], f"{len(backwards)} of {len(times)} /clock messages went backwards"
    assert codes == [0, 0], [rt.read_log(log) for log in logs.values()]
    log2 = rt.read_log(logs["/r2"])
    assert f"another node publishes {sandbox.prefix}/clock on this domain: {me1}" in log2
    assert st2["level"] == 1 and me1 in st2["message"] and st2["clock_conflict"] == conflict  # WARN
    assert st1["publishing"] == "true"  # /r1 kept it
    if conflict == "follow":
        assert f"this node now follows the /clock of {me1}" in log2
        clock_times = set(times)
        stamps = [cv.stamp_to_ns(m.header.stamp.sec, m.header.stamp.nanosec) for m in client.msgs["/r2/joint_states"]]
        followed = [s for s in stamps if s in clock_times]
        assert len(followed) >= len(stamps) - 2, (len(followed), len(stamps))  # (its initial state, if heard)
    else:
        assert f"this node stopped publishing /clock: {me1} publishes it" in log2


def test_two_robots_started_together_leave_one_clock_publisher(tmp_path):
    """/r1 and /r2 started at once: both look for another /clock before their first. The one whose
    look ends first publishes, the other finds it and yields (the newcomer); if they find each
    other at once, both yield and /r1 (its name sorts first) takes over; if only later, /r2
    (sorting later) yields. Either way exactly one publishes /clock and the other names it."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rosgraph_msgs.msg import Clock

    params = {"real_time_factor": 1.0, "diagnostics_rate": 10.0}
    logs = {ns: tmp_path / f"{ns[1:]}.log" for ns in ("/r1", "/r2")}
    with rt.Sandbox("clock3") as sandbox:
        procs = [rt.start_node(MODELS / "scara.yaml", params, sandbox, logs[ns], namespace=ns) for ns in logs]
        client = rt.Client(sandbox, procs[0])
        names = [f"{ns}/{sandbox.node_name}" for ns in logs]
        try:
            client.subscribe("/clock", Clock, depth=10_000)
            client.subscribe("/diagnostics", DiagnosticArray)

            def settled() -> list[str] | None:
                """[publisher, yielded] once one publishes and the other names it."""
                st = [clock_status(client, name) for name in names]
                if None in st:
                    return None
                for i, j in ((0, 1), (1, 0)):
                    if (st[i]["publishing"], st[j]["publishing"]) == ("true", "false"):
                        if st[j]["other_publishers"] == names[i]:
                            return [names[i], names[j]]
                return None

            assert client.spin_until(lambda: settled() is not None), [rt.read_log(log) for log in logs.values()]
            publisher, yielded = settled()
            n = len(client.msgs["/clock"])
            assert client.spin_until(lambda: len(client.msgs["/clock"]) >= n + 100), client.failure(logs["/r1"])
            times = [stamp_ns(m) for m in client.msgs["/clock"][n:]]
            assert times == sorted(times)  # one publisher from then on
            assert settled() == [publisher, yielded]
        finally:
            client.close()
            codes = [rt.stop_node(p) for p in procs]
    assert codes == [0, 0], [rt.read_log(log) for log in logs.values()]
    log = rt.read_log(logs["/" + yielded.split("/")[1]])  # /r1/<node> -> /r1
    assert f"this node stopped publishing /clock: {publisher} publishes it" in log
