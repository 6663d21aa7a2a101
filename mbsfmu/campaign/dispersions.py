"""Dispersions and designs: what value each parameter path (mbsfmu/campaign/points.py) takes in
run i of a campaign.

A design has ``n_runs`` and ``point(i) -> {path: value}``, a pure function of i, so runs can be
computed in any order, on any worker, and resumed:

- ``MonteCarlo(dispersions, runs, seed)``: run i draws every dispersion, in declared order, from
  one generator seeded by (seed, i) (mbsfmu/campaign/seeding.py).
- ``Grid(params, runs)``: the Cartesian product of value lists, point i decoded from i in mixed
  radix (the last parameter varies fastest, as itertools.product); nothing is enumerated ahead,
  so a 20000 x 20000 grid costs its two value lists.

Dispersions (the file syntax, in a scenario's ``campaign: {dispersions: ...}`` or a campaign file):
``{type: normal, mean, std[, min, max]}`` (with min/max: truncated by inverse-CDF sampling),
``{type: uniform, low, high}``, ``{type: choice, values: [...]}``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy.special import ndtr, ndtri

from ..errors import ModelError, Problem
from .seeding import run_rng

KEYS = {"normal": ("mean", "std", "min", "max"), "uniform": ("low", "high"), "choice": ("values",)}
CAMPAIGN_KEYS = ("dispersions", "outputs")


@dataclass(frozen=True)
class Normal:
    """N(mean, std^2), optionally truncated to [lo, hi]: x = mean + std Phi^-1(Phi(a) + u (Phi(b) -
    Phi(a))), a, b the standardised bounds, u ~ U(0, 1) (inverse transform sampling; one uniform
    per draw whatever the bounds). Without bounds x = mean + std z, z standard normal."""

    mean: float
    std: float
    lo: float = -math.inf
    hi: float = math.inf

    def draw(self, rng: np.random.Generator) -> float:
        if math.isinf(self.lo) and math.isinf(self.hi):
            return float(self.mean + self.std * rng.standard_normal())
        a, b = ndtr((self.lo - self.mean) / self.std), ndtr((self.hi - self.mean) / self.std)
        x = self.mean + self.std * ndtri(a + rng.uniform() * (b - a))
        return float(min(max(x, self.lo), self.hi))  # ndtri rounding at the bounds

    def describe(self) -> dict:
        bounds = {k: v for k, v in (("min", self.lo), ("max", self.hi)) if math.isfinite(v)}
        return {"type": "normal", "mean": self.mean, "std": self.std, **bounds}


@dataclass(frozen=True)
class Uniform:
    """U(low, high)."""

    low: float
    high: float

    def draw(self, rng: np.random.Generator) -> float:
        return float(rng.uniform(self.low, self.high))

    def describe(self) -> dict:
        return {"type": "uniform", "low": self.low, "high": self.high}


@dataclass(frozen=True)
class Choice:
    """One of ``values``, each with probability 1 / len(values)."""

    values: tuple[float, ...]

    def draw(self, rng: np.random.Generator) -> float:
        return float(self.values[int(rng.integers(len(self.values)))])

    def describe(self) -> dict:
        return {"type": "choice", "values": list(self.values)}


@dataclass(frozen=True)
class MonteCarlo:
    """``runs`` runs; run i draws ``dispersions`` ({path: dispersion}) from the generator of (seed, i)."""

    dispersions: dict
    runs: int
    seed: int

    @property
    def n_runs(self) -> int:
        return self.runs

    @property
    def paths(self) -> list[str]:
        return list(self.dispersions)

    def point(self, i: int) -> dict[str, float]:
        rng = run_rng(self.seed, i)
        return {path: d.draw(rng) for path, d in self.dispersions.items()}

    def describe(self) -> dict:
        return {
            "design": "montecarlo",
            "runs": self.runs,
            "seed": self.seed,
            "dispersions": {p: d.describe() for p, d in self.dispersions.items()},
        }


@dataclass(frozen=True)
class Grid:
    """The Cartesian product of ``params`` ((path, values) pairs), the first ``runs`` points of it
    (all when None)."""

    params: tuple
    runs: int | None = None

    @property
    def n_runs(self) -> int:
        n = math.prod(len(v) for _, v in self.params)
        return n if self.runs is None else min(n, self.runs)

    @property
    def paths(self) -> list[str]:
        return [p for p, _ in self.params]

    def point(self, i: int) -> dict[str, float]:
        out = {}
        for path, values in reversed(self.params):  # mixed radix, last parameter fastest
            i, k = divmod(i, len(values))
            out[path] = float(values[k])
        return {p: out[p] for p, _ in self.params}

    def describe(self) -> dict:
        return {
            "design": "grid",
            "runs": self.runs,
            "params": [[p, len(v), v[0], v[-1], _digest(v)] for p, v in self.params],
        }


def _digest(values) -> str:
    """SHA-256 of the values' float64 bytes (a resume must meet the same grid)."""
    import hashlib

    return hashlib.sha256(np.asarray(values, dtype=float).tobytes()).hexdigest()


