"""The ``mbsfmu`` command: one subcommand per face, each adding its own subparser."""

from __future__ import annotations

import argparse
import difflib
import sys

from .arguments import FLOATING_BASE_HELP, positive_time
from .errors import MbsError

PURPOSE = (
    "mbsfmu: rigid multibody dynamics with independent momentum and energy checks. Run scenario "
    "files, check any simulator's trajectory, build FMI 2.0 Co-Simulation FMUs, co-simulate, sweep "
    "parameters, or serve a model as a ROS 2 node."
)
EXAMPLES = (
    "examples:\n  mbsfmu list\n  mbsfmu run scenarios/spacecraft_free.yaml -o out/spacecraft_free\n"
    "  mbsfmu info scenarios/models/scara.yaml\n"
    "  mbsfmu check out/spacecraft_free/trajectory.csv --procedure 1\n"
    "\n`mbsfmu COMMAND --help` describes each command."
)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mbsfmu")
    except PackageNotFoundError:
        return "unknown (not installed)"


class Parser(argparse.ArgumentParser):
    """argparse with a hint for a mistyped option: ``--output`` -> did you mean ``--out``?"""

    argv: tuple[str, ...] = ()  # the command line being parsed (set by main)

    def error(self, message):
        hints = []
        parser = self._command_parser()
        known = [s for a in parser._actions for s in a.option_strings]
        for token in self.argv:
            opt = token.split("=", 1)[0]
            if not opt.startswith("-") or opt in known or _is_number(opt) or opt in ("-", "--"):
                continue
            if opt.startswith("--") and any(k.startswith(opt) for k in known):
                continue  # an abbreviation argparse accepts
            close = difflib.get_close_matches(opt, known, n=1, cutoff=0.6)
            if close:
                hints.append(f"unknown option {opt}: did you mean {close[0]}?")
        if hints:
            message += "\n" + "\n".join(hints)
        super().error(message)

    def _command_parser(self) -> argparse.ArgumentParser:
        """This parser, or for the top level the subcommand's parser when the command is known."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                for token in self.argv:
                    if token in action.choices:
                        return action.choices[token]
        return self


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def bodies_text(n_bodies: int, n_wheels: int) -> str:
    """One vocabulary for ``info``, ``run`` and ``check``: "3 bodies and 4 reaction wheels"."""
    text = f"{n_bodies} {'body' if n_bodies == 1 else 'bodies'}"
    if n_wheels:
        text += f" and {n_wheels} reaction {'wheel' if n_wheels == 1 else 'wheels'}"
    return text


INFO_ROWS = 40  # bodies, frame lines and couplings `mbsfmu info` lists before summarising (--all: every one)
INFO_NAMES = 20  # input names on its inputs line before summarising


def _first(items: list, n: int, args, what: str) -> tuple[list, str | None]:
    """The first n of ``items`` (all of them with --all) and the line saying how many more there are."""
    if args.all or len(items) <= n:
        return items, None
    return items[:n], f"... and {len(items) - n} more {what} (`mbsfmu info --all {args.model}` lists every one)"


def _info(args) -> int:
    from . import load_model

    m = load_model(args.model, repair_inertia=args.repair_inertia, floating_base=args.floating_base)
    n_wheels = len(m.wheels)
    print(
        f"model {m.name} ({args.model}): {bodies_text(m.N - n_wheels, n_wheels)}, nq = {m.nq}, nv = {m.nv}, "
        f"gravity {m.gravity.tolist()} m/s^2"
    )
    t = m.tree
    shown, more_bodies = _first(list(m.bodies), INFO_ROWS, args, "bodies")
    rows = [
        (
            str(i),
            b.name,
            "world" if m.L[i] == 0 else m.body_names[m.L[i] - 1],
            b.joint.name,
            "wheel" if b.name in m.wheels else b.joint.type,
            str(t.nq[i]),
            str(t.nv[i]),
            f"{t.mass[i]:.4g}",
        )
        for i, b in enumerate(shown, start=1)
    ]
    head = ("#", "body", "parent (L)", "joint", "type", "nq", "nv", "mass [kg]")
    width = [max(len(r[k]) for r in (head, *rows)) for k in range(len(head))]  # columns sized by their content
    right = (True, False, False, False, False, True, True, True)
    for r in (head, *rows):
        print("  ".join(c.rjust(w) if ra else c.ljust(w) for c, w, ra in zip(r, width, right)).rstrip())
    if more_bodies:
        print(more_bodies)
    from .engine.forces import ForceElements

    sim_inputs = ForceElements(m).layout.names
    names, more = _first(list(sim_inputs), INFO_NAMES, args, "inputs")
    print(f"inputs: {', '.join(names) or 'none'}" + (f" {more}" if more else ""))
    hosted = {}
    for name, (i, _fr) in m.frames.items():
        if name != m.body_names[i - 1]:
            hosted.setdefault(m.body_names[i - 1], []).append(name)
    if hosted:
        print(f"frames on bodies ({sum(map(len, hosted.values()))}, links welded by fixed joints among them):")
        shown, more = _first(list(hosted.items()), INFO_ROWS, args, "bodies with frames")
        for body, names in shown:
            names, more_names = _first(names, INFO_NAMES, args, "frames")
            print(f"  {body}: {', '.join(names)}" + (f" {more_names}" if more_names else ""))
        if more:
            print(f"  {more}")
    if m.named_poses:
        names, more = _first(list(m.named_poses), INFO_NAMES, args, "named poses")
        print(f"named poses: {', '.join(names)}" + (f" {more}" if more else ""))
    couplings, more = _first(list(m.spec.couplings), INFO_ROWS, args, "couplings")
    for c in couplings:
        print(f"coupling: {c.follower} = {c.multiplier:g} * {c.leader} + {c.offset:g} (follower is not an input)")
    if more:
        print(more)
    for note in m.notes:
        print(f"note: {note}")
    return 0


def _run(args) -> int:
    from .scenario.grid import check_run_length
    from .scenario.report import make_out_dir
    from .scenario.run import estimate_wall, run_scenario
    from .scenario.spec import load_scenario

    scn = load_scenario(args.scenario, floating_base=args.floating_base)
    duration = args.duration if args.duration is not None else (scn.quick_duration if args.quick else None)
    make_out_dir(args.out)
    if not args.no_progress:
        T = scn.duration if duration is None else duration
        check_run_length(T, scn.dt, scn.integrator, controller=bool(scn.controller))
        wall, how = estimate_wall(scn, T)
        est = "none" if wall is None else _duration_text(wall)
        print(
            f"scenario {scn.name}: {T:g} s to simulate, estimated wall time {est} ({how})",
            file=sys.stderr,
            flush=True,
        )
    report = run_scenario(scn, args.out, duration=duration, progress=not args.no_progress, record=args.record)
    return _print_report(scn, report, args.out, scn.integrator["method"])


def _duration_text(seconds: float) -> str:
    """A wall time for people: "0.4 s", "~12 s", "~5.6 min", "~2.1 h"."""
    if seconds < 1:
        return f"{seconds:.1g} s"
    if seconds < 100:
        return f"~{seconds:.2g} s"
    if seconds < 6000:
        return f"~{seconds / 60:.2g} min"
    return f"~{seconds / 3600:.2g} h"


def _cosim(args) -> int:
    from .cosim import run_cosim
    from .scenario.spec import load_scenario

    scn = load_scenario(args.scenario)
    duration = args.duration if args.duration is not None else (scn.quick_duration if args.quick else None)
    report = run_cosim(
        scn,
        args.out,
        duration=duration,
        master=args.master,
        scheme=args.scheme,
        fmu_dir=args.fmu_dir,
        progress=not args.no_progress,
    )
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
    """The summary of a run (``mbsfmu run`` and ``mbsfmu cosim``); the exit code (130 after Ctrl-C,
    143 after SIGTERM)."""
    from . import stops
    from .checker.conservation import summary_table

    for note in report.get("model_notes", ()):
        print(f"mbsfmu: note: {note}", file=sys.stderr)
    if report.get("interrupted"):
        print(
            f"mbsfmu: {report['interrupted']}; rows up to then in {out}/trajectory.csv, "
            f"{'report in ' + str(out) + '/report.json' if not report.get('write_error') else report['write_error']}",
            file=sys.stderr,
        )
        return stops.EXIT_CODES.get(report.get("interrupted_by"), 130)
    t_end = report.get("t_end")
    simulated = (
        f"{t_end:g} s simulated"
        if t_end is not None and not report.get("error")
        else f"stopped at t = {t_end:g} s of {report['duration']:g} s"
        if t_end is not None
        else f"no row of {report['duration']:g} s simulated"
    )
    print(
        f"scenario {scn.name}: {simulated} in {report['wall_time_s']:.2f} s wall "
        f"(real-time factor {report['real_time_factor']:.3g}), {how}; "
        f"outputs in {out}/trajectory.csv, {out}/report.json"
    )
    if report.get("error"):
        print(f"mbsfmu: error: run stopped: {report['error']} (trajectory up to then written)", file=sys.stderr)
    if report.get("write_error"):
        print(f"mbsfmu: error: {report['write_error']} (the summary below is all there is)", file=sys.stderr)
    if report.get("plot_error"):
        print(
            f"mbsfmu: warning: plots not written: {report['plot_error']} (report and trajectory are complete)",
            file=sys.stderr,
        )
    if report.get("checks"):
        print(summary_table(report, verdict="conservation checks"))
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
            print(
                f"{kind:<9} {name[:60]:<60} {detail}  tol {e.get('tol', float('nan')):.3g}  "
                f"{'PASS' if e['passed'] else 'FAIL'}"
            )
    failed = not report["passed"] or report.get("write_error")
    if not failed and not report.get("checked", True):
        print(
            f"scenario {scn.name}: COMPLETED, NOTHING CHECKED (the scenario has no checks, references or final values)"
        )
    else:
        print(f"scenario {scn.name}: {'FAIL' if failed else 'PASS'}")
    return 1 if failed else 0


def _list(args) -> int:
    from pathlib import Path

    from .scenario.run import estimate_wall
    from .scenario.spec import load_scenario

    here = (
        Path(args.dir)
        if args.dir
        else next(
            (d for d in (Path("scenarios"), Path(__file__).resolve().parents[1] / "scenarios") if d.is_dir()), None
        )
    )
    if here is None or not here.is_dir():
        print(f"mbsfmu: error: no scenario folder {str(here or 'scenarios')!r}", file=sys.stderr)
        return 2
    paths = sorted(p for p in here.iterdir() if p.suffix in (".yaml", ".yml", ".json") and p.is_file())
    if args.estimate:
        print(
            "est. wall: the output intervals after the first simulated for ~0.3 s of wall time, extrapolated "
            "to the duration (the dynamics may speed up or slow down later)"
        )
    models = []
    for path in paths:
        try:
            scn = load_scenario(path)
        except MbsError as e:
            model = _as_model(path)
            if model is not None:
                models.append((path, model))
            else:
                n = len(getattr(e, "problems", ())) or 1
                print(f"{path!s:<44} (does not load: {n} problem(s); `mbsfmu run {path} -o OUT` lists them)")
            continue
        est = ""
        if args.estimate:
            try:
                wall, how = estimate_wall(scn)
                est = f"  est. wall: none ({how})" if wall is None else f"  est. wall {_duration_text(wall)}"
            except MbsError as e:
                est = f"  est. wall: none ({str(e).splitlines()[0]})"
        print(f"{path!s:<44} {scn.duration:>6g} s{est}  {scn.description}")
    if models:
        if len(models) < len(paths):
            print()
        print("model files (not scenarios; `mbsfmu info MODEL` describes one):")
        for path, m in models:
            print(f"{path!s:<44} model {m.name}: {bodies_text(m.N - len(m.wheels), len(m.wheels))}, nv = {m.nv}")
    return 0


def _as_model(path):
    """The model in ``path`` if the file is a model file, else None."""
    from . import load_model

    try:
        return load_model(path)
    except (MbsError, OSError, RecursionError, MemoryError, ValueError):
        return None


def _ros(args) -> int:
    """Run the ROS 2 node (package ``mbsfmu_ros``, imported here only: mbsfmu never imports it)."""
    from .extras import MissingExtra

    try:
        from mbsfmu_ros.node import main as ros_main
    except ImportError as e:
        missing = (e.name or "rclpy").split(".")[0]
        raise MissingExtra("the ROS 2 node (or a sourced ROS 2 installation, Jazzy or newer)", "ros", missing) from None
    if args.model is None and not args.build_interfaces:
        raise MbsError("mbsfmu ros needs a model file (or --build-interfaces)")
    flags = [
        f for f, on in (("--build-interfaces", args.build_interfaces), ("--no-build-interfaces", args.no_build)) if on
    ]
    return ros_main(["mbsfmu ros", *([args.model] if args.model else []), *flags, *args.ros_args])


def build_parser() -> argparse.ArgumentParser:
    from .checker.command import add_parser as add_check_parser

    parser = Parser(
        prog="mbsfmu", description=PURPOSE, epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--version", action="version", version=f"mbsfmu {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    p = sub.add_parser("info", help="validate a model file and print its bodies, joints and topology")
    p.add_argument("model", help="model file (YAML/JSON, URDF or URDF overlay)")
    p.add_argument(
        "--repair-inertia",
        action="store_true",
        help="raise the smallest principal moments of moving bodies whose inertia no rigid body has "
        "(each change printed as a note)",
    )
    p.add_argument("--floating-base", action="store_true", help=FLOATING_BASE_HELP)
    p.add_argument(
        "--all",
        action="store_true",
        help=f"list every body, input, frame and coupling (default: the first {INFO_ROWS} bodies and "
        f"{INFO_NAMES} inputs of a large model, then how many more)",
    )
    p.set_defaults(func=_info)
    p = sub.add_parser("run", help="run a scenario: trajectory.csv, report.json and a summary table")
    p.add_argument("scenario", help="scenario file (YAML/JSON; `mbsfmu list` shows the bundled ones)")
    p.add_argument("-o", "--out", required=True, help="output directory (created)")
    p.add_argument("--duration", type=positive_time, help="simulated time [s] instead of the scenario's")
    p.add_argument("--quick", action="store_true", help="use the scenario's quick_duration (as CI does)")
    p.add_argument("--no-progress", action="store_true", help="no wall-time estimate and no progress bar")
    p.add_argument("--record", metavar="RUN.mcap", help="also write the run as ROS 2 messages in an MCAP file")
    p.add_argument("--floating-base", action="store_true", help=f"the scenario's model is {FLOATING_BASE_HELP}")
    p.set_defaults(func=_run)
    p = sub.add_parser(
        "cosim",
        help="co-simulate a scenario: its model as an FMU connected to the FMUs of its cosim: "
        "section, run by fmpy or libcosim; the outputs of run",
    )
    p.add_argument("scenario", help="scenario file with a cosim: section")
    p.add_argument("-o", "--out", required=True, help="output directory (created)")
    p.add_argument("--duration", type=positive_time, help="simulated time [s] instead of the scenario's")
    p.add_argument("--quick", action="store_true", help="use the scenario's quick_duration (as CI does)")
    p.add_argument(
        "--master",
        choices=("fmpy", "libcosim"),
        default="fmpy",
        help="co-simulation master: fmpy's FMU2Slave in a fixed-step loop (default) or libcosim's "
        "fixed-step algorithm (libcosimpy)",
    )
    p.add_argument(
        "--scheme",
        choices=("jacobi", "gauss-seidel"),
        help="fmpy loop: Jacobi or Gauss-Seidel in cosim.order (default: the scenario's cosim.scheme)",
    )
    p.add_argument(
        "--fmu-dir", help="folder of built FMUs (default: a cache, $MBSFMU_FMU_CACHE or ~/.cache/mbsfmu/fmus)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_cosim)
    from .campaign.sweep import add_parser as add_sweep_parser

    add_sweep_parser(sub)
    from .campaign.command import add_parser as add_montecarlo_parser

    add_montecarlo_parser(sub)
    p = sub.add_parser(
        "list",
        help="list the scenarios of a folder (default: the bundled ones) with one-line "
        "descriptions and estimated wall times; model files are listed as models",
    )
    p.add_argument("dir", nargs="?", help="folder of scenario files (default: ./scenarios or the bundled folder)")
    p.add_argument(
        "--no-estimate",
        dest="estimate",
        action="store_false",
        help="skip the wall-time estimates (each simulates ~0.3 s of wall time)",
    )
    p.set_defaults(func=_list)
    add_check_parser(sub)
    p = sub.add_parser(
        "ros",
        help="run the model as a ROS 2 node (joint states, momentum, energy, diagnostics "
        "out; actuator commands in); docs/guides/ros2.md",
    )
    p.add_argument("model", nargs="?", help="model file (YAML/JSON/URDF)")
    p.add_argument(
        "--build-interfaces",
        action="store_true",
        help="build the ROS interface packages that have no wheel (tf2_msgs, simulation_interfaces) into "
        "the per-user cache, then exit (the node otherwise builds them on its first start)",
    )
    p.add_argument(
        "--no-build-interfaces",
        dest="no_build",
        action="store_true",
        help="do not build them on start: the node runs without /tf and the simulation_interfaces services",
    )
    p.add_argument(
        "ros_args",
        nargs=argparse.REMAINDER,
        metavar="--ros-args ...",
        help="ROS arguments, e.g. --ros-args -p real_time_factor:=0.0 -p lock_step:=true",
    )
    p.set_defaults(func=_ros)
    from .fmu.command import add_parser as add_fmu_parser

    add_fmu_parser(sub)
    from .symbolic.command import add_parser as add_derive_parser

    add_derive_parser(sub)
    from .io.command import add_parser as add_export_urdf_parser

    add_export_urdf_parser(sub)
    from .linear.command import add_parser as add_linearize_parser

    add_linearize_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line; returns the exit code: 0 pass, 1 a check failed, 2 bad input, 130 Ctrl-C."""
    if argv is None:
        _default_sigpipe()
    from . import stops

    Parser.argv = tuple(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        with stops.stoppable():  # SIGTERM stops a command as Ctrl-C does (mbsfmu/stops.py)
            return args.func(args)
    except MbsError as e:
        print(f"mbsfmu: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:
        report = getattr(e, "report", None)  # stopped while a run's outputs were written: what was kept
        kept = f"; the report so far in {report['report_file']}" if report and "report_file" in report else ""
        print(f"mbsfmu: interrupted by {stops.name(e)}{kept}", file=sys.stderr)
        return stops.exit_code(e)
    except OSError as e:
        if e.filename is None:
            raise
        where = e.filename + (f" -> {e.filename2}" if e.filename2 else "")
        print(f"mbsfmu: error: {where}: {e.strerror or e}", file=sys.stderr)
        return 2
    except (RecursionError, MemoryError) as e:
        print(f"mbsfmu: error: input too deeply nested or too large to handle ({type(e).__name__})", file=sys.stderr)
        return 2


def _default_sigpipe() -> None:
    """The Unix way for a command line tool: a closed pipe (``mbsfmu info M | head``) ends the
    process quietly by SIGPIPE instead of a BrokenPipeError traceback."""
    import signal

    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)


if __name__ == "__main__":
    sys.exit(main())
