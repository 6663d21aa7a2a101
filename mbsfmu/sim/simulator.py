"""The Simulator: state (q, qd incl. wheel speeds, input work), named inputs, step(dt), outputs.

The state vector is x = [q (nq), qd (nv), W_in, W_diss]: W_in [J] is the work done by the
inputs (actuators, wheel motors, thrusters, body wrenches) and W_diss [J] (<= 0) the work of the
dampers, integrated with the motion so that E(t) - E(0) = W_in + W_diss can be checked exactly.
Inputs are held constant over a step (zero-order hold).

Closed loops (model ``loops``, mbsfmu/engine/dynamics/closed_loops.py): ``loop_method`` "multipliers" (No's method
Eq. 24) or "partitioning" (PyMbs Background: loops that declare independent joints are reduced to them;
the state's dependent entries are recomputed, v = H(u), vdot = B_vu udot, from the independent
ones at every evaluation and after every step; other loops keep multipliers).
``loop_stabilisation`` for the multiplier loops: "baumgarte" (gamma - 2 alpha Phidot - beta^2 Phi
in the dynamics), "projection" (q onto Phi = 0 and qd onto A qd = 0 after every step: each RK4
sub-step, each DOP853 step(dt)), "both" (default) or "none". The initial state (and every
``set_configuration``) is assembled unless ``assemble=False``, which instead rejects a state that
violates a loop.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..engine.dynamics import closed_loops as loop_dyn
from ..engine.dynamics.aba import aba
from ..engine.forces import ForceElements
from ..engine.inputs import real_array
from ..engine.kinematics import RelativePoses, forward_kinematics
from ..engine.model import Model
from ..engine.spatial import Array
from ..errors import InputError, MbsError, brief
from .integrators import IntegrationError, dop853, rk4_step
from .outputs import Invariants, body_record_names, body_record_values, engine_invariants
from .rows import ENGINE_COLUMNS

INTEGRATORS = ("rk4", "dop853")
LOOP_METHODS = ("multipliers", "partitioning")
LOOP_STABILISATION = ("baumgarte", "projection", "both", "none")
BACKENDS = ("auto", "python", "native")
MAX_SUBSTEPS = 10**12  # integrator sub-steps (of h_max) in one step(dt): beyond any run's wall time


class SimulationError(MbsError):
    """The run cannot go on: non-finite state or a failed step; names the time and component."""


@dataclass(frozen=True)
class SimState:
    """A full copy of the simulator's state, for rollback: time [s], x, inputs u, statistics."""

    t: float
    x: Array
    u: Array
    n_steps: int
    n_rhs: int
    h_last: float


