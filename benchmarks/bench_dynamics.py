"""Speed of the C engine core (mbsfmu/native) against Pinocchio and MuJoCo, in one run.

    python benchmarks/bench_dynamics.py [--quick] [--repeats 7] [--json out.json]

Models: "arm7", a 7-DoF serial arm of revolute joints with random axes, placements and
inertias (seeded), the bundled Panda URDF (scenarios/models/urdf_arm7.urdf: 7 arm joints, two
prismatic fingers, fixed joints), and random revolute chains of N = 10, 50, 200 bodies. Each
Pinocchio model is the same tree (tests/support/pin_twin.py), each MuJoCo model an MJCF chain generated
here with the same bodies, inertias, joint axes and gravity, contacts off, no geoms.

Reported (medians of --repeats runs; the machine is shared, so medians, not minima):
1. per call from Python [us]: forward dynamics (ours: the public ``Model.forward_dynamics``, which
   adds the joint springs/dampers, and ``Core.aba`` with ``out=``, vs ``pin.aba``), inverse dynamics
   (``Core.rnea`` vs ``pin.rnea``), mass matrix (``Core.crba`` vs ``pin.crba``, which fills only
   the upper triangle; ours fills all of M), with the largest difference of the results; the
   Python reference ABA for scale;
2. 10 s at 1 kHz with RK4 [ms]: ours (``Core.step(10.0)`` with h_max = 1 ms: one foreign call,
   state with the work integrals), a Python RK4 loop around ``pin.aba``, MuJoCo ``mj_step``
   (integrator RK4, nstep in C), with the states' difference after the run (ours vs Pinocchio:
   same RK4; vs MuJoCo: its RK4);
3. start-up to the first step of a scenario, whole process: ``python -c "import ...; sim.step(dt)"``
   (the core is built at install time; nothing is compiled at run time);
4. the scaling exponent of our forward dynamics between N = 50 and N = 200 (log-log slope).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # tests.support: pin_twin, trees

import mbsfmu  # noqa: E402
from mbsfmu import Body, Joint, Model, ModelSpec, Origin  # noqa: E402
from mbsfmu.engine import joints  # noqa: E402
from mbsfmu.engine.dynamics.aba import aba as aba_reference  # noqa: E402
from mbsfmu.engine.native.core import Core  # noqa: E402
from mbsfmu.engine.spatial import R_to_quat  # noqa: E402

GRAVITY = (0.0, 0.0, -9.81)


def random_chain(n: int, seed: int, name: str) -> Model:
    """A serial chain of n revolute joints: random unit axes, joint placements (|xyz| <= 0.3 m,
    any rpy), masses 0.5-3 kg, CoM offsets and valid inertias."""
    from tests.support.trees import random_inertia

    rng = np.random.default_rng(seed)
    bodies = []
    for k in range(n):
        axis = rng.normal(size=3)
        bodies.append(
            Body(
                name=f"link{k + 1}",
                parent="world" if k == 0 else f"link{k}",
                joint=Joint(
                    name=f"j{k + 1}",
                    type="revolute",
                    axis=tuple(axis / np.linalg.norm(axis)),
                    origin=Origin(xyz=tuple(rng.uniform(-0.3, 0.3, 3)), rpy=tuple(rng.uniform(-np.pi, np.pi, 3))),
                ),
                mass=float(rng.uniform(0.5, 3.0)),
                com=tuple(rng.uniform(-0.2, 0.2, 3)),
                inertia=random_inertia(rng),
            )
        )
    return Model(ModelSpec(name=name, bodies=tuple(bodies), gravity=GRAVITY))


def mjcf_chain(model: Model) -> str:
    """MJCF of a tree of revolute/fixed joints: nested bodies placed by R_tree, p_tree, hinge axes,
    full inertias about the CoM; RK4 at 1 ms, contacts off, no geoms."""
    t = model.tree
    children = {i: [j for j in range(1, model.N + 1) if t.parent[j] == i] for i in range(model.N + 1)}

    def nums(v) -> str:
        return " ".join(repr(float(x)) for x in np.ravel(v))

    def body(i: int, depth: int) -> str:
        pad = "  " * depth
        I = t.I_c[i]
        joint = (
            f'{pad}  <joint name="{model.joint_names[i - 1]}" type="hinge" axis="{nums(t.axis[i])}"/>\n'
            if t.jtype[i] == joints.REVOLUTE
            else ""
        )
        inner = "".join(body(j, depth + 1) for j in children[i])
        return (
            f'{pad}<body name="{model.body_names[i - 1]}" pos="{nums(t.p_tree[i])}" '
            f'quat="{nums(R_to_quat(t.R_tree[i]))}">\n'
            f'{joint}{pad}  <inertial pos="{nums(t.com[i])}" mass="{float(t.mass[i])!r}" '
            f'fullinertia="{nums([I[0, 0], I[1, 1], I[2, 2], I[0, 1], I[0, 2], I[1, 2]])}"/>\n'
            f'{inner}{pad}</body>\n'
        )

    g = nums(model.gravity)
    return (
        f'<mujoco model="{model.name}">\n  <option timestep="0.001" integrator="RK4" gravity="{g}">\n'
        f'    <flag contact="disable"/>\n  </option>\n  <worldbody>\n'
        + "".join(body(j, 2) for j in children[0])
        + "  </worldbody>\n</mujoco>\n"
    )


def per_call(fn, number: int, repeats: int) -> float:
    """Median time of one call [us]."""
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeats)) / number * 1e6


def once(fn, repeats: int) -> float:
    """Median wall time of fn() [ms]."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def bench_calls(name: str, model: Model, repeats: int, reference: bool) -> dict:
    import pinocchio as pin

    from tests.support.pin_twin import q_to_pin, to_pinocchio

    cm = Core(model)
    pm = to_pinocchio(model)
    pd = pm.createData()
    rng = np.random.default_rng(1)
    q, qd = model.random_state(rng)
    tau, qdd = rng.normal(size=model.nv), rng.normal(size=model.nv)
    qp = q_to_pin(model, q)
    out, M = np.empty(model.nv), np.empty((model.nv, model.nv))
    number = max(200, int(20000 / max(1, model.nv)))
    M_pin = pin.crba(pm, pd, qp)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    row = {
        "model": name,
        "N": model.N,
        "nv": model.nv,
        "fd_ours": per_call(lambda: model.forward_dynamics(q, qd, tau), number, repeats),
        "fd_core": per_call(lambda: cm.aba(q, qd, tau, out=out), number, repeats),
        "fd_pin": per_call(lambda: pin.aba(pm, pd, qp, qd, tau), number, repeats),
        "id_ours": per_call(lambda: cm.rnea(q, qd, qdd, out=out), number, repeats),
        "id_pin": per_call(lambda: pin.rnea(pm, pd, qp, qd, qdd), number, repeats),
        "M_ours": per_call(lambda: cm.crba(q, out=M), number, repeats),
        "M_pin": per_call(lambda: pin.crba(pm, pd, qp), number, repeats),
        "err_fd": float(np.abs(cm.aba(q, qd, tau) - pin.aba(pm, pd, qp, qd, tau)).max()),
        "err_id": float(np.abs(cm.rnea(q, qd, qdd) - pin.rnea(pm, pd, qp, qd, qdd)).max()),
        "err_M": float(np.abs(cm.crba(q) - M_pin).max()),
    }
    if reference:
        row["fd_python_reference"] = per_call(lambda: aba_reference(model.tree, q, qd, tau), 50, repeats)
    return row


