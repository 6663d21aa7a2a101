"""The independent checker: p_sys, H_sys, R, Rdot ("MBS Momentum Testing", Concurrent Dynamics
International 2017, Eqs. 9, 10) and KE, PE ("MBS Energy Testing", ibid., Eqs. 1, 2) recomputed from
body records alone, by their Procedures 1-4, and a conservation report on a trajectory (``mbsfmu check``).

This package reads only a trajectory's columns (format: ``mbsfmu/trajectory.py``); it imports
neither the dynamics nor the model, so it can judge this engine and any other simulator alike.
Bodies, wheels and springs are discovered from the column names (``<body>.m``, ``<wheel>.Iw``,
``<spring>.k``). Axes: world unless stated; arrays are (T, ...) over the T rows.

Procedures (which records the simulation outputs, per body j and wheel k). The two documents
number them differently for momentum and energy: inertial absolute records are momentum Procedure 2 but
energy Procedure 1, so ``conservation_report`` takes an optional ``energy_procedure``.

| N | momentum, MBS Momentum Testing | energy, MBS Energy Testing |
|---|---|---|
| 1 | I, omega, rhat, rhatdot, h (world axes, CM-centric); R, Rdot | I, omega, rbar, rbardot, h (world axes, absolute) |
| 2 | I, omega, rbar, rbardot, h (world axes, absolute) | I, omega, rhat, rhatdot, h (world axes), R, Rdot |
| 3 | I^1, omega^1, rhat^1, rhatdot^1, h^1 (body-1 axes, CM-centric), C1; R, Rdot | the same |
| 4 | I^1, omega^1, r^1, rdot^1, h^1 (body-1 axes, joint(1)-centric), C1; eta1, etadot1 | I, omega, r, rdot, h (world axes, joint(1)-centric), eta1, etadot1 |

Every procedure needs ``<body>.m``; energy needs the wheels' ``Iw``, ``g`` and the springs' ``k``,
``x``. MBS Momentum Testing computes R, Rdot itself only in Procedure 2; Procedures 1 and 3 take them from
the ``R``, ``Rdot`` columns ("(R, Rdot) should also be an output of the simulation"), Procedure 4
from joint 1: R = eta1 + C1 c^1, Rdot = etadot1 + C1 cdot^1. ``momentum(..., with_R=False)`` and
the report's checks that do not use R, Rdot do not need those columns.

Modules: ``records`` (the procedures' records, discovery, columns as arrays), ``quantities`` (the
documents' equations and the records turned into their inputs), ``conservation`` (the checks,
the report, its table), ``command`` (``mbsfmu check``). It imports numpy, the standard library and
the base modules (errors, files, trajectory) only, never the engine or the simulator:
tests/test_architecture.py holds it to that; ``import mbsfmu.checker`` loads neither the engine
nor scipy.
"""  # noqa: E501 - a markdown table

from __future__ import annotations

from .conservation import (
    CHECKS,
    conservation_report,
    culprit,
    default_checks,
    drift_slope,
    parse_bound,
    run_check,
    summary_table,
)
from .quantities import EnergyTerms, MomentumTerms, energy, energy_terms, momentum, momentum_terms
from .records import (
    ENERGY_BODY,
    ENERGY_PROCEDURES,
    MOMENTUM_BODY,
    MOMENTUM_PROCEDURES,
    PROCEDURES,
    CheckError,
    System,
    as_trajectory,
    discover,
    field_columns,
)

__all__ = [
    "CHECKS",
    "ENERGY_BODY",
    "ENERGY_PROCEDURES",
    "MOMENTUM_BODY",
    "MOMENTUM_PROCEDURES",
    "PROCEDURES",
    "CheckError",
    "EnergyTerms",
    "MomentumTerms",
    "System",
    "as_trajectory",
    "conservation_report",
    "culprit",
    "default_checks",
    "discover",
    "drift_slope",
    "energy",
    "energy_terms",
    "field_columns",
    "momentum",
    "momentum_terms",
    "parse_bound",
    "run_check",
    "summary_table",
]
