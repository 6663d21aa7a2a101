"""The fmpy master: fmpy's FMU2Slave API in a fixed-step loop on the grid t_k = k dt, every FMU
stepped by h_k = t_k+1 - t_k from t_k. ``scheme: jacobi``: read every FMU's outputs at t_k,
propagate the connections, set the inputs, step every FMU. ``scheme: gauss-seidel``: the FMUs step
one after the other in ``order``, each FMU's inputs set just before its step from its sources'
outputs at that moment (so a controller ordered before ``mbs`` feeds it the command it computed at
t_k)."""

from __future__ import annotations

import shutil

from ..scenario.cosim_section import MBS
from .fmus import extracted
from .plan import Plan


class _FmpyLog:
    """fmpy logger callbacks that keep (instance, status, message)."""

    def __init__(self, sink: list):
        import ctypes

        from fmpy.fmi2 import (
            fmi2CallbackAllocateMemoryTYPE,
            fmi2CallbackFreeMemoryTYPE,
            fmi2CallbackFunctions,
            fmi2CallbackLoggerTYPE,
        )

        def logger(_env, name, status, _category, message):
            sink.append(
                ((name or b"").decode(errors="replace"), int(status), (message or b"").decode(errors="replace"))
            )

        libc = ctypes.CDLL(None)
        self.callbacks = fmi2CallbackFunctions()
        self.callbacks.logger = fmi2CallbackLoggerTYPE(logger)
        self.callbacks.allocateMemory = fmi2CallbackAllocateMemoryTYPE(libc.calloc)
        self.callbacks.freeMemory = fmi2CallbackFreeMemoryTYPE(libc.free)


def _get(f, typ: str, vrs: list[int]) -> list:
    if not vrs:
        return []
    return {"Real": f.getReal, "Integer": f.getInteger, "Boolean": f.getBoolean}[typ](vrs)


def _set(f, typ: str, vrs: list[int], values: list) -> None:
    if vrs:
        {"Real": f.setReal, "Integer": f.setInteger, "Boolean": f.setBoolean}[typ](vrs, values)


def run_fmpy(plan: Plan, dt: float, n: int, scheme: str, order: tuple, write, log: list):
    """The fmpy fixed-step loop (module docstring). Returns (error or None, final model FMU values)."""
    from fmpy import extract, read_model_description
    from fmpy.fmi2 import FMU2Slave

    sink = _FmpyLog(log)
    insts: dict = {}
    reads = plan.reads(observe=False)  # name -> type -> [vr]: what rows and connections need
    feeds = {name: [(s, sv, dv) for s, sv, d, dv in plan.connections if d == name] for name in plan.fmus}
    sched = plan.scheduled
    in_vrs = [v.vr for _, v in plan.inputs]
    error, final, where = None, {}, "instantiate"
    scratch = []  # extracted FMU files, removed at the end

    def read(name: str, values: dict) -> None:
        for typ, vrs in reads[name].items():
            for vr, x in zip(vrs, _get(insts[name], typ, vrs)):
                values[name, vr] = x

    def set_inputs(name: str, t: float, values: dict) -> None:
        by_type: dict = {}
        for s, sv, dv in feeds[name]:
            by_type.setdefault(dv.type, ([], []))
            by_type[dv.type][0].append(dv.vr)
            by_type[dv.type][1].append(values[s, sv.vr])
        if name == MBS and sched:
            by_type.setdefault("Real", ([], []))
            for v, s in sched:
                by_type["Real"][0].append(v.vr)
                by_type["Real"][1].append(float(s(t)))
        for typ, (vrs, xs) in by_type.items():
            _set(insts[name], typ, vrs, xs)

    def record(k: int, t: float, values: dict) -> None:
        read(MBS, values)
        write(k, plan.row(t, values, dict(zip(in_vrs, _get(insts[MBS], "Real", in_vrs)))))

    try:
        for name, path in plan.fmus.items():
            md = read_model_description(str(path), validate=False)
            where = f"{name}: instantiate"
            if name in plan.cached:
                folder = extracted(path)
            else:
                folder = extract(str(path))
                scratch.append(folder)
            f = FMU2Slave(
                guid=md.guid,
                unzipDirectory=str(folder),
                modelIdentifier=md.coSimulation.modelIdentifier,
                instanceName=name,
            )
            f.instantiate(callbacks=sink.callbacks, loggingOn=False)
            insts[name] = f
            f.setupExperiment(startTime=0.0)
            for v, value in plan.parameters.get(name, []):
                _set(f, v.type, [v.vr], [value])
            where = f"{name}: initialisation"
            f.enterInitializationMode()
            f.exitInitializationMode()
        for k in range(n + 1):
            t, last = k * dt, k == n
            h = (k + 1) * dt - t
            values: dict = {}
            if scheme == "jacobi":
                for name in plan.fmus:
                    read(name, values)
                for name in plan.fmus:
                    where = f"{name}: set inputs at t = {t!r} s"
                    set_inputs(name, t, values)
                record(k, t, values)
                if not last:
                    for name in order:
                        where = f"{name}: fmi2DoStep from t = {t!r} s"
                        insts[name].doStep(currentCommunicationPoint=t, communicationStepSize=h)
            else:
                for name in order:
                    for s in {s for s, _sv, _dv in feeds[name]}:
                        read(s, values)
                    where = f"{name}: set inputs at t = {t!r} s"
                    set_inputs(name, t, values)
                    if name == MBS:
                        for other in plan.fmus:
                            if other != MBS:
                                read(other, values)
                        record(k, t, values)
                        if last:
                            break
                    where = f"{name}: fmi2DoStep from t = {t!r} s"
                    insts[name].doStep(currentCommunicationPoint=t, communicationStepSize=h)
    except Exception as e:  # noqa: BLE001 - fmpy: FMICallException for fmi2Discard/Error/Fatal, a plain Exception
        error = _fmu_error(where, e, log)  # when fmi2Instantiate fails; the run stops, its rows stay
    finally:
        if MBS in insts:
            try:
                final = plan.final_values(lambda typ, vrs: _get(insts[MBS], typ, vrs))
            except Exception:  # noqa: BLE001 - fmpy's FMICallException: an instance in fmi2Error/Fatal answers nothing
                final = {}
        for f in insts.values():
            for end in (f.terminate, f.freeInstance):
                try:
                    end()
                except Exception:  # noqa: BLE001 - as above: a failed instance may refuse fmi2Terminate; free it anyway
                    pass
        for folder in scratch:
            shutil.rmtree(folder, ignore_errors=True)
    return error, final


def _fmu_error(where: str, e: Exception, log: list) -> str:
    name = where.split(":")[0]
    msgs = [m for n, s, m in log if n == name and s >= 2] or [m for _n, s, m in log if s >= 2]
    return f"{where} failed ({str(e).rstrip('.')})" + (f": {msgs[-1]}" if msgs else "")


__all__ = ["run_fmpy"]
