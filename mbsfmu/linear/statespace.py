"""The linear model d(dx)/dt = A dx + B du, dy = C dx + D du about an operating point (q0, qd0, u0).

States dx = [dq; dqd] (2 n,): dq the tangent coordinates of q = q0 (+) dq (mbsfmu/linear/tangent.py),
dqd the rates' deviation, over the n minimal coordinates (``Accelerations.iu``: all nv for a tree,
the independent ones of the partitioning method for closed loops; E, I and the Jacobians below
restricted to them). With the dynamics Jacobians of mbsfmu/linear/jacobians.py and the
kinematics dq/dt = qd + E(qd0) dq + O(|dx|^2) (``tangent.rate_jacobian``):

    A = [[E, I], [dqdd/ddq, dqdd/dqd]],   B = [[0], [dqdd/du]]

(the first-order Taylor expansion of x' = f(x, u); at an equilibrium E = 0 and qdd0 = 0). At a
point that is no equilibrium qdd0 != 0 is kept with the model: the deviation's exact equation then
has the drift f(x0, u0), which A and B do not carry.

Outputs y (``OUTPUTS``, the trajectory's column names): the states, ``qdd.<joint>`` (rows of the
dynamics Jacobians), and the engine's invariants ``engine.KE``, ``engine.PE``, ``engine.E`` [J],
``engine.p_sys[k]``, ``engine.P_sys[k]`` [N s], ``engine.H_sys[k]`` [N m s], ``engine.R[k]`` [m],
``engine.Rdot[k]`` [m/s] (world axes); the invariants' rows by central differences
(``jacobians.central_column``), D = 0 for them (they do not depend on u).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engine.dynamics.branches import BranchEndError
from ..engine.inputs import real_array
from ..engine.spatial import Array
from ..errors import InputError
from ..sim.rows import INVARIANT_VECTORS
from .equilibrium import find_equilibrium
from .jacobians import (
    Accelerations,
    DynamicsJacobians,
    central_column,
    check_partitioned,
    check_regular,
    dynamics_jacobians,
)
from .tangent import rate_jacobian, tangent_names

INVARIANT_SCALARS = ("KE", "PE", "E")


@dataclass(frozen=True)
class LinearModel:
    """A, B, C, D about the operating point, with names.

    A (nx, nx), B (nx, nu), C (ny, nx), D (ny, nu) with nx = 2 n (n minimal coordinates); state_names (nx,),
    input_names (nu,) (the columns of B: the Simulator's input names), output_names (ny,).
    Operating point: q0 (nq,) named by q_names (quaternions w, x, y, z), qd0 (nv,), u0 (all the
    model's inputs, named by u_names) [SI], y0 (ny,) the outputs there, qdd0 (nv,) the
    accelerations there (0 at an equilibrium). ``equilibrium``: q0 was solved for qdd = 0."""

    model: str
    A: Array
    B: Array
    C: Array
    D: Array
    state_names: tuple[str, ...]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    q0: Array
    qd0: Array
    u0: Array
    y0: Array
    qdd0: Array
    q_names: tuple[str, ...]
    u_names: tuple[str, ...]
    equilibrium: bool
    method: str

    def eigenvalues(self) -> Array:
        """Eigenvalues of A [1/s] (complex)."""
        return np.linalg.eigvals(self.A)


def state_names(model) -> tuple[list[str], list[str]]:
    """(names of dq, names of dqd) of the minimal coordinates: every joint coordinate of a tree,
    the independent ones of closed loops (``jacobians.check_partitioned``)."""
    pos, vel = tangent_names(model)
    part = check_partitioned(model)
    if part is None:
        return pos, vel
    return [pos[k] for k in part.iu], [vel[k] for k in part.iu]


def output_names(model) -> list[str]:
    """Every output name ``linearize`` accepts for this model (module docstring)."""
    pos, vel = state_names(model)
    acc = ["qdd." + n[len("qd.") :] for n in tangent_names(model)[1]]
    inv = [f"engine.{k}" for k in INVARIANT_SCALARS]
    inv += [f"engine.{k}[{c + 1}]" for k in INVARIANT_VECTORS for c in range(3)]
    return pos + vel + acc + inv


def linearize(
    model,
    q0=None,
    qd0=None,
    u0=None,
    *,
    outputs=None,
    inputs=None,
    equilibrium: bool = False,
    backend: str = "auto",
    assembly: str = "branch",
) -> LinearModel:
    """The LinearModel of ``model`` about (q0, qd0, u0) (module docstring).

    q0 (nq,), qd0 (nv,): default the model's initial state (qd0 zero with ``equilibrium``).
    u0: (nu,) array or {input name: value}, default zeros. outputs: names (``output_names``),
    default the states. inputs: the inputs forming B's columns, default all. equilibrium: first
    solve qdd(q, 0, u0) = 0 by Newton from q0 (``equilibrium.find_equilibrium``). backend: as the
    Simulator's. assembly (closed loops): "branch" closes the loops at q0's independent coordinates
    on the assembly branch of the model's initial state, followed from it by continuation (q0's
    dependent coordinates are not used; ``Accelerations.assemble``); "guess" by Newton from q0's
    dependent coordinates, which then choose the branch. InputError for a loop without declared
    independent joints, a singular M(q0) or loop Jacobian (the joints named), unknown names, bad
    sizes; EquilibriumError (an InputError) when Newton does not reach qdd = 0; BranchEndError (an
    InputError) where the branch of the initial state ends (a turning point) before q0's
    independent coordinates."""
    if assembly not in ("branch", "guess"):
        raise InputError(f"assembly {assembly!r}: expected 'branch' or 'guess'")
    f = Accelerations(model, backend)
    q_init, qd_init = model.initial_state()
    q0 = q_init if q0 is None else model.checked_vector("q", q0, model.nq)
    qd0 = (np.zeros(model.nv) if equilibrium else qd_init) if qd0 is None else model.checked_vector("qd", qd0, model.nv)
    if equilibrium and np.any(qd0 != 0):
        raise InputError("an equilibrium has qd = 0: give no rates (or zero rates) with equilibrium=True")
    u_all = _input_vector(f.input_names, u0)
    try:
        q0, qd0 = f.assemble(_unit_quaternions(model, q0), qd0, q_init if assembly == "branch" else None)
    except BranchEndError as e:
        raise BranchEndError(
            f"model {model.source}, the initial state's assembly branch: {e}", e.q, e.fraction
        ) from None
    if equilibrium:
        q0 = find_equilibrium(f, q0, u_all)
    check_regular(model, q0)
    cols = _select(inputs, f.input_names, "input")
    J = dynamics_jacobians(f, q0, qd0, u_all)
    iu, n = f.iu, f.iu.size
    A = np.block([[rate_jacobian(model, qd0)[np.ix_(iu, iu)], np.eye(n)], [J.dqdd_dq[iu], J.dqdd_dqd[iu]]])
    B = np.vstack([np.zeros((n, len(cols))), J.dqdd_du[np.ix_(iu, cols)]])
    pos, vel = state_names(model)
    names = output_names(model)
    rows = list(range(2 * n)) if outputs is None else _select(outputs, names, "output")
    C, D, y0 = _outputs(f, J, q0, qd0, [names[r] for r in rows], pos + vel, cols)
    return LinearModel(
        model=model.name,
        A=A,
        B=B,
        C=C,
        D=D,
        state_names=tuple(pos + vel),
        input_names=tuple(f.input_names[c] for c in cols),
        output_names=tuple(names[r] for r in rows),
        q0=q0,
        qd0=qd0,
        u0=u_all,
        y0=y0,
        qdd0=J.qdd,
        q_names=tuple(f.sim.state_names[: model.nq]),
        u_names=f.input_names,
        equilibrium=equilibrium,
        method=J.method,
    )


def _outputs(f: Accelerations, J: DynamicsJacobians, q0, qd0, names, states, cols):
    """(C, D, y0) for the named outputs."""
    model, iu = f.model, f.iu
    n = iu.size
    nx = 2 * n
    C, D, y0 = np.zeros((len(names), nx)), np.zeros((len(names), len(cols))), np.zeros(len(names))
    x0 = np.concatenate((np.zeros(n), qd0[iu]))
    for k, s in enumerate(states[:n]):  # 1-DoF joints report their coordinate itself
        if s.startswith("q."):
            x0[k] = q0[model.q_slice(s[2:])][0]
    rates = tangent_names(model)[1]
    invariants = {}
    for r, name in enumerate(names):
        if name in states:
            j = states.index(name)
            C[r, j], y0[r] = 1.0, x0[j]
        elif name.startswith("qdd."):
            j = rates.index("qd." + name[len("qdd.") :])
            C[r] = np.concatenate((J.dqdd_dq[j], J.dqdd_dqd[j]))
            D[r] = J.dqdd_du[j, cols]
            y0[r] = J.qdd[j]
        else:
            invariants[r] = name[len("engine.") :]
    if invariants:
        rows = list(invariants)

        def y(dx):
            qd = qd0.copy()
            qd[iu] += dx[n:]
            inv = _invariants(f, *f.close(f.move(q0, dx[:n]), qd))
            return np.array([inv[invariants[r]] for r in rows])

        dx0 = np.zeros(nx)
        y0[rows] = y(dx0)
        for j in range(nx):
            C[rows, j] = central_column(y, dx0, j)
    return C, D, y0


def _invariants(f: Accelerations, q: Array, qd: Array) -> dict[str, float]:
    """The engine's invariants at (q, qd) by the Simulator's own formulas, keyed as the outputs."""
    f.sim.x = np.concatenate((q, qd, [0.0, 0.0]))
    inv = f.sim.invariants()
    out = {"KE": inv.KE, "PE": inv.PE, "E": inv.E}
    out |= {f"{k}[{c + 1}]": float(getattr(inv, k)[c]) for k in INVARIANT_VECTORS for c in range(3)}
    return out


def _input_vector(names: tuple[str, ...], u0) -> Array:
    if u0 is None:
        return np.zeros(len(names))
    if isinstance(u0, dict):
        u = np.zeros(len(names))
        for name, value in u0.items():
            (k,) = _select([name], names, "input")
            try:
                u[k] = float(value)
            except (TypeError, ValueError):
                raise InputError(f"input {name!r} must be a number, got {value!r}") from None
        if not np.all(np.isfinite(u)):
            raise InputError("inputs must be finite")
        return u
    try:
        u = real_array("u0", u0)
    except (TypeError, ValueError) as e:
        if isinstance(e, InputError):
            raise
        raise InputError(f"u0 must be a vector of {len(names)} numbers ({e})") from None
    if u.shape != (len(names),):
        raise InputError(f"u0 has shape {u.shape}; the model has {len(names)} inputs: {', '.join(names) or 'none'}")
    if not np.all(np.isfinite(u)):
        raise InputError(f"u0 has non-finite entries at indices {np.flatnonzero(~np.isfinite(u)).tolist()}")
    return u


def _select(wanted, names, what: str) -> list[int]:
    """Indices of ``wanted`` in ``names``; InputError naming the unknown ones and the choices."""
    if wanted is None:
        return list(range(len(names)))
    if isinstance(wanted, str):
        wanted = [wanted]
    unknown = [w for w in wanted if w not in names]
    if unknown:
        raise InputError(
            f"unknown {what}{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
            f"the model has {what}s: {', '.join(names) or 'none'}"
        )
    return [names.index(w) for w in wanted]


def _unit_quaternions(model, q: Array) -> Array:
    """q with its quaternions checked to be unit (InputError naming the joint otherwise)."""
    for i in range(1, model.N + 1):
        nq, s = int(model.tree.nq[i]), int(model.tree.iq[i])
        if nq in (4, 7):
            quat = q[s + nq - 4 : s + nq]
            if abs(np.linalg.norm(quat) - 1.0) > 1e-9:
                raise InputError(
                    f"joint {model.joint_names[i - 1]!r}: quaternion q[{s + nq - 4}:{s + nq}] has norm "
                    f"{np.linalg.norm(quat):.12g}, must be 1"
                )
    return q


__all__ = ["LinearModel", "linearize", "output_names", "state_names"]
