"""The explicit scheme (mbsfmu/symbolic): derivation time, and the generated C against the core's ABA.

    python benchmarks/bench_symbolic.py [--repeats 7] [--json out.json]

Reported (medians of --repeats; the machine is shared, so medians and ratios):
1. derive + generate [s] per model (SCARA, four-bar, spacecraft, 7-link chain): one run each
   (SymPy is deterministic; the time is the algebra's);
2. forward dynamics per call from Python [us] on tree models: the generated C ``<model>_forward_dynamics``
   (closed-form M, h, f and a Cholesky solve) through ctypes with preallocated arrays, vs the core's
   ``Core.aba(..., out=)`` (the recursive ABA) through ctypes, same state; their ratio (target <= 2)
   and the largest difference of the results.
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
import timeit
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

import mbsfmu  # noqa: E402
from mbsfmu.engine.forces import ForceElements  # noqa: E402
from mbsfmu.engine.native.build import host_target, zig_cc  # noqa: E402
from mbsfmu.engine.native.core import Core  # noqa: E402
from mbsfmu.symbolic.codegen import c_source, identifier  # noqa: E402
from mbsfmu.symbolic.scheme import derive  # noqa: E402

MODELS = ["scara", "fourbar", "spacecraft", "chain7"]
CFLAGS = ("-shared", "-fPIC", "-O2", "-std=c99", "-lm")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}")
    results = {}
    tmp = Path(tempfile.mkdtemp())
    for name in MODELS:
        model = mbsfmu.load_model(ROOT / "scenarios" / "models" / f"{name}.yaml")
        t0 = time.perf_counter()
        eq = derive(model)
        header, source = c_source(eq)
        t_derive = time.perf_counter() - t0
        row = {"derive_s": t_derive}
        if eq.Phi is None:
            px = identifier(eq.name)
            (tmp / f"{px}_eom.h").write_text(header)
            (tmp / f"{px}_eom.c").write_text(source)
            lib = C.CDLL(str(zig_cc([tmp / f"{px}_eom.c"], host_target(), tmp / f"lib{px}.so", CFLAGS)))
            fn = getattr(lib, f"{px}_forward_dynamics")
            fn.argtypes = [C.c_void_p] * 5
            fn.restype = C.c_int
            rng = np.random.default_rng(3)
            q, qd = model.random_state(rng)
            u = np.zeros(len(ForceElements(model).layout.names))
            p = np.array(list(eq.params.values()))
            out_gen, out_core = np.zeros(model.nv), np.zeros(model.nv)
            ptrs = [a.ctypes.data for a in (q, qd, u, p, out_gen)]
            core = Core(model)
            tau = ForceElements(model).joint_forces(u) + model.passive_forces(q, qd)
            n = 20000

            def gen(ptrs=ptrs, fn=fn):
                fn(*ptrs)

            def aba(core=core, q=q, qd=qd, tau=tau, out=out_core):
                core.aba(q, qd, tau, out=out)

            t_gen = statistics.median(timeit.repeat(gen, number=n, repeat=args.repeats)) / n * 1e6
            t_aba = statistics.median(timeit.repeat(aba, number=n, repeat=args.repeats)) / n * 1e6
            row.update(
                gen_us=t_gen,
                core_aba_us=t_aba,
                ratio=t_gen / t_aba,
                max_diff=float(np.max(np.abs(out_gen - out_core))),
            )
        results[name] = row
        extra = (
            f"  generated C {row['gen_us']:.2f} us, core ABA {row['core_aba_us']:.2f} us, ratio {row['ratio']:.2f}, "
            f"max |diff| {row['max_diff']:.1e}"
            if "ratio" in row
            else "  (loops: no closed-form forward dynamics)"
        )
        print(f"{name:<12} derive + generate {t_derive:6.2f} s{extra}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
