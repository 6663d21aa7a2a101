"""mbsfmu derive (mbsfmu/symbolic): derivation time, and the generated C's M, h against the C core's
CRBA + RNEA.

    python benchmarks/bench_symbolic.py [--repeats 7] [--calls 20000] [--models NAME ...] [--json out.json]

Models: the bundled SCARA, four-bar (loop), spacecraft (free joint, wheels), 7-link chain and
urdf_arm7 (a Panda, 8 joints in series), and the general arms of tests/support/general_arm.py (axes
along no coordinate axis, rpy origins, full inertia tensors): 7 joints and a 30-body chain.

Reported (the machine is shared: medians and ratios within one run, load average printed):
1. derive [s] (``scheme.derive``) and generate [s] (the NumPy and C sources), one run each
   (SymPy is deterministic; the time is the algebra's), and the intermediate variables;
2. tree models, at one random state, medians of --repeats batches of --calls calls, the two sides
   interleaved batch by batch:
   - ``gen`` [us]: the generated C ``<model>_eom`` (M, h and f) through ctypes, arrays preallocated;
   - ``core`` [us]: ``Model.mass_matrix(q)`` + ``Model.inverse_dynamics(q, qd, 0)``, the C core's
     CRBA and RNEA through the CPython binding (two foreign calls);
   - their ratio gen / core (issue 37 item 10 asks <= 2);
   - ``gen in C`` [us]: ``<model>_eom`` called --calls times in a C loop (no Python; a benchmark-only
     wrapper compiled beside it): what the evaluation itself costs;
   - the largest difference of M and of RNEA(q, qd, 0) = h - f (u = 0) from the core's.
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
sys.path.insert(0, str(ROOT))

import mbsfmu  # noqa: E402
from mbsfmu.engine.forces import ForceElements  # noqa: E402
from mbsfmu.engine.native.build import host_target, zig_cc  # noqa: E402
from mbsfmu.symbolic.codegen import c_source, identifier, numpy_source  # noqa: E402
from mbsfmu.symbolic.scheme import derive  # noqa: E402
from tests.support.general_arm import write_general_arm  # noqa: E402

MODELS = ["scara", "fourbar", "spacecraft", "chain7", "urdf_arm7", "general_arm7", "general_arm30"]
CFLAGS = ("-shared", "-fPIC", "-O2", "-std=c99", "-lm")


def model_path(name: str, tmp: Path) -> Path:
    if name.startswith("general_arm"):
        return write_general_arm(tmp, int(name.removeprefix("general_arm")))
    ext = ".urdf" if name.startswith("urdf") else ".yaml"
    return ROOT / "scenarios" / "models" / f"{name}{ext}"


def timing_loop(px: str) -> str:
    """A C function calling <px>_eom n times (the evaluation's own cost, no foreign-call overhead)."""
    return (
        f"\nvoid {px}_eom_loop(long n, const double *q, const double *qd, const double *u, const double *p,"
        " double *M, double *h, double *f) {\n"
        f"    for (long k = 0; k < n; ++k) {px}_eom(q, qd, u, p, M, h, f);\n}}\n"
    )


def compare(model, eq, tmp: Path, calls: int, repeats: int) -> dict:
    """Per-call times and differences of the generated eom against the core's CRBA + RNEA."""
    px = identifier(eq.name)
    header, source = c_source(eq)
    (tmp / f"{px}_eom.h").write_text(header)
    (tmp / f"{px}_eom.c").write_text(source + timing_loop(px))
    lib = C.CDLL(str(zig_cc([tmp / f"{px}_eom.c"], host_target(), tmp / f"lib{px}.so", CFLAGS)))
    eom, loop = getattr(lib, f"{px}_eom"), getattr(lib, f"{px}_eom_loop")
    eom.argtypes = [C.c_void_p] * 7
    loop.argtypes = [C.c_long] + [C.c_void_p] * 7
    rng = np.random.default_rng(3)
    q, qd = model.random_state(rng)
    nv = model.nv
    u = np.zeros(len(ForceElements(model).layout.names))
    p = np.array(list(eq.params.values()))
    M, h, f = np.zeros((nv, nv)), np.zeros(nv), np.zeros(nv)
    ptrs = [a.ctypes.data for a in (q, qd, u, p, M, h, f)]
    zero = np.zeros(nv)

    def gen(ptrs=ptrs, eom=eom):
        eom(*ptrs)

    def core(model=model, q=q, qd=qd, zero=zero):
        model.mass_matrix(q)
        model.inverse_dynamics(q, qd, zero)

    t_gen, t_core, t_loop = [], [], []
    for _ in range(repeats):  # interleaved: each repeat sees the same load
        t_gen.append(timeit.timeit(gen, number=calls) / calls * 1e6)
        t_core.append(timeit.timeit(core, number=calls) / calls * 1e6)
        t0 = time.perf_counter()
        loop(calls, *ptrs)
        t_loop.append((time.perf_counter() - t0) / calls * 1e6)
    gen()
    rnea = model.inverse_dynamics(q, qd, zero)
    return {
        "gen_us": statistics.median(t_gen),
        "core_crba_rnea_us": statistics.median(t_core),
        "ratio": statistics.median(t_gen) / statistics.median(t_core),
        "gen_in_c_us": statistics.median(t_loop),
        "max_diff_M": float(np.max(np.abs(M - model.mass_matrix(q)))),
        "max_diff_rnea": float(np.max(np.abs(h - f - rnea))),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--models", nargs="+", default=MODELS)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f}", flush=True)
    results = {}
    tmp = Path(tempfile.mkdtemp())
    for name in args.models:
        model = mbsfmu.load_model(model_path(name, tmp))
        t0 = time.perf_counter()
        eq = derive(model)
        t1 = time.perf_counter()
        numpy_source(eq)
        c_source(eq)
        t2 = time.perf_counter()
        row = {"derive_s": t1 - t0, "generate_s": t2 - t1, "variables": len(eq.assignments), "nv": model.nv}
        line = f"{name:<14} nv {model.nv:3d}  derive {t1 - t0:6.2f} s  generate {t2 - t1:6.2f} s  "
        line += f"{len(eq.assignments):5d} variables"
        if eq.Phi is None:
            row.update(compare(model, eq, tmp, args.calls, args.repeats))
            line += (
                f"  gen {row['gen_us']:7.2f} us  core CRBA+RNEA {row['core_crba_rnea_us']:7.2f} us  "
                f"ratio {row['ratio']:.2f}  gen in C {row['gen_in_c_us']:7.2f} us  "
                f"max |dM| {row['max_diff_M']:.1e} |d rnea| {row['max_diff_rnea']:.1e}"
            )
        else:
            line += "  (loops: M, h, f in the tree's coordinates, no CRBA peer)"
        results[name] = row
        print(line, flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
