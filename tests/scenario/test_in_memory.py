"""A run checks the rows it wrote as it holds them (``trajectory.written_trajectory``) instead of
reading its files back: the numbers are the files' numbers bit for bit, so the report is the one
the re-read files give. Shown here on bundled scenarios (springs, wheels, a closed loop, inputs)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import mbsfmu.scenario.run as run_module
from mbsfmu.checker.conservation import conservation_report
from mbsfmu.scenario.spec import load_scenario
from mbsfmu.trajectory import TrajectoryError, join_trajectories, read_trajectory, written_trajectory
from tests.support.paths import ROOT

SCENARIOS = ("chain7_energy.yaml", "spacecraft_wheel_torques.yaml", "fourbar_energy.yaml", "scara_tracking.yaml")


@pytest.mark.parametrize("name", SCENARIOS)
def test_run_checks_the_numbers_its_files_hold(name, tmp_path, monkeypatch):
    """The trajectory finish_run gathers from the rows the run holds equals the files read back:
    same columns in the same order, every value the same double (compared as bits), the same
    source; its checks give the same report as the files' checks."""
    handed = {}
    finish = run_module.finish_run

    def spy(*args, **kwargs):
        given = kwargs.get("written")

        def gather():  # what the run hands to the checks, kept for the comparison
            handed["written"] = given()
            return handed["written"]

        kwargs["written"] = None if given is None else gather
        return finish(*args, **kwargs)

    monkeypatch.setattr(run_module, "finish_run", spy)
    scn = replace(load_scenario(ROOT / "scenarios" / name), plots=False)
    report = run_module.run_scenario(scn, tmp_path, duration=0.5, progress=False)
    memory = handed.get("written")
    assert memory is not None and report["checks"]  # final values of scara_tracking need its whole duration
    files = join_trajectories(read_trajectory(tmp_path / "trajectory.csv"), read_trajectory(tmp_path / "records.csv"))
    assert memory.names == files.names and memory.source == files.source
    for column in files.names:
        assert np.array_equal(memory[column].view(np.uint64), files[column].view(np.uint64)), column
    assert conservation_report(memory, scn.checks, scn.procedure) == conservation_report(
        files, scn.checks, scn.procedure
    )


def test_written_trajectory_leaves_nan_to_the_file(tmp_path):
    """A NaN is written "nan" (sign and payload lost): the file is read back then; a time that does
    not increase is reported as read_trajectory reports it, with the file's line."""
    rows = [np.array([0.0, 1.0]), np.array([0.1, np.nan])]
    assert written_trajectory(tmp_path / "t.csv", ("time", "x"), rows) is None
    assert written_trajectory(tmp_path / "t.csv", ("time", "x"), []) is None
    traj = written_trajectory(tmp_path / "t.csv", ("time", "x"), [np.array([0.0, -0.0]), np.array([0.1, np.inf])])
    assert traj.names == ("time", "x") and np.signbit(traj["x"][0]) and traj["x"][1] == np.inf
    with pytest.raises(TrajectoryError, match=r"t\.csv: line 3 \(row 2\): time 0\.0 s is not greater"):
        written_trajectory(tmp_path / "t.csv", ("time", "x"), [np.array([0.0, 1.0]), np.array([0.0, 2.0])])
