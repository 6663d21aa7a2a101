"""Speed of the C core on real robot descriptions against MuJoCo on the same URDF files, in one run.

    python benchmarks/bench_robots.py [--seconds 1] [--repeats 7] [--cpu-time] [--fmu] [--json out.json]

Robots: UR5 (6 DoF), Panda (9 DoF: 7 arm joints, 2 fingers) and the Unitree G1 humanoid (29 DoF),
from the public ``example-robot-data`` package (the ``test`` extra), fixed base. Each is loaded by
mbsfmu's URDF reader and by MuJoCo's own URDF compiler (meshes and collision shapes removed,
contacts, joint-limit constraints, joint damping, friction loss and armature off in MuJoCo, so
both integrate an unconstrained tree under gravity with RK4 at h = 1 ms; mbsfmu keeps what its
reader takes from the URDF, e.g. a Panda finger's mimic coupling, which MuJoCo's URDF import drops).

Reported per 1 ms RK4 step [us] (medians of --repeats runs of --seconds simulated seconds from the
same random state, zero torques):
- ``core``: ``Core.step`` over the whole run (one foreign call, the stepping loop in C);
- ``MuJoCo``: ``mj_step(m, d, nstep)`` (the stepping loop in C), integrator RK4;
- ``in-process``: ``Simulator.step(1e-3)`` and ``Simulator.outputs()`` (every output: states,
  accelerations, invariants, body records) per step from Python;
and the ratio core / MuJoCo (issue 23 asks <= 0.5). With ``--fmu``, also the measure issue 23 names:
- ``FMU``: the native FMU (linux64, built from the same URDF) through the plain C host of
  bench_fmu.py, per 1 ms communication step fmi2DoStep plus fmi2GetReal/fmi2GetInteger of every
  output, timed inside the host (CPU time with ``--cpu-time``), and its ratio to MuJoCo.
The degrees of freedom of both are printed (a difference is named). ``--cpu-time``: the process's
CPU time (time.process_time) instead of wall-clock time, for a loaded machine (every timed loop runs
in this one thread).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import mbsfmu  # noqa: E402
from mbsfmu.engine.native.core import Core  # noqa: E402
from mbsfmu.sim.simulator import Simulator  # noqa: E402

ROBOTS = {
    "UR5": "ur_description/urdf/ur5_robot.urdf",
    "Panda": "panda_description/urdf/panda.urdf",
    "G1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
}


def robots_dir() -> Path:
    dist = metadata.distribution("example-robot-data")
    return Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))


def mujoco_model(urdf: Path):
    """MuJoCo's model of the URDF: visuals and collisions dropped, contacts and limits off, RK4 1 ms."""
    import mujoco

    text = urdf.read_text()
    text = re.sub(r"<visual\b.*?</visual>|<collision\b.*?</collision>", "", text, flags=re.S)
    text = re.sub(r"<\?xml[^>]*\?>", "", text)
    text = text.replace(
        "</robot>", '<mujoco><compiler discardvisual="true" fusestatic="false" balanceinertia="true"/></mujoco></robot>'
    )
    m = mujoco.MjModel.from_xml_string(text)
    m.opt.timestep = 1e-3
    m.opt.integrator = mujoco.mjtIntegrator.mjINT_RK4
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT | mujoco.mjtDisableBit.mjDSBL_CONSTRAINT
    m.dof_damping[:] = 0.0
    m.dof_frictionloss[:] = 0.0
    m.dof_armature[:] = 0.0
    return m


def median_us(fn, n_steps: int, repeats: int, clock=time.perf_counter) -> float:
    times = []
    for _ in range(repeats):
        t = clock()
        fn()
        times.append(clock() - t)
    return statistics.median(times) / n_steps * 1e6


