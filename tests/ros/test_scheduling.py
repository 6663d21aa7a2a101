"""Real-time scheduling, opt-in (mbsfmu_ros/scheduling.py): ``thread_priority`` and ``lock_memory``
checked as parameters, applied to every thread of a process and read back from the kernel, and
refused with a warning naming the parameter and what to do. Where this machine refuses SCHED_FIFO
or mlockall (probed first, in a child process) the tests assert the warning path instead: they
never skip."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from mbsfmu_ros import scheduling
from mbsfmu_ros.config import ConfigError, node_config
from tests.support.paths import MODELS, ROOT

LINUX = sys.platform == "linux"


def child_env() -> dict[str, str]:
    """This tree's packages first (as the tests import them)."""
    path = os.pathsep.join([str(ROOT), str(ROOT / "ros_node"), os.environ.get("PYTHONPATH", "")])
    return {**os.environ, "PYTHONPATH": path}


def probe(code: str) -> bool:
    """Whether ``code`` runs without error in a child process (this process keeps its scheduling)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0


def fifo_allowed() -> bool:
    return LINUX and probe("import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))")


def mlock_allowed() -> bool:
    return LINUX and probe("import ctypes, sys; sys.exit(ctypes.CDLL(None).mlockall(3) != 0)")


@pytest.mark.parametrize("value", [-1, 100, 2.5, True, "50"])
def test_thread_priority_must_be_an_integer_from_0_to_99(value):
    with pytest.raises(ConfigError, match="thread_priority"):
        node_config({"model": "m.yaml", "thread_priority": value})
    assert node_config({"model": "m.yaml"}).thread_priority == 0  # off unless asked for
    assert node_config({"model": "m.yaml", "thread_priority": 50, "lock_memory": True}).lock_memory


def test_refused_priority_and_lock_warn_naming_the_parameter_and_what_to_do(monkeypatch):
    """As without CAP_SYS_NICE and CAP_IPC_LOCK: one warning each, naming the parameter and how to
    allow it; the scheduling reported is the one in effect, left alone."""

    def refuse(*args):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(os, "sched_setscheduler", refuse, raising=False)
    monkeypatch.setattr(scheduling, "lock_all_memory", lambda: "Operation not permitted")
    got = scheduling.apply(50, True)
    assert got.threads == 0 and not got.memory_locked
    assert (got.policy, got.priority) == scheduling.in_effect()
    lock, prio = got.warnings
    assert "lock_memory" in lock and "memlock" in lock
    assert "thread_priority 50" in prio and "normal priority" in prio and "ulimit -r" in prio
    assert scheduling.apply(0, False) == scheduling.Scheduling(*scheduling.in_effect())  # off: nothing asked


@pytest.mark.integration
def test_fifo_on_every_thread_of_the_process_and_memory_locked_or_warned():
    """In a child process with a second thread running: apply(7, lock_memory) puts both threads
    under SCHED_FIFO 7 (read back per thread id from the kernel) and locks memory (VmLck > 0 in
    /proc/self/status), where allowed; elsewhere the warnings say so and the policy is unchanged."""
    code = textwrap.dedent(
        """
        import json, os, threading
        from mbsfmu_ros import scheduling
        stop = threading.Event()
        t = threading.Thread(target=stop.wait)
        t.start()
        got = scheduling.apply(7, True)
        tids = scheduling.thread_ids()
        policies = [os.sched_getscheduler(tid) for tid in tids]
        locked = [int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmLck")][0]
        stop.set()
        print(json.dumps({"got": got.__dict__, "policies": policies, "fifo": os.SCHED_FIFO, "vmlck_kB": locked}))
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), timeout=60)
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    got, fifo = out["got"], out["fifo"]
    if fifo_allowed():
        assert len(out["policies"]) >= 2 and set(out["policies"]) == {fifo}
        assert (got["policy"], got["priority"], got["threads"]) == ("SCHED_FIFO", 7, len(out["policies"]))
    else:
        assert got["policy"] != "SCHED_FIFO" and fifo not in out["policies"]
        assert any("thread_priority 7" in w and "ulimit -r" in w for w in got["warnings"])
    if mlock_allowed():
        assert got["memory_locked"] and out["vmlck_kB"] > 0
    else:
        assert not got["memory_locked"] and any("lock_memory" in w for w in got["warnings"])


# setpriv (util-linux) drops CAP_SYS_NICE from what the node may use: the refused path, run here too
DROP_NICE = ("setpriv", "--bounding-set", "-sys_nice", "--inh-caps", "-sys_nice")


def setpriv_drops_nice() -> bool:
    code = "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(5))"
    try:
        return subprocess.run([*DROP_NICE, sys.executable, "-c", code], capture_output=True).returncode != 0
    except OSError:  # no setpriv
        return False


@pytest.mark.integration
@pytest.mark.parametrize("refused", [False, True], ids=["as_allowed", "cap_sys_nice_dropped"])
def test_the_node_runs_its_loop_under_sched_fifo_and_reports_it(tmp_path, refused):
    """The node with thread_priority 10: its loop thread (the process's main thread) is under
    SCHED_FIFO 10 as the kernel reports it, and the real_time diagnostic says so; where refused
    (this machine refuses it, or CAP_SYS_NICE dropped by setpriv) the node warns once naming
    thread_priority and what to do, runs at normal priority and reports that."""
    pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy")
    from diagnostic_msgs.msg import DiagnosticArray

    from tests.support import ros_sandbox as rt

    if refused and not setpriv_drops_nice():
        if not fifo_allowed():
            pytest.skip("SCHED_FIFO is refused here anyway: the as_allowed case runs the refused path")
        pytest.fail("setpriv cannot drop CAP_SYS_NICE here: no way to run the refused path")
    allowed = fifo_allowed() and not refused
    params = {"publish_rate": 100.0, "physics_step": 1e-3, "diagnostics_rate": 4.0, "thread_priority": 10}
    with rt.Sandbox("sched") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(MODELS / "scara.yaml", params, sandbox, log, prefix=DROP_NICE if refused else ())
        client = rt.Client(sandbox, proc)
        try:
            client.subscribe("/diagnostics", DiagnosticArray)

            def real_time():
                for arr in reversed(client.msgs["/diagnostics"]):
                    for s in arr.status:
                        if s.name.endswith(": real_time"):
                            return {kv.key: kv.value for kv in s.values}
                return None

            assert client.spin_until(lambda: real_time() is not None), client.failure(log)
            values = real_time()
            if allowed:
                assert (values["scheduling"], values["thread_priority"]) == ("SCHED_FIFO", "10")
                assert os.sched_getscheduler(proc.pid) == os.SCHED_FIFO
                assert os.sched_getparam(proc.pid).sched_priority == 10
            else:
                assert (values["scheduling"], values["thread_priority"]) == ("SCHED_OTHER", "0")
                assert os.sched_getscheduler(proc.pid) != os.SCHED_FIFO
            # /rosout may miss what the node logged before the client matched it: the node's log has it all
            warned = [line for line in rt.read_log(log).splitlines() if "thread_priority 10" in line]
            if allowed:
                assert not warned
            else:
                assert len(warned) == 1 and "normal priority" in warned[0] and "ulimit -r" in warned[0], warned
        finally:
            code = rt.stop_node(proc)
            client.close()
        assert code == 0, rt.read_log(log)
