"""mbsfmu/stops.py: a SIGINT that arrives while a garbage-collector callback runs (Dask's scheduler
registers one in the client of a local cluster) is raised after the callback returns, not inside it,
where Python would print "Exception ignored in ..." with a traceback and drop it."""

from __future__ import annotations

import gc
import signal
import time

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


def test_a_signal_elsewhere_stops_at_once():
    with pytest.raises(stops.Stop):
        with stops.stoppable():
            signal.raise_signal(signal.SIGTERM)
            sum(range(1000))
            pytest.fail("not stopped")
