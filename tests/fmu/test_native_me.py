"""The native FMU as FMI 2.0 Model Exchange (the same binary as Co-Simulation): the modelDescription
holds both interfaces; fmpy's CVode and Euler integrate it and agree with the Co-Simulation FMU;
quaternions and loop constraints stay on their manifolds under a host's integrator (host_state.c:
the norm-restoring term, Baumgarte, the projection at step events); every Model Exchange call
has the standard's state machine and answers misuse with fmi2Error and a reason; FMU states
round-trip; no allocation after initialisation on the calls a host makes per step."""

from __future__ import annotations

import ctypes
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from tests.support.native_fmu import description

pytestmark = pytest.mark.integration

# the bundled models of the issue: free base with wheels, serial arm, closed loop, URDF arm with a
# mimic coupling
MODELS = ("spacecraft", "scara", "fourbar", "urdf_arm7.urdf")


def simulate(fmu, fmi_type: str, stop: float, outputs, **kw):
    from fmpy import simulate_fmu

    # record_events=False: one row per output point, after any event (fmpy otherwise also records
    # the state before a step event's projection); fmpy's Euler steps by output_interval
    return simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=stop, output=list(outputs), record_events=False, **kw)


def state_outputs(fmu) -> list[str]:
    """The q, qd, W_in, W_diss outputs: the continuous states, in the state vector's order."""
    root = description(fmu)
    svs = list(root.find("ModelVariables"))
    states = []
    for u in root.find("ModelStructure/Derivatives"):
        der = svs[int(u.get("index")) - 1]
        states.append(svs[int(der[0].get("derivative")) - 1].get("name"))
    return states


@pytest.mark.parametrize("model", MODELS)
def test_one_fmu_holds_both_interfaces_and_validates(native, model):
    """One modelDescription: ModelExchange and CoSimulation with the same modelIdentifier and
    SourceFiles; a derivative per continuous state (q, qd, W_in, W_diss), listed in
    ModelStructure/Derivatives in the state vector's order; fmpy's validation finds nothing."""
    from fmpy.validation import validate_fmu

    fmu = native.fmu(model)
    root = description(fmu)
    me, cs = root.find("ModelExchange"), root.find("CoSimulation")
    assert me is not None and cs is not None
    assert me.get("modelIdentifier") == cs.get("modelIdentifier")
    assert root.get("numberOfEventIndicators") == "0"
    import mbsfmu
    from tests.support.native_fmu import model_file

    m = mbsfmu.load_model(model_file(model))
    states = state_outputs(fmu)
    assert len(states) == m.nq + m.nv + 2 and states[-2:] == ["W_in", "W_diss"]
    assert validate_fmu(str(fmu)) == []


def panda() -> str:
    """The Franka Panda of example-robot-data (its fingers: one mimic coupling), or skip."""
    from tests.support.robots import robots_dir

    robots = robots_dir()
    path = robots / "panda_description/urdf/panda.urdf" if robots else None
    if path is None or not path.is_file():
        pytest.skip("example-robot-data's panda is not installed (the test extra)")
    return str(path)


@pytest.mark.parametrize("model", [*MODELS, "panda"])
def test_model_exchange_under_cvode_agrees_with_co_simulation(native, model):
    """fmpy's CVode (BDF, rtol 1e-10) integrating the Model Exchange FMU and the Co-Simulation FMU
    (RK4, solver.h_max = 0.1 ms) give the same motion over 1 s: every state within 1e-6 of its scale
    (RK4's global error C h^4 is below 1e-9 at 0.1 ms on these models: at 1 ms it reaches 8.7e-6 on
    the panda's arm, which CVode's run at rtol 1e-10 is closer to the truth than; CVode's error,
    set by rtol, measured up to 1.4e-7), and the energy balance of the ME run stays below 1e-7 of
    the energy scale. The panda
    (a mimic coupling between its fingers: a loop of the core, under Baumgarte and projection)
    stands for the robots with couplings."""
    fmu = native.fmu(panda() if model == "panda" else model)
    states = state_outputs(fmu)
    outs = [*states, "E", "KE", "drift.E_balance_abs"]
    cs = simulate(
        fmu, "CoSimulation", 1.0, outs, output_interval=0.01, step_size=0.01, start_values={"solver.h_max": 1e-4}
    )
    me = simulate(fmu, "ModelExchange", 1.0, outs, output_interval=0.01, solver="CVode", relative_tolerance=1e-10)
    assert len(me) == len(cs) and np.allclose(me["time"], cs["time"], rtol=0, atol=1e-12)
    for name in states:
        scale = max(1.0, float(np.abs(cs[name]).max()))
        assert np.abs(me[name] - cs[name]).max() <= 1e-6 * scale, name
    E_scale = max(1.0, float(np.abs(cs["E"]).max()), float(np.abs(cs["KE"]).max()))
    assert np.abs(me["drift.E_balance_abs"]).max() <= 1e-7 * E_scale


