"""Where a campaign's runs execute: in this process (``Serial``) or on dask.distributed
(``Dask``: a LocalCluster of single-threaded worker processes on this machine by default, or an
existing cluster's scheduler at ``tcp://host:8786``).

An execution is a context manager with ``slots`` (runs in flight at once) and ``imap_unordered(fn,
specs, n)``, which yields (spec, fn(spec)) as runs finish. ``specs`` is an iterator consumed lazily
(``n``: how many it holds, a hint for the batch size). On Dask the runs go in batches, one task per
batch (``batch_size``: about 16 batches per worker thread, at most MAX_BATCH runs, and never more
than MAX_TASKS tasks, so the scheduler sees thousands of tasks, not millions, and each task's
overhead, a few ms, is shared by its runs), and at most a window of ``2 slots + 2`` batches is
submitted ahead, so a campaign of any size holds only that many points and futures (the scheduler's
task graph stays small too). A batch that ends its worker process is split: each of its runs is
tried again as a task of its own; a run whose worker ended while other runs of ours were on it too
(dask blames every task on a worker it loses) is tried once more with nothing of ours beside it, so
only the run that crashes becomes a KilledWorker row, never a run that shared its worker. Leaving the context
cancels what is still queued and shuts the cluster down, its worker processes included: on normal
exit, on Ctrl-C and on SIGTERM (turned into KeyboardInterrupt by the command line), so no worker
outlives the campaign (a Client given by the caller is left open).

Nothing waits in silence on a cluster: an unreachable scheduler, no worker within ``timeout``
seconds (at the start or later, every worker gone), a scheduler lost mid-campaign and a worker
that cannot run the campaign (mbsfmu/campaign/provision.py) each raise ``ClusterError`` naming
the address or the worker and what is wrong.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator
from itertools import islice

from ..errors import MbsError

# A run that ends its worker process is tried on ALLOWED_FAILURES + 1 workers, then is a row with
# a KilledWorker error (dask's default, 3, cost a crashing run 4 worker restarts). An external
# cluster's scheduler counts with its own setting (distributed.scheduler.allowed-failures).
ALLOWED_FAILURES = 1
DEFAULT_TIMEOUT = 60.0  # [s] to reach the scheduler, and to have a worker (at the start, or again)
MAX_BATCH = 64  # runs per task, unless MAX_TASKS needs more: a batch lost with its worker is rerun whole
BATCHES_PER_SLOT = 16  # the last batches leave slots idle for at most ~1/16 of the campaign
MAX_TASKS = 10_000  # tasks per campaign at most (up to MAX_RUNS_PER_TASK): thousands of tasks, never millions
MAX_RUNS_PER_TASK = 1_000  # so a 4e8-point sweep is batches of 1000, not of 40,000


def batch_size(n: int, slots: int) -> int:
    """Runs per task for ``n`` runs on ``slots`` worker threads: n / (16 slots) within 1..MAX_BATCH,
    and at least n / MAX_TASKS (a 100-node cluster has too many slots for 16 batches each to share a
    task's cost), at most MAX_RUNS_PER_TASK."""
    spread = min(MAX_BATCH, n // (BATCHES_PER_SLOT * max(1, slots)))
    return max(1, min(MAX_RUNS_PER_TASK, max(-(-n // MAX_TASKS), spread)))


def batched(specs: Iterator, size: int, ramp: bool = True) -> Iterator[tuple]:
    """``specs`` in tuples of ``size``; with ``ramp`` the first ones of 1, 2, 4, ... runs, so the first
    results (and the progress line's ETA, and what a Ctrl-C keeps) come after a run, not a batch."""
    k = 1 if ramp else size
    while batch := tuple(islice(specs, k)):
        yield batch
        k = min(size, 2 * k)


def run_each(fn: Callable, specs: tuple) -> list:
    """A batch's task on a worker: ``fn.batch(specs)`` where ``fn`` has one (runner.Runs: the
    batched path), else [fn(spec) for spec in specs]."""
    many = getattr(fn, "batch", None)
    return many(specs) if many is not None else [fn(spec) for spec in specs]


class ClusterError(MbsError):
    """The cluster cannot run the campaign (or stopped running it): the message says why."""


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


def ignore_given_up_fetches(loop, context: dict) -> None:
    """Exception handler of the campaign client's event loop: a result fetch that ``Dask.result``
    gave up (every worker gone) ends later in distributed's AllExit, never retrieved, which the
    ClusterError has said already; anything else is reported as asyncio does."""
    from distributed.client import AllExit

    if isinstance(context.get("exception"), AllExit):
        return
    loop.default_exception_handler(context)


def quiet_logs(package: str) -> dict[str, int]:
    """Raise the loggers of ``package`` to CRITICAL; their previous levels {name: level}. In a
    campaign the client's own log lines (reconnection attempts and their tracebacks) repeat what
    ClusterError says once."""
    names = [package, *(n for n in logging.root.manager.loggerDict if n.startswith(package + "."))]
    levels = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.CRITICAL)
    return levels


class Serial:
    """Runs one after another in this process (tests, debugging, tiny campaigns)."""

    slots = 1
    name = "serial (this process)"

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def check_workers(self, files: dict[str, str]) -> None:
        """Nothing to prove: the runs execute in this process."""

    def imap_unordered(self, fn: Callable, specs: Iterator, n: int | None = None) -> Iterator:
        """(spec, fn(spec)) one by one; with ``fn.batch`` in batches of 1, 2, 4, ... MAX_BATCH runs."""
        if getattr(fn, "batch", None) is None:
            for spec in specs:
                yield spec, fn(spec)
            return
        for batch in batched(specs, MAX_BATCH):
            yield from zip(batch, run_each(fn, batch))


class Dask:
    """Runs on dask.distributed: ``scheduler`` an address (``tcp://host:8786``) of a running
    cluster, an existing ``distributed.Client`` (dask-jobqueue, Kubernetes: used as it is, left
    open), or None for a LocalCluster of ``workers`` processes (default: the CPU count), one
    thread each (the engine holds the GIL; processes, not threads, run in parallel). timeout [s]:
    how long to wait for the scheduler to answer and for a worker to be there. batch: runs per
    task (None: ``batch_size``)."""

    def __init__(
        self,
        scheduler=None,
        workers: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        batch: int | None = None,
    ):
        if batch is not None and not (isinstance(batch, int) and batch >= 1):
            raise MbsError(f"batch: runs per task must be a positive integer, got {batch!r}")
        self.given = None if scheduler is None or isinstance(scheduler, str) else scheduler
        self.scheduler = None if self.given is not None else scheduler
        self.workers, self.timeout, self.batch = workers, timeout, batch
        self.client = self.cluster = None
        self.slots = 0
        self.log_levels: dict[str, int] = {}

    @property
    def name(self) -> str:
        where = self.scheduler or (self.given.scheduler.address if self.given is not None else "a LocalCluster")
        return f"dask.distributed on {where} ({self.slots} worker thread(s))"

    def __enter__(self):
        from ..extras import require

        require("campaign", "a campaign on dask.distributed (without --serial)")
        from distributed import Client, LocalCluster

        self.log_levels = quiet_logs("distributed")
        try:
            if self.given is not None:
                self.client = self.given
            elif self.scheduler is None:
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
                        scheduler_kwargs={"allowed_failures": ALLOWED_FAILURES},
                    )
                self.client = Client(self.cluster)
            else:
                try:
                    self.client = Client(self.scheduler, timeout=self.timeout)
                except ValueError as e:
                    raise ClusterError(
                        f"{self.scheduler!r} is not a Dask scheduler address ({e}); expected tcp://host:port"
                    ) from None
                except (OSError, TimeoutError) as e:
                    raise ClusterError(
                        f"cannot reach the Dask scheduler at {self.scheduler} within {self.timeout:g} s ({e}); "
                        "is it running, and is the address right?"
                    ) from None
            loop = getattr(self.client.loop, "asyncio_loop", None)
            if loop is not None:
                loop.set_exception_handler(ignore_given_up_fetches)
            self.wait_for_workers()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.slots = max(1, sum(self.client.nthreads().values()))
        return self

    def wait_for_workers(self) -> None:
        """Return once a worker is there; ClusterError after ``timeout`` seconds without one."""
        try:
            self.client.wait_for_workers(1, timeout=self.timeout)
        except TimeoutError:
            raise ClusterError(
                f"no worker joined the Dask scheduler at {self.where} within {self.timeout:g} s; start workers "
                "(docs: Campaigns, Provisioning workers) or give them longer (--cluster-timeout)"
            ) from None

    @property
    def where(self) -> str:
        return self.scheduler or self.client.scheduler.address

    def check_workers(self, files: dict[str, str]) -> None:
        """Each worker proves it can run the campaign (provision.py): ClusterError naming every
        worker whose mbsfmu, native core or files differ from this process's, or that cannot
        import mbsfmu at all."""
        from .provision import PROBE, differences, worker_facts

        ours = worker_facts(files)
        try:
            answers = self.client.run(eval, PROBE, {"files": files}, on_error="return")
        except OSError:
            raise self.lost() from None
        bad = {w: d for w, a in sorted(answers.items()) if (d := differences(ours, a))}
        if bad:
            listed = "; ".join(f"worker {w}: {', '.join(d)}" for w, d in bad.items())
            raise ClusterError(
                f"{len(bad)} of {len(answers)} worker(s) of {self.where} cannot run this campaign: {listed}. "
                "Every worker needs the client's mbsfmu and the scenario and model files at the same paths "
                "(docs: Campaigns, Provisioning workers)"
            )

    def __exit__(self, *exc) -> None:
        # Queued and running runs are not cancelled one by one: closing the client drops their
        # futures, closing the LocalCluster ends its worker processes (an external cluster's
        # scheduler forgets the tasks of a client that left).
        for part in (self.client if self.given is None else None, self.cluster):
            if part is not None:
                try:
                    part.close(timeout=20)
                except (OSError, TimeoutError, RuntimeError):  # a cluster already gone (CommClosedError is an
                    pass  # OSError): the other part still closes
        self.client = self.cluster = None
        for name, level in self.log_levels.items():
            logging.getLogger(name).setLevel(level)
        self.log_levels = {}

    def imap_unordered(self, fn: Callable, specs: Iterator, n: int | None = None) -> Iterator:
        from collections import deque
        from concurrent.futures import CancelledError

        from distributed import KilledWorker

        size = self.batch or batch_size(n if n is not None else 0, self.slots)
        batches = batched(specs, size, ramp=self.batch is None)
        split: deque = deque()  # the runs of a batch that ended its worker, to try one by one
        suspects: deque = deque()  # runs that were on a worker another run may have ended: tried alone
        window = 2 * self.slots + 2
        pending: dict = {}  # future -> batch (a tuple of specs)
        beside: set = set()  # futures that were in flight beside another of this campaign's futures
        confirming: list = []  # the suspect in flight alone (nothing of ours is submitted beside it)

        def submit() -> bool:
            if confirming:
                return False
            if suspects:  # the cluster drains, then the suspect runs with nothing of ours beside it
                if pending:
                    return False
                batch = suspects.popleft()
                confirming.append(batch)
            else:
                batch = split.popleft() if split else next(batches, None)
                if batch is None:
                    return False
            try:
                f = self.client.submit(run_each, fn, batch, pure=False)
            except OSError:
                raise self.lost() from None
            if pending:
                beside.update(pending)
                beside.add(f)
            pending[f] = batch
            return True

        while len(pending) < window and submit():
            pass
        while pending:
            for f in self.next_done(pending):
                batch = pending.pop(f)
                alone = f not in beside
                beside.discard(f)
                if confirming and confirming[0] is batch:
                    confirming.clear()
                try:
                    results = self.result(f)
                except KilledWorker as e:  # a run took its worker down (twice)
                    results = None
                    if len(batch) > 1:  # which one: each alone
                        split.extend((spec,) for spec in batch)
                    elif not alone:  # it, or a run beside it on that worker: it again, alone
                        suspects.append(batch)
                    else:  # this run: its row says so
                        from .runner import failed_row

                        why = f"KilledWorker: the run ended its worker process ({e})"[:500]
                        results = [failed_row(batch[0], why)]
                except CancelledError as e:
                    raise self.lost(e) from None
                except OSError:  # CommClosedError: the scheduler went while the result came back
                    raise self.lost() from None
                f.release()
                while len(pending) < window and submit():
                    pass
                yield from zip(batch, results or ())

    def next_done(self, pending: dict) -> set:
        """The finished futures of ``pending``, once there is one; ClusterError when the scheduler is
        lost, or when no worker has been there for ``timeout`` seconds."""
        from concurrent.futures import CancelledError

        from distributed import wait

        alone_since = None
        while True:
            try:
                return wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                pass
            except CancelledError as e:
                raise self.lost(e) from None
            alone_since = self.check_cluster(alone_since)

    def result(self, f):
        """The result of the finished future ``f``: fetching it waits for a worker when the one
        that held it was lost (the scheduler computes it again), so it is bounded like next_done."""
        alone_since = None
        while True:
            try:
                return f.result(timeout=1.0)
            except TimeoutError:
                alone_since = self.check_cluster(alone_since)

    def check_cluster(self, alone_since: float | None) -> float | None:
        """Between waits: ClusterError when the scheduler is lost or no worker has been there for
        ``timeout`` seconds; the time since when none is (None while there are workers)."""
        if self.client.status != "running":
            raise self.lost()
        try:
            n = len(self.client.nthreads())
        except (OSError, TimeoutError):
            raise self.lost() from None
        now = time.monotonic()
        alone_since = None if n else alone_since or now
        if alone_since is not None and now - alone_since > self.timeout:
            raise ClusterError(
                f"every worker left the Dask scheduler at {self.where} and none came back within {self.timeout:g} s"
            )
        return alone_since

    def lost(self, cancelled: BaseException | None = None) -> ClusterError:
        """The error for runs cancelled or a scheduler gone: which of the two, and where."""
        if cancelled is None or self.client.status != "running":
            return ClusterError(f"lost the Dask scheduler at {self.where} mid-campaign")
        first = str(cancelled).strip().splitlines()[:1]
        return ClusterError(f"the Dask scheduler at {self.where} cancelled runs of this campaign ({''.join(first)})")
