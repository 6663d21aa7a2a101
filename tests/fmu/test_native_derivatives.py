"""fmi2GetDirectionalDerivative of the native FMU, called by fmpy: the Real outputs with respect to
the Real inputs at a communication point (and in initialization mode), against central differences
of the outputs taken with fmi2GetFMUstate/fmi2SetFMUstate, and against the ModelStructure's Outputs
dependencies.

Tolerance: at a fixed state the outputs are affine in the inputs (qdd = M^-1 (B u + J^T f_u u) +
terms without u; the states q, qd and everything computed from them do not change), so the central
difference (y(u + h e_k) - y(u - h e_k)) / (2 h) has no truncation error, only the rounding of the
two outputs: each carries ~1e3 eps |y| (the ABA's ~1e3 operations on these small models), so the
quotient is exact to 1e3 eps max|y| / h; with h = 1e-2 max(1, |u_k|) that is 2e-11 max|y|. The
analytic value is compared with rtol 1e-9 and atol 1e3 eps max|y| / h.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tests.support.native_fmu import description

pytestmark = pytest.mark.integration

EPS = np.finfo(float).eps
# two world-attached trees (M^-1 block diagonal: the ModelStructure's zeros), every input kind
# (joint actuators 1- and 3-DoF, a wheel motor, a thruster, a body-axes and a world-axes wrench),
# joint and point spring-dampers (one spring joins the trees: a force, not an inertial coupling)
TWO_TREES = """
version: 1
name: two_trees
gravity: [0, 0, -9.81]
bodies:
  - name: arm
    parent: world
    joint: {name: q1, type: revolute, axis: [0, 1, 0], spring: {k: 5.0, d: 0.3, q0: 0.1}}
    mass: 1.2
    com: [0.4, 0, 0]
    inertia: {Ixx: 0.01, Iyy: 0.08, Izz: 0.08}
  - name: hand
    parent: arm
    joint: {name: wrist, type: spherical, origin: {xyz: [0.8, 0, 0]}}
    mass: 0.6
    com: [0.1, 0.02, -0.03]
    inertia: {Ixx: 0.004, Iyy: 0.005, Izz: 0.006, Ixy: 0.0005}
  - name: hub
    parent: world
    joint: {name: float, type: free, origin: {xyz: [2, 0, 0]}}
    mass: 3.0
    com: [0.01, 0, 0.02]
    inertia: {Ixx: 0.2, Iyy: 0.3, Izz: 0.25}
    wheels:
      - {name: rw1, axis: [0.6, 0.8, 0], inertia: 0.02, position: [0, 0.1, 0]}
forces:
  - {type: spring, name: s1, a: {body: hand, point: [0.2, 0, 0]}, b: {body: hub, point: [0, 0, 0.3]},
     k: 40.0, d: 0.5, l0: 0.6}
  - {type: spring, name: s2, a: {body: arm, point: [0.8, 0, 0]}, b: {body: world, point: [0, 0, 1]},
     k: 20.0, d: 0.2, l0: 0.5}
  - {type: thruster, name: thr1, body: hub, point: [0, 0.2, 0.1], direction: [0, 0.6, 0.8]}
  - {type: wrench, name: push, body: hub, point: [0.1, 0, 0], axes: world}
  - {type: wrench, name: grip, body: hand, point: [0.2, 0, 0], axes: body}
initial:
  q: {q1: 0.3, wrist: [0.9, 0.1, 0.3, 0.3]}
  qd: {q1: 0.5, wrist: [0.2, -0.4, 0.1], float: [0.1, 0.2, 0, 0.3, -0.2, 0.1]}
