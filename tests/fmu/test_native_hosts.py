"""The native FMU in hosts that load other FMUs too (issue 20 item 6): the FMU's own calls of an
fmi2 function never go through the dynamic symbol table, where another library's function of the
same name can take their place (symbol interposition)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zipfile

import pytest

from mbsfmu.engine.native import build

pytestmark = pytest.mark.integration

# another "FMU" exporting fmi2FreeFMUstate: counts its calls and frees nothing
INTERPOSER = """
int interposer_calls = 0;
int fmi2FreeFMUstate(void *c, void **state) { (void)c; (void)state; interposer_calls++; return 0; }
"""

# the host: the interposer loaded RTLD_GLOBAL first (as a host that imported it before ours), then
# the FMU; the FMU frees its own scratch states in fmi2DeSerializeFMUstate (into an existing state
# object, and when it refuses a blob)
HOST = """
import ctypes, json, sys, xml.etree.ElementTree as ET
from pathlib import Path
from fmpy.fmi2 import fmi2CallbackFunctions, fmi2CallbackLoggerTYPE, fmi2CallbackAllocateMemoryTYPE
from fmpy.fmi2 import fmi2CallbackFreeMemoryTYPE
other = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
d = Path(sys.argv[2])
root = ET.parse(d / "modelDescription.xml").getroot()
ident = root.find("CoSimulation").get("modelIdentifier")
lib = ctypes.CDLL(str(d / "binaries" / "linux64" / f"{ident}.so"))
libc = ctypes.CDLL(None)
libc.calloc.restype, libc.calloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t, ctypes.c_size_t]
libc.free.restype, libc.free.argtypes = None, [ctypes.c_void_p]
cb = fmi2CallbackFunctions()
cb.logger = fmi2CallbackLoggerTYPE(lambda *a: None)
cb.allocateMemory = fmi2CallbackAllocateMemoryTYPE(libc.calloc)
cb.freeMemory = fmi2CallbackFreeMemoryTYPE(libc.free)
P = ctypes.c_void_p
lib.fmi2Instantiate.restype = P
lib.fmi2Instantiate.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_char_p, P, ctypes.c_int,
                                ctypes.c_int]
for name in ("fmi2EnterInitializationMode", "fmi2ExitInitializationMode", "fmi2FreeInstance"):
    getattr(lib, name).argtypes = [P]
for name in ("fmi2GetFMUstate", "fmi2FreeFMUstate"):
    getattr(lib, name).argtypes = [P, P]
