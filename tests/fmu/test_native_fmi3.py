"""The native FMU as FMI 3.0 (`build-fmu --fmi-version 3`): Co-Simulation and Model Exchange in one
FMU, array variables grouping the FMI 2.0 scalars, the FMI 3.0 platform folders and
sources/buildDescription.xml; fmpy validates and runs it; it gives the FMI 2.0 FMU's numbers bit for
bit where the same integrator runs; directional and adjoint derivatives agree (J and J^T); FMU
states round-trip; what it does not provide is refused with a reason."""

from __future__ import annotations

import ctypes
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest

from tests.support.native_fmu import description, model_file

pytestmark = pytest.mark.integration

MODELS = ("spacecraft", "scara", "fourbar", "urdf_arm7.urdf")


def fmu3(native, model: str, platforms=("linux64",)):
    """The FMI 3.0 FMU of a bundled model, built once per session beside the FMI 2.0 ones (the
    same file test_native_fmi3_fmpy.py, test_native_fmusim.py and test_native_host_loops.py get)."""
    return native.fmu(model, platforms=platforms, fmi_version=3)


def simulate(fmu, fmi_type: str, stop: float, outputs, **kw):
    from fmpy import simulate_fmu

    return simulate_fmu(str(fmu), fmi_type=fmi_type, stop_time=stop, output=list(outputs), record_events=False, **kw)


@pytest.mark.parametrize("model", MODELS)
def test_fmi3_fmu_validates_and_groups_the_vectors_as_arrays(native, model):
    """fmpy's FMI 3.0 validation (schema and rules) finds nothing; both interfaces with one
    modelIdentifier; time at value reference 0; q, qd, qdd, u (the inputs) and der(q) are arrays
    whose Dimension is the engine's nq, nv, nv, n_u, nq; every scalar of the FMI 2.0 FMU is an
    element of exactly one FMI 3.0 variable."""
    from fmpy.validation import validate_fmu

    import mbsfmu

    path = fmu3(native, model)
    assert validate_fmu(str(path)) == []
    root = description(path)
    assert root.get("fmiVersion") == "3.0" and root.get("instantiationToken")
    me, cs = root.find("ModelExchange"), root.find("CoSimulation")
    assert me.get("modelIdentifier") == cs.get("modelIdentifier")
    svs = list(root.find("ModelVariables"))
    assert svs[0].get("name") == "time" and svs[0].get("causality") == "independent"
    assert [int(sv.get("valueReference")) for sv in svs] == list(range(len(svs)))
    m = mbsfmu.load_model(model_file(model))
    dims = {sv.get("name"): int(sv.find("Dimension").get("start")) for sv in svs if sv.find("Dimension") is not None}
    fmi2 = list(description(native.fmu(model)).find("ModelVariables"))
    want = {"q": m.nq, "qd": m.nv, "qdd": m.nv, "der(q)": m.nq}
    n_u = sum(sv.get("causality") == "input" for sv in fmi2)
    if n_u:
        want["u"] = n_u
    assert {k: dims[k] for k in want} == want
    assert sum(dims.get(sv.get("name"), 1) for sv in svs[1:]) == len(fmi2)
    states = [sv.get("name") for sv in svs if any(o.get("derivative") == sv.get("valueReference") for o in svs)]
    assert states == ["q", "qd", "W_in", "W_diss"]


def test_fmi3_platform_folders_and_build_description(native):
    """binaries/x86_64-linux, x86_64-windows, x86_64-darwin and aarch64-darwin (one architecture
    each, no universal binary); sources/buildDescription.xml lists exactly the shipped .c files
    (the FMI 3.0 entry file, not the FMI 2.0 one)."""
    path = fmu3(native, "scara", platforms=("linux64", "win64", "darwin64"))
    with zipfile.ZipFile(path) as z:
        names = z.namelist()
        build = ET.fromstring(z.read("sources/buildDescription.xml"))
    folders = sorted({n.split("/")[1] for n in names if n.startswith("binaries/")})
    assert folders == ["aarch64-darwin", "x86_64-darwin", "x86_64-linux", "x86_64-windows"]
    sources = {n[len("sources/") :] for n in names if n.startswith("sources/")}
    listed = {f.get("name") for f in build.iter("SourceFile")}
    assert listed == {n for n in sources if n.endswith(".c")}
    assert "fmi3_functions.c" in listed and "fmi2_functions.c" not in listed
    assert build.find("BuildConfiguration").get("modelIdentifier") == "scara"


@pytest.mark.parametrize("model", MODELS)
def test_fmi3_co_simulation_is_the_fmi2_fmus_numbers_bit_for_bit(native, model):
    """fmpy runs both Co-Simulation FMUs (RK4, 10 ms steps, 1 s): the FMI 3.0 arrays q, qd and the
    energy equal the FMI 2.0 scalars bit for bit (one value table, one core)."""
    from fmpy import read_model_description

    f2, f3 = native.fmu(model), fmu3(native, model)
    md2 = read_model_description(str(f2))
    q2 = [v.name for v in md2.modelVariables if v.causality == "output" and v.name.split(".")[-1].startswith("q")]
    q2 = [n for n in q2 if n.split(".")[-1].split("[")[0] == "q"]
    kw = dict(output_interval=0.01, step_size=0.01)
    r2 = simulate(f2, "CoSimulation", 1.0, [*q2, "E", "W_in"], **kw)
    r3 = simulate(f3, "CoSimulation", 1.0, ["q", "E", "W_in"], **kw)
    np.testing.assert_array_equal(np.stack([r2[n] for n in q2], axis=1), r3["q"])
    np.testing.assert_array_equal(r2["E"], r3["E"])
    np.testing.assert_array_equal(r2["W_in"], r3["W_in"])


