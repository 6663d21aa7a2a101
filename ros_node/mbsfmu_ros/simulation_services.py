"""The simulation_interfaces services and the SimulateSteps action of the node (names relative to
the node's namespace, as the standard's simulators name them): what the simulator supports, reset,
stepping while paused, the simulation state (playing, paused, stopped) and the bodies' states.

One step is one node cycle (1 / publish_rate of sim time, its state published). The node's loop
runs SimulateSteps goals (``run_pending_step``) one step per pass while paused, so feedback goes
out and cancel requests come in between steps."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from geometry_msgs.msg import Point, Pose, Quaternion, Twist, Vector3
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.task import Future
from simulation_interfaces.action import SimulateSteps
from simulation_interfaces.msg import EntityState, Result, SimulationState, SimulatorFeatures
from simulation_interfaces.srv import (
    GetEntities,
    GetEntityState,
    GetSimulationState,
    GetSimulatorFeatures,
    ResetSimulation,
    SetEntityState,
    SetSimulationState,
    StepSimulation,
)

from mbsfmu_ros import conversion as cv
from mbsfmu_ros import diagnostics as dg
from mbsfmu_ros import entity_state as es

FEATURES = (
    SimulatorFeatures.NAMED_POSES,  # named_pose_services.py
    SimulatorFeatures.POSE_BOUNDS,
    SimulatorFeatures.ENTITY_STATE_GETTING,
    SimulatorFeatures.ENTITY_STATE_SETTING,
    SimulatorFeatures.SIMULATION_RESET,
    SimulatorFeatures.SIMULATION_RESET_STATE,
    SimulatorFeatures.SIMULATION_RESET_TIME,
    SimulatorFeatures.SIMULATION_STATE_GETTING,
    SimulatorFeatures.SIMULATION_STATE_SETTING,
    SimulatorFeatures.SIMULATION_STATE_PAUSE,
    SimulatorFeatures.STEP_SIMULATION_SINGLE,
    SimulatorFeatures.STEP_SIMULATION_MULTIPLE,
    SimulatorFeatures.STEP_SIMULATION_ACTION,
)
SCOPES = {"TIME": ResetSimulation.Request.SCOPE_TIME, "STATE": ResetSimulation.Request.SCOPE_STATE}


def features(follow_clock: bool) -> tuple[int, ...]:
    """The SimulatorFeatures served; no SIMULATION_RESET_TIME while time follows an external /clock."""
    return tuple(f for f in FEATURES if not (follow_clock and f == SimulatorFeatures.SIMULATION_RESET_TIME))


def reset_scopes(follow_clock: bool) -> int:
    """ResetSimulation scope bits the node resets: STATE, and TIME unless it follows a /clock."""
    return SCOPES["STATE"] | (0 if follow_clock else SCOPES["TIME"])


def scope_names(scope: int) -> str:
    """'TIME|STATE' for the known bits of ``scope``."""
    return "|".join(name for name, bit in SCOPES.items() if scope & bit) or "nothing"


def result(code: int, message: str = "") -> Result:
    return Result(result=code, error_message=message)


def requested_state(request, frame_id: str) -> tuple[es.BodyState | None, es.BodyState | None]:
    """(pose, twist) a SetEntityState request asks for (None: not to set), as entity_state's
    BodyStates; EntityError when its frame is neither ``frame_id`` nor empty."""
    st = request.state
    if st.header.frame_id not in ("", frame_id):
        raise es.EntityError(f"frame {st.header.frame_id!r}: states are set in {frame_id!r} (or empty) only")
    p, o = st.pose.position, st.pose.orientation
    pose = es.BodyState((p.x, p.y, p.z), (o.x, o.y, o.z, o.w), (0.0,) * 3, (0.0,) * 3) if request.set_pose else None
    lin, ang = st.twist.linear, st.twist.angular
    twist = (
        es.BodyState((0.0,) * 3, (0.0,) * 4, (lin.x, lin.y, lin.z), (ang.x, ang.y, ang.z))
        if request.set_twist
        else None
    )
    return pose, twist


@dataclass
class StepGoal:
    """A SimulateSteps goal the node's loop is running: its handle, steps left, done when set."""

    handle: object
    total: int
    done: Future = field(default_factory=Future)
    completed: int = 0


