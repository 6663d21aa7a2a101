"""The node's parameters (docs/reference/ros-interface.md, "Parameters") as a validated
``NodeConfig``, apart from the rclpy wiring: ``node.py`` declares the ROS parameters from
``declarations()``, reads their values and builds its config with ``node_config``, which checks
every value and raises one ``ConfigError`` listing all problems (name, value, what is wrong).
No rclpy here.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import yaml

from mbsfmu.errors import InputError
from mbsfmu.sim.simulator import INTEGRATORS

from .diagnostics import CONSERVATION_CHECKS, DEFAULT_THRESHOLDS
from .scheduling import MAX_PRIORITY

EXECUTORS = ("single", "events")
CLOCK_CONFLICT = ("stop", "follow")  # what a node does when another one publishes /clock (clock.py)
PARAMETERS: dict[str, tuple[object, str]] = {  # name: (default, description)
    "model": ("", "model file (YAML/JSON/URDF); also the first command-line argument"),
    "world": ("", "world file (YAML: robots with model, base pose, namespace, frame_prefix) instead of one model"),
    "worlds_folder": ("", "folder of world files GetAvailableWorlds lists (besides the bundled ones)"),
    "spawnables_folder": ("", "folder of model files GetSpawnables lists (besides the bundled models)"),
    "physics_step": (1e-3, "integrator step h_max [s] (rk4: fixed sub-step; dop853: largest step, 0 = free)"),
    "publish_rate": (
        100.0,
        "cycles per second of sim time [Hz]: the engine advances 1/publish_rate per cycle "
        "(inputs held), then publishes",
    ),
    "real_time_factor": (1.0, "target sim time / wall time: 1.0 = wall-clock paced, 0 = as fast as possible"),
    "lock_step": (
        False,
        "advance one cycle per command for the current sim time (deterministic controller "
        "in the loop); pacing is then off",
    ),
    "command_timeout": (
        0.0,
        "opt-in safety: sim time [s] without a command after which the inputs drop to zero "
        "(0 = off: a command holds until the next); also the age beyond which a stamped joint command is stale",
    ),
    "integrator": ("rk4", f"one of {', '.join(INTEGRATORS)}"),
    "rtol": (1e-10, "dop853 relative tolerance"),
    "atol": (1e-12, "dop853 absolute tolerance"),
    "diagnostics_rate": (1.0, "/diagnostics and /mbs/real_time_factor per second of wall time [Hz]"),
    "checks": (["auto"], f"conservation checks: auto, none, or any of {', '.join(CONSERVATION_CHECKS)}"),
    "invariants_decimation": (1, "publish momentum, CM, energy (and /tf) every N-th cycle"),
    "frame_id": ("world", "header.frame_id of the stamped outputs: the inertial frame"),
    "start_paused": (False, "start paused (~/pause false or ~/step to go on)"),
    "follow_clock": (
        False,
        "follow an external /clock (ros2 bag play --clock, a co-simulator): step to each time received "
        "and publish no /clock of its own; pacing is then the clock's",
    ),
    "clock_conflict": (
        "stop",
        "when another node publishes /clock on the domain: stop publishing /clock (stop) or follow the "
        "other one's (follow); either way a log error and the clock status name it",
    ),
    "frame_prefix": ("", "prefix of every frame name the node publishes (/tf, /tf_static, header.frame_id), e.g. r1/"),
    "publish_tf": (True, "publish /tf and /tf_static (false when robot_state_publisher makes them)"),
    "executor": (
        "events",
        "rclpy executor: events (rclpy.experimental.EventsExecutor, ~2-20x cheaper per spin) or single "
        "(SingleThreadedExecutor)",
    ),
    "servo_kp": (
        100.0,
        "position servo stiffness kp [N m/rad or N/m] of position commands (actuator model: inverse-dynamics "
        "feed-forward + PD)",
    ),
    "servo_kd": (10.0, "position servo damping kd [N m s/rad or N s/m] of position commands"),
    "servo_kv": (10.0, "velocity servo gain kv [N m s/rad or N s/m] of velocity-only commands"),
    "thread_priority": (
        0,
        "SCHED_FIFO priority 1-99 of the loop thread and the middleware's threads (ros2_control_node's "
        "parameter; it uses 50); 0 = off: normal scheduling",
    ),
    "lock_memory": (False, "lock the process's memory in RAM (mlockall) against page faults in a cycle"),
}
# parameters that `ros2 param set` may change while the node runs (the others shape the run)
DYNAMIC = (
    "real_time_factor",
    "publish_rate",
    "command_timeout",
    "diagnostics_rate",
    "servo_kp",
    "servo_kd",
    "servo_kv",
)
# parameters rclpy declares itself (not the node's to refuse)
ROS_OWN = ("use_sim_time", "start_type_description_service")


class ConfigError(InputError):
    """Node parameters the node cannot run with; the message lists every problem."""


def threshold_parameter(check: str, level: str) -> str:
    """The ROS parameter name of a diagnostics threshold: thresholds.<check>.<warn|error>."""
    return f"thresholds.{check}.{level}"


def declarations() -> list[tuple[str, object, str, bool]]:
    """(name, default, description, numeric) of every node parameter, thresholds included;
    numeric ones take integers too (``publish_rate:=1000``)."""
    out = [(name, default, text, isinstance(default, float)) for name, (default, text) in PARAMETERS.items()]
    for check, (warn, error) in DEFAULT_THRESHOLDS.items():
        out.append((threshold_parameter(check, "warn"), warn, f"{check}: WARN from this value on", True))
        out.append((threshold_parameter(check, "error"), error, f"{check}: ERROR from this value on", True))
    return out


@dataclass(frozen=True)
class NodeConfig:
    """The node's validated parameters (units and meaning: ``PARAMETERS``); thresholds maps each
    diagnostics check to (warn, error)."""

    model: str = ""
    world: str = ""
    worlds_folder: str = ""
    spawnables_folder: str = ""
    physics_step: float = 1e-3
    publish_rate: float = 100.0
    real_time_factor: float = 1.0
    lock_step: bool = False
    command_timeout: float = 0.0
    integrator: str = "rk4"
    rtol: float = 1e-10
    atol: float = 1e-12
    diagnostics_rate: float = 1.0
    checks: tuple[str, ...] = ("auto",)
    invariants_decimation: int = 1
    frame_id: str = "world"
    start_paused: bool = False
    follow_clock: bool = False
    clock_conflict: str = "stop"
    frame_prefix: str = ""
    publish_tf: bool = True
    executor: str = "events"
    servo_kp: float = 100.0
    servo_kd: float = 10.0
    servo_kv: float = 10.0
    thread_priority: int = 0
    lock_memory: bool = False
    thresholds: Mapping[str, tuple[float, float]] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))

    @property
    def period(self) -> float:
        """Sim time per cycle [s]."""
        return 1.0 / self.publish_rate

    @property
    def diagnostics_period(self) -> float:
        """Wall time between diagnostics [s] (inf when diagnostics_rate is 0)."""
        return 1.0 / self.diagnostics_rate if self.diagnostics_rate > 0 else math.inf


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def node_config(values: Mapping[str, object]) -> NodeConfig:
    """A NodeConfig from parameter values by name (missing ones take their defaults); ConfigError
    lists every problem at once, each as ``name = value: what is wrong``."""
    known = {name for name, *_ in declarations()}
    problems: list[str] = []

    def bad(name: str, what: str) -> None:
        problems.append(f"{name} = {values.get(name, p.get(name))!r}: {what}")

    for name in values:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            problems.append(
                f"{name} = {values[name]!r}: unknown parameter" + (f" (did you mean {close[0]!r}?)" if close else "")
            )
    p = {name: values.get(name, default) for name, (default, _) in PARAMETERS.items()}
    for name, (default, _) in PARAMETERS.items():
        v = p[name]
        if isinstance(default, float) and not _is_number(v):
            bad(name, "must be a number")
            p[name] = default
        elif isinstance(default, float):
            p[name] = float(v)
        elif isinstance(default, bool) and not isinstance(v, bool):
            bad(name, "must be true or false")
            p[name] = default
        elif isinstance(default, str) and not isinstance(v, str):
            bad(name, "must be a string")
            p[name] = default
    if not p["model"] and not p["world"]:
        problems.append(
            "model: no model file: pass it as the first argument or as parameter model:=PATH "
            "(or a world file as world:=PATH)"
        )
    if p["model"] and p["world"]:
        bad("world", f"give a model ({p['model']}) or a world, not both")
    if p["world"] and p["lock_step"]:
        bad("lock_step", "lock-step follows one robot's commands: not with a world")
    if p["integrator"] not in INTEGRATORS:
        bad("integrator", f"must be one of {', '.join(INTEGRATORS)}")
    for key in ("publish_rate", "physics_step"):
        v = p[key]
        if not (math.isfinite(v) and v > 0) and not (key == "physics_step" and v == 0 and p["integrator"] == "dop853"):
            note = " (0 only with integrator dop853)" if key == "physics_step" else ""
            bad(key, "must be a positive number" + note)
    for key in ("rtol", "atol"):
        if not (math.isfinite(p[key]) and p[key] > 0):
            bad(key, "must be a positive number")
    for key in ("real_time_factor", "command_timeout", "diagnostics_rate", "servo_kp", "servo_kd", "servo_kv"):
        if not (math.isfinite(p[key]) and p[key] >= 0):
            bad(key, "must be a number >= 0")
    dec = p["invariants_decimation"]
    if not (isinstance(dec, int) and not isinstance(dec, bool)) or dec < 1:
        bad("invariants_decimation", "must be an integer >= 1")
        p["invariants_decimation"] = 1
    prio = p["thread_priority"]
    if not (isinstance(prio, int) and not isinstance(prio, bool)) or not 0 <= prio <= MAX_PRIORITY:
        bad("thread_priority", f"must be an integer from 0 (off) to {MAX_PRIORITY}")
        p["thread_priority"] = 0
    if p["clock_conflict"] not in CLOCK_CONFLICT:
        bad("clock_conflict", f"must be one of {', '.join(CLOCK_CONFLICT)}")
    if p["executor"] not in EXECUTORS:
        bad("executor", f"must be one of {', '.join(EXECUTORS)}")
    checks = p["checks"]
    if isinstance(checks, str) or not all(isinstance(c, str) for c in checks):
        bad("checks", "must be a list of names")
        checks = ["auto"]
    else:
        unknown = [c for c in checks if c not in ("auto", "none", *CONSERVATION_CHECKS)]
        if unknown:
            bad(
                "checks",
                f"unknown check(s) {', '.join(map(repr, unknown))}; expected auto, none or any of "
                f"{', '.join(CONSERVATION_CHECKS)}",
            )
    if not p["frame_id"]:
        bad("frame_id", "must name a frame")
    thresholds = {}
    for check, defaults in DEFAULT_THRESHOLDS.items():
        pair = []
        for level, default in zip(("warn", "error"), defaults):
            name = threshold_parameter(check, level)
            v = values.get(name, default)
            if not _is_number(v):
                bad(name, "must be a number")
                v = default
            pair.append(float(v))
        warn, error = pair
        if not warn <= error:
            problems.append(f"thresholds.{check}: warn {warn:g} must not exceed error {error:g}")
        thresholds[check] = (warn, error)
    if problems:
        raise ConfigError(f"{len(problems)} bad node parameter(s):\n  " + "\n  ".join(problems))
    # NodeConfig's fields are the parameters' names (one place to add a parameter: PARAMETERS)
    return NodeConfig(**{**p, "checks": tuple(checks)}, thresholds=thresholds)


def launch_parameters(
    given: Mapping[str, str], params_file: str = "", robot_state_publisher: bool = False
) -> list[object]:
    """The node's ``parameters`` list in the launch file (launch_ros applies its entries in order,
    a later one winning): the params file first, if any, then a dict of the launch arguments given
    (non-empty strings, read as YAML like ``-p name:=value``), so an explicit launch argument wins
    over the file and one not given leaves the file's value or the node's default. With
    ``robot_state_publisher`` (it makes /tf and /tf_static) publish_tf is false unless given."""
    explicit: dict[str, object] = {name: yaml.safe_load(text) for name, text in given.items() if text != ""}
    if robot_state_publisher:
        explicit.setdefault("publish_tf", False)
    return ([params_file] if params_file else []) + [explicit]
