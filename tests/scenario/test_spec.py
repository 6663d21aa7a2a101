"""The parsed scenario's typed records (mbsfmu/scenario/spec.py): references, final values, loop
options and an inline model as frozen dataclasses with named fields, and the loop options as the
Simulator receives them. Inline models only: no file of the repository is read."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest

from mbsfmu.scenario import ScenarioError, build_simulator, load_scenario
from mbsfmu.scenario.expressions import evaluate
from mbsfmu.scenario.spec import FinalValue, InlineModel, LoopOptions, Reference

PENDULUM = """version: 1
model:
  version: 1
  gravity: [0, -9.81, 0]
  bodies:
    - {name: rod, parent: world, joint: {name: q1, type: revolute}, mass: 1.0, com: [0, -0.5, 0],
       inertia: {Ixx: 0.0833333333333333, Iyy: 0.0, Izz: 0.0833333333333333}}
duration: 1.0
dt: 0.1
"""


def scenario(tmp_path, extra: str):
    path = tmp_path / "s.yaml"
    path.write_text(PENDULUM + extra)
    return load_scenario(path)


def test_references_and_finals_are_named_records(tmp_path):
    scn = scenario(
        tmp_path,
        "references:\n"
        "  - {column: q.q1, expr: 'a * t', params: {a: 2.0}, tol: 1.0e-3, t0: 0.2}\n"
        "  - {column: qd.q1, expr: '0', tol: 0.5}\n"
        "final:\n  q.q1: {value: 0.25, tol: 1.0e-6}\n",
    )
    first, second = scn.references
    assert isinstance(first, Reference)
    assert (first.column, first.expr, first.params, first.tol, first.t0, first.t1) == (
        "q.q1",
        "a * t",
        {"a": 2.0},
        1.0e-3,
        0.2,
        math.inf,
    )
    assert first.key == "q.q1 ~ a * t"  # its name in report.json
    np.testing.assert_array_equal(evaluate(first.tree, np.array([0.0, 1.5]), first.params), [0.0, 3.0])
    assert (second.t0, second.t1) == (-math.inf, math.inf)  # no window: the whole run
    assert scn.final == {"q.q1": FinalValue(value=0.25, tol=1.0e-6)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.tol = 1.0


def test_a_reference_without_expr_is_a_listed_problem(tmp_path):
    """Regression: a reference with column and tol but no expr raised KeyError: 'expr' (a
    traceback) instead of listing the missing key with the other problems."""
    with pytest.raises(ScenarioError) as e:
        scenario(tmp_path, "references:\n  - {column: q.q1, tol: 1.0}\nfinal:\n  q.q1: {value: 0.0}\n")
    msg = str(e.value)
    assert re.search(r"s\.yaml:\d+: references\[0\]\.expr: missing required key 'expr'", msg), msg
    assert re.search(r"s\.yaml:13: final\.q\.q1\.tol: missing required key 'tol'", msg), msg  # same round


def test_loop_options_reach_the_simulator(tmp_path):
    scn = scenario(
        tmp_path, "loops: {method: partitioning, stabilisation: baumgarte, baumgarte: [4, 5], assemble: false}\n"
    )
    assert scn.loops == LoopOptions(
        method="partitioning", stabilisation="baumgarte", baumgarte=(4.0, 5.0), assemble=False
    )
    assert scn.loops.simulator_options() == {
        "loop_method": "partitioning",
        "loop_stabilisation": "baumgarte",
        "baumgarte": (4.0, 5.0),
        "assemble": False,
    }
    sim = build_simulator(scn)
    assert (sim.loop_method, sim.loop_stabilisation, sim.assemble) == ("partitioning", "baumgarte", False)


def test_no_loop_option_is_false_and_keeps_the_simulator_defaults(tmp_path):
    """An empty or absent loops section gives no option (bool False: a co-simulation accepts it)
    and the Simulator's defaults."""
    for extra in ("", "loops: {}\n"):
        scn = scenario(tmp_path, extra)
        assert scn.loops == LoopOptions() and not scn.loops and scn.loops.simulator_options() == {}
    assert LoopOptions(assemble=False)  # an option given, even False
    sim = build_simulator(scn)
    assert (sim.loop_method, sim.loop_stabilisation, sim.assemble) == ("multipliers", "both", True)