def test_explicit_euler_converges_to_the_co_simulation_run_at_first_order(native):
    """fmpy's explicit Euler on the ME FMU of the spacecraft: halving the step halves the energy
    balance error (first order: ratio 2 +- 0.3), the quaternion stays unit to 1e-6 (the
    norm-restoring term; Euler alone grows |q| by h^2 |w|^2 / 8 per step), and the motion
    approaches the Co-Simulation run's."""
    fmu = native.fmu("spacecraft")
    q = [f"base.q[{k}]" for k in range(4, 8)]
    outs = [*q, "E", "drift.E_balance_abs", "hinge_l.q"]
    cs = simulate(fmu, "CoSimulation", 2.0, outs, output_interval=0.01, step_size=0.01)
    err = []
    for h in (2e-3, 1e-3):
        me = simulate(fmu, "ModelExchange", 2.0, outs, output_interval=h, solver="Euler", step_size=h)
        norm = np.sqrt(sum(me[c] ** 2 for c in q))
        assert np.abs(norm - 1.0).max() <= 1e-6
        err.append(float(np.abs(me["drift.E_balance_abs"]).max()))
        at = np.round(me["time"] / 0.01, 9) % 1 == 0  # the Co-Simulation run's output points
        assert np.abs(me["hinge_l.q"][at] - cs["hinge_l.q"]).max() <= 200 * h  # first order: C h
    assert err[0] / err[1] == pytest.approx(2.0, abs=0.3)


def test_loop_constraints_stay_closed_under_cvode_and_euler(native):
    """The four-bar under fmpy's CVode and Euler for 10 s: the loop residual max |Phi| (the
    engine's constraints at the FMU's q) stays below 1e-6 L at every output point (L the loops'
    length scale, LoopSet.scale): Baumgarte (alpha = beta = 10 1/s) pulls it back and a step event
    projects it past 1e-6 L (the factor 1.01: the FMU's and numpy's Phi differ by rounding)."""
    import mbsfmu
    from mbsfmu.engine.dynamics.closed_loops import compile_loops, constraints
    from tests.support.native_fmu import model_file

    fmu = native.fmu("fourbar")
    m = mbsfmu.load_model(model_file("fourbar"))
    loops = compile_loops(m)
    for kw in (
        dict(solver="CVode", relative_tolerance=1e-6, output_interval=0.01),
        dict(solver="Euler", step_size=1e-3, output_interval=1e-3),
    ):
        r = simulate(fmu, "ModelExchange", 10.0, ["q1.q", "q2.q", "q3.q"], **kw)
        Q = np.stack([r["q1.q"], r["q2.q"], r["q3.q"]], axis=1)
        res = max(float(np.abs(constraints(m.tree, loops, q).Phi).max()) for q in Q)
        assert res <= 1.01e-6 * loops.scale, (kw, res)


# ---- the state machine, misuse and FMU states, through fmpy's low-level API ---------------------


