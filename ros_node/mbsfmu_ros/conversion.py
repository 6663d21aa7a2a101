"""Command messages -> validated input dicts, as pure functions (no rclpy): ``node.py`` applies
what these return, and the tests check them without ROS.

The node's output contents (joint states, momentum, CM, energy, /tf) are built in one place,
``mbsfmu.sim.messages``, shared with the MCAP recorder; the time and joint-layout names it
re-exports here are what command handling and the node's clients (tests, controllers) use.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mbsfmu.errors import InputError
from mbsfmu.sim.messages import (
    ENERGY_LABELS,
    ENERGY_LAYOUT_LABEL,
    NS,
    JointLayout,
    joint_layout,
    ns_to_stamp,
    stamp_to_ns,
    state_from_joint_state,
    time_to_ns,
    transforms,
)

__all__ = [
    "ENERGY_LABELS",
    "ENERGY_LAYOUT_LABEL",
    "NS",
    "CommandError",
    "JointTarget",
    "ServoJoint",
    "JointLayout",
    "check_command_stamp",
    "command_aliases",
    "effort_command_inputs",
    "joint_command",
    "joint_layout",
    "servo_efforts",
    "servo_reference_rates",
    "with_frame_prefix",
    "servo_joints",
    "ns_to_stamp",
    "stamp_to_ns",
    "state_from_joint_state",
    "time_to_ns",
    "transforms",
]


class CommandError(InputError):
    """A command message the node rejects; the message names the problem."""


# ---- commands ------------------------------------------------------------------------------
def _finite(values: Sequence[float], names: Sequence[str], what: str) -> list[float]:
    out = []
    bad = []
    for n, v in zip(names, values):
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = math.nan
        if not math.isfinite(f):
            bad.append(f"{n} = {v}")
        out.append(f)
    if bad:
        raise CommandError(f"{what}: non-finite value(s) {', '.join(bad)}; command rejected")
    return out


def effort_command_inputs(data: Sequence[float], input_names: Sequence[str]) -> np.ndarray:
    """Validated inputs (``input_names`` order, a new array) from /mbs/effort_commands
    (std_msgs/Float64MultiArray, forward_command_controller rules): ``data`` must have one finite
    entry per input, in that order. rclpy hands ``data`` as an array of float64, read at once."""
    if len(data) != len(input_names):
        raise CommandError(
            f"effort command has {len(data)} entries, the model has {len(input_names)} inputs"
            f"{': ' + ', '.join(input_names) if input_names else ''}; command rejected"
        )
    try:
        u = np.array(data, dtype=np.float64)
    except (TypeError, ValueError):
        u = np.array(_finite(data, input_names, "effort command"))  # names what is not a number
    if not np.isfinite(u).all():
        _finite(u, input_names, "effort command")  # names every non-finite entry
    return u


def command_aliases(model, input_names: Sequence[str]) -> dict[str, str]:
    """Names accepted in /mbs/joint_commands -> input names: every input name itself, a 1-DoF
    joint's name for ``<joint>.tau``, ``<joint>[k]`` for ``<joint>.tau[k]``, a wheel's name for
    ``<wheel>.torque``."""
    alias = {n: n for n in input_names}
    for n in input_names:
        base, _, rest = n.partition(".")
        if rest == "tau" or (rest == "torque" and base in model.wheels):
            alias.setdefault(base, n)
        elif rest.startswith("tau["):
            alias.setdefault(f"{base}{rest[3:]}", n)
    return alias


def check_command_stamp(stamp_ns: int, now_ns: int, timeout_ns: int, lock_step: bool) -> None:
    """Raise CommandError for a stamped command the node must not apply at sim time now_ns: in
    lock-step mode any stamp other than now (0 = unstamped, applies to now); otherwise a stamp
    older than now - timeout (stale; timeout 0 disables the check)."""
    if stamp_ns == 0:
        return
    if lock_step:
        if stamp_ns != now_ns:
            raise CommandError(
                f"joint command stamped t = {stamp_ns / NS:.9f} s, lock-step node is at "
                f"t = {now_ns / NS:.9f} s; command rejected"
            )
    elif timeout_ns > 0 and stamp_ns < now_ns - timeout_ns:
        raise CommandError(
            f"stale joint command: stamped t = {stamp_ns / NS:.9f} s, sim time is "
            f"{now_ns / NS:.9f} s, older than command_timeout {timeout_ns / NS:g} s; command rejected"
        )


# ---- joint commands with position, velocity and effort (ros2_control's topic-based convention) -----
@dataclass(frozen=True)
class ServoJoint:
    """A 1-DoF actuated joint a position or velocity command can drive: its input name and its
    coordinate's indices in q and qd."""

    input: str
    iq: int
    iv: int


