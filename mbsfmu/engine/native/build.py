"""Builds the C core (the .c files beside this module) into a shared library with zig's C
compiler (PyPI ``ziglang``: no system compiler needed), and finds it.

The library's file name carries a hash of the sources and flags (``libmbs_core-<hash>.so``), so a
binary of other sources is never used: ``library()`` returns the one built at install time (in
this package folder) or in the per-user cache, and otherwise builds it there first, with a
progress message. This module imports only the standard library: setup.py loads it by path at
install time. ``zig_cc`` is the one zig invocation (the native FMU builds its binaries with it).
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = (
    "model.c",
    "kinematics.c",
    "rnea.c",
    "crba.c",
    "aba.c",
    "forces.c",
    "invariants.c",
    "records.c",
    "integrate.c",
    "loops.c",
    "response.c",
    "sim.c",
    "decimal.c",
    "trig.c",
    "derivatives.c",
    "force_derivatives.c",
    "host_state.c",
    "state_jacobian.c",
)
HEADERS = (
    "mbs_core.h",
    "mbs_names.h",
    "instance.h",
    "spatial.h",
    "mbs_inline.h",
    "trig.h",
    "dop853_coef.h",
    "derivatives.h",
    "force_derivatives.h",
)
# in the host library for Python only, not in the FMU (which compiles SOURCES): batched rollouts on threads
HOST_SOURCES = ("rollout.c",)
HOST_HEADERS = ("mbs_rollout.h",)
# -ffp-contract=off: no fused multiply-adds, so every target rounds as the numpy reference does
FLAGS = (
    "-std=c99",
    "-O2",
    "-g0",
    "-ffp-contract=off",
    "-fno-math-errno",
    "-Wall",
    "-Wextra",
)  # -g0: no debug info (it names the build machine's paths)
LINUX_TARGET = "x86_64-linux-gnu.2.17"  # old glibc: the library (and linux64 FMUs) load on old hosts


class BuildError(RuntimeError):
    """zig is missing or the C core did not compile; the message says which and why."""


def host_target() -> str | None:
    """The zig target of the host library: glibc 2.17 on x86-64 Linux, else None (native)."""
    if sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64"):
        return LINUX_TARGET
    return None


def library_name() -> str:
    """libmbs_core-<hash of sources, headers, flags, target>.<so|dylib|dll>."""
    h = hashlib.sha256()
    for name in (*SOURCES, *HEADERS, *HOST_SOURCES, *HOST_HEADERS):
        h.update(name.encode() + b"\0" + (HERE / name).read_bytes())
    h.update(" ".join((*FLAGS, str(host_target()))).encode())
    ext = ".dll" if sys.platform == "win32" else ".dylib" if sys.platform == "darwin" else ".so"
    return f"libmbs_core-{h.hexdigest()[:16]}{ext}"


def cache_dir() -> Path:
    """Per-user cache: $MBSFMU_CACHE_DIR, else $XDG_CACHE_HOME/mbsfmu, else ~/.cache/mbsfmu."""
    if os.environ.get("MBSFMU_CACHE_DIR"):
        return Path(os.environ["MBSFMU_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mbsfmu"


def zig_cc(sources, target: str | None, output, flags=(), progress=None, driver: str = "cc") -> Path:
    """Compile and link ``sources`` with ``python -m ziglang cc`` for ``target`` (a zig triple such
    as x86_64-linux-gnu.2.17, x86_64-windows-gnu, x86_64-macos; None: the host) into ``output``
    (written atomically). ``flags``: further compiler/linker flags (e.g. -shared, -I...).
    ``progress``: callable taking a message (default: print to stderr), told before zig starts,
    since its first use per target builds zig's libc cache (a minute or more). ``driver``: "cc"
    (C) or "c++" (C++, linked with zig's libc++)."""
    output = Path(output)
    try:
        import ziglang  # noqa: F401
    except ImportError:
        raise BuildError("the C core needs the zig compiler from PyPI: pip install ziglang") from None
    say = progress or (lambda m: print(m, file=sys.stderr, flush=True))
    say(
        f"mbsfmu: compiling {output.name} with zig for {target or 'this host'} (the first build per target also "
        "builds zig's C library cache: up to a few minutes)..."
    )
    output.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=output.name + ".", suffix=".tmp", dir=output.parent)
    os.close(fd)
    cmd = [
        sys.executable,
        "-m",
        "ziglang",
        driver,
        *(("-target", target) if target else ()),
        *map(str, flags),
        *map(str, sources),
        "-o",
        tmp,
    ]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise BuildError(f"zig cc failed ({res.returncode}) building {output.name}:\n{res.stderr.strip()}")
        os.replace(tmp, output)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return output