lib.fmi2SerializedFMUstateSize.argtypes = [P, P, P]
lib.fmi2SerializeFMUstate.argtypes = [P, P, P, ctypes.c_size_t]
lib.fmi2DeSerializeFMUstate.argtypes = [P, P, ctypes.c_size_t, P]
c = lib.fmi2Instantiate(b"i", 1, root.get("guid").encode(), None, ctypes.cast(ctypes.pointer(cb), P), 0, 0)
status = [lib.fmi2EnterInitializationMode(c), lib.fmi2ExitInitializationMode(c)]
s = P()
status.append(lib.fmi2GetFMUstate(c, ctypes.byref(s)))
n = ctypes.c_size_t()
status.append(lib.fmi2SerializedFMUstateSize(c, s, ctypes.byref(n)))
buf = ctypes.create_string_buffer(n.value)
status.append(lib.fmi2SerializeFMUstate(c, s, buf, n.value))
status.append(lib.fmi2DeSerializeFMUstate(c, buf, n.value, ctypes.byref(s)))  # into s: frees its scratch copy
bad = ctypes.create_string_buffer(buf.raw[:-1] + bytes([buf.raw[-1] ^ 1]), n.value)
t = P()
status.append(lib.fmi2DeSerializeFMUstate(c, bad, n.value, ctypes.byref(t)))  # refused: frees what it built
status.append(lib.fmi2FreeFMUstate(c, ctypes.byref(s)))  # the host's own call: ours
lib.fmi2FreeInstance(c)
print(json.dumps({"status": status, "interposer_calls": ctypes.c_int.in_dll(other, "interposer_calls").value}))
"""


@pytest.fixture(scope="module")
def interposer(tmp_path_factory):
    d = tmp_path_factory.mktemp("interposer")
    (d / "interposer.c").write_text(INTERPOSER, encoding="utf-8")
    return build.zig_cc(
        [d / "interposer.c"], build.LINUX_TARGET, d / "libinterposer.so", ["-shared", "-fPIC"], progress=lambda m: None
    )


def test_an_interposed_fmi2FreeFMUstate_is_never_called_by_the_fmu(native, interposer, tmp_path):
    """A host that loaded another library exporting fmi2FreeFMUstate with RTLD_GLOBAL: the FMU's
    states are freed by the FMU's own code (the other function is called 0 times), every call
    succeeds and the process exits cleanly (before the fix: the interposer was called for the
    FMU's scratch state, which leaked)."""
    x = native.extracted(native.fmu("scara"))
    host = tmp_path / "host.py"
    host.write_text(textwrap.dedent(HOST), encoding="utf-8")
    res = subprocess.run(
        [sys.executable, str(host), str(interposer), str(x)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-2000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["status"] == [0, 0, 0, 0, 0, 0, 3, 0], out
    assert out["interposer_calls"] == 0, out


def test_the_interposer_does_take_the_place_of_an_exported_call(interposer, tmp_path):
    """Control: a library calling fmi2FreeFMUstate by its exported name, built as the FMU is
    (zig cc -shared -fPIC, default visibility for FMI2_Export), does reach the interposer, so the
    test above can see the defect it is named for."""
    (tmp_path / "caller.c").write_text(
        "int fmi2FreeFMUstate(void *c, void **state) { (void)c; (void)state; return 0; }\n"
        "int call_it(void) { void *s = 0; return fmi2FreeFMUstate(0, &s); }\n",
        encoding="utf-8",
    )
    lib = build.zig_cc(
        [tmp_path / "caller.c"],
        build.LINUX_TARGET,
        tmp_path / "libcaller.so",
        ["-shared", "-fPIC"],
        progress=lambda m: None,
    )
    script = (
        "import ctypes, sys\n"
        "other = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)\n"
        "ctypes.CDLL(sys.argv[2]).call_it()\n"
        "print(ctypes.c_int.in_dll(other, 'interposer_calls').value)\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", script, str(interposer), str(lib)], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "1"


def test_darwin64_is_a_universal_binary_for_macos_11_exporting_exactly_the_fmi2_functions(native):
    """binaries/darwin64 holds one fat Mach-O file (read by lief, an independent Mach-O reader)
    with an x86_64 and an arm64 slice, each for macOS (LC_BUILD_VERSION) from 11.0, linking
    libSystem only and exporting exactly the fmi2 functions (besides the two symbols the Mach-O
    linker defines in every dylib)."""
    lief = pytest.importorskip("lief")
    from tests.fmu.test_native import FMI2_FUNCTIONS

    fmu = native.fmu("scara", platforms=("linux64", "win64", "darwin64"))  # the session's (test_native.py's too)
    x = native.extracted(fmu)
    (path,) = (x / "binaries" / "darwin64").iterdir()
    fat = lief.MachO.parse(str(path))
    assert fat is not None and fat.size == 2
    slices = {b.header.cpu_type: b for b in fat}
    assert set(slices) == {lief.MachO.Header.CPU_TYPE.X86_64, lief.MachO.Header.CPU_TYPE.ARM64}
    want = {f"_fmi2{n}" for n in FMI2_FUNCTIONS}
    for cpu, b in slices.items():
        assert b.build_version.platform == lief.MachO.BuildVersion.PLATFORMS.MACOS, cpu
        assert list(b.build_version.minos) == [11, 0, 0], (cpu, b.build_version.minos)
        linked = {lib.name for lib in b.libraries if lib.command != lief.MachO.LoadCommand.TYPE.ID_DYLIB}
        assert linked == {"/usr/lib/libSystem.B.dylib"}, (cpu, linked)
        exported = {s.name for s in b.exported_symbols} - {"___dso_handle", "__mh_dylib_header"}
        assert exported == want, (cpu, exported ^ want)


def test_a_first_build_reports_each_target_with_its_time_and_says_it_happens_once(tmp_path, monkeypatch):
    """A target never built on this machine (no marker in the zig cache folder: here an empty
    folder, so zig's real cache keeps the build short) gets a line before and a line after its
    compile, with the elapsed time: that target's compile as timed around zig (whole seconds, so
    within 0.5 s and the few ms of the marker and message; each compile held 1 s longer here, so a
    time of 0 s or of the wrong span shows); a second build of the same targets says per target what
    it compiles and its time, without the once-per-machine notice (issue 37 item 8: no silent
    minute)."""
    import re
    import time

    from mbsfmu.fmu import native as native_module
    from tests.support.native_fmu import model_file

    monkeypatch.setattr(native_module, "zig_cache_dir", lambda: tmp_path / "zig")
    zig_cc, took = build.zig_cc, {}

    def timed_zig_cc(sources, target, *args, **kwargs):
        start = time.monotonic()
        out = zig_cc(sources, target, *args, **kwargs)
        time.sleep(1.0)
        took[target] = time.monotonic() - start
        return out

    monkeypatch.setattr(build, "zig_cc", timed_zig_cc)
    said: list[str] = []
    native_module.build_native_fmu(
        model_file("scara"), tmp_path / "a.fmu", platforms=("linux64", "darwin64"), progress=said.append
    )
    targets = ("x86_64-linux-gnu.2.17", "x86_64-macos.11.0", "aarch64-macos.11.0")
    assert set(took) == set(targets), took
    for target in targets:
        begun = [m for m in said if f"({target}): building zig's C library cache" in m]
        assert len(begun) == 1 and "once per machine" in begun[0], said
        done = [re.fullmatch(rf"\w+ \({re.escape(target)}\): done in (\d+) s", m) for m in said]
        (seconds,) = [float(m.group(1)) for m in done if m]
        assert abs(seconds - took[target]) <= 0.6, (target, said, took)
    assert len(said) == 2 * len(targets), said
    said.clear()
    took.clear()
    native_module.build_native_fmu(
        model_file("scara"), tmp_path / "b.fmu", platforms=("linux64", "darwin64"), progress=said.append
    )
    assert not any("C library cache" in m for m in said), said
    for target in targets:
        begun = [m for m in said if re.fullmatch(rf"\w+ \({re.escape(target)}\): compiling \d+ C files\.\.\.", m)]
        done = [re.fullmatch(rf"\w+ \({re.escape(target)}\): done in (\d+) s", m) for m in said]
        (seconds,) = [float(m.group(1)) for m in done if m]
        assert len(begun) == 1 and abs(seconds - took[target]) <= 0.6, (target, said, took)
    assert len(said) == 2 * len(targets), said


WARNINGS = ["-std=c99", "-Wall", "-Wextra", "-Werror"]


def c_compilers() -> list[list[str]]:
    """gcc (when installed) and clang (zig cc is clang: always there)."""
    import shutil

    found = [[shutil.which("gcc")]] if shutil.which("gcc") else []
    return [*found, [sys.executable, "-m", "ziglang", "cc"]]


@pytest.mark.parametrize("opt", ["-O0", "-O2", "-O3"])
def test_sources_compile_without_a_warning_with_gcc_and_clang(native, tmp_path, opt):
    """sources/ (the SourceFiles list) under -Wall -Wextra -Werror with gcc and clang, at the
    optimisation levels an importer may use (gcc's flow-based warnings differ by level)."""
    x = native.extracted(native.fmu("scara"))
    files = sorted(str(f) for f in (x / "sources").glob("*.c"))
    for k, cc in enumerate(c_compilers()):
        out = tmp_path / f"scara{k}.so"
        run = subprocess.run(
            [*cc, *WARNINGS, opt, "-shared", "-fPIC", f"-I{x / 'sources'}", *files, "-o", str(out), "-lm"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert run.returncode == 0, (cc, run.stderr[-3000:])


TWO_MODEL_HOST = r"""
#include <stdio.h>
#include <stdlib.h>
#include "fmi2FunctionTypes.h"

#define DECLARE(P)                                                                                  \
    extern fmi2InstantiateTYPE P##fmi2Instantiate;                                                  \
    extern fmi2SetupExperimentTYPE P##fmi2SetupExperiment;                                          \
    extern fmi2EnterInitializationModeTYPE P##fmi2EnterInitializationMode;                          \
    extern fmi2ExitInitializationModeTYPE P##fmi2ExitInitializationMode;                            \
    extern fmi2DoStepTYPE P##fmi2DoStep;                                                            \
    extern fmi2GetRealTYPE P##fmi2GetReal;                                                          \
    extern fmi2FreeInstanceTYPE P##fmi2FreeInstance;
DECLARE(A_)
DECLARE(B_)

static void logger(fmi2ComponentEnvironment e, fmi2String n, fmi2Status s, fmi2String c, fmi2String m, ...)
{
    (void)e; (void)c;
    if (s != fmi2OK) fprintf(stderr, "%s: %s\n", n, m);
}

#define RUN(P, GUID, VR)                                                                            \
    do {                                                                                            \
        fmi2CallbackFunctions cb = {logger, calloc, free, NULL, NULL};                              \
        fmi2Component c = P##fmi2Instantiate(#P, fmi2CoSimulation, GUID, NULL, &cb, 0, 0);          \
        fmi2ValueReference vr = VR;                                                                 \
        fmi2Real v = -1.0;                                                                          \
        int st = !c;                                                                                \
        st |= P##fmi2SetupExperiment(c, 0, 0.0, 0.0, 0, 0.0);                                       \
        st |= P##fmi2EnterInitializationMode(c) | P##fmi2ExitInitializationMode(c);                 \
        for (int k = 0; k < 10; k++) st |= P##fmi2DoStep(c, k * 0.01, 0.01, 1);                     \
        st |= P##fmi2GetReal(c, &vr, 1, &v);                                                        \
        printf(#P " %d %.17g\n", st, v);                                                            \
        P##fmi2FreeInstance(c);                                                                     \
    } while (0)

int main(void)
{
    RUN(A_, GUID_A, VR_A);
    RUN(B_, GUID_B, VR_B);
    return 0;
}
"""


def test_two_source_fmus_link_into_one_program(native, tmp_path):
    """The sources/ of two models compiled with FMI2_FUNCTION_PREFIX A_ and B_ link into one C
    program (no symbol of the core, the wrapper or the model tables clashes: every external name
    carries the prefix) and each runs its own model: E after 0.1 s equals the shipped binary's
    value of that model (fmpy) to 1e-12 relative (another compiler; same equations)."""
    import shutil

    from tests.support.native_fmu import description, fmpy_run, variables

    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.skip("no gcc to act as the importer")
    objects, defines = [], []
    expected = {}
    for prefix, model in (("A_", "scara"), ("B_", "spacecraft")):
        fmu = native.fmu(model)
        x = native.extracted(fmu)
        for f in sorted((x / "sources").glob("*.c")):
            obj = tmp_path / f"{prefix}{f.stem}.o"
            run = subprocess.run(
                [
                    gcc,
                    *WARNINGS,
                    "-O2",
                    "-fPIC",
                    f"-DFMI2_FUNCTION_PREFIX={prefix}",
                    f"-I{x / 'sources'}",
                    "-c",
                    str(f),
                    "-o",
                    str(obj),
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert run.returncode == 0, run.stderr[-3000:]
            objects.append(str(obj))
        v = variables(fmu)
        defines += [f'-DGUID_{prefix[0]}="{description(fmu).get("guid")}"', f"-DVR_{prefix[0]}={v['E'][0]}"]
        expected[prefix] = fmpy_run(fmu, x, 0.01, 10, ["E"])[-1][1]
    (tmp_path / "host.c").write_text(TWO_MODEL_HOST, encoding="utf-8")
    exe = tmp_path / "host"
    headers = native.extracted(native.fmu("scara")) / "sources"
    run = subprocess.run(
        [gcc, "-std=c99", "-O2", f"-I{headers}", *defines, str(tmp_path / "host.c"), *objects, "-o", str(exe), "-lm"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = {line.split()[0]: (int(line.split()[1]), float(line.split()[2])) for line in res.stdout.split("\n") if line}
    for prefix, value in expected.items():
        assert got[prefix][0] == 0, res.stderr
        assert abs(got[prefix][1] - value) <= 1e-12 * max(1.0, abs(value)), (prefix, got[prefix], value)


def test_build_fmu_cli_solver_flags_reach_the_fmu(tmp_path):
    """`mbsfmu build-fmu --integrator dop853 --h-max --rtol --atol` (the console script): the
    modelDescription's start values are the flags' values, and an instance (fmpy) reads them back
    after initialisation."""
    import os
    import shutil

    from fmpy import read_model_description
    from fmpy.fmi2 import FMU2Slave

    from tests.support.native_fmu import model_file
    from tests.support.paths import ROOT

    exe = shutil.which("mbsfmu")
    cmd = [exe] if exe else [sys.executable, "-m", "mbsfmu"]
    out = tmp_path / "scara.fmu"
    flags = {"--rtol": 3e-7, "--atol": 2e-9, "--h-max": 0.004}
    res = subprocess.run(
        [*cmd, "build-fmu", str(model_file("scara")), "-o", str(out), "--integrator", "dop853"]
        + [a for k, v in flags.items() for a in (k, repr(v))],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr
    md = read_model_description(str(out))
    start = {v.name: v.start for v in md.modelVariables}
    want = {"solver.rtol": 3e-7, "solver.atol": 2e-9, "solver.h_max": 0.004}
    assert {n: float(start[n]) for n in want} == want
    assert int(start["solver.method"]) == 2
    x = tmp_path / "x"
    zipfile.ZipFile(out).extractall(x)
    vr = {v.name: v.valueReference for v in md.modelVariables}
    f = FMU2Slave(
        guid=md.guid, unzipDirectory=str(x), modelIdentifier=md.coSimulation.modelIdentifier, instanceName="i"
    )
    f.instantiate()
    f.setupExperiment(startTime=0.0)
    f.enterInitializationMode()
    f.exitInitializationMode()
    assert f.getReal([vr[n] for n in want]) == list(want.values())
    assert f.getInteger([vr["solver.method"]]) == [2]
    f.terminate()
    f.freeInstance()


def test_model_description_names_author_version_copyright_and_license(native, fmus):
    """Both runtimes' modelDescription headers carry author, version (mbsfmu's), copyright and
    license (FMI 2.0 section 2.2.1 optional attributes that tools show and catalogues require)."""
    import mbsfmu
    from tests.support.native_fmu import description

    for fmu in (native.fmu("scara"), fmus.fmu("scara", loader=False)):
        root = description(fmu)
        assert root.get("author") == "mbsfmu developers"
        assert root.get("version") == mbsfmu.__version__
        assert root.get("copyright", "").startswith("Copyright (c) 2026 mbsfmu developers")
        assert root.get("license", "").startswith("MIT")
