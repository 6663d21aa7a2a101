"""Monte Carlo campaigns and the sweep on the campaign engine: dispersions,
seeding, lazy grids, execution on dask.distributed vs serial, failed runs as rows, Ctrl-C and
--resume, statistics against numpy, SIGTERM without orphaned workers."""

import csv
import itertools
import json
import os
import random
import signal
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from scipy import stats as sps

from mbsfmu.campaign import (
    Choice,
    Grid,
    MonteCarlo,
    Normal,
    Serial,
    Uniform,
    parse_campaign,
    run_campaign,
)
from mbsfmu.campaign.dispersions import Normal as NormalD
from mbsfmu.campaign.points import apply_point
from mbsfmu.campaign.seeding import run_rng
from mbsfmu.campaign.statistics import statistics
from mbsfmu.campaign.sweep import grid
from mbsfmu.errors import InputError, ModelError
from mbsfmu.scenario.spec import load_scenario
from tests.support.journal import wait_rows
from tests.support.paths import DATA, ROOT

SPRING = DATA / "campaign_spring.yaml"


def _cli(*args, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "mbsfmu", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        **kw,
    )


def _table(path):
    import pyarrow.parquet as pq

    return pq.read_table(path).drop_columns(["wall_time_s"])


# --- fast tier: designs, seeding, addressing, statistics ------------------------------------


def test_run_i_draws_the_same_values_in_any_order():
    design = MonteCarlo({"a": Normal(1.0, 0.1), "b": Uniform(-1.0, 2.0), "c": Choice((1.0, 5.0, 7.0))}, 50, seed=42)
    forward = [design.point(i) for i in range(50)]
    order = list(range(50))
    random.Random(1).shuffle(order)
    assert {i: design.point(i) for i in order} == dict(enumerate(forward))
    # the stream is SeedSequence([S, i]): reproduced here from numpy directly
    g = np.random.Generator(np.random.PCG64(np.random.SeedSequence([42, 7])))
    assert forward[7]["a"] == 1.0 + 0.1 * g.standard_normal() and forward[7]["b"] == g.uniform(-1.0, 2.0)
    assert forward[7]["c"] == (1.0, 5.0, 7.0)[g.integers(3)]
    assert MonteCarlo(design.dispersions, 50, seed=43).point(7) != forward[7]
    assert run_rng(42, 7).random() != run_rng(42, 8).random()


def test_truncated_normal_follows_its_distribution():
    """Inverse-CDF draws within [lo, hi], distributed as scipy's truncnorm (KS test, n = 4000:
    the 1 % critical distance is 1.63 / sqrt(n) = 0.026)."""
    d = NormalD(1.0, 0.5, lo=0.6, hi=2.5)
    rng = run_rng(3, 0)
    x = np.array([d.draw(rng) for _ in range(4000)])
    assert x.min() >= 0.6 and x.max() <= 2.5
    ks = sps.kstest(x, sps.truncnorm((0.6 - 1.0) / 0.5, (2.5 - 1.0) / 0.5, loc=1.0, scale=0.5).cdf)
    assert ks.statistic < 1.63 / np.sqrt(x.size)


def test_grid_is_the_cartesian_product_in_itertools_order():
    params = [("a", [1.0, 2.0]), ("b", [10.0, 20.0, 30.0]), ("c", [-1.0, -2.0])]
    g = grid(params)
    expect = [dict(zip("abc", combo)) for combo in itertools.product(*(v for _, v in params))]
    assert g.n_runs == 12 and [g.point(i) for i in range(12)] == expect
    assert grid(params, runs=5).n_runs == 5