def build_library(dest_dir, progress=None) -> Path:
    """Build the host library into dest_dir (named by ``library_name``) and return its path."""
    flags = (
        (*FLAGS, "-Werror", "-shared", "-fPIC", "-lm", "-lpthread") if sys.platform != "win32" else (*FLAGS, "-shared")
    )
    sources = [HERE / s for s in (*SOURCES, *HOST_SOURCES)]
    return zig_cc(sources, host_target(), Path(dest_dir) / library_name(), flags, progress)


def library(progress=None) -> Path:
    """The host library of the current sources: installed beside this module, or in the per-user
    cache; built into the cache first if neither exists."""
    name = library_name()
    for d in (HERE, cache_dir()):
        if (d / name).is_file():
            return d / name
    return build_library(cache_dir(), progress)


def remove_stale(dest_dir) -> None:
    """Delete libraries and bindings of other sources in dest_dir (install-time tidy-up)."""
    keep = (library_name(), binding_name())
    for p in (*Path(dest_dir).glob("libmbs_core-*"), *Path(dest_dir).glob(f"{BINDING}-*")):
        if p.name not in keep:
            p.unlink(missing_ok=True)


# ---- the CPython binding (binding.c): Model's per-call dynamics without ctypes -----------------
BINDING = "mbsfmu_binding"  # the module name binding.c's PyInit_ function carries


def _binding_includes() -> tuple[str, str]:
    """(Python's include folder, numpy's) for binding.c; BuildError when either lacks its header."""
    try:
        import numpy
    except ImportError:
        raise BuildError("the binding needs numpy's C headers: numpy is not importable") from None
    py, np_inc = sysconfig.get_paths()["include"], numpy.get_include()
    for folder, header in ((py, "Python.h"), (np_inc, "numpy/arrayobject.h")):
        if not (Path(folder) / header).is_file():
            raise BuildError(f"the binding needs {header}, not found in {folder}")
    return py, np_inc


def binding_name() -> str:
    """mbsfmu_binding-<hash of binding.c, flags, target, Python and numpy versions><EXT_SUFFIX>."""
    try:
        import numpy

        np_version = numpy.__version__
    except ImportError:
        np_version = "none"
    h = hashlib.sha256((HERE / "binding.c").read_bytes())
    h.update(" ".join((*FLAGS, str(host_target()), sys.version, np_version)).encode())
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or (".pyd" if sys.platform == "win32" else ".so")
    return f"{BINDING}-{h.hexdigest()[:16]}{suffix}"


def build_binding(dest_dir, progress=None) -> Path:
    """Build the CPython binding (binding.c, against this interpreter's and numpy's headers) into
    dest_dir and return its path; BuildError when a header or zig is missing or it does not compile."""
    py, np_inc = _binding_includes()
    flags = [*FLAGS, "-shared", f"-I{py}", f"-I{np_inc}"]
    if sys.platform == "darwin":
        flags.append("-Wl,-undefined,dynamic_lookup")  # the interpreter provides the Python symbols
    elif sys.platform == "win32":
        libdir = Path(sys.base_prefix) / "libs"
        flags += [f"-L{libdir}", f"-lpython{sys.version_info[0]}{sys.version_info[1]}"]
    else:
        flags.append("-fPIC")
    return zig_cc([HERE / "binding.c"], host_target(), Path(dest_dir) / binding_name(), flags, progress)


def binding(progress=None) -> Path:
    """The CPython binding of the current sources and interpreter: installed beside this module,
    or in the per-user cache; built into the cache first if neither exists."""
    name = binding_name()
    for d in (HERE, cache_dir()):
        if (d / name).is_file():
            return d / name
    return build_binding(cache_dir(), progress)


if __name__ == "__main__":  # python mbsfmu/engine/native/build.py [dest_dir]: build the host library
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    print(build_library(dest))
    print(build_binding(dest))
