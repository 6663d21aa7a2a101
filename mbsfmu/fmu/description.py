"""What an FMU says about itself, for both runtimes: its modelIdentifier, its build information
(``build_info``, shipped by the python runtime as ``resources/mbsfmu_build.json``) and its
modelDescription.xml (FMI 2.0 section 2.2).

``model_description`` completes a skeleton (pythonfmu's for the python runtime, ``skeleton`` for
the native one) from the variable table: units (UnitDefinitions), descriptions, min/max, exact
start values (repr, not 16 digits), ModelStructure Outputs and InitialUnknowns with their
dependencies, and the capability flags; ``native_description`` then sets the native runtime's
flags (no execution tool, the host's memory functions used) and its ``SourceFiles``.
"""

from __future__ import annotations

import datetime
import math
import re
import xml.etree.ElementTree as ET

from .. import __version__
from ..errors import MbsError
from .variables import UNITS, FmuVariable

BUILD_INFO = "mbsfmu_build.json"  # resources/ file of the python runtime's FMUs
INFO_FORMAT = 1
# the header's author, copyright and license (FMI 2.0 section 2.2.1): the engine and wrapper code the
# FMU carries are mbsfmu's (LICENSE)
AUTHOR = "mbsfmu developers"
COPYRIGHT = "Copyright (c) 2026 mbsfmu developers"
LICENSE = "MIT (mbsfmu's engine and FMI wrapper in this FMU); the model's data as its author states"
LOG_CATEGORIES = (
    ("logStatusWarning", "Log messages with fmi2Warning status."),
    ("logStatusDiscard", "Log messages with fmi2Discard status."),
    ("logStatusError", "Log messages with fmi2Error status."),
    ("logStatusFatal", "Log messages with fmi2Fatal status."),
    ("logAll", "Log all messages."),
)
# CoSimulation capability flags (FMI 2.0 section 4.3.1) of the python runtime; the native runtime
# changes needsExecutionTool and canNotUseMemoryManagementFunctions (``native_description``)
CAPABILITIES = (
    ("needsExecutionTool", "true"),
    ("canHandleVariableCommunicationStepSize", "true"),
    ("canInterpolateInputs", "false"),
    ("canBeInstantiatedOnlyOncePerProcess", "false"),
    ("canGetAndSetFMUstate", "true"),
    ("canSerializeFMUstate", "true"),
    ("canNotUseMemoryManagementFunctions", "true"),
)


class FmuBuildError(MbsError):
    """The FMU cannot be built (missing pythonfmu, a failed compile with loader=True, ...)."""


def model_identifier(name: str) -> str:
    """A C identifier for the FMU's modelIdentifier (binary name) from the model name."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII)
    return ident if ident and not ident[0].isdigit() else f"m_{ident}"


def build_info(guid: str, identifier: str, model_name: str, naming: str, description: str, **extra) -> dict:
    """The FMU's build information: format, guid, model_identifier, model_name, naming,
    engine_version, description, then ``extra`` (the python runtime: engine package and hash,
    the building Python, the model's files and solver)."""
    return {
        "format": INFO_FORMAT,
        "guid": guid,
        "model_identifier": identifier,
        "model_name": model_name,
        "naming": naming,
        "engine_version": __version__,
        "description": description,
        **extra,
    }


def now() -> str:
    """The current UTC time, ISO 8601 to the second (``built``, generationDateAndTime)."""
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def skeleton(model_name: str, table: list[FmuVariable], identifier: str, h_max: float) -> bytes:
    """The skeleton modelDescription.xml that ``model_description`` completes, where no pythonfmu
    writes one (the native runtime): header, CoSimulation, LogCategories, DefaultExperiment, the
    variables by name, an empty ModelStructure."""
    root = ET.Element(
        "fmiModelDescription",
        fmiVersion="2.0",
        modelName=model_name,
        guid="",
        generationTool="native C core",
        generationDateAndTime=now(),
    )
    ET.SubElement(root, "CoSimulation", modelIdentifier=identifier)
    cats = ET.SubElement(root, "LogCategories")
    for name, desc in LOG_CATEGORIES:
        ET.SubElement(cats, "Category", name=name, description=desc)
    ET.SubElement(root, "DefaultExperiment", startTime="0.0", stopTime="10.0", stepSize=repr(float(h_max or 1e-3)))
    mv = ET.SubElement(root, "ModelVariables")
    for v in table:
        ET.SubElement(mv, "ScalarVariable", name=v.name)
    ET.SubElement(root, "ModelStructure")
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True)


