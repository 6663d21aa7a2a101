"""Co-simulation of a scenario (``mbsfmu cosim``): the scenario's model runs as its FMU (``mbs``,
built by ``mbsfmu.fmu.build_fmu``) connected to other FMUs, orchestrated by an existing master:
``fmpy`` (fmpy_master.py: a fixed-step loop, Jacobi or Gauss-Seidel) or ``libcosim``
(libcosim_master.py: libcosim's fixed-step algorithm, Jacobi).

The scenario's ``inputs`` schedules drive the model FMU's inputs as in-process (sampled at t_k,
held). Trajectory rows (t_k) hold the model FMU's outputs at t_k under the in-process column names
(``q.<joint>``, ``qd.<joint>``, ``u.<input>`` = the inputs held over [t_k, t_k+1], ``engine.*``),
and every other FMU's outputs as ``<fmu>.<variable>``, as the master propagated them at t_k. Body
records are not FMU outputs: the conservation checks, which recompute momentum and energy from
them, are skipped with a note; references and final values run on the columns.

The ``cosim:`` section is parsed with the scenario (mbsfmu/scenario/cosim_section.py) and checked
against the FMUs' variables (interface.py) before anything is built (fmus.py) and planned (plan.py).
"""

from __future__ import annotations

import time as wallclock
from pathlib import Path

from .. import stops
from ..extras import require
from ..scenario.cosim_section import MBS, SCHEMES
from ..scenario.grid import check_run_length
from ..scenario.progress import Progress
from ..scenario.report import finish_run, make_out_dir
from ..scenario.run import build_simulator
from ..trajectory import TrajectoryWriter
from .errors import CosimError
from .fmpy_master import run_fmpy
from .fmus import build_fmus
from .interface import check_cosim
from .libcosim_master import run_libcosim
from .plan import plan_cosim

MASTERS = ("fmpy", "libcosim")
SKIPPED = (
    "body records are not FMU outputs: the conservation checks recompute momentum and energy from them "
    "(run `mbsfmu run` for them; the model FMU's own drift.* outputs are in report.json, fmu_drift)"
)