def bench_sim(name: str, model: Model, repeats: int, seconds: float = 10.0, h: float = 1e-3) -> dict:
    """seconds of RK4 at step h from a random state, zero joint torques, gravity."""
    import mujoco
    import pinocchio as pin

    from tests.support.pin_twin import to_pinocchio

    n = round(seconds / h)
    cm = Core(model)
    cm.set_solver("rk4", h_max=h)
    rng = np.random.default_rng(2)
    q0, qd0 = model.random_state(rng)
    x0 = np.concatenate((q0, qd0, [0.0, 0.0]))

    def run(t_end):
        cm.set_state(x0)
        cm.t = 0.0
        assert cm.step(t_end) == 0, cm.message
        return cm.x

    def ours():
        return run(seconds)

    pm = to_pinocchio(model)
    pd = pm.createData()
    tau0 = np.zeros(model.nv)

    def pin_rk4():  # revolute chains: q is a vector space, x = [q, v]
        q, v = q0.copy(), qd0.copy()
        for _ in range(n):
            a1 = pin.aba(pm, pd, q, v, tau0).copy()
            q2, v2 = q + 0.5 * h * v, v + 0.5 * h * a1
            a2 = pin.aba(pm, pd, q2, v2, tau0).copy()
            q3, v3 = q + 0.5 * h * v2, v + 0.5 * h * a2
            a3 = pin.aba(pm, pd, q3, v3, tau0).copy()
            q4, v4 = q + h * v3, v + h * a3
            a4 = pin.aba(pm, pd, q4, v4, tau0)
            q = q + (h / 6.0) * (v + 2.0 * v2 + 2.0 * v3 + v4)
            v = v + (h / 6.0) * (a1 + 2.0 * a2 + 2.0 * a3 + a4)
        return np.concatenate((q, v))

    mm = mujoco.MjModel.from_xml_string(mjcf_chain(model))
    md = mujoco.MjData(mm)

    def mj():
        mujoco.mj_resetData(mm, md)
        md.qpos[:], md.qvel[:] = q0, qd0
        mujoco.mj_step(mm, md, nstep=n)
        return np.concatenate((md.qpos, md.qvel))

    pin_repeats = max(1, min(repeats, 3)) if model.nv > 20 else repeats
    row = {
        "model": name,
        "N": model.N,
        "steps": n,
        "sim_ours_ms": once(ours, repeats),
        "sim_pin_python_rk4_ms": once(pin_rk4, pin_repeats),
        "sim_mujoco_rk4_ms": once(mj, repeats),
    }
    x_ours, x_pin, x_mj = ours()[:-2], pin_rk4(), mj()
    row["diff_ours_pin"] = float(np.abs(x_ours - x_pin).max())
    row["diff_ours_mujoco"] = float(np.abs(x_ours - x_mj).max())
    mujoco.mj_resetData(mm, md)  # a short run: same model, RK4 agrees closely
    md.qpos[:], md.qvel[:] = q0, qd0
    mujoco.mj_step(mm, md, nstep=100)
    x = run(100 * h)
    row["diff_ours_mujoco_0.1s"] = float(np.abs(x[:-2] - np.concatenate((md.qpos, md.qvel))).max())
    return row