class SimulationServices:
    """Serves simulation_interfaces on ``node`` (an MbsNode: its sim, model, paused, stopped,
    error, reset(), cycle(), publish_state())."""

    def __init__(self, node):
        self.node = node
        self.goal: StepGoal | None = None
        srv = node.create_service
        srv(GetSimulatorFeatures, "get_simulator_features", self.get_simulator_features)
        srv(ResetSimulation, "reset_simulation", self.reset_simulation)
        srv(StepSimulation, "step_simulation", self.step_simulation)
        srv(GetSimulationState, "get_simulation_state", self.get_simulation_state)
        srv(SetSimulationState, "set_simulation_state", self.set_simulation_state)
        if node.world is None:  # a world's entities are its robots: world_services.py serves them
            srv(GetEntities, "get_entities", self.get_entities)
            srv(GetEntityState, "get_entity_state", self.get_entity_state)
            srv(SetEntityState, "set_entity_state", self.set_entity_state)
        self.more_features = None  # world_services.py: adds a world's features to the answer
        self.action = ActionServer(
            node,
            SimulateSteps,
            "simulate_steps",
            execute_callback=self.simulate_steps,
            goal_callback=lambda goal: GoalResponse.ACCEPT,
            cancel_callback=lambda handle: CancelResponse.ACCEPT,
        )

    # ---- features, reset, state -----------------------------------------------------------
    def get_simulator_features(self, request, response):
        response.features.features = list(features(self.node.follow_clock))
        response.features.custom_info = (
            "mbsfmu: one step = one node cycle (1/publish_rate of sim time); every body is an entity, "
            "the floating base's state can be set; ResetSimulation with SCOPE_STATE alone keeps sim time "
            "increasing (episode time restarts), SCOPE_TIME (and DEFAULT/ALL) restarts it at 0"
        )
        if self.more_features is not None:
            self.more_features(response.features)
        return response

    def reset_simulation(self, request, response):
        """ResetSimulation by its scope bits: STATE the initial state (sim time goes on), TIME sim
        time back to 0 (refused while it follows an external /clock), DEFAULT = ALL every scope the
        node has; SPAWNED and unknown bits: RESULT_FEATURE_UNSUPPORTED."""
        n, R = self.node, ResetSimulation.Request
        scope = R.SCOPE_ALL if request.scope == R.SCOPE_DEFAULT else request.scope
        supported = reset_scopes(n.follow_clock)
        if scope != R.SCOPE_ALL and scope & ~supported:
            why = "the node follows an external /clock" if scope & R.SCOPE_TIME and n.follow_clock else "not supported"
            response.result = result(
                Result.RESULT_FEATURE_UNSUPPORTED,
                f"scope {scope}: {why}; this node resets {scope_names(supported)} (or DEFAULT/ALL)",
            )
            return response
        scope &= supported
        if scope & R.SCOPE_STATE:
            n.reset(with_time=bool(scope & R.SCOPE_TIME))
        else:
            n.restart_time()
        response.result = result(Result.RESULT_OK, f"reset {scope_names(scope)}: t = {n.now_ns() / cv.NS:.9f} s")
        return response

    def state(self) -> int:
        n = self.node
        if n.stopped:
            return SimulationState.STATE_STOPPED
        return SimulationState.STATE_PAUSED if n.paused else SimulationState.STATE_PLAYING

    def get_simulation_state(self, request, response):
        response.state.state = self.state()
        response.result = result(Result.RESULT_OK, self.node.error or "")
        return response

    def set_simulation_state(self, request, response):
        """SetSimulationState.srv: STOPPED resets (state and time, as ResetSimulation ALL) and
        pauses; STOPPED -> PAUSED is INCORRECT_TRANSITION (the .srv's "pausing when in stopped
        state"); PLAYING after an engine failure is STATE_TRANSITION_ERROR (reset first); QUITTING
        stops and ends the node once the answer is out."""
        n, target, now = self.node, request.state.state, self.state()
        S, R = SimulationState, SetSimulationState.Response
        if target not in (S.STATE_STOPPED, S.STATE_PLAYING, S.STATE_PAUSED, S.STATE_QUITTING):
            response.result = result(Result.RESULT_FEATURE_UNSUPPORTED, f"state {target} is not supported")
            return response
        if target == now:
            response.result = result(R.ALREADY_IN_TARGET_STATE, "")
            return response
        if target == S.STATE_PAUSED and now == S.STATE_STOPPED:
            response.result = result(
                R.INCORRECT_TRANSITION, "pausing when stopped: set STATE_PLAYING, or step (StepSimulation) from here"
            )
            return response
        if target == S.STATE_PLAYING and n.error:
            response.result = result(R.STATE_TRANSITION_ERROR, f"engine stopped: {n.error}; reset first")
            return response
        if target == S.STATE_QUITTING:
            if self.goal is not None:  # a SimulateSteps goal ends with the node: aborted, answered
                self.goal.handle.abort()
                self.finish(Result.RESULT_OPERATION_FAILED, f"quitting after {self.goal.completed} steps")
            n.quit()
            response.result = result(Result.RESULT_OK, "quitting: the node ends")
            return response
        if target == S.STATE_STOPPED:
            n.reset(with_time=not n.follow_clock)
            n.paused, n.stopped = True, True
        else:
            n.paused, n.stopped = target == S.STATE_PAUSED, False
        n.reanchor = True
        response.result = result(Result.RESULT_OK, f"t = {n.now_ns() / cv.NS:.9f} s")
        return response

    # ---- stepping ---------------------------------------------------------------------------
    def step_refusal(self) -> str | None:
        """Why the node cannot step now (not paused, engine stopped, a SimulateSteps goal runs)."""
        n = self.node
        if n.error:
            return f"engine stopped: {n.error}; reset first"
        if not n.paused:
            return "stepping needs the paused state (set_simulation_state to STATE_PAUSED first)"
        if self.goal is not None:
            return "a SimulateSteps goal is running"
        return None

    def step_simulation(self, request, response):
        refusal = self.step_refusal()
        if refusal:
            response.result = result(Result.RESULT_OPERATION_FAILED, refusal)
            return response
        self.node.stopped = False
        for _ in range(request.steps):
            if not self.node.cycle():
                response.result = result(Result.RESULT_OPERATION_FAILED, f"engine stopped: {self.node.error}")
                return response
        response.result = result(Result.RESULT_OK, f"t = {self.node.now_ns() / cv.NS:.9f} s")
        return response

    async def simulate_steps(self, handle):
        """Execute callback: hand the goal to the node's loop and wait for it (run_pending_step)."""
        refusal = self.step_refusal()
        if refusal:
            handle.abort()
            return SimulateSteps.Result(result=result(Result.RESULT_OPERATION_FAILED, refusal))
        self.node.stopped = False
        self.goal = goal = StepGoal(handle, int(handle.request.steps))
        return await goal.done

    def run_pending_step(self) -> bool:
        """One step of the running SimulateSteps goal (called by the node's loop while paused):
        cancel, step and send feedback, or finish. False when there is no goal."""
        g = self.goal
        if g is None:
            return False
        n = self.node
        if g.handle.is_cancel_requested:
            g.handle.canceled()
            return self.finish(Result.RESULT_OK, f"canceled after {g.completed} of {g.total} steps")
        if not n.paused:
            g.handle.abort()
            return self.finish(Result.RESULT_OPERATION_FAILED, f"unpaused after {g.completed} of {g.total} steps")
        if g.completed >= g.total:
            g.handle.succeed()
            return self.finish(Result.RESULT_OK, f"{g.total} steps, t = {n.now_ns() / cv.NS:.9f} s")
        if not n.cycle():
            g.handle.abort()
            return self.finish(Result.RESULT_OPERATION_FAILED, f"engine stopped: {n.error}")
        g.completed += 1
        g.handle.publish_feedback(
            SimulateSteps.Feedback(completed_steps=g.completed, remaining_steps=g.total - g.completed)
        )
        return True

    def finish(self, code: int, message: str) -> bool:
        g, self.goal = self.goal, None
        g.done.set_result(SimulateSteps.Result(result=result(code, message)))
        return True

    # ---- entities ---------------------------------------------------------------------------
    def get_entities(self, request, response):
        f = request.filters
        if f.categories or f.tags.tags or f.bounds.points:
            response.result = result(Result.RESULT_FEATURE_UNSUPPORTED, "only the name filter is supported")
            return response
        try:
            pattern = re.compile(f.filter) if f.filter else None
        except re.error as e:
            response.result = result(Result.RESULT_OPERATION_FAILED, f"filter {f.filter!r}: {e}")
            return response
        names = self.node.model.body_names
        response.entities = [b for b in names if pattern is None or pattern.search(b)]
        response.result = result(Result.RESULT_OK)
        return response

    def get_entity_state(self, request, response):
        n = self.node
        try:
            i = es.body_index(n.model, request.entity)
        except es.EntityError as e:
            response.result = result(Result.RESULT_NOT_FOUND, str(e))
            return response
        s = es.body_state(n.sim.kinematics(), i)
        sec, nsec = cv.ns_to_stamp(n.now_ns())
        response.state = EntityState(
            pose=Pose(
                position=Point(**dict(zip("xyz", s.position))),
                orientation=Quaternion(**dict(zip("xyzw", s.orientation))),
            ),
            twist=Twist(linear=Vector3(**dict(zip("xyz", s.linear))), angular=Vector3(**dict(zip("xyz", s.angular)))),
        )
        response.state.header.frame_id = n.frame_id
        response.state.header.stamp.sec, response.state.header.stamp.nanosec = sec, nsec
        response.result = result(Result.RESULT_OK)
        return response

    def set_entity_state(self, request, response):
        n = self.node
        try:
            pose, twist = requested_state(request, n.frame_id)
        except es.EntityError as e:
            response.result = result(Result.RESULT_OPERATION_FAILED, str(e))
            return response
        if request.entity not in n.model.body_names:
            response.result = result(Result.RESULT_NOT_FOUND, f"no entity {request.entity!r}")
            return response
        try:
            q, qd = es.set_base_state(n.model, n.sim.kinematics(), n.sim.q, n.sim.qd, request.entity, pose, twist)
        except es.InvalidState as e:
            response.result = result(SetEntityState.Response.INVALID_POSE, str(e))
            return response
        except es.EntityError as e:
            response.result = result(Result.RESULT_OPERATION_FAILED, str(e))
            return response
        n.sim.set_configuration(q, qd)
        n.ref_row = dg.checker_row(n.sim)  # a new state: a new reference for the conservation checks
        n.publish_state()
        response.result = result(Result.RESULT_OK)
        return response
