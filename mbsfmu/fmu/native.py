"""The Python-free FMU: an FMI 2.0 Co-Simulation FMU of a model running the C engine core.

``build_native_fmu`` writes the model's variable map (``mbsfmu.fmu.variables.variable_table``,
the same variables, names, value references, units, start/min/max and ModelStructure as the
python-runtime FMU) and its constant tables (``tables.c_source``) as one generated C file,
``mbsfmu_model.c``, and compiles it with the FMI wrapper ``fmi2_slave.c`` and the core with
``zig cc`` (the ``ziglang`` package) for linux64 (glibc 2.17, needs libc and libm only), win64
(KERNEL32 and the Universal C Runtime) and darwin64 (libSystem; a universal x86_64 + arm64
binary for macOS 11.0 and later). The FMU also carries
``sources/`` (listed in the modelDescription's ``SourceFiles``) so an importer can compile it.

Nothing in the FMU names a path of the build machine: the compiler runs in the staged sources
folder on relative file names, without debug information.
"""

from __future__ import annotations

import concurrent.futures
import os
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np

from .. import __version__, load_model
from ..errors import InputError, MbsError
from .c_text import c_double, c_string
from .description import build_info, model_identifier, native_description, skeleton
from .macho import fat_binary
from .package import check_output, fmu_zip, zip_entry
from .variables import variable_table

CSRC_DIR = Path(__file__).resolve().parent / "csrc"  # the FMI wrapper and the FMI 2.0 and 3.0 headers
FMI_HEADERS = {2: CSRC_DIR / "fmi2", 3: CSRC_DIR / "fmi3"}
WRAPPER = ("fmu_instance.c", "fmu_instance.h", "fmu_model.h")  # the instance core, for every FMI version
ENTRY = {2: "fmi2_functions.c", 3: "fmi3_functions.c"}  # the entry points of each FMI version
FMI_VERSIONS = (2, 3)
GENERATED = "mbsfmu_model.c"

MACOS_MIN = "11.0"  # the oldest macOS the darwin64 binary loads on (Big Sur, the first on Apple silicon)
# FMI platform folder -> (zig targets, binary suffix, extra link flags); several targets: slices of
# one universal Mach-O binary (macho.fat_binary)
TARGETS = {
    "linux64": (("x86_64-linux-gnu.2.17",), ".so", ["-lm"]),
    "win64": (("x86_64-windows-gnu",), ".dll", []),
    "darwin64": ((f"x86_64-macos.{MACOS_MIN}", f"aarch64-macos.{MACOS_MIN}"), ".dylib", []),
}
CFLAGS = ["-g0", "-fno-sanitize=undefined", "-fvisibility=hidden", "-Wno-unused-parameter"]  # after build.FLAGS

# core parameter kinds (mbs_core.h MBS_P_*) and the wrapper's variable kinds (fmu_model.h)
P_GRAVITY, P_MASS, P_COM, P_INERTIA, P_WHEEL_IW, P_SPRING_K, P_SPRING_D = range(1, 8)
V_SOLVER, V_PARAM, V_INPUT, V_X, V_QDD, V_INV, V_ENERGY, V_DRIFT, V_STAT, V_DER = range(1, 11)
SOLVER_KEYS = ("method", "h_max", "rtol", "atol")
INERTIA_COMPS = ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2))  # mbs_core.h: xx, yy, zz, xy, xz, yz
INV_FIELDS = ("p_sys", "H_sys", "R", "Rdot", "KE", "PE", "E")
ENERGY_FIELDS = ("W_in", "W_diss")
DRIFT_FIELDS = ("H_abs", "H_rel", "E_abs", "E_rel")
STAT_FIELDS = ("n_steps", "n_rhs", "n_discards", "h_last")
ENTRY_DATE = (2026, 1, 1, 0, 0, 0)  # every zip entry's date: the FMU's bytes do not depend on the day


class NativeBuildError(MbsError):
    """The native FMU cannot be built (a model feature the core lacks, a failed compile)."""


def core_sources() -> list[Path]:
    """The engine core's C sources and headers (``build.SOURCES``, ``build.HEADERS``)."""
    from ..engine.native import build

    return [build.HERE / name for name in (*build.SOURCES, *build.HEADERS)]


# ---- the generated model file ------------------------------------------------------------------


