"""The batched path of campaigns (runner.run_batch: the runs of a task in one rollout of the C core)
gives the rows of the run-by-run path (runner.run_one) bit for bit, but wall_time_s; runs it cannot
take run by run (batch_reason) with the same rows."""

from __future__ import annotations

import csv
import json

import pytest

from mbsfmu.campaign import Serial, montecarlo_design, run_campaign
from mbsfmu.campaign.points import apply_point
from mbsfmu.campaign.runner import RunSpec, batch_reason, run_batch, run_one
from mbsfmu.scenario.spec import load_scenario
from tests.support.paths import DATA, ROOT

SPRING = DATA / "campaign_spring.yaml"


def _same(a: dict, b: dict) -> bool:
    """a and b alike but for wall_time_s (the one column that differs between executions)."""
    out = []
    for r in (a, b):
        r = {**r, "row": {k: v for k, v in r["row"].items() if k != "wall_time_s"}}
        out.append(json.dumps(r, sort_keys=True))
    return out[0] == out[1]


def _table(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    k = rows[0].index("wall_time_s")
    return [r[:k] + r[k + 1 :] for r in rows]


@pytest.mark.parametrize("duration", [None, 0.055])  # the scenario's 0.1 s; a last interval shortened
def test_batched_campaign_table_equals_run_by_run(tmp_path, duration):
    """The same Monte Carlo table (campaign.csv, every cell but wall_time_s, as text) batched and run
    by run; with a tight energy bound some runs fail their check, and their rows say so alike."""
    text = SPRING.read_text().replace("energy_balance: rel:1.0e-10", "energy_balance: rel:2.0e-16")
    text = text.replace("../../scenarios/", str(ROOT / "scenarios") + "/")
    scenario = tmp_path / "tight.yaml"
    scenario.write_text(text)
    design, outputs = montecarlo_design(scenario, 24, seed=5)
    tables = []
    for batched in (True, False):
        out = tmp_path / f"batched_{batched}"
        run_campaign(
            scenario,
            design,
            out,
            duration=duration,
            outputs=outputs,
            execution=Serial(),
            progress=False,
            picture=False,
            batched=batched,
        )
        tables.append(_table(out / "campaign.csv"))
    assert tables[0] == tables[1]
    passed = tables[0][0].index("passed")
    assert {r[passed] for r in tables[0][1:]} == {"True", "False"}  # both kinds of rows compared


def test_a_run_that_fails_in_the_core_has_the_same_row(tmp_path):
    """A run started at qd = 1e160 fails in its first step (DOP853's step size underflows): its row
    (error, t_end, n_steps, checks of the one row written) is run_one's; the runs beside it complete."""
    design, outputs = montecarlo_design(SPRING, 3, seed=2)
    points = [design.point(0), {**design.point(1), "initial.qd.q1": 1e160}, design.point(2)]
    specs = tuple(RunSpec(str(SPRING), i, p, None, tuple(outputs), trajectory=True) for i, p in enumerate(points))
    batched = run_batch(specs)
    assert "failed" in batched[1]["row"]["error"]
    assert [r["row"]["passed"] for r in batched] == [True, False, True]
    for got, spec in zip(batched, specs):
        assert _same(got, run_one(spec))


@pytest.mark.parametrize(
    "scenario, why",
    [
        ("spacecraft_montecarlo.yaml", "input schedules"),
        ("scara_tracking.yaml", "a sampled controller"),
    ],
)
def test_runs_the_batched_path_cannot_take_run_by_run(scenario, why):
    path = ROOT / "scenarios" / scenario
    spec = RunSpec(str(path), 0, {}, 0.5, ())
    assert why in batch_reason(apply_point(load_scenario(path), {}), spec)
    assert batch_reason(apply_point(load_scenario(SPRING), {}), spec) == ""
    timed = RunSpec(str(SPRING), 0, {}, None, (), timeout=60.0)
    assert "run_timeout" in batch_reason(apply_point(load_scenario(SPRING), {}), timed)
    [got] = run_batch((spec,))
    assert _same(got, run_one(spec))


def test_closed_loops_run_by_run():
    """A model with closed loops (its loop columns come from Python) runs by run_one inside a batch."""
    path = ROOT / "scenarios" / "fourbar_energy.yaml"
    specs = (RunSpec(str(path), 0, {}, 0.05, ()), RunSpec(str(SPRING), 1, {}, None, ()))
    got = run_batch(specs)
    for g, s in zip(got, specs):
        assert _same(g, run_one(s))
