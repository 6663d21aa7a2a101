"""Fixed-joint lumping: bodies welded together by fixed joints become one rigid body.

A fixed joint adds no coordinate; the bodies it welds move as one. Merging them is exact, not an
approximation: the spatial inertia of a rigid assembly is the sum of its parts' spatial inertias
(Featherstone, RBDA §2.13, Eq. 2.62-2.63), which in mass, CoM and inertia about the CoM reads

    m = sum m_k,   c = sum m_k c_k / m,
    I_c = sum [R_k I_k R_k^T + m_k (|d_k|^2 E - d_k d_k^T)],   d_k = c_k - c

with each part's pose (R_k, p_k) in the host body's frame and c_k = p_k + R_k c_k' (the
parallel-axis theorem for the shift). Pinocchio and MuJoCo do the same with fixed URDF links.

The merged bodies survive as named frames of their host (their own frames moved with them), so
``frame_pose`` and every output that names a link still find it; joints of the merged bodies'
children, wheels, force-element anchors and loop sides are moved into the host frame. A body
whose joint is fixed to the world stays a body (the host of whatever is welded to it): it never
moves, and the validation does not treat it as a moving body.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..spatial import Array, R_to_rpy
from .description import WORLD, Anchor, BodyWrench, Loop, LoopSide, ModelSpec, Origin, SpringDamper, Thruster


@dataclass(frozen=True)
class Lumped:
    """The lumped description: ``spec`` (one body per rigid assembly), ``host`` (every original
    body name -> the body that now carries it), ``members`` (host name -> the names merged into it,
    itself first, in file order), ``index`` (original body index -> index in ``spec.bodies``) and
    ``problems`` (what cannot be moved into a host frame, as (path, message))."""

    spec: ModelSpec
    host: dict[str, str]
    members: dict[str, tuple[str, ...]]
    index: dict[int, int]
    problems: tuple[tuple[tuple, str], ...] = ()

    @property
    def merged(self) -> dict[str, tuple[str, ...]]:
        """Hosts that absorbed other bodies: host name -> the absorbed names."""
        return {h: m[1:] for h, m in self.members.items() if len(m) > 1}


def lump_fixed(spec: ModelSpec) -> Lumped:
    """Merge every body on a fixed joint to another body into that body (recursively); a body
    fixed to the world stays, with what is welded to it. The tree must be valid (parents exist,
    no cycles): call after the topology checks pass or on a reader's output."""
    by_name = {b.name: b for b in spec.bodies}
    host: dict[str, str] = {}
    pose: dict[str, tuple[Array, Array]] = {}  # body -> (R, p) of its frame in its host's frame

    def resolve(name: str) -> str:
        chain = []
        while name not in host:
            b = by_name[name]
            if b.joint.type != "fixed" or b.parent == WORLD:
                host[name], pose[name] = name, (np.eye(3), np.zeros(3))
                break
            chain.append(name)
            name = b.parent
        for n in reversed(chain):  # parents first: compose the fixed joints' origins
            b = by_name[n]
            Rp, pp = pose[b.parent]
            o = b.joint.origin
            host[n], pose[n] = host[b.parent], (Rp @ o.R, pp + Rp @ o.p)
        return host[name]

    for b in spec.bodies:
        resolve(b.name)
    members: dict[str, list[str]] = {}
    for b in spec.bodies:
        members.setdefault(host[b.name], []).append(b.name)
    if all(len(m) == 1 for m in members.values()):
        return Lumped(spec, host, {h: tuple(m) for h, m in members.items()}, {k: k for k in range(len(spec.bodies))})

    def moved(name: str, origin: Origin) -> Origin:
        """``origin`` given in body ``name``'s frame, in its host's frame."""
        R, p = pose[name]
        return _origin(R @ origin.R, p + R @ origin.p)

    kept = [b for b in spec.bodies if host[b.name] == b.name]
    new_index = {b.name: k for k, b in enumerate(kept)}
    bodies = []
    for b in kept:
        parts = [by_name[n] for n in members[b.name]]
        frames: dict[str, Origin] = dict(b.frames)
        wheels = list(b.wheels)
        for part in parts[1:]:
            R, p = pose[part.name]
            if part.name not in part.frames:
                frames[part.name] = _origin(R, p)
            for fname, fr in part.frames.items():
                frames[fname] = moved(part.name, fr)
            for w in part.wheels:
                wheels.append(
                    replace(
                        w,
                        axis=_tuple(R @ np.asarray(w.axis, float)),
                        position=_tuple(p + R @ np.asarray(w.position, float)),
                    )
                )
        m, c, I = composite(
            [
                (part.mass, np.asarray(part.com, float), np.asarray(part.inertia, float)) + pose[part.name]
                for part in parts
            ]
        )
        joint = b.joint
        parent = b.parent
        if parent != WORLD and host[parent] != parent:  # hangs from a merged body: move its joint
            joint = replace(joint, origin=moved(parent, joint.origin))
            parent = host[parent]
        bodies.append(
            replace(
                b,
                parent=parent,
                joint=joint,
                mass=m,
                com=_tuple(c),
                inertia=tuple(map(tuple, I)),
                frames=frames,
                wheels=tuple(wheels),
            )
        )
    problems: list[tuple[tuple, str]] = []
    forces = tuple(_moved_force(f, k, host, pose, problems) for k, f in enumerate(spec.forces))
    loops = tuple(_moved_loop(lp, host, pose) for lp in spec.loops)
    out = replace(spec, bodies=tuple(bodies), forces=forces, loops=loops)
    index = {k: new_index[host[b.name]] for k, b in enumerate(spec.bodies)}
    return Lumped(out, host, {h: tuple(m) for h, m in members.items()}, index, tuple(problems))