def variable_rows(model, table) -> list[tuple]:
    """(name, type, causality, kind, a, b, c, start, min, max) of every variable, in value-reference
    order: where each value lives in the core, from the table's ``source`` (NativeBuildError
    naming every source this runtime does not know)."""
    body = {name: i + 1 for i, name in enumerate(model.body_names)}
    joint = {b.joint.name: i + 1 for i, b in enumerate(model.bodies)}
    rows, problems = [], []
    for v in table:
        src = v.source
        kind, abc = None, (0, 0, 0)
        try:
            if src[0] == "param":
                key = src[1]
                if key[0] == "solver":
                    kind, abc = V_SOLVER, (SOLVER_KEYS.index(key[1]), 0, 0)
                elif key[0] == "gravity":
                    kind, abc = V_PARAM, (P_GRAVITY, 0, int(key[1]))
                elif key[0] == "mass":
                    kind, abc = V_PARAM, (P_MASS, body[key[1]], 0)
                elif key[0] == "com":
                    kind, abc = V_PARAM, (P_COM, body[key[1]], int(key[2]))
                elif key[0] == "inertia":
                    kind, abc = V_PARAM, (P_INERTIA, body[key[1]], INERTIA_COMPS.index((key[2], key[3])))
                elif key[0] == "wheel":
                    kind, abc = V_PARAM, (P_WHEEL_IW, int(model.wheels[key[1]][0]), 0)
                elif key[0] in ("spring_k", "spring_d"):
                    kind, abc = V_PARAM, (P_SPRING_K if key[0] == "spring_k" else P_SPRING_D, joint[key[1]], 0)
            elif src[0] == "input":
                kind, abc = V_INPUT, (int(src[1]), 0, 0)
            elif src[0] == "x":
                kind, abc = V_X, (int(src[1]), 0, 0)
            elif src[0] == "qdd":
                kind, abc = V_QDD, (int(src[1]), 0, 0)
            elif src[0] == "inv":
                kind, abc = V_INV, (INV_FIELDS.index(src[1]), int(src[2]), 0)
            elif src[0] == "energy":
                kind, abc = V_ENERGY, (ENERGY_FIELDS.index(src[1]), 0, 0)
            elif src[0] == "drift":
                kind, abc = V_DRIFT, (DRIFT_FIELDS.index(src[1]), 0, 0)
            elif src[0] == "stat":
                kind, abc = V_STAT, (STAT_FIELDS.index(src[1]), 0, 0)
            elif src[0] == "der":
                kind, abc = V_DER, (int(src[1]), 0, 0)
        except (KeyError, ValueError, IndexError):
            kind = None
        if kind is None:
            problems.append(f"{v.name}: source {src!r}")
            continue
        rows.append(
            (
                v.name,
                "R" if v.type == "Real" else "I",
                v.causality[0],
                kind,
                *abc,
                v.start if v.start is not None else 0.0,
                v.min,
                v.max,
            )
        )
    if problems:
        raise NativeBuildError(
            f"the native runtime has no value for {len(problems)} variable(s): " + "; ".join(problems)
        )
    return rows


def model_c_source(model, table, guid: str, identifier: str, variables3=None) -> str:
    """The generated mbsfmu_model.c: the core's tables and the variable map of fmu_model.h
    (variables3: the FMI 3.0 variables of an FMI 3.0 FMU, fmi3.fmi3_variables)."""
    from ..engine.native.tables import c_source
    from .fmi3 import c_table

    rows = variable_rows(model, table)
    lines = [
        (
            f"/* mbsfmu_model.c: model {repr(model.name).replace('*/', '* /')} for the native FMU {identifier}, "
            f"generated by mbsfmu {__version__} (mbsfmu build-fmu --runtime native). Variables in value-reference "
            "order. */"
        ),
        "#include <math.h>",
        '#include "fmu_model.h"',
        c_source(model, "mbs"),
        f"static const mbsfmu_var mbsfmu_vars[{len(rows)}] = {{",
    ]
    for name, typ, cau, kind, a, b, c, start, lo, hi in rows:
        lines.append(
            f"    {{{c_string(name)}, '{typ}', '{cau}', {kind}, {a}, {b}, {c}, {c_double(start)}, "
            f"{c_double(lo)}, {c_double(hi)}}},"
        )
    notes = model.notes
    lines += [
        "};",
        f"static const char *const mbsfmu_notes[{max(len(notes), 1)}] = {{",
        *(f"    {c_string(n)}," for n in notes or ("",)),
        "};",
        "const mbsfmu_model MBSFMU_MODEL = {",
        f"    {c_string(guid)}, {c_string(identifier)},",
        "    mbs_ti, sizeof mbs_ti / sizeof mbs_ti[0], mbs_tf, sizeof mbs_tf / sizeof mbs_tf[0],",
        f"    mbsfmu_vars, {len(rows)},",
        f"    mbsfmu_notes, {len(notes)},",
        f"    {'mbsfmu_vars3' if variables3 else 'NULL'}, {len(variables3 or ())},",
        "};",
        "",
    ]
    if variables3:
        at = lines.index("const mbsfmu_model MBSFMU_MODEL = {")
        lines[at:at] = c_table(variables3)
    return "\n".join(lines)


