"""Batched rollouts: many runs of one model in one call of the C core, split across threads with the
GIL released (engine/native/rollout.c), for Monte Carlo and learning loops that run thousands of
short runs.

    sim = Simulator(model, integrator="rk4", h_max=1e-3)
    r = rollout(sim, n_steps=1000, dt=1e-3, q0=Q0, qd0=QD0, u=U, outputs=["engine.E"])
    r.x          # (n_runs, n_steps + 1, nx) states [q, qd, W_in, W_diss] at t_0 .. t_n
    r.output("engine.E")   # (n_runs, n_steps + 1)

Run r starts from a copy of the Simulator (its parameters, integrator, loop settings, inputs, time
and statistics: ``sim``, or ``sim[r]`` for one Simulator per run, e.g. N parameter sets) with its
initial state from ``x0`` / ``q0, qd0`` (W_in and W_diss restart at zero, as set_configuration) or
the Simulator's own, and makes the calls of ``Simulator.step(dt)`` (or ``advance_to(times[k + 1])``)
n_steps times with the inputs of ``u`` held over each step: its states are those of that
Simulator stepped alone, bit for bit, whatever the number of threads (tests/sim/test_rollout.py).
A run that fails (a non-finite state, a DOP853 step that underflows) stops there with its status
and message; the other runs go on. The Simulators are left as they were.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..engine.inputs import real_array
from ..engine.native import rollout as native
from ..engine.spatial import Array
from ..errors import InputError
from .simulator import Simulator

STATUS = {
    native.OK: "ok",
    native.DISCARD: "failed",
    native.ERROR: "bad input",
    native.STOPPED: "stopped",
    native.NOT_RUN: "not run",
}


@dataclass(frozen=True)
class Rollout:
    """The result of ``rollout``: n_runs runs of n_steps steps.

    ``time``: (n_steps + 1,) [s] the times of the rows (the template's t, then as Simulator.step adds
    dt, or ``times``); x: (n_runs, n_steps + 1, nx) states [q, qd, W_in, W_diss] (None with
    states=False); y: (n_runs, n_steps + 1, len(output_names)) the chosen outputs
    (Simulator.output_names); rows after a run's failure are NaN. status: (n_runs,) "ok", "failed"
    (a step failed: ``messages``), "bad input" (an initial state or input the core refused),
    "stopped" (Ctrl-C: rows up to n_done kept), "not run"; n_done: (n_runs,) steps completed;
    n_int_steps, n_rhs: (n_runs,) the integrator's internal steps and right-hand-side evaluations
    (as Simulator.n_steps, n_rhs at the end)."""

    t0: float
    dt: float | None
    times: Array | None
    x: Array | None
    y: Array
    output_names: tuple[str, ...]
    status: tuple[str, ...]
    n_done: Array
    n_int_steps: Array
    n_rhs: Array
    messages: tuple[str, ...]

    @property
    def time(self) -> Array:
        """(n_steps + 1,) [s] the rows' times: ``times``, or t0 and then t += dt as Simulator.step."""
        if self.times is not None:
            return self.times
        return np.cumsum(np.r_[self.t0, np.full(self.n_steps, self.dt)])  # sequential sums: t += dt

    @property
    def n_steps(self) -> int:
        return self.y.shape[1] - 1

    @property
    def ok(self) -> Array:
        """(n_runs,) True where the run completed."""
        return np.array([s == "ok" for s in self.status], dtype=bool)

    def output(self, name: str) -> Array:
        """(n_runs, n_steps + 1) the chosen output ``name``."""
        if name not in self.output_names:
            raise InputError(f"output {name!r} was not chosen; chosen: {', '.join(self.output_names) or 'none'}")
        return self.y[:, :, self.output_names.index(name)]


