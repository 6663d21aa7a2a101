"""The command ``mbsfmu export-urdf``: a model file (YAML/JSON, URDF or URDF overlay) as a URDF robot
description (mbsfmu/io/urdf_export.py), with a warning per item URDF cannot say."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from ..errors import InputError


def add_parser(sub) -> argparse.ArgumentParser:
    """``mbsfmu export-urdf MODEL -o X.urdf [--overlay [X.yaml]]``."""
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
    p.add_argument(
        "--overlay",
        nargs="?",
        const="",
        metavar="X.yaml",
        help="also write a URDF overlay with what URDF cannot say (floating base, gravity, joint springs, "
        "actuated flags, force elements, initial state), so that loading it gives the model back "
        "(default file: <X>_overlay.yaml beside the URDF)",
    )
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    """Load, export, write; 0 on success (warnings on stderr)."""
    from .. import load_model
    from .overlay_export import export_overlay
    from .urdf_export import export_urdf, source_urdf, write_urdf

    if not Path(args.model).is_file():
        raise InputError(f"model file {args.model!r} does not exist")
    if args.overlay is not None and args.out == "-":
        raise InputError("--overlay names the URDF by its file: write the URDF to a file (-o X.urdf), not to stdout")
    model = load_model(args.model)
    robot = source_urdf(args.model)
    limits = robot.limits if robot else None
    if args.out == "-":  # the text alone on stdout: a launch file's Command substitution takes it
        out = export_urdf(model, limits, args.model)
        sys.stdout.write(out.text)
        dropped = out.dropped
    else:
        dropped = write_urdf(model, args.out, limits=limits, source=args.model)
    overlay = None
    if args.overlay is not None:
        overlay = Path(args.overlay or Path(args.out).with_name(f"{Path(args.out).stem}_overlay.yaml"))
        out = export_overlay(model, os.path.relpath(Path(args.out).resolve(), overlay.resolve().parent), args.model)
        try:
            overlay.write_text(out.text, encoding="utf-8")
        except OSError as e:
            raise InputError(f"cannot write the overlay file {str(overlay)!r}: {e.strerror or e}") from None
        carried = set(export_urdf(model, limits, args.model).overlaid)
        dropped = tuple(d for d in dropped if d not in carried) + out.dropped
    if robot is not None:
        dropped += tuple(f"joint {j!r}: <dynamics friction> {f!r} (not modelled)" for j, f in robot.friction.items())
    where = "in the URDF" if overlay is None else "in the URDF nor the overlay"
    for what in dropped:
        print(f"mbsfmu: warning: not {where}: {what}", file=sys.stderr)
    n = len(model.spec.bodies)
    if args.out == "-":
        return 0
    print(f"wrote {args.out}: model {model.name}, {n} {'body' if n == 1 else 'bodies'} as URDF links")
    if overlay is not None:
        print(
            f"wrote {overlay}: floating base, gravity, joint springs, actuated flags, force elements and initial "
            f"state; load it (mbsfmu info {overlay}, or model: in a scenario) to get the model back"
        )
    return 0
