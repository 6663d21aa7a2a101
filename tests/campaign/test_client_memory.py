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


def _journal(path, runs):
    """A journal of ``runs`` runs as Journal.append writes it, each with a 100-sample series."""
    import json

    t = [k * 1e-3 for k in range(100)]
    with open(path, "w") as f:
        for i in range(runs):
            row = {"run": i, "k": 1.0 + i, "passed": i % 10 != 3, "error": "", "check.e.max_rel": 1e-12}
            f.write(json.dumps({"row": row, "series": {"time": t, "q.q1": t}}) + "\n")


def _peak(fn, *args):
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        out = fn(*args)
        return tracemalloc.get_traced_memory()[1] - base, out
    finally:
        tracemalloc.stop()


def test_a_resume_reads_one_outcome_per_run_not_the_rows(tmp_path):
    from mbsfmu.campaign.table import read_outcomes

    _journal(tmp_path / "1k.jsonl", 1_000)
    _journal(tmp_path / "10k.jsonl", 10_000)
    peak1, done1 = _peak(read_outcomes, tmp_path / "1k.jsonl")
    peak10, done10 = _peak(read_outcomes, tmp_path / "10k.jsonl")
    assert len(done10) == 10_000 and sum(done10.values()) == 9_000 and done10[3] is False
    # {run: passed} is a dict entry and an int per run (~100 B); the rows were ~0.5 kB each here (a dict
    # of 5 cells) and their series ~2 kB: keeping either for the 9,000 more runs would add >= 4.5 MB
    assert peak10 - peak1 < 9_000 * 200, f"1k {peak1} B, 10k {peak10} B"


@pytest.mark.slow
def test_the_picture_holds_a_few_numbers_per_run_not_the_rows(tmp_path):
    """campaign.png from a 10k- and a 100k-run table: the picture reads the drawn columns (arrays, a
    few numbers per run) and draws at most SCATTER_POINTS per outcome in a scatter. Slow tier: three
    pictures, two under tracemalloc (4x matplotlib's time): 18 s of the fast tier's 107 s at load ~3."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from mbsfmu.campaign.picture import plot_campaign, table_columns

    def table(n):
        rng = np.random.default_rng(1)
        passed = rng.random(n) > 0.05
        path = tmp_path / f"{n}.parquet"
        pq.write_table(
            pa.table(
                {
                    "run": np.arange(n, dtype=np.int64),
                    "k": rng.normal(1.0, 0.1, n),
                    "c": rng.normal(2.0, 0.1, n),
                    "passed": passed,
                    "error": np.where(rng.random(n) < 0.01, "Timeout", ""),
                    "check.e.max_rel": np.where(passed, 1e-12, 1e-6),
                    "check.e.passed": passed,
                }
            ),
            path,
        )
        return path

    def draw(path, out):
        out.mkdir()
        cols = table_columns(path, ["k", "c"])
        return plot_campaign(out, "t", cols, {}, ["k", "c"], [], {"e": ("rel", 1e-9)})

    small, big = table(10_000), table(100_000)
    draw(small, tmp_path / "warm")  # matplotlib's imports and caches, not the picture's
    peak10, _ = _peak(draw, small, tmp_path / "a")
    peak100, path = _peak(draw, big, tmp_path / "b")
    assert path.stat().st_size > 10_000
    # per run: 7 columns of 8 bytes (bool columns 1 byte) and the masks and logs of a panel, ~0.3 kB at
    # most; rows as dicts (what the picture was drawn from) are ~1 kB each: 90 MB for the 90k more runs
    assert peak100 - peak10 < 90_000 * 300, f"10k {peak10 / 1e6:.1f} MB, 100k {peak100 / 1e6:.1f} MB"
