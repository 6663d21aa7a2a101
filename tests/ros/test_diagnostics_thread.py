"""The conservation checks of /diagnostics run off the loop thread (publishing.py): the loop copies
the state (``dg.engine_snapshot``) and goes on; the independent checker runs on the copy in the
diagnostics thread, and the message goes out once it is done, with the values the checker gives
for that copy. A node in this process (its own rclpy context and ROS domain), the check held at a
gate so nothing depends on timing."""

import sys
import threading
import time

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from mbsfmu_ros import diagnostics as dg
from mbsfmu_ros.publishing import GIL_SWITCH_INTERVAL
from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS
from tests.support.ros_interfaces import interfaces_loaded

pytestmark = pytest.mark.integration


def test_the_checks_run_in_their_thread_on_a_copy_of_the_state(monkeypatch):
    import rclpy
    from rclpy.parameter import Parameter

    from mbsfmu_ros.node import MbsNode

    interfaces_loaded()
    gate, calls, loop_thread = threading.Event(), [], threading.get_ident()
    checked = dg.engine_statuses

    def held(snapshots, thresholds):
        calls.append((threading.get_ident(), snapshots))
        if threading.get_ident() != loop_thread:  # (in the loop's thread it would wait for itself)
            assert gate.wait(rt.PATIENCE)
        return checked(snapshots, thresholds)

    monkeypatch.setattr(dg, "engine_statuses", held)
    monkeypatch.setattr(sys, "setswitchinterval", lambda s: switch.append(s))  # this process keeps its own
    switch: list[float] = []
    with rt.Sandbox("diagthread") as sandbox:
        context = rclpy.Context()
        rclpy.init(context=context, domain_id=sandbox.domain_id)
        try:
            params = [Parameter("publish_rate", value=1000.0), Parameter("physics_step", value=1e-3)]
            node = MbsNode(model=str(MODELS / "scara.yaml"), context=context, parameter_overrides=params)
            sent = []
            node.send = lambda pub, msg: sent.append(msg) or True
            node.stats.start(time.perf_counter(), node.sim.t)
            node.sim.advance_to(0.05)
            expected = dg.conservation_statuses(node.ref_row, dg.checker_row(node.sim), node.checks, node.thresholds)
            node.publish_diagnostics(time.perf_counter())  # returns with the check held at the gate
            assert not node.flush_diagnostics() and not sent
            node.sim.advance_to(0.1)  # the loop goes on meanwhile
            node.publish_diagnostics(time.perf_counter())  # a period while a check runs: skipped
            gate.set()
            assert node.flush_diagnostics(wait=True)
            node.diag_worker.shutdown()
            node.destroy_node()
        finally:
            rclpy.try_shutdown(context=context)
    ((thread, snapshots),) = calls
    assert switch and switch[-1] <= GIL_SWITCH_INTERVAL  # the loop waits at most that long for the GIL
    assert thread != loop_thread
    assert snapshots[0].row["time"] == 0.05  # the state when the diagnostics were due, not later
    diag, rtf = sent
    statuses = {s.name.rsplit(": ", 1)[1]: s for s in diag.status}
    assert {"p_sys_zero", "energy_balance", "engine_agreement", "real_time", "simulation"} <= set(statuses)
    for e in expected:  # the checker's values for that state, as computed in the loop before
        got = statuses[e.name]
        assert (got.level, got.message) == (bytes([e.level]), e.message)
        assert {kv.key: kv.value for kv in got.values} == e.values
    assert rtf.data > 0
