"""The model tables of the C core: one int32 table and one float64 table built from a Model, here
and nowhere else (the Python binding passes them to ``mbs_sim_init``; the native FMU compiles
them in as constant arrays, ``c_source``). model.c reads them; both carry MBS_TABLES_VERSION and
a 64-bit hash of the model (blake2b of both tables with the hash words zeroed).

int32 table ``ti`` (N bodies, row 0 the world; offsets in int32 words):

| words | what |
|---|---|
| 0..15 | header: VERSION, n_ti, n_tf, hash_lo, hash_hi, N, nq, nv, n_u, n_elem, n_loops, n_rows, has_forces, names_off, names_len, 0 |
| 16 + k (N+1) | body row k = PARENT, JTYPE, IQ, NQ, IV, NV, WHEEL (1: the rotor body of a reaction wheel) |
| then n_elem x 4 | element rows [kind, a, b, iu] (kinds below) |
| then n_loops x 5 | cut joints: [kind (0 ball, 1 revolute, 2 prismatic, 3 planar, 4 coupling), body a, body b, first row, rows] (coupling: a follower, b leader body) |
| names_off .. | body names then joint names, each NUL-terminated, packed 4 bytes a word (little end first) |

float64 table ``tf``:

| words | what |
|---|---|
| 0..7 | header: VERSION, n_tf, N, nv, n_elem, hash_lo, hash_hi, 0 |
| 8 + 28 i | body i (0..N): R_tree (9, row-major), p_tree (3) [m], axis (3), mass [kg], com (3) [m], I_c (9) [kg m^2] (raw mass properties: the spatial inertia is rebuilt per instance, so parameters can change) |
| then 3 | gravity [m/s^2], world axes |
| then nv | joint damping d [N m s/rad or N s/m] |
| then n_elem x 9 | element numbers |
| then nq + nv | the model's initial q, qd (closed: ``Model.initial_state()``) |
| then 1 | the loops' length scale L [m] (``LoopSet.scale``; 1 without loops) |
| then n_loops x 33 | cut joint: ra (3), rb (3) [m], Ea (9), Eb (9) (frame axes as columns, row-major), axis (3), t1 (3), t2 (3); coupling: multiplier, offset, 31 zeros |

Elements, in the order the Python reference sums them (``ForceElements``: thrusters, then
wrenches, then spring-dampers):

| kind | ints a, b, iu | numbers |
|---|---|---|
| JSPRING 0 | q index, v index, body | k, q0 |
| ACT 1 | input index, v index, - | - |
| QUAT 2 | first index of the quaternion in q, -, - | - |
| THRUSTER 3 | body, -, input index | point (3), unit direction (3) |
| WRENCH 4 | body, world axes (1/0), first input index | point (3) |
| SPRING 5 | body a, body b, - | point a (3), point b (3), k, d, l0 |
"""  # noqa: E501 - a markdown table

from __future__ import annotations

import hashlib

import numpy as np

from .. import joints
from ..forces import ForceElements

VERSION = 1  # MBS_TABLES_VERSION of mbs_core.h
N_HEAD_I, N_HEAD_F = 16, 8
BODY_ROWS = ("parent", "jtype", "iq", "nq", "iv", "nv", "wheel")
BODY_F = 28  # float64 words per body
JSPRING, ACT, QUAT, THRUSTER, WRENCH, SPRING = range(6)


