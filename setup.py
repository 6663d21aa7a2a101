"""Install-time build of the C engine core (mbsfmu/engine/native) with zig's C compiler (PyPI ziglang,
a build requirement): ``pip install .`` and ``pip install -e .`` need no system compiler, and the
first simulation step has no compile wait. The core's CPython binding (binding.c, the Model's
per-call dynamics) is built the same way, against the installing interpreter's and numpy's headers;
where that fails the install goes on and says so (mbsfmu then tries once more at first use, else
takes the ctypes path). Everything else is in pyproject.toml."""

import importlib.util
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _native_build():
    """mbsfmu/engine/native/build.py loaded by path (it imports only the standard library)."""
    spec = importlib.util.spec_from_file_location(
        "mbsfmu_native_build", HERE / "mbsfmu" / "engine" / "native" / "build.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class BuildPyWithCore(build_py):
    """build_py, then the core library beside the package's sources (editable install: in the
    source tree; regular install: in the build tree that becomes the wheel)."""

    def run(self):
        super().run()
        nb = _native_build()
        dest = (
            (HERE if getattr(self, "editable_mode", False) else Path(self.build_lib)) / "mbsfmu" / "engine" / "native"
        )
        nb.remove_stale(dest)
        nb.build_library(dest, progress=lambda m: print(m, flush=True))
        try:
            nb.build_binding(dest, progress=lambda m: print(m, flush=True))
        except nb.BuildError as e:
            print(f"mbsfmu: the CPython binding was not built ({e}); the dynamics calls will use ctypes", flush=True)

    def get_outputs(self, include_bytecode=True):
        outs = super().get_outputs(include_bytecode)
        if not getattr(self, "editable_mode", False):
            native = Path(self.build_lib) / "mbsfmu" / "engine" / "native"
            nb = _native_build()
            outs.append(str(native / nb.library_name()))
            if (native / nb.binding_name()).is_file():
                outs.append(str(native / nb.binding_name()))
        return outs


setup(cmdclass={"build_py": BuildPyWithCore})
