"""The C core's mass matrix (crba.c, composite inertias in compact form m, h, Ibar) is exactly
symmetric and within a few N eps of the numpy reference CRBA (mbsfmu/engine/dynamics/crba.py).

Tolerance: each entry M_ij = S_i^T X^T ... X^T Ic_j S_j is carried through at most N transforms,
each a fixed number of roundings of terms no larger than the composite inertias, so both
implementations are off the exact M by O(N eps) times its scale, max(1, max|M|) [kg m^2, kg m, kg]
(the floor: entries that cancel to ~0 carry the round-off of the large terms they came from).
Measured on these models and trees: at most 0.56 N eps max(1, max|M|) (the 6 x 6 composite
inertias before: 0.42); the bound is 4 N eps, a 7x margin. The same bound holds at quaternions of
norm 1.0001 and 0.9 (RK4's stages): the compact transform assumes E orthonormal, which a joint
rotation is since spatial.quat_to_R / spatial.h take the rotation of q / |q|; with the rotation of the
quaternion as it was, the RSSR's M was 2.6e-6 off the reference's at |q| = 1.0001.
"""

from __future__ import annotations

import numpy as np
import pytest

import mbsfmu
from mbsfmu.engine.dynamics.crba import crba
from mbsfmu.engine.native.core import Core
from mbsfmu.engine.native.tables import Tables
from tests.support.paths import MODELS
from tests.support.trees import random_tree

EPS = np.finfo(float).eps
BUNDLED = sorted(p.name for p in MODELS.iterdir() if p.suffix in (".yaml", ".urdf") and "overlay" not in p.name)


def trees(rng):
    """Random trees: free base with every joint type, fixed base, spherical and prismatic alone."""
    yield random_tree(rng, 12)
    yield random_tree(rng, 10, free_base=False)
    yield random_tree(rng, 6, types=("spherical",))
    yield random_tree(rng, 6, free_base=False, types=("prismatic", "fixed"))


def models(rng):
    yield from (mbsfmu.load_model(MODELS / name) for name in BUNDLED)
    yield from trees(rng)


def test_mass_matrix_is_exactly_symmetric():
    """M == M^T bit for bit, the diagonal blocks of spherical and free joints included (their
    S^T Ic S reads Ibar's mirrored upper triangle and h's exact skew matrix)."""
    rng = np.random.default_rng(21)
    for model in models(rng):
        core = Core(model, Tables(model, tree_only=True))
        for _ in range(3):
            q, _ = model.random_state(rng)
            M = core.crba(q)
            np.testing.assert_array_equal(M, M.T)


@pytest.mark.parametrize("seed", [22, 23])
def test_mass_matrix_within_n_eps_of_the_reference(seed):
    rng = np.random.default_rng(seed)
    for model in models(rng):
        core = Core(model, Tables(model, tree_only=True))
        for _ in range(3):
            q, _ = model.random_state(rng)
            M_ref = crba(model.tree, q)
            scale = max(1.0, float(np.abs(M_ref).max()))
            err = float(np.abs(core.crba(q) - M_ref).max())
            assert err <= 4 * model.N * EPS * scale, (model.spec.name, err / (model.N * EPS * scale))


@pytest.mark.parametrize("c", [1.0001, 0.9])
def test_mass_matrix_at_quaternions_of_any_norm_within_n_eps_of_the_reference(c):
    """The same bound with every quaternion scaled by c (RK4's stages): both take E of q / |q|."""
    rng = np.random.default_rng(24)
    for model in models(rng):
        if model.nq == model.nv:
            continue
        core = Core(model, Tables(model, tree_only=True))
        t = model.tree
        quats = [int(t.iq[i] + t.nq[i]) - 4 for i in range(1, model.N + 1) if t.nq[i] > t.nv[i]]
        for _ in range(3):
            q, _ = model.random_state(rng)
            for s in quats:
                q[s : s + 4] *= c
            M_ref = crba(model.tree, q)
            scale = max(1.0, float(np.abs(M_ref).max()))
            err = float(np.abs(core.crba(q) - M_ref).max())
            assert err <= 4 * model.N * EPS * scale, (model.spec.name, err / (model.N * EPS * scale))
