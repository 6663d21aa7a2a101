"""`mbsfmu montecarlo` options through the command line, each checked where it lands in the run:
--campaign FILE and its merge rules with the scenario's campaign: section (docs/guides/campaigns.md:
a file's entries are added, and replace the scenario's path by path; its outputs replace the
scenario's; --output replaces both), --trajectories, and --scheduler (the runs go to that cluster)."""

from __future__ import annotations

import csv

import pytest

from mbsfmu.campaign import MonteCarlo, Uniform, montecarlo_design
from mbsfmu.cli import main
from mbsfmu.trajectory import read_trajectory
from tests.support.paths import DATA

SPRING = DATA / "campaign_spring.yaml"  # campaign: mass, spring.k, initial q1; outputs q.q1, engine.E
FILE = """dispersions:
  body.mass.mass: {type: uniform, low: 0.6, high: 0.61}
  joint.q1.spring.d: {type: uniform, low: 0.01, high: 0.02}
"""


def _rows(out):
    with open(out / "campaign.csv", newline="") as f:
        return list(csv.DictReader(f))


def _montecarlo(tmp_path, name, *extra):
    out = tmp_path / name
    args = ["montecarlo", str(SPRING), "--runs", "3", "--seed", "7", "--out", str(out), "--no-progress", *extra]
    assert main(args) == 0
    return out


def test_campaign_file_adds_and_replaces_path_by_path_and_its_outputs_replace_the_scenarios(tmp_path):
    campaign = tmp_path / "c.yaml"
    campaign.write_text(FILE + "outputs: [engine.KE]\n")
    out = _montecarlo(tmp_path, "merged", "--campaign", str(campaign), "--serial", "--trajectories")
    rows = _rows(out)
    assert len(rows) == 3
    for r in rows:
        assert 0.6 <= float(r["body.mass.mass"]) <= 0.61  # replaced: the scenario's normal(0.7, 0.05) is not drawn
        assert 0.01 <= float(r["joint.q1.spring.d"]) <= 0.02  # added by the file
        assert 30.0 <= float(r["joint.q1.spring.k"]) <= 40.0  # kept from the scenario
        assert float(r["initial.q.q1"]) in (0.05, 0.1, 0.15)  # kept from the scenario
    outputs = {k.split(".")[1] + "." + k.split(".")[2] for k in rows[0] if k.startswith("output.")}
    assert outputs == {"engine.KE"}  # the file's outputs replace the scenario's q.q1, engine.E
    # --trajectories: one trajectory per run, to the run's end
    for r in rows:
        traj = read_trajectory(out / "trajectories" / f"run_{int(r['run']):04d}.csv")
        assert traj["time"][-1] == pytest.approx(float(r["t_end"]), abs=1e-12)
        assert traj["q.q1"][-1] == pytest.approx(float(r["final.q.q1"]), rel=1e-12, abs=0)
    # the same campaign without --trajectories writes none
    assert not (_montecarlo(tmp_path, "plain", "--serial") / "trajectories").exists()


def test_campaign_file_without_outputs_keeps_the_scenarios_and_output_flag_replaces_both(tmp_path):
    campaign = tmp_path / "c.yaml"
    campaign.write_text(FILE)
    rows = _rows(_montecarlo(tmp_path, "kept", "--campaign", str(campaign), "--serial"))
    outputs = {k.rsplit(".", 1)[0] for k in rows[0] if k.startswith("output.")}
    assert outputs == {"output.q.q1", "output.engine.E"}
    campaign.write_text(FILE + "outputs: [engine.KE]\n")
    rows = _rows(_montecarlo(tmp_path, "flag", "--campaign", str(campaign), "--output", "engine.PE", "--serial"))
    outputs = {k.rsplit(".", 1)[0] for k in rows[0] if k.startswith("output.")}
    assert outputs == {"output.engine.PE"}


def test_dispersions_given_in_python_replace_the_files_and_the_scenarios(tmp_path):
    campaign = tmp_path / "c.yaml"
    campaign.write_text(FILE)
    design, _ = montecarlo_design(SPRING, 2, 1, {"body.mass.mass": Uniform(0.8, 0.81)}, campaign)
    assert isinstance(design, MonteCarlo)
    assert design.dispersions["body.mass.mass"] == Uniform(0.8, 0.81)
    assert set(design.paths) == {"body.mass.mass", "joint.q1.spring.k", "initial.q.q1", "joint.q1.spring.d"}


@pytest.mark.integration
def test_scheduler_flag_runs_the_campaign_on_that_cluster(tmp_path):
    """--scheduler ADDRESS: the runs are tasks of that cluster's scheduler (it counts them), and
    the table equals the serial one."""
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0", scheduler_port=0
    ) as cluster:
        before = cluster.scheduler.transition_counter
        dask_rows = _rows(_montecarlo(tmp_path, "dask", "--scheduler", cluster.scheduler_address))
        assert cluster.scheduler.transition_counter > before
    serial_rows = _rows(_montecarlo(tmp_path, "serial", "--serial"))
    drop = ("wall_time_s",)
    assert [{k: v for k, v in r.items() if k not in drop} for r in dask_rows] == [
        {k: v for k, v in r.items() if k not in drop} for r in serial_rows
    ]


def _table(out):
    import pyarrow.parquet as pq

    return pq.read_table(out / "campaign.parquet").drop_columns(["wall_time_s"])


@pytest.mark.integration
def test_rerun_runs_the_chosen_runs_again_with_their_trajectories_and_the_same_rows(tmp_path, capsys):
    """--rerun failed / --rerun 3,7: the same points (run i's draws depend on i and the design only),
    so the table is unchanged (wall time aside); the rerun runs' trajectories are written."""
    campaign = tmp_path / "c.yaml"
    campaign.write_text("dispersions:\n  body.mass.mass: {type: uniform, low: -0.5, high: 1.0}\n")
    out = tmp_path / "mc"
    args = ["montecarlo", str(SPRING), "--runs", "6", "--seed", "7", "--out", str(out), "--no-progress"]
    args += ["--campaign", str(campaign), "--serial"]
    assert main(args) == 1  # the negative masses fail
    before = _table(out)
    failed = [r["run"] for r in before.to_pylist() if not r["passed"]]
    passed = [r["run"] for r in before.to_pylist() if r["passed"]]
    assert failed and len(passed) >= 2
    assert main([*args, "--rerun", "failed"]) == 1
    assert (out / "runs.jsonl").read_text().count("\n") == 6 + len(failed)
    assert _table(out).equals(before)
    chosen = passed[:2]
    assert main([*args, "--rerun", ",".join(map(str, chosen))]) == 1
    assert _table(out).equals(before)
    assert sorted(p.name for p in (out / "trajectories").iterdir()) == [f"run_{i:04d}.csv" for i in chosen]
    for r in _rows(out):
        if int(r["run"]) in chosen:
            traj = read_trajectory(out / "trajectories" / f"run_{int(r['run']):04d}.csv")
            assert traj["q.q1"][-1] == pytest.approx(float(r["final.q.q1"]), rel=1e-12, abs=0)
    capsys.readouterr()
    assert main([*args[:5], "8", *args[6:], "--rerun", "1"]) == 2  # another seed: another campaign
    assert "holds a different campaign: seed differ" in capsys.readouterr().err
    assert main([*args, "--rerun", "6"]) == 2
    assert "no run 6 in the campaign" in capsys.readouterr().err
    assert main([*args[:7], str(tmp_path / "empty"), *args[8:], "--rerun", "1"]) == 2
    assert "holds no campaign" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:
        main([*args, "--rerun", "failed", "--resume"])
    assert e.value.code == 2