def test_fmi3_model_exchange_under_cvode_is_the_fmi2_runs(native):
    """fmpy's CVode on the FMI 3.0 and the FMI 2.0 Model Exchange interfaces of the spacecraft: the
    same host calls, the same derivatives, so the same trajectory (to 1e-12 of each state's scale:
    fmpy's two CVode drivers may order their calls differently)."""
    f2, f3 = native.fmu("spacecraft"), fmu3(native, "spacecraft")
    kw = dict(output_interval=0.01, solver="CVode", relative_tolerance=1e-8)
    names2 = [f"base.q[{k}]" for k in range(1, 8)]
    r2 = simulate(f2, "ModelExchange", 2.0, [*names2, "E"], **kw)
    r3 = simulate(f3, "ModelExchange", 2.0, ["q", "E"], **kw)
    q2 = np.stack([r2[n] for n in names2], axis=1)
    assert np.abs(q2 - r3["q"][:, :7]).max() <= 1e-12 * max(1.0, np.abs(q2).max())
    assert np.abs(r2["E"] - r3["E"]).max() <= 1e-12 * np.abs(r2["E"]).max()


def slave(native, model: str):
    from fmpy import read_model_description
    from fmpy.fmi3 import FMU3Slave

    path = fmu3(native, model)
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    f = FMU3Slave(
        guid=md.guid,
        unzipDirectory=str(native.extracted(path)),
        modelIdentifier=md.coSimulation.modelIdentifier,
        instanceName="s3",
    )
    f.instantiate()
    f.enterInitializationMode(startTime=0.0)
    f.exitInitializationMode()
    return f, vr, md


def test_directional_and_adjoint_derivatives_are_transposes(native):
    """On the SCARA at a moving state, d(qdd)/du by fmi3GetDirectionalDerivative (the core's exact
    M^-1 B) and by fmi3GetAdjointDerivative satisfy w . (J v) = (J^T w) . v to 1e-13 relative for
    random v, w, and J's columns equal the FMI 2.0 FMU's fmi2GetDirectionalDerivative bit for bit."""
    rng = np.random.default_rng(3)
    f, vr, md = slave(native, "scara")
    f.setFloat64([vr["u"]], [0.3, -0.2])
    for k in range(5):
        f.doStep(currentCommunicationPoint=k * 0.01, communicationStepSize=0.01)
    J = np.array([f.getDirectionalDerivative([vr["qdd"]], [vr["u"]], list(e), 2) for e in np.eye(2)]).T
    v, w = rng.standard_normal(2), rng.standard_normal(2)
    Jv = np.array(f.getDirectionalDerivative([vr["qdd"]], [vr["u"]], list(v), 2))
    JTw = np.array(f.getAdjointDerivative([vr["qdd"]], [vr["u"]], list(w), 2))
    np.testing.assert_allclose(Jv, J @ v, rtol=1e-13, atol=0)
    assert abs(w @ Jv - JTw @ v) <= 1e-13 * np.abs(J).max() * np.abs(v).sum() * np.abs(w).sum()
    assert np.all(J != 0.0)
    f.terminate()
    f.freeInstance()


def test_fmi3_fmu_state_round_trip_is_bit_for_bit(native):
    """fmi3GetFMUState, serialise, deserialise, fmi3SetFMUState: the steps after restoring repeat
    the steps after saving bit for bit."""
    f, vr, md = slave(native, "spacecraft")
    size = {v.name: int(v.dimensions[0].start) if v.dimensions else 1 for v in md.modelVariables}
    for k in range(3):
        f.doStep(currentCommunicationPoint=k * 0.01, communicationStepSize=0.01)
    state = f.getFMUState()
    blob = f.serializeFMUState(state)
    runs = []
    for _ in range(2):
        restored = f.deserializeFMUState(blob)
        f.setFMUState(restored)
        for k in range(3, 6):
            f.doStep(currentCommunicationPoint=k * 0.01, communicationStepSize=0.01)
        runs.append(f.getFloat64([vr["q"], vr["qd"], vr["E"]], nValues=size["q"] + size["qd"] + 1))
        f.freeFMUState(restored)
    assert runs[0] == runs[1]
    f.freeFMUState(state)
    f.terminate()
    f.freeInstance()


