"""``mbsfmu check`` (and ``python -m mbsfmu.checker``): the conservation report of a trajectory file or a
run folder, printed as a table, optionally as JSON; exit 0 pass, 1 a check fails, 2 bad input."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable

from ..errors import MbsError
from .conservation import CHECKS, check_procedure, parse_bound, run_check, summary_table
from .records import ENERGY_PROCEDURES, MOMENTUM_PROCEDURES, PROCEDURES, CheckError

# ---- command line --------------------------------------------------------------------------
CHECK_HELP = (
    """Recompute p_sys, H_sys, R, Rdot (MBS Momentum Testing) and KE, PE (MBS Energy Testing)
from the body records in a trajectory CSV (ours or another simulator's; column format in
mbsfmu/trajectory.py) by Procedure N, and check them. Checks (--expect NAME[=BOUND], BOUND a number, abs:X or rel:X):
"""
    + "\n".join(
        f"  {n}: {s.quantity} [{s.unit}]; default {s.default[0]} <= {s.default[1]:g}" for n, s in CHECKS.items()
    )
    + """
Without --expect: engine_agreement (if engine.* columns exist) and p_sys_zero.
Procedures (records read: momentum, MBS Momentum Testing / energy, MBS Energy Testing):
"""
    + "\n".join(f"  {n}: {MOMENTUM_PROCEDURES[n]} / {ENERGY_PROCEDURES[n]}" for n in PROCEDURES)
    + """
Exit status: 0 all checks pass, 1 a check fails, 2 bad input."""
)


def parse_expect(items: Iterable[str] | None) -> dict[str, object] | None:
    """{name: bound text or None} from ["name=bound", "name", ...]; None when no items."""
    if not items:
        return None
    out: dict[str, object] = {}
    for item in items:
        name, sep, bound = item.partition("=")
        name = name.strip()
        if name not in CHECKS:
            raise CheckError(f"--expect {item!r}: unknown check {name!r}; expected one of {', '.join(CHECKS)}")
        out[name] = bound.strip() if sep else None
        parse_bound(name, out[name])
    return out


def main_check(args: argparse.Namespace) -> int:
    """``mbsfmu check``: print the summary table, optionally write the JSON report; return the exit
    code (0 pass, 1 a check failed). Bad input raises MbsError (the CLI prints it, exit 2)."""
    procedure = check_procedure(args.procedure)
    energy_procedure = getattr(args, "energy_procedure", None)
    checks = parse_expect(args.expect)
    report, ok = run_check(args.trajectory, procedure, checks, energy_procedure)
    print(summary_table(report))
    if args.json:
        try:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(report, f, indent=2, allow_nan=False)
                f.write("\n")
        except OSError as e:
            raise CheckError(f"cannot write the JSON report {args.json}: {e.strerror or e}") from None
    return 0 if ok else 1


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``check TRAJECTORY.csv --procedure N [--expect NAME=BOUND ...] [--json OUT]``."""
    p = subparsers.add_parser(
        "check",
        help="check momentum and energy conservation in a trajectory CSV",
        description=CHECK_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "trajectory",
        metavar="TRAJECTORY.csv",
        help="trajectory CSV of any simulator (columns: mbsfmu/trajectory.py), or a run folder of `mbsfmu run` "
        "(its trajectory.csv with the records.csv beside it)",
    )
    p.add_argument(
        "--procedure",
        type=int,
        default=1,
        metavar="N",
        help="MBS Momentum/Energy Testing procedure 1-4 (which records to read; default 1)",
    )
    p.add_argument(
        "--energy-procedure",
        type=int,
        metavar="N",
        help="MBS Energy Testing procedure for KE, PE if not the same N (e.g. inertial absolute "
        "records: --procedure 2 --energy-procedure 1)",
    )
    p.add_argument(
        "--expect", action="append", metavar="NAME[=BOUND]", help="a check to run and its bound (repeatable)"
    )
    p.add_argument("--json", metavar="OUT.json", help="also write the report as JSON")
    p.set_defaults(func=main_check)
    return p


def main(argv: list[str] | None = None) -> int:
    """Standalone ``python -m mbsfmu.checker TRAJECTORY.csv ...`` (same as ``mbsfmu check``)."""
    parser = argparse.ArgumentParser(prog="mbsfmu")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["check", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except MbsError as e:
        print(f"mbsfmu: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
