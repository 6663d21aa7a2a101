"""How the kernels are compiled: the decorators, and numba's on-disk cache made safe.

``kernel``: ``njit`` with ``cache=True`` (machine code kept between processes), IEEE division
(``error_model="numpy"``: 1/0 = inf as in numpy, no exception path) and ``fastmath={"contract"}``
only (a*b + c may fuse into one FMA, a rounding difference of at most an ulp; no reassociation,
so sums keep the reference's order). ``inline_kernel``: the same, inlined into its callers by
numba (small helpers: a call passes each array as ~8 scalars, which costs more than the helper).

numba stamps a cached function with the hash of its own source file only, so after an edit of
spatial.py a kernel in algorithms.py would still load machine code with the old spatial.py
inlined. For functions defined in this package the stamp here hashes every .py file of the
package instead (installed on import, before any decorator below runs). And numba keys its
cache directory by the source file's location, so every copy of the package (an FMU's
resources, unpacked afresh by each importer) would compile again: the cache here lives in
NUMBA_CACHE_DIR if set, else in the user's cache directory under the package name and stamp
(``~/.cache/numba/mbsfmu-compiled-<stamp>``), shared by all copies of the same sources imported
under the same name, else (not writable) in ``__pycache__`` beside the sources.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from numba import njit
from numba.core import caching

_DIR = Path(__file__).resolve().parent
_stamp: str | None = None


def package_stamp() -> str:
    """sha256 over the names and contents of this package's .py files."""
    global _stamp
    if _stamp is None:
        h = hashlib.sha256()
        for p in sorted(_DIR.glob("*.py")):
            h.update(p.name.encode())
            h.update(p.read_bytes())
        _stamp = h.hexdigest()
    return _stamp


class _PackageStamp:
    """Locator mixin: applies to this package's files, stamps them with ``package_stamp``."""

    def get_source_stamp(self):
        return package_stamp()

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            if Path(py_file).resolve().parent != _DIR:
                return None
        except OSError:
            return None
        return super().from_function(py_func, py_file)


def _locator(name: str):
    return getattr(caching, name, None) or getattr(caching, "_" + name)


class _UserProvided(_PackageStamp, _locator("UserProvidedCacheLocator")):
    pass


class _Shared(_PackageStamp, _locator("UserWideCacheLocator")):
    """The user's cache directory, under the package's import name and stamp rather than the
    file's location (the cached code names the modules it was compiled in, so a copy imported
    under another name, as an FMU bundles the engine, needs its own entries)."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        from numba.misc.appdirs import AppDirs
        top = py_func.__module__.split(".")[0]
        self._cache_path = os.path.join(AppDirs(appname="numba", appauthor=False).user_cache_dir,
                                        f"{top}-compiled-{package_stamp()[:16]}")


class _InTree(_PackageStamp, _locator("InTreeCacheLocator")):
    pass


def install() -> None:
    """Put the package locators first: NUMBA_CACHE_DIR, the shared user cache, __pycache__."""
    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
    if _UserProvided not in impl._locator_classes:
        impl._locator_classes[0:0] = [_UserProvided, _Shared, _InTree]


install()
kernel = njit(cache=True, error_model="numpy", fastmath={"contract"})
inline_kernel = njit(cache=True, error_model="numpy", fastmath={"contract"}, inline="always")