def test_huge_grid_is_enumerated_lazily_in_bounded_memory():
    """Regression: a 20000 x 20000 sweep once built all 4e8 points first (2.5 GB and growing).
    The design holds the two value lists; enumerating points costs nothing beyond them."""
    values = np.linspace(0.5, 1.5, 20000).tolist()
    tracemalloc.start()
    g = grid([("body.mass.mass", values), ("joint.q1.spring.k", values)], runs=1000)
    first = [g.point(i) for i in range(g.n_runs)]
    last = Grid(g.params).point(20000 * 20000 - 1)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert Grid(g.params).n_runs == 400_000_000 and g.n_runs == 1000
    assert first[1] == {"body.mass.mass": 0.5, "joint.q1.spring.k": values[1]}
    assert last == {"body.mass.mass": 1.5, "joint.q1.spring.k": 1.5}
    assert peak < 5e6, f"peak {peak / 1e6:.1f} MB"  # 1000 small dicts and two tuples of 20000 floats


def test_points_address_model_initial_state_and_inputs(tmp_path):
    scn = load_scenario(SPRING)
    s = apply_point(scn, {"body.mass.mass": 0.8, "initial.q.q1": 0.2, "initial.qd.q1": -1.0})
    assert ("body.mass.mass", 0.8) in s.edits and s.initial_q["q1"] == [0.2] and s.initial_qd["q1"] == [-1.0]
    src = SPRING.read_text().replace(
        "initial: {q: {q1: 0.1}}",
        "initial: {q: {q1: 0.1}}\ninputs: {q1.tau: {type: sine, amplitude: 1.0, frequency: 2.0}}",
    )
    src = src.replace("../../scenarios", str(ROOT / "scenarios"))
    (tmp_path / "s.yaml").write_text(src)
    scn = load_scenario(tmp_path / "s.yaml")
    s = apply_point(scn, {"inputs.q1.tau.amplitude": 3.0})
    assert s.inputs["q1.tau"].params == {"amplitude": 3.0, "frequency": 2.0}
    assert scn.inputs["q1.tau"].params["amplitude"] == 1.0
    with pytest.raises(InputError, match="a sine schedule has no number 'value'"):
        apply_point(scn, {"inputs.q1.tau.value": 3.0})
    with pytest.raises(InputError, match="no input 'q2.tau'"):
        apply_point(scn, {"inputs.q2.tau.amplitude": 3.0})
    with pytest.raises(InputError, match="set initial.qd.q1"):
        apply_point(scn, {"initial.qd.q1[1]": 3.0})