@dataclass(frozen=True)
class JointTarget:
    """What one command asks of a joint: position q_ref [rad or m], velocity qd_ref [rad/s or
    m/s], feed-forward effort [N m or N]; None where not commanded. ``feedforward``: the (q, qd,
    qdd) [rad, rad/s, rad/s^2 or m, m/s, m/s^2] at which the inverse-dynamics feed-forward is
    evaluated for this joint (a trajectory's desired state in the middle of the physics step);
    None: the actual q, the commanded velocity (else 0) and zero acceleration."""

    position: float | None = None
    velocity: float | None = None
    effort: float | None = None
    feedforward: tuple[float, float, float] | None = None


def servo_joints(model, input_names: Sequence[str]) -> dict[str, ServoJoint]:
    """The joints position and velocity commands may name: every 1-DoF joint with input
    ``<joint>.tau`` (couplings' followers have none)."""
    out = {}
    for name in model.joint_names:
        sq, sv = model.q_slice(name), model.v_slice(name)
        if f"{name}.tau" in input_names and sv.stop - sv.start == 1:
            out[name] = ServoJoint(f"{name}.tau", sq.start, sv.start)
    return out


def joint_command(
    names: Sequence[str],
    position: Sequence[float],
    velocity: Sequence[float],
    effort: Sequence[float],
    aliases: Mapping[str, str],
    servos: Mapping[str, ServoJoint],
) -> tuple[dict[str, float], dict[str, JointTarget]]:
    """A sensor_msgs/JointState command as ros2_control's topic-based hardware interface sends it:
    per named joint any of position, velocity, effort (each array empty or one entry per name; NaN =
    that interface not commanded for that joint). Returns (plain efforts by input name, servo
    targets by joint name): a joint with a position or velocity is servo-driven (its effort a
    feed-forward), a joint with an effort only takes it directly. CommandError names what is wrong."""
    if not names:
        raise CommandError("joint command names no joint; command rejected")
    arrays = {"position": position, "velocity": velocity, "effort": effort}
    for what, arr in arrays.items():
        if len(arr) not in (0, len(names)):
            raise CommandError(
                f"joint command has {len(names)} names but {len(arr)} {what} entries (0 or one per name); "
                "command rejected"
            )
    if not any(len(a) for a in arrays.values()):
        raise CommandError("joint command gives no position, velocity or effort; command rejected")
    unknown = [n for n in names if n not in aliases]  # (every servo joint is an alias of its <joint>.tau)
    if unknown:
        hints = []
        for n in unknown:
            close = difflib.get_close_matches(n, list(aliases), n=1, cutoff=0.5)
            hints.append(f"{n!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise CommandError(
            f"joint command names unknown joint(s) {', '.join(hints)}; accepted: {', '.join(aliases)}; command rejected"
        )
    inputs = [aliases[n] for n in names]
    dup = sorted({i for i in inputs if inputs.count(i) > 1})
    if dup:
        raise CommandError(f"joint command sets {', '.join(dup)} more than once; command rejected")
    values = {what: [_commanded(v, n, what) for n, v in zip(names, arr)] or [None] * len(names)
              for what, arr in arrays.items()}  # fmt: skip
    efforts, targets = {}, {}
    for n, inp, pos, vel, eff in zip(names, inputs, values["position"], values["velocity"], values["effort"]):
        if pos is None and vel is None:
            if eff is not None:
                efforts[inp] = eff
        elif n in servos:
            targets[n] = JointTarget(pos, vel, eff)
        else:
            raise CommandError(
                f"joint command: {n!r} takes efforts only (position and velocity commands drive 1-DoF actuated "
                f"joints: {', '.join(servos)}); command rejected"
            )
    return efforts, targets


def _commanded(v, name: str, what: str) -> float | None:
    """One entry of a JointState command: a finite number, or None for NaN (not commanded)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        f = math.inf
    if math.isinf(f):
        raise CommandError(f"joint command: {what} of {name} is {v}: not finite; command rejected")
    return None if math.isnan(f) else f


def servo_reference_rates(targets: Mapping[str, JointTarget], servos: Mapping[str, ServoJoint], qd) -> list[float]:
    """qd_ref (nv,) [rad/s or m/s] at which the actuator model evaluates its feed-forward: each
    servo-driven joint's commanded velocity (0 for a position-only target: it is to stop there),
    every other joint's actual rate qd."""
    qd_ref = [float(v) for v in qd]
    for name, t in targets.items():
        qd_ref[servos[name].iv] = 0.0 if t.velocity is None else t.velocity
    return qd_ref


