"""mbsfmu/stops.py: a SIGINT that arrives while a garbage-collector callback or a weak reference's
callback runs (Dask's scheduler registers a GC callback in the client of a local cluster; the threading
module's weak sets run theirs whenever a thread object dies) is raised after the callback returns, not
inside it, where Python would print "Exception ignored in ..." with a traceback and drop it."""

from __future__ import annotations

import gc
import signal
import sys
import time
import weakref

import pytest

from mbsfmu import stops


def test_a_signal_inside_a_gc_callback_stops_after_it_without_a_traceback(capfd):
    seen = []

    def callback(phase, info):
        if phase == "start" and not seen:
            seen.append(phase)
            signal.raise_signal(signal.SIGINT)  # the handler runs at the next bytecode: in here
            sum(range(1000))

    gc.callbacks.append(callback)
    try:
        with pytest.raises(stops.Stop) as e:
            with stops.stoppable() as state:
                gc.collect()
                assert seen and state["signal"] == signal.SIGINT  # recorded, not raised in the callback
                deadline = time.monotonic() + 60.0  # a bound on the wait, not the condition waited for
                while time.monotonic() < deadline:
                    time.sleep(0.001)  # the deferred signal raises Stop here
    finally:
        gc.callbacks.remove(callback)
    assert e.value.signum == signal.SIGINT
    assert "Exception ignored" not in capfd.readouterr().err


def test_a_signal_inside_a_weak_reference_callback_stops_after_it_without_a_traceback(capfd):
    """Python ignores an exception raised in a weak reference's callback (as in a GC callback), and
    no frame says that code runs in one: the dropped Stop reaches sys.unraisablehook, which raises the
    signal again outside the callback (a Ctrl-C is never lost, nor printed as "Exception ignored")."""

    class Body:
        pass

    seen = []

    def callback(ref):
        seen.append(ref)
        signal.raise_signal(signal.SIGINT)  # the handler runs at the next bytecode: in here
        sum(range(1000))

    obj = Body()
    ref = weakref.ref(obj, callback)
    hook = sys.unraisablehook
    with pytest.raises(stops.Stop) as e:
        with stops.stoppable() as state:
            del obj  # the callback runs now, and the Stop raised in it is dropped by Python
            assert seen == [ref] and state["signal"] == signal.SIGINT
            deadline = time.monotonic() + 60.0  # a bound on the wait, not the condition waited for
            while time.monotonic() < deadline:
                time.sleep(0.001)  # the signal raised again raises Stop here
    assert e.value.signum == signal.SIGINT
    assert "Exception ignored" not in capfd.readouterr().err
    assert sys.unraisablehook is hook  # the previous hook is back


def test_a_signal_elsewhere_stops_at_once():
    with pytest.raises(stops.Stop):
        with stops.stoppable():
            signal.raise_signal(signal.SIGTERM)
            sum(range(1000))
            pytest.fail("not stopped")