def composite(parts) -> tuple[float, Array, Array]:
    """(m [kg], c [m], I_c [kg m^2]) of rigid parts (m_k, c_k', I_k, R_k, p_k) given in their own
    frames, posed by (R_k, p_k) in a common frame (RBDA Eq. 2.62-2.63, module docstring). A massless
    assembly has its CoM at the frame origin and the sum of the parts' rotated inertias."""
    m = sum(float(pm) for pm, *_ in parts)
    cs = [p + R @ c for _m, c, _I, R, p in parts]
    c = sum(pm * ck for (pm, *_), ck in zip(parts, cs, strict=True)) / m if m > 0 else np.zeros(3)
    I = np.zeros((3, 3))
    for (pm, _c, Ik, R, _p), ck in zip(parts, cs, strict=True):
        d = ck - c
        I += R @ Ik @ R.T + pm * (float(d @ d) * np.eye(3) - np.outer(d, d))
    return m, c, 0.5 * (I + I.T)


def _origin(R: Array, p: Array) -> Origin:
    return Origin(xyz=_tuple(p), rpy=_tuple(R_to_rpy(R)))


def _tuple(x) -> tuple[float, float, float]:
    return tuple(float(v) for v in x)


def _moved_anchor(a: Anchor, host, pose) -> Anchor:
    if a.body == WORLD or host[a.body] == a.body:
        return a
    R, p = pose[a.body]
    return Anchor(host[a.body], _tuple(p + R @ np.asarray(a.point, float)))


def _moved_force(f, k: int, host, pose, problems: list):
    if isinstance(f, SpringDamper):
        return replace(f, a=_moved_anchor(f.a, host, pose), b=_moved_anchor(f.b, host, pose))
    if f.body == WORLD or f.body not in host or host[f.body] == f.body:
        return f
    R, p = pose[f.body]
    point = _tuple(p + R @ np.asarray(f.point, float))
    if isinstance(f, Thruster):
        return replace(f, body=host[f.body], point=point, direction=_tuple(R @ np.asarray(f.direction, float)))
    if isinstance(f, BodyWrench) and f.axes == "body" and not np.allclose(R, np.eye(3), rtol=0, atol=1e-15):
        problems.append(
            (
                ("forces", k, "axes"),
                f"body wrench {f.name!r} acts in the axes of body {f.body!r}, which is welded by fixed joints "
                f"to {host[f.body]!r} with other axes and merged into it: give axes: world, or name body "
                f"{host[f.body]!r} and its axes",
            )
        )
        return f
    return replace(f, body=host[f.body], point=point)


def _moved_loop(lp: Loop, host, pose) -> Loop:
    def side(s: LoopSide) -> LoopSide:
        if s.frame is not None:  # the named frame moved with its body; ``body`` only repeats the host
            return replace(s, body=host.get(s.body, s.body))
        if host.get(s.body, s.body) == s.body:  # the world, or a body that stays
            return s
        R, p = pose[s.body]
        o = Origin(s.point, s.rpy)
        return LoopSide(body=host[s.body], point=_tuple(p + R @ o.p), rpy=_tuple(R_to_rpy(R @ o.R)))

    return replace(lp, a=side(lp.a), b=side(lp.b))
