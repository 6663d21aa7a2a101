"""The ``mbsfmu`` command: one subcommand per face, each adding its own subparser."""
from __future__ import annotations

import argparse
import sys

from .errors import MbsError


def _info(args) -> int:
    from . import load_model
    m = load_model(args.model)
    print(f"model {m.name} ({args.model}): {m.N} bodies, nq = {m.nq}, nv = {m.nv}, gravity {m.gravity.tolist()} m/s^2")
    print(f"{'#':>3}  {'body':<16} {'parent (L)':<16} {'joint':<12} {'type':<10} {'nq':>2} {'nv':>2} {'mass [kg]':>10}")
    t = m.tree
    for i, b in enumerate(m.bodies, start=1):
        p = "world" if m.L[i] == 0 else m.body_names[m.L[i] - 1]
        kind = "wheel" if b.name in m.wheels else b.joint.type
        print(f"{i:>3}  {b.name:<16} {p:<16} {b.joint.name:<12} {kind:<10} {t.nq[i]:>2} {t.nv[i]:>2} {t.mass[i]:>10.4g}")
    sim_inputs = __import__("mbsfmu.forces", fromlist=["ForceElements"]).ForceElements(m).layout.names
    print(f"inputs: {', '.join(sim_inputs) or 'none'}")
    return 0


def _run(args) -> int:
    from .invariants import summary_table
    from .scenario import load_scenario, run_scenario
    scn = load_scenario(args.scenario)
    duration = args.duration if args.duration is not None else (scn.quick_duration if args.quick else None)
    report = run_scenario(scn, args.out, duration=duration, progress=not args.no_progress)
    print(f"scenario {scn.name}: {report['duration']:g} s simulated in {report['wall_time_s']:.2f} s wall "
          f"(real-time factor {report['real_time_factor']:.3g}), {scn.integrator['method']}; "
          f"outputs in {args.out}/trajectory.csv, {args.out}/report.json")
    if report.get("error"):
        print(f"mbsfmu: error: run stopped: {report['error']} (trajectory up to then written)", file=sys.stderr)
    if report.get("checks"):
        print(summary_table(report))
    return 0 if report["passed"] else 1


def build_parser() -> argparse.ArgumentParser:
    from .invariants import add_parser as add_check_parser
    parser = argparse.ArgumentParser(prog="mbsfmu", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="validate a model file and print its bodies, joints and topology")
    p.add_argument("model")
    p.set_defaults(func=_info)
    p = sub.add_parser("run", help="run a scenario: trajectory.csv, report.json and a summary table")
    p.add_argument("scenario")
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--duration", type=float, help="simulated time [s] instead of the scenario's")
    p.add_argument("--quick", action="store_true", help="use the scenario's quick_duration (as CI does)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)
    add_check_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except MbsError as e:
        print(f"mbsfmu: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
