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


def test_a_stop_wrapped_by_the_code_it_interrupted_is_still_the_stop(tmp_path, monkeypatch):
    """A signal while the plots are drawn can land in a module's class definitions, where Python 3.11
    wraps it in a RuntimeError ("Error calling __set_name__"): the run stops (the Stop comes out, as
    from anywhere else in it), not "plots not written" and exit 0 (seen once beside another test run)."""
    from mbsfmu.scenario import plots
    from mbsfmu.scenario.run import run_scenario
    from mbsfmu.scenario.spec import load_scenario
    from tests.support.paths import ROOT

    def interrupted(*args, **kwargs):
        try:
            raise stops.Stop(signal.SIGINT)
        except stops.Stop as e:
            raise RuntimeError("Error calling __set_name__") from e

    monkeypatch.setattr(plots, "plot_run", interrupted)
    scn = load_scenario(ROOT / "scenarios" / "spacecraft_free.yaml")
    assert scn.plots
    with pytest.raises(stops.Stop):
        run_scenario(scn, tmp_path / "o", duration=0.05, progress=False)
    assert stops.wrapped_interrupt(RuntimeError("no signal")) is None