def test_inline_model_keeps_its_lines(tmp_path):
    scn = scenario(tmp_path, "")
    assert isinstance(scn.model_inline, InlineModel) and scn.model_path == scn.path
    assert scn.model_inline.doc["bodies"][0]["name"] == "rod"
    assert scn.model_inline.lines[("gravity",)] == 4  # line of gravity: in the scenario file


def test_non_finite_values_fail_references_and_finals_by_name(tmp_path):
    """A NaN in a referenced column or at the last row never passes (NaN compares false with
    everything, so it must be caught, and the report says where), with no numpy warning."""
    import warnings

    from mbsfmu.scenario.report import final_results, reference_results
    from mbsfmu.trajectory import Trajectory

    scn = scenario(
        tmp_path,
        "references:\n  - {column: q.q1, expr: '0', tol: 1.0e6}\nfinal:\n  qd.q1: {value: 0.0, tol: 1.0e6}\n",
    )
    t = np.linspace(0, 1, 5)
    q, qd = np.zeros(5), np.zeros(5)
    q[2], qd[-1] = np.inf, np.nan
    traj = Trajectory.from_columns({"time": t, "q.q1": q, "qd.q1": qd})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ref = reference_results(scn, traj)["q.q1 ~ 0"]
        fin = final_results(scn, traj, complete=True)["qd.q1"]
    assert not ref["passed"] and "t = 0.5 s: q.q1 = inf" in ref["error"]
    assert not fin["passed"] and "qd.q1 is nan" in fin["error"]


def test_unknown_reference_and_final_columns_are_problems_of_the_file(tmp_path, capsys):
    """Regression (issue 37 item 3): `column: q.q9` and `final: {q.qq: ...}` were found after the
    whole run, printed as "tol nan FAIL", exit 1. Now load_scenario lists every unknown column
    with its line and field, the closest valid column when one is near, before anything runs;
    `mbsfmu run` exits 2 and writes nothing."""
    from mbsfmu.cli import main

    extra = (
        "references:\n"  # line 10
        "  - {column: q.q9, expr: '0', tol: 1.0}\n"
        "  - {column: q.q1, expr: '0', tol: 1.0}\n"
        "final:\n"
        "  q.qq: {value: 0.0, tol: 1.0}\n"  # line 14
        "  rod.r_abs[2]: {value: -0.5, tol: 1.0e-6}\n"  # a body record: records.csv, written with checks only
        "  zzz: {value: 0.0, tol: 1.0}\n"
    )
    with pytest.raises(ScenarioError) as e:
        scenario(tmp_path, extra)
    msg = str(e.value)
    assert len(e.value.problems) == 4, msg
    assert re.search(r"s\.yaml:11: references\[0\]\.column: unknown column 'q\.q9' \(did you mean 'q\.q1'\?\)", msg)
    assert re.search(r"s\.yaml:14: final\.q\.qq: unknown column 'q\.qq' \(did you mean 'q\.q1'\?\)", msg)
    assert re.search(r"s\.yaml:15: final\.rod\.r_abs\[2\]: column 'rod\.r_abs\[2\]' is in records\.csv, which", msg)
    assert re.search(r"s\.yaml:16: final\.zzz: unknown column 'zzz'; trajectory\.csv has time, q\.q1, qd\.q1", msg)
    # the suggestion works as written: with records on, the body record is a column of the run
    scn = scenario(
        tmp_path,
        extra.replace("q.q9", "q.q1").replace("q.qq", "q.q1").replace("  zzz:", "  qd.q1:")
        + "outputs: {records: true}\n",
    )
    assert set(scn.final) == {"q.q1", "rod.r_abs[2]", "qd.q1"}

    (tmp_path / "s.yaml").write_text(PENDULUM + extra)
    assert main(["run", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "4 problem(s)" in err and "references[0].column: unknown column 'q.q9'" in err
    assert not (tmp_path / "out" / "trajectory.csv").exists()
