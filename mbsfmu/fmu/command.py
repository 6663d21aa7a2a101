"""The command ``mbsfmu build-fmu``: either runtime's FMU of a model file (``native.py`` by
default, ``build.py`` with ``--runtime python``)."""

from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
import zipfile

from ..arguments import FLOATING_BASE_HELP
from ..errors import InputError
from .variables import METHODS, NAMINGS


def add_parser(sub) -> argparse.ArgumentParser:
    """``mbsfmu build-fmu MODEL -o MODEL.fmu [--naming structured|flat] ...`` (pythonfmu's
    create_command_parser pattern: this module owns its subparser)."""
    p = sub.add_parser(
        "build-fmu",
        help="build an FMI 2.0 or 3.0 FMU of a model (Co-Simulation and Model Exchange)",
        description="Build an FMU of a model file. --runtime native (default): the C engine core compiled "
        "with the model's tables for linux64, win64 and darwin64 by zig cc, needing nothing at run time, "
        "Co-Simulation and Model Exchange in one FMU, FMI 2.0 (default) or 3.0 (--fmi-version 3); "
        "--runtime python: an FMI 2.0 Co-Simulation FMU by pythonfmu, "
        "with the model and this engine bundled in its resources (needs mbsfmu[fmu] and "
        "a Python with numpy/scipy/PyYAML at run time).",
    )
    p.add_argument("model", help="model file (YAML/JSON, URDF or URDF overlay)")
    p.add_argument("-o", "--output", "--out", help="FMU file to write (default: <model name>.fmu)")
    p.add_argument(
        "--runtime",
        choices=("native", "python"),
        default="native",
        help="native: Python-free FMU on the C engine core (default); python: pythonfmu FMU",
    )
    p.add_argument(
        "--naming",
        choices=NAMINGS,
        default="structured",
        help="variable names: structured (q1.tau, push.f[1]) or flat (q1_tau, push_f_1)",
    )
    p.add_argument(
        "--fmi-version",
        type=int,
        choices=(2, 3),
        default=2,
        help="FMI 2.0 (default: the version every importer takes) or 3.0 (array variables, adjoint derivatives); "
        "--runtime native only",
    )
    p.add_argument("--integrator", choices=METHODS, default="rk4", help="start value of solver.method")
    p.add_argument("--h-max", type=float, default=1e-3, help="start value of solver.h_max [s]")
    p.add_argument("--rtol", type=float, default=1e-10, help="start value of solver.rtol (dop853)")
    p.add_argument("--atol", type=float, default=1e-12, help="start value of solver.atol (dop853)")
    p.add_argument("--floating-base", action="store_true", help=FLOATING_BASE_HELP)
    p.add_argument(
        "--no-loader",
        action="store_true",
        help="--runtime python: ship pythonfmu's binary only (the FMU then loads only in Python hosts)",
    )
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    """Build the FMU ``args`` ask for and print what it holds; the exit code."""
    common = {
        "naming": args.naming,
        "integrator": args.integrator,
        "h_max": args.h_max,
        "rtol": args.rtol,
        "atol": args.atol,
        "floating_base": args.floating_base,
    }
    if args.runtime == "native":
        if args.no_loader:
            raise InputError("--no-loader applies to --runtime python only")
        progress = lambda msg: print(f"mbsfmu build-fmu: {msg}", file=sys.stderr, flush=True)  # noqa: E731
        from .native import build_native_fmu

        out = build_native_fmu(args.model, args.output, progress=progress, fmi_version=args.fmi_version, **common)
    else:
        if args.fmi_version != 2:
            raise InputError("--fmi-version 3 applies to --runtime native only (the python runtime is FMI 2.0)")
        from .build import build_fmu

        out = build_fmu(args.model, args.output, loader=False if args.no_loader else None, **common)
    with zipfile.ZipFile(out) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
        names = z.namelist()
    svs = root.find("ModelVariables")
    count = {c: sum(sv.get("causality") == c for sv in svs) for c in ("parameter", "input", "output")}
    ident = root.find("CoSimulation").get("modelIdentifier")
    kinds = " and ".join(k for k in ("CoSimulation", "ModelExchange") if root.find(k) is not None)
    print(
        f"wrote {out}: FMI {root.get('fmiVersion')} {kinds}, {count['parameter']} parameters, {count['input']} "
        f"inputs, {count['output']} outputs ({root.get('variableNamingConvention')} names), modelIdentifier {ident}"
    )
    if args.runtime == "native":
        platforms = sorted({n.split("/")[1] for n in names if n.startswith("binaries/")})
        print(f"binary: native C engine core for {', '.join(platforms)} (no Python needed), plus sources/")
    elif any(n.endswith(".pythonfmu.so") for n in names):
        print("binary: mbsfmu loader (runs in non-Python hosts on this machine)")
    else:
        print("binary: pythonfmu only (loads in Python hosts)")
    return 0


__all__ = ["add_parser", "run"]
