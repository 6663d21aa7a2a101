"""The campaign client's memory is flat in the number of runs (issue 23 item 3): while runs
arrive it keeps nothing per run, never their rows or output series (those go to the journal). A
1,000- and a 10,000-run campaign of a tiny scenario on a cluster of a scheduler and 2 workers in
their own processes (as on a real cluster: a LocalCluster's scheduler lives in the client's
process and keeps its own per-task records there), the client's Python allocations traced
(tracemalloc traces every thread of the process: the client's own and distributed's event loop)
from the first result to the last, and to the campaign's return: the end (the table built from the
streamed Parquet parts, the statistics read a column at a time) holds a few numbers per run, not
the rows."""

import contextlib
import tracemalloc

import pytest

from mbsfmu.campaign import Dask, montecarlo_design, run_campaign
from mbsfmu.campaign.execution import MAX_BATCH
from tests.support.dask_cluster import Cluster
from tests.support.paths import DATA

SPRING = DATA / "campaign_spring.yaml"


class Traced(Dask):
    """A Dask execution that measures the client's traced peak over the arrival of results: reset at
    the first result, read after the last."""

    def imap_unordered(self, fn, specs, n=None):
        first = True
        for item in super().imap_unordered(fn, specs, n):
            if first:
                tracemalloc.reset_peak()
                self.base = tracemalloc.get_traced_memory()[0]
                first = False
            yield item
        self.peak = tracemalloc.get_traced_memory()[1]


def _loop_peak(runs, out, address):
    import dask

    design, outputs = montecarlo_design(SPRING, runs, seed=3)
    execution = Traced(address, batch=MAX_BATCH)  # the batch size 10k runs on 2 slots gets, at 1k too
    # distributed's client keeps its last 1000 messages to the scheduler for debugging (BatchedSend's
    # recent_message_log, distributed.admin.low-level-log-length): each task's message holds its pickled
    # batch (~5 kB at 64 runs), so it grows up to 1000 tasks (~5 MB) and then stays; 1k and 10k runs sit
    # on its rising part (16 and 157 tasks). Without it, what remains is the campaign's own memory.
    with dask.config.set({"distributed.admin.low-level-log-length": 0}), _traced():
        result = run_campaign(
            SPRING, design, out, execution=execution, outputs=outputs, duration=0.02, progress=False, picture=False
        )
        whole = tracemalloc.get_traced_memory()[1]  # from the first result to the return, the end included
    assert result.pass_rate["n"] == runs and result.pass_rate["errored"] == 0  # a check may fail at some draws
    return execution.base, execution.peak, whole


@contextlib.contextmanager
def _traced():
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


@pytest.mark.slow
def test_client_memory_is_flat_from_1k_to_10k_runs(tmp_path):
    cluster = Cluster(tmp_path)
    try:
        cluster.add_worker()
        cluster.add_worker()
        cluster.wait_workers(2)
        base1, peak1, whole1 = _loop_peak(1_000, tmp_path / "1k", cluster.address)
        base10, peak10, whole10 = _loop_peak(10_000, tmp_path / "10k", cluster.address)
    finally:
        cluster.close()
    # What may differ: the results in flight. At most 2 slots + 2 = 6 batches of MAX_BATCH = 64 runs, each
    # run's result ~1 kB (its journal line is 920 B), held at most about three times over (the message's
    # frames, the objects unpickled, the JSON line): ~1.2 MB whatever the number of runs, and how much of it
    # is live at the peak depends on timing (on a loaded machine more results wait together). What must
    # not grow: anything per run. Kept per run, a row is ~2 kB (a dict of ~25 numbers) and its series
    # ~1 kB, so keeping them would add >= 27 MB for the 9,000 more runs; the 2 MB bound is under a tenth
    # of that and above the in-flight bound.
    assert peak10 < peak1 + 2e6, (
        f"client peak 1k {peak1 / 1e6:.2f} MB (base {base1 / 1e6:.2f}), 10k {peak10 / 1e6:.2f} MB"
    )
    assert peak10 - base10 < 2e6, f"1k: {peak1 - base1} B, 10k: {peak10 - base10} B over the loop"
    # The end reads the table a chunk of 4096 runs or a column at a time: its Python objects are one
    # chunk's worth of CSV cells (256 rows) and a few numpy arrays of one number per run (10k runs:
    # 80 kB each); reading the rows back, as before, was ~2 kB per run, ~20 MB at 10k.
    assert whole10 < whole1 + 2e6, f"whole campaign 1k {whole1 / 1e6:.2f} MB, 10k {whole10 / 1e6:.2f} MB"
