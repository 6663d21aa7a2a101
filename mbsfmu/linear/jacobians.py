"""The dynamics Jacobians d(qdd)/d(dq), d(qdd)/d(qd), d(qdd)/du: the one place they are computed.

Today by central differences of the engine's forward dynamics (the Simulator's equations: joint
actuators, wheel motors, thrusters, body wrenches, springs, dampers, gravity; in the C core when
it loads, else the numpy reference). Analytic derivatives of ABA (Carpentier & Mansard, "Analytical
derivatives of rigid body dynamics algorithms", RSS 2018) can replace ``dynamics_jacobians``
alone: everything else (state space, equilibrium, files) takes its ``DynamicsJacobians``.

Central difference of column j (e.g. Nocedal & Wright, *Numerical Optimization*, 2nd ed.,
Sec. 8.1, Eq. 8.7): f'(x) ~ (f(x + h e_j) - f(x - h e_j)) / (2 h), truncation error
h^2/6 |f'''| plus round-off ~ eps |f| / h. The step h = H_REL * s_j, H_REL = eps^(1/3) ~ 6.1e-6,
with s_j the scale of coordinate j (1 for the tangent coordinates dq [rad or m]; max(1, |x_j|)
for rates and inputs) balances the two at ~eps^(2/3) ~ 4e-11 relative to the size of qdd and its
derivatives when these are O(1) in those scales. Measured (tests/linear/): ~1e-9 absolute against
closed forms and Pinocchio's computeABADerivatives on O(1..10) entries. qdd is affine in u, so
the input columns carry round-off only. Position steps are taken on the joints' manifolds
(mbsfmu/linear/tangent.py); each step is rounded so that x + h - x == h exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.dynamics.singular import singular_joints
from ..engine.spatial import Array
from ..errors import InputError
from ..sim.simulator import Simulator

H_REL = np.finfo(float).eps ** (1.0 / 3.0)  # relative central-difference step (module docstring)


class Accelerations:
    """qdd(q, qd, u) (nv,) [rad/s^2 or m/s^2]: the Simulator's forward dynamics with the inputs u
    (``input_names``) held, on backend "auto" (the C core if it loads), "native" or "python".
    Models with closed loops are refused (InputError): see ``check_open``."""

    def __init__(self, model, backend: str = "auto"):
        check_open(model)
        self.model = model
        self.sim = Simulator(model, backend=backend)
        self.input_names = tuple(self.sim.input_names)
        self.nq, self.nv, self.nu = model.nq, model.nv, len(self.input_names)
        self.core = None
        if self.sim.backend == "native":
            from ..engine.native.core import Core

            self.core = Core(model)

    def __call__(self, q: Array, qd: Array, u: Array) -> Array:
        x = np.concatenate((q, qd, [0.0, 0.0]))
        if self.core is not None:
            return self.core.rhs(x, u)[self.nq : self.nq + self.nv]
        self.sim.u[:] = u
        return self.sim.rhs(x)[self.nq : self.nq + self.nv]


@dataclass(frozen=True)
class DynamicsJacobians:
    """qdd (nv,) at (q, qd, u) and its Jacobians: dqdd_dq (nv, nv) with respect to the tangent
    coordinates dq of q (+) dq (mbsfmu/linear/tangent.py) [1/s^2], dqdd_dqd (nv, nv) [1/s],
    dqdd_du (nv, nu) [per unit input]; ``method`` says how they were computed."""

    qdd: Array
    dqdd_dq: Array
    dqdd_dqd: Array
    dqdd_du: Array
    method: str


def check_open(model) -> None:
    """InputError for a model with closed loops (not linearized: see docs/guides/linearization.md)."""
    if model.loops:
        raise InputError(
            f"model {model.source} has closed loops ({', '.join(model.loop_names)}): linearization "
            "covers tree-structured models only (the loops' independent coordinates are not yet "
            "supported); cut the loop or linearize the open chain"
        )


def check_regular(model, q: Array) -> None:
    """InputError naming the joints where M(q) is singular (mbsfmu/engine/dynamics/singular.py)."""
    found = singular_joints(model.tree, q)
    if found.joints or found.overflow:
        names = ", ".join(repr(model.joint_names[i - 1]) for i in sorted(found.joints))
        raise InputError(
            f"model {model.source}: the mass matrix is singular at this configuration (joints "
            f"{names or 'all: inertias overflow'} move no mass or inertia there), so qdd and its "
            "Jacobians do not exist: choose another operating point"
        )


def dynamics_jacobians(f: Accelerations, q: Array, qd: Array, u: Array, rates_and_inputs: bool = True):
    """DynamicsJacobians at (q, qd, u) by central differences (module docstring); with
    ``rates_and_inputs`` False only qdd and dqdd_dq (the equilibrium search needs no more)."""
    model, nv, nu = f.model, f.nv, f.nu
    qdd = f(q, qd, u)
    dq = np.zeros((nv, nv))
    for j in range(nv):
        e = np.zeros(nv)
        e[j] = H_REL
        dq[:, j] = (f(model.integrate(q, e), qd, u) - f(model.integrate(q, -e), qd, u)) / (2.0 * H_REL)
    if not rates_and_inputs:
        return DynamicsJacobians(qdd, dq, np.full((nv, nv), np.nan), np.full((nv, nu), np.nan), "partial")
    dqd = np.column_stack([central_column(lambda x: f(q, x, u), qd, j) for j in range(nv)]) if nv else np.zeros((0, 0))
    du = np.column_stack([central_column(lambda x: f(q, qd, x), u, j) for j in range(nu)]) if nu else np.zeros((nv, 0))
    return DynamicsJacobians(qdd, dq, dqd, du, f"central differences, h = {H_REL:.2g} x max(1, |x_j|)")


def central_column(g, x: Array, j: int) -> Array:
    """(g(x + h e_j) - g(x - h e_j)) / (2 h), h = H_REL max(1, |x_j|), divided by the step as
    represented (xp[j] - xm[j])."""
    h = H_REL * max(1.0, abs(float(x[j])))
    xp, xm = x.copy(), x.copy()
    xp[j] += h
    xm[j] -= h
    return (g(xp) - g(xm)) / (xp[j] - xm[j])


__all__ = [
    "H_REL",
    "Accelerations",
    "DynamicsJacobians",
    "central_column",
    "check_open",
    "check_regular",
    "dynamics_jacobians",
]
