"""Time to load and validate large models: chains and stars of 1,000 and 10,000 bodies.

    python benchmarks/bench_load.py [--sizes 1000 10000] [--repeats 3] [--json out.json]

Each model is a YAML file written here (revolute joints, alternating axes, 1 kg links) and
loaded with ``mbsfmu.load_model``: YAML parse, schema checks, topology, tree compile and the
O(N) "joint moves mass" check (mbsfmu/engine/dynamics/singular.py). Reported per model: the median
wall time [s] of --repeats loads, split into YAML parsing and the rest (Model construction),
and the exponent of the time between the two sizes (1.0 = linear; the dense check this replaced
was O(N^3), a 1,000-link chain took 36 s and 10,000 bodies did not finish in 900 s).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import tempfile
import time
from pathlib import Path

import yaml


def model_doc(n: int, shape: str) -> dict:
    """A chain (each body on the previous one) or a star (every body on b0) of n bodies."""
    bodies = [
        {
            "name": f"b{k}",
            "parent": "world" if k == 0 else (f"b{k - 1}" if shape == "chain" else "b0"),
            "joint": {"type": "revolute", "axis": [0, k % 2, 1 - k % 2], "origin": {"xyz": [0.1, 0, 0]}},
            "mass": 1.0,
            "com": [0.05, 0, 0],
            "inertia": {"Ixx": 0.01, "Iyy": 0.01, "Izz": 0.01},
        }
        for k in range(n)
    ]
    return {"version": 1, "name": f"{shape}{n}", "bodies": bodies}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", metavar="OUT")
    args = ap.parse_args()
    from mbsfmu import load_model
    from mbsfmu.io.model_file import parse_file

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in ("chain", "star"):
            for n in args.sizes:
                path = Path(tmp) / f"{shape}{n}.yaml"
                path.write_text(yaml.safe_dump(model_doc(n, shape), sort_keys=False))
                total, parse = [], []
                for _ in range(args.repeats):
                    t0 = time.perf_counter()
                    parse_file(path)
                    t1 = time.perf_counter()
                    model = load_model(path)
                    t2 = time.perf_counter()
                    parse.append(t1 - t0)
                    total.append(t2 - t1)
                    assert model.N == n
                out[f"{shape}{n}"] = {"load_s": statistics.median(total), "yaml_parse_s": statistics.median(parse)}
                print(
                    f"{shape:5s} N = {n:6d}: load {out[f'{shape}{n}']['load_s']:7.2f} s "
                    f"(YAML parse {out[f'{shape}{n}']['yaml_parse_s']:6.2f} s)",
                    flush=True,
                )
    if len(args.sizes) >= 2:
        a, b = args.sizes[0], args.sizes[-1]
        for shape in ("chain", "star"):
            slope = math.log(out[f"{shape}{b}"]["load_s"] / out[f"{shape}{a}"]["load_s"]) / math.log(b / a)
            out[f"{shape}_exponent"] = slope
            print(f"{shape}: time ~ N^{slope:.2f} between N = {a} and {b}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
