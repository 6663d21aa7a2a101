"""The FMI 3.0 face of the native FMU: its variables (arrays where FMI 2.0 has scalars), its
modelDescription.xml (FMI 3.0 section 2.4) and ``sources/buildDescription.xml`` (section 2.5).

The FMI 3.0 variables are groups of the FMI 2.0 scalar variables of ``variables.variable_table``
(the C wrapper reads and writes an FMI 3.0 variable as its group of scalars, so both versions
share one value table and every number): the state vectors and the inputs are whole arrays
(``q`` (nq), ``qd`` (nv), ``qdd`` (nv), ``u`` (n_u), ``der(q)`` (nq)), the 3-vectors are arrays
(``gravity``, ``<body>.com``, ``p_sys``, ``H_sys``, ``R``, ``Rdot``), a body's inertia is the 6-array
``<body>.I`` (xx, yy, zz, xy, xz, yz about the CoM, body axes), and every other variable is the
scalar of the same name. Value reference 0 is the independent variable ``time``.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass

from .description import AUTHOR, COPYRIGHT, LICENSE, LOG_CATEGORIES, now, xsd_double
from .variables import UNITS, FmuVariable

# FMI 3.0 platform tuples of the native FMU's binaries, from the FMI 2.0 platform names it is asked for
PLATFORMS = {
    "linux64": ("x86_64-linux",),
    "win64": ("x86_64-windows",),
    "darwin64": ("x86_64-darwin", "aarch64-darwin"),
}


@dataclass(frozen=True)
class Fmi3Variable:
    """One FMI 3.0 variable: ``scalars`` the value references of its FMI 2.0 scalars in element
    order (() for ``time``), ``dims`` its array length (None: a scalar)."""

    name: str
    type: str  # "Float64" | "Int32"
    causality: str
    variability: str
    initial: str | None
    unit: str | None
    description: str
    scalars: tuple[int, ...]
    dims: int | None = None
    derivative: str | None = None
    deps: tuple[str, ...] = ()
    state_deps: tuple[str, ...] = ()
    init_deps: tuple[str, ...] = ()


def group_key(v: FmuVariable, source_names: dict) -> tuple[str, str]:
    """(FMI 3.0 name, description) of the group the FMI 2.0 scalar ``v`` belongs to."""
    src = v.source
    if src[0] == "x":
        return source_names["x"](int(src[1]))
    if src[0] == "qdd":
        return "qdd", "joint accelerations (the derivatives of qd), at the current state and inputs"
    if src[0] == "input":
        return "u", "inputs (the FMI 2.0 FMU's input variables in this order): " + source_names["inputs"]
    if src[0] == "der":
        return source_names["der"](int(src[1]))
    m = re.match(r"^(.*)\[(\d+),(\d+)\]$", v.name)
    if m and src[0] == "param" and src[1][0] == "inertia":
        body = src[1][1]
        return m.group(1), (
            f"inertia of body {body} about its centre of mass, body axes: Ixx, Iyy, Izz, Ixy, Ixz, Iyz [kg.m2]"
        )
    m = re.match(r"^(.*)\[(\d+)\]$", v.name)
    if m:
        desc = re.sub(r",? component \d+$", "", v.description)
        return m.group(1), desc
    return v.name, v.description


def fmi3_variables(model, table: list[FmuVariable]) -> list[Fmi3Variable]:
    """The FMI 3.0 variables of the FMI 2.0 scalar table ``table`` (in value-reference order,
    ``time`` first; a group's position is its first scalar's)."""
    nq = model.nq
    names = [v.name for v in table]
    inputs = [v for v in table if v.source[0] == "input"]
    x_group = {
        "q": "joint coordinates, the joints' q in tree order (quaternions scalar first)",
        "qd": "joint rates, the joints' qd in tree order",
    }

    def x_of(k: int) -> tuple[str, str]:
        return ("q", x_group["q"]) if k < nq else ("qd", x_group["qd"])

    der_vars = {v.source[1]: v for v in table if v.source[0] == "der"}

    def der_of(k: int) -> tuple[str, str]:
        if k < nq:
            return "der(q)", "time derivative of q (Model Exchange)"
        return der_vars[k].name, der_vars[k].description

    source_names = {"x": x_of, "der": der_of, "inputs": ", ".join(v.name for v in inputs)}
    groups: dict[str, list[int]] = {}
    info: dict[str, tuple[str, FmuVariable]] = {}
    for k, v in enumerate(table):
        name, desc = group_key(v, source_names)
        groups.setdefault(name, []).append(k)
        info.setdefault(name, (desc, v))
    out = [Fmi3Variable("time", "Float64", "independent", "continuous", None, "s", "simulation time", (), None)]
    group_of = {}
    for name, members in groups.items():
        for k in members:
            group_of[names[k]] = name
    for name, members in sorted(groups.items(), key=lambda kv: kv[1][0]):
        desc, first = info[name]
        if name in ("q", "qd", "qdd", "u", "der(q)"):  # the engine's vector order (x, qdd, u)
            members = sorted(members, key=lambda k: int(table[k].source[1]))
        vs = [table[k] for k in members]
        units = {v.unit for v in vs}
        unit = first.unit if len(units) == 1 else None
        array = len(members) > 1 or name in ("q", "qd", "qdd", "u", "der(q)")
        deps = tuple(dict.fromkeys(group_of[d] for v in vs for d in v.deps))
        state_deps = tuple(dict.fromkeys(group_of[d] for v in vs for d in v.state_deps))
        init_deps = tuple(dict.fromkeys(group_of[d] for v in vs for d in v.init_deps))
        derivative = group_of[first.derivative] if first.derivative else None
        out.append(
            Fmi3Variable(
                name,
                "Float64" if first.type == "Real" else "Int32",
                first.causality,
                first.variability,
                first.initial,
                unit,
                desc
                if unit or len(units) <= 1
                else desc + " (units per element: " + ", ".join(v.unit or "1" for v in vs) + ")",
                tuple(members),
                len(members) if array else None,
                derivative,
                deps,
                state_deps,
                init_deps,
            )
        )
    return out


def starts(v: Fmi3Variable, table: list[FmuVariable], attr: str) -> str | None:
    """The start/min/max attribute of ``v`` from its scalars (space-separated for an array;
    None where no scalar has it; an array's min/max only when every element has the same)."""
    values = [getattr(table[k], attr) for k in v.scalars]
    if all(x is None for x in values) or not values:
        return None
    text = [xsd_double(float(x)) if v.type == "Float64" else str(int(x)) for x in values if x is not None]
    if attr == "start":
        return " ".join(text) if len(text) == len(values) else None
    return text[0] if len(set(text)) == 1 and len(text) == len(values) else None


# ModelExchange and CoSimulation capability flags (FMI 3.0 sections 3.3.1 and 4.3.1) of the native FMU
ME3_CAPABILITIES = (
    ("needsExecutionTool", "false"),
    ("canBeInstantiatedOnlyOncePerProcess", "false"),
    ("canGetAndSetFMUState", "true"),
    ("canSerializeFMUState", "true"),
    ("providesDirectionalDerivatives", "false"),  # true for a tree (model_description's me_jacobian)
    ("providesAdjointDerivatives", "false"),
    ("providesPerElementDependencies", "false"),
    ("needsCompletedIntegratorStep", "true"),  # it may ask for a projection event (host_state.c)
    ("providesEvaluateDiscreteStates", "false"),
)
CS3_CAPABILITIES = (
    ("needsExecutionTool", "false"),
    ("canBeInstantiatedOnlyOncePerProcess", "false"),
    ("canGetAndSetFMUState", "true"),
    ("canSerializeFMUState", "true"),
    ("providesDirectionalDerivatives", "true"),  # the outputs w.r.t. the inputs (fmu_instance.c)
    ("providesAdjointDerivatives", "true"),
    ("providesPerElementDependencies", "false"),
    ("canHandleVariableCommunicationStepSize", "true"),
    ("maxOutputDerivativeOrder", "0"),
    ("providesIntermediateUpdate", "false"),  # doStep completes: no intermediate updates
    ("mightReturnEarlyFromDoStep", "false"),  # never returns early (earlyReturnAllowed is ignored)
    ("canReturnEarlyAfterIntermediateUpdate", "false"),
    ("hasEventMode", "false"),  # no events in co-simulation: eventModeUsed is not needed
    ("providesEvaluateDiscreteStates", "false"),
)


def model_description(
    model_name: str,
    identifier: str,
    info: dict,
    table: list[FmuVariable],
    variables: list[Fmi3Variable],
    h_max: float,
    me_jacobian: bool = False,
) -> bytes:
    """modelDescription.xml (FMI 3.0) of the native FMU: ModelExchange and CoSimulation, units,
    log categories, the default experiment, the variables and the ModelStructure (dependencies by
    value reference). me_jacobian: Model Exchange gives the Jacobian of the state derivatives
    (directional and adjoint derivatives; a tree, native.jacobian_refusal)."""
    vr = {v.name: k for k, v in enumerate(variables)}
    root = ET.Element(
        "fmiModelDescription",
        fmiVersion="3.0",
        modelName=model_name,
        instantiationToken=info["guid"],
        description=info["description"],
        author=AUTHOR,
        version=info["engine_version"],
        copyright=COPYRIGHT,
        license=LICENSE,
        generationTool=f"mbsfmu {info['engine_version']} (native C core)",
        generationDateAndTime=now(),
        variableNamingConvention=info["naming"],
    )
    me = ET.SubElement(root, "ModelExchange", modelIdentifier=identifier)
    for key, value in ME3_CAPABILITIES:
        me.set(key, value)
    if me_jacobian:
        me.set("providesDirectionalDerivatives", "true")
        me.set("providesAdjointDerivatives", "true")
    cs = ET.SubElement(root, "CoSimulation", modelIdentifier=identifier)
    for key, value in CS3_CAPABILITIES:
        cs.set(key, value)
    units = ET.SubElement(root, "UnitDefinitions")
    for name in sorted({v.unit for v in table if v.unit} | {"s"}):
        unit = ET.SubElement(units, "Unit", name=name)
        ET.SubElement(unit, "BaseUnit", {k: str(e) for k, e in UNITS[name].items()})
    cats = ET.SubElement(root, "LogCategories")
    for name, desc in LOG_CATEGORIES:
        ET.SubElement(cats, "Category", name=name, description=desc)
    ET.SubElement(root, "DefaultExperiment", startTime="0.0", stopTime="10.0", stepSize=repr(float(h_max or 1e-3)))
    mv = ET.SubElement(root, "ModelVariables")
    for k, v in enumerate(variables):
        attrs = {
            "name": v.name,
            "valueReference": str(k),
            "description": v.description,
            "causality": v.causality,
            "variability": v.variability,
        }
        if v.initial is not None:
            attrs["initial"] = v.initial
        if v.unit and v.type == "Float64":
            attrs["unit"] = v.unit
        for key in ("min", "max", "start"):
            text = starts(v, table, key)
            if text is not None:
                attrs[key] = text
        if v.derivative:
            attrs["derivative"] = str(vr[v.derivative])
        el = ET.SubElement(mv, v.type, attrs)
        if v.dims is not None:
            ET.SubElement(el, "Dimension", start=str(v.dims))
    ms = ET.SubElement(root, "ModelStructure")

    def unknown(tag: str, v: Fmi3Variable, deps) -> None:
        refs = sorted({vr[d] for d in deps})
        attrs = {"valueReference": str(vr[v.name]), "dependencies": " ".join(map(str, refs))}
        if refs:
            attrs["dependenciesKind"] = " ".join(["dependent"] * len(refs))
        ET.SubElement(ms, tag, attrs)

    for v in variables:
        if v.causality == "output":
            unknown("Output", v, (*v.deps, *v.state_deps))
    derivatives = [v for v in variables if v.derivative]
    order = {"q": 0, "qd": 1, "W_in": 2, "W_diss": 3}
    for v in sorted(derivatives, key=lambda v: order.get(v.derivative, 4)):
        unknown("ContinuousStateDerivative", v, (*v.deps, *v.state_deps))
    for v in variables:
        if (v.causality == "output" or v.derivative) and v.initial in ("approx", "calculated"):
            unknown("InitialUnknown", v, v.init_deps)
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def build_description(identifier: str, c_files: list[str]) -> bytes:
    """sources/buildDescription.xml (FMI 3.0 section 2.5): one build configuration, the C99
    sources (headers beside them in sources/), libm on platforms that have it apart."""
    root = ET.Element("fmiBuildDescription", fmiVersion="3.0")
    conf = ET.SubElement(root, "BuildConfiguration", modelIdentifier=identifier)
    files = ET.SubElement(conf, "SourceFileSet", language="C99")
    for name in c_files:
        ET.SubElement(files, "SourceFile", name=name)
    ET.SubElement(conf, "Library", name="m", description="the C math library (libm) where it is apart from libc")
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def c_table(variables: list[Fmi3Variable]) -> list[str]:
    """The generated C of the FMI 3.0 variable map (fmu_model.h mbsfmu_var3): per variable its
    name, type and the FMI 2.0 scalar value references of its elements."""
    from .c_text import c_string

    lines = []
    flat = [k for v in variables for k in v.scalars]
    lines.append(
        f"static const unsigned mbsfmu_scalars3[{max(len(flat), 1)}] = {{{', '.join(map(str, flat)) or '0'}}};"
    )
    lines.append(f"static const mbsfmu_var3 mbsfmu_vars3[{len(variables)}] = {{")
    at = 0
    for v in variables:
        kind = "'T'" if v.causality == "independent" else ("'R'" if v.type == "Float64" else "'I'")
        lines.append(f"    {{{c_string(v.name)}, {kind}, {len(v.scalars)}, mbsfmu_scalars3 + {at}}},")
        at += len(v.scalars)
    lines.append("};")
    return lines


__all__ = [
    "CS3_CAPABILITIES",
    "ME3_CAPABILITIES",
    "PLATFORMS",
    "Fmi3Variable",
    "build_description",
    "c_table",
    "fmi3_variables",
    "group_key",
    "model_description",
    "starts",
]