def test_campaign_file_problems_are_listed_with_lines(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text(
        "dispersions:\n  body.a.mass: {type: normal, mean: 1.0, std: -1}\n"
        "  gravity[3]: {type: gauss, mean: 1}\n  body.b.mass: {type: uniform, low: 2, high: 1}\n"
        "  body.c.mass: {type: normal, mean: 0, std: 1, min: 40, max: 41}\noutputs: q.q1\n"
    )
    with pytest.raises(ModelError) as e:
        parse_campaign(f)
    text = str(e.value)
    assert "5 problem(s)" in text
    for line, what in (
        (2, "std must be > 0"),
        (3, "type 'gauss'"),
        (4, "must exceed low"),
        (5, "holds a probability of"),
        (6, "expected a list of trajectory column names"),
    ):
        assert f"c.yaml:{line}:" in text and what in text, (line, what, text)


def test_statistics_match_numpy_on_the_raw_rows():
    rng = np.random.default_rng(5)
    x = rng.normal(size=101)
    rows = [{"run": i, "v": float(v), "passed": True} for i, v in enumerate(x)]
    rows[3]["v"] = float("nan")  # a diverged run: not counted
    del rows[4]["v"]  # a failed run without the value
    s = statistics(rows, ["v"])[0]
    ref = np.delete(x, [3, 4])
    assert s["n"] == 99 and s["outcome"] == "all"
    assert np.allclose(
        [s["min"], s["p0.135"], s["p5"], s["p50"], s["p95"], s["p99.865"], s["max"], s["mean"]],
        [ref.min(), *np.percentile(ref, [0.135, 5, 50, 95, 99.865]), ref.max(), ref.mean()],
        rtol=0,
        atol=1e-15,
    )


# --- campaigns (serial in-process, and dask.distributed) ------------------------------------


class Shuffled(Serial):
    """Runs every spec in a shuffled order (another completion order than Serial's)."""

    def imap_unordered(self, fn, specs, n=None):
        specs = list(specs)
        random.Random(7).shuffle(specs)
        return super().imap_unordered(fn, iter(specs), n)


@pytest.fixture(scope="module")
def serial_campaign(tmp_path_factory):
    design, _ = _design(10)
    out = tmp_path_factory.mktemp("serial")
    return run_campaign(SPRING, design, out, execution=Serial(), progress=False, outputs=["q.q1", "engine.E"]), out


def _design(runs):
    from mbsfmu.campaign import montecarlo_design

    return montecarlo_design(SPRING, runs, seed=11)


@pytest.mark.integration
def test_campaign_table_statistics_and_picture(serial_campaign):
    import pyarrow.parquet as pq

    result, out = serial_campaign
    t = pq.read_table(out / "campaign.parquet").to_pydict()
    assert t["run"] == list(range(10)) and all(t["passed"]) and set(t["error"]) == {""}
    design, _ = _design(10)
    assert [{p: t[p][i] for p in design.paths} for i in range(10)] == [design.point(i) for i in range(10)]
    assert max(t["check.energy_balance.max_rel"]) <= 1e-10
    for col in ("check.energy_balance.max_rel", "final.q.q1", "output.engine.E.max", "body.mass.mass"):
        s = next(e for e in result.statistics if e["column"] == col)
        x = np.array(t[col])
        assert [s["p5"], s["p50"], s["p95"]] == np.percentile(x, [5, 50, 95]).tolist() and s["n"] == 10
    lines = (out / "campaign.csv").read_text().splitlines()
    assert len(lines) == 11 and lines[0].startswith("run,body.mass.mass,joint.q1.spring.k,initial.q.q1,passed,error")
    assert (out / "campaign.png").stat().st_size > 10_000 and (out / "statistics.csv").exists()


@pytest.mark.integration
def test_two_worker_cluster_and_another_order_equal_the_serial_table(serial_campaign, tmp_path):
    from mbsfmu.campaign import Dask

    _, serial_out = serial_campaign
    design, _ = _design(10)
    from distributed import LocalCluster

    with LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0", scheduler_port=0
    ) as cluster:
        runs = (
            ("dask", Dask(workers=2)),
            ("scheduler", Dask(scheduler=cluster.scheduler_address)),
            ("shuffled", Shuffled()),
        )  # a 2-worker LocalCluster, a running cluster by address, another order
        for name, execution in runs:
            run_campaign(
                SPRING, design, tmp_path / name, execution=execution, progress=False, outputs=["q.q1", "engine.E"]
            )
            assert _table(tmp_path / name / "campaign.parquet").equals(_table(serial_out / "campaign.parquet")), name
            journal = (tmp_path / name / "runs.jsonl").read_text().splitlines()
            order = [json.loads(line)["row"]["run"] for line in journal]
            assert sorted(order) == list(range(10))
    assert order != list(range(10))  # the shuffled execution really finished out of order


@pytest.mark.integration
def test_a_run_that_raises_is_a_row_and_the_campaign_completes(tmp_path):
    design = MonteCarlo({"body.mass.mass": Uniform(-0.7, 0.9)}, 6, seed=2)  # runs 0 and 3 draw negative masses
    masses = [design.point(i)["body.mass.mass"] for i in range(6)]
    assert any(m < 0 for m in masses) and any(m > 0 for m in masses)
    result = run_campaign(
        SPRING, design, tmp_path, execution=Serial(), progress=False, trajectories="trajectories/run_{run:04d}.csv"
    )
    assert [r["run"] for r in result.rows] == list(range(6))
    for r, m in zip(result.rows, masses):
        traj = tmp_path / "trajectories" / f"run_{r['run']:04d}.csv"
        if m < 0:
            assert not r["passed"] and "mass" in r["error"] and "ModelError" in r["error"], r
            assert not traj.exists()
        else:
            assert r["passed"] and r["error"] == "" and np.isfinite(r["final.q.q1"])
            from mbsfmu.trajectory import read_trajectory

            t = read_trajectory(traj)  # the client wrote what the worker sent back
            assert t["q.q1"][-1] == r["final.q.q1"] and t.time[-1] == pytest.approx(0.1, rel=0, abs=1e-15)
    csv = (tmp_path / "campaign.csv").read_text()
    assert csv.count("ModelError") == sum(m < 0 for m in masses)


