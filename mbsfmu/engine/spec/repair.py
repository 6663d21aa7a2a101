"""Opt-in inertia repair for moving bodies whose inertia no rigid body can have.

A rigid body's principal moments about its CoM satisfy I1, I2, I3 >= 0 and the triangle
inequality I1 + I2 >= I3 (I3 - I1 - I2 = -2 sum m_k z_k^2 <= 0 along the third principal axis).
Vendor URDFs sometimes break it by a real margin (an inertia exported about the wrong point, or
typed by hand). With the repair asked for, each such moving body's principal axes V are kept and
its moments e1 <= e2 <= e3 are changed as little as possible:

1. negative moments are raised to 0 (the nearest PSD tensor in the Frobenius norm);
2. if e1 + e2 < e3, the deficit d = e3 - e1 - e2 is shared: e1 += d/2, e2 += d/2, the least
   change (sum of squares) that gives e1 + e2 = e3 while raising the smallest moments only;

and I = V diag(e) V^T. Mass and CoM are never changed; massless moving bodies are not repaired
(no change of moments gives them mass). Each change is reported (``Repair``): the body, the
moments before and after, and the largest change relative to the largest moment.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePath

import numpy as np

from .description import ModelSpec
from .validation import INERTIA_RTOL, REPAIR_HINT, inertia_scale, welded_to_world

OPTION = "repair_inertia"  # the model/overlay key and the load_model argument
FLAG = "--repair-inertia"  # the command-line flag (mbsfmu info)
MODEL_SUFFIXES = (".yaml", ".yml", ".json")  # model files and URDF overlays


def advice(source: str, section: str | None = None) -> str:
    """The end of a non-physical inertia's message: what to do so that ``source`` loads with its
    inertias repaired, for the kind of file it is (a YAML/JSON model or overlay: the key at its top
    level; a URDF: an overlay; ``section``: the model written in that section of a scenario; else a
    spec built in Python). Each suggestion works as written (tests/engine/test_repair.py runs them)."""
    lead = "; to load it anyway with the smallest moments raised (each change reported), "
    suffix = PurePath(source).suffix.lower()
    if section is not None:
        return f"{lead}add {OPTION}: true to the {section}: section of {source}"
    if suffix == ".urdf":
        name = PurePath(source).name
        return (
            f"{lead}load it through a URDF overlay, a YAML file beside it reading `version: 1`, `urdf: {name}`, "
            f"`{OPTION}: true` (docs/guides/urdf.md); `mbsfmu info {FLAG} {source}` lists the changes"
        )
    if suffix == ".json":
        return f'{lead}add "{OPTION}": true to the top-level object of {source}'
    if suffix in MODEL_SUFFIXES:
        return f"{lead}add {OPTION}: true at the top level of {source}; `mbsfmu info {FLAG} {source}` lists the changes"
    return REPAIR_HINT


@dataclass(frozen=True)
class Repair:
    """One repaired body: principal moments [kg m^2] before and after (ascending)."""

    body: str
    before: tuple[float, float, float]
    after: tuple[float, float, float]

    @property
    def relative(self) -> float:
        """The largest moment change over the largest moment."""
        return max(abs(a - b) for a, b in zip(self.after, self.before, strict=True)) / max(max(self.before), 1e-300)

    def note(self) -> str:
        b, a = ", ".join(f"{x:.6g}" for x in self.before), ", ".join(f"{x:.6g}" for x in self.after)
        return (
            f"inertia of body {self.body!r} repaired ({OPTION}): principal moments [{b}] -> [{a}] kg m^2 "
            f"(largest change {100 * self.relative:.3g}% of the largest moment)"
        )


def repair_inertia(spec: ModelSpec) -> tuple[ModelSpec, tuple[Repair, ...]]:
    """``spec`` with every moving body's non-physical inertia repaired (module docstring) and the
    list of repairs; bodies that pass the model's checks (INERTIA_RTOL) are left bit for bit."""
    welded = welded_to_world(spec)
    bodies, repairs = list(spec.bodies), []
    for k, b in enumerate(spec.bodies):
        try:
            I = np.asarray(b.inertia, dtype=float)
            m, c = float(b.mass), np.asarray(b.com, dtype=float)
        except (TypeError, ValueError):
            continue  # unreadable values are reported by the checks
        if b.name in welded or I.shape != (3, 3) or c.shape != (3,) or not np.all(np.isfinite(I)) or not m > 0:
            continue
        I = 0.5 * (I + I.T)
        tol = INERTIA_RTOL * inertia_scale(m, c, I)
        e, V = np.linalg.eigh(I)
        if e[0] >= -tol and e[0] + e[1] >= e[2] - tol:
            continue
        new = np.maximum(e, 0.0)
        deficit = new[2] - new[0] - new[1]
        if deficit > 0:
            new[0] += 0.5 * deficit
            new[1] += 0.5 * deficit
        I_new = V @ np.diag(new) @ V.T
        bodies[k] = replace(b, inertia=tuple(map(tuple, 0.5 * (I_new + I_new.T))))
        repairs.append(Repair(b.name, tuple(map(float, e)), tuple(map(float, np.sort(new)))))
    if not repairs:
        return spec, ()
    return replace(spec, bodies=tuple(bodies), notes=spec.notes + tuple(r.note() for r in repairs)), tuple(repairs)
