"""The command ``mbsfmu export-urdf``: a model file (YAML/JSON, URDF or URDF overlay) as a URDF robot
description (mbsfmu/io/urdf_export.py), with a warning per item URDF cannot say."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import InputError


def add_parser(sub) -> argparse.ArgumentParser:
    """``mbsfmu export-urdf MODEL -o X.urdf``."""
    p = sub.add_parser(
        "export-urdf",
        help="write a model as a URDF robot description (docs/guides/urdf-export.md)",
        description="Write MODEL as URDF: links with exact inertials, joints (spherical as three revolute "
        "joints, reaction wheels as rotor links), frames as massless links, joint damping, mimic couplings, "
        "limits of a source URDF, simple visuals. What URDF cannot say (gravity, joint stiffness, force "
        "elements, initial state) is listed as warnings. Models with closed loops are refused.",
    )
    p.add_argument("model", help="model file (YAML/JSON, URDF or URDF overlay)")
    p.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="X.urdf",
        help="URDF file to write; - writes it to stdout (for launch files)",
    )
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    """Load, export, write; 0 on success (warnings on stderr)."""
    from .. import load_model
    from .urdf_export import export_urdf, source_urdf, write_urdf

    if not Path(args.model).is_file():
        raise InputError(f"model file {args.model!r} does not exist")
    model = load_model(args.model)
    robot = source_urdf(args.model)
    limits = robot.limits if robot else None
    if args.out == "-":  # the text alone on stdout: a launch file's Command substitution takes it
        out = export_urdf(model, limits, args.model)
        sys.stdout.write(out.text)
        dropped = out.dropped
    else:
        dropped = write_urdf(model, args.out, limits=limits, source=args.model)
    if robot is not None:
        dropped += tuple(f"joint {j!r}: <dynamics friction> {f!r} (not modelled)" for j, f in robot.friction.items())
    for what in dropped:
        print(f"mbsfmu: warning: not in the URDF: {what}", file=sys.stderr)
    n = len(model.spec.bodies)
    if args.out == "-":
        return 0
    print(f"wrote {args.out}: model {model.name}, {n} {'body' if n == 1 else 'bodies'} as URDF links")
    return 0
