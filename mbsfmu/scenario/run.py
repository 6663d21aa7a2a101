"""The runner of a scenario (spec.py): build its Simulator, step it over the output grid
(grid.py) with the inputs and the sampled controller, write trajectory.csv and records.csv row by
row (and an MCAP recording), then the report (report.py); and the wall-time estimate of a run."""

from __future__ import annotations

import tempfile
import time as wallclock
from dataclasses import replace
from pathlib import Path

from .. import stops
from ..engine.model import Model
from ..engine.native.core import value_formatter
from ..errors import MbsError
from ..sim.pid import JointPID
from ..sim.rows import Rows
from ..sim.simulator import SimulationError, Simulator
from .grid import check_run_length, sample_times
from .progress import Progress
from .report import finish_run, make_out_dir
from .spec import Scenario, scenario_model


def build_simulator(scn: Scenario) -> Simulator:
    """Load the model, apply the initial-state overrides and check input names."""
    model = scn.model
    if model is None:
        model = scenario_model(scn.path, scn.model_inline, scn.model_path, scn.floating_base)
    if scn.gravity is not None or scn.edits:
        from ..engine.spec.edits import edit_spec

        spec = model.spec if scn.gravity is None else replace(model.spec, gravity=scn.gravity)
        for path, value in scn.edits:
            spec = edit_spec(spec, path, value)
        model = Model(spec, source=model.source)
    sim = Simulator(
        model,
        integrator=scn.integrator["method"],
        h_max=scn.integrator["h_max"],
        rtol=scn.integrator["rtol"],
        atol=scn.integrator["atol"],
        **scn.loops.simulator_options(),
    )
    q, qd = model.initial_state()
    problems = []
    for key, vals, vec, slicer in (("q", scn.initial_q, q, model.q_slice), ("qd", scn.initial_qd, qd, model.v_slice)):
        for jname, v in vals.items():
            if jname not in model.joint_index:
                problems.append(f"initial.{key}.{jname}: unknown joint; joints: {', '.join(model.joint_names)}")
                continue
            sl = slicer(jname)
            if len(v) != sl.stop - sl.start:
                problems.append(f"initial.{key}.{jname}: takes {sl.stop - sl.start} value(s), got {len(v)}")
                continue
            vec[sl] = v
    for name in scn.inputs:
        if name not in sim.input_names:
            problems.append(
                f"inputs.{name}: unknown input; model {model.source} has: {', '.join(sim.input_names) or 'none'}"
            )
    for joint in scn.controller:
        if f"{joint}.tau" not in sim.input_names:
            problems.append(
                f"controller.joints.{joint}: not an actuated 1-DoF joint; actuated inputs: "
                f"{', '.join(n for n in sim.input_names if n.endswith('.tau')) or 'none'}"
            )
    if problems:
        raise MbsError(f"scenario {scn.path}:\n  " + "\n  ".join(problems))
    sim.set_configuration(q, qd)
    return sim