"""
MODELS = ["scara", "spacecraft", "fourbar", "branched_robot", "two_trees"]  # + wheels, thruster; a loop


def real_vars(fmu):
    """(outputs, inputs): [(name, vr)] of the Real outputs and inputs, and {output: ([input deps],
    [their kinds])} (the inputs among the listed knowns; Model Exchange also lists the states)."""
    root = description(fmu)
    svs = list(root.find("ModelVariables"))
    outs = [(sv.get("name"), int(sv.get("valueReference"))) for sv in svs if sv.get("causality") == "output"]
    outs = [(n, r) for n, r in outs if svs[r].find("Real") is not None]
    ins = [(sv.get("name"), int(sv.get("valueReference"))) for sv in svs if sv.get("causality") == "input"]
    deps = {}
    for u in root.find("ModelStructure").find("Outputs"):
        name = svs[int(u.get("index")) - 1].get("name")
        listed = [svs[int(i) - 1] for i in u.get("dependencies").split()]
        kinds = (u.get("dependenciesKind") or "").split()
        pairs = [(sv.get("name"), k) for sv, k in zip(listed, kinds) if sv.get("causality") == "input"]
        deps[name] = ([n for n, _k in pairs], [k for _n, k in pairs])
    return outs, ins, deps


@pytest.fixture(scope="module")
def model_arg(tmp_path_factory):
    """model name -> what NativeFmus.fmu takes: a bundled model's name, or TWO_TREES's file."""
    path = tmp_path_factory.mktemp("dd_models") / "two_trees.yaml"
    path.write_text(TWO_TREES, encoding="utf-8")
    return lambda model: str(path) if model == "two_trees" else model


@pytest.fixture(scope="module")
def started(native, model_arg):
    """start(model, rng, init_only) -> (instance, outputs, inputs, deps, u0): an fmpy instance with
    random inputs u0 in [-1, 1], in initialization mode or stepped 0.2 s to a generic state."""
    fmpy = pytest.importorskip("fmpy")
    from fmpy.fmi2 import FMU2Slave

    made = {}

    def start(model, rng, init_only=False):
        fmu = native.fmu(model_arg(model))
        outs, ins, deps = real_vars(fmu)
        md = fmpy.read_model_description(fmu)
        d = native.extracted(fmu)
        s = FMU2Slave(
            guid=md.guid,
            unzipDirectory=str(d),
            modelIdentifier=md.coSimulation.modelIdentifier,
            instanceName=f"dd_{model}",
        )
        s.instantiate()
        s.setupExperiment(startTime=0.0)
        s.enterInitializationMode()
        u0 = rng.uniform(-1.0, 1.0, len(ins))
        if not init_only:
            s.exitInitializationMode()
            s.setReal([r for _n, r in ins], list(u0))
            for k in range(20):  # 0.2 s under the inputs: qd != 0, a configuration away from the start
                s.doStep(k * 1e-2, 1e-2)
        s.setReal([r for _n, r in ins], list(u0))
        made.setdefault(model, []).append(s)
        return s, outs, ins, deps, u0

    yield start
    for slaves in made.values():
        for s in slaves:
            s.freeInstance()


def jacobians(s, outs, ins, u0):
    """(J, Jfd, ymax, h): the analytic d(outputs)/d(inputs) column by column and the central
    differences with get/set FMU state."""
    y_refs = [r for _n, r in outs]
    state = s.getFMUState()
    J = np.array([s.getDirectionalDerivative(y_refs, [r], [1.0]) for _n, r in ins]).T
    Jfd, ymax, hs = np.zeros_like(J), 0.0, []
    for k, (_n, r) in enumerate(ins):
        h = 1e-2 * max(1.0, abs(u0[k]))
        ys = []
        for sign in (1.0, -1.0):
            s.setFMUState(state)
            s.setReal([r], [u0[k] + sign * h])
            ys.append(np.array(s.getReal(y_refs)))
        s.setFMUState(state)
        Jfd[:, k] = (ys[0] - ys[1]) / (2 * h)
        ymax = max(ymax, float(np.max(np.abs(ys))))
        hs.append(h)
    s.freeFMUState(state)
    return J, Jfd, ymax, min(hs)


@pytest.mark.parametrize("init_only", [False, True], ids=["step_mode", "initialization_mode"])
@pytest.mark.parametrize("model", MODELS)
def test_directional_derivative_equals_central_differences(started, rng, model, init_only):
    s, outs, ins, deps, u0 = started(model, rng, init_only)
    assert ins, f"{model} has no inputs"
    J, Jfd, ymax, h = jacobians(s, outs, ins, u0)
    np.testing.assert_allclose(J, Jfd, rtol=1e-9, atol=1e3 * EPS * max(ymax, 1.0) / h)
    names = [n for n, _r in outs]
    qdd = np.array([".qdd" in n for n in names])
    assert np.all(J[~qdd] == 0.0) and np.all(Jfd[~qdd] == 0.0)  # states and what follows from them: 0
    assert np.max(np.abs(J[qdd])) > 1e-3  # the inputs do move the accelerations
    # a seed over every input at once is the sum of the columns (the derivative is linear in the seed)
    v = rng.uniform(-1.0, 1.0, len(ins))
    Jv = s.getDirectionalDerivative([r for _n, r in outs], [r for _n, r in ins], list(v))
    np.testing.assert_allclose(Jv, J @ v, rtol=1e-12, atol=1e-12 * np.max(np.abs(J)))


@pytest.mark.parametrize("model", MODELS)
def test_model_structure_matches_the_derivatives(started, rng, native, model_arg, model):
    """Outputs' dependencies are exactly the inputs with a nonzero derivative at a generic state,
    each of kind "dependent" (qdd = M(q)^-1 B u: linear in u with a state-dependent factor, FMI 2.0
    fmi2VariableDependency.xsd); the native FMU declares providesDirectionalDerivative."""
    cs = description(native.fmu(model_arg(model))).find("CoSimulation")
    assert cs.get("providesDirectionalDerivative") == "true"
    s, outs, ins, deps, u0 = started(model, rng)
    J, _Jfd, _ymax, _h = jacobians(s, outs, ins, u0)
    for i, (name, _r) in enumerate(outs):
        listed, kinds = deps[name]
        nonzero = [ins[k][0] for k in range(len(ins)) if J[i, k] != 0.0]
        assert nonzero == listed, name
        assert kinds == ["dependent"] * len(listed), name
    if model == "two_trees":  # the other tree's inputs: listed nowhere, derivative exactly 0
        arm = [i for i, (n, _r) in enumerate(outs) if n.startswith(("q1.qdd", "wrist.qdd"))]
        hub = [k for k, (n, _r) in enumerate(ins) if n.startswith(("rw1.", "thr1.", "push."))]
        assert len(arm) == 4 and len(hub) == 8 and np.all(J[np.ix_(arm, hub)] == 0.0)


@pytest.mark.parametrize("model", ["fourbar", "two_trees"])
def test_the_derivative_leaves_the_trajectory_bit_for_bit(started, rng, model):
    """A derivative call reads: the next steps (outputs, solver statistics) are the same bits with
    or without it, loops (whose multipliers the call's solve overwrites) and point springs (switched
    off inside the call) included."""
    s, outs, ins, _deps, _u0 = started(model, rng)
    y_refs, ins_refs = [r for _n, r in outs], [r for _n, r in ins]
    stats = statistics_refs(s)
    state = s.getFMUState()
    runs = []
    for with_dd in (False, True):
        s.setFMUState(state)
        s.getReal(y_refs)  # the lazy outputs computed first, as a host reading them would
        if with_dd:
            s.getDirectionalDerivative(y_refs, ins_refs, [1.0] * len(ins_refs))
        t = s.getRealStatus(2)  # fmi2LastSuccessfulTime
        for k in range(3):
            s.doStep(t + k * 1e-2, 1e-2)
        runs.append((s.getReal(y_refs), s.getInteger(stats)))
    s.freeFMUState(state)
    assert runs[0] == runs[1]


def statistics_refs(s):
    """The value references of the solver statistics (Integer outputs) of slave s."""
    root = ET.parse(Path(s.unzipDirectory) / "modelDescription.xml").getroot()
    return [
        int(sv.get("valueReference"))
        for sv in root.find("ModelVariables")
        if sv.find("Integer") is not None and sv.get("causality") == "output"
    ]


@pytest.mark.parametrize("model", MODELS)
def test_outputs_read_after_a_derivative_are_the_state_s(started, rng, model):
    """The invariants read after qdd and a derivative call (which runs the ABA at qd = 0 on the
    instance's work arrays) are those of the state, bit for bit: the lazy qdd's body velocities,
    which the invariants reuse, are not taken once the call has overwritten them."""
    s, outs, ins, _deps, _u0 = started(model, rng)
    qdd_refs = [r for n, r in outs if n.endswith(".qdd") or ".qdd[" in n]
    rest = [r for n, r in outs if r not in qdd_refs]
    assert qdd_refs and any(n == "KE" for n, _r in outs)
    state = s.getFMUState()
    direct = s.getReal(rest)
    s.setFMUState(state)
    s.getReal(qdd_refs)
    s.getDirectionalDerivative(qdd_refs, [r for _n, r in ins], [1.0] * len(ins))
    after = s.getReal(rest)
    s.freeFMUState(state)
    assert after == direct
