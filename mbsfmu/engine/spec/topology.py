"""Tree topology of No's method: reference body operator L(j), path matrix pi, supports, subtrees.

Bodies are numbered 1..N in depth-first preorder (every parent before its children, each subtree
a contiguous range, as Pinocchio and RBDA's regular numbering expect), with 0 the inertial frame
("world"); No allows any numbering, the loader picks this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from ...errors import Problem, did_you_mean
from .description import WORLD, Body


@dataclass(frozen=True)
class Topology:
    """L: (N+1,) parent index, L[0] = -1, L[j] = 0 for bodies on the world (No's method, Eq. 3);
    order: file index of each tree body 1..N. ``pi``, the (N, N) path matrix, is built on first
    use (O(N^2) memory); supports and subtrees come from L and the preorder numbering in O(depth)
    and O(subtree size), so building a 10,000-body model does no O(N^2) work."""

    L: NDArray[np.int64]
    order: tuple[int, ...]

    @cached_property
    def pi(self) -> NDArray[np.int8]:
        """(N, N) path matrix, pi[i-1, j-1] = 1 when body j lies on the path from the world to
        body i, i itself included (No's method)."""
        n = len(self.L) - 1
        pi = np.zeros((n, n), dtype=np.int8)
        for i in range(1, n + 1):
            pi[i - 1, np.asarray(self.supports(i)) - 1] = 1
        return pi

    @cached_property
    def last(self) -> NDArray[np.int64]:
        """(N+1,) last[j]: the highest body number in j's subtree (preorder: the subtree of j is
        the contiguous range j..last[j])."""
        last = np.arange(len(self.L))
        for i in range(len(self.L) - 1, 0, -1):
            last[self.L[i]] = max(last[self.L[i]], last[i])
        return last

    def supports(self, i: int) -> list[int]:
        """Bodies from the world to body i, i included, root first."""
        out = []
        while i > 0:
            out.append(int(i))
            i = self.L[i]
        return out[::-1]

    def subtree(self, j: int) -> list[int]:
        """Bodies whose path from the world passes through body j, j included."""
        return list(range(j, int(self.last[j]) + 1))

    def children(self, j: int) -> list[int]:
        return [int(i) for i in np.flatnonzero(self.L == j)]


def build_topology(bodies: tuple[Body, ...]) -> tuple[Topology | None, list[Problem]]:
    """Number bodies in depth-first preorder (siblings keep file order) and build L and pi.

    Reports unknown parents and each body on a cycle of parents (bodies that only hang from a
    cycle or from an unknown parent are not reported again); returns no topology when there is
    any problem."""
    problems: list[Problem] = []
    index = {}
    for k, b in enumerate(bodies):
        index.setdefault(b.name, k)
    kids: dict[str, list[int]] = {}
    for k, b in enumerate(bodies):
        if b.parent != WORLD and b.parent not in index:
            problems.append(
                Problem(
                    ("bodies", k, "parent"),
                    f"unknown parent {b.parent!r} of body {b.name!r}" + did_you_mean(b.parent, [WORLD, *index]),
                )
            )
        kids.setdefault(b.parent, []).append(k)
    order: list[int] = []  # depth-first preorder: every subtree is a contiguous range of numbers
    stack = [WORLD]
    seen = set()
    while stack:
        name = stack.pop()
        fresh = [k for k in kids.get(name, []) if k not in seen and index.get(bodies[k].name) == k]
        for k in fresh:
            seen.add(k)
        if name != WORLD:
            order.append(index[name])
        stack.extend(bodies[k].name for k in reversed(fresh))
    for k, b in enumerate(bodies):
        if k not in seen and index.get(b.name) == k and (cycle := _cycle(bodies, index, k)):
            problems.append(
                Problem(
                    ("bodies", k, "parent"),
                    f"body {b.name!r} is on a cycle of parents ({' -> '.join(cycle)}), so it never reaches 'world'",
                )
            )
    if problems:
        return None, problems
    number = {bodies[k].name: i + 1 for i, k in enumerate(order)}
    n = len(order)
    L = np.full(n + 1, -1, dtype=np.int64)
    for i, k in enumerate(order):
        p = bodies[k].parent
        L[i + 1] = 0 if p == WORLD else number[p]
    return Topology(L=L, order=tuple(order)), problems


def _cycle(bodies: tuple[Body, ...], index: dict, k: int) -> list[str]:
    """Names from body k up its parents and back to k when k is on a cycle, else []."""
    chain = [k]
    while (j := index.get(bodies[chain[-1]].parent)) is not None and j not in chain:
        chain.append(j)
    return [bodies[j].name for j in chain + [k]] if j == k else []