@pytest.mark.integration
def test_ctrl_c_then_resume_equals_an_uninterrupted_campaign(serial_campaign, tmp_path):
    """Ctrl-C to `mbsfmu montecarlo` on a 2-worker cluster: exit 130, no traceback (from the
    client or the workers), the finished rows written;
    --resume completes the table, equal to the uninterrupted one (serial_campaign: same seed)."""
    _, serial_out = serial_campaign
    out = tmp_path / "mc"
    args = (
        "montecarlo",
        SPRING,
        "--runs",
        10,
        "--seed",
        11,
        "--out",
        out,
        "--workers",
        2,
        "--output",
        "q.q1",
        "--output",
        "engine.E",
    )
    proc = _cli(*args, start_new_session=True)
    wait_rows(out / "runs.jsonl", 2, proc)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group, workers included
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "--resume" in stderr and "Traceback" not in stderr
    n = (out / "campaign.csv").read_text().count("\n") - 1
    assert 2 <= n == (out / "runs.jsonl").read_text().count("\n")
    if n < 10:
        again = _cli(*args)
        _, stderr = again.communicate(timeout=120)
        assert again.returncode == 2 and "--resume" in stderr
    res = _cli(*args, "--resume")
    stdout, stderr = res.communicate(timeout=300)
    assert res.returncode == 0, stderr
    assert "10 of 10 runs, 0 failed" in stdout
    assert _table(out / "campaign.parquet").equals(_table(serial_out / "campaign.parquet"))


# --- sweep on the campaign engine: Ctrl-C and SIGTERM on a huge grid ----------------------------------------


def _sweep_huge(out):
    return _cli(
        "sweep",
        SPRING,
        "--param",
        "body.mass.mass=0.5:1.5:20000",
        "--param",
        "joint.q1.spring.k=30:40:20000",
        "--out",
        out,
        "--workers",
        2,
        "--no-progress",
    )


