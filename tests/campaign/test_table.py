"""The campaign's rows in Parquet (mbsfmu/campaign/table.py): streamed to ``runs.parquet/part-NNNNN.parquet``
while runs arrive, so an interrupted or killed campaign keeps them, a resume appends parts; the
sorted table built from the parts a chunk of runs at a time; the statistics read from it a column
at a time equal those of the whole table's rows."""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from mbsfmu.campaign import MonteCarlo, Serial, Uniform, montecarlo_design, run_campaign, run_montecarlo
from mbsfmu.campaign import table as campaign_table
from mbsfmu.campaign.statistics import pass_rate, stat_columns, statistics
from tests.support.journal import wait_rows
from tests.support.paths import DATA, ROOT

SPRING = DATA / "campaign_spring.yaml"
OUTPUTS = ["q.q1", "engine.E"]


@pytest.fixture
def small_parts(monkeypatch):
    """Parts of 4 rows and row groups of 3 runs, so a 10-run campaign has several of each."""
    monkeypatch.setattr(campaign_table, "PART_ROWS", 4)
    monkeypatch.setattr(campaign_table, "CHUNK_RUNS", 3)


def _campaign(out, runs=10, **kw):
    design, _ = montecarlo_design(SPRING, runs, seed=11)
    return run_campaign(SPRING, design, out, execution=Serial(), progress=False, outputs=OUTPUTS, **kw)


def _runs_in_parts(out):
    """the runs of the whole parts (a client killed after creating the folder may have written none)"""
    return [run for p in campaign_table.part_paths(out) for run in pq.read_table(p).column("run").to_pylist()]


def _table(path):
    return pq.read_table(path).drop_columns(["wall_time_s"])


@pytest.mark.integration
def test_rows_stream_to_parts_and_the_table_is_sorted_row_groups(small_parts, tmp_path):
    result = _campaign(tmp_path)
    parts = sorted(p.name for p in (tmp_path / "runs.parquet").iterdir())
    assert parts == ["part-00000.parquet", "part-00001.parquet", "part-00002.parquet"]  # 4 + 4 + 2 rows
    assert [pq.read_metadata(tmp_path / "runs.parquet" / p).num_rows for p in parts] == [4, 4, 2]
    # the folder is a dataset pyarrow (and pandas, polars) read whole: every journaled row, journal order
    journal = [json.loads(line)["row"]["run"] for line in (tmp_path / "runs.jsonl").read_text().splitlines()]
    assert ds.dataset(tmp_path / "runs.parquet").to_table().column("run").to_pylist() == journal
    table = pq.ParquetFile(tmp_path / "campaign.parquet")
    assert table.num_row_groups == 4 and table.metadata.num_rows == 10  # runs 0-2, 3-5, 6-8, 9
    t = table.read()
    assert t.column("run").to_pylist() == list(range(10)) and all(t.column("passed").to_pylist())
    assert t.schema.names[:6] == ["run", "body.mass.mass", "joint.q1.spring.k", "initial.q.q1", "passed", "error"]
    lines = (tmp_path / "campaign.csv").read_text().splitlines()
    assert lines[0].split(",") == t.schema.names and len(lines) == 11
    row3 = dict(zip(lines[0].split(","), lines[4].split(",")))
    assert float(row3["final.q.q1"]) == t.column("final.q.q1")[3].as_py() and row3["passed"] == "True"
    assert [r["run"] for r in result.rows] == list(range(10)) and result.failed == []


@pytest.mark.integration
def test_streamed_statistics_equal_those_of_the_whole_tables_rows(small_parts, tmp_path):
    """Runs that raise (negative masses: errored, their check columns missing) beside runs that pass:
    the statistics and pass rate read a column at a time equal the row-wise ones on every row at once."""
    design = MonteCarlo({"body.mass.mass": Uniform(-0.7, 0.9)}, 9, seed=2)
    result = run_campaign(SPRING, design, tmp_path, execution=Serial(), progress=False, outputs=OUTPUTS)
    rows = result.rows  # the whole table, read back
    assert 0 < sum(bool(r["error"]) for r in rows) < 9
    columns = stat_columns(pq.read_schema(tmp_path / "campaign.parquet").names, design.paths)
    assert [(e["column"], e["outcome"]) for e in result.statistics] == [
        (c, o) for c in columns for o in ("all", "passed", "failed")
    ]
    np.testing.assert_equal(result.statistics, statistics(rows, columns))  # bit for bit, NaN where empty
    assert result.pass_rate == pass_rate(rows)
    assert result.pass_rate["errored"] == sum(bool(r["error"]) for r in rows)
    assert result.failed_rows(2) == [r for r in rows if not r["passed"]][:2]


