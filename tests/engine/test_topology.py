"""No's method topology: reference body operator L(j), path matrix pi, supports and subtrees."""

import numpy as np

from mbsfmu import Body, Joint, Model, ModelSpec


def seed003_fig2(order):
    """The 7-body tree of No's method Fig. 2/3: L(2) = L(3) = 1, L(4) = L(5) = 2, L(6) = L(7) = 3."""
    parents = {1: "world", 2: "b1", 3: "b1", 4: "b2", 5: "b2", 6: "b3", 7: "b3"}
    bodies = [
        Body(
            name=f"b{j}",
            parent=parents[j],
            joint=Joint(f"j{j}", "revolute" if j > 1 else "free"),
            mass=1.0,
            inertia=((0.1, 0, 0), (0, 0.1, 0), (0, 0, 0.1)),
        )
        for j in order
    ]
    return Model(ModelSpec(name="fig2", bodies=tuple(bodies)))


def test_seed003_example_in_any_file_order(rng):
    for order in ([1, 2, 3, 4, 5, 6, 7], list(rng.permutation(7) + 1), [7, 6, 5, 4, 3, 2, 1]):
        m = seed003_fig2(order)
        L = {m.body_names[j - 1]: ("world" if m.L[j] == 0 else m.body_names[m.L[j] - 1]) for j in range(1, 8)}
        assert L == {"b1": "world", "b2": "b1", "b3": "b1", "b4": "b2", "b5": "b2", "b6": "b3", "b7": "b3"}
        # pi[i, j] = 1 iff body j lies between the base and body i (No's method, definition of pi)
        for i, bi in enumerate(m.body_names):
            path = {bj for j, bj in enumerate(m.body_names) if m.pi[i, j]}
            assert path == set(m.supports(bi))
        assert m.supports("b6") == ["b1", "b3", "b6"]
        assert sorted(m.subtree("b2")) == ["b2", "b4", "b5"]
        assert sorted(m.subtree("b1")) == [f"b{j}" for j in range(1, 8)]
        # depth-first numbering: each subtree is a contiguous range, parents first
        for j in range(1, 8):
            sub = np.flatnonzero(m.pi[:, j - 1]) + 1
            assert list(sub) == list(range(j, j + len(sub)))
            assert m.L[j] < j


def test_pi_is_reachability_of_L(rng):
    """pi = (I - A)^-1 restricted to 0/1, with A the adjacency of L (pi sums the paths)."""
    m = seed003_fig2(list(rng.permutation(7) + 1))
    A = np.zeros((7, 7))
    for j in range(1, 8):
        if m.L[j] > 0:
            A[j - 1, m.L[j] - 1] = 1
    np.testing.assert_array_equal(np.linalg.inv(np.eye(7) - A).round().astype(int), m.pi)
