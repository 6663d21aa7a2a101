"""``build_fmu``: an FMI 2.0 Co-Simulation FMU of a model file, and the ``mbsfmu build-fmu`` command.

Steps: validate the model; stage a generated pythonfmu slave module, a copy of this engine (as
the package ``mbsfmu_engine_<hash>``, so the FMU runs the engine it was built with even in a
Python process that imports another mbsfmu), the model file and ``mbsfmu_build.json``; build with
pythonfmu's ``FmuBuilder`` (its Python API); then rewrite the FMU:

- needsExecutionTool="true" (FMI 2.0 section 4.3.1): the FMU runs in a Python installation with
  numpy, scipy and PyYAML that the host provides (documentation/externalDependencies.txt says
  exactly what); no build-machine path is shipped or added to the host's sys.path;
- modelDescription.xml: pythonfmu's XML completed with units (UnitDefinitions), descriptions, min/max, exact start values (repr, not 16 digits),
  ModelStructure Outputs and InitialUnknowns with their dependencies, and the capability flags;
- binaries/linux64/<id>.so: the loader (``loader.c``, compiled here with the building Python's
  headers), which starts or joins Python and forwards to pythonfmu's binary, kept as
  binaries/linux64/<id>.pythonfmu.so. Without a C compiler or Python headers the FMU keeps
  pythonfmu's binary and loads only in Python hosts (a warning says so).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import uuid
import warnings
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

from mbsfmu import __version__, load_model
from mbsfmu.errors import InputError, MbsError
from mbsfmu.sim.simulator import Simulator
from .variables import METHODS, NAMINGS, UNITS, FmuVariable, variable_table

PACKAGE_DIR = Path(__file__).resolve().parents[1]      # the mbsfmu package being bundled
LOADER_SOURCE = Path(__file__).with_name("csrc") / "loader.c"
BUILD_INFO = "mbsfmu_build.json"
MODEL_DIR = "mbsfmu_model"
PLATFORM = "linux64"


class FmuBuildError(MbsError):
    """The FMU cannot be built (missing pythonfmu, a failed compile with loader=True, ...)."""


def build_fmu(model: str | Path, output: str | Path | None = None, *, naming: str = "structured",
              integrator: str = "rk4", h_max: float = 1e-3, rtol: float = 1e-10, atol: float = 1e-12,
              loader: bool | None = None) -> Path:
    """Build ``output`` (default ``<modelIdentifier>.fmu``) from the model file ``model``.

    naming: "structured" (``q1.tau``, ``push.f[1]``) or "flat" (``q1_tau``, ``push_f_1``);
    integrator, h_max [s], rtol, atol: start values of the solver parameters (tunable before
    initialisation). loader: True = the Linux loader binary is required (FmuBuildError if it
    cannot be compiled), False = ship pythonfmu's binary only, None = loader if possible.
    Returns the FMU's path. ModelError lists the model's problems."""
    try:
        from pythonfmu.builder import FmuBuilder  # noqa: F401 (fail early, before any work, with a clear message)
    except ImportError:
        raise FmuBuildError("building an FMU needs pythonfmu: pip install 'mbsfmu[fmu]'") from None
    model_path = Path(model)
    m = load_model(model_path)
    Simulator(m, integrator=integrator, h_max=h_max, rtol=rtol, atol=atol)      # InputError on bad settings
    try:
        table = variable_table(m, naming, integrator, h_max, rtol, atol)
    except ValueError as e:
        raise InputError(f"model {model_path}: {e}") from None
    identifier = model_identifier(m.name)
    output = Path(output) if output is not None else Path(f"{identifier}.fmu")
    if output.is_dir():
        output = output / f"{identifier}.fmu"
    guid = str(uuid.uuid4())
    engine = f"mbsfmu_engine_{engine_hash()}"
    module = f"mbsfmu_slave_{identifier}_{guid.replace('-', '')[:12]}"
    solver = {"method": integrator, "h_max": float(h_max), "rtol": float(rtol), "atol": float(atol)}

    with tempfile.TemporaryDirectory(prefix="mbsfmu_fmu_") as tmp:
        tmp = Path(tmp)
        stage = tmp / "stage"
        stage.mkdir()
        copy_engine(stage / engine)
        model_rel = _copy_model(model_path, stage / MODEL_DIR)
        info = {
            "format": 1, "guid": guid, "model_identifier": identifier, "model_name": m.name,
            "model_file": f"{MODEL_DIR}/{model_rel}", "model_source": model_path.name, "naming": naming,
            "solver": solver, "engine_package": engine, "engine_version": __version__, "engine_hash": engine[14:],
            "description": (f"mbsfmu rigid multibody model {m.name}: {m.N} bodies, nq = {m.nq}, nv = {m.nv} "
                            f"(FMI 2.0 Co-Simulation, engine mbsfmu {__version__})"),
            "built": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "python": python_info(),
        }
        (stage / BUILD_INFO).write_text(json.dumps(info, indent=1), encoding="utf-8")
        script = stage / f"{module}.py"
        script.write_text(slave_module(identifier, engine, f"mbsfmu model {m.name}"), encoding="utf-8")

        package(script, [stage / engine, stage / MODEL_DIR, stage / BUILD_INFO], tmp, identifier, guid, table, info,
                 loader, output)
    return output


def package(script: Path, project_files: list[Path], tmp: Path, identifier: str, guid: str, table, info: dict,
             loader, output: Path) -> None:
    """pythonfmu's builder on the generated slave module, then the loader binary, and ``_finish``
    writes ``output``; shared by the model and controller FMUs."""
    from pythonfmu.builder import FmuBuilder
    before = set(sys.modules)
    try:
        raw = FmuBuilder.build_FMU(script, dest=tmp / "raw" / f"{identifier}.fmu", project_files=project_files,
                                   canGetAndSetFMUstate=True, canSerializeFMUstate=True)
    finally:
        _forget_staged_modules(before, tmp)
    binary = None if loader is False else _compile_loader(tmp / "loader", identifier, guid, table, info,
                                                          required=bool(loader))
    _finish(Path(raw), output, table, info, binary)


def model_identifier(name: str) -> str:
    """A C identifier for the FMU's modelIdentifier (binary name) from the model name."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII)
    return ident if ident and not ident[0].isdigit() else f"m_{ident}"


