"""Fixed-joint lumping (mbsfmu/engine/spec/lumping.py) against a second formulation: the sum of
the parts' spatial inertias moved to the host frame by Plucker transforms (RBDA Eq. 2.62-2.66),
and the same dynamics, frames, wheels and force elements before and after lumping."""

from __future__ import annotations

import numpy as np
import pytest

from mbsfmu import ModelError
from mbsfmu.engine.model import Model
from mbsfmu.engine.spatial import plucker, rpy_to_R, spatial_inertia
from mbsfmu.engine.spec.description import Body, Joint, ModelSpec, Origin, Thruster, Wheel
from mbsfmu.engine.spec.lumping import composite, lump_fixed


def _random_inertia(rng, m):
    """A physical inertia about the CoM: m/12 times a box's (b^2 + c^2, ...) rotated."""
    a, b, c = rng.uniform(0.1, 1.0, 3)
    R = rpy_to_R(rng.uniform(-3, 3, 3))
    return R @ np.diag([b * b + c * c, a * a + c * c, a * a + b * b]) * m / 12 @ R.T


def test_composite_equals_the_sum_of_spatial_inertias():
    """I_host = sum X_k^T I_k X_k with X_k the motion transform from the host frame to part k's
    frame (RBDA Eq. 2.66): the composite's (m, c, I_c) give the same 6x6 inertia to 1e-14."""
    rng = np.random.default_rng(5)
    parts, total = [], np.zeros((6, 6))
    for _ in range(4):
        m = rng.uniform(0.0, 3.0)
        c, I = rng.normal(size=3), _random_inertia(rng, m)
        R, p = rpy_to_R(rng.uniform(-3, 3, 3)), rng.normal(size=3)
        parts.append((m, c, I, R, p))
        X = plucker(R.T, p)  # host -> part: E = R^T, r = p
        total += X.T @ spatial_inertia(m, c, I) @ X
    m, c, I = composite(parts)
    np.testing.assert_allclose(spatial_inertia(m, c, I), total, rtol=0, atol=1e-14 * np.abs(total).max())


def _spec(rng) -> ModelSpec:
    """A chain with a rotated fixed-joint link carrying a wheel, a named frame and a thruster, a
    second fixed link on that one, and a moving link beyond them."""
    bodies = (
        Body("a", "world", Joint("ja", "revolute", (0, 0, 1)), 1.0, (0.1, 0, 0),
             tuple(map(tuple, _random_inertia(rng, 1.0)))),
        Body(
            "b", "a", Joint("jb", "fixed", origin=Origin((0.3, 0.1, 0), (0.4, -0.7, 1.1))), 0.5, (0, 0.2, 0),
            tuple(map(tuple, _random_inertia(rng, 0.5))), frames={"tip": Origin((0.1, 0, 0.05), (0, 0.3, 0))},
            wheels=(Wheel("rw", (0, 0, 1), 0.01, (0.02, 0, 0)),),
        ),
        Body("c", "b", Joint("jc", "fixed", origin=Origin((0, 0, 0.2), (1.0, 0, 0))), 0.2, (0, 0, 0.1),
             tuple(map(tuple, _random_inertia(rng, 0.2)))),
        Body("d", "c", Joint("jd", "revolute", (1, 0, 0), Origin((0.1, 0, 0), (0, 0, 0.5))), 0.7, (0, 0, 0.3),
             tuple(map(tuple, _random_inertia(rng, 0.7)))),
    )  # fmt: skip
    return ModelSpec("t", bodies, forces=(Thruster("th", "c", (0.1, 0.2, 0.3), (0.0, 0.0, 1.0)),))


def _pose(model, q, name):
    """(R, p) of a named frame, else of a body's frame."""
    if name in model.frames:
        return model.frame_pose(q, name)
    i, kin = model.body_index[name], model.forward_kinematics(q)
    return kin.R[i], kin.point_position(i, np.zeros(3))


def test_lumped_model_has_the_same_dynamics_frames_wheels_and_forces():
    rng = np.random.default_rng(11)
    spec = _spec(rng)
    lumped = lump_fixed(spec)
    assert [b.name for b in lumped.spec.bodies] == ["a", "d"] and lumped.merged == {"a": ("b", "c")}
    full, lump = Model(spec), Model(lumped.spec)
    assert {"b", "c", "tip"} <= set(lump.frames) and lump.nv == full.nv
    from mbsfmu.sim.simulator import Simulator

    sims = [Simulator(m, "rk4", h_max=1e-3, backend="python") for m in (full, lump)]
    for _ in range(3):
        q, qd = full.random_state(rng)
        np.testing.assert_allclose(lump.mass_matrix(q), full.mass_matrix(q), rtol=0, atol=1e-13)
        for f in ("b", "c", "tip", "d"):
            for x, y in zip(_pose(lump, q, f), _pose(full, q, f), strict=True):
                np.testing.assert_allclose(x, y, rtol=0, atol=1e-14)
        xdot = []
        for sim in sims:
            sim.set_configuration(q, qd)
            sim.set_input("th.thrust", 2.0)
            sim.set_input("rw.torque", 0.3)
            xdot.append(sim.rhs(sim.x))
        np.testing.assert_allclose(xdot[1], xdot[0], rtol=0, atol=1e-12)


def test_a_body_welded_to_the_world_is_not_checked_as_a_moving_body():
    bad = ((1.0, 0, 0), (0, 1.0, 0), (0, 0, 5.0))  # breaks I1 + I2 >= I3
    base = Body("base", "world", Joint("root", "fixed"), 1.0, inertia=bad)
    arm = Body("arm", "base", Joint("j", "revolute"), 1.0, (0.1, 0, 0), ((0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)))
    Model(ModelSpec("ok", (base, arm)))  # the base never moves
    with pytest.raises(ModelError, match=r"triangle inequality.*repair_inertia\(spec\)"):
        Model(ModelSpec("bad", (base, Body("arm", "base", Joint("j", "revolute"), 1.0, inertia=bad))))
