"""Speed of the analytic ABA derivatives (mbsfmu/engine/native/derivatives.c, Carpentier & Mansard,
RSS 2018) against one ABA evaluation in the core and against Pinocchio, in one run.

    python benchmarks/bench_derivatives.py [--repeats 7] [--calls 2000] [--cpu-time] [--json out.json]

Robots (public ``example-robot-data``, the ``test`` extra; joint damping removed, as Pinocchio has
none): xArm7 (7-DoF arm, fixed base) and Solo12 on a free joint (nv = 18), both parsed by mbsfmu's
URDF reader and by Pinocchio's own. Reported per call [us] (medians of --repeats batches of --calls
calls at one random state, the four measurements interleaved batch by batch):
- ``core ABA``, ``core derivs``: ``mbs_aba`` / ``mbs_aba_derivatives`` in a C loop (a small timing
  driver compiled with zig at run time, calling the core's functions through their addresses), no
  Python in between; their ratio (issue 24 asks <= 3);
- ``Python derivs``: ``Core.aba_derivatives(q, qd, tau)`` per call from Python (argument checks,
  ctypes, result arrays), and ``Pinocchio``: ``pinocchio.computeABADerivatives(model, data, q, v, tau)``
  per call from Python; their ratio (issue 24 asks <= 1.5).
``--cpu-time``: the two core columns in the thread's CPU time (CLOCK_THREAD_CPUTIME_ID) instead of
wall-clock time, so that time slices taken by other processes on a loaded machine are not counted
(the Python and Pinocchio columns stay wall-clock).
"""

from __future__ import annotations

import argparse
import ctypes as C
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mbsfmu.engine.model import Model  # noqa: E402
from mbsfmu.engine.native import build  # noqa: E402
from mbsfmu.engine.native.core import Core  # noqa: E402
from mbsfmu.io.urdf import load_urdf  # noqa: E402

ROBOTS = {
    "xArm7 (fixed)": ("xarm_description/urdf/xarm7.urdf", False),
    "Solo12 (free)": ("solo_description/robots/solo12.urdf", True),
}

DRIVER = r"""
#include <time.h>
typedef int (*aba_fn)(void *, const double *, const double *, const double *, const double *, double *);
typedef int (*der_fn)(void *, const double *, const double *, const double *, double *, double *, double *,
                      double *, double *);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
/* seconds per call of n calls */
double time_aba(void *f, void *s, const double *q, const double *qd, const double *tau, double *qdd, int n)
{
    double t0 = now();
    int k;
    for (k = 0; k < n; k++) ((aba_fn)f)(s, q, qd, tau, 0, qdd);
    return (now() - t0) / n;
}
double time_derivs(void *f, void *s, const double *q, const double *qd, const double *tau, double *w, double *qdd,
                   double *a, double *b, double *m, int n)
{
    double t0 = now();
    int k;
    for (k = 0; k < n; k++) ((der_fn)f)(s, q, qd, tau, w, qdd, a, b, m);
    return (now() - t0) / n;
}
"""


def robots_dir() -> Path:
    dist = metadata.distribution("example-robot-data")
    return Path(dist.locate_file("cmeel.prefix/share/example-robot-data/robots"))


def driver(cpu_time: bool = False) -> C.CDLL:
    """The timing driver (DRIVER) built with zig into a temporary folder; ``cpu_time``: its clock is
    the calling thread's CPU time."""
    d = Path(tempfile.mkdtemp(prefix="mbsfmu-bench-"))
    (d / "driver.c").write_text(DRIVER.replace("CLOCK_MONOTONIC", "CLOCK_THREAD_CPUTIME_ID") if cpu_time else DRIVER)
    out = build.zig_cc([d / "driver.c"], build.host_target(), d / "driver.so", flags=("-shared", "-fPIC", "-O2"))
    lib = C.CDLL(str(out))
    P, I = C.c_void_p, C.c_int
    lib.time_aba.restype = lib.time_derivs.restype = C.c_double
    lib.time_aba.argtypes = [P, P, P, P, P, P, I]
    lib.time_derivs.argtypes = [P, P, P, P, P, P, P, P, P, P, I]
    return lib