def parse_campaign(path: str | Path, section: tuple = ()) -> tuple[dict, list[str]]:
    """The dispersions ({path: dispersion}) and chosen outputs of a campaign file, or of the
    ``campaign:`` section of a scenario (section = ("campaign",)). Missing section: ({}, []).
    ModelError lists every problem with its file line."""
    from ..engine.spec.validation import locate
    from ..io.model_file import parse_file

    path = Path(path)
    data, lines = parse_file(path)
    problems: list[Problem] = []

    def problem(at, message):
        problems.append(Problem(tuple(at), message))

    doc = data
    for key in section:
        doc = doc.get(key) if isinstance(doc, dict) else None
    if doc is None:
        return {}, []
    if not isinstance(doc, dict):
        problem = Problem(section, "expected a mapping with keys dispersions, outputs")
        raise ModelError(locate([problem], lines), str(path))
    for key in doc:
        if key not in CAMPAIGN_KEYS:
            problem(section + (key,), f"unknown key {key!r}; allowed: {', '.join(CAMPAIGN_KEYS)}")
    dispersions = {}
    raw = doc.get("dispersions", {})
    if not isinstance(raw, dict):
        problem(
            section + ("dispersions",), "expected a mapping of parameter path to {type: normal|uniform|choice, ...}"
        )
        raw = {}
    for name, spec in raw.items():
        d = _dispersion(spec, section + ("dispersions", name), problem)
        if d is not None:
            dispersions[str(name)] = d
    outputs = doc.get("outputs", [])
    if not isinstance(outputs, list) or not all(isinstance(o, str) and o for o in outputs):
        problem(section + ("outputs",), "expected a list of trajectory column names, e.g. [q.q1, engine.E]")
        outputs = []
    if problems:
        raise ModelError(locate(problems, lines), str(path))
    return dispersions, list(outputs)


def _number(value, at, problem) -> float | None:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        problem(at, f"expected a finite number, got {value!r}"[:200])
        return None
    return float(value)


def _dispersion(spec, at, problem):
    kind = spec.get("type") if isinstance(spec, dict) else None
    if kind not in KEYS:
        got = f"type {kind!r}" if kind else repr(spec)
        problem(at, f"expected {{type: normal|uniform|choice, ...}}, got {got}"[:200])
        return None
    for key in spec:
        if key != "type" and key not in KEYS[kind]:
            problem(at + (key,), f"unknown key {key!r} for a {kind} dispersion; allowed: {', '.join(KEYS[kind])}")
    need = {"normal": ("mean", "std"), "uniform": ("low", "high"), "choice": ("values",)}[kind]
    missing = [k for k in need if k not in spec]
    if missing:
        problem(at, f"a {kind} dispersion needs {', '.join(missing)}")
        return None
    if kind == "choice":
        vals = spec["values"]
        if not isinstance(vals, list) or not vals:
            problem(at + ("values",), "expected a non-empty list of numbers")
            return None
        nums = [_number(v, at + ("values", k), problem) for k, v in enumerate(vals)]
        return None if None in nums else Choice(tuple(nums))
    v = {k: _number(spec[k], at + (k,), problem) for k in KEYS[kind] if k in spec}
    if None in v.values():
        return None
    if kind == "uniform":
        if not v["high"] > v["low"]:
            problem(at + ("high",), f"high = {v['high']} must exceed low = {v['low']}")
            return None
        return Uniform(v["low"], v["high"])
    if not v["std"] > 0:
        problem(at + ("std",), f"std must be > 0, got {v['std']}")
        return None
    d = Normal(v["mean"], v["std"], v.get("min", -math.inf), v.get("max", math.inf))
    if not d.hi > d.lo:
        problem(at + ("max",), f"max = {d.hi} must exceed min = {d.lo}")
        return None
    mass = ndtr((d.hi - d.mean) / d.std) - ndtr((d.lo - d.mean) / d.std)
    if not mass > 1e-12:
        problem(
            at,
            f"[min, max] = [{d.lo}, {d.hi}] holds a probability of {mass:.1e} of N({d.mean}, {d.std}^2): "
            "inverse-CDF sampling cannot resolve it; widen the bounds or move the mean",
        )
        return None
    return d