def rollout(
    sim: Simulator | Sequence[Simulator],
    n_steps: int | None = None,
    dt: float | None = None,
    *,
    times=None,
    x0=None,
    q0=None,
    qd0=None,
    u=None,
    outputs: Sequence[str] = (),
    threads: int | None = None,
    states: bool = True,
) -> Rollout:
    """Run n_runs rollouts of ``sim`` in the C core in one call (module docstring).

    sim: a Simulator on the native backend, or one per run (the same model's sizes: e.g. N parameter
    sets). Steps: n_steps of dt [s], or ``times`` (n_steps + 1,) [s], strictly increasing (step k
    from times[k] to times[k + 1], as advance_to). Initial states: x0 (n_runs, nx), or q0 (n_runs,
    nq) and qd0 (n_runs, nv) (zeros if omitted), or none (each template's). u: (n_steps, n_u) for
    every run or (n_runs, n_steps, n_u) [SI, ``sim.input_names`` order], held over each step (the
    last row's outputs show the last step's), or None (the templates' inputs). n_runs: from x0 / q0,
    the Simulators, or u's first axis (1 if none says). outputs: names of ``sim.output_names()``.
    threads: default the CPUs this process may use. InputError for wrong shapes, non-finite values,
    unknown outputs, an initial state the core refuses (a quaternion not of unit norm)."""
    sims = [sim] if isinstance(sim, Simulator) else list(sim) if isinstance(sim, (list, tuple)) else None
    if not sims or not all(isinstance(s, Simulator) for s in sims):
        raise InputError("rollout: expected a Simulator or a list of Simulators (one per run)")
    first = sims[0]
    for k, s in enumerate(sims):
        if s.core is None:
            raise InputError(
                f"rollout: simulator {k} runs on the python backend; rollouts run in the C core "
                "(Simulator(..., backend='native'))"
            )
    nq, nv, nx, n_u = first.core.nq, first.core.nv, first.core.nx, first.core.n_u
    for k, s in enumerate(sims[1:], 1):
        if (s.core.nx, s.core.n_u, s.core.N) != (nx, n_u, first.core.N):
            raise InputError(f"rollout: simulator {k} is of another model than simulator 0 (its sizes differ)")
    t, n_steps, dt = _steps(n_steps, dt, times)
    x0 = _initial(first, x0, q0, qd0, nq, nv, nx)
    u = _inputs(u, n_steps, n_u, first.input_names)
    n_runs = _n_runs(sims, x0, u)
    names = tuple(outputs)
    sel = _selection(first, names)
    bodies, wheels = first.record_index
    if threads is None:
        threads = native.default_threads()
    if not (isinstance(threads, int) and threads >= 1):
        raise InputError(f"rollout: threads must be a positive integer, got {threads!r}")
    if u is None:  # the inputs each Simulator's next step would pass its core (Simulator.u)
        for s in sims:
            s.core.set_inputs(s.u)
    try:
        got = native.run_rollouts(
            [s.core for s in sims],
            n_runs,
            n_steps,
            dt=0.0 if dt is None else dt,
            t=t,
            x0=x0,
            u=u,
            sel=sel,
            bodies=bodies,
            wheels=wheels,
            threads=threads,
            states=states,
        )
    except KeyboardInterrupt as e:  # Ctrl-C, SIGTERM (stops.py): what was computed goes on with it
        if isinstance(getattr(e, "rollout", None), dict):
            e.rollout = _result(e.rollout, first.t, dt, t, names)
        raise
    bad = np.flatnonzero(got["status"] == native.ERROR)
    if bad.size:
        listed = "; ".join(f"run {r}: {got['messages'][r]}" for r in bad[:5])
        raise InputError(f"rollout: {bad.size} run(s) refused their initial state or inputs: {listed}")
    return _result(got, first.t, dt, t, names)


def _result(got: dict, t0: float, dt: float | None, times: Array | None, names: tuple[str, ...]) -> Rollout:
    return Rollout(
        t0=float(times[0]) if times is not None else t0,
        dt=dt,
        times=times,
        x=got["x"],
        y=got["y"],
        output_names=names,
        status=tuple(STATUS[int(s)] for s in got["status"]),
        n_done=got["n_done"],
        n_int_steps=got["stats"][:, 0].copy(),
        n_rhs=got["stats"][:, 1].copy(),
        messages=tuple(got["messages"]),
    )


def _steps(n_steps, dt, times) -> tuple[Array | None, int, float | None]:
    """(the row times (n_steps + 1,) or None, n_steps, dt or None)."""
    if times is not None:
        if n_steps is not None or dt is not None:
            raise InputError("rollout: give times, or n_steps and dt, not both")
        t = np.ascontiguousarray(_array("times", times), dtype=np.float64)
        if t.ndim != 1 or t.size < 2:
            raise InputError(f"rollout: times must be a 1-D array of at least 2 times [s], got shape {t.shape}")
        if not np.all(np.isfinite(t)) or not np.all(np.diff(t) > 0):
            raise InputError("rollout: times must be finite and strictly increasing [s]")
        return t, t.size - 1, None
    if n_steps is None or dt is None:
        raise InputError("rollout: give n_steps and dt [s] (or times)")
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or not 0 <= n_steps < 2**31 - 1:
        raise InputError(f"rollout: n_steps must be a non-negative integer, got {n_steps!r}")
    dt = float(_array("dt", dt))
    if not (np.isfinite(dt) and dt > 0):
        raise InputError(f"rollout: dt must be a positive, finite time step [s], got {dt!r}")
    return None, int(n_steps), dt


