"""The libcosim master: libcosimpy's execution with libcosim's fixed-step algorithm (Jacobi: every
FMU steps from the inputs transferred at t_k; ``gauss-seidel`` is not available there, run_cosim
falls back to Jacobi with a note)."""

from __future__ import annotations

from pathlib import Path

from ..scenario.cosim_section import MBS
from .errors import CosimError
from .plan import FINAL, Plan


def run_libcosim(plan: Plan, dt: float, n: int, scheme: str, order: tuple, write, log: list):
    """libcosim's fixed-step (Jacobi) algorithm through libcosimpy: the connections are libcosim's,
    the scheduled inputs an override manipulator's, the rows its observers' (a time-series observer
    for the initial values at t_0, the last-value observer after each step). Returns (error or None,
    final model FMU values)."""
    from libcosimpy.CosimEnums import CosimVariableType
    from libcosimpy.CosimExecution import CosimExecution
    from libcosimpy.CosimLogging import CosimLogLevel, log_output_level
    from libcosimpy.CosimManipulator import CosimManipulator
    from libcosimpy.CosimObserver import CosimObserver
    from libcosimpy.CosimSlave import CosimLocalSlave

    log_output_level(CosimLogLevel.WARNING)
    step_ns = round(dt * 1e9)
    ex = CosimExecution.from_step_size(step_size=step_ns)
    slaves, idx = [], {}
    for name, path in plan.fmus.items():
        slave = CosimLocalSlave(fmu_path=str(Path(path).resolve()), instance_name=name)
        slaves.append(slave)
        idx[name] = ex.add_local_slave(local_slave=slave)
        if idx[name] < 0:
            return f"{name}: libcosim cannot load {path}: {_last_error()}", {}
    for name, params in plan.parameters.items():
        for v, value in params:
            set_initial = {
                "Real": ex.real_initial_value,
                "Integer": ex.integer_initial_value,
                "Boolean": ex.boolean_initial_value,
            }[v.type]
            if not set_initial(idx[name], v.vr, value):
                return f"{name}: libcosim rejects {v.name} = {value!r}: {_last_error()}", {}
    for s, sv, d, dv in plan.connections:
        connect = {
            "Real": ex.connect_real_variables,
            "Integer": ex.connect_integer_variables,
            "Boolean": ex.connect_boolean_variables,
        }[sv.type]
        if connect(idx[s], sv.vr, idx[d], dv.vr) != 0:  # libcosimc's status (0 = success), not a bool
            return f"libcosim cannot connect {s}.{sv.name} -> {d}.{dv.name}: {_last_error()}", {}
    manip = CosimManipulator.create_override()
    ex.add_manipulator(manipulator=manip)
    last = CosimObserver.create_last_value()
    ex.add_observer(observer=last)
    series = CosimObserver.create_time_series()
    ex.add_observer(observer=series)
    wanted = plan.reads(observe=True)
    kinds = {"Real": CosimVariableType.REAL, "Integer": CosimVariableType.INTEGER, "Boolean": CosimVariableType.BOOLEAN}
    for name, by in wanted.items():
        for typ, vrs in by.items():
            for vr in vrs:
                series.start_time_series(idx[name], vr, kinds[typ])
    feeds = {dv.vr: (s, sv.vr) for s, sv, d, dv in plan.connections if d == MBS}
    sched = {v.vr: s for v, s in plan.scheduled}

    def observed_last() -> dict:
        values = {}
        for name, by in wanted.items():
            for typ, vrs in by.items():
                get = {
                    "Real": last.last_real_values,
                    "Integer": last.last_integer_values,
                    "Boolean": last.last_boolean_values,
                }[typ]
                values.update({(name, vr): x for vr, x in zip(vrs, get(idx[name], vrs))})
        return values

    def row(k: int, values: dict) -> dict:
        t = k * dt
        held = {}
        for _c, v in plan.inputs:  # what libcosim holds over [t_k, t_k+1]: transferred, overridden or kept
            held[v.vr] = (
                values[feeds[v.vr]] if v.vr in feeds else float(sched[v.vr](t)) if v.vr in sched else values[MBS, v.vr]
            )
        return plan.row(t, values, held)

    error, final, done = None, {}, 0
    try:
        for k in range(n):
            if sched and not manip.slave_real_values(idx[MBS], list(sched), [float(s(k * dt)) for s in sched.values()]):
                error = f"libcosim rejects the scheduled inputs at t = {k * dt!r} s: {_last_error()}"
                break
            if not ex.step(1):
                error = f"libcosim step from t = {k * dt!r} s failed: {_last_error()}"
                break
            if k == 0:
                write(0, row(0, _first_samples(series, idx, wanted)))
                for name, by in wanted.items():
                    for typ, vrs in by.items():
                        for vr in vrs:
                            series.stop_time_series(idx[name], vr, kinds[typ])
            write(k + 1, row(k + 1, observed_last()))
            done = k + 1
    except CosimError as e:
        error = str(e)
    finally:
        if done:
            values = observed_last()
            final = {name: values[MBS, plan.ifs[MBS][name].vr] for name in FINAL if name in plan.ifs[MBS]}
        del ex, slaves
    return error, final


def _last_error() -> str:
    """libcosim's last error message, on one line. libcosimpy has no public accessor for libcosimc's
    cosim_last_error_message: its own classes call ``libcosimpy._internal.get_last_error_message``,
    as this function does, the only private use (checked in libcosimpy 0.0.6, installed, and in its
    repository's newer sources, where the function is still internal)."""
    from libcosimpy._internal import get_last_error_message

    return " ".join(get_last_error_message().split())


def _first_samples(series, idx: dict, wanted: dict) -> dict:
    """The values at step 0 (after initialisation) from a time-series observer, read after step 1.
    libcosimpy's accessor (0.0.6) trims what it read by counting step numbers equal to 0 as empty
    slots, so asked for step 0's sample alone it returns nothing; asked for two samples from step 0
    (steps 0 and 1 recorded) it returns step 0's, as it would with the trimming fixed."""
    out = {}
    for name, by in wanted.items():
        for typ, vrs in by.items():
            get = {"Real": series.time_series_real_samples, "Integer": series.time_series_integer_samples}[typ]
            for vr in vrs:
                try:
                    _times, steps, values = get(idx[name], vr, from_step=0, sample_count=2)
                except AssertionError:  # libcosimpy's way of saying that libcosimc returned no samples
                    steps, values = [], []
                if not steps or steps[0] != 0:
                    raise CosimError(f"libcosim kept no initial sample of {name} variable {vr}")
                out[name, vr] = values[0]
    return out


__all__ = ["run_libcosim"]
