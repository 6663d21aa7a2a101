"""Where a campaign's runs execute: in this process (``Serial``) or on dask.distributed
(``Dask``: a LocalCluster of single-threaded worker processes on this machine by default, or an
existing cluster's scheduler at ``tcp://host:8786``).

An execution is a context manager with ``slots`` (runs in flight at once) and
``imap_unordered(fn, specs)``, which yields (spec, fn(spec)) as runs finish. ``specs`` is an
iterator consumed lazily: at most a window of ``2 slots + 2`` runs is submitted ahead, so a
campaign of any size holds only that many points and futures (the scheduler's task graph stays
small too). Leaving the context cancels what is still queued and shuts the cluster down, its
worker processes included: on normal exit, on Ctrl-C and on SIGTERM (turned into
KeyboardInterrupt by the command line), so no worker outlives the campaign.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from itertools import islice


@contextlib.contextmanager
def _workers_ignore_sigint():
    """Start worker processes with SIGINT ignored (inherited through exec; Python and asyncio
    then install no KeyboardInterrupt handler in them): a Ctrl-C at the terminal reaches the whole
    process group, and the workers must not die printing tracebacks while the client, which got
    the same Ctrl-C, writes the finished rows and closes the cluster (ending them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


class Serial:
    """Runs one after another in this process (tests, debugging, tiny campaigns)."""

    slots = 1
    name = "serial (this process)"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def imap_unordered(self, fn: Callable, specs: Iterator) -> Iterator:
        for spec in specs:
            yield spec, fn(spec)


class Dask:
    """Runs on dask.distributed: ``scheduler`` an address (``tcp://host:8786``) of a running
    cluster, or None for a LocalCluster of ``workers`` processes (default: the CPU count), one
    thread each (the engine holds the GIL; processes, not threads, run in parallel)."""

    def __init__(self, scheduler: str | None = None, workers: int | None = None):
        self.scheduler, self.workers = scheduler, workers
        self.client = self.cluster = None
        self.slots = 0

    @property
    def name(self) -> str:
        where = self.scheduler or "a LocalCluster"
        return f"dask.distributed on {where} ({self.slots} worker thread(s))"

    def __enter__(self):
        from ..extras import require

        require("campaign", "a campaign on dask.distributed (without --serial)")
        from distributed import Client, LocalCluster

        try:
            if self.scheduler is None:
                import os

                n = self.workers or os.cpu_count() or 1
                with _workers_ignore_sigint():  # random ports (":0", 0): campaigns run side by side
                    self.cluster = LocalCluster(
                        n_workers=n,
                        threads_per_worker=1,
                        processes=True,
                        dashboard_address=":0",
                        scheduler_port=0,
                        silence_logs=logging.CRITICAL,
                    )
                self.client = Client(self.cluster)
            else:
                self.client = Client(self.scheduler, timeout="30s")
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.slots = max(1, sum(self.client.nthreads().values()))
        return self

    def __exit__(self, *exc) -> None:
        # Queued and running runs are not cancelled one by one: closing the client drops their
        # futures, closing the LocalCluster ends its worker processes (an external cluster's
        # scheduler forgets the tasks of a client that left).
        for part in (self.client, self.cluster):
            if part is not None:
                try:
                    part.close(timeout=20)
                except (OSError, TimeoutError, RuntimeError):  # a cluster already gone (CommClosedError is an
                    pass  # OSError): the other part still closes
        self.client = self.cluster = None

    def imap_unordered(self, fn: Callable, specs: Iterator) -> Iterator:
        from distributed import KilledWorker, as_completed

        window = 2 * self.slots + 2
        done = as_completed()

        def submit(spec) -> None:
            f = self.client.submit(fn, spec, pure=False)
            done.add(f)
            specs_of[f.key] = spec

        specs_of: dict = {}
        for spec in islice(specs, window):
            submit(spec)
        for f in done:
            spec = specs_of.pop(f.key)
            try:
                result = f.result()
            except KilledWorker as e:  # the run took its worker down (twice): its row says so
                from .runner import failed_row

                result = failed_row(spec, f"KilledWorker: the run ended its worker process ({e})"[:500])
            f.release()
            nxt = next(specs, None)
            if nxt is not None:
                submit(nxt)
            yield spec, result