class Simulator:
    """Runs a Model forward in time.

    integrator: "rk4" (fixed internal step h_max [s]; each step(dt) takes ceil(dt / h_max)
    equal sub-steps) or "dop853" (adaptive, rtol/atol, internal steps at most h_max if > 0).
    Models with loops: loop_method, loop_stabilisation, baumgarte = (alpha, beta) [1/s] and
    assemble, see the module docstring. backend: "python" (the numpy reference code), "native"
    (the C core, mbsfmu/native: each step(dt) runs all its internal steps in one call, same
    equations, the same RK4 / DOP853 methods and loop stabilisation; loops by multipliers) or
    "auto" (native where it applies and the core loads, else python).
    """

    def __init__(
        self,
        model,
        integrator: str = "rk4",
        h_max: float = 1e-3,
        rtol: float = 1e-10,
        atol: float = 1e-12,
        *,
        loop_method: str = "multipliers",
        loop_stabilisation: str = "both",
        baumgarte: tuple[float, float] = (loop_dyn.ALPHA, loop_dyn.BETA),
        assemble: bool = True,
        backend: str = "auto",
    ):
        if not isinstance(model, Model):
            raise InputError(
                f"Simulator: expected a Model, e.g. mbsfmu.load_model(path), got {brief(model)} "
                f"({type(model).__name__})"
            )
        if integrator not in INTEGRATORS:
            raise InputError(f"integrator {integrator!r}: expected one of {', '.join(INTEGRATORS)}")
        if loop_method not in LOOP_METHODS:
            raise InputError(f"loop_method {loop_method!r}: expected one of {', '.join(LOOP_METHODS)}")
        if loop_stabilisation not in LOOP_STABILISATION:
            raise InputError(
                f"loop_stabilisation {loop_stabilisation!r}: expected one of {', '.join(LOOP_STABILISATION)}"
            )
        try:
            alpha, beta = (float(v) for v in baumgarte)
        except (TypeError, ValueError):
            raise InputError(f"baumgarte must be (alpha, beta) in 1/s, got {baumgarte!r}") from None
        if not all(math.isfinite(v) and v >= 0 for v in (alpha, beta)):
            raise InputError(f"baumgarte (alpha, beta) must be finite and >= 0 [1/s], got {baumgarte!r}")
        rtol, atol, h_max = (_real(name, val) for name, val in (("rtol", rtol), ("atol", atol), ("h_max", h_max)))
        for name, val in (("rtol", rtol), ("atol", atol)):
            if not (math.isfinite(val) and val > 0):
                raise InputError(f"{name} must be a positive number, got {val}")
        if not (math.isfinite(h_max) and (h_max > 0 or (integrator == "dop853" and h_max == 0))):
            raise InputError(f"h_max must be a positive step [s] (0 = unlimited for dop853), got {h_max}")
        self.model = model
        self.integrator, self.h_max, self.rtol, self.atol = integrator, float(h_max), float(rtol), float(atol)
        self.forces = ForceElements(model)
        self.input_names = self.forces.layout.names
        self._input_index = {name: k for k, name in enumerate(self.input_names)}  # set_inputs' lookup
        self._nq, self._nv = model.nq, model.nv
        self._quat = [sl for _, sl in model.quaternions]
        self.state_names = _state_names(model)
        self._record_names: tuple[str, ...] | None = None  # built at the first record_names()
        self._record_index = (  # the C core's body records: rigid bodies, then wheel rotors (outputs.py order)
            np.asarray(model.rigid_bodies, dtype=np.int32),
            np.asarray([i for i, _w in model.wheels.values()], dtype=np.int32),
        )
        self.loops = model.loops
        self.loop_method, self.loop_stabilisation, self.assemble = loop_method, loop_stabilisation, bool(assemble)
        self._alpha, self._beta = (alpha, beta) if loop_stabilisation in ("baumgarte", "both") else (0.0, 0.0)
        self._project = loop_stabilisation in ("projection", "both")
        self._part = model.loop_partition() if (self.loops and loop_method == "partitioning") else None
        self.t = 0.0
        self._stats = [0, 0, 0.0]  # n_steps, n_rhs, h_last (python backend; the core keeps its own)
        self._dt_max = self.h_max * MAX_SUBSTEPS if self.h_max > 0 else float(np.finfo(float).max)
        self._output_names: tuple[str, ...] | None = None
        self._output_slices: dict[str, slice] | None = None
        self._out = None  # the core's outputs call, made at the first outputs()
        self._relative_poses = None  # the python backend's RelativePoses, made at the first relative_poses()
        self.backend, self._native = _backend(backend, integrator, model, loop_method), None
        if self.backend == "native":
            from ..engine.native.core import Core

            self._native = Core(model)
            self._native.set_solver(integrator, self.h_max, self.rtol, self.atol)
            self._native.set_loops(loop_stabilisation in ("baumgarte", "both"), self._project, alpha, beta)
            self._stepper = self._native.stepper()
        self._u = self._native.u_in if self._native is not None else np.zeros(len(self.input_names))
        self._x = np.zeros(self._nq + self._nv + 2)
        self.set_configuration(*model.initial_state(assemble=False))

    @property
    def core(self):
        """The C core instance (engine.native.core.Core) the native backend steps; None on python."""
        return self._native

    @property
    def record_index(self) -> tuple[Array, Array]:
        """(rigid bodies, wheel rotors): the int32 body indices of the body records (outputs.py order)."""
        return self._record_index

    # ---- state and inputs ---------------------------------------------------------------
    @property
    def x(self) -> Array:
        """The state [q (nq), qd (nv), W_in, W_diss]; on the native backend a read-only view of the
        core's (it changes with every step: copy it to keep it). Assigning it sets the state
        (finite, unit quaternions; loops as given)."""
        return self._native.x_view if self._native is not None else self._x

    @x.setter
    def x(self, value) -> None:
        if self._native is not None:
            self._native.set_state(value, assemble=2)
        else:
            self._x = value

    @property
    def u(self) -> Array:
        """The inputs (``input_names`` order) [SI units], held over each step; edit in place or assign."""
        return self._u

    @u.setter
    def u(self, value) -> None:
        value = real_array("u", value)
        if value.shape != self._u.shape:
            raise InputError(f"u must have {self._u.size} entries (input_names), got shape {value.shape}")
        self._u[:] = value

    def _stat(self, k: int):
        return self._native.stats()[k] if self._native is not None else self._stats[k]

    def _set_stat(self, k: int, value) -> None:
        if self._native is not None:
            st = list(self._native.stats())
            st[k] = value
            self._native.set_stats(*st)
        else:
            self._stats[k] = value

    n_steps = property(lambda self: self._stat(0), lambda self, v: self._set_stat(0, v), doc="internal steps taken")
    n_rhs = property(lambda self: self._stat(1), lambda self, v: self._set_stat(1, v), doc="rhs evaluations")
    h_last = property(lambda self: self._stat(2), lambda self, v: self._set_stat(2, v), doc="last internal step [s]")

    @property
    def q(self) -> Array:
        return self.x[: self._nq].copy()

    @property
    def qd(self) -> Array:
        return self.x[self._nq : self._nq + self._nv].copy()

    @property
    def work(self) -> tuple[float, float]:
        """(W_in, W_diss) [J] since the start (or the last set_state)."""
        return float(self.x[-2]), float(self.x[-1])

    def set_configuration(self, q: Array, qd: Array) -> None:
        """Set q (nq,) and qd (nv,) (quaternions must be unit); input work restarts at zero.
        With loops: assembled (``Model.assemble``: the declared independent joints keep their
        values), or with assemble=False checked (InputError naming the violated loops)."""
        q = self.model.checked_vector("q", q, self._nq)
        qd = self.model.checked_vector("qd", qd, self._nv)
        for s in self._quat:
            if abs(np.linalg.norm(q[s]) - 1.0) > 1e-9:
                raise InputError(
                    f"q[{s.start}:{s.stop}] is a quaternion of norm {np.linalg.norm(q[s]):.12g}, must be 1"
                )
        if self.loops:
            t = self.model.tree
            if self.assemble:
                q, qd = loop_dyn.assemble(t, self.loops, q, qd)
            else:
                loop_dyn.check_consistent(t, self.loops, q, qd)
            if self._part is not None:
                q, qd, _J = loop_dyn.consistent_state(t, self.loops, self._part, q, qd)
        self.x = np.concatenate((q, qd, [0.0, 0.0]))

    def set_input(self, name: str, value: float) -> None:
        """Set one named input (see ``input_names``) [SI units]."""
        self.set_inputs({name: value})

    def set_inputs(self, values: dict[str, float]) -> None:
        """Set named inputs (see ``input_names``) [SI units], in the order given; InputError names
        an unknown input (did-you-mean) or a value that is no finite real number."""
        index = self._input_index
        for name, value in values.items():
            k = index.get(name)
            if k is None:
                import difflib

                close = difflib.get_close_matches(name, self.input_names, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise InputError(
                    f"unknown input {name!r}{hint}; model {self.model.source} has inputs: "
                    f"{', '.join(self.input_names) or 'none'}"
                )
            if type(value) is not float:  # a Python float is real: the check below is for the rest
                try:
                    value = float(real_array(f"input {name!r}", value))
                except (TypeError, ValueError) as e:
                    if isinstance(e, InputError):
                        raise
                    raise InputError(f"input {name!r} must be a number, got {value!r}") from None
            if not math.isfinite(value):
                raise InputError(f"input {name!r} is {value}: inputs must be finite")
            self._u[k] = value

    def get_state(self) -> SimState:
        return SimState(self.t, self.x.copy(), self.u.copy(), self.n_steps, self.n_rhs, self.h_last)

    def set_state(self, s: SimState) -> None:
        self.t, self.x, self.u = s.t, s.x.copy(), s.u
        if self._native is not None:
            self._native.set_stats(s.n_steps, s.n_rhs, s.h_last)
        else:
            self._stats = [s.n_steps, s.n_rhs, s.h_last]

    # ---- dynamics -----------------------------------------------------------------------
    def rhs(self, x: Array) -> Array:
        """dx/dt at state x with the current inputs."""
        if self.loops:
            q, qd, qdd, _lam, p_in, p_damp = self._loop_dynamics(x)
            self.n_rhs += 1
            return np.concatenate((self.model.config_rate(q, qd), qdd, [p_in, p_damp]))
        m, nq, nv = self.model, self._nq, self._nv
        q, qd = x[:nq], x[nq : nq + nv]
        tau_u = self.forces.joint_forces(self.u)
        f_ext, p_in, p_damp = None, 0.0, 0.0
        if self.forces.springs or self.forces.thrusters or self.forces.wrenches:
            f_ext, p_in, p_damp = self.forces.body_wrenches(forward_kinematics(m.tree, q, qd), self.u)
        qdd = aba(m.tree, q, qd, tau_u + m.passive_forces(q, qd), f_ext)
        p_in += tau_u @ qd
        p_damp -= m.damping @ (qd * qd)
        self.n_rhs += 1
        return np.concatenate((m.config_rate(q, qd), qdd, [p_in, p_damp]))

    def _loop_dynamics(self, x: Array):
        """(q, qd, qdd, lambda, input power [W], damper power [W]) at x with the loops closed;
        with partitioned loops q and qd are first made consistent from their independent part."""
        m, nq, nv = self.model, self._nq, self._nv
        q, qd = x[:nq], x[nq : nq + nv]
        if self._part is not None:
            q, qd, _J = loop_dyn.consistent_state(m.tree, self.loops, self._part, q, qd)
        tau_u = self.forces.joint_forces(self.u)
        f_ext, p_in, p_damp = None, 0.0, 0.0
        if self.forces.springs or self.forces.thrusters or self.forces.wrenches:
            f_ext, p_in, p_damp = self.forces.body_wrenches(forward_kinematics(m.tree, q, qd), self.u)
        qdd, lam, _ld = loop_dyn.loop_forward_dynamics(
            m.tree, self.loops, q, qd, tau_u + m.passive_forces(q, qd), f_ext, self._part, self._alpha, self._beta
        )
        p_in += tau_u @ qd
        p_damp -= m.damping @ (qd * qd)
        return q, qd, qdd, lam, p_in, p_damp

    def advance_to(self, t_end: float) -> None:
        """step(t_end - t), landing exactly on t_end [s] (no round-off creep in a time grid)."""
        self.step(t_end - self.t)
        self.t = float(t_end)

    def step(self, dt: float) -> None:
        """Advance the state by dt [s] with the inputs held; SimulationError on failure (the
        state is then left at the start of the step)."""
        native = self._native
        if native is not None and type(dt) is float and 0.0 < dt <= self._dt_max:  # the checks below, passed
            if self._stepper.step(self.t, dt):  # _native_step inline (the per-step path)
                self._native_failed()
            self.t += dt
            return
        dt = _real("dt", dt)
        if not (math.isfinite(dt) and dt > 0):
            raise InputError(f"dt must be a positive, finite time step [s], got {dt!r}")
        if self.h_max > 0 and not dt / self.h_max <= MAX_SUBSTEPS:
            raise InputError(
                f"dt = {dt:g} s needs {dt / self.h_max:.3g} sub-steps of h_max = {self.h_max:g} s; "
                f"at most {MAX_SUBSTEPS:.0e} per step (raise h_max or take shorter steps)"
            )
        if native is not None:
            self._native_step(dt)
            return
        x = self.x
        try:
            with np.errstate(all="ignore"):
                if self.integrator == "rk4":
                    n = max(1, math.ceil(dt / self.h_max - 1e-9))
                    h = dt / n
                    for _ in range(n):
                        x = self._close_loops(self._normalise(rk4_step(self.rhs, x, h)))
                        self._check_finite(x, self.t + h)
                    self.n_steps += n
                    self.h_last = h
                else:
                    x, _nfev, self.h_last = dop853(
                        self.rhs, x, dt, self.rtol, self.atol, self.h_max, self.h_last or None
                    )
                    x = self._close_loops(self._normalise(x))
                    self.n_steps += 1
        except (IntegrationError, FloatingPointError, np.linalg.LinAlgError, loop_dyn.PartitionError) as e:
            raise SimulationError(f"step from t = {self.t:.9g} s by {dt:.9g} s failed: {e}") from None
        self._check_finite(x, self.t + dt)
        self.x = x
        self.t += dt

    def _native_step(self, dt: float) -> None:
        """step(dt) in the C core (the same RK4 sub-steps or DOP853 steps as above, quaternions
        renormalised alike), the state and statistics kept there; SimulationError with the core's
        message (the state left as it was)."""
        if self._stepper.step(self.t, dt):
            self._native_failed()
        self.t += dt

    def _native_failed(self) -> None:
        """The error of a failed core step: InputError for non-finite inputs, else SimulationError
        with the core's message."""
        if not np.all(np.isfinite(self._u)):
            raise InputError(f"inputs must be finite, got {dict(zip(self.input_names, self._u.tolist()))}")
        raise SimulationError(self._native.message)

    def _close_loops(self, x: Array) -> Array:
        """After a step: v = H(u), vdot = B_vu udot for partitioned loops; projection of the
        multiplier loops when selected."""
        if not self.loops or not (self._project or self._part is not None):
            return x
        nq, nv = self._nq, self._nv
        q, qd = x[:nq], x[nq : nq + nv]
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(qd))):
            return x  # reported by _check_finite
        if self._project:
            q, qd = loop_dyn.project(self.model.tree, self.loops, q, qd, self._part)
        else:
            q, qd, _J = loop_dyn.consistent_state(self.model.tree, self.loops, self._part, q, qd)
        x = x.copy()
        x[:nq], x[nq : nq + nv] = q, qd
        return x

    def _normalise(self, x: Array) -> Array:
        for s in self._quat:
            x[s] /= np.linalg.norm(x[s])
        return x

    def _check_finite(self, x: Array, t: float) -> None:
        bad = np.flatnonzero(~np.isfinite(x))
        if bad.size:
            names = [self.state_names[k] for k in bad[:5]]
            raise SimulationError(
                f"non-finite state at t = {t:.9g} s in {', '.join(names)}"
                f"{' and more' if bad.size > 5 else ''} (last good t = {self.t:.9g} s)"
            )

    # ---- outputs ------------------------------------------------------------------------
    def kinematics(self):
        """Poses and velocities of every body at the current state (by the C core on the native backend)."""
        q, qd = self.x[: self._nq], self.x[self._nq : self._nq + self._nv]
        if self.backend == "native":
            return _native_kinematics(self.model, self._native, q, qd)
        return forward_kinematics(self.model.tree, q, qd)

    def body_poses(self) -> tuple[Array, Array]:
        """World poses of every body at the current state: R (N+1, 3, 3) body-to-world rotations,
        p (N+1, 3) origins [m], entry 0 the world; ``kinematics()``'s R and p without the rest."""
        q, qd = self.x[: self._nq], self.x[self._nq : self._nq + self._nv]
        if self.backend == "native":
            R, p, _, _ = self._native.kinematics(q, qd)
            return R, p
        kin = forward_kinematics(self.model.tree, q, qd)
        return kin.R, kin.p

    def relative_poses(self) -> Array:
        """(N, 7) every body's translation [m] and rotation quaternion (x, y, z, w) relative to its
        parent body (``kinematics.RelativePoses``) at the current state: on the native backend one
        core call into the instance's array (mbs_sim_relative_poses, the same bits; overwritten by
        the next call), else from ``body_poses``."""
        if self._native is not None:
            return self._native.relative_poses()
        if self._relative_poses is None:
            self._relative_poses = RelativePoses(self.model)
        return self._relative_poses(*self.body_poses())

    def invariants(self) -> Invariants:
        """The engine's own p_sys, P_sys, H_sys, R, Rdot, KE, PE at the current state (on the native
        backend the core's, computed once per state; ``invariant_values`` as one array)."""
        if self._native is not None:
            v = self._native.invariant_view()
            return Invariants(
                p_sys=v[0:3].copy(),
                P_sys=v[3:6].copy(),
                H_sys=v[6:9].copy(),
                R=v[9:12].copy(),
                Rdot=v[12:15].copy(),
                KE=float(v[15]),
                PE=float(v[16]),
            )
        q, qd = self.q, self.qd
        kin = self.kinematics()
        return engine_invariants(self.model, kin, q, qd, self.spring_energy(kin))

    def invariant_values(self) -> Array:
        """The engine columns (``invariant_names``: p_sys, P_sys, H_sys, R, Rdot (world axes), KE,
        PE, E, W_in, W_diss [SI]) at the current state as a new (20,) array: on the native backend
        from the core's invariants of this state (no dict, no per-vector arrays)."""
        if self._native is not None:
            return self._stepper.invariant_values()  # E = KE + PE, as Invariants.E and mbs_sim_outputs
        inv = self.invariants()
        return np.array([*inv.p_sys, *inv.P_sys, *inv.H_sys, *inv.R, *inv.Rdot, inv.KE, inv.PE, inv.E, *self.work])

    def loop_outputs(self) -> dict[str, dict]:
        """Per loop at the current state and inputs: ``phi`` = |Phi| (2-norm of its position
        rows) [m or -], ``phidot`` = |A qd| [m/s or 1/s], ``lambda`` (rows,) its constraint
        forces (-A^T lambda the generalised force; minimum norm for redundant rows) [N or N m]."""
        if not self.loops:
            return {}
        q, qd, _qdd, lam, _p, _d = self._loop_dynamics(self.x)
        ld = loop_dyn.constraints(self.model.tree, self.loops, q, qd)
        return {
            c.name: {
                "phi": float(np.linalg.norm(ld.Phi[c.rows])),
                "phidot": float(np.linalg.norm(ld.Phidot[c.rows])),
                "lambda": lam[c.rows].copy(),
            }
            for c in self.loops.closures
        }

    def spring_energy(self, kin=None) -> float:
        """PE of joint springs and point-to-point springs [J] (MBS Energy Testing Eq. 2, first term)."""
        kin = kin or self.kinematics()
        return float(
            sum(0.5 * k * x * x for k, x in self.model.joint_spring_deflections(self.q).values())
            + sum(0.5 * k * x * x for _n, k, x in self.forces.spring_state(kin))
        )

    def spring_records(self, kin=None) -> dict[str, float]:
        """``<spring>.k`` [N/m or N m/rad] and ``<spring>.x`` (deflection) of every spring."""
        kin = kin or (self.kinematics() if self.forces.springs else None)  # point springs need the poses
        out = {}
        for name, (k, x) in self.model.joint_spring_deflections(self.q).items():
            out[f"{name}.k"], out[f"{name}.x"] = k, x
        for name, k, x in self.forces.spring_state(kin):
            out[f"{name}.k"], out[f"{name}.x"] = float(k), float(x)
        return out

    def records(self) -> dict[str, float]:
        """Body, wheel and spring records for the independent checker (mbsfmu/sim/outputs.py),
        by name: ``record_names`` -> ``record_values``."""
        return dict(zip(self.record_names(), self.record_values().tolist()))

    def record_names(self) -> tuple[str, ...]:
        """The names of ``record_values``: body and wheel records, then ``<spring>.k``, ``.x``."""
        if self._record_names is None:
            self._record_names = body_record_names(self.model) + tuple(self.spring_records())
        return self._record_names

    def record_values(self) -> Array:
        """Body, wheel and spring records at the current state, in ``record_names`` order (the
        body records by the C core on the native backend, outputs.body_record_values on numpy)."""
        if self._native is not None:  # the core's records of this state: one call, no dict
            return self.outputs()[self.output_slices["records"]].copy()
        kin = self.kinematics()
        body = body_record_values(self.model, kin)
        springs = np.fromiter(self.spring_records(kin).values(), float)
        return np.concatenate([body, springs])

    def output_names(self) -> tuple[str, ...]:
        """The names of ``outputs``: q.<joint>, qd.<joint> (``state_names``), u.<input>,
        qdd.<joint>, the engine.* columns (``rows.ENGINE_COLUMNS``), then ``record_names``."""
        if self._output_names is None:
            nq, nv = self._nq, self._nv
            qdd = tuple("qdd." + name.split(".", 1)[1] for name in self.state_names[nq : nq + nv])
            u = tuple(f"u.{name}" for name in self.input_names)
            self._output_names = (*self.state_names[: nq + nv], *u, *qdd, *ENGINE_COLUMNS, *self.record_names())
        return self._output_names

    @property
    def output_slices(self) -> dict[str, slice]:
        """Where each group of ``outputs`` is (fixed by the model): "q", "qd", "u", "qdd",
        "engine" (``invariant_names``) and "records" (``record_names``): ``out[sl]`` is a view, so
        a caller takes the names once and reads each group's values from every step's array."""
        if self._output_slices is None:
            sizes = (
                ("q", self._nq),
                ("qd", self._nv),
                ("u", len(self.input_names)),
                ("qdd", self._nv),
                ("engine", len(ENGINE_COLUMNS)),
                ("records", len(self.record_names())),
            )
            start, slices = 0, {}
            for name, n in sizes:
                slices[name] = slice(start, start + n)
                start += n
            self._output_slices = slices
        return self._output_slices

    invariant_names = ENGINE_COLUMNS  # the names of invariant_values and of outputs' "engine" group

    def outputs(self) -> Array:
        """Every output at the current state and inputs, in ``output_names`` order: q, qd, u, qdd
        (loops closed) [SI], the engine invariants and work, the body, wheel and spring records.
        On the native backend one call of the C core, into an array that the next call overwrites
        (copy it to keep it); on the python backend built from the numpy reference (the oracle)."""
        nq, nv = self._nq, self._nv
        if self._native is not None:
            if self._out is None:
                bodies, wheels = self._record_index
                out = np.empty(self._native.n_outputs(bodies.size, wheels.size))
                self._out = self._native.outputs_call(bodies, wheels, out)
            return self._out()
        n_rhs = self.n_rhs
        qdd = self.rhs(self.x)[nq : nq + nv]
        self.n_rhs = n_rhs  # an output, not a step's evaluation
        return np.concatenate([self.x[: nq + nv], self.u, qdd, self.invariant_values(), self.record_values()])


