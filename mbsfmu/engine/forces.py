"""Force elements driven by the state and by named inputs: joint actuators, wheel motors,
thrusters, body wrenches and point-to-point spring-dampers; their potential energy and power.

Body wrenches are returned as the dynamics take them: (N+1, 6) [torque N m; force N] in body
axes about each body origin. A force F (world axes) at body point r (body axes) gives
f = R^T F, n = r x f (RBDA Sec. 2.8, force transform to the body origin).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .kinematics import Kinematics
from .spatial import Array, cross
from .spec.description import BodyWrench, SpringDamper, Thruster

LENGTH_EPS = 1e-12  # [m] below this a spring has no direction; its force is then zero


@dataclass(frozen=True)
class InputLayout:
    """Names of the input vector u: joint actuators ``<joint>.tau`` (``<joint>.tau[k]`` for
    multi-DoF joints) [N m or N], wheel motors ``<wheel>.torque`` [N m], thrusters
    ``<name>.thrust`` [N], body wrenches ``<name>.f[1..3]`` [N] and ``<name>.torque[1..3]`` [N m]."""

    names: tuple[str, ...]
    units: tuple[str, ...]
    descriptions: tuple[str, ...]
    tau_index: np.ndarray  # (n_act,) indices into u of joint/wheel forces
    tau_dof: np.ndarray  # (n_act,) matching indices into qd/tau

    def index(self, name: str) -> int:
        return self.names.index(name)


class ForceElements:
    """The compiled force elements of a Model."""

    def __init__(self, model):
        t = model.tree
        names, units, desc, tau_index, tau_dof = [], [], [], [], []
        wheel_bodies = {i for i, _w in model.wheels.values()}
        for i in range(1, model.N + 1):
            b = model.bodies[i - 1]
            if i in wheel_bodies:
                names.append(f"{b.name}.torque")
                units.append("N.m")
                desc.append(f"motor torque on reaction wheel {b.name}, about its spin axis (reaction on the host)")
                tau_index.append(len(names) - 1)
                tau_dof.append(int(t.iv[i]))
            elif b.joint.is_actuated and t.nv[i] > 0:
                for k in range(int(t.nv[i])):
                    suffix = "" if t.nv[i] == 1 else f"[{k + 1}]"
                    names.append(f"{b.joint.name}.tau{suffix}")
                    units.append(dof_unit(b.joint.type, k, force=True))
                    desc.append(f"actuator force of {b.joint.type} joint {b.joint.name}, coordinate {k + 1}")
                    tau_index.append(len(names) - 1)
                    tau_dof.append(int(t.iv[i]) + k)
        self.springs, self.thrusters, self.wrenches = [], [], []
        for el in model.spec.forces:
            if isinstance(el, SpringDamper):
                self.springs.append(
                    (
                        el,
                        _body(model, el.a.body),
                        np.asarray(el.a.point, float),
                        _body(model, el.b.body),
                        np.asarray(el.b.point, float),
                    )
                )
            elif isinstance(el, Thruster):
                d = np.asarray(el.direction, float)
                self.thrusters.append(
                    (len(names), model.body_index[el.body], np.asarray(el.point, float), d / np.linalg.norm(d))
                )
                names.append(f"{el.name}.thrust")
                units.append("N")
                desc.append(f"thrust of {el.name} along its body-fixed direction on body {el.body}")
            elif isinstance(el, BodyWrench):
                self.wrenches.append(
                    (len(names), model.body_index[el.body], np.asarray(el.point, float), el.axes == "world")
                )
                for what, unit in (("f", "N"), ("torque", "N.m")):
                    for k in range(3):
                        names.append(f"{el.name}.{what}[{k + 1}]")
                        units.append(unit)
                        desc.append(
                            f"external {'force' if what == 'f' else 'torque'} {el.name} on body {el.body}, "
                            f"{el.axes} axes, component {k + 1}"
                        )
        self.layout = InputLayout(
            tuple(names),
            tuple(units),
            tuple(desc),
            np.array(tau_index, dtype=np.int64),
            np.array(tau_dof, dtype=np.int64),
        )
        self.N = model.N
        self.nv = model.nv

    def joint_forces(self, u: Array) -> Array:
        """tau (nv,): actuator and wheel-motor forces from the inputs u."""
        tau = np.zeros(self.nv)
        tau[self.layout.tau_dof] = u[self.layout.tau_index]
        return tau

    def body_wrenches(self, kin: Kinematics, u: Array) -> tuple[Array | None, float, float]:
        """(f_ext (N+1, 6) or None, input power [W], damper power [W] (<= 0)) at the state of kin.

        Input power counts thrusters and body wrenches (F . v_point + T . omega); damper power
        is -d ldot^2 summed over spring-dampers."""
        if not (self.springs or self.thrusters or self.wrenches):
            return None, 0.0, 0.0
        f = np.zeros((self.N + 1, 6))
        p_in = p_damp = 0.0
        for iu, i, r, d in self.thrusters:
            F = kin.R[i] @ (u[iu] * d)
            _add_force(f, kin, i, r, F)
            p_in += F @ kin.point_velocity(i, r)
        for iu, i, r, world in self.wrenches:
            F, T = u[iu : iu + 3], u[iu + 3 : iu + 6]
            if not world:
                F, T = kin.R[i] @ F, kin.R[i] @ T
            _add_force(f, kin, i, r, F)
            f[i, :3] += kin.R[i].T @ T
            p_in += F @ kin.point_velocity(i, r) + T @ kin.omega_world[i]
        for el, ia, ra, ib, rb in self.springs:
            e, l, ldot = _spring_geometry(kin, ia, ra, ib, rb)
            T = el.k * (l - el.l0) + el.d * ldot  # tension [N], pulls the anchors together
            if ia > 0:
                _add_force(f, kin, ia, ra, T * e)
            if ib > 0:
                _add_force(f, kin, ib, rb, -T * e)
            p_damp -= el.d * ldot * ldot
        return f, p_in, p_damp

    def spring_state(self, kin: Kinematics) -> list[tuple[str, float, float]]:
        """[(name, k, l - l0)] of the point-to-point springs (MBS Energy Testing Eq. 2 form 1/2 k x^2)."""
        return [
            (el.name, el.k, _spring_geometry(kin, ia, ra, ib, rb)[1] - el.l0) for el, ia, ra, ib, rb in self.springs
        ]


def dof_unit(jtype: str, k: int, force: bool) -> str:
    """Unit of coordinate k's generalised force (force=True) or rate of a joint type."""
    linear = jtype == "prismatic" or (jtype == "free" and k < 3)
    if force:
        return "N" if linear else "N.m"
    return "m/s" if linear else "rad/s"


def _body(model, name: str) -> int:
    return 0 if name == "world" else model.body_index[name]


def _add_force(f: Array, kin: Kinematics, i: int, r: Array, F_world: Array) -> None:
    fb = kin.R[i].T @ F_world
    f[i, 3:] += fb
    f[i, :3] += cross(r, fb)


def _spring_geometry(kin: Kinematics, ia, ra, ib, rb) -> tuple[Array, float, float]:
    """(unit vector a -> b, length l [m], rate ldot [m/s]); anchors on body 0 are world points."""
    Pa, Pb = kin.point_position(ia, ra), kin.point_position(ib, rb)
    Va = kin.point_velocity(ia, ra) if ia > 0 else np.zeros(3)
    Vb = kin.point_velocity(ib, rb) if ib > 0 else np.zeros(3)
    d = Pb - Pa
    l = float(np.linalg.norm(d))
    if l < LENGTH_EPS:
        return np.zeros(3), l, 0.0
    e = d / l
    return e, l, float(e @ (Vb - Va))
