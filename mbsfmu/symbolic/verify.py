"""The generated equations next to the numeric engine at one state: what ``mbsfmu derive`` checks
before it writes anything, and what the tests assert.

Tolerance: an entry of M, h or f is a sum of at most a few hundred products of parameters and rates
evaluated by two operation orders (generated code, recursive engine), each about n eps S for an
entry of scale S; ``RTOL`` = 1e-12 of the scale leaves a margin of ~10x for n = 500 terms.
Accelerations add a solve with M: their bound is multiplied by cond(M).
"""

from __future__ import annotations

import numpy as np

from ..engine.dynamics.closed_loops import PartitionError
from ..engine.forces import ForceElements
from .reduction import multiplier_accelerations, partitioned_accelerations

RTOL = 1e-12


def _scale(x) -> float:
    return max(1.0, float(np.max(np.abs(x)))) if np.size(x) else 1.0


def engine_pairs(model, ns: dict, q, qd, u) -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    """{quantity: (generated, engine, allowed max |difference|)} at a consistent state (q, qd, u):
    M, qdd, and for models with loops Phi, A, gamma (the cut joints) with qdd by partitioning."""
    fe = ForceElements(model)
    fx = fe.body_wrenches(model.forward_kinematics(q, qd), u)[0]
    f_ext = None if fx is None else fx[1:]
    tau = fe.joint_forces(u)
    M, h, f = ns["eom"](q, qd, u)
    Me = model.mass_matrix(q)
    out = {"M": (M, Me, RTOL * _scale(Me))}
    cond = float(np.linalg.cond(M))
    if not model.loops:
        qdd = model.forward_dynamics(q, qd, tau, f_ext=f_ext)
        out["qdd"] = (ns["forward_dynamics"](q, qd, u), qdd, RTOL * cond * _scale(qdd))
        return out
    Phi, A, gamma = ns["constraints"](q, qd)
    ld = model.loop_constraints(q, qd)
    out["Phi"] = (Phi, ld.Phi, RTOL * model.loops.scale)
    out["A"] = (A, ld.A, RTOL * _scale(ld.A))
    out["gamma"] = (gamma, ld.gamma, RTOL * _scale(ld.gamma))
    try:
        qdd, _ = model.constrained_forward_dynamics(q, qd, tau, f_ext=f_ext, method="partitioning")
        mine = partitioned_accelerations(M, h, f, A, gamma, model.loop_partition().iu)
    except PartitionError:
        qdd, _ = model.constrained_forward_dynamics(q, qd, tau, f_ext=f_ext, method="multipliers")
        mine = multiplier_accelerations(M, h, f, A, gamma)
    out["qdd"] = (mine, qdd, RTOL * cond * _scale(qdd))
    return out


def random_states(model, n: int, seed: int = 7):
    """n consistent states (q, qd) and inputs u (loops assembled)."""
    rng = np.random.default_rng(seed)
    nu = len(ForceElements(model).layout.names)
    for _ in range(n):
        q, qd = model.random_state(rng)
        if model.loops:
            q, qd = model.assemble(q, qd)
        yield q, qd, rng.normal(size=nu)
