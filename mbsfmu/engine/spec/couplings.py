"""Joint couplings (URDF ``<mimic>``): q_f = multiplier q_l + offset, checked and resolved.

A coupling is a holonomic constraint Phi = q_f - a q_l - b = 0 between two 1-DoF joints; the
engine closes it with the loop machinery (mbsfmu/engine/dynamics/closed_loops.py: one row, A =
e_f - a e_l, gamma = 0) with the leader as the independent coordinate, so that assembly sets the
follower from the leader and coordinate partitioning gives exactly the reduced-coordinate equations
J^T M J qdd_l = J^T (tau - C) with J = e_l + a e_f. A chain of couplings (a follower that leads
another) is resolved to its first leader: q_f2 = a2 (a1 q_l + b1) + b2.
"""

from __future__ import annotations

import math

from ...errors import Problem, did_you_mean
from .description import ModelSpec

COUPLED_TYPES = ("revolute", "prismatic")


def check_couplings(spec: ModelSpec) -> list[Problem]:
    """Every problem of ``spec.couplings``: joints that exist and have one coordinate, a follower
    coupled once, not to itself, finite multiplier and offset, no cycle of couplings."""
    jtype = {b.joint.name: b.joint.type for b in spec.bodies}
    out: list[Problem] = []
    seen: dict[str, int] = {}
    for k, c in enumerate(spec.couplings):
        at = ("couplings", k)
        for role, name in (("follower", c.follower), ("leader", c.leader)):
            if name not in jtype:
                out.append(Problem(at + (role,), f"unknown joint {name!r}" + did_you_mean(name, jtype)))
            elif jtype[name] not in COUPLED_TYPES:
                out.append(
                    Problem(
                        at + (role,),
                        f"joint {name!r} is {jtype[name]}: a coupling joins joints with one coordinate "
                        f"({', '.join(COUPLED_TYPES)})",
                    )
                )
        if c.follower == c.leader:
            out.append(Problem(at + ("leader",), f"joint {c.follower!r} cannot follow itself"))
        if c.follower in seen:
            out.append(
                Problem(
                    at + ("follower",), f"joint {c.follower!r} already follows a joint (couplings[{seen[c.follower]}])"
                )
            )
        seen.setdefault(c.follower, k)
        for key in ("multiplier", "offset"):
            v = getattr(c, key)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v):
                out.append(Problem(at + (key,), f"expected a finite number, got {v!r}"))
    lead: dict[str, tuple[int, str]] = {}  # the cycles among the couplings of known joints, with the rest
    for k, c in enumerate(spec.couplings):
        if c.follower in jtype and c.leader in jtype:
            lead.setdefault(c.follower, (k, c.leader))
    reported: set[str] = set()
    for start in lead:
        chain, j = [], start
        while j in lead and j not in chain:
            chain.append(j)
            j = lead[j][1]
        if j in chain and j not in reported:
            cycle = chain[chain.index(j) :]
            reported.update(cycle)
            out.append(
                Problem(
                    ("couplings", lead[cycle[0]][0]),
                    "joints " + " -> ".join(cycle + [cycle[0]]) + " follow each other in a cycle: one must lead",
                )
            )
    return out


def resolved_couplings(spec: ModelSpec) -> tuple[tuple[str, str, float, float], ...]:
    """(follower, first leader, multiplier, offset) per coupling, chains composed:
    q_f = multiplier q_leader + offset with the leader a joint that follows none. The couplings
    must have passed ``check_couplings``."""
    lead = {c.follower: (c.leader, float(c.multiplier), float(c.offset)) for c in spec.couplings}
    out = []
    for c in spec.couplings:
        a, b, j = 1.0, 0.0, c.follower
        while j in lead:
            j, ak, bk = lead[j]
            a, b = a * ak, a * bk + b  # q = a (ak q_next + bk) + b
        out.append((c.follower, j, a, b))
    return tuple(out)
