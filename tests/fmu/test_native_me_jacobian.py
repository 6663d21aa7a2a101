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

import numpy as np
import pytest

from tests.fmu.test_native_me import MeHost, state_outputs
from tests.support.differences import central
from tests.support.native_fmu import description, model_file
from tests.support.paths import ROOT

pytestmark = pytest.mark.integration

STIFF_CHAIN = str(ROOT / "tests" / "data" / "stiff_chain.yaml")
# free base with a quaternion, wheels and a thruster; a serial arm; a URDF arm; a chain with stiff
# joint spring-dampers, a point spring-damper, world- and body-axes wrenches and a thruster
TREES = ("spacecraft", "scara", "urdf_arm7.urdf", STIFF_CHAIN)
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


class JacobianHost(MeHost):
    """An initialised Model Exchange instance in continuous-time mode with the value references of
    its states (x's order), their derivatives and its inputs."""

    def __init__(self, native, model: str):
        super().__init__(native, model)
        fmu = native.fmu(model)
        root = description(fmu)
        svs = list(root.find("ModelVariables"))
        self.x_vr = [self.vr[name] for name in state_outputs(fmu)]
        self.der_vr = [int(svs[int(u.get("index")) - 1].get("valueReference")) for u in root.find("ModelStructure/Derivatives")]
        self.u_vr = [v.valueReference for v in self.md.modelVariables if v.causality == "input"]
        self.initialise()

    def dd(self, unknown, known, seed) -> tuple[int, np.ndarray]:
        out = (ctypes.c_double * max(1, len(unknown)))()
        st = self.call(
            "fmi2GetDirectionalDerivative",
            (ctypes.c_uint * max(1, len(unknown)))(*unknown),
            ctypes.c_size_t(len(unknown)),
            (ctypes.c_uint * max(1, len(known)))(*known),
            ctypes.c_size_t(len(known)),
            self.array(list(seed) or [0.0]),
            out,
        )
        return st, np.array(out[: len(unknown)])

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
def test_jacobian_of_the_derivatives_equals_central_differences(native, rng, model):
    """At a state away from the initial one (quaternions 2 % off unit norm: the norm-restoring
    term and the normalisation are in the rows) and random inputs: df/dx and df/du from unit
    seeds equal central differences of fmi2GetDerivatives (tolerance: module docstring)."""
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
    h.free()