def run_scenario(
    scn: Scenario,
    out_dir: str | Path,
    duration: float | None = None,
    progress: bool = True,
    record: str | Path | None = None,
) -> dict:
    """Run, writing ``trajectory.csv`` row by row and ``report.json`` at the end (also after a
    failure or Ctrl-C, with what was computed). Rows at t_k = k dt and at the duration T (the last
    interval shortened when dt does not divide T). Returns the report; its "passed" says if every
    check held; "interrupted" is set when Ctrl-C stopped the run."""
    from ..sim.rows import RECORDS_FILE, TRAJECTORY_FILE
    from ..trajectory import TrajectoryError, TrajectoryWriter, join_trajectories, written_trajectory

    if scn.cosim is not None:
        external = [
            (c.src[0], c.dst[1])
            for c in scn.cosim.connections
            if c.dst[0] == "mbs" and c.src[0] != "mbs" and scn.cosim.fmus[c.src[0]].builtin is None
        ]
        if external:
            raise MbsError(
                f"scenario {scn.path}: FMU {external[0][0]!r} drives mbs.{external[0][1]} (cosim.fmus): "
                "`mbsfmu run` cannot run it in-process; use `mbsfmu cosim`"
            )
    T = scn.duration if duration is None else duration
    check_run_length(T, scn.dt, scn.integrator, controller=bool(scn.controller))
    times = sample_times(T, scn.dt)
    out = make_out_dir(out_dir)
    sim = build_simulator(scn)
    n_steps = len(times) - 1
    error = interrupted = interrupted_by = None
    start = wallclock.perf_counter()
    bar = Progress(n_steps, progress)
    recorder = None
    if record is not None:
        from ..extras import require
        from .mcap import McapRecorder

        require("record", "--record")

        try:
            recorder = McapRecorder(record, sim.model)
        except OSError as e:
            raise MbsError(f"--record {record}: cannot write the recording: {e.strerror or e}") from None
    pid = JointPID(scn.controller, scn.dt) if scn.controller else None
    joints = list(scn.controller)
    (out / RECORDS_FILE).unlink(missing_ok=True)  # a previous run's records must not be checked with this run
    rows = Rows(sim)
    fmt = value_formatter()
    records = TrajectoryWriter(out / RECORDS_FILE, rows.records_columns, fmt) if scn.records else None
    kept: tuple[list, list] = ([], [])  # the rows written, checked as they are (written_trajectory)
    with TrajectoryWriter(out / TRAJECTORY_FILE, rows.trajectory_columns, fmt) as writer:
        try:
            for k, t in enumerate(times):
                for name, sched in scn.inputs.items():
                    sim.set_input(name, sched(t))
                if pid is not None:
                    q, qd = sim.q, sim.qd
                    u = pid(
                        t,
                        {j: q[sim.model.q_slice(j)][0] for j in joints},
                        {j: qd[sim.model.v_slice(j)][0] for j in joints},
                    )
                    for j, value in u.items():
                        sim.set_input(f"{j}.tau", value)
                row, record = rows.values()
                writer.write(row)
                kept[0].append(row)
                if records is not None:
                    records.write(record)
                    kept[1].append(record)
                if recorder is not None:
                    recorder.write(sim)
                if k < n_steps:
                    sim.advance_to(times[k + 1])
                bar.update(k, wallclock.perf_counter() - start)
        except (SimulationError, TrajectoryError) as e:
            error = str(e)
        except KeyboardInterrupt as e:  # Ctrl-C or SIGTERM (mbsfmu/stops.py): keep the rows written
            last = writer.last_time if writer.n_rows else None
            interrupted = f"interrupted by {stops.name(e)} at t = {sim.t:.9g} s" + (
                "" if last is None else f" (last row written: t = {last:.9g} s)"
            )
            interrupted_by = stops.signal_name(e)
        finally:
            if recorder is not None:
                recorder.close()
            if records is not None:
                records.close()
    bar.close()
    from .plots import joint_kinds

    extra = {"interrupted": interrupted, "interrupted_by": interrupted_by} if interrupted else {}

    def written():  # in finish_run's first stage: a stop while the rows are stacked still gets its report
        memory = written_trajectory(out / TRAJECTORY_FILE, rows.trajectory_columns, kept[0])
        if memory is not None and records is not None:
            with_records = written_trajectory(out / RECORDS_FILE, rows.records_columns, kept[1])
            memory = None if with_records is None else join_trajectories(memory, with_records)
        for held in kept:  # stacked (copied) now: the rows are not held twice while checking and plotting
            held.clear()
        return memory

    complete = error is None and not interrupted
    if not complete:  # a run that stopped early is read back from its files, as it always was
        for held in kept:
            held.clear()
    if sim.model.notes:  # what the model reader left out or repaired
        extra["model_notes"] = list(sim.model.notes)
    return finish_run(
        scn,
        out,
        T,
        wallclock.perf_counter() - start,
        error or interrupted,
        {"n_steps": sim.n_steps, "n_rhs": sim.n_rhs},
        skip_checks="the run was interrupted" if interrupted else None,
        extra=extra,
        kinds=joint_kinds(sim.model),
        written=written if complete else None,
    )