def run_cosim(
    scn,
    out_dir: str | Path,
    duration: float | None = None,
    master: str = "fmpy",
    scheme: str | None = None,
    fmu_dir: str | Path | None = None,
    progress: bool = True,
) -> dict:
    """Co-simulate the scenario (module docstring): build or reuse the FMUs, run ``master``
    ("fmpy" or "libcosim") with ``scheme`` (default: the scenario's), write ``trajectory.csv`` row
    by row and ``report.json`` (also after a failure, with what was computed). Returns the report;
    its "passed" says if every check that ran held; "cosim" says how the run was made."""
    if scn.cosim is None:
        raise CosimError(f"scenario {scn.path} has no cosim: section (docs/guides/cosimulation.md)")
    if master not in MASTERS:
        raise CosimError(f"unknown master {master!r}; expected one of {', '.join(MASTERS)}")
    scheme = scheme or scn.cosim.scheme
    if scheme not in SCHEMES:
        raise CosimError(f"unknown scheme {scheme!r}; expected one of {', '.join(SCHEMES)}")
    notes = []
    if master == "libcosim" and scheme == "gauss-seidel":
        notes.append(
            "libcosim's fixed-step algorithm is Jacobi: every FMU steps from the values transferred at t_k, "
            "so the scheme gauss-seidel of the scenario is not applied (a controller's command reaches "
            "the model one step later than in-process)"
        )
        scheme = "jacobi"
    T = scn.duration if duration is None else duration
    check_run_length(T, scn.dt, scn.integrator, cosim=True)
    n_steps = max(1, round(T / scn.dt))
    if master == "libcosim":
        require("cosim", "the libcosim master", "libcosimpy")
        if abs(scn.dt * 1e9 - round(scn.dt * 1e9)) > 1e-6 * scn.dt * 1e9:
            raise CosimError(f"libcosim counts time in whole nanoseconds: dt = {scn.dt!r} s is not one")
    require("cosim", "co-simulation", "fmpy")
    sim = build_simulator(scn)  # the scenario's own checks (initial state, inputs, controller)
    ifs = check_cosim(scn, sim)
    out = make_out_dir(out_dir)
    fmus = build_fmus(scn, fmu_dir, sim)
    plan = plan_cosim(scn, fmus, ifs, sim)
    if master == "libcosim" and any(v.type == "Boolean" for _c, _n, v in plan.other):
        raise CosimError(
            "libcosim's time-series observer keeps no Boolean samples (the rows at t_0 need them): "
            "use --master fmpy for FMUs with Boolean outputs"
        )
    order = scn.cosim.order if scheme == "gauss-seidel" else (MBS, *scn.cosim.fmus)
    start = wallclock.perf_counter()
    bar = Progress(n_steps, progress)
    log: list[tuple[str, int, str]] = []
    (out / "records.csv").unlink(missing_ok=True)  # no body records here: drop a previous run's
    # Ctrl-C and SIGTERM only set a flag: a KeyboardInterrupt raised inside an FMU's own (Python)
    # code would make that FMU fail fatally; the loop stops after the row it is writing instead
    with (
        stops.stoppable(raise_at_once=False) as asked,
        TrajectoryWriter(
            out / "trajectory.csv", ["time", *(c for c, _ in plan.columns), *(c for c, *_ in plan.other)]
        ) as writer,
    ):

        def write(k: int, row: dict) -> None:
            writer.write(row)
            bar.update(k, wallclock.perf_counter() - start)
            if asked["signal"] is not None:
                raise stops.Stop(asked["signal"])

        runner = run_fmpy if master == "fmpy" else run_libcosim
        interrupted = None
        try:
            error, final = runner(plan, scn.dt, n_steps, scheme, order, write, log)
        except KeyboardInterrupt as e:  # the runner has freed its FMUs; keep the rows written
            error, final = None, {}
            interrupted = f"interrupted by {stops.name(e)} at t = " + (
                f"{writer.last_time:.9g} s (last row written)" if writer.n_rows else "0 s (no row written)"
            )
            interrupted_by = stops.signal_name(e)
    bar.close()
    wall = wallclock.perf_counter() - start
    solver = {"n_steps": final.get("solver.n_steps"), "n_rhs": final.get("solver.n_rhs")}
    extra = {
        "cosim": {
            "master": master,
            "scheme": scheme,
            "order": list(order) if scheme == "gauss-seidel" else None,
            "fmus": {
                name: {"path": str(path), "builtin": None if name == MBS else scn.cosim.fmus[name].builtin}
                for name, path in fmus.items()
            },
            "connections": [f"{s}.{sv.name} -> {d}.{dv.name}" for s, sv, d, dv in plan.connections],
            "columns_not_exposed": plan.missing,
            "notes": notes,
            "log": [f"{name}: {_STATUS.get(status, status)}: {msg}" for name, status, msg in log if status >= 1][:50],
        },
        "fmu_drift": {k: v for k, v in final.items() if k.startswith("drift.")},
    }
    if interrupted:
        extra["interrupted"], extra["interrupted_by"] = interrupted, interrupted_by
    skip = "the run was interrupted" if interrupted else SKIPPED if scn.checks else None
    return finish_run(
        scn, out, T, wall, error or interrupted, solver, skip_checks=skip, extra=extra, plot_traj=_with_P_sys(sim.model)
    )


_STATUS = {0: "ok", 1: "warning", 2: "discard", 3: "error", 4: "fatal", 5: "pending"}


def _with_P_sys(model):
    """For the plots only: engine.P_sys = M Rdot (not an FMU output) from the model's total mass."""

    def derive(traj):
        from ..trajectory import Trajectory

        M = float(sum(b.mass for b in model.spec.bodies))
        cols = dict(traj)
        for k in (1, 2, 3):
            cols.setdefault(f"engine.P_sys[{k}]", M * traj[f"engine.Rdot[{k}]"])
        return Trajectory(cols, traj.source)

    return derive


__all__ = ["MASTERS", "run_cosim"]