def servo_reference_state(
    targets: Mapping[str, JointTarget], servos: Mapping[str, ServoJoint], q, qd
) -> tuple[list[float], list[float], list[float]]:
    """(q_ref (nq,), qd_ref (nv,), qdd_ref (nv,)) at which the actuator model evaluates its
    feed-forward: ``servo_reference_rates`` with the actual q and zero acceleration, but for the
    joints whose target gives a ``feedforward`` state (a followed trajectory), which replaces
    theirs."""
    q_ref = [float(v) for v in q]
    qd_ref = servo_reference_rates(targets, servos, qd)
    qdd_ref = [0.0] * len(qd_ref)
    for name, t in targets.items():
        if t.feedforward is not None:
            s = servos[name]
            q_ref[s.iq], qd_ref[s.iv], qdd_ref[s.iv] = t.feedforward
    return q_ref, qd_ref, qdd_ref


def servo_torques(
    model, sim, targets: Mapping[str, JointTarget], servos: Mapping[str, ServoJoint], gains
) -> dict[str, float]:
    """``servo_efforts`` at the Simulator's state with its feed-forward tau_id = model's inverse
    dynamics at ``servo_reference_state`` (the actuator model of the node and of a world's robot);
    gains (kp, kd, kv)."""
    q, qd = sim.q, sim.qd
    q_ref, qd_ref, qdd_ref = (np.asarray(a) for a in servo_reference_state(targets, servos, q, qd))
    return servo_efforts(targets, servos, q, qd, *gains, tau_id=model.inverse_dynamics(q_ref, qd_ref, qdd_ref))


def advance_servoed(sim, t_end: float, h: float, efforts: Callable[[float], Mapping[str, float]]) -> None:
    """Advance sim to t_end [s] in n = ceil((t_end - t) / h) equal sub-steps, efforts(dt) (the servo
    torques over the next dt [s]) set before each and held over it: their work enters W_in like any
    input's."""
    t0 = sim.t
    n = max(1, math.ceil((t_end - t0) / h - 1e-9))
    for j in range(1, n + 1):
        t_next = t_end if j == n else t0 + j * (t_end - t0) / n
        sim.set_inputs(efforts(t_next - sim.t))
        sim.advance_to(t_next)


def servo_efforts(
    targets: Mapping[str, JointTarget],
    servos: Mapping[str, ServoJoint],
    q,
    qd,
    kp: float,
    kd: float,
    kv: float,
    tau_id=None,
) -> dict[str, float]:
    """The actuator model of position and velocity commands, per servo-driven joint i (docs/guides/
    ros2.md, "Commands"): the inverse-dynamics feed-forward plus a PD servo,
    with a position target   tau_i = tau_id_i + kp (q_ref - q_i) + kd (qd_ref - qd_i) + tau_ff,
    with a velocity target   tau_i = tau_id_i + kv (qd_ref - qd_i) + tau_ff,
    qd_ref 0 unless commanded, tau_ff the command's effort, and tau_id (nv,) = RNEA(q_ref, qd_ref,
    qdd_ref) (``servo_reference_state``: the actual q, qd_ref and zero acceleration, or a followed
    trajectory's desired state; Featherstone, RBDA, Table 5.1): the forces that hold the commanded
    motion against gravity, springs and the coupling between joints, so a held position target is
    an exact equilibrium and a velocity target is tracked without steady-state error. None =
    no feed-forward (a plain PD servo). Gains [N m/rad, N m s/rad] (prismatic: N/m, N s/m)."""
    out = {}
    for name, t in targets.items():
        s = servos[name]
        vel = 0.0 if t.velocity is None else t.velocity
        ff = (0.0 if t.effort is None else t.effort) + (0.0 if tau_id is None else float(tau_id[s.iv]))
        if t.position is not None:
            out[s.input] = kp * (t.position - float(q[s.iq])) + kd * (vel - float(qd[s.iv])) + ff
        else:
            out[s.input] = kv * (vel - float(qd[s.iv])) + ff
    return out


# ---- frame names ----------------------------------------------------------------------------
def with_frame_prefix(contents: Mapping[str, dict], prefix: str) -> dict[str, dict]:
    """``contents`` (topic -> message contents of ``mbsfmu.sim.messages``) with ``prefix`` put before
    every frame name: each header's frame_id and each transform's frame_id and child_frame_id
    (robot_state_publisher's frame_prefix convention: plain concatenation, ``r1/`` + ``link1``).
    New dicts where a name changes; the input is left as it is."""

    def header(h: dict) -> dict:
        return {**h, "frame_id": prefix + h["frame_id"]}

    def one(c: dict) -> dict:
        out = dict(c)
        if "header" in c:
            out["header"] = header(c["header"])
        if "child_frame_id" in c:
            out["child_frame_id"] = prefix + c["child_frame_id"]
        if "transforms" in c and c["transforms"] and "child_frame_id" in c["transforms"][0]:
            out["transforms"] = [one(t) for t in c["transforms"]]
        return out

    return {topic: one(c) if prefix else c for topic, c in contents.items()}