class MeHost:
    """One Model Exchange instance with every call's status and every log message recorded, and
    the allocations counted (the FMU allocates only through the host's callbacks)."""

    def __init__(self, native, model: str, kind: int = 0, refuse=None):
        """refuse(n, size): True to make that allocation fail (the host out of memory)."""
        from fmpy import read_model_description
        from fmpy.fmi2 import (
            FMU2Model,
            fmi2CallbackAllocateMemoryTYPE,
            fmi2CallbackFreeMemoryTYPE,
            fmi2CallbackFunctions,
            fmi2CallbackLoggerTYPE,
        )

        fmu = native.fmu(model)
        self.md = read_model_description(str(fmu))
        self.vr = {v.name: v.valueReference for v in self.md.modelVariables}
        self.nx = self.md.numberOfContinuousStates
        self.log: list[tuple[int, str]] = []
        self.allocations = 0
        libc = ctypes.CDLL(None)
        libc.calloc.restype, libc.calloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
        libc.free.argtypes = [ctypes.c_void_p]

        def calloc(n, size):
            self.allocations += 1
            if refuse is not None and refuse(n, size):
                return None
            return libc.calloc(n, size)

        self.cb = fmi2CallbackFunctions()
        self.cb.logger = fmi2CallbackLoggerTYPE(lambda e, n, s, c, m: self.log.append((int(s), m.decode())))
        self.cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(calloc)
        self.cb.freeMemory = fmi2CallbackFreeMemoryTYPE(libc.free)
        self.f = FMU2Model(
            guid=self.md.guid,
            unzipDirectory=str(native.extracted(fmu)),
            modelIdentifier=self.md.modelExchange.modelIdentifier,
            instanceName="me",
        )
        self.f.fmiCallFunction = None
        self.lib = self.f.dll
        fn = self.lib.fmi2Instantiate
        fn.restype, fn.argtypes = (
            ctypes.c_void_p,
            [
                ctypes.c_char_p,
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_char_p,
                ctypes.POINTER(fmi2CallbackFunctions),
                ctypes.c_int,
                ctypes.c_int,
            ],
        )
        self.c = fn(b"me", kind, self.md.guid.encode(), None, ctypes.byref(self.cb), 0, 1)
        assert self.c

    def call(self, name: str, *args) -> int:
        return int(getattr(self.lib, name)(ctypes.c_void_p(self.c), *args))

    def array(self, values) -> ctypes.Array:
        return (ctypes.c_double * len(values))(*values)

    def states(self) -> np.ndarray:
        x = self.array([0.0] * self.nx)
        assert self.call("fmi2GetContinuousStates", x, ctypes.c_size_t(self.nx)) == 0
        return np.array(x[:])

    def derivatives(self) -> np.ndarray:
        dx = self.array([0.0] * self.nx)
        assert self.call("fmi2GetDerivatives", dx, ctypes.c_size_t(self.nx)) == 0
        return np.array(dx[:])

    def set_states(self, x) -> int:
        return self.call("fmi2SetContinuousStates", self.array(list(x)), ctypes.c_size_t(len(x)))

    def event_info(self):
        from fmpy.fmi2 import fmi2EventInfo

        info = fmi2EventInfo()
        assert self.call("fmi2NewDiscreteStates", ctypes.byref(info)) == 0
        return info

    def initialise(self):
        zero = ctypes.c_double(0.0)
        assert self.call("fmi2SetupExperiment", 0, zero, zero, 0, zero) == 0
        assert self.call("fmi2EnterInitializationMode") == 0
        assert self.call("fmi2ExitInitializationMode") == 0
        self.event_info()
        assert self.call("fmi2EnterContinuousTimeMode") == 0

    def completed(self) -> tuple[int, bool]:
        enter, term = ctypes.c_int(0), ctypes.c_int(0)
        st = self.call("fmi2CompletedIntegratorStep", 1, ctypes.byref(enter), ctypes.byref(term))
        return st, bool(enter.value)

    def free(self):
        self.lib.fmi2FreeInstance(ctypes.c_void_p(self.c))


def test_the_derivatives_are_the_engines_equations_of_motion(native):
    """fmi2GetDerivatives at the initial state of the SCARA: [qd, qdd, P_in, P_diss], with qdd the
    engine's forward dynamics (Model.forward_dynamics, the same core: 1e-12 relative) and the der()
    and qdd variables reading the same numbers."""
    import mbsfmu
    from tests.support.native_fmu import model_file

    h = MeHost(native, "scara")
    h.initialise()
    x, dx = h.states(), h.derivatives()
    m = mbsfmu.load_model(model_file("scara"))
    q, qd = m.initial_state()
    np.testing.assert_array_equal(x[: m.nq], q)
    qdd = m.forward_dynamics(q, qd, tau=np.zeros(m.nv))
    np.testing.assert_allclose(dx[m.nq : m.nq + m.nv], qdd, rtol=1e-12, atol=1e-12)
    names = ["der(q1.q)", "der(q2.q)", "q1.qdd", "q2.qdd", "der(W_in)", "der(W_diss)"]
    vals = (ctypes.c_double * 6)()
    vrs = (ctypes.c_uint * 6)(*[h.vr[n] for n in names])
    assert h.call("fmi2GetReal", vrs, ctypes.c_size_t(6), vals) == 0
    np.testing.assert_array_equal(np.array(vals[:]), np.concatenate([dx[:4], dx[4:]]))
    h.free()


