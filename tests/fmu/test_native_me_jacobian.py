"""fmi2GetDirectionalDerivative of the native FMU in Model Exchange: the exact Jacobian of the state
derivatives with respect to the continuous states and the inputs (state_jacobian.c), against
central differences of fmi2GetDerivatives; the ModelExchange flag per model (trees true, closed
loops and couplings false and refused with a reason); the outputs it refuses; no allocation per
call; the trajectory untouched by a call.

Tolerance of the comparison with central differences (tests/support/differences.py, step
h = H_REL = eps^(1/3) ~ 6.1e-6 on states of size ~1): the quotient's error is the truncation
h^2 / 6 |f'''| plus the rounding of the two evaluations, ~C eps max|f| / h with C ~ 1e2 operations
of the ABA feeding each entry: 1e2 * 2.2e-16 / 6.1e-6 = 3.6e-9 max|f|. The third derivatives of these
models at states of size ~1 are below ~1e3 times their Jacobian's largest entry, so the truncation
is below 6e-12 * 1e3 max|J| = 6e-9 max|J|. The test allows atol = 2e-8 max(1, max|f|, max|J|)
(measured: at most 2e-9 of that scale, on urdf_arm7)."""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import pytest

from tests.fmu.test_native_derivatives import TWO_TREES
from tests.fmu.test_native_me import MeHost, state_outputs
from tests.support.differences import central
from tests.support.native_fmu import description, model_file
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration

STIFF_CHAIN = str(ROOT / "tests" / "data" / "stiff_chain.yaml")
# free base with a quaternion, wheels and a thruster; a serial arm; a URDF arm; a chain with stiff
# joint spring-dampers, a point spring-damper, world- and body-axes wrenches and a thruster; two
# trees with a spherical joint, a free joint with a wheel and point springs between them
TREES = ("spacecraft", "scara", "urdf_arm7.urdf", STIFF_CHAIN, "two_trees")
FD_TOL = 2e-8  # module docstring
GRIPPER = """<?xml version="1.0"?>
<robot name="gripper">
  <link name="palm"/>
  <link name="finger_l"><inertial><mass value="0.1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <link name="finger_r"><inertial><mass value="0.1"/>
    <inertia ixx="1e-4" ixy="0" ixz="0" iyy="1e-4" iyz="0" izz="1e-4"/></inertial></link>
  <joint name="left" type="prismatic"><parent link="palm"/><child link="finger_l"/><axis xyz="0 1 0"/></joint>
  <joint name="right" type="prismatic"><parent link="palm"/><child link="finger_r"/><axis xyz="0 1 0"/>
    <mimic joint="left" multiplier="-1"/></joint>
</robot>
"""


def written(model: str, folder: Path) -> str:
    """The model's file: the gripper and the two trees written into folder, else the bundled one."""
    text = {"gripper": (GRIPPER, ".urdf"), "two_trees": (TWO_TREES, ".yaml")}.get(model)
    if text is None:
        return model
    path = folder / f"{model}{text[1]}"
    path.write_text(text[0])
    return str(path)


def directional(host: MeHost, unknown, known, seed) -> tuple[int, np.ndarray]:
    """fmi2GetDirectionalDerivative(unknown, known, seed) on host's instance: (status, values)."""
    out = (ctypes.c_double * max(1, len(unknown)))()
    st = host.call(
        "fmi2GetDirectionalDerivative",
        (ctypes.c_uint * max(1, len(unknown)))(*unknown),
        ctypes.c_size_t(len(unknown)),
        (ctypes.c_uint * max(1, len(known)))(*known),
        ctypes.c_size_t(len(known)),
        host.array(list(seed) or [0.0]),
        out,
    )
    return st, np.array(out[: len(unknown)])


