"""Model builders shared by the tests: random trees of every joint type, and Pinocchio twins."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from mbsfmu import Body, Joint, Model, ModelSpec, Origin, Spring
from mbsfmu.engine.spatial import rpy_to_R
from mbsfmu.engine.spec.description import Anchor, BodyWrench, SpringDamper, Thruster

TYPES = ("revolute", "prismatic", "spherical", "fixed")


def random_inertia(rng: np.random.Generator) -> tuple:
    """A physically valid inertia about the CoM: R diag(I) R^T with triangle-valid moments."""
    a, b = rng.uniform(0.05, 1.0, 2)
    moments = np.array([a, b, rng.uniform(abs(a - b) + 0.01, a + b)])
    R = rpy_to_R(rng.uniform(-np.pi, np.pi, 3))
    return tuple(map(tuple, R @ np.diag(moments) @ R.T))


def random_tree(rng: np.random.Generator, n: int, free_base: bool = True, types=TYPES, springs: bool = False) -> Model:
    """A branched tree of n bodies: body 0 on a free (or revolute) joint, the others on random
    joints with random parents, placements, axes and mass properties; listed in shuffled order."""
    bodies = []
    for k in range(n):
        jtype = ("free" if free_base else "revolute") if k == 0 else types[rng.integers(len(types))]
        parent = "world" if k == 0 else f"b{rng.integers(k)}"
        axis = rng.normal(size=3)
        spring = (
            Spring(k=rng.uniform(0, 5), d=rng.uniform(0, 1), q0=rng.uniform(-1, 1))
            if springs and jtype in ("revolute", "prismatic")
            else None
        )
        bodies.append(
            Body(
                name=f"b{k}",
                parent=parent,
                joint=Joint(
                    name=f"j{k}",
                    type=jtype,
                    axis=tuple(axis / np.linalg.norm(axis)),
                    origin=Origin(xyz=tuple(rng.uniform(-0.5, 0.5, 3)), rpy=tuple(rng.uniform(-np.pi, np.pi, 3))),
                    spring=spring,
                ),
                mass=float(rng.uniform(0.5, 3.0)),
                com=tuple(rng.uniform(-0.3, 0.3, 3)),
                inertia=random_inertia(rng),
                frames={f"f{k}": Origin(xyz=tuple(rng.uniform(-0.5, 0.5, 3)))},
            )
        )
    order = rng.permutation(n)
    return Model(
        ModelSpec(name="random", bodies=tuple(bodies[k] for k in order), gravity=tuple(rng.uniform(-10, 10, 3)))
    )


def with_force_elements(model: Model, rng: np.random.Generator, springs: int = 3) -> Model:
    """The model with random force elements added: ``springs`` point spring-dampers between random
    bodies or the world (random anchors, k, d, l0), a thruster and a body wrench in world and in
    body axes on random bodies."""
    names = ["world", *model.body_names]
    bodies = names[1:]

    def point():
        return tuple(rng.uniform(-0.5, 0.5, 3))

    elements = []
    for k in range(springs):
        a, b = rng.choice(len(names), 2, replace=False)
        elements.append(
            SpringDamper(
                name=f"s{k}",
                a=Anchor(body=names[a], point=point()),
                b=Anchor(body=names[b], point=point()),
                k=float(rng.uniform(1, 10)),
                d=float(rng.uniform(0, 2)),
                l0=float(rng.uniform(0, 1)),
            )
        )
    elements.append(
        Thruster(name="t0", body=str(rng.choice(bodies)), point=point(), direction=tuple(rng.normal(size=3)))
    )
    for k, axes in enumerate(("world", "body")):
        elements.append(BodyWrench(name=f"w{k}", body=str(rng.choice(bodies)), point=point(), axes=axes))
    return Model(replace(model.spec, forces=model.spec.forces + tuple(elements)), source=f"{model.source} + forces")