def test_a_drifted_quaternion_is_evaluated_normalised_and_projected_at_a_step_event(native):
    """The spacecraft with its base quaternion scaled by 1.01 (a host's drift): the derivatives
    equal the unit quaternion's but for the quaternion rows (|qh| times the unit rate, plus the
    norm-restoring k (1 - |qh|^2) qh); fmi2CompletedIntegratorStep asks for an event;
    fmi2NewDiscreteStates projects (unit quaternion) and says valuesOfContinuousStatesChanged."""
    h = MeHost(native, "spacecraft")
    h.initialise()
    x0 = h.states()
    dx0 = h.derivatives()
    quat = slice(3, 7)
    x = x0.copy()
    x[quat] *= 1.01
    assert h.set_states(x) == 0
    dx = h.derivatives()
    rest = np.ones(len(x), bool)
    rest[quat] = False
    np.testing.assert_array_equal(dx[rest], dx0[rest])
    k = 10.0  # fmu_instance.c K_NORM [1/s]
    np.testing.assert_allclose(dx[quat], 1.01 * dx0[quat] + k * (1 - 1.01**2) * x[quat], rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(h.states(), x)  # the host's states, as set
    st, enter = h.completed()
    assert st == 0 and enter
    assert h.call("fmi2EnterEventMode") == 0
    info = h.event_info()
    assert info.valuesOfContinuousStatesChanged and not info.terminateSimulation
    xp = h.states()
    assert abs(np.linalg.norm(xp[quat]) - 1.0) <= 2e-16
    np.testing.assert_allclose(xp[quat], x0[quat], rtol=0, atol=1e-15)
    assert h.call("fmi2EnterContinuousTimeMode") == 0
    st, enter = h.completed()
    assert st == 0 and not enter
    h.free()


def test_misuse_is_refused_with_a_reason_and_the_instance_keeps_working(native):
    """Every Model Exchange call outside its mode, with a wrong size, NULL or non-finite states, a
    quaternion of norm 0, event indicators that do not exist, fmi2DoStep on a Model Exchange
    instance and a Model Exchange call on a Co-Simulation one: fmi2Error (3), a logged reason, and
    the instance still integrates afterwards."""
    h = MeHost(native, "spacecraft")
    n = ctypes.c_size_t(h.nx)
    buf = h.array([0.0] * h.nx)
    refused = [
        ("fmi2SetContinuousStates", (buf, n), "not allowed in instantiated"),
        ("fmi2CompletedIntegratorStep", (1, ctypes.byref(ctypes.c_int()), ctypes.byref(ctypes.c_int())), "not allowed"),
        ("fmi2SetTime", (ctypes.c_double(1.0),), "not allowed in instantiated"),
        ("fmi2EnterContinuousTimeMode", (), "not allowed in instantiated"),
    ]
    for name, args, why in refused:
        h.log.clear()
        assert h.call(name, *args) == 3, name
        assert any(why in m for s, m in h.log if s == 3), (name, h.log)
    h.initialise()
    x = h.states()
    bad = x.copy()
    bad[0] = np.nan
    zero = x.copy()
    zero[3:7] = 0.0
    for args, why in (
        ((h.array(list(bad)), n), "must be finite"),
        ((h.array(list(zero)), n), "no direction"),
        ((h.array(list(x)), ctypes.c_size_t(h.nx - 1)), f"nx {h.nx - 1}, this model has {h.nx}"),
        ((None, n), "NULL"),
    ):
        h.log.clear()
        assert h.call("fmi2SetContinuousStates", *args) == 3
        assert any(why in m for s, m in h.log if s == 3), h.log
        np.testing.assert_array_equal(h.states(), x)
    for name, args, why in (
        ("fmi2GetEventIndicators", (buf, ctypes.c_size_t(1)), "no event indicators"),
        ("fmi2DoStep", (ctypes.c_double(0.0), ctypes.c_double(0.01), 1), "not allowed in continuous-time mode"),
        ("fmi2NewDiscreteStates", (None,), "NULL"),
        ("fmi2SetTime", (ctypes.c_double(np.inf),), "must be finite"),
    ):
        h.log.clear()
        assert h.call(name, *args) == 3, name
        assert any(why in m for s, m in h.log if s == 3), (name, h.log)
    assert h.call("fmi2SetTime", ctypes.c_double(0.5)) == 0
    assert h.set_states(x) == 0 and np.isfinite(h.derivatives()).all()
    h.free()
    cs = MeHost(native, "spacecraft", kind=1)
    cs.log.clear()
    assert cs.call("fmi2GetDerivatives", buf, n) == 3
    assert any("made for Co-Simulation" in m for s, m in cs.log if s == 3), cs.log
    cs.free()


def test_fmu_state_round_trip_in_model_exchange_is_bit_for_bit(native):
    """fmi2GetFMUstate / serialise / deserialise / fmi2SetFMUstate mid-run in continuous-time mode
    restore the host's states (a drifted quaternion included) and the time: the derivatives after
    restoring equal those before, bit for bit; a Co-Simulation instance refuses the blob."""
    h = MeHost(native, "spacecraft")
    h.initialise()
    x = h.states()
    x[3:7] *= 1.0 + 1e-7
    x[-5] += 0.1
    assert h.set_states(x) == 0 and h.call("fmi2SetTime", ctypes.c_double(0.25)) == 0
    dx = h.derivatives()
    state = ctypes.c_void_p()
    assert h.call("fmi2GetFMUstate", ctypes.byref(state)) == 0
    size = ctypes.c_size_t()
    assert h.call("fmi2SerializedFMUstateSize", state, ctypes.byref(size)) == 0
    blob = (ctypes.c_char * size.value)()
    assert h.call("fmi2SerializeFMUstate", state, blob, size) == 0
    assert h.set_states(h.states() * 0.5 + 0.1 * (np.arange(h.nx) == 0)) == 0
    restored = ctypes.c_void_p()
    assert h.call("fmi2DeSerializeFMUstate", blob, size, ctypes.byref(restored)) == 0
    assert h.call("fmi2SetFMUstate", restored) == 0
    np.testing.assert_array_equal(h.states(), x)
    np.testing.assert_array_equal(h.derivatives(), dx)
    cs = MeHost(native, "spacecraft", kind=1)
    other = ctypes.c_void_p()
    assert cs.call("fmi2DeSerializeFMUstate", blob, size, ctypes.byref(other)) == 3
    assert any("made by a Model Exchange instance" in m for _, m in cs.log), cs.log
    cs.free()
    h.free()


@pytest.mark.parametrize("model", ["spacecraft", "fourbar"])
def test_no_allocation_after_initialisation_on_the_per_step_calls(native, model):
    """After fmi2ExitInitializationMode, a host's Model Exchange loop (fmi2SetTime,
    fmi2SetContinuousStates, fmi2GetDerivatives, fmi2GetReal of every Real output,
    fmi2CompletedIntegratorStep, the event iteration) makes no allocation through the host's
    allocator, the only one the FMU uses (canNotUseMemoryManagementFunctions = false)."""
    h = MeHost(native, model)
    h.initialise()
    reals = [v.valueReference for v in h.md.modelVariables if v.type == "Real" and v.causality == "output"]
    vrs = (ctypes.c_uint * len(reals))(*reals)
    vals = (ctypes.c_double * len(reals))()
    x = h.states()
    before = h.allocations
    t = 0.0
    for _ in range(200):
        t += 1e-3
        assert h.call("fmi2SetTime", ctypes.c_double(t)) == 0
        dx = h.derivatives()
        x = x + 1e-3 * dx
        assert h.set_states(x) == 0
        assert h.call("fmi2GetReal", vrs, ctypes.c_size_t(len(reals)), vals) == 0
        st, enter = h.completed()
        assert st == 0
        if enter:
            assert h.call("fmi2EnterEventMode") == 0
            h.event_info()
            assert h.call("fmi2EnterContinuousTimeMode") == 0
            x = h.states()
    assert h.allocations == before
    h.free()


def test_model_exchange_element_declares_what_the_fmu_does(native):
    """The ModelExchange flags: the host's memory functions, FMU states, no execution tool, the
    step-completed call needed (it may ask for a projection event), the directional derivatives
    of the state derivatives (a tree: test_native_me_jacobian.py checks them and the flag per model)."""
    me = description(native.fmu("scara")).find("ModelExchange")
    assert me.get("completedIntegratorStepNotNeeded") == "false"
    assert me.get("providesDirectionalDerivative") == "true"
    assert me.get("canNotUseMemoryManagementFunctions") == "false"
    assert ET.iselement(me.find("SourceFiles"))
