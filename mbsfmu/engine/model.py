"""The public Model: a validated description, its topology and compiled tree, and the dynamics.

Vectors: q (nq,) joint coordinates (quaternions scalar first), qd (nv,) joint rates,
tau (nv,) joint forces [N m or N]. Body order is ``body_names`` (topological, parents first).
External wrenches ``f_ext`` are (N, 6) [torque N m; force N] in body axes about each body's
frame origin, or a dict {body name: (6,)}.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

import numpy as np

from ..errors import InputError, ModelError, Problem
from . import joints
from .dynamics.aba import aba
from .dynamics.closed_loops import (
    AssemblyError,
    LoopData,
    LoopSet,
    Partition,
    check_consistent,
    compile_loops,
    loop_forward_dynamics,
    loop_inverse_dynamics,
    make_partition,
    reduction,
)
from .dynamics.closed_loops import assemble as loop_assemble
from .dynamics.closed_loops import constraints as loop_constraints
from .dynamics.crba import crba
from .dynamics.loop_derivatives import partitioned_derivatives as loop_partitioned_derivatives
from .dynamics.rnea import rnea
from .dynamics.singular import singular_joints
from .inputs import real_array
from .kinematics import Kinematics, forward_kinematics, point_jacobian
from .native.core import NO_CALLS, bound_methods, model_core, usable
from .spatial import Array
from .spec.description import Body, Joint, ModelSpec, Origin
from .spec.repair import advice as repair_advice
from .spec.topology import Topology, build_topology
from .spec.tree import Tree, compile_tree
from .spec.validation import check_spec, locate


class Model:
    """A multibody tree built from a ModelSpec; raises ModelError listing every problem.

    The dynamics calls (forward/inverse dynamics, mass matrix, derivatives, frame kinematics) run
    in the C core through its CPython binding when their arrays are float64 of the model's sizes
    (native.core.Core.calls: one C call, no conversion); anything else takes the checked path,
    which converts or raises InputError naming the argument. After the first such call their
    default case runs in C with no Python frame (binding.c's Method in the instance dict, in front
    of the method here: _bind_calls); help() and inspect.signature show the methods here."""

    _calls = None  # this model's Core.calls(), bound at the first dynamics call (_bind_calls)
    # the methods whose default case binding.c's Method runs (native.core.bound_methods, _bind_calls)
    _C_METHODS = (
        "forward_dynamics",
        "inverse_dynamics",
        "mass_matrix",
        "frame_pose",
        "frame_velocity",
        "frame_acceleration",
    )
    _C_TREE_METHODS = ("aba_derivatives", "rnea_derivatives")  # the trees' only (closed loops: InputError)

    def __init__(
        self, spec: ModelSpec, source: str = "<python>", lines: dict | None = None, repair_hint: str | None = None
    ):
        """source: the file the spec was read from (named in errors); lines: its path -> line map;
        repair_hint: what a non-physical inertia's message advises (default: for ``source``'s kind,
        spec/repair.py ``advice``)."""
        self.spec = spec
        self.source = source
        bodies, wheel_paths = _with_wheel_rotors(spec)
        problems = check_spec(spec, repair_advice(source) if repair_hint is None else repair_hint)
        topo, topo_problems = build_topology(bodies)
        problems += [_map_path(p, wheel_paths) for p in topo_problems]
        if problems:
            raise ModelError(locate(problems, lines), source)
        self.topology: Topology = topo
        self.tree: Tree = compile_tree(replace(spec, bodies=bodies), topo)
        self.bodies = tuple(bodies[k] for k in topo.order)  # tree order; wheel rotors included
        number = {k: i + 1 for i, k in enumerate(topo.order)}  # file index -> tree number
        self.wheels = MappingProxyType(
            {w.name: (number[k], w) for k, w in ((k, wheel_paths[k][1]) for k in wheel_paths)}
        )
        self.rigid_bodies = tuple(i for i in range(1, len(self.bodies) + 1) if topo.order[i - 1] not in wheel_paths)
        self.body_names = tuple(b.name for b in self.bodies)
        self.joint_names = tuple(b.joint.name for b in self.bodies)
        self.body_index = MappingProxyType({name: i + 1 for i, name in enumerate(self.body_names)})
        self.joint_index = MappingProxyType({name: i + 1 for i, name in enumerate(self.joint_names)})
        t = self.tree
        # (joint name, slice of q) of every spherical and free joint's quaternion (w, x, y, z)
        self.quaternions = tuple(
            (b.joint.name, slice(int(t.iq[i] + t.nq[i]) - 4, int(t.iq[i] + t.nq[i])))
            for i, b in enumerate(self.bodies, start=1)
            if t.jtype[i] in (joints.SPHERICAL, joints.FREE)
        )
        self.frames = MappingProxyType(
            {fname: (i + 1, fr) for i, b in enumerate(self.bodies) for fname, fr in b.frames.items()}
        )
        t = self.tree
        self.damping = np.zeros(t.nv_total)  # (nv,) joint damping d [N m s/rad or N s/m]
        self._springs = []  # (joint name, q index, v index, k, q0)
        for i, b in enumerate(self.bodies, start=1):
            if b.joint.spring is not None:
                self.damping[t.iv[i]] = b.joint.spring.d
                self._springs.append((b.joint.name, int(t.iq[i]), int(t.iv[i]), b.joint.spring.k, b.joint.spring.q0))
        self.damping.flags.writeable = False
        problems = self._check_moves_mass(lines)
        if problems:
            raise ModelError(problems, source)
        self.loops: LoopSet = compile_loops(self)
        self._assembled = self._assemble_initial(lines) if self.loops else None

    # ---- sizes and topology -------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def notes(self) -> tuple[str, ...]:
        """The reader's remarks on the model file: what it read but does not model, what it repaired."""
        return self.spec.notes

    @property
    def nq(self) -> int:
        return self.tree.nq_total

    @property
    def nv(self) -> int:
        return self.tree.nv_total

    @property
    def N(self) -> int:
        return self.tree.N

    @property
    def gravity(self) -> Array:
        return self.tree.a_grav[3:].copy()

    @property
    def L(self) -> np.ndarray:
        """(N+1,) reference body operator of No's method: L[j] is the parent of body j, 0 the world."""
        return self.topology.L

    @property
    def pi(self) -> np.ndarray:
        """(N, N) path matrix of No's method (bodies 1..N in ``body_names`` order)."""
        return self.topology.pi

    def supports(self, body: str) -> list[str]:
        """Bodies from the world to ``body`` (itself included), root first."""
        return [self.body_names[j - 1] for j in self.topology.supports(self._body(body))]

    def subtree(self, body: str) -> list[str]:
        """Bodies moved by ``body``'s joint (itself included)."""
        return [self.body_names[j - 1] for j in self.topology.subtree(self._body(body))]

    def q_slice(self, joint: str) -> slice:
        i = self.joint_index[joint]
        return slice(int(self.tree.iq[i]), int(self.tree.iq[i] + self.tree.nq[i]))

    def v_slice(self, joint: str) -> slice:
        i = self.joint_index[joint]
        return slice(int(self.tree.iv[i]), int(self.tree.iv[i] + self.tree.nv[i]))

    # ---- configurations -----------------------------------------------------------------
    def neutral(self) -> Array:
        """(nq,) zero angles and offsets, identity quaternions."""
        return np.concatenate([joints.neutral(int(self.tree.jtype[i])) for i in range(1, self.N + 1)] or [np.zeros(0)])

    def initial_state(self, assemble: bool = True) -> tuple[Array, Array]:
        """(q, qd) from the model's ``initial`` section, neutral/zero elsewhere; with loops and
        ``assemble``, closed by ``assemble`` (the declared independent joints keep their values)."""
        if assemble and self._assembled is not None:
            return self._assembled[0].copy(), self._assembled[1].copy()
        q, qd = self.neutral(), np.zeros(self.nv)
        for name, val in self.spec.initial_q.items():
            q[self.q_slice(name)] = val
        for name, val in self.spec.initial_qd.items():
            qd[self.v_slice(name)] = val
        return q, qd

    @property
    def named_poses(self) -> tuple[str, ...]:
        """Names of the model's named joint configurations (``named_poses``, SRDF group states)."""
        return tuple(self.spec.named_poses)

    def named_configuration(self, name: str) -> Array:
        """q (nq,) of the named pose ``name``: its joints' values over the file's initial q (as
        given: not assembled for loop closures). InputError naming the poses for an unknown name."""
        if name not in self.spec.named_poses:
            poses = ", ".join(self.spec.named_poses) or "none"
            raise InputError(f"no named pose {name!r} in model {self.source}; named poses: {poses}")
        q = self.initial_state(assemble=False)[0]
        for joint, val in self.spec.named_poses[name].q.items():
            q[self.q_slice(joint)] = val
        return q

    def random_state(self, rng: np.random.Generator) -> tuple[Array, Array]:
        """(q, qd) with angles/offsets ~ U(-1, 1), random unit quaternions, rates ~ U(-1, 1)."""
        q = rng.uniform(-1.0, 1.0, self.nq)
        for i in range(1, self.N + 1):
            jt, s = self.tree.jtype[i], int(self.tree.iq[i])
            if jt == joints.SPHERICAL:
                quat = rng.normal(size=4)
                q[s : s + 4] = quat / np.linalg.norm(quat)
            elif jt == joints.FREE:
                quat = rng.normal(size=4)
                q[s + 3 : s + 7] = quat / np.linalg.norm(quat)
        return q, rng.uniform(-1.0, 1.0, self.nv)

    def config_rate(self, q: Array, qd: Array) -> Array:
        """dq/dt (nq,) from qd (nv,) (quaternion kinematics per joint)."""
        t = self.tree
        return np.concatenate(
            [
                joints.config_rate(int(t.jtype[i]), q[t.iq[i] : t.iq[i] + t.nq[i]], qd[t.iv[i] : t.iv[i] + t.nv[i]])
                for i in range(1, self.N + 1)
            ]
            or [np.zeros(0)]
        )

    def integrate(self, q: Array, dv: Array) -> Array:
        """q (+) dv: configuration moved by the velocity increment dv (nv,) on each joint's manifold."""
        t = self.tree
        return np.concatenate(
            [
                joints.integrate(int(t.jtype[i]), q[t.iq[i] : t.iq[i] + t.nq[i]], dv[t.iv[i] : t.iv[i] + t.nv[i]])
                for i in range(1, self.N + 1)
            ]
            or [np.zeros(0)]
        )

    # ---- kinematics ---------------------------------------------------------------------
    def forward_kinematics(self, q: Array, qd: Array | None = None, qdd: Array | None = None) -> Kinematics:
        """Poses, spatial velocities and accelerations of every body (see ``Kinematics``)."""
        q = self.checked_vector("q", q, self.nq)
        qd = None if qd is None else self.checked_vector("qd", qd, self.nv)
        qdd = None if qdd is None else self.checked_vector("qdd", qdd, self.nv)
        return forward_kinematics(self.tree, q, qd, qdd)

    def frame_pose(self, q: Array, frame: str) -> tuple[Array, Array]:
        """(R, p): orientation (frame axes as columns, world axes) and origin [m] of a named frame."""
        r = (self._calls or self._bind_calls()).frame(q, None, None, frame, 0)
        if r is not None:
            return r
        i, Rf, pf = self._frame_arrays(frame)
        kin = self.forward_kinematics(q)
        return kin.R[i] @ Rf, kin.point_position(i, pf)

    def frame_velocity(self, q: Array, qd: Array, frame: str) -> tuple[Array, Array]:
        """(omega, v): angular velocity [rad/s] and velocity of the frame origin [m/s], world axes."""
        r = (self._calls or self._bind_calls()).frame(q, qd, None, frame, 1)
        if r is not None:
            return r
        i, Rf, pf = self._frame_arrays(frame)
        kin = self.forward_kinematics(q, qd)
        return kin.omega_world[i], kin.point_velocity(i, pf)

    def frame_acceleration(self, q: Array, qd: Array, qdd: Array, frame: str) -> tuple[Array, Array]:
        """(omegadot, a): angular [rad/s^2] and classical linear acceleration [m/s^2] of the frame
        origin, world axes."""
        r = (self._calls or self._bind_calls()).frame(q, qd, qdd, frame, 2)
        if r is not None:
            return r
        i, Rf, pf = self._frame_arrays(frame)
        kin = self.forward_kinematics(q, qd, qdd)
        return kin.R[i] @ kin.a[i, :3], kin.point_acceleration(i, pf)

    def frame_jacobian(self, q: Array, frame: str) -> Array:
        """J: (6, nv) with [omega; v] = J qd for the frame origin, world axes [angular; linear]."""
        i, fr = self._frame(frame)
        return point_jacobian(self.tree, self.forward_kinematics(q), i, fr.p)

    def kinetic_energy(self, q: Array, qd: Array) -> float:
        """KE [J] summed body by body: 1/2 (w^T I_c w + m |v_c|^2) (MBS Energy Testing Eq. 1, no wheels)."""
        kin = self.forward_kinematics(q, qd)
        t = self.tree
        w = kin.v[1:, :3]
        vc = kin.v[1:, 3:] + np.cross(w, t.com[1:])
        return 0.5 * float(np.einsum("ni,nij,nj->", w, t.I_c[1:], w) + np.einsum("n,ni,ni->", t.mass[1:], vc, vc))

    # ---- dynamics -----------------------------------------------------------------------
    def passive_forces(self, q: Array, qd: Array) -> Array:
        """(nv,) joint spring-damper forces -k (q - q0) - d qd [N m or N] (Wojtusch's systems 2, 3)."""
        tau = -self.damping * qd
        for _name, iq, iv, k, q0 in self._springs:
            tau[iv] -= k * (q[iq] - q0)
        return tau

    def joint_spring_deflections(self, q: Array) -> dict[str, tuple[float, float]]:
        """{joint name: (k, q - q0)} of the joint springs; PE = 1/2 k (q - q0)^2 (MBS Energy Testing Eq. 2)."""
        return {name: (float(k), float(q[iq] - q0)) for name, iq, _iv, k, q0 in self._springs}

    def mass_matrix(self, q: Array, backend: str = "auto", out: Array | None = None) -> Array:
        """M(q): (nv, nv) joint-space inertia by CRBA. backend: "auto" (the C core, mbsfmu/native,
        if it loads), "native" or "python" (the numpy reference). out: a writeable C-contiguous
        float64 (nv, nv) array to write M into and return (else a new array)."""
        if out is not None:
            self._check_out(out, (self.nv, self.nv))
        if backend == "auto" or backend == "native":
            M = (self._calls or self._bind_calls()).mass_matrix(q, out)
            if M is not None:
                return M
        if _native(backend):
            return _into(out, model_core(self).crba(q))
        return _into(out, crba(self.tree, self.checked_vector("q", q, self.nq)))

    def rnea_derivatives(self, q: Array, qd: Array, qdd: Array, f_ext=None) -> tuple[Array, Array, Array]:
        """(dtau_dq, dtau_dqd, M), each (nv, nv), of tau = ``inverse_dynamics(q, qd, qdd, f_ext)``
        (joint springs and dampers included) by Carpentier & Mansard's recursive algorithm (RSS 2018:
        the recursive derivative of RNEA) in the C core (mbsfmu/engine/native/derivatives.c); f_ext
        (as ``inverse_dynamics``: body axes, so it turns with its body) enters as the generalized force
        Q = J^T f_ext, tau = RNEA - passive - Q, with dQ/dq from force_derivatives.c. Columns: the
        tangent coordinates dq of q (+) dq (mbsfmu/linear/tangent.py: body axes for spherical and
        free joints) [N m/rad, N/m, ...] and qd [N m s/rad, ...]; M = dtau/dqdd [kg m^2, kg].
        Trees only: InputError for closed loops (linearize them with
        mbsfmu.linear.jacobians.dynamics_jacobians, partitioned coordinates)."""
        self._check_tree_for_derivatives()
        if f_ext is None:
            r = (self._calls or self._bind_calls()).rnea_derivatives(q, qd, qdd)
            if r is not None:
                return r
        core = model_core(self)
        dq, dqd, M = core.rnea_derivatives(q, qd, qdd)
        if f_ext is not None:
            dq -= core.wrench_derivatives(q, f_ext)[1]
        return dq, dqd, M

    def aba_derivatives(self, q: Array, qd: Array, tau: Array, f_ext=None) -> tuple[Array, Array, Array]:
        """(dqdd_dq, dqdd_dqd, Minv), each (nv, nv), of qdd = ``forward_dynamics(q, qd, tau, f_ext)``
        (joint springs and dampers included): dqdd/dq = -M^-1 dtau/dq, dqdd/dqd = -M^-1 dtau/dqd at
        qdd = ABA(q, qd, tau), dqdd/dtau = M^-1 (Carpentier & Mansard, RSS 2018, the paper's route
        for ABA), in the C core; f_ext as in ``rnea_derivatives`` (qdd at tau + Q, dqdd/dq +=
        M^-1 dQ/dq). Columns and refusals as ``rnea_derivatives``; [1/s^2], [1/s]."""
        self._check_tree_for_derivatives()
        if f_ext is None:
            r = (self._calls or self._bind_calls()).aba_derivatives(q, qd, tau)
            if r is not None:
                return r
        core = model_core(self)
        if f_ext is None:
            return core.aba_derivatives(q, qd, tau)[1:]
        Q, dQ_dq = core.wrench_derivatives(q, f_ext)
        _qdd, dq, dqd, Minv = core.aba_derivatives(q, qd, self.checked_vector("tau", tau, self.nv) + Q)
        return dq + Minv @ dQ_dq, dqd, Minv

    def _check_tree_for_derivatives(self) -> None:
        if self.loops:
            raise InputError(
                f"model {self.source}: analytic derivatives of ABA and RNEA are for trees; this model has "
                "closed loops or joint couplings (differentiate it in its independent coordinates with "
                "Model.partitioned_derivatives, or linearize it with mbsfmu.linear.jacobians.dynamics_jacobians)"
            )

    def partitioned_derivatives(
        self, q: Array, qd: Array, tau: Array, forces: tuple[Array, Array, Array] | None = None
    ) -> tuple[Array, Array, Array, Array]:
        """(qdd (nv,), dqdd_du (nv, n), dqdd_dud (nv, n), dqdd_dtau (nv, nv)) of the loops'
        partitioned forward dynamics (``constrained_forward_dynamics(method="partitioning")``, no
        f_ext; joint springs and dampers included) in the n independent coordinates
        ``loop_partition().iu``: columns the tangent coordinates du [rad, m] and the rates ud of
        those joints, the dependent ones following on the loops' manifold; rows all nv
        accelerations [rad/s^2, m/s^2]. Analytic: the reduced equations differentiated through
        the C core's RNEA derivatives (mbsfmu/engine/dynamics/loop_derivatives.py). (q, qd) must be
        consistent; every loop must declare its independent joints; trees: ``aba_derivatives``.
        forces: (Q, dQ/dq, dQ/dqd) of force elements beyond the joints at (q, qd) (e.g.
        ``Core.force_derivatives`` of a Simulator's point spring-dampers, thrusters and wrenches),
        added to tau with their derivatives."""
        q, qd, tau = (
            self.checked_vector("q", q, self.nq),
            self.checked_vector("qd", qd, self.nv),
            self.checked_vector("tau", tau, self.nv),
        )
        part = self._full_partition("partitioned derivatives")
        check_consistent(self.tree, self.loops, q, qd)
        core = model_core(self)
        if forces is not None:
            forces = (
                self.checked_vector("Q", forces[0], self.nv),
                *(np.asarray(a, dtype=float).reshape(self.nv, self.nv) for a in forces[1:]),
            )
        return loop_partitioned_derivatives(
            self.tree, self.loops, part, q, qd, tau, core.inverse_dynamics, core.rnea_derivatives, core.crba, forces
        )

    def inverse_dynamics(
        self, q: Array, qd: Array, qdd: Array, f_ext=None, backend: str = "auto", out: Array | None = None
    ) -> Array:
        """tau (nv,): actuator forces producing qdd, springs/dampers and f_ext acting (RNEA);
        backend as for ``mass_matrix``; out: a writeable C-contiguous float64 (nv,) array to write
        tau into and return (else a new array)."""
        if out is not None:
            self._check_out(out, (self.nv,))
        if f_ext is None and (backend == "auto" or backend == "native"):
            tau = (self._calls or self._bind_calls()).inverse_dynamics(q, qd, qdd, out)
            if tau is not None:
                return tau
        if _native(backend):
            return _into(out, model_core(self).inverse_dynamics(q, qd, qdd, f_ext))
        q, qd, qdd = (
            self.checked_vector("q", q, self.nq),
            self.checked_vector("qd", qd, self.nv),
            self.checked_vector("qdd", qdd, self.nv),
        )
        return _into(out, rnea(self.tree, q, qd, qdd, self.external_forces(f_ext)) - self.passive_forces(q, qd))

    def forward_dynamics(
        self,
        q: Array,
        qd: Array,
        tau: Array,
        f_ext=None,
        method: str = "aba",
        backend: str = "auto",
        out: Array | None = None,
    ) -> Array:
        """qdd (nv,) under actuator forces tau, springs/dampers, gravity and f_ext.

        method: "aba" (O(N) articulated-body), "crba" (solve M qdd = tau - RNEA(q, qd, 0)) or
        "transform" (No's velocity transformation, B^T M B qdd = B^T (Q - M Bdot qd)).
        backend (method "aba"): as for ``mass_matrix``. out: a writeable C-contiguous float64 (nv,)
        array to write qdd into and return (else a new array)."""
        if out is not None:
            self._check_out(out, (self.nv,))
        if f_ext is None and method == "aba" and (backend == "auto" or backend == "native"):
            qdd = (self._calls or self._bind_calls()).forward_dynamics(q, qd, tau, out)
            if qdd is not None:
                return qdd
        return _into(out, self._forward_dynamics(q, qd, tau, f_ext, method, backend))

    def _forward_dynamics(self, q, qd, tau, f_ext, method: str, backend: str) -> Array:
        """forward_dynamics' checked paths: the C core through ctypes, or the numpy reference."""
        if method == "aba" and _native(backend):
            return model_core(self).forward_dynamics(q, qd, tau, f_ext)
        q, qd, tau = (
            self.checked_vector("q", q, self.nq),
            self.checked_vector("qd", qd, self.nv),
            self.checked_vector("tau", tau, self.nv),
        )
        fx = self.external_forces(f_ext)
        tau = tau + self.passive_forces(q, qd)
        if method == "aba":
            return aba(self.tree, q, qd, tau, fx)
        if method == "crba":
            return np.linalg.solve(crba(self.tree, q), tau - rnea(self.tree, q, qd, np.zeros(self.nv), fx))
        if method == "transform":
            from .dynamics.transform import transform_forward_dynamics

            return transform_forward_dynamics(self.tree, q, qd, tau, fx)
        raise InputError(f"method {method!r}: expected 'aba', 'crba' or 'transform'")

    # ---- closed loops (mbsfmu/engine/dynamics/closed_loops.py) ----------------------------------------
    @property
    def loop_names(self) -> tuple[str, ...]:
        return self.loops.names

    def loop_rows(self, loop: str) -> slice:
        """The rows of one loop in Phi, A, gamma and lambda."""
        for c in self.loops.closures:
            if c.name == loop:
                return c.rows
        raise InputError(f"unknown loop {loop!r} in model {self.source}; loops: {', '.join(self.loop_names) or 'none'}")

    def loop_constraints(self, q: Array, qd: Array | None = None) -> LoopData:
        """Phi (m,), A = dPhi/dq (m, nv) mapped to the rates qd, and given qd, Phidot = A qd and
        gamma = -Adot qd (m,), all loops stacked (``loop_rows``)."""
        q = self.checked_vector("q", q, self.nq)
        qd = None if qd is None else self.checked_vector("qd", qd, self.nv)
        return loop_constraints(self.tree, self.loops, q, qd)

    def assemble(self, q: Array, qd: Array | None = None) -> tuple[Array, Array | None]:
        """(q, qd) closed: declared independent joints and joints off the loops are held, the
        other loop joints solved by Gauss-Newton; rates corrected so that A qd = 0. InputError
        (AssemblyError) names the loops that cannot be closed."""
        q = self.checked_vector("q", q, self.nq)
        qd = None if qd is None else self.checked_vector("qd", qd, self.nv)
        return loop_assemble(self.tree, self.loops, q, qd) if self.loops else (q, qd)

    def loop_partition(self) -> Partition:
        """The coordinate partition (PyMbs Background) declared by the loops' ``independent`` joints;
        InputError if no loop declares any."""
        names = tuple(self.joint_names[i - 1] for i in range(1, self.N + 1) for _ in range(int(self.tree.nv[i])))
        part = make_partition(self.loops, self.nv, names)
        if part is None:
            raise InputError(
                f"model {self.source}: coordinate partitioning needs loops that declare their "
                f"independent joints; none of {', '.join(self.loop_names) or 'no loops'} does"
            )
        return part

    def constrained_forward_dynamics(
        self,
        q: Array,
        qd: Array,
        tau: Array,
        f_ext=None,
        method: str = "multipliers",
        alpha: float = 0.0,
        beta: float = 0.0,
    ) -> tuple[Array, Array]:
        """(qdd (nv,), lambda (m,)) with the loops closed, at a consistent state (q, qd).

        method "multipliers": No's method, Eq. 24, ``[[M, A^T], [A, 0]] [qdd; lambda] =
        [tau - C; gamma - 2 alpha Phidot - beta^2 Phi]``; "partitioning": PyMbs Background's ODE in the
        independent coordinates (loops without declared independent joints keep multipliers).
        lambda: constraint forces, -A^T lambda the generalised force (minimum norm for redundant
        rows); tau (nv,) actuator forces, springs/dampers added."""
        q, qd, tau = (
            self.checked_vector("q", q, self.nq),
            self.checked_vector("qd", qd, self.nv),
            self.checked_vector("tau", tau, self.nv),
        )
        if method not in ("multipliers", "partitioning"):
            raise InputError(f"method {method!r}: expected 'multipliers' or 'partitioning'")
        part = self.loop_partition() if method == "partitioning" else None
        qdd, lam, _ = loop_forward_dynamics(
            self.tree,
            self.loops,
            q,
            qd,
            tau + self.passive_forces(q, qd),
            self.external_forces(f_ext),
            part,
            alpha,
            beta,
        )
        return qdd, lam

    def constrained_inverse_dynamics(self, q: Array, qd: Array, udd: Array, f_ext=None) -> Array:
        """tau_u (nu,): forces on the independent coordinates (``loop_partition().iu``) that give
        them the accelerations udd (nu,), springs/dampers and f_ext acting:
        tau_u = J^T (RNEA(q, qd, J udd + b) - tau_passive). Every loop must declare its
        independent joints; (q, qd) must be consistent."""
        q, qd = self.checked_vector("q", q, self.nq), self.checked_vector("qd", qd, self.nv)
        part = self._full_partition("loop inverse dynamics")
        udd = self.checked_vector("udd", udd, part.iu.size)
        ld = loop_constraints(self.tree, self.loops, q)
        J, _ = reduction(ld.A[part.rows], None, part, self.nv)
        return loop_inverse_dynamics(
            self.tree, self.loops, part, q, qd, udd, self.external_forces(f_ext)
        ) - J.T @ self.passive_forces(q, qd)

    def _full_partition(self, what: str) -> Partition:
        """The loop partition; InputError unless every loop declares its independent joints."""
        part = self.loop_partition()
        missing = [c.name for c in self.loops.closures if not c.held]
        if missing:
            raise InputError(f"{what} needs every loop partitioned; {', '.join(missing)} declare no independent joints")
        return part

    def _assemble_initial(self, lines) -> tuple[Array, Array]:
        """The file's initial state closed; ModelError naming the loops that cannot be."""
        q, qd = self.initial_state(assemble=False)
        try:
            q, qd = loop_assemble(self.tree, self.loops, q, qd)
        except AssemblyError as e:
            index = {c.name: ("loops", k) for k, c in enumerate(self.spec.loops)}
            index |= {c.follower: ("couplings", k) for k, c in enumerate(self.spec.couplings)}
            what = "initial state" if e.what == "|Phi|" else "initial rates"
            raise ModelError(
                locate(
                    [
                        Problem(
                            index[n],
                            f"loop {n!r} cannot be closed from the {what}: max {e.what} = {v:.3g} remains; {e.reason}",
                        )
                        for n, v in e.residuals.items()
                    ],
                    lines,
                ),
                self.source,
            ) from None
        return q, qd

    # ---- helpers ------------------------------------------------------------------------
    def _body(self, body: str) -> int:
        if body not in self.body_index:
            raise InputError(f"unknown body {body!r} in model {self.source}; bodies: {', '.join(self.body_names)}")
        return self.body_index[body]

    def _bind_calls(self):
        """This model's per-call functions (native.core.Core.calls of its core, this thread's), or
        NO_CALLS where the core does not load; kept for the following calls. With the binding, the
        dynamics methods' default case then runs in C in front of each (native.core.bound_methods,
        kept in the instance dict: the call is one vectorcall, no Python frame)."""
        frames = {name: self._frame_arrays(name) for name in self.frames}
        try:
            self._calls = model_core(self).calls(frames) if usable() else NO_CALLS
        except InputError:  # the core refuses this model: the checked paths say why, or run numpy
            self._calls = NO_CALLS
        names = self._C_METHODS if self.loops else self._C_METHODS + self._C_TREE_METHODS
        own = [n for n in names if getattr(type(self), n) is Model.__dict__[n]]  # a subclass's override runs
        self.__dict__.update(bound_methods(self._calls, self, own))
        return self._calls

    def _check_out(self, out, shape: tuple[int, ...]) -> None:
        """InputError unless out is a writeable C-contiguous float64 array of ``shape``."""
        if not isinstance(out, np.ndarray):
            raise InputError(f"out must be a numpy float64 array of shape {shape}, not {type(out).__name__}")
        wrong = [
            *([f"shape {out.shape}"] if out.shape != shape else []),
            *([f"dtype {out.dtype}"] if out.dtype != np.float64 else []),
            *(["not C-contiguous"] if not out.flags.c_contiguous else []),
            *(["read-only"] if not out.flags.writeable else []),
        ]
        if wrong:
            raise InputError(
                f"out is {', '.join(wrong)}: expected a writeable C-contiguous float64 array of shape {shape} "
                f"(model {self.source}, nv = {self.nv})"
            )

    def _frame_arrays(self, frame: str) -> tuple[int, Array, Array]:
        """(body, R (3, 3), p (3,)) of a named frame (InputError for an unknown name), made once."""
        cache = self.__dict__.setdefault("_frame_cache", {})
        hit = cache.get(frame)
        if hit is None:
            i, fr = self._frame(frame)
            R, p = np.array(fr.R, dtype=float), np.array(fr.p, dtype=float)
            R.flags.writeable = p.flags.writeable = False
            hit = cache[frame] = (i, R, p)
        return hit

    def _frame(self, frame: str):
        if frame not in self.frames:
            raise InputError(
                f"unknown frame {frame!r} in model {self.source}; frames: {', '.join(self.frames) or 'none'}"
            )
        return self.frames[frame]

    def checked_vector(self, name: str, x, n: int) -> Array:
        """x as a float vector of n finite entries; InputError naming the vector, its shape and the model's joints."""
        try:
            x = real_array(name, x)
        except (TypeError, ValueError) as e:
            if isinstance(e, InputError):
                raise
            raise InputError(f"{name} must be a vector of {n} numbers ({e})") from None
        if x.shape != (n,):
            what = {
                "q": f"nq = {n} coordinates",
                "qd": f"nv = {n} rates",
                "qdd": f"nv = {n} accelerations",
                "tau": f"nv = {n} joint forces",
            }.get(name, f"{n} entries")
            raise InputError(
                f"{name} has shape {x.shape}, model {self.source} has {what} (joints: {', '.join(self.joint_names)})"
            )
        if not np.all(np.isfinite(x)):
            bad = np.flatnonzero(~np.isfinite(x)).tolist()
            raise InputError(f"{name} has non-finite entries at indices {bad}")
        if name == "q":
            self._check_quaternion_directions(x)
        return x

    def _check_quaternion_directions(self, q: Array) -> None:
        """InputError unless every quaternion of q has a direction (|quat|^2 positive and finite:
        the joints take the rotation of quat / |quat|, spatial.quat_to_R; the core's
        mbs_quat_directions)."""
        for joint, sl in self.quaternions:
            n2 = float(q[sl] @ q[sl])
            if not (0.0 < n2 < np.inf and 1.0 / n2 < np.inf):
                raise InputError(
                    f"q[{sl.start}:{sl.stop}] (joint {joint!r}) is a quaternion of norm "
                    f"{np.sqrt(n2):g}: it has no direction (|q|^2 must be positive and finite)"
                )

    def external_forces(self, f_ext) -> Array | None:
        """f_ext ({body: [torque; force]} or an (N, 6) array, body axes at the body origin [N m; N]) as
        the (N + 1, 6) array the algorithms take (row 0: ground), checked; None stays None."""
        if f_ext is None:
            return None
        out = np.zeros((self.N + 1, 6))
        if isinstance(f_ext, dict):
            for body, w in f_ext.items():
                out[self._body(body)] = self.checked_vector(f"f_ext[{body!r}]", w, 6)
        else:
            arr = real_array("f_ext", f_ext)
            if arr.shape != (self.N, 6):
                raise InputError(
                    f"f_ext has shape {arr.shape}, expected ({self.N}, 6): one [torque; force] "
                    f"row per body in order {', '.join(self.body_names)}"
                )
            if not np.all(np.isfinite(arr)):
                raise InputError("f_ext has non-finite entries")
            out[1:] = arr
        return out

    def _check_moves_mass(self, lines) -> list[Problem]:
        """Joints whose motion, alone or combined with other joints', moves no mass or inertia, which
        makes M singular: found in O(N) by the pivots of M's block LDL^T (dynamics/singular.py) at
        two random configurations (a structural singularity shows at both; the second is tried only
        when the first shows one); M overflowing to inf is reported too."""
        if self.nv == 0:
            return []
        rng = np.random.default_rng(12345)
        found = []
        with np.errstate(all="ignore"):
            for _ in range(2):
                found.append(singular_joints(self.tree, self.random_state(rng)[0]))
                if not found[-1].overflow and not found[0].joints:
                    break  # nothing singular at the first configuration: the intersection is empty
                if found[-1].overflow:
                    return locate(
                        [
                            Problem(
                                ("bodies",),
                                "the mass matrix overflows: some mass, inertia, com, origin or axis is far too large",
                            )
                        ],
                        lines,
                    )
        t, wheel_paths = self.tree, _with_wheel_rotors(self.spec)[1]
        last = found[-1]
        problems = []
        for i in sorted(found[0].joints & last.joints):
            b, k = self.bodies[i - 1], self.topology.order[i - 1]
            what = f"wheel {b.name!r}" if k in wheel_paths else f"joint {b.joint.name!r}"
            others = ", ".join(repr(self.bodies[j - 1].joint.name) for j in sorted(last.combined.get(i, ())))
            if not others or i in last.alone:
                msg = (
                    f"{what} moves no mass or inertia{' in some direction' if t.nv[i] > 1 else ''} (body "
                    f"{b.name!r} and its subtree), so the mass matrix is singular: give the moved bodies mass "
                    "or inertia, or make the joint fixed"
                )
            else:
                msg = (
                    f"{what} combined with {others} moves no mass or inertia (e.g. coaxial joints with only "
                    "massless bodies between them), so the mass matrix is singular"
                )
            problems.append(_map_path(Problem(("bodies", k, "joint"), msg), wheel_paths))
        return locate(problems, lines)