class Tables:
    """(ti, tf): the int32 and float64 tables of a Model, with its sizes and hash."""

    def __init__(self, model, tree_only: bool = False):
        """tree_only: leave the closed loops out (for the tree algorithms ABA, RNEA, CRBA of a
        model with loops, which act on the spanning tree)."""
        t = model.tree
        forces = ForceElements(model)
        N, nq, nv = model.N, model.nq, model.nv
        rows_i, rows_f = [], []

        def element(kind, a=0, b=0, iu=0, numbers=()):
            rows_i.append((kind, a, b, iu))
            rows_f.append(tuple(numbers) + (0.0,) * (9 - len(numbers)))

        for i, b in enumerate(model.bodies, start=1):
            if b.joint.spring is not None:
                element(JSPRING, int(t.iq[i]), int(t.iv[i]), i, (b.joint.spring.k, b.joint.spring.q0))
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
        n_elem = len(rows_i)
        has_forces = int(bool(forces.thrusters or forces.wrenches or forces.springs))
        with_loops = bool(model.loops) and not tree_only
        n_loops = len(model.loops.closures) if with_loops else 0
        n_rows = int(model.loops.m) if with_loops else 0
        names = b"".join(n.encode() + b"\0" for n in (*model.body_names, *model.joint_names))
        names += b"\0" * (-len(names) % 4)
        wheel_bodies = {i for i, _w in model.wheels.values()}

        names_off = N_HEAD_I + 7 * (N + 1) + 4 * n_elem + 5 * n_loops
        n_ti = names_off + len(names) // 4
        ti = np.zeros(n_ti, dtype=np.int32)
        body = np.array(
            [t.parent, t.jtype, t.iq, t.nq, t.iv, t.nv, [int(i in wheel_bodies) for i in range(N + 1)]], dtype=np.int32
        )
        ti[N_HEAD_I : N_HEAD_I + body.size] = body.ravel()
        if n_elem:
            ti[N_HEAD_I + body.size : N_HEAD_I + body.size + 4 * n_elem] = np.array(rows_i, dtype=np.int32).ravel()
        closures = model.loops.closures if with_loops else ()
        kinds = {"ball": 0, "revolute": 1, "prismatic": 2, "planar": 3, "coupling": 4}
        for k, c in enumerate(closures):
            o = N_HEAD_I + body.size + 4 * n_elem + 5 * k
            ti[o : o + 5] = (kinds[c.kind], c.a, c.b, c.rows.start, c.rows.stop - c.rows.start)
        ti[names_off:] = np.frombuffer(names, dtype="<i4")

        n_tf = N_HEAD_F + BODY_F * (N + 1) + 3 + nv + 9 * n_elem + nq + nv + 1 + 33 * n_loops
        tf = np.zeros(n_tf)
        bf = tf[N_HEAD_F : N_HEAD_F + BODY_F * (N + 1)].reshape(N + 1, BODY_F)
        bf[:, 0:9] = t.R_tree.reshape(N + 1, 9)
        bf[:, 9:12] = t.p_tree
        bf[:, 12:15] = t.axis
        bf[:, 15] = t.mass
        bf[:, 16:19] = t.com
        bf[:, 19:28] = t.I_c.reshape(N + 1, 9)
        o = N_HEAD_F + BODY_F * (N + 1)
        tf[o : o + 3] = model.gravity
        tf[o + 3 : o + 3 + nv] = model.damping
        if n_elem:
            tf[o + 3 + nv : o + 3 + nv + 9 * n_elem] = np.array(rows_f, dtype=float).ravel()
        q0, qd0 = model.initial_state()
        o = N_HEAD_F + BODY_F * (N + 1) + 3 + nv + 9 * n_elem
        tf[o : o + nq], tf[o + nq : o + nq + nv] = q0, qd0
        tf[o + nq + nv] = model.loops.scale if with_loops else 1.0
        for k, c in enumerate(closures):
            tf[o + nq + nv + 1 + 33 * k : o + nq + nv + 1 + 33 * (k + 1)] = (
                np.r_[c.coupling[4:], np.zeros(31)]  # coupling: multiplier, offset (bodies: follower, leader)
                if c.coupling is not None
                else np.concatenate((c.ra, c.rb, np.ravel(c.Ea), np.ravel(c.Eb), c.axis, c.t1, c.t2))
            )

        ti[:16] = (
            VERSION,
            n_ti,
            n_tf,
            0,
            0,
            N,
            nq,
            nv,
            len(forces.layout.names),
            n_elem,
            n_loops,
            n_rows,
            has_forces,
            names_off,
            len(names),
            0,
        )
        tf[:8] = (VERSION, n_tf, N, nv, n_elem, 0.0, 0.0, 0.0)
        digest = hashlib.blake2b(ti.tobytes() + tf.tobytes(), digest_size=8).digest()
        self.model_hash = int.from_bytes(digest, "little")
        lo, hi = self.model_hash & 0xFFFFFFFF, self.model_hash >> 32
        ti[3:5] = np.array([lo, hi], dtype=np.uint32).view(np.int32)
        tf[5:7] = (lo, hi)
        ti.flags.writeable = False
        tf.flags.writeable = False
        self.ti, self.tf = ti, tf
        self.sizes = {
            "N": N,
            "nq": nq,
            "nv": nv,
            "nx": nq + nv + 2,
            "n_u": len(forces.layout.names),
            "n_elem": n_elem,
            "n_loops": n_loops,
            "n_rows": n_rows,
            "n_springs": sum(r[0] in (JSPRING, SPRING) for r in rows_i),
        }
        self.input_names = forces.layout.names


def tables(model) -> Tables:
    """The tables of a Model (built on each call; cheap: microseconds per body)."""
    return Tables(model)


def c_source(model, prefix: str) -> str:
    """The tables as C99 source: ``const int32_t <prefix>_ti[]``, ``const double <prefix>_tf[]`` (exact:
    doubles as hexadecimal literals) and their lengths ``<prefix>_n_ti``, ``<prefix>_n_tf``, plus
    ``<prefix>_MODEL_HASH`` (for the FMU generator; the one builder is ``Tables``)."""
    if not prefix.isidentifier():
        raise ValueError(f"prefix {prefix!r} is not a C identifier")
    tb = Tables(model)

    def rows(values, fmt, per_line):
        items = [fmt(v) for v in values]
        return ",\n".join("    " + ", ".join(items[k : k + per_line]) for k in range(0, len(items), per_line))

    return (
        f"/* model tables of {model.name!r}, generated by mbsfmu.engine.native.tables (layout: tables.py) */\n"
        "#include <stddef.h>\n#include <stdint.h>\n"
        f"#define {prefix}_MODEL_HASH UINT64_C(0x{tb.model_hash:016x})\n"
        f"const size_t {prefix}_n_ti = {tb.ti.size};\n"
        f"const size_t {prefix}_n_tf = {tb.tf.size};\n"
        f"const int32_t {prefix}_ti[{tb.ti.size}] = {{\n"
        + rows(tb.ti.tolist(), lambda v: f"{v}" if v != -(2**31) else "(-2147483647 - 1)", 12)
        + "\n};\n"
        f"const double {prefix}_tf[{tb.tf.size}] = {{\n"
        + rows(tb.tf.tolist(), lambda v: float(v).hex() if v != 0 else "0.0", 4)
        + "\n};\n"
    )