def without_damping(model: Model) -> Model:
    spec = model.spec
    bodies = tuple(replace(b, joint=replace(b.joint, spring=None)) for b in spec.bodies)
    return Model(replace(spec, bodies=bodies), source=model.source)


def per_call(fn, calls: int) -> float:
    """Seconds per call of fn over calls calls."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls


def bench(name: str, urdf: Path, floating: bool, drv, calls: int, repeats: int) -> dict:
    import pinocchio as pin

    sys.path.insert(0, str(ROOT))
    from tests.support.pin_twin import UrdfTwin

    model = without_damping(load_urdf(urdf, floating_base=floating))
    tw = UrdfTwin(model, urdf, floating)
    rng = np.random.default_rng(1)
    q, qd = model.random_state(rng)
    tau = rng.normal(size=model.nv)
    core = Core(model)
    nv = model.nv
    L = core._L
    ptr = lambda a: a.ctypes.data  # noqa: E731
    w = np.zeros(L.mbs_derivatives_work(core._s))
    qdd, A, B, Mi = np.zeros(nv), np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))
    f_aba = C.cast(L.mbs_aba, C.c_void_p).value
    f_der = C.cast(L.mbs_aba_derivatives, C.c_void_p).value
    args = (core._s, ptr(q), ptr(qd), ptr(tau))
    pq, pv, ptau = tw.q(q), tw.v(qd), tw.v(tau)
    pm, pd = tw.pm, tw.pd
    times = {"aba": [], "der": [], "py": [], "pin": []}
    for _ in range(repeats):  # the four interleaved, so that each repeat sees the same machine load
        times["aba"].append(drv.time_aba(f_aba, *args, ptr(qdd), calls))
        times["der"].append(drv.time_derivs(f_der, *args, ptr(w), ptr(qdd), ptr(A), ptr(B), ptr(Mi), calls))
        times["py"].append(per_call(lambda: core.aba_derivatives(q, qd, tau), calls))
        times["pin"].append(per_call(lambda: pin.computeABADerivatives(pm, pd, pq, pv, ptau), calls))
    t_aba, t_der, t_py, t_pin = (statistics.median(times[k]) for k in ("aba", "der", "py", "pin"))
    ours = core.aba_derivatives(q, qd, tau)[1]
    pin.computeABADerivatives(pm, pd, pq, pv, ptau)
    err = np.abs(ours - pd.ddq_dq[np.ix_(tw.perm, tw.perm)]).max() / np.abs(pd.ddq_dq).max()
    return {
        "robot": name,
        "nv": nv,
        "core_aba_us": 1e6 * t_aba,
        "core_derivs_us": 1e6 * t_der,
        "derivs_over_aba": t_der / t_aba,
        "python_derivs_us": 1e6 * t_py,
        "pinocchio_us": 1e6 * t_pin,
        "python_over_pinocchio": t_py / t_pin,
        "rel_diff_dqdd_dq_vs_pinocchio": float(err),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--cpu-time", action="store_true", help="core columns in thread CPU time")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    drv = driver(a.cpu_time)
    root = robots_dir()
    rows = [bench(name, root / rel, fl, drv, a.calls, a.repeats) for name, (rel, fl) in ROBOTS.items()]
    clock = "thread CPU time" if a.cpu_time else "wall clock"
    print(f"load average {os.getloadavg()[0]:.2f} (1 min); core columns: {clock}")
    head = ("robot", "nv", "core ABA", "core derivs", "ratio", "Python derivs", "Pinocchio", "ratio")
    print("{:16s} {:>3s} {:>9s} {:>12s} {:>6s} {:>14s} {:>10s} {:>6s}".format(*head))
    for r in rows:
        print(
            f"{r['robot']:16s} {r['nv']:3d} {r['core_aba_us']:8.2f}u {r['core_derivs_us']:11.2f}u "
            f"{r['derivs_over_aba']:6.2f} {r['python_derivs_us']:13.2f}u {r['pinocchio_us']:9.2f}u "
            f"{r['python_over_pinocchio']:6.2f}   (|d| vs pin {r['rel_diff_dqdd_dq_vs_pinocchio']:.1e})"
        )
    if a.json:
        a.json.write_text(json.dumps({"load": os.getloadavg(), "cpu_time": a.cpu_time, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
