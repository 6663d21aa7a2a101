"""The dynamics Jacobians d(qdd)/d(dq), d(qdd)/d(qd), d(qdd)/du: the one place they are computed.

Two ways, one result type (``DynamicsJacobians``, which state space, equilibrium and files take):

- analytic: Carpentier & Mansard's derivatives of ABA ("Analytical Derivatives of Rigid Body
  Dynamics Algorithms", RSS 2018, their route for ABA: dqdd/dq = -M^-1 dtau/dq at qdd = ABA, dqdd/dtau =
  M^-1) in the C core (mbsfmu/engine/native/derivatives.c, ``Model.aba_derivatives``), plus
  M^-1 dQ/dq, M^-1 dQ/dqd for the generalized force Q(q, qd, u) of the point spring-dampers,
  thrusters and body wrenches (mbsfmu/engine/native/force_derivatives.c), and dqdd/du =
  M^-1 (B + dQ/du) for the inputs' map B onto the joints (actuators, wheel motors); for closed
  loops and joint couplings, in the partitioned coordinates, ``Model.partitioned_derivatives``
  (mbsfmu/engine/dynamics/loop_derivatives.py: the reduced equations differentiated along the
  loops' manifold on the C core's RNEA derivatives, the force elements' Q added to tau with its
  derivatives), dqdd/du = G (B + dQ/du) with G = dqdd/dtau. Used on the C core (every force
  element, trees and closed loops).
- central differences of the Simulator's forward dynamics (everything it integrates; on the C
  core when it loads, else the numpy reference), below: the fallback without the C core, and the
  tests' oracle for the analytic path.

Central difference of column j (e.g. Nocedal & Wright, *Numerical Optimization*, 2nd ed.,
Sec. 8.1, Eq. 8.7): f'(x) ~ (f(x + h e_j) - f(x - h e_j)) / (2 h), truncation error
h^2/6 |f'''| plus round-off ~ eps |f| / h. The step h = H_REL * s_j, H_REL = eps^(1/3) ~ 6.1e-6,
with s_j the scale of coordinate j (1 for the tangent coordinates dq [rad or m]; max(1, |x_j|)
for rates and inputs) balances the two at ~eps^(2/3) ~ 4e-11 relative to the size of qdd and its
derivatives when these are O(1) in those scales. Measured (tests/linear/): at most 1.1e-10
(closed forms of the seed-001 systems) and 5e-10 (Pinocchio's computeABADerivatives, random trees
of up to 25 bodies) relative to the largest entry: ABA's round-off grows with the tree. qdd is
affine in u, so the input columns carry round-off only. Position steps are taken on the joints' manifolds
(mbsfmu/linear/tangent.py); each step is rounded so that x + h - x == h exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.dynamics.branches import follow_branch, wind_like
from ..engine.dynamics.closed_loops import consistent_state
from ..engine.dynamics.singular import singular_joints
from ..engine.native.core import usable
from ..engine.spatial import Array
from ..errors import InputError
from ..sim.simulator import Simulator
from .tangent import difference

H_REL = np.finfo(float).eps ** (1.0 / 3.0)  # relative central-difference step (module docstring)
ANALYTIC = "analytic (Carpentier & Mansard 2018, C core)"


class Accelerations:
    """qdd(q, qd, u) (nv,) [rad/s^2 or m/s^2]: the Simulator's forward dynamics with the inputs u
    (``input_names``) held, on backend "auto" (the C core if it loads), "native" or "python".

    ``iu``: the velocity indices of the minimal coordinates: every one for a tree; for closed
    loops the independent coordinates of the engine's partitioning (PyMbs Background,
    ``Model.loop_partition``), the dependent ones solved from them (v = H(u), vdot = B_vu udot) at
    every evaluation, on the python backend (the C core closes loops by multipliers only).
    InputError when a loop declares no independent joints (``check_partitioned``)."""

    def __init__(self, model, backend: str = "auto"):
        self.model = model
        self.part = check_partitioned(model)
        if self.part is None:
            self.sim = Simulator(model, backend=backend)
            self.iu = np.arange(model.nv)
        else:
            self.sim = Simulator(model, loop_method="partitioning", backend="python" if backend == "auto" else backend)
            self.iu = self.part.iu.copy()
        self.input_names = tuple(self.sim.input_names)
        self.nq, self.nv, self.nu = model.nq, model.nv, len(self.input_names)
        self.core = None
        if self.sim.backend == "native":
            from ..engine.native.core import Core

            self.core = Core(model)
        # closed loops: the analytic path differentiates the partitioned equations through the
        # C core's tree derivatives (Model.partitioned_derivatives) while f itself runs in Python
        self.loop_core = self.part is not None and backend != "python" and usable()
        # the force elements' generalized force and its derivatives (Core.force_derivatives)
        self.elements_core = self.core
        if self.loop_core and self.core is None:
            from ..engine.native.core import Core

            self.elements_core = Core(model)

    def __call__(self, q: Array, qd: Array, u: Array) -> Array:
        x = np.concatenate((q, qd, [0.0, 0.0]))
        if self.core is not None:
            return self.core.rhs(x, u)[self.nq : self.nq + self.nv]
        self.sim.u[:] = u
        return self.sim.rhs(x)[self.nq : self.nq + self.nv]

    def close(self, q: Array, qd: Array) -> tuple[Array, Array]:
        """(q, qd) with the dependent coordinates solved from the independent ones by Newton from
        the dependent ones in q (trees: as given); PartitionError (an InputError) naming the
        dependent joints where Phi_v is singular. For a consistent q a no-op."""
        if self.part is None:
            return q, qd
        q, qd, _J = consistent_state(self.model.tree, self.model.loops, self.part, q, qd)
        return q, qd

    def assemble(self, q: Array, qd: Array, start: Array | None) -> tuple[Array, Array]:
        """(q, qd) closed at q's independent coordinates (trees: as given). start (nq,): a
        configuration whose assembly branch to stay on: the dependent coordinates are followed
        from it to q's independent ones (``branches.follow_branch``; BranchEndError where the
        branch ends on the way). start None: Newton from q's dependent coordinates (guesses), the
        revolute angles among them then within pi of their guesses (``branches.wind_like``)."""
        if self.part is None:
            return q, qd
        tree, loops = self.model.tree, self.model.loops
        if start is None:
            q_closed = wind_like(tree, self.part, self.close(q, qd)[0], q)
        else:
            start = self.close(start, np.zeros(self.nv))[0]
            du = difference(self.model, start, q)[self.iu]
            q_closed = follow_branch(tree, loops, self.part, start, du)
        return self.close(q_closed, qd)

    def move(self, q: Array, dq: Array) -> Array:
        """q (+) dq along the minimal coordinates (dq (n_iu,)) from a consistent q, the dependent
        coordinates followed along q's assembly branch (``branches.follow_branch``)."""
        if self.part is None:
            return self.model.integrate(q, dq)
        return follow_branch(self.model.tree, self.model.loops, self.part, q, dq)


