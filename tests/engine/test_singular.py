"""dynamics/singular.py (O(N) pivots of M) against the dense check it replaced: the joints with
a non-negligible entry in an eigenvector of M(q) with eigenvalue <= 1e-12 trace(M)."""

from __future__ import annotations

import numpy as np
import pytest

from mbsfmu import Body, Joint, ModelSpec, Origin
from mbsfmu.engine.dynamics.crba import crba
from mbsfmu.engine.dynamics.singular import SINGULAR_RTOL, SUPPORT_RTOL, singular_joints
from mbsfmu.engine.spec.topology import build_topology
from mbsfmu.engine.spec.tree import compile_tree
from tests.support.trees import random_inertia


def dense_singular(tree, q) -> tuple[set, set]:
    """The old check: (joints in the null space of M, joints whose block M_ii is singular)."""
    M = crba(tree, q)
    tol = SINGULAR_RTOL * max(np.trace(M), 1e-300)
    ev, V = np.linalg.eigh(M)
    rows = set(np.flatnonzero(np.abs(V[:, ev <= tol]).max(axis=1, initial=0.0) > SUPPORT_RTOL).tolist())
    joints, alone = set(), set()
    for i in range(1, tree.N + 1):
        sl = slice(tree.iv[i], tree.iv[i] + tree.nv[i])
        if rows & set(range(sl.start, sl.stop)):
            joints.add(i)
        if tree.nv[i] and np.linalg.eigvalsh(M[sl, sl])[0] <= tol:
            alone.add(i)
    return joints, alone


def degenerate_tree(rng, n):
    """Random trees where singular M is common: massless bodies, point masses, bodies on the
    parent's joint axis (coaxial revolute pairs), every joint type."""
    bodies = []
    for k in range(n):
        parent = "world" if k == 0 else f"b{rng.integers(k)}"
        jtype = rng.choice(["revolute", "revolute", "prismatic", "spherical", "fixed", "free"]) if k else "revolute"
        kind = rng.choice(["full", "massless", "point"], p=[0.5, 0.35, 0.15])
        axis = (0.0, 0.0, 1.0) if rng.random() < 0.6 else tuple(rng.normal(size=3))
        on_axis = rng.random() < 0.6
        xyz = (0.0, 0.0, float(rng.uniform(-1, 1))) if on_axis else tuple(rng.uniform(-0.5, 0.5, 3))
        bodies.append(
            Body(
                name=f"b{k}",
                parent=parent,
                joint=Joint(name=f"j{k}", type=str(jtype), axis=axis, origin=Origin(xyz=xyz)),
                mass=0.0 if kind == "massless" else float(rng.uniform(0.5, 2)),
                com=(0.0, 0.0, 0.0) if kind != "full" or on_axis else tuple(rng.uniform(-0.3, 0.3, 3)),
                inertia=random_inertia(rng) if kind == "full" else ((0.0,) * 3,) * 3,
            )
        )
    spec = ModelSpec(name="degenerate", bodies=tuple(bodies))
    topo, problems = build_topology(spec.bodies)
    assert not problems
    return compile_tree(spec, topo)


def random_q(tree, rng):
    from mbsfmu.engine import joints

    q = rng.uniform(-1, 1, tree.nq_total)
    for i in range(1, tree.N + 1):
        if tree.jtype[i] in (joints.SPHERICAL, joints.FREE):
            quat = rng.normal(size=4)
            q[tree.iq[i] + tree.nq[i] - 4 : tree.iq[i] + tree.nq[i]] = quat / np.linalg.norm(quat)
    return q


def test_pivots_find_the_joints_the_dense_eigendecomposition_finds(rng):
    """300 random degenerate trees of 2-9 bodies: the same joints, the same 'alone' ones."""
    n_singular = n_combined = 0
    for _ in range(300):
        tree = degenerate_tree(rng, int(rng.integers(2, 10)))
        q = random_q(tree, rng)
        joints, alone = dense_singular(tree, q)
        got = singular_joints(tree, q)
        assert set(got.joints) == joints
        assert set(got.alone) == alone & joints
        n_singular += bool(joints)
        n_combined += bool(joints - alone)
    assert n_singular > 100 and n_combined > 10  # the sample exercises both kinds


def test_coaxial_pair_with_massless_link_between():
    """outer and inner revolute about the same axis, massless link between: neither alone is
    singular, together they are; a third joint below the massive body is not involved."""
    I = ((1.0, 0, 0), (0, 1.0, 0), (0, 0, 1.0))
    zero = ((0.0,) * 3,) * 3
    bodies = (
        Body("link", "world", Joint("outer", "revolute", (0, 0, 1)), mass=0.0, inertia=zero),
        Body("disc", "link", Joint("inner", "revolute", (0, 0, 1), Origin(xyz=(0, 0, 0.2))), mass=1.0, inertia=I),
        Body(
            "arm",
            "disc",
            Joint("wrist", "revolute", (1, 0, 0), Origin(xyz=(0.3, 0, 0))),
            mass=1.0,
            inertia=I,
            com=(0.1, 0, 0),
        ),
    )
    tree = compile_tree(ModelSpec("coax", bodies), build_topology(bodies)[0])
    got = singular_joints(tree, np.array([0.3, -0.7, 1.1]))
    assert set(got.joints) == {1, 2} and not got.alone
    assert got.combined == {1: frozenset({2}), 2: frozenset({1})}


@pytest.mark.parametrize("n", [200])
def test_large_chain_matches_dense(rng, n):
    """A 200-body chain with massless stretches: the walk and the dense check agree."""
    bodies = [
        Body(
            f"b{k}",
            "world" if k == 0 else f"b{k - 1}",
            Joint(f"j{k}", "revolute", (0.0, 0.0, 1.0) if k % 3 else (1.0, 0.0, 0.0), Origin(xyz=(0.1, 0, 0))),
            mass=0.0 if k % 5 in (1, 2) else 1.0,
            inertia=((0.0,) * 3,) * 3 if k % 5 in (1, 2) else random_inertia(rng),
        )
        for k in range(n)
    ]
    tree = compile_tree(ModelSpec("chain", tuple(bodies)), build_topology(bodies)[0])
    q = rng.uniform(-1, 1, n)
    joints, alone = dense_singular(tree, q)
    got = singular_joints(tree, q)
    assert set(got.joints) == joints and set(got.alone) == alone & joints


def test_model_build_forms_no_dense_mass_matrix_nor_path_matrix(monkeypatch):
    """Building a model (500-body chain) must not call the dense CRBA nor build the (N, N) path
    matrix: the validation is O(N) (a 10,000-body model once did not load)."""
    import mbsfmu.engine.model as multibody
    from mbsfmu import Model

    def dense(*_a, **_k):
        raise AssertionError("the model build formed the dense mass matrix")

    monkeypatch.setattr(multibody, "crba", dense)
    I = ((0.01, 0, 0), (0, 0.01, 0), (0, 0, 0.01))
    bodies = tuple(
        Body(
            f"b{k}",
            "world" if k == 0 else f"b{k - 1}",
            Joint(f"j{k}", "revolute", (0.0, float(k % 2), float(1 - k % 2)), Origin(xyz=(0.1, 0, 0))),
            mass=1.0,
            com=(0.05, 0, 0),
            inertia=I,
        )
        for k in range(500)
    )
    model = Model(ModelSpec("chain500", bodies))
    assert "pi" not in vars(model.topology)  # the path matrix is built only on demand
    assert model.supports("b3") == ["b0", "b1", "b2", "b3"] and len(model.subtree("b490")) == 10
