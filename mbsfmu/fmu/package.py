"""The one packaging step of the FMUs: the python runtime's staging and pythonfmu build (model
and PID FMUs), and the zip layout every FMU is written with (both runtimes).

``package_python_fmu`` stages a generated pythonfmu slave module (``slave_module``), a copy of
this engine (as the package ``mbsfmu_engine_<hash>``, so the FMU runs the engine it was built
with even in a Python process that imports another mbsfmu), the FMU's own files and
``mbsfmu_build.json``; builds with pythonfmu's ``FmuBuilder`` (its Python API); then rewrites the
FMU (``finish``):

- needsExecutionTool="true" (FMI 2.0 section 4.3.1): the FMU runs in a Python installation with
  numpy, scipy and PyYAML that the host provides (documentation/externalDependencies.txt says
  exactly what); no build-machine path is shipped or added to the host's sys.path;
- modelDescription.xml: pythonfmu's XML completed by ``description.model_description``;
- binaries/linux64/<id>.so: the loader (``loader.py``), which starts or joins Python and forwards
  to pythonfmu's binary, kept as binaries/linux64/<id>.pythonfmu.so. Without a C compiler or
  Python headers the FMU keeps pythonfmu's binary and loads only in Python hosts (a warning says so).

``fmu_zip`` writes any FMU through a uniquely named part file (concurrent builds of one FMU never
mix, a failure leaves none); ``zip_entry`` sets its entries' modes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import site
import sys
import sysconfig
import tempfile
import uuid
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from ..files import make_folder
from .description import BUILD_INFO, FmuBuildError, model_description
from .loader import compile_loader
from .variables import FmuVariable

PACKAGE_DIR = Path(__file__).resolve().parents[1]  # the mbsfmu package being bundled
PLATFORM = "linux64"
ENGINE_PREFIX = "mbsfmu_engine_"


def require_pythonfmu() -> None:
    """FmuBuildError unless pythonfmu can be imported (checked before any work)."""
    from ..extras import require

    require("fmu", "building a python-runtime FMU", "pythonfmu")


def engine_sources() -> list[Path]:
    """The engine's Python sources and the C core's sources (mbsfmu/engine/native/*.c, *.h)."""
    files = [
        *PACKAGE_DIR.rglob("*.py"),
        *(PACKAGE_DIR / "engine" / "native").glob("*.c"),
        *(PACKAGE_DIR / "engine" / "native").glob("*.h"),
    ]
    return sorted(f for f in files if "__pycache__" not in f.parts)


def engine_hash() -> str:
    """12 hex digits of SHA-256 over the engine's sources (relative paths and contents)."""
    h = hashlib.sha256()
    for f in engine_sources():
        h.update(f.relative_to(PACKAGE_DIR).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def engine_info() -> dict:
    """The build-information fields of the bundled engine: engine_package, engine_hash."""
    digest = engine_hash()
    return {"engine_package": f"{ENGINE_PREFIX}{digest}", "engine_hash": digest}


# ---- staging ----------------------------------------------------------------------------------


def copy_engine(dest: Path) -> None:
    """The engine's sources as the package ``dest.name`` and the C core's library for this host
    (built first if needed), so the FMU's engine copy runs the native backend as the building
    process does. The copy runs as its own package, never another mbsfmu the host has: inside
    mbsfmu every import of its own code is relative (tests/test_architecture.py)."""
    from ..engine.native import build as native_build

    for f in engine_sources():
        target = dest / f.relative_to(PACKAGE_DIR)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f, target)
    lib = native_build.library()
    shutil.copyfile(lib, dest / "engine" / "native" / lib.name)


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
    return {
        "version": ".".join(map(str, sys.version_info[:3])),
        "abi": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "executable": sys.executable,
        "libpython": libpython,
        "shared": bool(sysconfig.get_config_var("Py_ENABLE_SHARED")),
        "include": sysconfig.get_paths()["include"],
        "site_dirs": dirs,
    }


def slave_module(identifier: str, engine: str, what: str, slave: str, maker: str) -> str:
    """The generated pythonfmu slave module: repoints stale engine copies, works around pythonfmu
    0.7's reference-count defect, and defines the slave class ``identifier`` from
    ``<engine>.<slave>`` (e.g. ``fmu.slave import MbsfmuSlave``); ``what`` describes the FMU,
    ``maker`` names the builder."""
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


def package_python_fmu(
    output: Path,
    table: list[FmuVariable],
    info: dict,
    *,
    slave: str,
    what: str,
    maker: str,
    module: str,
    stage_files: Callable[[Path], list[Path]],
    loader: bool | None,
) -> Path:
    """The python runtime's FMU ``output`` of one slave class: ``info`` (``description.build_info``
    with ``engine_info()`` and ``python``: ``python_info()``) staged as ``mbsfmu_build.json``, the
    engine copy, the files ``stage_files(stage)`` writes into the staging folder (returned as
    paths, shipped in resources/), and the generated slave module ``<module>_<identifier>_<guid>``
    defining ``identifier`` from ``<engine>.<slave>``; pythonfmu's builder on it, then the loader
    binary (``loader``: as in ``build_fmu``) and ``finish``. Returns ``output``."""
    identifier, guid, engine = info["model_identifier"], info["guid"], info["engine_package"]
    with tempfile.TemporaryDirectory(prefix="mbsfmu_fmu_") as tmp:
        tmp = Path(tmp)
        stage = tmp / "stage"
        stage.mkdir()
        copy_engine(stage / engine)
        files = stage_files(stage)
        (stage / BUILD_INFO).write_text(json.dumps(info, indent=1), encoding="utf-8")
        script = stage / f"{module}_{identifier}_{guid.replace('-', '')[:12]}.py"
        script.write_text(slave_module(identifier, engine, what, slave, maker), encoding="utf-8")
        package(script, [stage / engine, *files, stage / BUILD_INFO], tmp, table, info, loader, output)
    return output


def package(
    script: Path,
    project_files: list[Path],
    tmp: Path,
    table: list[FmuVariable],
    info: dict,
    loader: bool | None,
    output: Path,
) -> None:
    """pythonfmu's builder on the generated slave module, then the loader binary, and ``finish``
    writes ``output``."""
    from pythonfmu.builder import FmuBuilder

    identifier = info["model_identifier"]
    before = set(sys.modules)
    try:
        raw = FmuBuilder.build_FMU(
            script,
            dest=tmp / "raw" / f"{identifier}.fmu",
            project_files=project_files,
            canGetAndSetFMUstate=True,
            canSerializeFMUstate=True,
        )
    finally:
        forget_staged_modules(before, tmp)
    binary = (
        None
        if loader is False
        else compile_loader(tmp / "loader", identifier, info["guid"], table, info, required=bool(loader))
    )
    finish(Path(raw), output, table, info, binary)


def forget_staged_modules(before: set, tmp: Path) -> None:
    """Drop the modules the build imported from the staging folder (about to be deleted), so a
    later FMU of the same engine imports its own copy; and the folder from sys.path."""
    for key in set(sys.modules) - before:
        f = getattr(sys.modules[key], "__file__", None) or ""
        if f and Path(f).resolve().is_relative_to(tmp.resolve()):
            del sys.modules[key]
    sys.path[:] = [p for p in sys.path if not (p and Path(p).resolve().is_relative_to(tmp.resolve()))]


# ---- the FMU file -------------------------------------------------------------------------------

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


def check_output(output: Path) -> None:
    """FmuBuildError naming ``output`` if the FMU cannot be written there (its folder cannot be made,
    or a file cannot be created in it: /proc, a read-only or full file system), checked before a
    build so that a bad -o fails in milliseconds, not after the compile."""
    try:
        make_folder(output.parent, f"-o {output}")
    except OSError as e:
        raise FmuBuildError(e.strerror) from None
    try:
        with tempfile.NamedTemporaryFile(dir=output.parent, prefix=f".{output.name}.", suffix=".probe"):
            pass
    except OSError as e:
        raise FmuBuildError(f"-o {output}: cannot write a file in {output.parent}: {e.strerror or e}") from None


@contextlib.contextmanager
def fmu_zip(output: Path) -> Iterator[zipfile.ZipFile]:
    """The FMU ``output`` opened for writing through a uniquely named part file that replaces
    ``output`` when the block completes (concurrent builds of one FMU never mix) and is removed
    when it fails (a failure leaves no file). An error writing it names ``output``."""
    check_output(output)
    part = output.with_name(output.name + f".{uuid.uuid4().hex[:8]}.part")
    try:
        try:
            z = zipfile.ZipFile(part, "w", zipfile.ZIP_DEFLATED)
        except OSError as e:
            raise FmuBuildError(f"-o {output}: cannot write the FMU: {e.strerror or e}") from None
        with z:
            yield z
        try:
            part.replace(output)
        except OSError as e:
            raise FmuBuildError(f"-o {output}: cannot write the FMU: {e.strerror or e}") from None
    finally:
        part.unlink(missing_ok=True)


def zip_entry(name: str, date_time: tuple, executable: bool = False) -> zipfile.ZipInfo:
    """A deflated entry of an FMU: mode 755 for binaries, else 644."""
    entry = zipfile.ZipInfo(name, date_time=date_time)
    entry.compress_type = zipfile.ZIP_DEFLATED
    entry.external_attr = (0o755 if executable else 0o644) << 16
    return entry


def finish(raw: Path, output: Path, table: list[FmuVariable], info: dict, binary: Path | None) -> None:
    """Write the final FMU: pythonfmu's files without binaries it cannot back (win64: pythonfmu's
    stock DLL, without our checks, needing a Python on PATH), the new modelDescription.xml, the
    loader, resources/mbsfmu_build.json without build paths and
    documentation/externalDependencies.txt."""
    ident = info["model_identifier"]
    lib = f"binaries/{PLATFORM}/{ident}.so"
    with zipfile.ZipFile(raw) as zin, fmu_zip(output) as zout:
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
                zout.writestr(
                    zip_entry(
                        f"binaries/{PLATFORM}/{ident}.pythonfmu.so", zin.getinfo(name).date_time, executable=True
                    ),
                    data,
                )
                data = binary.read_bytes()
            zout.writestr(zip_entry(name, zin.getinfo(name).date_time, name.endswith(".so")), data)
        deps = EXTERNAL_DEPENDENCIES.format(version=info["engine_version"], abi=info["python"]["abi"], ident=ident)
        date = zin.getinfo("modelDescription.xml").date_time
        zout.writestr(zip_entry("documentation/externalDependencies.txt", date), deps.encode("utf-8"))


__all__ = [
    "ENGINE_PREFIX",
    "EXTERNAL_DEPENDENCIES",
    "PACKAGE_DIR",
    "PLATFORM",
    "copy_engine",
    "engine_hash",
    "engine_info",
    "engine_sources",
    "finish",
    "fmu_zip",
    "forget_staged_modules",
    "package",
    "package_python_fmu",
    "python_info",
    "require_pythonfmu",
    "shipped_build_info",
    "slave_module",
    "zip_entry",
]
