"""records_of stacks every owner's record in one copy: the same arrays as stacking ``record`` of
each owner (scalars, vectors, symmetric tensors), and a KeyError naming a missing column, as before."""

from __future__ import annotations

import numpy as np
import pytest

from mbsfmu.checker.records import field_columns, record, records_of
from mbsfmu.trajectory import Trajectory


def test_records_of_equals_the_records_stacked(rng):
    owners = ["a", "b.x", "c"]
    names = ["time"] + [n for o in owners for f in ("m", "I", "omega") for n in field_columns(o, f)]
    traj = Trajectory.from_columns({n: rng.normal(size=5) if n != "time" else np.arange(5.0) for n in names})
    for field, shape in (("m", ()), ("I", (3, 3)), ("omega", (3,))):
        got = records_of(traj, owners, field, shape)
        want = np.stack([record(traj, o, field) for o in owners], axis=1)
        assert got.shape == (5, 3, *shape) and np.array_equal(got, want)
    assert records_of(traj, [], "I", (3, 3)).shape == (5, 0, 3, 3)
    with pytest.raises(KeyError, match=r"b\.x\.r_abs\[1\]"):
        records_of(traj, ["b.x"], "r_abs", (3,))
