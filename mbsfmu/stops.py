"""Stops asked from outside the process: Ctrl-C (SIGINT) and SIGTERM (``docker stop``, systemd, batch
schedulers) stop a command the same way: what was computed is kept and reported, the message names
the signal, and the exit code says which one (130, 143: 128 + the signal number, the shell's
convention)."""

from __future__ import annotations

import contextlib
import gc
import signal
import sys
import threading

SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_CODES = {signal.SIGINT: 130, signal.SIGTERM: 143, "SIGINT": 130, "SIGTERM": 143}
NAMES = {signal.SIGINT: "Ctrl-C (SIGINT)", signal.SIGTERM: "SIGTERM"}


class Stop(KeyboardInterrupt):
    """Raised in the main thread when SIGINT or SIGTERM arrives (a KeyboardInterrupt, so every
    place that keeps its work on Ctrl-C keeps it on SIGTERM too); ``signum`` says which."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(NAMES.get(signum, f"signal {signum}"))
        self.signum = signum


def signum_of(e: BaseException) -> int:
    """The signal behind a KeyboardInterrupt (a plain one is Ctrl-C)."""
    return getattr(e, "signum", signal.SIGINT)


def name(e: BaseException) -> str:
    return NAMES.get(signum_of(e), "a signal")


def signal_name(e: BaseException) -> str:
    """ "SIGINT" or "SIGTERM" (report.json's ``interrupted_by``)."""
    return signal.Signals(signum_of(e)).name


def exit_code(e: BaseException) -> int:
    return EXIT_CODES.get(signum_of(e), 130)


def wrapped_interrupt(e: BaseException) -> KeyboardInterrupt | None:
    """The KeyboardInterrupt (a Stop) among ``e``'s causes and contexts, or None: a signal raised
    inside code that wraps whatever it catches (Python 3.11 turns an exception in ``__set_name__``,
    e.g. one raised while a module defines its classes, into a RuntimeError) is still the stop."""
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None


def _in_ignored_context(frame) -> bool:
    """True if ``frame`` runs inside a garbage-collector callback or a finalizer (``__del__``), where
    Python prints an exception as "Exception ignored in ..." with its traceback and drops it (Dask's
    scheduler registers such a callback in the client of a local cluster)."""
    codes = {getattr(getattr(cb, "__func__", cb), "__code__", None) for cb in gc.callbacks}
    while frame is not None:
        if frame.f_code in codes or frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def stoppable(raise_at_once: bool = True):
    """While inside, SIGINT and SIGTERM set ``state["signal"]`` (the first one) and, with
    ``raise_at_once``, raise Stop there and then (20 ms later if the signal arrives in a
    garbage-collector callback or a finalizer, where it would be lost; a Stop that Python drops all
    the same, raised in any other callback it ignores exceptions from, such as a weak reference's,
    reaches ``sys.unraisablehook`` and is raised again 20 ms later instead of being printed);
    without it, the caller polls ``state`` (code that must not be interrupted mid-call, such as an
    FMU's own). Main thread only (elsewhere a no-op); the previous handlers come back on exit."""
    state: dict = {"signal": None}
    raised, active = [False], [True]
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def again_later(signum):
        threading.Timer(0.02, lambda: active[0] and signal.raise_signal(signum)).start()

    def on_signal(signum, frame):
        if state["signal"] is None:
            state["signal"] = signum
        if not raise_at_once or raised[0] or signum != state["signal"]:
            return
        if _in_ignored_context(frame):  # raised here it would be printed and lost: again in 20 ms
            again_later(signum)
            return
        raised[0] = True
        raise Stop(signum)

    def on_unraisable(unraisable):
        if isinstance(unraisable.exc_value, Stop) and active[0]:  # dropped where Python ignores errors
            raised[0] = False
            again_later(unraisable.exc_value.signum)
            return
        previous_hook(unraisable)

    old = {s: signal.signal(s, on_signal) for s in SIGNALS}
    previous_hook, sys.unraisablehook = sys.unraisablehook, on_unraisable
    try:
        yield state
    finally:
        active[0] = False  # a deferred signal not raised yet stays recorded in state, not raised later
        sys.unraisablehook = previous_hook
        for s, h in old.items():
            signal.signal(s, h)