def _engine_sources() -> list[Path]:
    """The engine's Python sources and the C core's sources (mbsfmu/engine/native/*.c, *.h)."""
    files = [*PACKAGE_DIR.rglob("*.py"), *(PACKAGE_DIR / "engine" / "native").glob("*.c"),
             *(PACKAGE_DIR / "engine" / "native").glob("*.h")]
    return sorted(f for f in files if "__pycache__" not in f.parts)


def engine_hash() -> str:
    """12 hex digits of SHA-256 over the engine's sources (relative paths and contents)."""
    h = hashlib.sha256()
    for f in _engine_sources():
        h.update(f.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


# ---- staging ----------------------------------------------------------------------------------

def copy_engine(dest: Path) -> None:
    """The engine's sources and the C core's library for this host (built first if needed), so
    the FMU's engine copy runs the native backend as the building process does."""
    from mbsfmu.engine.native import build as native_build
    for f in _engine_sources():
        target = dest / f.relative_to(PACKAGE_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    lib = native_build.library()
    shutil.copyfile(lib, dest / "engine" / "native" / lib.name)


def _copy_model(path: Path, dest: Path) -> str:
    """Copy the model file (and the URDF an overlay names) into dest; its path relative to dest."""
    dest.mkdir(parents=True)
    shutil.copyfile(path, dest / path.name)
    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        from mbsfmu.io.model_file import parse_file
        data, _lines = parse_file(path)
        if isinstance(data, dict) and isinstance(data.get("urdf"), str):
            rel = Path(data["urdf"])
            if rel.is_absolute() or ".." in rel.parts:
                raise FmuBuildError(f"{path}: urdf: {rel}: an FMU bundles the URDF only when its path is relative and "
                                    "inside the overlay's folder")
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path.parent / rel, dest / rel)
    return path.name


def python_info() -> dict:
    """The building interpreter: version, executable, libpython and the directories of its packages."""
    import numpy
    import scipy
    import yaml
    dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
    user = site.getusersitepackages() if hasattr(site, "getusersitepackages") else None
    if user and Path(user).is_dir():
        dirs.append(user)
    for mod in (numpy, scipy, yaml):
        d = str(Path(mod.__file__).resolve().parents[1])
        if d not in dirs:
            dirs.append(d)
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    libpython = None
    for name in (sysconfig.get_config_var("INSTSONAME"), sysconfig.get_config_var("LDLIBRARY")):
        if name and (Path(libdir) / name).is_file() and ".so" in name:
            libpython = str(Path(libdir) / name)
            break
    return {"version": ".".join(map(str, sys.version_info[:3])), "abi": f"{sys.version_info[0]}.{sys.version_info[1]}",
            "executable": sys.executable, "libpython": libpython,
            "shared": bool(sysconfig.get_config_var("Py_ENABLE_SHARED")),
            "include": sysconfig.get_paths()["include"], "site_dirs": dirs}


def slave_module(identifier: str, engine: str, what: str, slave: str = "fmu.slave import MbsfmuSlave",
                  maker: str = "mbsfmu build-fmu") -> str:
    """The generated pythonfmu slave module: repoints stale engine copies, works around pythonfmu 0.7's reference-count defect, and defines the slave
    class ``identifier`` from ``<engine>.<slave>``; ``what`` describes the FMU."""
    return f'''"""pythonfmu slave module of the FMU {identifier} ({what}), generated by
{maker}."""
import os as _os
import sys as _sys

_HERE = _os.path.dirname(_os.path.abspath(__file__))
_ENGINE = "{engine}"


def _prepare():
    """Point an engine copy left in sys.modules by an FMU whose files are gone at this FMU's
    identical copy. The packages the engine needs (numpy, scipy, PyYAML) come from the Python
    that runs the FMU (documentation/externalDependencies.txt): nothing is added to sys.path."""
    for key, mod in list(_sys.modules.items()):
        path = getattr(mod, "__path__", None)
        if (key == _ENGINE or key.startswith(_ENGINE + ".")) and path and not _os.path.isdir(list(path)[0]):
            mod.__path__ = [_os.path.join(_HERE, *key.split("."))]


_prepare()

# pythonfmu 0.7's binary re-executes this file at every fmi2Instantiate (its findClass) and then
# releases one reference to this module's globals that it never took (PyModule_GetDict returns a
# borrowed reference); without this line the dict is freed after two instances and the process
# crashes. Each execution keeps one reference for it.
_sys.__dict__.setdefault("_mbsfmu_pythonfmu_globals_refs", []).append(globals())

# pythonfmu's binary finds the slave class by the text "class <name>(Fmi2Slave):"
from {engine}.{slave} as Fmi2Slave  # noqa: E402


class {identifier}(Fmi2Slave):
    """FMI 2.0 Co-Simulation slave: {what}."""
'''


def _forget_staged_modules(before: set, tmp: Path) -> None:
    """Drop the modules the build imported from the staging folder (about to be deleted), so a
    later FMU of the same engine imports its own copy; and the folder from sys.path."""
    for key in set(sys.modules) - before:
        f = getattr(sys.modules[key], "__file__", None) or ""
        if f and Path(f).resolve().is_relative_to(tmp.resolve()):
            del sys.modules[key]
    sys.path[:] = [p for p in sys.path if not (p and Path(p).resolve().is_relative_to(tmp.resolve()))]


# ---- modelDescription.xml -----------------------------------------------------------------------

def model_description(raw_xml: bytes, table: list[FmuVariable], info: dict) -> bytes:
    """pythonfmu's modelDescription.xml completed (see the module docstring)."""
    root = ET.fromstring(raw_xml)
    root.set("guid", info["guid"])
    root.set("description", info["description"])
    root.set("version", info["engine_version"])
    root.set("generationTool", f"mbsfmu {info['engine_version']} ({root.get('generationTool', 'PythonFMU')})")
    root.set("variableNamingConvention", info["naming"])
    cs = root.find("CoSimulation")
    for key, value in (("needsExecutionTool", "true"), ("canHandleVariableCommunicationStepSize", "true"),
                       ("canInterpolateInputs", "false"), ("canBeInstantiatedOnlyOncePerProcess", "false"),
                       ("canGetAndSetFMUstate", "true"), ("canSerializeFMUstate", "true"),
                       ("canNotUseMemoryManagementFunctions", "true")):
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
        attrs = {"name": v.name, "valueReference": str(k), "description": v.description,
                 "causality": v.causality, "variability": v.variability}
        if v.initial is not None:
            attrs["initial"] = v.initial
        sv.attrib.clear()
        sv.attrib.update(attrs)
        for child in list(sv):
            sv.remove(child)
        el = ET.SubElement(sv, v.type)
        if v.unit:
            el.set("unit", v.unit)
        for key, value in (("min", v.min), ("max", v.max), ("start", v.start)):
            if value is not None:
                el.set(key, _xsd_double(float(value)) if v.type == "Real" else str(int(value)))
    ms = root.find("ModelStructure")
    for child in list(ms):
        ms.remove(child)
    outputs = [v for v in table if v.causality == "output"]
    if outputs:
        node = ET.SubElement(ms, "Outputs")
        for v in outputs:
            ET.SubElement(node, "Unknown", index=str(index[v.name]),
                          dependencies=" ".join(str(i) for i in sorted(index[d] for d in v.deps)))
    initial = [v for v in table if v.causality == "output" and v.initial in ("approx", "calculated")]
    if initial:
        node = ET.SubElement(ms, "InitialUnknowns")
        for v in initial:
            ET.SubElement(node, "Unknown", index=str(index[v.name]),
                          dependencies=" ".join(str(i) for i in sorted(index[d] for d in v.init_deps)))
    ET.indent(root)
    return ET.tostring(root, encoding="UTF-8", xml_declaration=True) + b"\n"


def _xsd_double(x: float) -> str:
    """x as xs:double text: exact (repr) when finite, else INF, -INF or NaN."""
    if math.isfinite(x):
        return repr(x)
    return "NaN" if math.isnan(x) else ("INF" if x > 0 else "-INF")


# ---- the loader binary --------------------------------------------------------------------------

def _c_string(s: str) -> str:
    out = []
    for b in s.encode("utf-8"):
        c = chr(b)
        out.append(c if (c.isalnum() or c in " ._-/+:,=[]()") and b < 128 else f"\\{b:03o}")
    return '"' + "".join(out) + '"'


def _c_double(x) -> str:
    return "NAN" if x is None else repr(float(x))


def loader_config(identifier: str, guid: str, table: list[FmuVariable], info: dict) -> str:
    """mbsfmu_loader_config.h: the variable table and the names (never paths of the build machine)
    of the Python library and interpreter the loader looks for."""
    py = info["python"]
    rows = []
    for v in table:
        typ = {"Real": "R", "Integer": "I"}[v.type]
        cau = {"parameter": "p", "input": "i", "output": "o"}[v.causality]
        rows.append(f"    {{'{typ}', '{cau}', {_c_double(v.min)}, {_c_double(v.max)}, {_c_string(v.name)}}},")
    return "\n".join([
        "/* generated by mbsfmu build-fmu */",
        f"#define MBSFMU_LIBPYTHON {_c_string(Path(py['libpython']).name)}",
        f"#define MBSFMU_PYTHON_EXE {_c_string('python' + py['abi'])}",
        f"#define MBSFMU_PY_VERSION {_c_string(py['abi'])}",
        f"#define MBSFMU_REAL_BINARY {_c_string(identifier + '.pythonfmu.so')}",
        f"#define MBSFMU_GUID {_c_string(guid)}",
        "static const Variable MBSFMU_VARS[] = {", *rows, "};", ""])


def _compile_loader(work: Path, identifier: str, guid: str, table, info: dict, required: bool) -> Path | None:
    """Compile loader.c for this FMU; None (with a warning) when it cannot be built and not required."""
    py = info["python"]
    problem = None
    cc = (sysconfig.get_config_var("CC") or "gcc").split()[0]
    if not sys.platform.startswith("linux"):
        problem = f"the loader binary is for Linux (this is {sys.platform})"
    elif not py["libpython"]:
        problem = "this Python has no shared libpython (built without --enable-shared)"
    elif not (Path(py["include"]) / "Python.h").is_file():
        problem = f"no Python.h in {py['include']} (install the Python development headers, e.g. python3-dev)"
    elif shutil.which(cc) is None and shutil.which("gcc") is None:
        problem = "no C compiler (gcc) found"
    if problem is None:
        cc = cc if shutil.which(cc) else "gcc"
        work.mkdir(parents=True)
        (work / "mbsfmu_loader_config.h").write_text(loader_config(identifier, guid, table, info), encoding="utf-8")
        out = work / f"{identifier}.so"
        cmd = [cc, "-shared", "-fPIC", "-O2", "-std=gnu11", "-fvisibility=hidden", "-Wall", f"-I{work}",
               f"-I{py['include']}", str(LOADER_SOURCE), "-o", str(out), "-Wl,-z,defs", "-ldl", "-lpthread"]
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode == 0:
            return out
        problem = f"compiling the loader failed: {' '.join(cmd)}\n{run.stderr.strip()}"
    if required:
        raise FmuBuildError(f"cannot build the FMU's loader binary: {problem}")
    warnings.warn(f"mbsfmu build-fmu: {problem}; the FMU keeps pythonfmu's binary and loads only in Python hosts "
                  "(or with LD_PRELOAD set to libpython)", stacklevel=3)
    return None


EXTERNAL_DEPENDENCIES = """This FMU (mbsfmu {version}, python runtime) needs an execution tool: a Python {abi}
installation with the packages numpy, scipy and PyYAML (any version the mbsfmu engine supports:
numpy >= 1.24, scipy >= 1.10, PyYAML >= 6). The engine's own code (pure Python) and pythonfmu's
Python package are inside resources/; nothing else is loaded, numba is never imported, and
nothing is added to the host's sys.path.

- A host that runs Python {abi} itself (fmpy, ...): the FMU runs in that interpreter, so numpy,
  scipy and PyYAML must be importable there.
- Any other host on Linux x86-64 (C/C++ tools, libcosim, ...): binaries/linux64/{ident}.so
  starts Python {abi} in the host process. It loads the library named by the environment variable
  MBSFMU_LIBPYTHON (a libpython{abi}.so), else libpython{abi}.so.1.0 from the system's library
  search path; MBSFMU_PYTHON names the interpreter whose installation (prefix, site-packages)
  to use, else python{abi} on PATH. The host's PYTHONPATH and PYTHONHOME are ignored.
- Other platforms: none (binaries/ holds linux64 only). Build the native runtime for Windows and
  macOS, which needs no Python at all.
"""


def shipped_build_info(info: dict, loader: bool) -> dict:
    """resources/mbsfmu_build.json as shipped: the build information without the build machine's
    paths (only the Python version), and whether the loader binary reports failed calls as
    fmi2Error (protocol.guarded)."""
    py = info["python"]
    return {**info, "python": {"version": py["version"], "abi": py["abi"]}, "loader": loader}


def _finish(raw: Path, output: Path, table, info: dict, binary: Path | None) -> None:
    """Write the final FMU: pythonfmu's files without binaries it cannot back (win64: pythonfmu's
    stock DLL, without our checks, needing a Python on PATH), the new modelDescription.xml, the
    loader, resources/mbsfmu_build.json without build paths and
    documentation/externalDependencies.txt (through a uniquely named part file, so concurrent builds
    of one FMU never mix and a failure leaves none)."""
    ident = info["model_identifier"]
    lib = f"binaries/{PLATFORM}/{ident}.so"
    output.parent.mkdir(parents=True, exist_ok=True)
    tmp_out = output.with_name(output.name + f".{uuid.uuid4().hex[:8]}.part")
    try:
        with zipfile.ZipFile(raw) as zin, zipfile.ZipFile(tmp_out, "w", zipfile.ZIP_DEFLATED) as zout:
            names = zin.namelist()
            if lib not in names and binary is not None:
                raise FmuBuildError(f"pythonfmu's FMU has no {lib}")
            for name in names:
                if name.endswith("/") or (name.startswith("binaries/") and not name.startswith(f"binaries/{PLATFORM}/")):
                    continue
                data = zin.read(name)
                if name == "modelDescription.xml":
                    data = model_description(data, table, info)
                elif name == f"resources/{BUILD_INFO}":
                    data = json.dumps(shipped_build_info(info, binary is not None), indent=1).encode("utf-8")
                elif name == lib and binary is not None:
                    zout.writestr(f"binaries/{PLATFORM}/{ident}.pythonfmu.so", data)
                    data = binary.read_bytes()
                zout.writestr(_entry(name, zin.getinfo(name)), data)
            deps = EXTERNAL_DEPENDENCIES.format(version=info["engine_version"], abi=info["python"]["abi"], ident=ident)
            zout.writestr(_entry("documentation/externalDependencies.txt", zin.getinfo("modelDescription.xml")),
                          deps.encode("utf-8"))
        tmp_out.replace(output)
    finally:
        tmp_out.unlink(missing_ok=True)


def _entry(name: str, src: zipfile.ZipInfo) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=src.date_time)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = (0o755 if name.endswith(".so") else 0o644) << 16
    return info


