"""The command ``mbsfmu linearize``: A, B, C, D of a model about an operating point, written as
.npz, .mat or .json (mbsfmu/linear/files.py; docs/guides/linearization.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from ..errors import InputError
from .files import SUFFIXES


def add_parser(sub) -> argparse.ArgumentParser:
    """``mbsfmu linearize MODEL [--at ...] [--inputs ...] [--outputs ...] [--equilibrium] -o FILE``."""
    p = sub.add_parser(
        "linearize",
        help="linearize a model about an operating point: A, B, C, D as .npz, .mat or .json "
        "(docs/guides/linearization.md)",
        description="Linearize MODEL about an operating point (default: its initial state, zero inputs): "
        "d(dx)/dt = A dx + B du, dy = C dx + D du with dx = [dq; dqd] in minimal coordinates (the "
        "tangent space of spherical and free joints, body axes; the independent coordinates of closed "
        "loops). Written with the operating point and the state, input and output names.",
    )
    p.add_argument("model", help="model file (YAML/JSON, URDF or URDF overlay)")
    p.add_argument(
        "--at",
        action="append",
        default=[],
        metavar="NAME=VALUE,...",
        help="operating point, by the trajectory's column names: q.<joint> (q.<joint>[k] for "
        "multi-coordinate joints), qd.<joint>[k], u.<input>; e.g. --at q.q1=0.3,u.q2.tau=1.5 "
        "(repeatable; the rest from the model's initial state, inputs 0). Closed loops are closed on the "
        "assembly branch of the initial state, followed to the given independent coordinates; dependent "
        "coordinates given here are instead Newton's starting guesses and choose the branch",
    )
    p.add_argument("--inputs", metavar="NAME,...", help="inputs forming B's columns (default: all the model's)")
    p.add_argument(
        "--outputs",
        metavar="NAME,...",
        help="outputs (default: the states): states, qdd.<joint>, engine.KE, engine.PE, engine.E, "
        "engine.p_sys[k], engine.P_sys[k], engine.H_sys[k], engine.R[k], engine.Rdot[k]",
    )
    p.add_argument(
        "--equilibrium",
        action="store_true",
        help="first solve qdd(q, 0, u) = 0 by Newton from the operating point (rates zero)",
    )
    p.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="FILE",
        help=f"file to write; its suffix is the format ({', '.join(SUFFIXES)})",
    )
    p.set_defaults(func=run)
    return p


def run(args) -> int:
    """Load, linearize, write, print a summary; 0 on success."""
    from .. import load_model
    from ..sim.simulator import Simulator
    from .files import write_linear_model
    from .statespace import linearize

    if Path(args.out).suffix.lower() not in SUFFIXES:
        raise InputError(f"-o {args.out}: the suffix must be one of {', '.join(SUFFIXES)}")
    if not Path(args.model).is_file():
        raise InputError(f"model file {args.model!r} does not exist")
    model = load_model(args.model)
    q, qd = model.initial_state()
    sim = Simulator(model, backend="python")  # the names only
    names, u_names = sim.state_names, sim.input_names
    u = np.zeros(len(u_names))
    rates_given, guesses = False, []
    dependent = _dependent_names(model)
    for name, value in _items(args.at):
        if name in names[: model.nq]:
            q[names.index(name)] = value
            if name.split("[")[0] in dependent:
                guesses.append(name)
        elif name in names[model.nq : model.nq + model.nv]:
            qd[names.index(name) - model.nq] = value
            rates_given = rates_given or value != 0.0
        elif name.startswith("u.") and name[2:] in u_names:
            u[u_names.index(name[2:])] = value
        else:
            choices = names[: model.nq + model.nv] + [f"u.{n}" for n in u_names]
            raise InputError(f"--at {name}: no such state or input of model {args.model}; names: {', '.join(choices)}")
    if args.equilibrium and rates_given:
        raise InputError("--equilibrium solves for a state at rest: give no non-zero rates (qd.*) in --at")
    lin = linearize(
        model,
        q,
        np.zeros(model.nv) if args.equilibrium else qd,
        u,
        outputs=_names(args.outputs),
        inputs=_names(args.inputs),
        equilibrium=args.equilibrium,
        assembly="guess" if guesses else "branch",
    )
    write_linear_model(lin, args.out)
    nx, nu, ny = lin.A.shape[0], lin.B.shape[1], lin.C.shape[0]
    counts = ", ".join(f"{n} {w}{'' if n == 1 else 's'}" for n, w in ((nx, "state"), (nu, "input"), (ny, "output")))
    print(f"wrote {args.out}: model {model.name}, {counts}")
    point = "equilibrium" if lin.equilibrium else "operating point"
    print(f"  {point}: " + ", ".join(f"{n} = {v:.6g}" for n, v in zip(lin.q_names, lin.q0)))
    if dependent:
        how = (
            f"by Newton from the given {', '.join(guesses)}"
            if guesses
            else "on the assembly branch of the initial state, followed from it ("
            + ", ".join(f"{n} = {v:.6g}" for n, v in zip(names, model.initial_state()[0]) if _held(model, n))
            + ")"
        )
        print(f"  loops closed {how}")
    ev = np.sort_complex(lin.eigenvalues())
    print("  eigenvalues of A [1/s]: " + ", ".join(f"{z.real:.4g}{z.imag:+.4g}j" for z in ev[:12]))
    if ev.size > 12:
        print(f"  ... and {ev.size - 12} more")
    return 0


def _dependent_names(model) -> list[str]:
    """The q.<joint> names of the coordinates solved from closed loops (none for a tree)."""
    from .jacobians import check_partitioned

    part = check_partitioned(model)
    return [] if part is None else [f"q.{j}" for j in part.dependent]


def _held(model, name: str) -> bool:
    """Whether the q entry ``name`` belongs to a joint some loop declares independent."""
    return any(name.split("[")[0] == f"q.{j}" for loop in model.spec.loops for j in loop.independent)


def _items(texts: list[str]) -> list[tuple[str, float]]:
    """NAME=VALUE items of the --at options; InputError naming a malformed one."""
    out = []
    for text in texts:
        for item in filter(None, (s.strip() for s in text.split(","))):
            name, eq, value = item.partition("=")
            try:
                v = float(value)
            except ValueError:
                v = float("nan")
            if not eq or not name.strip() or not np.isfinite(v):
                raise InputError(f"--at {item!r}: expected NAME=VALUE with a finite number, e.g. q.q1=0.3")
            out.append((name.strip(), v))
    return out


def _names(text: str | None) -> list[str] | None:
    return None if text is None else [s.strip() for s in text.split(",") if s.strip()]
