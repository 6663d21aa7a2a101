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
    for i, b in enumerate(m.body_names, start=1):
        p = "world" if m.L[i] == 0 else m.body_names[m.L[i] - 1]
        t = m.tree
        print(f"{i:>3}  {b:<16} {p:<16} {m.joint_names[i - 1]:<12} {m.spec.bodies[m.topology.order[i - 1]].joint.type:<10} "
              f"{t.nq[i]:>2} {t.nv[i]:>2} {t.mass[i]:>10.4g}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mbsfmu", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("info", help="validate a model file and print its bodies, joints and topology")
    p.add_argument("model")
    p.set_defaults(func=_info)
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