def _real(name: str, value) -> float:
    """``value`` as a float (Python or NumPy real numbers alike); InputError naming ``name``."""
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{name} must be a number, got {type(value).__name__} {value!r}"[:200])
    return float(value)


def _backend(backend: str, integrator: str, model, loop_method: str) -> str:
    """The backend that runs: "native" (if the C core loads; loops by multipliers only), else "python"."""
    if backend not in BACKENDS:
        raise InputError(f"backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if backend == "python":
        return backend
    from ..engine.native.core import usable

    why = (
        "the C core closes loops by multipliers only (loop_method 'partitioning' runs in Python)"
        if model.loops and loop_method != "multipliers"
        else "the C core cannot be loaded or built"
        if not usable()
        else ""
    )
    if why and backend == "native":
        raise InputError(f"backend 'native' cannot run this simulation: {why} (use backend='python' or 'auto')")
    return "python" if why else "native"


def _native_kinematics(model, core, q: Array, qd: Array):
    """kinematics.Kinematics from the C core's outward pass; Xup_i = plucker(E_i, r_i) from the
    poses (E_i = R_i^T R_lambda, r_i = R_lambda^T (p_i - p_lambda))."""
    from ..engine.kinematics import Kinematics

    R, p, v, a = core.kinematics(q, qd)
    par = model.tree.parent
    E = np.einsum("nji,njk->nik", R, R[par])
    r = np.einsum("nji,nj->ni", R[par], p - p[par])
    Xup = np.zeros((model.N + 1, 6, 6))
    Xup[:, :3, :3] = E
    Xup[:, 3:, 3:] = E
    rx = np.zeros((model.N + 1, 3, 3))
    rx[:, 0, 1], rx[:, 0, 2], rx[:, 1, 2] = -r[:, 2], r[:, 1], -r[:, 0]
    rx[:, 1, 0], rx[:, 2, 0], rx[:, 2, 1] = r[:, 2], -r[:, 1], r[:, 0]
    Xup[:, 3:, :3] = -E @ rx
    Xup[0] = np.eye(6)
    return Kinematics(R=R, p=p, v=v, a=a, Xup=Xup)


def _state_names(model) -> list[str]:
    """Readable names of the state vector entries: q.<joint>[k], qd.<joint>[k], W_in, W_diss."""
    names = []
    t = model.tree
    for key, size in (("q", t.nq), ("qd", t.nv)):
        for i in range(1, model.N + 1):
            n = int(size[i])
            for k in range(n):
                names.append(f"{key}.{model.joint_names[i - 1]}" + (f"[{k + 1}]" if n > 1 else ""))
    return names + ["W_in", "W_diss"]
