"""Campaigns on a real loopback cluster (an external scheduler and worker processes) fail loudly
and resumably: an unreachable scheduler, a worker without mbsfmu or with another version, no
worker, the scheduler or every worker lost mid-campaign. Each: one message naming the address or
worker, exit 2, no traceback, and a DIR that the retry or --resume completes."""

from __future__ import annotations

import functools
import os
import shlex
import subprocess
import sys
import time

import pytest

from mbsfmu.campaign.execution import ALLOWED_FAILURES, Dask
from mbsfmu.campaign.provision import differences
from mbsfmu.campaign.runner import RunSpec
from tests.support.dask_cluster import Cluster, dask_env, free_port, mbsfmu_copy, python_without_mbsfmu
from tests.support.journal import wait_rows
from tests.support.paths import DATA, ROOT

SPRING = DATA / "campaign_spring.yaml"
# [s] a campaign's wait for a worker after one ended (the default 60 s): each crash test restarts the
# worker 2-6 times, and beside another test run a restart once took longer than 60 s (a two-run CI
# beside the README's run at load ~5): the tests wait on the worker's return, bounded, not on a speed
RESTART_PATIENCE = 300.0


def _montecarlo(tmp, out, *extra, runs=4):
    """`mbsfmu montecarlo` of the spring campaign into ``out`` as a subprocess (not waited)."""
    args = ["montecarlo", SPRING, "--runs", runs, "--seed", 3, "--out", out, "--no-progress", *extra]
    return subprocess.Popen(
        [sys.executable, "-m", "mbsfmu", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=dask_env(tmp),
    )


def _finish(proc, timeout=300):
    stdout, stderr = proc.communicate(timeout=timeout)
    return proc.returncode, stdout, stderr


def _rows(path):
    return path.read_text().count("\n") - 1 if path.exists() else 0


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(tmp_path)
    yield c
    c.close()


# --- fast tier: what a worker's answer differs in ---------------------------------------------------------


def test_differences_name_what_a_worker_lacks():
    ours = {"version": "1.0", "core": "libmbs_core-a.so", "files": {"/s.yaml": "ab" * 32, "/m.yaml": "cd" * 32}}
    ours["inputs"] = "x"
    same = {**ours, "files": dict(ours["files"])}
    assert differences(ours, same) == []
    theirs = {"version": "0.9", "core": "libmbs_core-b.so", "files": {"/s.yaml": "ab" * 32, "/m.yaml": "missing"}}
    theirs["inputs"] = "y"
    found = differences(ours, theirs)
    assert found == [
        "mbsfmu 0.9 there, 1.0 here",
        "native core libmbs_core-b.so there, libmbs_core-a.so here",
        "/m.yaml missing there",
        "the scenario's input schedules (csv tables) differ",
    ]
    changed = {**ours, "files": {"/s.yaml": "ef" * 32, "/m.yaml": "cd" * 32}}
    assert differences(ours, changed) == [f"/s.yaml differs (sha256 {'ef' * 6} there, {'ab' * 6} here)"]
    assert differences(ours, ModuleNotFoundError("No module named 'mbsfmu'")) == [
        "cannot import mbsfmu (ModuleNotFoundError: No module named 'mbsfmu')"
    ]
    assert differences(ours, OSError("disk gone\nmore")) == ["cannot check the campaign there (OSError: disk gone)"]


# --- integration: a real cluster on loopback ---------------------------------------------------------------


@pytest.mark.integration
def test_unreachable_scheduler_names_the_address_and_the_retry_runs(tmp_path, cluster):
    out = tmp_path / "mc"
    nowhere = f"tcp://127.0.0.1:{free_port()}"  # nothing listens there
    code, stdout, stderr = _finish(_montecarlo(tmp_path, out, "--scheduler", nowhere, "--cluster-timeout", "2"))
    assert code == 2, stderr
    assert f"cannot reach the Dask scheduler at {nowhere}" in stderr
    assert "Traceback" not in stderr and "cannot write" not in stderr
    code, _, stderr = _finish(_montecarlo(tmp_path, out, "--scheduler", "127.0.0.1:port"))
    assert code == 2 and "'127.0.0.1:port' is not a Dask scheduler address" in stderr, stderr
    cluster.add_worker()
    code, stdout, stderr = _finish(_montecarlo(tmp_path, out, "--scheduler", cluster.address))
    assert code == 0, stderr
    assert "4 of 4 runs, 0 failed" in stdout and _rows(out / "campaign.csv") == 4


@pytest.mark.integration
def test_no_worker_is_a_message_not_a_wait(tmp_path, cluster):
    out = tmp_path / "mc"
    code, _, stderr = _finish(_montecarlo(tmp_path, out, "--scheduler", cluster.address, "--cluster-timeout", "2"))
    assert code == 2, stderr
    assert f"no worker joined the Dask scheduler at {cluster.address} within 2 s" in stderr
    assert "Traceback" not in stderr


@pytest.mark.integration
def test_worker_without_mbsfmu_is_named_not_a_hang(tmp_path, cluster):
    python, env = python_without_mbsfmu(tmp_path)
    probe = subprocess.run([*python, "-c", "import distributed, mbsfmu"], env=env, cwd=tmp_path, capture_output=True)
    assert probe.returncode != 0 and b"No module named 'mbsfmu'" in probe.stderr  # the environment is as meant
    cluster.add_worker(env, python)
    out = tmp_path / "mc"
    code, _, stderr = _finish(_montecarlo(tmp_path, out, "--scheduler", cluster.address))
    assert code == 2, stderr
    assert "1 of 1 worker(s)" in stderr and "cannot import mbsfmu (ModuleNotFoundError" in stderr
    assert "worker tcp://127.0.0.1:" in stderr and "Provisioning workers" in stderr
    assert "Traceback" not in stderr
    cluster.workers.pop().kill()  # provisioned now: the retry (no --resume) runs in the same DIR
    cluster.add_worker()
    code, stdout, stderr = _finish(_montecarlo(tmp_path, out, "--scheduler", cluster.address))
    assert code == 0 and "4 of 4 runs, 0 failed" in stdout, stderr


@pytest.mark.integration
def test_worker_with_another_version_is_named(tmp_path, cluster):
    other = mbsfmu_copy(tmp_path, "0.0.1+other")
    cluster.add_worker()
    cluster.add_worker(dask_env(tmp_path, str(other)))
    cluster.wait_workers(2)
    out = tmp_path / "mc"
    code, _, stderr = _finish(_montecarlo(tmp_path, out, "--scheduler", cluster.address))
    assert code == 2, stderr
    assert "1 of 2 worker(s)" in stderr and "mbsfmu 0.0.1+other there" in stderr
    assert "Traceback" not in stderr


def _resume_argv(stderr: str, address: str, new_address: str) -> list[str]:
    line = next(ln for ln in stderr.splitlines() if "to complete the campaign: " in ln)
    argv = shlex.split(line.split("to complete the campaign: ", 1)[1])
    assert argv[0] == "mbsfmu" and argv[-1] == "--resume" and address in argv
    return [new_address if a == address else a for a in argv[1:]]


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.parametrize("lose", ["scheduler", "workers"])
def test_cluster_lost_mid_campaign_writes_the_rows_and_prints_the_resume(tmp_path, cluster, lose):
    cluster.add_worker()
    out = tmp_path / "mc"
    proc = _montecarlo(tmp_path, out, "--scheduler", cluster.address, "--cluster-timeout", "3", runs=40)
    wait_rows(out / "runs.jsonl", 2, proc)
    if lose == "scheduler":
        cluster.kill_scheduler()
    else:
        for w in cluster.workers:
            w.kill()
    code, stdout, stderr = _finish(proc)
    assert code == 2, stderr
    said = f"lost the Dask scheduler at {cluster.address} mid-campaign"
    if lose == "workers":
        said = f"every worker left the Dask scheduler at {cluster.address} and none came back within 3 s"
    assert said in stderr and "Traceback" not in stderr
    n = _rows(out / "campaign.csv")
    assert 2 <= n == (out / "runs.jsonl").read_text().count("\n") < 40
    assert f"{n} of 40 runs finished and written to {out}" in stderr
    fresh = Cluster(tmp_path / "again")
    try:
        fresh.add_worker()
        argv = _resume_argv(stderr, cluster.address, fresh.address)
        resumed = subprocess.run(
            [sys.executable, "-m", "mbsfmu", *argv],
            cwd=ROOT,
            capture_output=True,
            text=True,
            env=dask_env(tmp_path),
            timeout=600,
        )
    finally:
        fresh.close()
    assert resumed.returncode == 0, resumed.stderr
    assert "40 of 40 runs, 0 failed" in resumed.stdout and _rows(out / "campaign.csv") == 40


def crash(attempts, spec):
    """A run that ends its worker process, noting each attempt in the file ``attempts``."""
    with open(attempts, "a") as f:
        f.write(f"{os.getpid()}\n")
    os._exit(1)


@pytest.mark.integration
def test_a_run_that_ends_its_worker_costs_two_workers_and_is_a_row(tmp_path):
    """The documented count: a crashing run is tried on ALLOWED_FAILURES + 1 = 2 worker processes
    (dask's default would take 4), then its row says KilledWorker; the campaign goes on."""
    attempts = tmp_path / "attempts"
    spec = RunSpec("unused.yaml", 7, {"body.mass.mass": 0.7}, None, ())
    with Dask(workers=1, timeout=RESTART_PATIENCE) as execution:
        [(got, record)] = list(execution.imap_unordered(functools.partial(crash, attempts), iter([spec])))
    assert got is spec and ALLOWED_FAILURES == 1
    assert len(set(attempts.read_text().split())) == 2  # two worker processes ended
    row = record["row"]
    assert row["run"] == 7 and row["passed"] is False and row["error"].startswith("KilledWorker")


def crash_one(attempts, bad, spec):
    """Run ``spec``: its index back, or the worker process ended when it is run ``bad``."""
    if spec.index == bad:
        crash(attempts, spec)
    return {"row": {"run": spec.index, "passed": True, "error": ""}}


@pytest.mark.integration
def test_a_batch_that_ends_its_worker_is_split_and_only_the_crashing_run_is_a_row(tmp_path):
    """Runs batched per task: a batch whose run ends its worker is tried again run by run, so the other
    runs of the batch complete and only the crashing one is a KilledWorker row."""
    attempts = tmp_path / "attempts"
    specs = [RunSpec("unused.yaml", i, {}, None, ()) for i in range(6)]
    with Dask(workers=1, batch=3, timeout=RESTART_PATIENCE) as execution:
        got = list(execution.imap_unordered(functools.partial(crash_one, attempts, 4), iter(specs)))
    rows = {spec.index: record["row"] for spec, record in got}
    assert sorted(rows) == list(range(6))
    assert [i for i, r in rows.items() if not r["passed"]] == [4] and rows[4]["error"].startswith("KilledWorker")
    # the batch, run 4 beside runs 3 and 5 (dask blames them too), then run 4 with nothing beside it
    assert len(set(attempts.read_text().split())) == 3 * (ALLOWED_FAILURES + 1)


@pytest.mark.integration
def test_a_run_that_shared_a_worker_with_a_crashing_run_is_not_blamed(tmp_path):
    """One worker with two threads runs two tasks at once; dask blames both when one ends the
    worker. The other run is tried again with nothing beside it and completes: only the crashing
    run is a KilledWorker row."""
    from distributed import Client, LocalCluster

    attempts = tmp_path / "attempts"
    specs = [RunSpec("unused.yaml", i, {}, None, ()) for i in range(8)]
    with (
        LocalCluster(
            n_workers=1,
            threads_per_worker=2,
            processes=True,
            dashboard_address=":0",
            scheduler_port=0,
            scheduler_kwargs={"allowed_failures": ALLOWED_FAILURES},
        ) as cluster,
        Client(cluster) as client,
        Dask(client, batch=1, timeout=RESTART_PATIENCE) as execution,
    ):
        got = list(execution.imap_unordered(functools.partial(crash_one, attempts, 4), iter(specs)))
    rows = {spec.index: record["row"] for spec, record in got}
    assert sorted(rows) == list(range(8))
    assert [i for i, r in rows.items() if not r["passed"]] == [4] and rows[4]["error"].startswith("KilledWorker")


# --- per-run timeout ----------------------------------------------------------------------------------------


@pytest.mark.integration
def test_a_run_in_its_own_process_gives_the_row_of_a_run_in_the_worker(tmp_path, monkeypatch):
    """--run-timeout runs each run in a child process: the same rows (but wall time) as in-process,
    and none of the runs in this process (run_here, counted here, is not called; the child's own
    runner module is not the one counted). Run by run (batched=False): the batched path, which
    a run time limit never takes, would run the in-process runs without run_here."""
    import pyarrow.parquet as pq

    from mbsfmu.campaign import Serial, montecarlo_design, run_campaign, runner

    here = []
    run_here = runner.run_here
    monkeypatch.setattr(runner, "run_here", lambda spec: here.append(spec.index) or run_here(spec))
    design, outputs = montecarlo_design(SPRING, 3, 5)
    tables, ran_here = [], []
    for name, limit in (("here", None), ("child", 120.0)):
        here.clear()
        run_campaign(
            SPRING,
            design,
            tmp_path / name,
            outputs=outputs,
            execution=Serial(),
            progress=False,
            run_timeout=limit,
            batched=False,
        )
        tables.append(pq.read_table(tmp_path / name / "campaign.parquet").drop_columns(["wall_time_s"]))
        ran_here.append(sorted(here))
    assert ran_here == [[0, 1, 2], []], ran_here
    assert tables[0].num_rows == 3 and tables[0].equals(tables[1])


@pytest.mark.integration
def test_a_run_over_its_timeout_is_a_row_and_frees_the_worker(tmp_path, cluster):
    """Two runs far longer than --run-timeout on one worker: each a Timeout row (the second ran, so
    the first freed the slot), the campaign completes, exit 1 (runs failed)."""
    cluster.add_worker()
    out = tmp_path / "mc"
    proc = _montecarlo(
        tmp_path, out, "--scheduler", cluster.address, "--run-timeout", "1", "--duration", "5000", runs=2
    )
    code, stdout, stderr = _finish(proc)
    assert code == 1, stderr
    assert "2 of 2 runs, 2 failed" in stdout and "Traceback" not in stderr
    rows = (out / "campaign.csv").read_text().splitlines()[1:]
    assert len(rows) == 2 and all("Timeout: the run took more than 1 s of wall time" in r for r in rows)


@pytest.mark.integration
def test_a_run_in_its_own_process_ends_with_its_worker(tmp_path):
    """A worker killed mid-run (SIGKILL: no cleanup of its own) leaves no run process behind."""
    psutil = pytest.importorskip("psutil")
    code = (
        "from mbsfmu.campaign.runner import RunSpec, run_one; "
        f"run_one(RunSpec({str(SPRING)!r}, 0, {{}}, 5000.0, (), False, 600.0))"
    )
    worker = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=dask_env(tmp_path))
    try:
        end_at = time.monotonic() + 120
        while not (children := psutil.Process(worker.pid).children()):
            assert worker.poll() is None and time.monotonic() < end_at, "no run process started"
            time.sleep(0.05)
        worker.kill()
        worker.wait(timeout=60)
        _, alive = psutil.wait_procs(children, timeout=60)
        assert not alive, [p.pid for p in alive]
    finally:
        if worker.poll() is None:
            worker.kill()


@pytest.mark.integration
def test_a_run_sent_to_a_worker_without_mbsfmu_ends_in_a_message(tmp_path, cluster):
    """What a worker joining after the check meets (no check here): it cannot unpickle the run and
    ends; with no worker left the campaign stops with the cluster-timeout message, not a hang."""
    from mbsfmu.campaign.execution import ClusterError
    from mbsfmu.campaign.runner import run_one

    python, env = python_without_mbsfmu(tmp_path)
    cluster.add_worker(env, python)
    spec = RunSpec(str(SPRING), 0, {}, None, ())
    with Dask(cluster.address, timeout=3) as execution:
        with pytest.raises(ClusterError, match="every worker left the Dask scheduler at .* within 3 s"):
            list(execution.imap_unordered(run_one, iter([spec])))
