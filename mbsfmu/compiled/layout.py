"""The compiled model's memory: a Model packed once into one flat buffer with its Data.

A numba call pays ~0.1 us to unbox each array argument (it wraps each in a new MemInfo), so a
kernel taking the ~40 arrays of a tree, its force elements and its work buffers separately would
spend ~4 us before its first flop, longer than a whole 7-DoF ABA. Everything therefore lives in
one buffer of 8-byte words (Pinocchio's Model/Data split kept as two regions of it):

    buf  header | topo | elem  (int64 words)  SI | R_tree | G3 | elem_f | vec   the Model, constant
         W66 | W6 | W33 | W3 | Wx | S66                                          the Data, overwritten

and every kernel takes (buf, ...); ``kernels.views`` turns it into these arrays (int64 ones by
reinterpreting their words), the same ones ``Packed`` exposes here as numpy views:

| array | shape | rows |
|---|---|---|
| topo | (6, N+1) int | PARENT, JTYPE, IQ, NQ, IV, NV: the Tree's parent, jtype, iq, nq, iv, nv |
| elem | (n_elem, 4) int | one row per element: [kind, a, b, iu] (see the kinds below) |
| SI | (2, N+1, 6, 6) | S (motion subspace, first nv columns), I (spatial inertia) |
| R_tree | (N+1, 3, 3) | joint frame in the parent body frame |
| G3 | (2, N+1, 3) | G_P_TREE (joint frame origin [m]), G_AXIS (joint axis) |
| elem_f | (n_elem, 9) | the element's numbers (see the kinds below) |
| vec | (6 + nv,) | a_grav (6,) [m/s^2], then damping (nv,) [N m s/rad or N s/m] |
| W66 | (4, N+1, 6, 6) | W_IA, W_U, W_DINV, W_IC: articulated inertia IA, U_i = IA S, D_i^-1, composite inertia Ic |
| W6 | (7, N+1, 6) | W_V, W_C, W_A, W_F, W_PA, W_U6 (u_i), W_FEXT: spatial vectors per body |
| W33 | (2, N+1, 3, 3) | W_E (Xup_i rotation E), W_R (body axes in world axes) |
| W3 | (2, N+1, 3) | W_XR (Xup_i translation r), W_P (body origin in world [m]) |
| Wx | (8, nx) | X_TAU, X_TAU_U (first nv entries), X_K1..X_K4, X_XS, X_XN: RK4 stages |
| S66 | (6, 6, 6) | scratch: S_IA (Ia), S_UD (U D^-1), S_D, S_L (D and its Cholesky), S_F (CRBA's F), S_VEC |

Element kinds (elem row [kind, a, b, iu]; elem_f row of 9 numbers), in the order the Python
reference sums them (``ForceElements``: thrusters, then wrenches, then spring-dampers):

| kind | ints a, b, iu | numbers |
|---|---|---|
| JSPRING | q index, v index, - | k, q0 |
| ACT | input index, v index, - | - |
| QUAT | first index of the quaternion in q, -, - | - |
| THRUSTER | body, -, input index | point (3), unit direction (3) |
| WRENCH | body, world axes (1/0), first input index | point (3) |
| SPRING | body a, body b, - | point a (3), point b (3), k, d, l0 |
"""
from __future__ import annotations

import numpy as np

from .. import joints
from ..forces import ForceElements

PARENT, JTYPE, IQ, NQ, IV, NV = range(6)                       # topo rows
G_P_TREE, G_AXIS = range(2)                                    # G3 rows
W_IA, W_U, W_DINV, W_IC = range(4)                             # W66 rows
W_V, W_C, W_A, W_F, W_PA, W_U6, W_FEXT = range(7)              # W6 rows
W_E, W_R = range(2)                                            # W33 rows
W_XR, W_P = range(2)                                           # W3 rows
X_TAU, X_TAU_U, X_K1, X_K2, X_K3, X_K4, X_XS, X_XN = range(8)  # Wx rows
S_IA, S_UD, S_D, S_L, S_F, S_VEC = range(6)                    # S66 scratch
JSPRING, ACT, QUAT, THRUSTER, WRENCH, SPRING = range(6)        # elem kinds