class JacobianHost(MeHost):
    """An initialised Model Exchange instance in continuous-time mode with the value references of
    its states (x's order), their derivatives and its inputs."""

    def __init__(self, native, model: str, refuse=None):
        super().__init__(native, model, refuse=refuse)
        fmu = native.fmu(model)
        root = description(fmu)
        svs = list(root.find("ModelVariables"))
        self.x_names = state_outputs(fmu)
        self.x_vr = [self.vr[name] for name in self.x_names]
        self.der_vr = [
            int(svs[int(u.get("index")) - 1].get("valueReference")) for u in root.find("ModelStructure/Derivatives")
        ]
        self.u_vr = [v.valueReference for v in self.md.modelVariables if v.causality == "input"]
        index = {int(sv.get("valueReference")): k + 1 for k, sv in enumerate(svs)}
        deps = {
            int(u.get("index")): {int(d) for d in u.get("dependencies").split()}
            for u in root.find("ModelStructure/Derivatives")
        }
        # the ModelStructure's sparsity: mask[k, j] if der k lists known j (states, then inputs)
        self.listed = np.array(
            [[index[vr] in deps[index[der]] for vr in [*self.x_vr, *self.u_vr]] for der in self.der_vr]
        )
        self.initialise()

    def dd(self, unknown, known, seed) -> tuple[int, np.ndarray]:
        return directional(self, unknown, known, seed)

    def jacobian(self) -> np.ndarray:
        """[df/dx, df/du] (nx, nx + n_u) by unit seeds, one known per call."""
        cols = []
        for vr in [*self.x_vr, *self.u_vr]:
            st, col = self.dd(self.der_vr, [vr], [1.0])
            assert st == 0, self.log[-1:]
            cols.append(col)
        return np.column_stack(cols)

    def set_inputs(self, u) -> None:
        n = len(self.u_vr)
        assert self.call("fmi2SetReal", (ctypes.c_uint * n)(*self.u_vr), ctypes.c_size_t(n), self.array(list(u))) == 0

    def reals(self) -> np.ndarray:
        vrs = [v.valueReference for v in self.md.modelVariables if v.type == "Real" and v.causality != "parameter"]
        vals = (ctypes.c_double * len(vrs))()
        assert self.call("fmi2GetReal", (ctypes.c_uint * len(vrs))(*vrs), ctypes.c_size_t(len(vrs)), vals) == 0
        return np.array(vals[:])


def quaternion_starts(model: str) -> list[int]:
    """The positions in x of the model's quaternions (spherical joints: q_i; free joints: q_i[3:])."""
    import mbsfmu
    from mbsfmu.engine.joints import FREE, SPHERICAL

    t = mbsfmu.load_model(model_file(model)).tree
    kinds = (SPHERICAL, FREE)
    return [int(t.iq[i]) + (3 if t.jtype[i] == FREE else 0) for i in range(1, len(t.parent)) if t.jtype[i] in kinds]


@pytest.mark.parametrize("model", TREES)
def test_jacobian_of_the_derivatives_equals_central_differences(native, rng, tmp_path, model):
    """At a state away from the initial one (quaternions 2 % off unit norm: the norm-restoring
    term and the normalisation are in the rows) and random inputs: df/dx and df/du from unit
    seeds equal central differences of fmi2GetDerivatives (tolerance: module docstring), and
    every nonzero entry is a dependency the ModelStructure's Derivatives list."""
    model = written(model, tmp_path)
    h = JacobianHost(native, model)
    x = h.states()
    x = x + 0.1 * rng.normal(size=len(x))
    for k in quaternion_starts(model):
        x[k : k + 4] *= 1.02 / np.linalg.norm(x[k : k + 4])
    u = rng.normal(size=len(h.u_vr))
    h.set_inputs(u)
    assert h.set_states(x) == 0
    f0 = h.derivatives()
    J = h.jacobian()

    def f_of_x(z):
        assert h.set_states(z) == 0
        return h.derivatives()

    def f_of_u(w):
        h.set_inputs(w)
        return h.derivatives()

    Jx = central(f_of_x, x, len(x), np.add)
    assert h.set_states(x) == 0
    Ju = central(f_of_u, u, len(u), np.add)
    J_fd = np.hstack([Jx, Ju])
    scale = max(1.0, float(np.abs(f0).max()), float(np.abs(J_fd).max()))
    np.testing.assert_allclose(J, J_fd, rtol=0, atol=FD_TOL * scale)
    assert not np.any(J[~h.listed]), "a nonzero entry the ModelStructure's Derivatives do not list"
    h.free()


