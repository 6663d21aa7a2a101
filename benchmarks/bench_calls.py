"""Per-call cost of the Model's dynamics from Python against the matching Pinocchio calls, in one run.

    python benchmarks/bench_calls.py [--repeats 9] [--calls 3000] [--json out.json]

Robots: the 7-DoF arm of the scenarios (``scenarios/models/urdf_arm7.urdf``: a Panda, 7 arm joints
and 2 finger joints, nv = 9) and the Unitree G1 humanoid (29 DoF, public ``example-robot-data``, the
``test`` extra), fixed base, each read by mbsfmu's URDF reader and by Pinocchio's own (joint damping
removed, as Pinocchio has none; Pinocchio's coordinates mapped by tests/support/pin_twin.py).
Pairs, each call from Python with float64 arrays at one random state:

- ``Model.forward_dynamics(q, qd, tau)`` and ``pin.aba(model, data, q, v, tau)``;
- ``Model.inverse_dynamics(q, qd, qdd)`` and ``pin.rnea``;
- ``Model.mass_matrix(q)`` and ``pin.crba`` (Pinocchio fills the upper triangle only, ours all of M);
- ``Model.aba_derivatives(q, qd, tau)`` and ``pin.computeABADerivatives``;
- ``Model.rnea_derivatives(q, qd, qdd)`` and ``pin.computeRNEADerivatives``;
- ``Model.frame_pose(q, frame)`` (R, p returned) and ``pin.forwardKinematics`` +
  ``pin.updateFramePlacements`` (every frame updated, none read);
- ``Model.frame_velocity(q, qd, frame)`` and ``pin.forwardKinematics(q, v)`` +
  ``pin.updateFramePlacements`` + ``pin.getFrameVelocity(..., LOCAL_WORLD_ALIGNED)``.

Reported per call [us]: the median of --repeats batches of --calls calls, the two calls of a pair
interleaved batch by batch (each repeat sees the same load), and the ratio ours / Pinocchio of the
medians (issue 39 asks <= 1.0). The 1-minute load average is printed before and after: the ratios
are comparable on a loaded machine, the absolute times less so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsfmu.engine.model import Model  # noqa: E402
from mbsfmu.io.urdf import load_urdf  # noqa: E402


def robots() -> dict[str, Path]:
    """name -> URDF: the scenarios' 7-DoF arm, and G1 where example-robot-data is installed."""
    out = {"arm7": ROOT / "scenarios" / "models" / "urdf_arm7.urdf"}
    try:
        dist = metadata.distribution("example-robot-data")
        root = Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))
        out["G1"] = root / "g1_description/urdf/g1_29dof_rev_1_0.urdf"
    except metadata.PackageNotFoundError:
        print("example-robot-data is not installed (pip install example-robot-data): G1 skipped")
    return out


def without_damping(model: Model) -> Model:
    spec = model.spec
    bodies = tuple(replace(b, joint=replace(b.joint, spring=None)) for b in spec.bodies)
    return Model(replace(spec, bodies=bodies), source=model.source)


def per_call(fn, calls: int) -> float:
    """Seconds per call of fn over ``calls`` calls."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def pairs(model: Model, tw, frame: str):
    """name -> (ours, Pinocchio's): zero-argument calls at one random state."""
    import pinocchio as pin

    rng = np.random.default_rng(1)
    q, qd = model.random_state(rng)
    tau, qdd = rng.normal(size=model.nv), rng.normal(size=model.nv)
    pq, pv, ptau, pa = tw.q(q), tw.v(qd), tw.v(tau), tw.v(qdd)
    pm, pd = tw.pm, tw.pd
    fid = pm.getFrameId(frame)
    lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED

    def pin_pose():
        pin.forwardKinematics(pm, pd, pq)
        pin.updateFramePlacements(pm, pd)

    def pin_velocity():
        pin.forwardKinematics(pm, pd, pq, pv)
        pin.updateFramePlacements(pm, pd)
        return pin.getFrameVelocity(pm, pd, fid, lwa)

    m = model
    return {
        "forward_dynamics / aba": (lambda: m.forward_dynamics(q, qd, tau), lambda: pin.aba(pm, pd, pq, pv, ptau)),
        "inverse_dynamics / rnea": (lambda: m.inverse_dynamics(q, qd, qdd), lambda: pin.rnea(pm, pd, pq, pv, pa)),
        "mass_matrix / crba": (lambda: m.mass_matrix(q), lambda: pin.crba(pm, pd, pq)),
        "aba_derivatives": (
            lambda: m.aba_derivatives(q, qd, tau),
            lambda: pin.computeABADerivatives(pm, pd, pq, pv, ptau),
        ),
        "rnea_derivatives": (
            lambda: m.rnea_derivatives(q, qd, qdd),
            lambda: pin.computeRNEADerivatives(pm, pd, pq, pv, pa),
        ),
        "frame_pose / fk+frames": (lambda: m.frame_pose(q, frame), pin_pose),
        "frame_velocity": (lambda: m.frame_velocity(q, qd, frame), pin_velocity),
    }


def bench(name: str, urdf: Path, calls: int, repeats: int) -> list[dict]:
    from tests.support.pin_twin import UrdfTwin

    model = without_damping(load_urdf(urdf))
    tw = UrdfTwin(model, urdf, False)
    frame = next(f for f in reversed(model.frames) if tw.pm.existFrame(f))  # a tip frame both know
    rows = []
    for what, (ours, theirs) in pairs(model, tw, frame).items():
        ours(), theirs()  # first calls: the core's instance and the binding made
        t_ours, t_pin = [], []
        for _ in range(repeats):
            t_ours.append(per_call(ours, calls))
            t_pin.append(per_call(theirs, calls))
        a, b = statistics.median(t_ours), statistics.median(t_pin)
        rows.append(
            {"robot": name, "nv": model.nv, "call": what, "ours_us": 1e6 * a, "pin_us": 1e6 * b, "ratio": a / b}
        )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--calls", type=int, default=3000)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    import pinocchio as pin

    load0 = os.getloadavg()[0]
    rows = [r for name, urdf in robots().items() for r in bench(name, urdf, a.calls, a.repeats)]
    load1 = os.getloadavg()[0]
    print(
        f"load average {load0:.2f} -> {load1:.2f} (1 min, {os.cpu_count()} CPUs); Pinocchio {pin.__version__}; "
        f"medians of {a.repeats} x {a.calls} calls, wall clock"
    )
    print("{:6s} {:>3s} {:26s} {:>9s} {:>10s} {:>6s}".format("robot", "nv", "call", "Model", "Pinocchio", "ratio"))
    for r in rows:
        print(
            f"{r['robot']:6s} {r['nv']:3d} {r['call']:26s} {r['ours_us']:8.2f}u {r['pin_us']:9.2f}u {r['ratio']:6.2f}"
        )
    if a.json:
        a.json.write_text(json.dumps({"load": [load0, load1], "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