FIRST_CAP = 5.0  # [s] of wall time: a first output interval longer than this gets no estimate
MIN_TIMED = 2  # output intervals timed after the first, whatever the budget (one alone varied 0.2-0.8 s)


def estimate_wall(scn: Scenario, duration: float | None = None, budget: float = 0.3) -> tuple[float | None, str]:
    """(estimated wall time [s] or None, how) of ``run_scenario`` over ``duration`` (default: the
    scenario's): the run's own loop (inputs, the rows formatted and written, step) is timed on
    this machine over its output intervals after the first for about ``budget`` s of wall time, at
    least MIN_TIMED of them, and the wall time per simulated second is extrapolated to the duration. The
    first interval is never counted: it carries the start-up (imports, compilation, the integrator's
    first step size), which made the extrapolation 5-8x high where it was all there was (issue 37
    item 8: fourbar_partitioning). A first interval longer than FIRST_CAP gets no estimate (None): a
    second one would cost as much again. The dynamics may get faster or slower later (an adaptive
    step follows them), so this is an estimate, not a promise."""
    T = scn.duration if duration is None else duration
    with tempfile.TemporaryDirectory(prefix="mbsfmu-estimate-") as tmp:
        return _probe(scn, T, budget, Path(tmp))


def _probe(scn: Scenario, T: float, budget: float, tmp: Path) -> tuple[float | None, str]:
    """estimate_wall's timing: the run loop's work per output interval (inputs, the rows formatted
    and written unbuffered to files in tmp, as run_scenario writes them, the step)."""
    from ..sim.rows import RECORDS_FILE, TRAJECTORY_FILE
    from ..trajectory import TrajectoryWriter

    times = sample_times(T, scn.dt)
    sim = build_simulator(scn)
    rows = Rows(sim)
    fmt = value_formatter()
    writer = TrajectoryWriter(tmp / TRAJECTORY_FILE, rows.trajectory_columns, fmt)
    records = TrajectoryWriter(tmp / RECORDS_FILE, rows.records_columns, fmt) if scn.records else None

    def interval(k: int) -> None:
        for name, sched in scn.inputs.items():
            sim.set_input(name, sched(times[k]))
        row, record = rows.values()
        writer.write(row)
        if records is not None:
            records.write(record)
        sim.advance_to(times[k + 1])

    try:
        return _timed(interval, times, T, budget)
    finally:
        writer.close()
        if records is not None:
            records.close()


def _timed(interval, times, T: float, budget: float) -> tuple[float | None, str]:
    """estimate_wall's (wall, how) from interval(k), which runs output interval k of times."""
    n = len(times) - 1
    try:
        t0 = wallclock.perf_counter()
        interval(0)
        start = wallclock.perf_counter()
        if n == 1:  # the probe was the whole run
            return start - t0, "measured: the probe ran the whole duration"
        if start - t0 > FIRST_CAP:
            return None, (
                f"not estimated: the first output interval alone took {start - t0:.2g} s of wall time; the "
                "progress bar shows the time left once the run is under way"
            )
        k = 1
        while k < n and (k <= MIN_TIMED or wallclock.perf_counter() - start < budget):
            interval(k)
            k += 1
    except SimulationError as e:
        raise MbsError(f"the probe run failed: {e}") from None
    end = wallclock.perf_counter()
    if k == n:  # the probe was the whole run: its time, the first interval included
        return end - t0, "measured: the probe ran the whole duration"
    wall = end - start
    return wall / (times[k] - times[1]) * T, (
        f"extrapolated from {times[k] - times[1]:.3g} s simulated in {wall:.2g} s of wall time on this "
        f"machine, first interval not counted"
    )