HEADER = ("N", "nq", "nv", "nx", "n_u", "n_elem", "has_forces")
N_HEADER = len(HEADER)


def sizes_of(N: int, nv: int, nx: int, n_elem: int) -> dict[str, tuple[int, ...]]:
    """Shapes of the arrays, in buffer order after the header (``kernels.views`` mirrors it)."""
    return {"topo": (6, N + 1), "elem": (n_elem, 4),
            "SI": (2, N + 1, 6, 6), "R_tree": (N + 1, 3, 3), "G3": (2, N + 1, 3), "elem_f": (n_elem, 9),
            "vec": (6 + nv,),
            "W66": (4, N + 1, 6, 6), "W6": (7, N + 1, 6), "W33": (2, N + 1, 3, 3), "W3": (2, N + 1, 3),
            "Wx": (8, nx), "S66": (6, 6, 6)}


INT_ARRAYS = ("topo", "elem")


class Packed:
    """A Model's compiled buffer ``buf`` (float64 words; header, topo and elem hold int64), with
    numpy views of its arrays by name (``packed["SI"][1]`` is the spatial inertias)."""

    def __init__(self, model):
        t = model.tree
        forces = ForceElements(model)
        N, nq, nv = model.N, model.nq, model.nv
        rows_i, rows_f = [], []

        def element(kind, a=0, b=0, iu=0, numbers=()):
            rows_i.append((kind, a, b, iu))
            rows_f.append(tuple(numbers) + (0.0,) * (9 - len(numbers)))

        for i, b in enumerate(model.bodies, start=1):
            if b.joint.spring is not None:
                element(JSPRING, int(t.iq[i]), int(t.iv[i]), numbers=(b.joint.spring.k, b.joint.spring.q0))
        for iu, dof in zip(forces.layout.tau_index, forces.layout.tau_dof):
            element(ACT, int(iu), int(dof))
        for i in range(1, N + 1):
            if t.jtype[i] in (joints.SPHERICAL, joints.FREE):
                element(QUAT, int(t.iq[i]) + (3 if t.jtype[i] == joints.FREE else 0))
        for iu, i, r, d in forces.thrusters:
            element(THRUSTER, i, 0, iu, (*r, *d))
        for iu, i, r, world in forces.wrenches:
            element(WRENCH, i, int(world), iu, tuple(r))
        for el, ia, ra, ib, rb in forces.springs:
            element(SPRING, ia, ib, 0, (*ra, *rb, el.k, el.d, el.l0))
        has_forces = int(bool(forces.thrusters or forces.wrenches or forces.springs))
        self.sizes = dict(N=N, nq=nq, nv=nv, nx=nq + nv + 2, n_u=len(forces.layout.names), n_elem=len(rows_i),
                          has_forces=has_forces)
        self.input_names = forces.layout.names
        shapes = sizes_of(N, nv, nq + nv + 2, len(rows_i))
        offsets, end = {}, N_HEADER
        for name, shape in shapes.items():
            offsets[name] = end
            end += int(np.prod(shape, dtype=np.int64))
        self.buf = np.zeros(end)
        words = self.buf.view(np.int64)
        words[:N_HEADER] = [self.sizes[h] for h in HEADER]
        self.views = {name: (words if name in INT_ARRAYS else self.buf)
                      [offsets[name]: offsets[name] + int(np.prod(shape, dtype=np.int64))].reshape(shape)
                      for name, shape in shapes.items()}
        v = self.views
        v["topo"][:] = (t.parent, t.jtype, t.iq, t.nq, t.iv, t.nv)
        if rows_i:
            v["elem"][:] = rows_i
            v["elem_f"][:] = rows_f
        v["SI"][0], v["SI"][1] = t.S, t.I
        v["R_tree"][:] = t.R_tree
        v["G3"][G_P_TREE], v["G3"][G_AXIS] = t.p_tree, t.axis
        v["vec"][:6], v["vec"][6:] = t.a_grav, model.damping

    def __getitem__(self, name: str) -> np.ndarray:
        return self.views[name]
