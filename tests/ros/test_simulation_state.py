"""simulation_interfaces' ResetSimulation scopes and SetSimulationState transitions as their .srv
define them, over real DDS from a client in this process (the node in a subprocess, a leased
domain): SCOPE_STATE keeps sim time increasing, SCOPE_TIME restarts it with the state kept,
SCOPE_DEFAULT (= ALL) restarts both, SCOPE_SPAWNED is not supported; STOPPED -> PAUSED is
INCORRECT_TRANSITION; QUITTING answers, aborts a running SimulateSteps goal, then the node ends
with exit code 0."""

import pytest

pytest.importorskip("rclpy", reason="ROS 2 tests need rclpy: pip install -e \".[test,ros]\" (or source ROS 2)")

from tests.support import ros_sandbox as rt
from tests.support.paths import MODELS
from tests.support.ros_interfaces import interfaces_loaded

pytestmark = [pytest.mark.slow, pytest.mark.integration]

NS = "/st"
RATE = 100.0  # publish_rate [Hz]: one step = 0.01 s = 10_000_000 ns of sim time


def test_reset_scopes_transitions_and_quitting(tmp_path):
    interfaces_loaded()
    from rclpy.action import ActionClient
    from simulation_interfaces.action import SimulateSteps
    from simulation_interfaces.msg import Result, SimulationState
    from simulation_interfaces.srv import (
        GetEntityState,
        GetSimulationState,
        ResetSimulation,
        SetSimulationState,
        StepSimulation,
    )

    OK, R = Result.RESULT_OK, ResetSimulation.Request
    with rt.Sandbox("simstate") as sandbox:
        log = tmp_path / "node.log"
        proc = rt.start_node(MODELS / "scara.yaml", {"publish_rate": RATE, "start_paused": True}, sandbox, log, NS)
        client = rt.Client(sandbox, proc)
        try:

            def call(srv, name, **fields):
                response = client.call(srv, f"{NS}/{name}", srv.Request(**fields))
                assert response is not None, client.failure(log)
                return response

            def ok(response):
                assert response.result.result == OK, response.result.error_message
                return response

            def now():
                """(stamp [ns], x of link2's origin [m]) of the published state."""
                s = ok(call(GetEntityState, "get_entity_state", entity="link2")).state
                return s.header.stamp.sec * 10**9 + s.header.stamp.nanosec, s.pose.position.x

            def reset(scope):
                return call(ResetSimulation, "reset_simulation", scope=scope)

            def set_state(target):
                return call(SetSimulationState, "set_simulation_state", state=SimulationState(state=target))

            def state():
                return call(GetSimulationState, "get_simulation_state").state.state

            t0, x0 = now()
            assert t0 == 0
            ok(call(StepSimulation, "step_simulation", steps=3))
            t3, x3 = now()
            assert t3 == 30_000_000 and x3 != x0  # the arm falls

            ok(reset(R.SCOPE_STATE))  # the initial state; sim time goes on (one cycle after the last stamp)
            assert now() == (40_000_000, x0)
            ok(call(StepSimulation, "step_simulation", steps=2))
            t, x = now()
            assert t == 60_000_000 and x != x0

            ok(reset(R.SCOPE_TIME))  # time back to 0, the state kept
            assert now() == (0, x)

            ok(call(StepSimulation, "step_simulation", steps=2))
            ok(reset(R.SCOPE_DEFAULT))  # = SCOPE_ALL: state and time
            assert now() == (0, x0)

            for scope in (R.SCOPE_SPAWNED, R.SCOPE_STATE | R.SCOPE_SPAWNED, 8):
                assert reset(scope).result.result == Result.RESULT_FEATURE_UNSUPPORTED, scope

            # STOPPED: reset (state and time) and paused; pausing from there is an incorrect transition
            ok(call(StepSimulation, "step_simulation", steps=2))
            ok(set_state(SimulationState.STATE_STOPPED))
            assert state() == SimulationState.STATE_STOPPED and now() == (0, x0)
            r = set_state(SimulationState.STATE_PAUSED)
            assert r.result.result == SetSimulationState.Response.INCORRECT_TRANSITION
            assert state() == SimulationState.STATE_STOPPED
            r = set_state(SimulationState.STATE_STOPPED)
            assert r.result.result == SetSimulationState.Response.ALREADY_IN_TARGET_STATE
            ok(set_state(SimulationState.STATE_PLAYING))
            ok(set_state(SimulationState.STATE_PAUSED))

            # QUITTING while a SimulateSteps goal runs: answered, the goal aborted, then the node ends by
            # itself, exit code 0
            action = ActionClient(client.node, SimulateSteps, f"{NS}/simulate_steps")
            assert action.wait_for_server(timeout_sec=rt.PATIENCE)
            sent = action.send_goal_async(SimulateSteps.Goal(steps=10**9))
            assert client.spin_until(sent.done) and sent.result().accepted
            done = sent.result().get_result_async()  # asked before the node goes
            t = now()[0]
            assert any(now()[0] > t for _ in range(10_000)), client.failure(log)  # the goal steps
            ok(set_state(SimulationState.STATE_QUITTING))
            assert client.spin_until(done.done), client.failure(log)
            assert done.result().status == 6  # action_msgs/GoalStatus.STATUS_ABORTED
            assert "quitting after" in done.result().result.result.error_message
            assert proc.wait(rt.PATIENCE) == 0, rt.read_log(log)
            assert "quitting" in rt.read_log(log)
        finally:
            code = rt.stop_node(proc)
            client.close()
    assert code == 0, rt.read_log(log)
