"""The rows a run writes, built in one place from a Simulator's current state.

``trajectory_row``: ``trajectory.csv`` (joint and system columns): time [s], q.<joint>,
qd.<joint> (``[k]`` for multi-DoF joints), inputs u.<name>, the engine's own invariants
engine.* and loop.<name>.phi/phidot/lambda[k] of closed loops.

``records_row``: ``records.csv``, the independent checker's file (``mbsfmu check records.csv``):
time, every body/wheel/spring record (mbsfmu/sim/outputs.py, format in mbsfmu/trajectory.py) and
the engine.* columns (compared by ``engine_agreement``, and W_in/W_diss used by
``energy_balance``). Body records are ~50 columns per body, so they go to their own file, written
only when a scenario's checks need them (docs/reference/trajectory-format.md).
"""

from __future__ import annotations

import numpy as np

from ..trajectory import RECORDS_FILE, TRAJECTORY_FILE

INVARIANT_VECTORS = ("p_sys", "P_sys", "H_sys", "R", "Rdot")


ENGINE_COLUMNS = (
    *(f"engine.{key}[{c + 1}]" for key in INVARIANT_VECTORS for c in range(3)),
    *(f"engine.{key}" for key in ("KE", "PE", "E", "W_in", "W_diss")),
)


def engine_values(sim) -> list[float]:
    """The ENGINE_COLUMNS at the current state: p_sys, P_sys, H_sys, R, Rdot (world axes), KE, PE,
    E, W_in, W_diss [J] (``Simulator.invariant_values``)."""
    return sim.invariant_values().tolist()


def engine_columns(sim) -> dict[str, float]:
    """engine.p_sys[1..3], P_sys, H_sys, R, Rdot (world axes), engine.KE, PE, E, W_in, W_diss [J]."""
    return dict(zip(ENGINE_COLUMNS, engine_values(sim)))


def trajectory_row(sim, t: float | None = None) -> dict[str, float]:
    """One trajectory.csv row: time (``t`` or the simulator's), joint states, inputs, engine
    invariants and closed-loop outputs."""
    row = {"time": sim.t if t is None else t}
    names = sim.state_names
    q, qd = sim.q, sim.qd
    row.update(zip(names[: len(q)], q))
    row.update(zip(names[len(q) : len(q) + len(qd)], qd))
    row.update({f"u.{name}": v for name, v in zip(sim.input_names, sim.u)})
    row.update(engine_columns(sim))
    for loop, out in sim.loop_outputs().items():  # closed loops: violation norms and constraint forces
        row[f"loop.{loop}.phi"], row[f"loop.{loop}.phidot"] = out["phi"], out["phidot"]
        for k, lam in enumerate(out["lambda"]):
            row[f"loop.{loop}.lambda[{k + 1}]"] = lam
    return row


def records_row(sim, t: float | None = None) -> dict[str, float]:
    """One records.csv row: time, body/wheel/spring records and the engine.* columns."""
    return dict(zip(records_columns(sim), records_values(sim, t).tolist()))


def records_columns(sim) -> tuple[str, ...]:
    """The columns of records.csv, in ``records_values`` order (fixed by the model)."""
    return ("time", *sim.record_names(), *ENGINE_COLUMNS)


def records_values(sim, t: float | None = None) -> np.ndarray:
    """One records.csv row as an array in ``records_columns`` order: what ``records_row`` holds,
    without a mapping of ~50 entries per body (a 10,000-body row is 490,000 values)."""
    return np.concatenate([[sim.t if t is None else t], sim.record_values(), sim.invariant_values()])


class Rows:
    """Both files' rows from one ``Simulator.outputs`` call per sample (one call of the C core on
    the native backend): ``trajectory_columns`` / ``records_columns`` are those of
    ``trajectory_row`` and ``records_columns(sim)``, in the same order; ``values(t)`` gives the two
    rows as arrays. Closed loops add their phi, phidot, lambda columns (``Simulator.loop_outputs``)."""

    def __init__(self, sim):
        self.sim = sim
        nq, nv, nu = len(sim.q), len(sim.qd), len(sim.input_names)
        names = sim.output_names()
        engine = np.arange(nq + 2 * nv + nu, nq + 2 * nv + nu + len(ENGINE_COLUMNS))
        self._traj = np.concatenate([np.arange(nq + nv + nu), engine])
        self._rec = np.concatenate([np.arange(engine[-1] + 1, len(names)), engine])
        loop_columns = []
        for loop, out in sim.loop_outputs().items():
            loop_columns += [f"loop.{loop}.phi", f"loop.{loop}.phidot"]
            loop_columns += [f"loop.{loop}.lambda[{k + 1}]" for k in range(len(out["lambda"]))]
        self.trajectory_columns = ("time", *(names[k] for k in self._traj), *loop_columns)
        self.records_columns = ("time", *(names[k] for k in self._rec))
        self._n_loop = len(loop_columns)

    def values(self, t: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(trajectory row, records row) at the simulator's current state; time ``t`` or its own."""
        sim = self.sim
        traj, rec = self.split(sim.outputs(), sim.t if t is None else t)
        if self._n_loop:
            traj[1 + self._traj.size :] = [
                v for o in sim.loop_outputs().values() for v in (o["phi"], o["phidot"], *o["lambda"])
            ]
        return traj, rec

    def split(self, out: np.ndarray, time: float) -> tuple[np.ndarray, np.ndarray]:
        """(trajectory row, records row) at ``time`` [s] from one array of ``Simulator.outputs``
        (a rollout's row: mbsfmu/sim/rollout.py); the loop columns, which ``outputs`` does not hold,
        left unset (``has_loops``)."""
        traj = np.empty(len(self.trajectory_columns))
        traj[0] = time
        traj[1 : 1 + self._traj.size] = out[self._traj]
        rec = np.empty(len(self.records_columns))
        rec[0] = time
        rec[1:] = out[self._rec]
        return traj, rec

    @property
    def has_loops(self) -> bool:
        """True if the trajectory has closed-loop columns (Simulator.loop_outputs, not in ``outputs``)."""
        return self._n_loop > 0


__all__ = [
    "ENGINE_COLUMNS",
    "RECORDS_FILE",
    "Rows",
    "TRAJECTORY_FILE",
    "engine_columns",
    "engine_values",
    "records_columns",
    "records_row",
    "records_values",
    "trajectory_row",
]