STARTUP_SNIPPET = (
    "import mbsfmu.scenario as s; scn = s.load_scenario({path!r}); sim = s.build_simulator(scn); "
    "sim.step(scn.dt); assert sim.backend == 'native'"
)


def bench_startup(repeats: int) -> dict:
    """Whole-process start-up to the first step of a scenario [s] (median)."""
    path = str(ROOT / "scenarios" / "scara_tracking.yaml")
    cmd = [sys.executable, "-c", STARTUP_SNIPPET.format(path=path)]
    subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)  # warm the OS file cache
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True)
        times.append(time.perf_counter() - t0)
    return {
        "startup_s": statistics.median(times),
        "startup_command": f'python -c "{STARTUP_SNIPPET.format(path="scenarios/scara_tracking.yaml")}"',
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="repeats per measurement (median reported)")
    ap.add_argument("--quick", action="store_true", help="fewer repeats, N = 200 simulation skipped")
    ap.add_argument("--json", help="write the results to this file")
    args = ap.parse_args(argv)
    repeats = 3 if args.quick else args.repeats
    models = {
        "arm7": random_chain(7, 7, "arm7"),
        "panda (urdf_arm7)": mbsfmu.load_model(ROOT / "scenarios" / "models" / "urdf_arm7.urdf"),
        "chain10": random_chain(10, 10, "chain10"),
        "chain50": random_chain(50, 50, "chain50"),
        "chain200": random_chain(200, 200, "chain200"),
    }
    for m in models.values():  # the per-model core built before timing
        m.forward_dynamics(*m.random_state(np.random.default_rng(0)), np.zeros(m.nv))
    results = {"calls": [], "sim": [], "startup": None}

    print(
        f"mbsfmu C core vs Pinocchio {__import__('pinocchio').__version__} and MuJoCo "
        f"{__import__('mujoco').__version__}; medians of {repeats} repeats; {os.cpu_count()} CPUs, "
        f"load {os.getloadavg()[0]:.1f}\n"
    )
    print(
        "1. per call from Python [us] (ratio = ours / Pinocchio; err = max |ours - Pinocchio|; "
        "FD ours = Model.forward_dynamics, core = Core.aba(out=))"
    )
    print(
        f"{'model':18s} {'nv':>4s} | {'FD ours':>8s} {'core':>8s} {'pin.aba':>8s} {'ratio':>6s} | "
        f"{'ID ours':>8s} {'pin.rnea':>8s} {'ratio':>6s} | {'M ours':>8s} {'pin.crba':>8s} {'ratio':>6s} | "
        f"{'err FD':>8s} {'err ID':>8s} {'err M':>8s}"
    )
    for name, m in models.items():
        r = bench_calls(name, m, repeats, reference=name == "arm7")
        results["calls"].append(r)
        print(
            f"{name:18s} {r['nv']:4d} | {r['fd_ours']:8.2f} {r['fd_core']:8.2f} {r['fd_pin']:8.2f} "
            f"{r['fd_ours'] / r['fd_pin']:6.2f} | "
            f"{r['id_ours']:8.2f} {r['id_pin']:8.2f} {r['id_ours'] / r['id_pin']:6.2f} | {r['M_ours']:8.2f} "
            f"{r['M_pin']:8.2f} {r['M_ours'] / r['M_pin']:6.2f} | "
            f"{r['err_fd']:8.1e} {r['err_id']:8.1e} {r['err_M']:8.1e}"
        )
    arm = results["calls"][0]
    print(
        f"   (arm7 forward dynamics by the Python reference: {arm['fd_python_reference']:.0f} us, "
        f"{arm['fd_python_reference'] / arm['fd_ours']:.0f}x Model.forward_dynamics on the core)"
    )
    fd = {r["model"]: r for r in results["calls"]}
    slope = math.log(fd["chain200"]["fd_ours"] / fd["chain50"]["fd_ours"]) / math.log(4.0)
    slope_pin = math.log(fd["chain200"]["fd_pin"] / fd["chain50"]["fd_pin"]) / math.log(4.0)
    results["scaling_exponent_fd"] = slope
    results["scaling_exponent_fd_pin"] = slope_pin

    print("\n2. 10 s at 1 kHz, RK4 (10 000 steps) [ms] (ratio = ours / other)")
    print(
        f"{'model':18s} | {'ours':>8s} | {'pin RK4 (Python loop)':>22s} {'ratio':>6s} | {'MuJoCo mj_step RK4':>19s} "
        f"{'ratio':>6s} | {'diff pin':>8s} {'diff MuJoCo 0.1 s':>17s} {'10 s':>8s}"
    )
    sim_models = ["arm7", "chain10", "chain50"] + ([] if args.quick else ["chain200"])
    for name in sim_models:
        r = bench_sim(name, models[name], repeats)
        results["sim"].append(r)
        print(
            f"{name:18s} | {r['sim_ours_ms']:8.1f} | {r['sim_pin_python_rk4_ms']:22.1f} "
            f"{r['sim_ours_ms'] / r['sim_pin_python_rk4_ms']:6.3f} | {r['sim_mujoco_rk4_ms']:19.1f} "
            f"{r['sim_ours_ms'] / r['sim_mujoco_rk4_ms']:6.3f} | {r['diff_ours_pin']:8.1e} "
            f"{r['diff_ours_mujoco_0.1s']:17.1e} {r['diff_ours_mujoco']:8.1e}"
        )
    print(
        "   (diff: max |x_ours - x_other| over q and qd at the end; chains are chaotic, so a 10 s difference "
        "vs MuJoCo's own RK4 grows from round-off)"
    )

    print("\n3. start-up to the first step (scenarios/scara_tracking.yaml, whole process, median)")
    c = bench_startup(max(3, repeats // 2))
    results["startup"] = c
    print(f"   {c['startup_s']:.2f} s for\n   {c['startup_command']}")
    print(f"\n4. scaling of forward dynamics, N = 50 -> 200: exponent {slope:.3f} (Pinocchio {slope_pin:.3f})")

    targets = [
        ("Model.forward_dynamics arm7 <= 1.5 x pin.aba", arm["fd_ours"] / arm["fd_pin"], 1.5),
        (
            "10 s @ 1 kHz RK4 arm7 < MuJoCo mj_step RK4",
            results["sim"][0]["sim_ours_ms"] / results["sim"][0]["sim_mujoco_rk4_ms"],
            1.0,
        ),
        ("scaling exponent N = 50 -> 200 <= 1.1", slope, 1.1),
        ("start-up to the first step < 1 s", c["startup_s"], 1.0),
    ]
    print("\ntargets:")
    for what, value, bound in targets:
        print(f"  {'met' if value <= bound else 'MISSED':6s} {what}: {value:.3f}")
    results["targets"] = [{"target": w, "value": v, "bound": b, "met": v <= b} for w, v, b in targets]
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
