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
