"""Central differences for the tests' derivative oracles."""

from __future__ import annotations

import numpy as np

from mbsfmu.linear.jacobians import H_REL


def central(g, x, n, step):
    """dg/dx as n columns by central differences, x stepped by ``step(x, +-h e_j)`` (``np.add``, or
    ``Model.integrate`` for q on the joints' manifolds), h = H_REL (eps^(1/3))."""
    cols = []
    for j in range(n):
        e = np.zeros(n)
        e[j] = H_REL
        cols.append((g(step(x, e)) - g(step(x, -e))) / (2.0 * H_REL))
    return np.column_stack(cols) if cols else np.zeros((len(g(x)), 0))
