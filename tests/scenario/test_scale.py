"""A 10,000-body chain runs end to end (issue 23: cost linear in model size). Behaviour, not speed:
the run completes with its checks, every stage's cost is measured in benchmarks/bench_scale.py."""

from __future__ import annotations

import json

import pytest
import yaml

from mbsfmu.cli import main

N = 10_000


@pytest.mark.slow
def test_ten_thousand_body_chain_runs_end_to_end(tmp_path):
    bodies = [
        {
            "name": f"b{k}",
            "parent": "world" if k == 0 else f"b{k - 1}",
            "joint": {
                "name": f"j{k}",
                "type": "revolute",
                "axis": [0, k % 2, 1 - k % 2],
                "origin": {"xyz": [0.1, 0, 0]},
            },
            "mass": 1.0,
            "com": [0.05, 0, 0],
            "inertia": {"Ixx": 0.01, "Iyy": 0.01, "Izz": 0.01},
        }
        for k in range(N)
    ]
    (tmp_path / "chain.yaml").write_text(yaml.safe_dump({"version": 1, "name": "chain", "bodies": bodies}))
    (tmp_path / "run.yaml").write_text(
        "version: 1\nname: chain10k\nmodel: chain.yaml\nduration: 0.01\ndt: 0.001\n"
        "integrator: {method: rk4, h_max: 0.001}\nchecks: {procedure: 1, energy_constant: rel:1.0e-9}\n"
    )
    out = tmp_path / "out"
    assert main(["run", str(tmp_path / "run.yaml"), "-o", str(out), "--no-progress"]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["passed"] and report["steps"] == 10 and report["checks"]["energy_constant"]["passed"]
    assert [p.name for p in sorted(out.glob("*.png"))] == ["conservation.png", "joint_states.png"]
