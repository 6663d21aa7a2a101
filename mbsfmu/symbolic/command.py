"""The command ``mbsfmu derive``: a model's equations of motion in closed form (the PyMbs explicit
scheme, seed 004 Eq. 2-9) as text, LaTeX, NumPy and C, checked against the numeric engine first."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from .. import load_model
from ..arguments import positive_count
from ..errors import InputError
from ..extras import require
from .limits import MAX_NV, MAX_SERIES

CHECK_STATES = 3  # random consistent states at which the generated code must equal the engine


def progress_line(t0: float):
    """A function printing ``derive: <message> (<elapsed> s)`` to stderr, flushed (the command's
    progress while it works: one line per stage and per body; elapsed wall time since t0, measured)."""

    def say(message: str) -> None:
        print(f"derive: {message} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)

    return say


def add_parser(sub) -> argparse.ArgumentParser:
    """``mbsfmu derive MODEL -o DIR [--max-series N] [--max-nv N]``."""
    p = sub.add_parser(
        "derive",
        help="derive a model's equations of motion in closed form (M qdd + h = f) as text, LaTeX, NumPy and C code",
        description="Derive M(q), h(q, qd), f(q, qd, u) of M qdd + h = f by the PyMbs explicit scheme "
        "(SymPy; with loops also Phi, A, gamma of the cut joints), check the generated code against the "
        "numeric engine at random states, and write <name>_eom.txt, .tex, .py, .c and .h into DIR. "
        "Needs the symbolic extra: pip install 'mbsfmu[symbolic]'.",
    )
    p.add_argument("model", help="model file (YAML/JSON, URDF or URDF overlay)")
    p.add_argument("-o", "--out", required=True, help="output directory (created)")
    p.add_argument(
        "--max-series",
        type=positive_count,
        default=MAX_SERIES,
        help=f"most moving joints in series to derive (default {MAX_SERIES})",
    )
    p.add_argument(
        "--max-nv", type=positive_count, default=MAX_NV, help=f"most joint rates to derive (default {MAX_NV})"
    )
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    """Derive, check, write; 0 when the generated code equals the engine, 1 when it does not."""
    require("symbolic", "mbsfmu derive")
    from .codegen import c_source, identifier, latex_form, load_numpy, numpy_source, text_form
    from .scheme import SymbolicLimitError, derive
    from .verify import engine_pairs, random_states

    model = load_model(args.model)
    t0 = time.perf_counter()
    say = progress_line(t0)
    try:
        eq = derive(model, args.max_series, args.max_nv, progress=say)
    except SymbolicLimitError as e:
        raise InputError(str(e)) from None
    say(f"{len(eq.assignments)} intermediate variables; writing the NumPy code")
    py = numpy_source(eq)
    say("writing the C code")
    header, csrc = c_source(eq)
    t1 = time.perf_counter()
    ns = load_numpy(py)
    worst, failed = 0.0, []
    say(f"checking against the numeric engine at {CHECK_STATES} random states")
    for q, qd, u in random_states(model, CHECK_STATES):
        for name, (mine, engine, atol) in engine_pairs(model, ns, q, qd, u).items():
            err = float(np.max(np.abs(np.asarray(mine) - engine))) if np.size(engine) else 0.0
            worst = max(worst, err / atol)
            if not err <= atol:
                failed.append(f"{name}: max |difference| {err:.3g} > {atol:.3g}")
    say("writing the text and LaTeX forms")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{identifier(eq.name)}_eom"
    files = {
        ".txt": text_form(eq),
        ".tex": latex_form(eq),
        ".py": py,
        ".c": csrc,
        ".h": header,
    }
    for ext, text in files.items():
        (out / (stem + ext)).write_text(text, encoding="utf-8")
    loops = f", {eq.Phi.rows} loop constraint rows" if eq.Phi is not None else ""
    print(
        f"{eq.name}: nq = {len(eq.q)}, nv = {eq.nv}, nu = {len(eq.u)}, {len(eq.params)} parameters{loops}; "
        f"derived and generated in {t1 - t0:.2f} s"
    )
    print(f"wrote {', '.join(stem + ext for ext in files)} to {out}")
    if failed:
        print("the generated code differs from the numeric engine:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    print(
        f"checked against the numeric engine at {CHECK_STATES} random states: worst difference "
        f"{worst:.2g} of its round-off bound (mbsfmu/symbolic/verify.py)"
    )
    return 0
