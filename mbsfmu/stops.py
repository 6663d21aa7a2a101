"""Stops asked from outside the process: Ctrl-C (SIGINT) and SIGTERM (``docker stop``, systemd, batch
schedulers) stop a command the same way: what was computed is kept and reported, the message names
the signal, and the exit code says which one (130, 143: 128 + the signal number, the shell's
convention)."""

from __future__ import annotations

import contextlib
import signal
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


@contextlib.contextmanager
def stoppable(raise_at_once: bool = True):
    """While inside, SIGINT and SIGTERM set ``state["signal"]`` (the first one) and, with
    ``raise_at_once``, raise Stop there and then; without it, the caller polls ``state`` (code
    that must not be interrupted mid-call, such as an FMU's own). Main thread only (elsewhere a
    no-op); the previous handlers come back on exit."""
    state: dict = {"signal": None}
    if threading.current_thread() is not threading.main_thread():
        yield state
        return

    def on_signal(signum, frame):
        first = state["signal"] is None
        if first:
            state["signal"] = signum
        if raise_at_once and first:
            raise Stop(signum)

    old = {s: signal.signal(s, on_signal) for s in SIGNALS}
    try:
        yield state
    finally:
        for s, h in old.items():
            signal.signal(s, h)