def test_seeds_combine_linearly_over_derivatives_qdd_and_state_outputs(native, rng):
    """One call with every state and input as knowns and random seeds gives J @ seed: for the
    der(...) variables the Jacobian's rows, for the qdd outputs the rows of qd's derivatives, for
    the q, qd, W_in, W_diss outputs (the states themselves) the seeds; a known named twice adds
    its seeds. The products are the same sums as the unit-seed columns', so they agree to the
    rounding of nx + n_u terms (1e-13 of max |J| |seed|)."""
    h = JacobianHost(native, "spacecraft")
    x = h.states() + 0.05 * rng.normal(size=h.nx)
    assert h.set_states(x) == 0
    J = h.jacobian()
    known = [*h.x_vr, *h.u_vr]
    seed = rng.normal(size=len(known))
    rows = [k for k, name in enumerate(h.x_names) if ".qd" in name]  # qd's rows: the qdd outputs
    qdd = [h.vr[h.x_names[k].replace(".qd", ".qdd")] for k in rows]
    unknown = [*h.der_vr, *qdd, *h.x_vr]
    st, out = h.dd(unknown, [*known, known[0]], [*seed[:-1], seed[-1], 0.5])
    assert st == 0
    seed2 = seed.copy()
    seed2[0] += 0.5
    expect = J @ seed2
    tol = 1e-13 * (h.nx + len(h.u_vr)) * float(np.abs(J).max() * np.abs(seed2).max())
    np.testing.assert_allclose(out[: h.nx], expect, rtol=0, atol=tol)
    np.testing.assert_allclose(out[h.nx : h.nx + len(qdd)], expect[rows], rtol=0, atol=tol)
    np.testing.assert_array_equal(out[h.nx + len(qdd) :], seed2[: h.nx])
    h.free()


@pytest.mark.parametrize("model", [*TREES, "fourbar", "gripper"])
def test_model_exchange_declares_directional_derivatives_for_trees_only(native, tmp_path, model):
    """ModelExchange providesDirectionalDerivative: "true" for the trees (the core's Jacobian
    applies), "false" for the four-bar (a closed loop) and a URDF gripper whose finger mimics the
    other (a coupling); Co-Simulation keeps "true" (outputs w.r.t. inputs) for every model."""
    tree = model in TREES
    root = description(native.fmu(written(model, tmp_path)))
    assert root.find("ModelExchange").get("providesDirectionalDerivative") == ("true" if tree else "false")
    assert root.find("CoSimulation").get("providesDirectionalDerivative") == "true"


@pytest.mark.parametrize("model", ["fourbar", "gripper"])
def test_loops_and_couplings_refuse_state_derivatives_with_the_reason(native, tmp_path, model):
    """Model Exchange of a model with a closed loop or a coupling: a derivative with respect to a
    state, or of a der(...) variable, is fmi2Error with a message naming the loops or couplings
    and the flag; the outputs with respect to the inputs (among them the qdd outputs, qd's
    derivatives) still work as in Co-Simulation, and the instance keeps working."""
    h = JacobianHost(native, written(model, tmp_path))
    st, _ = h.dd(h.der_vr[:1], h.x_vr[:1], [1.0])
    assert st == 3
    assert "closed loops or joint couplings" in h.log[-1][1] and "providesDirectionalDerivative" in h.log[-1][1]
    st, _ = h.dd([h.der_vr[0]], h.u_vr[:1], [1.0])  # der(q1.q) w.r.t. an input: the Jacobian's
    assert st == 3
    qdd = [v.valueReference for v in h.md.modelVariables if v.causality == "output" and ".qdd" in v.name]
    st, out = h.dd(qdd, h.u_vr[:1], [1.0])
    assert st == 0 and np.abs(out).max() > 0
    assert len(h.derivatives()) == h.nx
    h.free()


def test_other_outputs_with_respect_to_states_are_refused_naming_the_output(native):
    """The invariants (here E) have no derivative with respect to the states: fmi2Error naming E;
    with respect to the inputs only they are 0, as in Co-Simulation."""
    h = JacobianHost(native, "scara")
    st, _ = h.dd([h.vr["E"]], h.x_vr[:1], [1.0])
    assert st == 3 and "output E " in h.log[-1][1]
    st, out = h.dd([h.vr["E"]], h.u_vr[:1], [1.0])
    assert st == 0 and out[0] == 0.0
    h.free()