@dataclass(frozen=True)
class DynamicsJacobians:
    """qdd (nv,) at (q, qd, u) and its Jacobians with respect to the minimal coordinates
    (``Accelerations.iu``, n of them): dqdd_dq (nv, n) for the tangent coordinates dq of
    q (+) dq (mbsfmu/linear/tangent.py) [1/s^2], dqdd_dqd (nv, n) [1/s], dqdd_du (nv, nu) [per
    unit input]; ``method`` says how they were computed."""

    qdd: Array
    dqdd_dq: Array
    dqdd_dqd: Array
    dqdd_du: Array
    method: str


def check_partitioned(model):
    """The model's Partition (None for a tree); InputError when some loop declares no independent
    joints, so that the minimal coordinates are not known (see docs/guides/linearization.md)."""
    if not model.loops:
        return None
    bare = [c.name for c in model.loops.closures if not c.held]
    if bare:
        raise InputError(
            f"model {model.source}: loop(s) {', '.join(bare)} declare no independent joints: linearization "
            "of closed loops is in the independent coordinates of the partitioning method; declare them "
            "(loops[].independent in the model file)"
        )
    return model.loop_partition()


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


def analytic_obstacle(f: Accelerations) -> str | None:
    """None when the analytic derivatives cover f's equations (module docstring), else the reason."""
    if f.core is None and not f.loop_core:
        return "the C core is not in use (backend 'python')"
    return None