@pytest.mark.integration
def test_a_stopped_campaign_keeps_its_rows_in_parquet_and_a_resume_appends_parts(small_parts, tmp_path):
    whole = _campaign(tmp_path / "whole")
    seen = []

    def stop():
        seen.append(1)
        return len(seen) > 6  # the signal arrives while the 7th run runs

    first = _campaign(tmp_path / "mc", stop=stop)
    assert first.interrupted and first.pass_rate["n"] == 6
    parts = sorted((tmp_path / "mc" / "runs.parquet").iterdir())
    assert _runs_in_parts(tmp_path / "mc") == list(range(6)) and len(parts) == 2  # 4 rows, then the 2 left at the stop
    kept = {p.name: p.read_bytes() for p in parts}
    done = _campaign(tmp_path / "mc", resume=True)
    assert not done.interrupted and done.pass_rate["n"] == 10
    after = sorted((tmp_path / "mc" / "runs.parquet").iterdir())
    assert {p.name: p.read_bytes() for p in after[: len(parts)]} == kept  # the resume appended, rewrote nothing
    assert _runs_in_parts(tmp_path / "mc") == list(range(10))
    assert _table(tmp_path / "mc" / "campaign.parquet").equals(_table(whole.files["table"]))


@pytest.mark.integration
def test_a_killed_campaigns_journaled_rows_reach_parquet_on_resume(tmp_path):
    """SIGKILL: the client writes nothing more. The journal holds every finished run; the parts hold the
    runs of the parts written before (none here: a part is written every PART_ROWS rows or PART_SECONDS),
    and the resume first writes the journal's other rows as parts, then the missing runs."""
    out = tmp_path / "mc"
    args = ["montecarlo", SPRING, "--runs", 10, "--seed", 11, "--out", out, "--serial", "--no-progress"]
    args += ["--output", "q.q1", "--output", "engine.E"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "mbsfmu", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    wait_rows(out / "runs.jsonl", 3, proc)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    journaled = [json.loads(line)["row"]["run"] for line in (out / "runs.jsonl").read_text().splitlines()]
    assert len(journaled) >= 3 and not (out / "campaign.parquet").exists()
    in_parts = _runs_in_parts(out) if (out / "runs.parquet").exists() else []
    assert in_parts == journaled[: len(in_parts)]  # the parts hold a prefix of the journal
    done = run_montecarlo(SPRING, 10, 11, out, serial=True, resume=True, outputs=OUTPUTS, progress=False)
    assert done.pass_rate["n"] == 10
    assert _runs_in_parts(out)[: len(journaled)] == journaled  # the killed session's rows first, in journal order
    assert sorted(_runs_in_parts(out)) == list(range(10))
    whole = run_montecarlo(SPRING, 10, 11, tmp_path / "whole", serial=True, outputs=OUTPUTS, progress=False)
    assert _table(out / "campaign.parquet").equals(_table(whole.files["table"]))


def test_an_empty_campaign_table_has_the_head_columns(tmp_path):
    """No finished run (a campaign stopped before its first): the table is its head columns, no row."""
    parquet, text = campaign_table.build_table(tmp_path, "campaign", ["body.mass.mass"])
    assert pq.read_table(parquet).schema.names == ["run", "body.mass.mass", "passed", "error"]
    assert pq.read_metadata(parquet).num_rows == 0
    assert text.read_text() == "run,body.mass.mass,passed,error\n"


def test_parts_follow_the_journal_and_a_rerun_row_wins_in_the_table(tmp_path):
    """sync_parts writes the journal's rows the parts lack (up to the last part's journal_end); a run
    journaled twice (--rerun) is the later row in the table; every part has the columns of the parts
    before it, with the same types, so the folder reads as one dataset."""
    rows = [{"run": 2, "x": 1, "passed": True, "error": ""}, {"run": 0, "x": 0, "passed": False, "error": "E"}]
    rows += [{"run": 1, "x": 2.5, "passed": True, "error": "", "extra": 7.0}, {"run": 0, "x": 0.25, "passed": True}]
    lines = [json.dumps({"row": r, "series": {}}) + "\n" for r in rows]
    (tmp_path / "runs.jsonl").write_text("".join(lines[:2]))
    campaign_table.sync_parts(tmp_path)
    (tmp_path / "runs.jsonl").write_text("".join(lines))
    campaign_table.sync_parts(tmp_path)
    campaign_table.sync_parts(tmp_path)  # nothing more to write
    assert len(list((tmp_path / "runs.parquet").iterdir())) == 2
    assert _runs_in_parts(tmp_path) == [2, 0, 1, 0]
    parquet, _ = campaign_table.build_table(tmp_path, "campaign", ["x"])
    t = pq.read_table(parquet)
    assert t.to_pylist() == [
        {"run": 0, "x": 0.25, "passed": True, "error": None, "extra": None},
        {"run": 1, "x": 2.5, "passed": True, "error": "", "extra": 7.0},
        {"run": 2, "x": 1.0, "passed": True, "error": "", "extra": None},
    ]
    assert str(t.schema.field("x").type) == "double"  # a drawn value is float64, whole-number draws too
    parts = sorted((tmp_path / "runs.parquet").iterdir())
    assert pq.read_schema(parts[1]).names == ["run", "x", "passed", "error", "extra"]  # the columns so far