def model_description(raw_xml: bytes, table: list[FmuVariable], info: dict) -> bytes:
    """The skeleton ``raw_xml`` completed (see the module docstring); ``info``: ``build_info``."""
    root = ET.fromstring(raw_xml)
    root.set("guid", info["guid"])
    root.set("description", info["description"])
    root.set("version", info["engine_version"])
    root.set("author", AUTHOR)
    root.set("copyright", COPYRIGHT)
    root.set("license", LICENSE)
    root.set("generationTool", f"mbsfmu {info['engine_version']} ({root.get('generationTool', 'PythonFMU')})")
    root.set("variableNamingConvention", info["naming"])
    cs = root.find("CoSimulation")
    for key, value in CAPABILITIES:
        cs.set(key, value)
    at = list(root).index(cs) + 1
    units = ET.Element("UnitDefinitions")
    for name in sorted({v.unit for v in table if v.unit}):
        unit = ET.SubElement(units, "Unit", name=name)
        ET.SubElement(unit, "BaseUnit", {k: str(e) for k, e in UNITS[name].items()})
    root.insert(at, units)

    mv = root.find("ModelVariables")
    svs = list(mv)
    if [sv.get("name") for sv in svs] != [v.name for v in table]:
        raise FmuBuildError("pythonfmu's ModelVariables do not match the variable table (pythonfmu version?)")
    index = {v.name: k + 1 for k, v in enumerate(table)}
    for k, (sv, v) in enumerate(zip(svs, table)):
        attrs = {
            "name": v.name,
            "valueReference": str(k),
            "description": v.description,
            "causality": v.causality,
            "variability": v.variability,
        }
        if v.initial is not None:
            attrs["initial"] = v.initial
        sv.attrib.clear()
        sv.attrib.update(attrs)
        for child in list(sv):
            sv.remove(child)
        el = ET.SubElement(sv, v.type)
        if v.derivative:
            el.set("derivative", str(index[v.derivative]))
        if v.unit:
            el.set("unit", v.unit)
        for key, value in (("min", v.min), ("max", v.max), ("start", v.start)):
            if value is not None:
                el.set(key, xsd_double(float(value)) if v.type == "Real" else str(int(value)))
    ms = root.find("ModelStructure")
    for child in list(ms):
        ms.remove(child)
    outputs = [v for v in table if v.causality == "output"]
    if outputs:
        node = ET.SubElement(ms, "Outputs")
        for v in outputs:
            # the knowns: the inputs, and with Model Exchange the continuous states (state_deps)
            deps = sorted({index[d] for d in (*v.deps, *v.state_deps)})
            attrs = {"index": str(index[v.name]), "dependencies": " ".join(map(str, deps))}
            # qdd = M(q)^-1 (B u + ...): linear in u with a factor that varies with the state, so
            # "dependent" (FMI 2.0 fmi2VariableDependency.xsd; "fixed"/"tunable" need a factor fixed
            # between communication points)
            if deps:
                attrs["dependenciesKind"] = " ".join(["dependent"] * len(deps))
            ET.SubElement(node, "Unknown", attrs)
    # Model Exchange: the derivatives of the states, in the states' order (the vector x of
    # fmi2SetContinuousStates), each with the inputs and states it depends on
    position = state_positions(table)
    derivatives = sorted((v for v in table if v.derivative), key=lambda v: position[v.derivative])
    if derivatives:
        node = ET.SubElement(ms, "Derivatives")
        for v in derivatives:
            deps = sorted({index[d] for d in (*v.deps, *v.state_deps)})
            ET.SubElement(node, "Unknown", index=str(index[v.name]), dependencies=" ".join(map(str, deps)))
    initial = [v for v in table if (v.causality == "output" or v.derivative) and v.initial in ("approx", "calculated")]
    if initial:
        node = ET.SubElement(ms, "InitialUnknowns")
        for v in initial:
            ET.SubElement(
                node,
                "Unknown",
                index=str(index[v.name]),
                dependencies=" ".join(str(i) for i in sorted(index[d] for d in v.init_deps)),
            )
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def state_positions(table: list[FmuVariable]) -> dict[str, int]:
    """{state variable's name: its position in the state vector x = [q, qd, W_in, W_diss]} (the
    sources ``("x", k)``, then W_in and W_diss after them)."""
    n_x = sum(1 for w in table if w.source[0] == "x")
    out = {w.name: int(w.source[1]) for w in table if w.source[0] == "x"}
    out.update({w.name: n_x + ("W_in", "W_diss").index(w.source[1]) for w in table if w.source[0] == "energy"})
    return out