def dynamics_jacobians(
    f: Accelerations, q: Array, qd: Array, u: Array, rates_and_inputs: bool = True, method: str = "auto"
):
    """DynamicsJacobians at a consistent (q, qd) and u; with ``rates_and_inputs`` False only qdd and
    dqdd_dq (the equilibrium search needs no more). method: "auto" (analytic where it applies, else
    central differences), "analytic" (InputError naming the obstacle where it does not apply) or
    "central" (module docstring)."""
    if method not in ("auto", "analytic", "central"):
        raise InputError(f"method {method!r}: expected 'auto', 'analytic' or 'central'")
    if method != "central":
        obstacle = analytic_obstacle(f)
        if obstacle is None:
            return analytic_jacobians(f, q, qd, u)
        if method == "analytic":
            raise InputError(f"model {f.model.source}: no analytic dynamics Jacobians: {obstacle}")
    return central_jacobians(f, q, qd, u, rates_and_inputs)


def analytic_jacobians(f: Accelerations, q: Array, qd: Array, u: Array) -> DynamicsJacobians:
    """DynamicsJacobians by ``Core.aba_derivatives`` and ``Core.force_derivatives`` (C core), for
    closed loops by ``Model.partitioned_derivatives`` at the state closed from its independent part
    (as f evaluates it). With the force elements' generalized force Q (point spring-dampers,
    thrusters, body wrenches) the equations are M qdd + h = B u + passive + Q, so at
    qdd = FD(q, qd, B u + Q) dqdd/dq = -M^-1 d(RNEA - passive)/dq + M^-1 dQ/dq (likewise qd) and
    dqdd/du = M^-1 (B + dQ/du), B (nv, nu) the inputs' map onto the joints (``Forces.joint_forces``);
    for loops dqdd/du = G B, G = dqdd/dtau."""
    forces, nv = f.sim.forces, f.nv
    u = np.asarray(u, dtype=float)
    B = np.zeros((nv, f.nu))
    B[forces.layout.tau_dof, forces.layout.tau_index] = 1.0
    elements = bool(forces.springs or forces.thrusters or forces.wrenches)
    if f.part is not None:
        q, qd = f.close(q, qd)
        dQ_du = np.zeros((nv, f.nu))
        extra = None
        if elements:
            Q, dQ_dq, dQ_dqd, dQ_du = f.elements_core.force_derivatives(q, qd, u)
            extra = (Q, dQ_dq, dQ_dqd)
        qdd, dq, dqd, G = f.model.partitioned_derivatives(q, qd, forces.joint_forces(u), extra)
        return DynamicsJacobians(
            qdd, dq, dqd, G @ (B + dQ_du), "analytic (partitioned loops, Carpentier & Mansard 2018)"
        )
    if not elements:
        qdd, dq, dqd, Minv = f.core.aba_derivatives(q, qd, forces.joint_forces(u))
        return DynamicsJacobians(qdd, dq, dqd, Minv @ B, ANALYTIC)
    Q, dQ_dq, dQ_dqd, dQ_du = f.core.force_derivatives(q, qd, u)
    qdd, dq, dqd, Minv = f.core.aba_derivatives(q, qd, forces.joint_forces(u) + Q)
    return DynamicsJacobians(qdd, dq + Minv @ dQ_dq, dqd + Minv @ dQ_dqd, Minv @ (B + dQ_du), ANALYTIC)


def central_jacobians(f: Accelerations, q: Array, qd: Array, u: Array, rates_and_inputs: bool = True):
    """DynamicsJacobians by central differences (module docstring)."""
    nv, nu, n = f.nv, f.nu, f.iu.size
    qdd = f(q, qd, u)
    dq = np.zeros((nv, n))
    for j in range(n):
        e = np.zeros(n)
        e[j] = H_REL
        dq[:, j] = (f(f.move(q, e), qd, u) - f(f.move(q, -e), qd, u)) / (2.0 * H_REL)
    if not rates_and_inputs:
        return DynamicsJacobians(qdd, dq, np.full((nv, n), np.nan), np.full((nv, nu), np.nan), "partial")
    dqd = np.zeros((nv, n))
    for j, k in enumerate(f.iu):  # the dependent rates follow inside f (vdot = B_vu udot)
        dqd[:, j] = central_column(lambda x: f(q, x, u), qd, int(k))
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
    "analytic_jacobians",
    "analytic_obstacle",
    "central_column",
    "central_jacobians",
    "check_partitioned",
    "check_regular",
    "dynamics_jacobians",
]
