"""Per-run random streams: run i of a campaign with seed S draws from
``Generator(PCG64(SeedSequence([S, i])))``, whatever worker runs it and in whatever order, so a
campaign is reproducible run by run and a resumed campaign draws what the uninterrupted one drew.
SeedSequence hashes the entropy words, so neighbouring (S, i) give independent streams (NumPy's
documentation of SeedSequence: "spawning" and entropy pools)."""

from __future__ import annotations

import numpy as np


def run_rng(seed: int, i: int) -> np.random.Generator:
    """The generator of run ``i`` (>= 0) of a campaign seeded with ``seed`` (>= 0)."""
    return np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), int(i)])))