def _into(out: Array | None, x: Array) -> Array:
    """x, or x copied into out (checked by Model._check_out) and out."""
    if out is None:
        return x
    out[...] = x
    return out


def _native(backend: str) -> bool:
    """Whether a Model algorithm runs in the C core: backend "native", or "auto" when it loads."""
    if backend == "auto":
        return usable()
    if backend == "python":
        return False
    if backend == "native":
        return True
    raise InputError(f"backend {backend!r}: expected 'auto', 'native' or 'python'")


def _with_wheel_rotors(spec: ModelSpec) -> tuple[tuple[Body, ...], dict]:
    """Bodies plus one rotor body per reaction wheel: a massless rotor on a revolute joint about
    the wheel axis with inertia I_w g g^T, so every algorithm carries the wheel's gyroscopic
    coupling exactly (MBS Momentum/Energy Testing: h = g I_w thetadot, KE = h^2 / (2 I_w)). Returns the bodies
    and, per rotor, (its path in the file, the Wheel)."""
    bodies = list(spec.bodies)
    paths = {}
    for k, b in enumerate(spec.bodies):
        for w_idx, w in enumerate(b.wheels):
            g = np.asarray(w.axis, dtype=float)
            with np.errstate(all="ignore"):  # huge or zero axes are reported by check_elements
                norm = np.linalg.norm(g)
            g = g / norm if 0 < norm < np.inf else g
            paths[len(bodies)] = (("bodies", k, "wheels", w_idx), w)
            bodies.append(
                Body(
                    name=w.name,
                    parent=b.name,
                    joint=Joint(name=w.name, type="revolute", axis=tuple(g), origin=Origin(xyz=w.position)),
                    mass=0.0,
                    inertia=tuple(map(tuple, w.inertia * np.outer(g, g))),
                )
            )
    return tuple(bodies), paths


def _map_path(problem: Problem, wheel_paths: dict) -> Problem:
    """Point a problem found on a wheel rotor body at the wheel's entry in the file."""
    path = problem.path
    if len(path) >= 2 and path[0] == "bodies" and path[1] in wheel_paths:
        return Problem(wheel_paths[path[1]][0] + ("name",), problem.message, problem.line)
    return problem