# ModelExchange capability flags (FMI 2.0 section 3.3.1) of the native runtime
ME_CAPABILITIES = (
    ("needsExecutionTool", "false"),
    ("completedIntegratorStepNotNeeded", "false"),  # it may ask for a step event (host_state.c)
    ("canBeInstantiatedOnlyOncePerProcess", "false"),
    ("canNotUseMemoryManagementFunctions", "false"),
    ("canGetAndSetFMUstate", "true"),
    ("canSerializeFMUstate", "true"),
    ("providesDirectionalDerivative", "false"),  # "true" for trees: native_description's state_jacobian
)


def native_description(
    raw: bytes, table: list[FmuVariable], info: dict, source_files: list[str], state_jacobian: bool = False
) -> bytes:
    """``model_description``, then the native runtime's capability flags (no execution tool, the
    host's memory functions used, directional derivatives of the outputs with respect to the
    inputs), the ModelExchange element when the table has the states' derivatives, and
    ``SourceFiles``. state_jacobian: the runtime gives the exact Jacobian of the state derivatives
    (state_jacobian.c: trees), so ModelExchange declares providesDirectionalDerivative."""
    root = ET.fromstring(model_description(raw, table, info))
    cs = root.find("CoSimulation")
    if any(v.derivative for v in table):
        root.set("numberOfEventIndicators", "0")
        me = ET.Element("ModelExchange", modelIdentifier=cs.get("modelIdentifier"))
        for key, value in ME_CAPABILITIES:
            me.set(key, value)
        if state_jacobian:
            me.set("providesDirectionalDerivative", "true")
        files = ET.SubElement(me, "SourceFiles")
        for name in source_files:
            ET.SubElement(files, "File", name=name)
        root.insert(list(root).index(cs), me)
    cs.set("needsExecutionTool", "false")
    cs.set("canNotUseMemoryManagementFunctions", "false")
    cs.set("providesDirectionalDerivative", "true")  # outputs w.r.t. inputs (fmi2_slave.c)
    for child in list(cs):
        cs.remove(child)
    files = ET.SubElement(cs, "SourceFiles")
    for name in source_files:
        ET.SubElement(files, "File", name=name)
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def xsd_double(x: float) -> str:
    """x as xs:double text: exact (repr) when finite, else INF, -INF or NaN."""
    if math.isfinite(x):
        return repr(x)
    return "NaN" if math.isnan(x) else ("INF" if x > 0 else "-INF")


__all__ = [
    "AUTHOR",
    "BUILD_INFO",
    "CAPABILITIES",
    "ME_CAPABILITIES",
    "COPYRIGHT",
    "LICENSE",
    "LOG_CATEGORIES",
    "FmuBuildError",
    "build_info",
    "model_description",
    "model_identifier",
    "native_description",
    "now",
    "skeleton",
    "state_positions",
    "xsd_double",
]
