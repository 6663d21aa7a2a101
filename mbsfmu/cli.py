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
    from .scenario import load_scenario, run_scenario
    scn = load_scenario(args.scenario)
    duration = args.duration if args.duration is not None else (scn.quick_duration if args.quick else None)
    report = run_scenario(scn, args.out, duration=duration, progress=not args.no_progress, record=args.record)
    return _print_report(scn, report, args.out, scn.integrator["method"])


def _cosim(args) -> int:
    from .cosim import run_cosim
    from .scenario import load_scenario
    scn = load_scenario(args.scenario)
    duration = args.duration if args.duration is not None else (scn.quick_duration if args.quick else None)
    report = run_cosim(scn, args.out, duration=duration, master=args.master, scheme=args.scheme,
                       fmu_dir=args.fmu_dir, progress=not args.no_progress)
    c = report["cosim"]
    fmus = ", ".join(f"{n} ({'builtin ' + f['builtin'] if f['builtin'] else f['path']})" for n, f in c["fmus"].items())
    order = f" ({' -> '.join(c['order'])})" if c["order"] else ""
    how = f"{scn.integrator['method']} in FMU mbs; co-simulated by {c['master']}, {c['scheme']}{order}"
    for note in c["notes"]:
        print(f"note: {note}")
    for line in c["log"][:10]:
        print(f"fmu log: {line}")
    print(f"FMUs: {fmus}")
    return _print_report(scn, report, args.out, how)


def _print_report(scn, report: dict, out, how: str) -> int:
    """The summary of a run (``mbsfmu run`` and ``mbsfmu cosim``); the exit code."""
    from .invariants import summary_table
    print(f"scenario {scn.name}: {report['duration']:g} s simulated in {report['wall_time_s']:.2f} s wall "
          f"(real-time factor {report['real_time_factor']:.3g}), {how}; "
          f"outputs in {out}/trajectory.csv, {out}/report.json")
    if report.get("error"):
        print(f"mbsfmu: error: run stopped: {report['error']} (trajectory up to then written)", file=sys.stderr)
    if report.get("checks"):
        print(summary_table(report))
    for name, why in report.get("skipped_checks", {}).items():
        print(f"check     {name:<60} SKIPPED: {why}")
    if report.get("check_error"):
        print(f"mbsfmu: error: checks not run: {report['check_error']}", file=sys.stderr)
    for kind, entries in (("reference", report.get("references", {})), ("final", report.get("final", {}))):
        for name, e in entries.items():
            if e.get("error"):
                detail = e["error"]
            elif kind == "final":
                detail = f"{e['value']:.12g} vs {e['expected']:.12g}"
            elif e["at_t"] is None:
                detail = "no rows in its time window"
            else:
                detail = f"max |error| {e['max_abs']:.3g} (at t = {e['at_t']:.6g} s)"
            print(f"{kind:<9} {name[:60]:<60} {detail}  tol {e.get('tol', float('nan')):.3g}  "
                  f"{'PASS' if e['passed'] else 'FAIL'}")
    print(f"scenario {scn.name}: {'PASS' if report['passed'] else 'FAIL'}")
    return 0 if report["passed"] else 1


def _list(args) -> int:
    from pathlib import Path

    from .scenario import ScenarioError, load_scenario
    here = Path(args.dir) if args.dir else next(
        (d for d in (Path("scenarios"), Path(__file__).resolve().parents[1] / "scenarios") if d.is_dir()), None)
    if here is None or not here.is_dir():
        print(f"mbsfmu: error: no scenario folder {str(here or 'scenarios')!r}", file=sys.stderr)
        return 2
    for path in sorted(here.glob("*.yaml")):
        try:
            scn = load_scenario(path)
            print(f"{str(path):<44} {scn.duration:>6g} s  {scn.description}")
        except ScenarioError as e:
            print(f"{str(path):<44} (does not load: {len(e.problems)} problem(s); `mbsfmu run` lists them)")
    return 0


def _ros(args) -> int:
    """Run the ROS 2 node (package ``ros_node``, imported here only: mbsfmu never imports it)."""
    try:
        from ros_node.node import main as ros_main
    except ImportError as e:
        print(f"mbsfmu: error: the ROS 2 node needs rclpy and the ROS 2 messages ({e}): pip install "
              f"\"mbsfmu[ros]\" or source a ROS 2 installation (Jazzy or newer)", file=sys.stderr)
        return 2
    return ros_main(["mbsfmu ros", args.model, *args.ros_args])


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
    p.add_argument("--record", metavar="RUN.mcap", help="also write the run as ROS 2 messages in an MCAP file")
    p.set_defaults(func=_run)
    p = sub.add_parser("cosim", help="co-simulate a scenario: its model as an FMU connected to the FMUs of its cosim: "
                                     "section, run by fmpy or libcosim; the outputs of run")
    p.add_argument("scenario")
    p.add_argument("--out", required=True, help="output directory (created)")
    p.add_argument("--duration", type=float, help="simulated time [s] instead of the scenario's")
    p.add_argument("--quick", action="store_true", help="use the scenario's quick_duration (as CI does)")
    p.add_argument("--master", choices=("fmpy", "libcosim"), default="fmpy",
                   help="co-simulation master: fmpy's FMU2Slave in a fixed-step loop (default) or libcosim's "
                        "fixed-step algorithm (libcosimpy)")
    p.add_argument("--scheme", choices=("jacobi", "gauss-seidel"),
                   help="fmpy loop: Jacobi or Gauss-Seidel in cosim.order (default: the scenario's cosim.scheme)")
    p.add_argument("--fmu-dir", help="folder of built FMUs (default: a cache, $MBSFMU_FMU_CACHE or ~/.cache/mbsfmu/fmus)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cosim)
    from .sweep import add_parser as add_sweep_parser
    add_sweep_parser(sub)
    from .campaign.command import add_parser as add_montecarlo_parser
    add_montecarlo_parser(sub)
    p = sub.add_parser("list", help="list the scenarios of a folder (default: the bundled ones) with one-line descriptions")
    p.add_argument("dir", nargs="?", help="folder of scenario files (default: ./scenarios or the bundled folder)")
    p.set_defaults(func=_list)
    add_check_parser(sub)
    p = sub.add_parser("ros", help="run the model as a ROS 2 node (joint states, momentum, energy, diagnostics "
                                   "out; actuator commands in); README \"ROS 2\"")
    p.add_argument("model", help="model file (YAML/JSON/URDF)")
    p.add_argument("ros_args", nargs=argparse.REMAINDER, metavar="--ros-args ...",
                   help="ROS arguments, e.g. --ros-args -p real_time_factor:=0.0 -p lock_step:=true")
    p.set_defaults(func=_ros)
    from .fmu.build import add_parser as add_fmu_parser
    add_fmu_parser(sub)
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