# ---- zig ---------------------------------------------------------------------------------------


def zig_cache_dir() -> Path:
    """zig's global cache (ZIG_GLOBAL_CACHE_DIR, else the XDG cache folder)."""
    env = os.environ.get("ZIG_GLOBAL_CACHE_DIR")
    if env:
        return Path(env)
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home())) / "zig"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "zig"


def compile_target(
    platform: str, c_files: list[Path], include_dirs: list[Path], out: Path, progress=print, fat: bool = True
) -> dict[str, Path]:
    """Compile c_files (paths; their headers in include_dirs) into the shared library ``out`` for an
    FMI platform, with the core's one zig invocation (``build.zig_cc``) per zig target; darwin64's two slices joined
    into one universal binary (``macho.fat_binary``) when ``fat``, else left apart (FMI 3.0 has a
    folder per architecture). progress: told when each target's compile starts (the first time on
    this machine, that zig builds its C library cache for it: minutes, once) and when it is done,
    with the elapsed time. Returns {zig target: its binary}."""
    from ..engine.native import build

    targets, _suffix, libs = TARGETS[platform]
    flags = [*build.FLAGS, *CFLAGS, *(f"-I{d}" for d in include_dirs), "-shared", *libs]
    if platform == "linux64":
        flags += ["-fPIC", "-Wl,-z,defs"]
    elif platform == "darwin64":  # the install name, else the build folder's path
        flags.append(f"-Wl,-install_name,@rpath/{out.name}")
    parts = []
    for target in targets:
        part = out if len(targets) == 1 else out.parent / target / out.name
        marker = zig_cache_dir() / f"mbsfmu-libc-{target}.ok"
        first = not marker.exists()
        start = time.monotonic()
        if progress:
            progress(
                f"{platform} ({target}): building zig's C library cache for this target, once per machine "
                "(a few minutes; later builds take seconds)..."
                if first
                else f"{platform} ({target}): compiling {len(c_files)} C files..."
            )
        try:
            build.zig_cc(c_files, target, part, flags, progress=lambda _msg: None)
        except build.BuildError as e:
            raise NativeBuildError(f"compiling the FMU for {platform} failed (zig cc -target {target}): {e}") from None
        if progress:
            progress(f"{platform} ({target}): done in {time.monotonic() - start:.0f} s")
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()
        except OSError:
            pass
        parts.append(part)
    if len(parts) > 1 and fat:
        fat_binary(parts, out)
    return dict(zip(targets, parts))


# ---- the FMU -----------------------------------------------------------------------------------


