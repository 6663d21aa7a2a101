"""The same tree built in Pinocchio (test-only oracle) and state conversion to its conventions."""

from __future__ import annotations

import numpy as np
import pinocchio as pin

from mbsfmu import Model
from mbsfmu.engine import joints


def to_pinocchio(model: Model) -> pin.Model:
    """Pinocchio model of the tree: one Pinocchio joint per moving joint; bodies on fixed joints
    are appended to the joint they hang from (their frames composed)."""
    t = model.tree
    pm = pin.Model()
    pm.gravity.linear = model.gravity
    host = {0: (0, pin.SE3.Identity())}  # our body -> (pin joint id, body frame in that joint frame)
    for i in range(1, model.N + 1):
        pj, M_p = host[int(t.parent[i])]
        place = M_p * pin.SE3(t.R_tree[i], t.p_tree[i])
        inertia = pin.Inertia(t.mass[i], t.com[i], t.I_c[i])
        jt = t.jtype[i]
        if jt == joints.FIXED:
            pm.appendBodyToJoint(pj, inertia, place)
            host[i] = (pj, place)
            continue
        jm = {
            joints.REVOLUTE: lambda i=i: pin.JointModelRevoluteUnaligned(t.axis[i]),
            joints.PRISMATIC: lambda i=i: pin.JointModelPrismaticUnaligned(t.axis[i]),
            joints.SPHERICAL: pin.JointModelSpherical,
            joints.FREE: pin.JointModelFreeFlyer,
        }[jt]()
        jid = pm.addJoint(pj, jm, place, model.joint_names[i - 1])
        pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        host[i] = (jid, pin.SE3.Identity())
    return pm


def q_to_pin(model: Model, q: np.ndarray) -> np.ndarray:
    """Our q (quaternions w x y z) to Pinocchio's (x y z w); joint order is the same."""
    t = model.tree
    out = []
    for i in range(1, model.N + 1):
        qi = q[t.iq[i] : t.iq[i] + t.nq[i]]
        if t.jtype[i] == joints.SPHERICAL:
            qi = np.r_[qi[1:], qi[0]]
        elif t.jtype[i] == joints.FREE:
            qi = np.r_[qi[:3], qi[4:], qi[3]]
        out.append(qi)
    return np.concatenate(out)


class PinTwin:
    """Pinocchio's own reading of a URDF file, with our coordinates mapped onto its joints by name
    (Pinocchio orders siblings differently; its continuous joints take (cos, sin) in q; its
    quaternions are (x, y, z, w), ours (w, x, y, z); free-joint rates are [linear; angular] in body
    axes in both)."""

    def __init__(self, model: Model, path, floating_base: bool):
        self.model = model
        self.pm = (
            pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
            if floating_base
            else pin.buildModelFromUrdf(str(path))
        )
        self.pd = self.pm.createData()
        t = model.tree
        self.moving = [i for i in range(1, model.N + 1) if t.nv[i] > 0]
        self.pj = {i: self.pm.joints[self.pm.getJointId(model.joint_names[i - 1])] for i in self.moving}
        assert sorted(self.pm.names[1:]) == sorted(model.joint_names[i - 1] for i in self.moving)
        self.perm = np.zeros(model.nv, dtype=int)  # our v index -> Pinocchio's v index
        for i in self.moving:
            self.perm[t.iv[i] : t.iv[i] + t.nv[i]] = range(self.pj[i].idx_v, self.pj[i].idx_v + self.pj[i].nv)

    def q(self, q: np.ndarray) -> np.ndarray:
        t, out = self.model.tree, pin.neutral(self.pm)
        for i in self.moving:
            qi, J = q[t.iq[i] : t.iq[i] + t.nq[i]], self.pj[i]
            if t.jtype[i] == joints.FREE:
                qi = np.r_[qi[:3], qi[4:], qi[3]]
            elif J.nq == 2:  # continuous: (cos, sin)
                qi = np.array([np.cos(qi[0]), np.sin(qi[0])])
            out[J.idx_q : J.idx_q + J.nq] = qi
        return out

    def v(self, v: np.ndarray) -> np.ndarray:
        out = np.zeros(self.model.nv)
        out[self.perm] = v
        return out