def _array(name: str, x) -> Array:
    """x as a float64 array; InputError naming ``name`` for what is not numbers."""
    try:
        return np.asarray(real_array(name, x), dtype=np.float64, order="C")
    except (TypeError, ValueError):
        raise InputError(f"rollout: {name} must be an array of numbers, got {type(x).__name__}") from None


def _finite(name: str, a: Array, columns: Sequence[str] | None = None) -> None:
    bad = np.argwhere(~np.isfinite(a))
    if bad.size:
        where = tuple(int(i) for i in bad[0])
        what = f" ({columns[where[-1]]})" if columns is not None else ""
        raise InputError(f"rollout: {name}{list(where)}{what} is {float(a[where])!r}: must be finite ({len(bad)} such)")


def _initial(sim: Simulator, x0, q0, qd0, nq: int, nv: int, nx: int) -> Array | None:
    if x0 is not None and (q0 is not None or qd0 is not None):
        raise InputError("rollout: give x0, or q0 and qd0, not both")
    if x0 is None and q0 is None:
        if qd0 is not None:
            raise InputError("rollout: qd0 needs q0")
        return None
    if x0 is not None:
        x = np.ascontiguousarray(_array("x0", x0), dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != nx:
            raise InputError(f"rollout: x0 must be (n_runs, {nx}) [q, qd, W_in, W_diss], got shape {x.shape}")
        _finite("x0", x, sim.state_names)
        return x
    q = _array("q0", q0)
    if q.ndim != 2 or q.shape[1] != nq:
        raise InputError(f"rollout: q0 must be (n_runs, {nq}) (model {sim.model.source}), got shape {q.shape}")
    qd = np.zeros((q.shape[0], nv)) if qd0 is None else _array("qd0", qd0)
    if qd.shape != (q.shape[0], nv):
        raise InputError(f"rollout: qd0 must be ({q.shape[0]}, {nv}) like q0's runs, got shape {qd.shape}")
    x = np.zeros((q.shape[0], nx))
    x[:, :nq], x[:, nq : nq + nv] = q, qd
    _finite("x0", x, sim.state_names)
    return x


def _inputs(u, n_steps: int, n_u: int, names: Sequence[str]) -> Array | None:
    if u is None:
        return None
    a = np.ascontiguousarray(_array("u", u), dtype=np.float64)
    if a.ndim not in (2, 3) or a.shape[-2:] != (n_steps, n_u) or n_steps == 0:
        raise InputError(
            f"rollout: u must be ({n_steps}, {n_u}) or (n_runs, {n_steps}, {n_u}) [n_steps, inputs: "
            f"{', '.join(names) or 'none'}], got shape {a.shape}"
        )
    _finite("u", a, list(names))
    return a


def _n_runs(sims: list, x0: Array | None, u: Array | None) -> int:
    """The runs, from every argument that says; InputError where two disagree."""
    said = {}
    if len(sims) > 1:
        said["simulators"] = len(sims)
    if x0 is not None:
        said["initial states"] = x0.shape[0]
    if u is not None and u.ndim == 3:
        said["u"] = u.shape[0]
    if len(set(said.values())) > 1:
        raise InputError(f"rollout: the number of runs differs: {', '.join(f'{k} {v}' for k, v in said.items())}")
    n = next(iter(said.values()), 1)
    if n < 1:
        raise InputError("rollout: no runs (n_runs = 0)")
    return n


def _selection(sim: Simulator, names: tuple[str, ...]) -> Array:
    """The int32 indices of ``names`` in Simulator.outputs."""
    all_names = sim.output_names()
    where = {n: k for k, n in enumerate(all_names)}
    unknown = [n for n in names if n not in where]
    if unknown:
        hints = [
            f"{n!r}" + (f" (did you mean {c[0]!r}?)" if (c := difflib.get_close_matches(n, all_names, n=1)) else "")
            for n in unknown
        ]
        raise InputError(f"rollout: no output {', '.join(hints)} (Simulator.output_names())")
    return np.array([where[n] for n in names], dtype=np.int32)
