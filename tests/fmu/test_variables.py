"""The FMU's variable map (mbsfmu/fmu/variables.py): names, units, causalities, dependencies and
parameters, without building an FMU (fast tier)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mbsfmu
from mbsfmu.fmu.variables import UNITS, apply_parameters, flat_name, variable_table
from mbsfmu.sim.simulator import Simulator
from tests.support.paths import MODELS

BUNDLED = sorted(p.stem for p in MODELS.glob("*.yaml"))


def table(name: str, naming: str = "structured"):
    return variable_table(mbsfmu.load_model(MODELS / f"{name}.yaml"), naming)


def test_scara_names():
    names = [v.name for v in table("scara")]
    for expected in (
        "q1.tau",
        "q2.tau",
        "q1.q",
        "q1.qd",
        "q1.qdd",
        "q2.q",
        "p_sys[1]",
        "H_sys[3]",
        "R[2]",
        "Rdot[1]",
        "KE",
        "PE",
        "E",
        "W_in",
        "W_diss",
        "drift.H_sys",
        "drift.E_balance",
        "solver.n_steps",
        "solver.n_rhs",
        "solver.method",
        "solver.h_max",
        "solver.rtol",
        "solver.atol",
        "gravity[2]",
        "link1.mass",
        "link2.com[1]",
        "link1.I[1,2]",
    ):
        assert expected in names
    assert "time" not in names


def test_spacecraft_names():
    t = {v.name: v for v in table("spacecraft")}
    for k in range(1, 8):
        assert f"base.q[{k}]" in t
    assert [n for n in t if n.startswith("base.qd[")] == [f"base.qd[{k}]" for k in range(1, 7)]
    for n in ("rw1.torque", "thr1.thrust", "rw1.Iw", "hinge_l.spring.k", "rw4.qd"):
        assert n in t
    assert t["base.q[1]"].unit == "m" and t["base.q[4]"].unit == "1"
    assert t["base.qd[1]"].unit == "m/s" and t["base.qd[4]"].unit == "rad/s" and t["base.qdd[4]"].unit == "rad/s2"
    assert t["rw1.torque"].causality == "input" and t["rw1.torque"].unit == "N.m"


@pytest.mark.parametrize("name", BUNDLED)
def test_every_variable_is_described(name):
    model = mbsfmu.load_model(MODELS / f"{name}.yaml")
    tab = variable_table(model)
    for v in tab:
        assert v.name.isascii() and v.description and v.description.isascii()
        assert v.type == "Integer" or v.unit in UNITS, v.name
        if v.causality in ("parameter", "input"):
            assert v.start is not None
    inputs = [v.name for v in tab if v.causality == "input"]
    assert inputs == list(Simulator(model).input_names)  # the Simulator's names map directly
    assert len({v.name for v in tab}) == len(tab)


def test_flat_naming():
    names = [v.name for v in table("scara", "flat")]
    assert "q1_tau" in names and "link1_I_1_2" in names and "p_sys_1" in names and "solver_n_steps" in names
    assert all("." not in n and "[" not in n for n in names)
    assert flat_name("push.f[1]") == "push_f_1"
    assert flat_name("'arm-1'.mass") == "arm-1_mass"


def test_quoted_structured_names():
    """Names that are not identifiers become FMI 2.0 q-names."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    b = model.spec.bodies[0]
    spec = dataclasses.replace(model.spec, bodies=(dataclasses.replace(b, name="link-1"), *model.spec.bodies[1:]))
    spec = dataclasses.replace(
        spec, bodies=tuple(dataclasses.replace(x, parent="link-1") if x.parent == "link1" else x for x in spec.bodies)
    )
    names = [v.name for v in variable_table(mbsfmu.Model(spec))]
    assert "'link-1'.mass" in names and "'link-1'.I[1,1]" in names


def test_qdd_dependencies():
    t = {v.name: v for v in table("scara")}
    assert t["q1.qdd"].deps == ("q1.tau", "q2.tau") and t["q1.q"].deps == () and t["KE"].deps == ()
    assert "link1.mass" in t["KE"].init_deps and "gravity[2]" in t["PE"].init_deps
    sc = {v.name: v for v in table("spacecraft")}
    assert set(sc["hinge_l.qdd"].deps) == {"rw1.torque", "rw2.torque", "rw3.torque", "rw4.torque", "thr1.thrust"}


def test_two_arms_on_the_world_do_not_couple():
    """qdd of one world-attached arm does not depend on the other arm's actuators."""
    model = mbsfmu.load_model(MODELS / "scara.yaml")
    b1, b2 = model.spec.bodies
    arm2 = (
        dataclasses.replace(b1, name="other1", joint=dataclasses.replace(b1.joint, name="p1"), frames={}),
        dataclasses.replace(
            b2, name="other2", parent="other1", joint=dataclasses.replace(b2.joint, name="p2"), frames={}
        ),
    )
    t = {v.name: v for v in variable_table(mbsfmu.Model(dataclasses.replace(model.spec, bodies=(b1, b2, *arm2))))}
    assert t["q2.qdd"].deps == ("q1.tau", "q2.tau")
    assert t["p1.qdd"].deps == ("p1.tau", "p2.tau")


@pytest.mark.parametrize("name", BUNDLED)
def test_parameters_at_start_values_rebuild_the_same_model(name):
    """Setting every parameter to its start value (as some hosts do) gives back the file's
    ModelSpec exactly, so the FMU then runs bit for bit the model of the file."""
    model = mbsfmu.load_model(MODELS / f"{name}.yaml")
    params = {v.source[1]: v.start for v in variable_table(model) if v.source[0] == "param"}
    assert apply_parameters(model.spec, params) == model.spec


def test_parameters_change_the_model(rng):
    model = mbsfmu.load_model(MODELS / "spacecraft.yaml")
    spec = apply_parameters(
        model.spec,
        {
            ("mass", "hub"): 600.0,
            ("inertia", "hub", 0, 1): 1.5,
            ("wheel", "rw2"): 0.07,
            ("spring_k", "hinge_l"): 55.0,
            ("gravity", 2): -1.0,
        },
    )
    hub = next(b for b in spec.bodies if b.name == "hub")
    assert hub.mass == 600.0 and hub.inertia[0][1] == hub.inertia[1][0] == 1.5
    assert hub.wheels[1].inertia == 0.07 and spec.gravity == (0.0, 0.0, -1.0)
    assert next(b for b in spec.bodies if b.name == "array_l").joint.spring.k == 55.0
    m2 = mbsfmu.Model(spec)
    q, qd = m2.random_state(rng)
    assert not np.allclose(m2.mass_matrix(q), model.mass_matrix(q), rtol=1e-12, atol=0.0)
