"""Message conversion as pure functions: engine outputs -> message field values, and command
messages -> validated input dicts. No rclpy here: ``node.py`` copies these values into messages,
and the tests check them without ROS.

Joint states (sensor_msgs/JointState) are flattened per joint coordinate, in the model's tree
order (``model.joint_names``; fixed joints have no entry). A joint with one coordinate keeps its
name (``q1``; a reaction wheel's entry is named like the wheel: ``rw1``, spin angle and rate
relative to its host). A joint with nq or nv > 1 gets max(nq, nv) entries ``<joint>[k]``,
k = 1..max(nq, nv), where entry k holds q_j[k], qd_j[k] and tau_j[k] of that joint (the engine's
coordinates, docs/explanation/conventions.md), NaN where the joint has no such coordinate:

| joint | entries | position | velocity, effort |
|---|---|---|---|
| revolute, prismatic, wheel | ``j`` | angle [rad] / offset [m] | rate, actuator force |
| spherical | ``j[1]..j[4]`` | quaternion w, x, y, z | omega (body axes) [rad/s], k = 4: NaN |
| free | ``j[1]..j[7]`` | x, y, z [m], quaternion w, x, y, z | v (body axes) [m/s], omega [rad/s], k = 7: NaN |

So position[k] and velocity[k] of a multi-DoF joint are coordinates with the same index, not a
value and its derivative. ``state_from_joint_state`` inverts the flattening exactly.
"""
from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from mbsfmu.errors import InputError
from mbsfmu.engine.spatial import R_to_quat

Array = NDArray[np.float64]

ENERGY_LABELS = ("KE", "PE", "E", "W_in", "W_diss")
ENERGY_LAYOUT_LABEL = ",".join(ENERGY_LABELS)   # Float64MultiArray layout.dim[0].label of /mbs/energy
NS = 1_000_000_000


class CommandError(InputError):
    """A command message the node rejects; the message names the problem."""


# ---- time ----------------------------------------------------------------------------------
def time_to_ns(t: float) -> int:
    """Sim time t [s] -> integer nanoseconds (rounded to nearest)."""
    return int(round(float(t) * NS))