def build_native_fmu(
    model: str | Path,
    output: str | Path | None = None,
    *,
    naming: str = "structured",
    integrator: str = "rk4",
    h_max: float = 1e-3,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    platforms=tuple(TARGETS),
    progress=print,
    floating_base: bool = False,
    fmi_version: int = 2,
) -> Path:
    """Build ``output`` (default ``<modelIdentifier>.fmu``) from the model file ``model``, for the
    FMI platforms ``platforms`` (linux64, win64, darwin64: FMI 3.0's x86_64-linux, x86_64-windows,
    x86_64-darwin and aarch64-darwin). fmi_version: 2 (FMI 2.0) or 3 (FMI 3.0), Co-Simulation and
    Model Exchange in one FMU either way. progress: callable for the per-target messages of a
    first build (zig's one-time cache; None: silent). floating_base: a URDF model's root link on
    a free joint (``load_model``). Returns the FMU's path."""
    from ..sim.simulator import Simulator
    from .fmi3 import PLATFORMS as PLATFORMS3
    from .fmi3 import build_description, fmi3_variables
    from .fmi3 import model_description as model_description3

    model_path = Path(model)
    m = load_model(model_path, floating_base=floating_base)
    refusal = core_refusal(m)
    if refusal:
        raise NativeBuildError(f"{refusal} (the native runtime cannot build this FMU: use --runtime python)")
    Simulator(m, integrator=integrator, h_max=h_max, rtol=rtol, atol=atol)  # InputError on bad settings
    try:
        table = variable_table(m, naming, integrator, h_max, rtol, atol, model_exchange=True)
    except ValueError as e:
        raise InputError(f"model {model_path}: {e}") from None
    unknown = [p for p in platforms if p not in TARGETS]
    if unknown or not platforms:
        raise InputError(f"platforms {list(platforms)}: expected some of {', '.join(TARGETS)}")
    if fmi_version not in FMI_VERSIONS:
        raise InputError(f"FMI version {fmi_version!r}: expected 2 or 3")
    identifier = model_identifier(m.name)
    output = Path(output) if output is not None else Path(f"{identifier}.fmu")
    if output.is_dir():
        output = output / f"{identifier}.fmu"
    check_output(output)  # before the compile: a bad --out fails in ms, not after it
    guid = str(uuid.uuid4())
    info = build_info(
        guid,
        identifier,
        m.name,
        naming,
        (
            f"mbsfmu rigid multibody model {m.name}: {m.N} bodies, nq = {m.nq}, nv = {m.nv} "
            f"(FMI {fmi_version}.0 Co-Simulation and Model Exchange, native C engine core of mbsfmu {__version__})"
        ),
    )
    variables3 = fmi3_variables(m, table) if fmi_version == 3 else None
    model_c = model_c_source(m, table, guid, identifier, variables3)
    with tempfile.TemporaryDirectory(prefix="mbsfmu_native_") as tmp:
        tmp = Path(tmp)
        src = tmp / "sources"
        src.mkdir()
        wrapper = [*WRAPPER, ENTRY[fmi_version]]
        for f in [*core_sources(), *(CSRC_DIR / w for w in wrapper), *sorted(FMI_HEADERS[fmi_version].glob("*.h"))]:
            shutil.copyfile(f, src / f.name)
        (src / GENERATED).write_text(model_c, encoding="utf-8")
        c_files = sorted(f.name for f in src.glob("*.c"))
        # compiled where the package keeps them, all but the generated file: zig caches an object by
        # its source's path, contents and flags, so a second build (another model, the same
        # sources) compiles only the model's file; the FMU's sources/ folder holds the copies
        shared = {f.name: f for f in [*core_sources(), *(CSRC_DIR / w for w in wrapper)]}
        compile_files = [shared.get(name, src / name) for name in c_files]
        include_dirs = [*sorted({f.parent for f in shared.values()}), FMI_HEADERS[fmi_version]]  # no temp path
        binaries = {}  # the FMU's binaries/ folder -> the file
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(platforms)) as pool:
            jobs = {}
            for p in platforms:
                out = tmp / "bin" / p / f"{identifier}{TARGETS[p][1]}"
                out.parent.mkdir(parents=True)
                jobs[p] = pool.submit(compile_target, p, compile_files, include_dirs, out, progress, fmi_version == 2)
                if fmi_version == 2:
                    binaries[p] = out
            for p, job in jobs.items():
                parts = job.result()
                if fmi_version == 3:  # a folder per architecture: the zig targets in PLATFORMS3's order
                    binaries.update(zip(PLATFORMS3[p], parts.values()))
        if fmi_version == 2:
            md = native_description(
                skeleton(m.name, table, identifier, h_max), table, info, c_files, jacobian_refusal(m) is None
            )
        else:
            md = model_description3(m.name, identifier, info, table, variables3, h_max, jacobian_refusal(m) is None)
            (src / "buildDescription.xml").write_bytes(build_description(identifier, c_files))
        with fmu_zip(output) as z:
            z.writestr(zip_entry("modelDescription.xml", ENTRY_DATE), md)
            for p, path in binaries.items():
                z.writestr(zip_entry(f"binaries/{p}/{path.name}", ENTRY_DATE, executable=True), path.read_bytes())
            for f in sorted(src.iterdir()):
                z.writestr(zip_entry(f"sources/{f.name}", ENTRY_DATE), f.read_bytes())
    return output


def jacobian_refusal(model) -> str | None:
    """Why the FMU's Model Exchange gives no exact Jacobian of the state derivatives for ``model``
    (state_jacobian.c covers trees: closed loops and couplings are refused), or None; the core's own
    answer at the model's initial state when the core library loads here, else the Model's loops."""
    from ..engine.native.core import Core, available

    if not available():
        return f"closed loops or couplings: {', '.join(model.loops.names)}" if model.loops else None
    core = Core(model)
    try:
        core.state_jacobian(core.x, np.zeros(core.n_u), 1.0)
    except InputError as e:
        return str(e)
    return None


def core_refusal(model) -> str | None:
    """The core's reason for refusing a model (e.g. closed loops, which it does not close yet), or
    None; None also when the core library cannot be loaded on this machine (the FMU's binaries are
    cross-compiled and checked when instantiated)."""
    from ..engine.native.core import Core, available

    if not available():
        return None
    try:
        Core(model)
    except InputError as e:
        return str(e)
    return None