# ---- command line -------------------------------------------------------------------------------

def add_parser(sub) -> argparse.ArgumentParser:
    """``mbsfmu build-fmu MODEL -o MODEL.fmu [--naming structured|flat] ...`` (pythonfmu's
    create_command_parser pattern: this module owns its subparser)."""
    p = sub.add_parser("build-fmu", help="build an FMI 2.0 Co-Simulation FMU of a model",
                       description="Build an FMI 2.0 Co-Simulation FMU of a model file. --runtime native (default): "
                                   "the C engine core compiled with the model's tables for linux64, win64 and "
                                   "darwin64 by zig cc, needing nothing at run time; --runtime python: pythonfmu, "
                                   "with the model and this engine bundled in its resources (needs mbsfmu[fmu] and "
                                   "a Python with numpy/scipy/PyYAML at run time).")
    p.add_argument("model", help="model file (YAML/JSON, URDF or URDF overlay)")
    p.add_argument("-o", "--output", "--out", help="FMU file to write (default: <model name>.fmu)")
    p.add_argument("--runtime", choices=("native", "python"), default="native",
                   help="native: Python-free FMU on the C engine core (default); python: pythonfmu FMU")
    p.add_argument("--naming", choices=NAMINGS, default="structured",
                   help="variable names: structured (q1.tau, push.f[1]) or flat (q1_tau, push_f_1)")
    p.add_argument("--integrator", choices=METHODS, default="rk4", help="start value of solver.method")
    p.add_argument("--h-max", type=float, default=1e-3, help="start value of solver.h_max [s]")
    p.add_argument("--rtol", type=float, default=1e-10, help="start value of solver.rtol (dop853)")
    p.add_argument("--atol", type=float, default=1e-12, help="start value of solver.atol (dop853)")
    p.add_argument("--no-loader", action="store_true",
                   help="--runtime python: ship pythonfmu's binary only (the FMU then loads only in Python hosts)")
    p.set_defaults(func=_cli)
    return p