def ns_to_stamp(ns: int) -> tuple[int, int]:
    """Integer nanoseconds -> builtin_interfaces/Time (sec, nanosec)."""
    return int(ns // NS), int(ns % NS)


def stamp_to_ns(sec: int, nanosec: int) -> int:
    return int(sec) * NS + int(nanosec)


# ---- joint states --------------------------------------------------------------------------
@dataclass(frozen=True)
class JointLayout:
    """How the state flattens into JointState arrays: entry e has name names[e], position
    q[q_index[e]] and velocity/effort qd[v_index[e]], tau[v_index[e]] (index -1: NaN)."""
    names: tuple[str, ...]
    q_index: np.ndarray
    v_index: np.ndarray
    nq: int
    nv: int


def joint_layout(model) -> JointLayout:
    """The JointState layout of a Model (see the module docstring)."""
    names, qi, vi = [], [], []
    for name in model.joint_names:
        qs, vs = model.q_slice(name), model.v_slice(name)
        nq, nv = qs.stop - qs.start, vs.stop - vs.start
        n = max(nq, nv)
        for k in range(n):
            names.append(name if n == 1 else f"{name}[{k + 1}]")
            qi.append(qs.start + k if k < nq else -1)
            vi.append(vs.start + k if k < nv else -1)
    return JointLayout(tuple(names), np.array(qi, dtype=np.int64), np.array(vi, dtype=np.int64), model.nq, model.nv)


def _pick(x: Array, idx: np.ndarray) -> list[float]:
    out = np.full(idx.shape, math.nan)
    ok = idx >= 0
    out[ok] = x[idx[ok]]
    return out.tolist()


def joint_state_fields(layout: JointLayout, q: Array, qd: Array, tau: Array) -> tuple[list[str], list[float], list[float], list[float]]:
    """(name, position, velocity, effort) of sensor_msgs/JointState from q (nq,), qd (nv,) and
    the applied actuator forces tau (nv,) [N m or N] (``Simulator.forces.joint_forces(u)``)."""
    return list(layout.names), _pick(np.asarray(q, float), layout.q_index), _pick(np.asarray(qd, float), layout.v_index), \
        _pick(np.asarray(tau, float), layout.v_index)


def state_from_joint_state(layout: JointLayout, names: Sequence[str], position: Sequence[float],
                           velocity: Sequence[float]) -> tuple[Array, Array]:
    """(q (nq,), qd (nv,)) from a JointState published by the node (any entry order)."""
    if len(position) != len(names) or len(velocity) != len(names):
        raise InputError(f"joint state has {len(names)} names, {len(position)} positions, {len(velocity)} velocities")
    where = {n: k for k, n in enumerate(names)}
    missing = [n for n in layout.names if n not in where]
    if missing:
        raise InputError(f"joint state lacks {', '.join(missing)}")
    q, qd = np.full(layout.nq, math.nan), np.full(layout.nv, math.nan)
    for e, n in enumerate(layout.names):
        k = where[n]
        if layout.q_index[e] >= 0:
            q[layout.q_index[e]] = position[k]
        if layout.v_index[e] >= 0:
            qd[layout.v_index[e]] = velocity[k]
    return q, qd


# ---- momentum, centre of mass, energy ------------------------------------------------------
def momentum_fields(inv) -> tuple[list[float], list[float]]:
    """geometry_msgs/Wrench (force, torque) of /mbs/centroidal_momentum: force = P_sys = M Rdot,
    total linear momentum, world axes [N s]; torque = H_sys, angular momentum about the system CM,
    world axes, wheels included [N m s]. (p_sys, the momentum about the CM, is 0 by definition:
    the diagnostics check it.)"""
    return [float(v) for v in inv.P_sys], [float(v) for v in inv.H_sys]


def com_fields(inv) -> tuple[list[float], list[float]]:
    """(R [m], Rdot [m/s]): system CM position and velocity, world axes."""
    return [float(v) for v in inv.R], [float(v) for v in inv.Rdot]


def energy_values(inv, work: tuple[float, float]) -> list[float]:
    """/mbs/energy data in ENERGY_LABELS order: KE, PE, E = KE + PE, W_in (work of the inputs
    since the start or reset), W_diss (work of the dampers, <= 0) [J]."""
    W_in, W_diss = work
    return [float(inv.KE), float(inv.PE), float(inv.E), float(W_in), float(W_diss)]


def transforms(model, kin) -> list[tuple[str, str, list[float], list[float]]]:
    """[(parent frame, child frame, translation [m], rotation quaternion x, y, z, w)] of every
    body relative to its parent body (the world for roots), for tf2_msgs/TFMessage. The world
    frame is called "world"; each body frame is named like its body."""
    out = []
    for i in range(1, model.N + 1):
        p = int(model.L[i])
        Rp, pp = (np.eye(3), np.zeros(3)) if p == 0 else (kin.R[p], kin.p[p])
        R = Rp.T @ kin.R[i]
        xyz = Rp.T @ (kin.p[i] - pp)
        w, x, y, z = R_to_quat(R)
        out.append(("world" if p == 0 else model.body_names[p - 1], model.body_names[i - 1],
                    [float(v) for v in xyz], [float(x), float(y), float(z), float(w)]))
    return out


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


def effort_command_inputs(data: Sequence[float], input_names: Sequence[str]) -> dict[str, float]:
    """Validated inputs from /mbs/effort_commands (std_msgs/Float64MultiArray, forward_command_
    controller rules): ``data`` must have one finite entry per input, in ``input_names`` order."""
    if len(data) != len(input_names):
        raise CommandError(f"effort command has {len(data)} entries, the model has {len(input_names)} inputs"
                           f"{': ' + ', '.join(input_names) if input_names else ''}; command rejected")
    return dict(zip(input_names, _finite(data, input_names, "effort command")))


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


def joint_command_inputs(names: Sequence[str], effort: Sequence[float], aliases: Mapping[str, str]) -> dict[str, float]:
    """Validated inputs from /mbs/joint_commands (sensor_msgs/JointState: name and effort of equal
    length, names from ``command_aliases``; inputs not named keep their value)."""
    if not names:
        raise CommandError("joint command names no joint; command rejected")
    if len(effort) != len(names):
        raise CommandError(f"joint command has {len(names)} names but {len(effort)} efforts; command rejected")
    unknown = [n for n in names if n not in aliases]
    if unknown:
        hints = []
        for n in unknown:
            close = difflib.get_close_matches(n, list(aliases), n=1, cutoff=0.5)
            hints.append(f"{n!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
        raise CommandError(f"joint command names unknown joint(s) {', '.join(hints)}; accepted: "
                           f"{', '.join(aliases)}; command rejected")
    dup = sorted({aliases[n] for n in names if sum(aliases[m] == aliases[n] for m in names) > 1})
    if dup:
        raise CommandError(f"joint command sets {', '.join(dup)} more than once; command rejected")
    values = _finite(effort, names, "joint command")
    return {aliases[n]: v for n, v in zip(names, values)}


def check_command_stamp(stamp_ns: int, now_ns: int, timeout_ns: int, lock_step: bool) -> None:
    """Raise CommandError for a stamped command the node must not apply at sim time now_ns: in
    lock-step mode any stamp other than now (0 = unstamped, applies to now); otherwise a stamp
    older than now - timeout (stale; timeout 0 disables the check)."""
    if stamp_ns == 0:
        return
    if lock_step:
        if stamp_ns != now_ns:
            raise CommandError(f"joint command stamped t = {stamp_ns / NS:.9f} s, lock-step node is at "
                               f"t = {now_ns / NS:.9f} s; command rejected")
    elif timeout_ns > 0 and stamp_ns < now_ns - timeout_ns:
        raise CommandError(f"stale joint command: stamped t = {stamp_ns / NS:.9f} s, sim time is "
                           f"{now_ns / NS:.9f} s, older than command_timeout {timeout_ns / NS:g} s; command rejected")