def fmu_us(urdf: Path, work: Path, exe: Path, seconds: float, repeats: int, cpu: bool) -> float:
    """Median [us] per 1 ms step of the native FMU's doStep + every output through the C host."""
    from bench_fmu import extract, via_c_host

    from mbsfmu.fmu.native import build_native_fmu

    fmu = build_native_fmu(urdf, work / f"{urdf.stem}.fmu", platforms=("linux64",), progress=None)
    x = extract(fmu, work / f"x-{urdf.stem}")
    runs = [via_c_host(exe, x, fmu, round(seconds / 1e-3)) for _ in range(repeats)]
    return statistics.median(r[1] if cpu else r[0] for r in runs) * 1e6


def bench(name: str, urdf: Path, seconds: float, repeats: int, clock=time.perf_counter) -> dict:
    import mujoco

    model = mbsfmu.load_model(urdf)
    rng = np.random.default_rng(3)
    q0, qd0 = model.random_state(rng)
    n = round(seconds / 1e-3)
    core = Core(model)
    core.set_solver("rk4", h_max=1e-3)
    x0 = np.concatenate((q0, qd0, [0.0, 0.0]))

    def ours():
        core.set_state(x0)
        core.t = 0.0
        assert core.step(seconds) == 0, core.message

    m = mujoco_model(urdf)
    d = mujoco.MjData(m)

    def mj():
        mujoco.mj_resetData(m, d)
        mujoco.mj_step(m, d, nstep=n)

    sim = Simulator(model, integrator="rk4", h_max=1e-3)

    def in_process():
        sim.x = np.concatenate((q0, qd0, sim.x[len(q0) + len(qd0) :]))
        for _ in range(n):
            sim.step(1e-3)
            sim.outputs()

    row = {
        "robot": name,
        "nv_ours": model.nv,
        "nv_mujoco": int(m.nv),
        "bodies_ours": model.N,
        "bodies_mujoco": int(m.nbody - 1),
        "core_us": median_us(ours, n, repeats, clock),
        "mujoco_us": median_us(mj, n, repeats, clock),
        "in_process_us": median_us(in_process, n, max(1, repeats // 2), clock),
    }
    row["ratio_core_mujoco"] = row["core_us"] / row["mujoco_us"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=1.0, help="simulated seconds per run")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--cpu-time", action="store_true", help="time by process CPU time (a loaded machine)")
    ap.add_argument("--fmu", action="store_true", help="also the native FMU's doStep + every output (C host)")
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    import mujoco

    base = robots_dir()
    print(
        f"load average {os.getloadavg()[0]:.1f}; MuJoCo {mujoco.__version__}; medians of {args.repeats}; "
        f"{args.seconds} s at 1 kHz RK4 per run; {'CPU' if args.cpu_time else 'wall-clock'} time"
    )
    clock = time.process_time if args.cpu_time else time.perf_counter
    print(
        f"{'robot':8s} {'nv':>4s} {'core [us]':>10s} {'MuJoCo [us]':>12s} {'ratio':>6s} {'in-process [us]':>16s}"
        + (f" {'FMU [us]':>9s} {'ratio':>6s}" if args.fmu else "")
    )
    rows = []
    with tempfile.TemporaryDirectory(prefix="mbsfmu_bench_robots_") as tmp:
        exe = None
        if args.fmu:
            from bench_fmu import c_host

            exe = c_host(Path(tmp))
        for name, rel in ROBOTS.items():
            r = bench(name, base / rel, args.seconds, args.repeats, clock)
            if args.fmu:
                r["fmu_us"] = fmu_us(base / rel, Path(tmp), exe, args.seconds, args.repeats, args.cpu_time)
                r["ratio_fmu_mujoco"] = r["fmu_us"] / r["mujoco_us"]
            rows.append(r)
            print(
                f"{name:8s} {r['nv_ours']:4d} {r['core_us']:10.2f} {r['mujoco_us']:12.2f} "
                f"{r['ratio_core_mujoco']:6.2f} {r['in_process_us']:16.2f}"
                + (f" {r['fmu_us']:9.2f} {r['ratio_fmu_mujoco']:6.2f}" if args.fmu else "")
                + ("" if r["nv_ours"] == r["nv_mujoco"] else f"  (MuJoCo nv {r['nv_mujoco']})"),
                flush=True,
            )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