def _cli(args) -> int:
    if args.runtime == "native":
        return _cli_native(args)
    out = build_fmu(args.model, args.output, naming=args.naming, integrator=args.integrator, h_max=args.h_max,
                    rtol=args.rtol, atol=args.atol, loader=False if args.no_loader else None)
    with zipfile.ZipFile(out) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
        has_loader = any(n.endswith(".pythonfmu.so") for n in z.namelist())
    svs = root.find("ModelVariables")
    count = {c: sum(sv.get("causality") == c for sv in svs) for c in ("parameter", "input", "output")}
    ident = root.find("CoSimulation").get("modelIdentifier")
    print(f"wrote {out}: {count['parameter']} parameters, {count['input']} inputs, {count['output']} outputs "
          f"({root.get('variableNamingConvention')} names), modelIdentifier {ident}")
    print("binary: mbsfmu loader (runs in non-Python hosts on this machine)" if has_loader else
          "binary: pythonfmu only (loads in Python hosts)")
    return 0


def _cli_native(args) -> int:
    from .native import build_native_fmu
    if args.no_loader:
        raise InputError("--no-loader applies to --runtime python only")
    out = build_native_fmu(args.model, args.output, naming=args.naming, integrator=args.integrator, h_max=args.h_max,
                           rtol=args.rtol, atol=args.atol,
                           progress=lambda msg: print(f"mbsfmu build-fmu: {msg}", file=sys.stderr, flush=True))
    with zipfile.ZipFile(out) as z:
        root = ET.fromstring(z.read("modelDescription.xml"))
        platforms = sorted({n.split("/")[1] for n in z.namelist() if n.startswith("binaries/")})
    svs = root.find("ModelVariables")
    count = {c: sum(sv.get("causality") == c for sv in svs) for c in ("parameter", "input", "output")}
    ident = root.find("CoSimulation").get("modelIdentifier")
    print(f"wrote {out}: {count['parameter']} parameters, {count['input']} inputs, {count['output']} outputs "
          f"({root.get('variableNamingConvention')} names), modelIdentifier {ident}")
    print(f"binary: native C engine core for {', '.join(platforms)} (no Python needed), plus sources/")
    return 0