def test_no_allocation_per_call_and_the_trajectory_untouched(native, rng):
    """After instantiation the Jacobian's calls allocate nothing (MeHost counts the host's
    allocations), at every new state and inputs; and every Real variable and derivative read
    after a call is bit for bit what an instance that never made the call reads at the same
    state and inputs."""
    h = JacobianHost(native, STIFF_CHAIN)
    twin = JacobianHost(native, STIFF_CHAIN)
    before = h.allocations
    x = h.states()
    for _ in range(20):
        x = x + 0.01 * rng.normal(size=h.nx)
        u = rng.normal(size=len(h.u_vr))
        for host in (h, twin):
            host.set_inputs(u)
            assert host.set_states(x) == 0
        J = h.jacobian()
        assert np.isfinite(J).all()
        np.testing.assert_array_equal(h.derivatives(), twin.derivatives())
        np.testing.assert_array_equal(h.reals(), twin.reals())
    assert h.allocations == before
    h.free()
    twin.free()


def test_without_memory_for_the_jacobian_the_instance_still_works(native):
    """The host's allocator refuses the Jacobian's nx x nx block at fmi2Instantiate: the instance is
    made (a warning says why), integrates as before, and a derivative with respect to a state is
    fmi2Error saying the memory was missing; the outputs w.r.t. the inputs still work."""
    nx = 6  # the SCARA: 2 q, 2 qd, W_in, W_diss
    refused = []

    def refuse(n, size):
        if n == nx * nx and size == 8:
            refused.append(n)
            return True
        return False

    h = JacobianHost(native, "scara", refuse=refuse)
    assert refused == [nx * nx]
    assert any(st == 1 and "out of memory for the Jacobian" in msg for st, msg in h.log)
    assert len(h.derivatives()) == nx
    st, _ = h.dd(h.der_vr[:1], h.x_vr[:1], [1.0])
    assert st == 3 and "could not be allocated at instantiation" in h.log[-1][1]
    st, out = h.dd([h.vr["q1.qdd"]], h.u_vr[:1], [1.0])
    assert st == 0 and out[0] != 0.0
    h.free()


def test_co_simulation_keeps_the_outputs_with_respect_to_the_inputs(native):
    """A Co-Simulation instance of the same FMU is unchanged: a state as known and a der(...)
    variable as unknown are refused (fmi2Error), the qdd outputs w.r.t. the inputs are given."""
    h = MeHost(native, "scara", kind=1)
    zero = ctypes.c_double(0.0)
    assert h.call("fmi2SetupExperiment", 0, zero, zero, 0, zero) == 0
    assert h.call("fmi2EnterInitializationMode") == 0
    assert h.call("fmi2ExitInitializationMode") == 0
    qdd, q, tau, der = (h.vr[n] for n in ("q1.qdd", "q1.q", "q1.tau", "der(q1.q)"))
    assert directional(h, [qdd], [q], [1.0])[0] == 3 and "the knowns are the Real inputs)" in h.log[-1][1]
    assert directional(h, [der], [tau], [1.0])[0] == 3 and "is not an output" in h.log[-1][1]
    st, out = directional(h, [qdd], [tau], [1.0])
    assert st == 0 and out[0] > 0.0  # a positive torque speeds its own joint up (M^-1 positive definite)
    h.free()


def test_model_exchange_misuse_is_refused_with_the_reason(native):
    """Model Exchange: a non-finite seed on a state and a parameter as known are fmi2Error naming
    the variable; the instance keeps working."""
    h = JacobianHost(native, "scara")
    st, _ = h.dd(h.der_vr, h.x_vr[:1], [float("nan")])
    assert st == 3 and "seeds must be finite" in h.log[-1][1] and "q1.q" in h.log[-1][1]
    param = next(v for v in h.md.modelVariables if v.causality == "parameter" and v.type == "Real")
    st, _ = h.dd(h.der_vr, [param.valueReference], [1.0])
    assert st == 3 and param.name in h.log[-1][1] and "parameter" in h.log[-1][1]
    st, out = h.dd(h.der_vr, h.x_vr[:1], [1.0])
    assert st == 0 and np.isfinite(out).all()
    h.free()