@pytest.mark.integration
def test_sweep_ctrl_c_on_a_huge_grid_writes_the_finished_rows(tmp_path):
    proc = _sweep_huge(tmp_path)
    wait_rows(tmp_path / "runs.jsonl", 2, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    lines = (tmp_path / "summary.csv").read_text().splitlines()
    assert lines[0].startswith("run,body.mass.mass,joint.q1.spring.k,passed,error") and len(lines) >= 3
    done = [int(line.split(",")[0]) for line in lines[1:]]
    assert all((tmp_path / f"run_{i:04d}" / "trajectory.csv").exists() for i in done)
    assert "of 400000000 runs finished" in stderr


@pytest.mark.integration
def test_sweep_sigterm_leaves_no_worker_processes(tmp_path):
    psutil = pytest.importorskip("psutil")
    proc = _sweep_huge(tmp_path)
    wait_rows(tmp_path / "runs.jsonl", 1, proc)
    children = psutil.Process(proc.pid).children(recursive=True)
    assert len(children) >= 2  # the worker processes (and multiprocessing's helpers)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    _, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, [p.pid for p in alive]
    assert (tmp_path / "summary.csv").read_text().count("\n") >= 2


def test_paths_that_address_nothing_are_refused_before_any_run(tmp_path):
    design = MonteCarlo(
        {
            "body.link9.mass": Uniform(1.0, 2.0),
            "initial.q.q7": Uniform(0.0, 1.0),
            "inputs.q1.tau.value": Uniform(0.0, 1.0),
        },
        3,
        seed=0,
    )
    with pytest.raises(InputError) as e:
        run_campaign(SPRING, design, tmp_path / "x", execution=Serial(), progress=False)
    text = str(e.value)
    assert "3 parameter problems" in text and "no body 'link9'" in text and "no joint 'q7'" in text
    assert "no input 'q1.tau'" in text and not (tmp_path / "x").exists()


def test_resume_refuses_another_campaign_and_a_fresh_run_refuses_an_old_dir_with_runs(tmp_path):
    from mbsfmu.campaign.table import open_campaign

    open_campaign(tmp_path, {"seed": 1, "runs": 4}, resume=False)
    # no run finished (e.g. the cluster could not start it): the same campaign starts again
    assert open_campaign(tmp_path, {"seed": 1, "runs": 4}, resume=False) == {}
    with pytest.raises(InputError, match="already holds a campaign"):
        open_campaign(tmp_path, {"seed": 2, "runs": 4}, resume=False)
    (tmp_path / "runs.jsonl").write_text('{"row": {"run": 1, "passed": true}, "series": {}}\n')
    with pytest.raises(InputError, match="already holds a campaign"):
        open_campaign(tmp_path, {"seed": 1, "runs": 4}, resume=False)
    with pytest.raises(InputError, match="different campaign: seed differ"):
        open_campaign(tmp_path, {"seed": 2, "runs": 4}, resume=True)
    (tmp_path / "runs.jsonl").write_text('{"row": {"run": 2, "passed": true}, "series": {}}\n{"row": {"run": 0, "pa')
    assert list(open_campaign(tmp_path, {"seed": 1, "runs": 4}, resume=True)) == [2]  # the cut line is dropped
    assert (tmp_path / "runs.jsonl").read_text().endswith("}\n")


@pytest.mark.integration
def test_a_stop_request_keeps_finished_runs_and_drops_the_interrupted_one(serial_campaign, tmp_path):
    """The command line's stop check (its signal state): the run that returned after the signal
    (a run that caught the interrupt itself) is not journaled; resume completes the same table."""
    _, serial_out = serial_campaign
    design, _ = _design(10)
    seen = []

    def stop():
        seen.append(1)
        return len(seen) > 3  # "the signal arrived while the 4th run was running"

    first = run_campaign(
        SPRING, design, tmp_path, execution=Serial(), progress=False, outputs=["q.q1", "engine.E"], stop=stop
    )
    assert first.interrupted and [r["run"] for r in first.rows] == [0, 1, 2]
    done = run_campaign(
        SPRING, design, tmp_path, execution=Serial(), progress=False, outputs=["q.q1", "engine.E"], resume=True
    )
    assert not done.interrupted and len(done.rows) == 10
    assert _table(tmp_path / "campaign.parquet").equals(_table(serial_out / "campaign.parquet"))


def test_inertia_paths_set_symmetric_entries():
    from mbsfmu import load_model
    from mbsfmu.engine.spec.edits import edit_spec

    spec = load_model(ROOT / "scenarios" / "models" / "scara.yaml").spec
    body = spec.bodies[0].name
    I = edit_spec(edit_spec(spec, f"body.{body}.inertia.Ixy", 0.01), f"body.{body}.inertia.Izz", 0.5).bodies[0].inertia
    assert I[0][1] == I[1][0] == 0.01 and I[2][2] == 0.5
    assert I[0][0] == spec.bodies[0].inertia[0][0] and I[0][2] == spec.bodies[0].inertia[0][2]
    with pytest.raises(InputError, match="unknown parameter path"):
        edit_spec(spec, f"body.{body}.inertia.Ixw", 1.0)


@pytest.mark.integration
def test_an_unwritable_output_is_a_clear_error_and_keeps_the_journal(tmp_path):
    from mbsfmu.errors import MbsError

    design, outputs = _design(2)
    out = tmp_path / "mc"
    out.mkdir()
    (out / "blocker").write_text("a file where the trajectories folder should go")
    with pytest.raises(MbsError, match="cannot write .*--resume continues"):
        run_campaign(
            SPRING,
            design,
            out,
            execution=Serial(),
            progress=False,
            outputs=outputs,
            trajectories="blocker/run_{run:04d}.csv",
        )
    assert (out / "campaign.json").exists() and (out / "runs.jsonl").read_text() == ""


def test_cli_refuses_a_campaign_without_dispersions_or_with_bad_numbers(tmp_path, capsys):
    from mbsfmu.cli import main

    plain = ROOT / "scenarios" / "spring_pendulum.yaml"
    assert main(["montecarlo", str(plain), "--runs", "2", "--seed", "1", "--out", str(tmp_path / "a")]) == 2
    assert "no dispersions" in capsys.readouterr().err and not (tmp_path / "a").exists()
    for bad in (["--runs", "0", "--seed", "1"], ["--runs", "2", "--seed", "-1"]):
        with pytest.raises(SystemExit) as e:
            main(["montecarlo", str(SPRING), *bad, "--out", str(tmp_path / "b")])
        assert e.value.code == 2
    assert "expected an integer >= 0, got '-1'" in capsys.readouterr().err
    assert (
        main(
            [
                "montecarlo",
                str(SPRING),
                "--runs",
                "2",
                "--seed",
                "1",
                "--out",
                str(tmp_path / "c"),
                "--serial",
                "--duration",
                "-1",
            ]
        )
        == 2
    )
    assert "duration must be a positive finite time" in capsys.readouterr().err


def test_the_files_line_names_each_file_once():
    """Without pyarrow the table is the CSV: it was listed as "campaign.csv, campaign.csv"."""
    from mbsfmu.campaign.command import files_text

    no_parquet = {"table": "o/campaign.csv", "csv": "o/campaign.csv", "statistics": "o/statistics.csv"}
    assert files_text(no_parquet) == "table o/campaign.csv; statistics o/statistics.csv"
    both = {**no_parquet, "table": "o/campaign.parquet", "picture": "o/campaign.png"}
    assert files_text(both) == (
        "table o/campaign.parquet, o/campaign.csv; statistics o/statistics.csv; picture o/campaign.png"
    )


def test_every_bad_param_is_reported_in_one_round():
    """Two bad --param gave one message (the first); the wording said "not enough values to unpack"."""
    from mbsfmu.campaign.sweep import parse_params
    from mbsfmu.errors import InputError

    assert parse_params(["body.a.mass=1:2:3", "gravity[3]=-9.8,-9.81"]) == [
        ("body.a.mass", [1.0, 1.5, 2.0]),
        ("gravity[3]", [-9.8, -9.81]),
    ]
    with pytest.raises(InputError) as info:
        parse_params(["body.a.mass=1:x:2", "ok=1,2", "b=1:3", "c=1,nan", "noequals"])
    text = str(info.value)
    assert text.startswith("4 --param problems:")
    for fragment in ("stop 'x' is not a number", "2 fields in '1:3'", "value 2 'nan' is not a finite", "'noequals'"):
        assert fragment in text, text
    assert "unpack" not in text and "could not convert" not in text


@pytest.mark.integration
def test_the_bundled_gnc_monte_carlo_example_passes_in_every_run(tmp_path):
    """scenarios/spacecraft_montecarlo.yaml: mass, CoM, inertia and wheel dispersions; every run keeps
    its conservation checks (5 runs of the quick duration here; the docs quote the full campaign)."""
    from mbsfmu.cli import main

    out = tmp_path / "mc"
    args = ["montecarlo", str(ROOT / "scenarios" / "spacecraft_montecarlo.yaml"), "--runs", "5", "--seed", "1"]
    assert main([*args, "-o", str(out), "--serial", "--duration", "5", "--no-progress"]) == 0
    rows = list(csv.DictReader((out / "campaign.csv").open()))
    assert len(rows) == 5 and all(r["passed"] == "True" for r in rows)
    masses = {float(r["body.hub.mass"]) for r in rows}
    assert len(masses) == 5 and all(480.0 <= m <= 520.0 for m in masses)  # drawn, within the truncation


def test_the_picture_colours_each_check_by_its_own_verdict(tmp_path, monkeypatch):
    """Runs that failed a reference but passed engine_agreement: the engine_agreement panel shows
    them as passing that check (it showed them red, "failed", though the check passed); the
    sweep table and the failed-run lines say why a run failed."""
    from matplotlib.figure import Figure

    from mbsfmu.campaign.picture import plot_campaign, rows_columns
    from mbsfmu.campaign.runner import failure_reason

    legends = {}
    real = Figure.savefig

    def savefig(self, path, *a, **k):
        for ax in self.axes:
            if ax.get_legend():
                legends.setdefault(ax.get_xlabel(), [t.get_text() for t in ax.get_legend().get_texts()])
        return real(self, path, *a, **k)

    monkeypatch.setattr(Figure, "savefig", savefig)
    rows = [
        {
            "run": i,
            "p": float(i),
            "passed": False,
            "error": None,
            "failed_checks": "reference q.q1 ~ a * t",
            "check.engine_agreement.max_rel": 1e-15,
            "check.engine_agreement.passed": True,
        }
        for i in range(4)
    ]
    plot_campaign(tmp_path, "t", rows_columns(rows, ["p"]), {}, ["p"], [], {"engine_agreement": ("rel", 1e-13)})
    assert legends["log10 max_rel engine_agreement"][:2] == ["passed this check (4)", "failed this check (0)"]
    assert legends["p"][:2] == ["runs passed (0)", "runs failed (4)"]
    assert failure_reason(rows[0]) == "reference q.q1 ~ a * t" and failure_reason({"passed": True}) == ""


def test_batch_size_gives_16_tasks_per_slot_within_1_to_64_runs_and_at_most_10k_tasks():
    from mbsfmu.campaign.execution import MAX_BATCH, batch_size

    assert [batch_size(n, 2) for n in (0, 10, 32, 64, 320, 2048, 100_000)] == [1, 1, 1, 2, 10, 64, MAX_BATCH]
    assert batch_size(100_000, 3200) == 10  # 100 nodes x 32 threads: 10,000 tasks (16 per slot would be 1 run)
    assert batch_size(10**6, 2) == 100 and batch_size(10**6 + 1, 3200) == 101  # never over 10,000 tasks
    assert batch_size(4 * 10**8, 2) == 1000  # a huge sweep: batches of 1000 at most


def test_batches_ramp_up_from_one_run():
    from mbsfmu.campaign.execution import batched

    assert [len(b) for b in batched(iter(range(40)), 8)] == [1, 2, 4, 8, 8, 8, 8, 1]
    assert [len(b) for b in batched(iter(range(10)), 4, ramp=False)] == [4, 4, 2]
    assert [x for b in batched(iter(range(40)), 8) for x in b] == list(range(40))


def test_dask_execution_refuses_a_bad_batch_size():
    from mbsfmu.campaign import Dask
    from mbsfmu.errors import MbsError

    with pytest.raises(MbsError, match="batch: runs per task must be a positive integer, got 0"):
        Dask(batch=0)


@pytest.mark.integration
def test_a_campaign_on_an_existing_client_leaves_it_open(tmp_path):
    """The Python API from an existing distributed.Client (dask-jobqueue, Kubernetes): the campaign runs on
    it, batched, and the caller's client and cluster stay usable after."""
    from distributed import Client, LocalCluster

    from mbsfmu.campaign import Dask

    design, outputs = _design(6)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        with Client(cluster) as client:
            result = run_campaign(
                SPRING, design, tmp_path, execution=Dask(client, batch=4), outputs=outputs, progress=False
            )
            assert client.status == "running" and client.submit(sum, [1, 2]).result() == 3
    assert [r["run"] for r in result.rows] == list(range(6)) and not result.failed