def test_what_fmi3_does_not_provide_is_refused_with_a_reason(native):
    """Float32 and the other absent types, a wrong nValues, setting time, a Float64 call on the
    Int32 solver.method, configuration mode, event mode of this Co-Simulation FMU, Scheduled
    Execution: fmi3Error (3) with a logged reason; the instance keeps working."""
    from fmpy import read_model_description
    from fmpy.fmi3 import FMU3Slave, fmi3Float64, fmi3ValueReference

    path = fmu3(native, "scara")
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    log = []

    def logger(env, status, category, message):
        log.append((int(status), message.decode()))

    f = FMU3Slave(
        guid=md.guid, unzipDirectory=str(native.extracted(path)), modelIdentifier=md.coSimulation.modelIdentifier
    )
    f.fmiCallFunction = None
    f.instantiate(loggingOn=True, logMessage=logger)
    f.enterInitializationMode(startTime=0.0)
    f.exitInitializationMode()
    lib = f.dll

    def call(name, *args):
        log.clear()
        status = getattr(lib, name)(f.component, *args)
        return int(status), " ".join(m for s, m in log if s == 3)

    def vrs(*refs):
        return (fmi3ValueReference * len(refs))(*refs), len(refs)

    out = (fmi3Float64 * 8)()
    cases = [
        ("fmi3GetFloat32", (*vrs(vr["E"]), (ctypes.c_float * 1)(), 1), "is of type Float64"),
        ("fmi3GetFloat64", (*vrs(vr["q"]), out, 1), "nValues = 1, the variables have 2 elements"),
        ("fmi3GetFloat64", (*vrs(vr["solver.method"]), out, 1), "is of type Int32"),
        ("fmi3SetFloat64", (*vrs(0), out, 1), "independent variable time"),
        ("fmi3GetFloat64", (*vrs(10_000), out, 1), "unknown value reference 10000"),
        ("fmi3EnterConfigurationMode", (), "no structural parameters"),
        ("fmi3EnterEventMode", (), "no event mode"),
        ("fmi3EnterStepMode", (), "no event mode"),
    ]
    for name, args, why in cases:
        status, message = call(name, *args)
        assert status == 3 and why in message, (name, status, log)
    assert f.getFloat64([vr["time"], vr["E"]]) == pytest.approx([0.0, f.getFloat64([vr["E"]])[0]])
    f.doStep(currentCommunicationPoint=0.0, communicationStepSize=0.01)
    assert f.getFloat64([vr["time"]]) == [0.01]
    f.terminate()
    f.freeInstance()


def test_fmi3_model_exchange_jacobian_against_differences_and_its_adjoint(native):
    """The SCARA's FMI 3.0 Model Exchange interface (a tree: providesDirectionalDerivatives and
    providesAdjointDerivatives true; the four-bar's false): d(der(q), qdd)/d(q, qd) by
    fmi3GetDirectionalDerivative equals central differences of fmi3GetContinuousStateDerivatives
    to 1e-7 of its scale (step 1e-6: truncation ~1e-12 f''' scale, rounding ~1e-16 / 1e-6), and the
    adjoint gives J^T (w . J v = J^T w . v to 1e-13)."""
    import ctypes

    from fmpy import read_model_description
    from fmpy.fmi3 import FMU3Model

    assert description(fmu3(native, "fourbar")).find("ModelExchange").get("providesDirectionalDerivatives") == "false"
    path = fmu3(native, "scara")
    me = description(path).find("ModelExchange")
    assert me.get("providesDirectionalDerivatives") == "true" and me.get("providesAdjointDerivatives") == "true"
    md = read_model_description(str(path))
    vr = {v.name: v.valueReference for v in md.modelVariables}
    f = FMU3Model(
        guid=md.guid, unzipDirectory=str(native.extracted(path)), modelIdentifier=md.modelExchange.modelIdentifier
    )
    f.instantiate()
    f.enterInitializationMode(startTime=0.0)
    f.exitInitializationMode()
    f.updateDiscreteStates()
    f.enterContinuousTimeMode()
    nx = 6
    x0 = np.array([0.4, -0.7, 1.3, -0.5, 0.0, 0.0])

    def deriv(x):
        xs = (ctypes.c_double * nx)(*x)
        f.setContinuousStates(xs, nx)
        dx = (ctypes.c_double * nx)()
        f.getContinuousStateDerivatives(dx, nx)
        return np.array(dx[:])

    unknowns, knowns = [vr["der(q)"], vr["qdd"]], [vr["q"], vr["qd"]]
    h, J_fd = 1e-6, np.zeros((4, 4))
    for j in range(4):
        e = np.zeros(nx)
        e[j] = h
        J_fd[:, j] = ((deriv(x0 + e) - deriv(x0 - e)) / (2 * h))[:4]
    deriv(x0)
    J = np.array([f.getDirectionalDerivative(unknowns, knowns, list(col), 4) for col in np.eye(4)]).T
    assert np.abs(J - J_fd).max() <= 1e-7 * np.abs(J).max()
    rng = np.random.default_rng(5)
    v, w = rng.standard_normal(4), rng.standard_normal(4)
    JTw = np.array(f.getAdjointDerivative(unknowns, knowns, list(w), 4))
    assert abs(w @ (J @ v) - JTw @ v) <= 1e-13 * np.abs(J).max() * np.abs(v).sum() * np.abs(w).sum()
    f.terminate()
    f.freeInstance()
