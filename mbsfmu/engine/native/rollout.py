"""Batched rollouts in the C core (rollout.c, mbs_rollout.h) from Python: one call runs many runs of
one model across threads, with the GIL released (a ctypes call of the core library).

``run_rollouts`` takes the template cores (one for every run, or one per run) and arrays already
checked by the caller (mbsfmu/sim/rollout.py checks what a user gives); it returns the states, the
chosen outputs and each run's status. Ctrl-C or SIGTERM (mbsfmu/stops.py) while it runs: every run
ends after its current step, and the KeyboardInterrupt goes on with what was computed as its
``rollout`` attribute (the same dict, the runs stopped marked so).
"""

from __future__ import annotations

import ctypes as C
import os
import threading

import numpy as np

from ...errors import InputError
from .core import ERR, Core, lib

OK, DISCARD, ERROR, STOPPED, NOT_RUN = 0, 1, 2, 3, 4  # mbs_rollout.h's per-run status
WAKE = 0.05  # [s] between looks at the signals while the core runs (a finished call ends the wait at once)
MSG = 512  # bytes of each run's message (instance.h MBS_MSG: a step's whole message)


class RolloutArgs_C(C.Structure):
    """mbs_rollout_args of mbs_rollout.h."""

    _fields_ = [
        ("n_runs", C.c_int),
        ("n_steps", C.c_int),
        ("dt", C.c_double),
        ("t", C.c_void_p),
        ("x0", C.c_void_p),
        ("u", C.c_void_p),
        ("u_per_run", C.c_int),
        ("n_sel", C.c_int),
        ("sel", C.c_void_p),
        ("n_b", C.c_int),
        ("n_w", C.c_int),
        ("bodies", C.c_void_p),
        ("wheels", C.c_void_p),
        ("x_out", C.c_void_p),
        ("y_out", C.c_void_p),
        ("status", C.c_void_p),
        ("n_done", C.c_void_p),
        ("stats", C.c_void_p),
        ("msgs", C.c_void_p),
        ("n_msg", C.c_size_t),
        ("stop", C.c_void_p),
    ]


def default_threads() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _ptr(a: np.ndarray | None) -> int | None:
    return None if a is None else a.ctypes.data


def run_rollouts(
    templates: list[Core],
    n_runs: int,
    n_steps: int,
    *,
    dt: float = 0.0,
    t: np.ndarray | None = None,
    x0: np.ndarray | None = None,
    u: np.ndarray | None = None,
    sel: np.ndarray | None = None,
    bodies: np.ndarray | None = None,
    wheels: np.ndarray | None = None,
    threads: int = 1,
    states: bool = True,
) -> dict:
    """n_runs rollouts of n_steps steps (mbs_rollout): each from a copy of its template (``templates``:
    one Core, or one per run), by ``dt`` [s] or over the times ``t`` (n_steps + 1,) [s]; x0 (n_runs,
    nx) or None (the templates' states); u (n_steps, n_u) shared or (n_runs, n_steps, n_u), or None
    (the templates' inputs); sel: int32 indices into the row of Core.outputs(bodies, wheels) (q, qd,
    u, qdd, engine values, then the records of bodies and wheels). Every array float64 (int32 for
    indices), C-contiguous, of those shapes (checked by the caller). Returns {"x": (n_runs, n_steps + 1,
    nx) or None, "y": (n_runs, n_steps + 1, n_sel), "status": (n_runs,) int32, "n_done": (n_runs,)
    steps completed, "stats": (n_runs, 2) internal steps and rhs evaluations, "messages": [str]}.
    InputError with the core's reason for arguments it rejects."""
    L = lib()
    cores = list(templates)
    nx = cores[0].nx
    sel = np.zeros(0, np.int32) if sel is None else sel
    bodies = np.zeros(0, np.int32) if bodies is None else bodies
    wheels = np.zeros(0, np.int32) if wheels is None else wheels
    out = {
        "x": np.empty((n_runs, n_steps + 1, nx)) if states else None,
        "y": np.empty((n_runs, n_steps + 1, sel.size)),
        "status": np.full(n_runs, NOT_RUN, np.int32),
        "n_done": np.zeros(n_runs, np.int32),
        "stats": np.zeros((n_runs, 2), np.int64),
    }
    msgs = np.zeros((n_runs, MSG), np.uint8)
    stop = np.zeros(1, np.int32)
    args = RolloutArgs_C(
        n_runs,
        n_steps,
        float(dt),
        _ptr(t),
        _ptr(x0),
        _ptr(u),
        int(u is not None and u.ndim == 3),
        sel.size,
        _ptr(sel),
        bodies.size,
        wheels.size,
        _ptr(bodies),
        _ptr(wheels),
        _ptr(out["x"]),
        _ptr(out["y"]),
        _ptr(out["status"]),
        _ptr(out["n_done"]),
        _ptr(out["stats"]),
        _ptr(msgs),
        MSG,
        _ptr(stop),
    )
    handles = (C.c_void_p * len(cores))(*(c.handle for c in cores))
    threads = max(1, min(int(threads), 256, max(1, n_runs)))
    n_work = L.mbs_rollout_work(handles, len(cores), C.addressof(args), threads)
    err = C.create_string_buffer(ERR)
    work = np.empty(max(n_work, 8) // 8 + 1)
    rc = [None]
    done = threading.Event()

    def call() -> None:
        try:
            rc[0] = L.mbs_rollout(
                handles, len(cores), C.addressof(args), threads, work.ctypes.data, work.nbytes, err, ERR
            )
        finally:
            done.set()

    def result() -> dict:
        if rc[0] != OK:
            raise InputError(f"rollout: {err.value.decode(errors='replace')}")
        out["messages"] = [bytes(m).split(b"\0", 1)[0].decode(errors="replace") for m in msgs]
        return out

    if threading.current_thread() is not threading.main_thread():
        call()  # signals reach the main thread only: nothing to watch for here
        return result()
    # the call on a thread of its own, this one waiting on its end (the GIL is free while the core runs)
    # and looking at the signals every WAKE s: a signal the kernel gives another thread wakes no wait.
    # Not Thread.join: interrupted, Python 3.11's marks a running thread as ended.
    try:
        threading.Thread(target=call, name="mbsfmu-rollout", daemon=True).start()  # waits for the thread to run
        while not done.wait(WAKE):
            pass
    except KeyboardInterrupt as e:
        stop[0] = 1  # every run ends after its current step; the runs not begun are marked so
        while not done.is_set():
            try:
                done.wait(WAKE)
            except KeyboardInterrupt:
                continue
        e.rollout = result()
        raise
    return result()
