"""The native FMU's Model Exchange interface and its FMI 3.0 build driven by the portable C hosts
(tests/support/c_host: fmu_run.c's Model Exchange loop, fmu3_run.c for FMI 3.0 Co-Simulation and
Model Exchange), which integrate the states themselves (explicit Euler or classic RK4: fmiSetTime,
fmiSetContinuousStates, the derivatives per stage, the step-completed call, the event iteration),
on Linux and, for the win64 binaries, under wine (issue 36 item 5): the same numbers as the
Co-Simulation FMU, FMI 3.0 equal to FMI 2.0 bit for bit, win64 equal to linux64 bit for bit, and no
allocation after initialisation on any call a host makes per step."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from tests.support.native_fmu import fmi3_sizes, library, parse_rows, state_names, variables

pytestmark = pytest.mark.integration

MODELS = ("spacecraft", "scara", "fourbar", "urdf_arm7.urdf")
# the win64 runs: the spacecraft (quaternions, sqrt) and a 7-joint URDF arm (sin and cos of every
# joint angle), as test_native.py's Co-Simulation runs under wine
WINE_MODELS = ("spacecraft", "urdf_arm7.urdf")
STEPS, DT = 1000, 1e-3
ALLOCATIONS = re.compile(r"allocations: (?:instantiate (\d+), )?(\d+) after initialisation")


def inputs(fmu2: Path) -> list[float]:
    """A small constant value on every input, in the FMI 2.0 FMU's order (exercises every
    actuator path): 0.01, 0.02, ..."""
    n = sum(1 for _, _, causality in variables(fmu2).values() if causality == "input")
    return [0.01 * (k + 1) for k in range(n)]


def host2(native, fmu2: Path, extracted: Path, platform: str, me: str | None) -> list[str]:
    """fmu_run on the FMI 2.0 FMU: the states and E after every step, every input set."""
    v = variables(fmu2)
    states = state_names(fmu2)
    reals = [v[n][0] for n in [*states, "E"]]
    names_in = [n for n, (_, _, c) in v.items() if c == "input"]
    guid = ET.parse(extracted / "modelDescription.xml").getroot().get("guid")
    cmd = [str(native.host(platform)), str(library(extracted, platform)), guid, "file:///resources", str(STEPS)]
    cmd += [repr(DT), "--real", ",".join(map(str, reals))]
    for n, x in zip(names_in, inputs(fmu2)):
        cmd += ["--set", f"{v[n][0]}={x!r}"]
    return cmd + (["--me", me, "--nx", str(len(states))] if me else [])


def host3(native, fmu2: Path, fmu3: Path, extracted: Path, platform: str, me: str | None) -> list[str]:
    """fmu3_run on the FMI 3.0 FMU: the same numbers as host2 asks for (the state arrays q, qd,
    W_in, W_diss and E), the inputs u set element by element."""
    sizes = fmi3_sizes(fmu3)
    names = [*state_names(fmu3), "E"]
    token = ET.parse(extracted / "modelDescription.xml").getroot().get("instantiationToken")
    cmd = [str(native.host(platform, 3)), str(library(extracted, platform)), token, str(extracted / "resources")]
    cmd += [str(STEPS), repr(DT), "--real", ",".join(str(sizes[n][0]) for n in names)]
    cmd += ["--nvalues", str(sum(sizes[n][1] for n in names))]
    u = inputs(fmu2)
    if u:
        cmd += ["--set", f"{sizes['u'][0]}=" + ",".join(map(repr, u))]
    return cmd + (["--me", me] if me else [])


def run(cmd: list[str], env: dict | None = None, timeout: float = 600) -> tuple[np.ndarray, tuple[int | None, int]]:
    """Run a host: its rows and (allocations in instantiation or None, allocations after
    initialisation) from its stderr."""
    r = subprocess.run(cmd, env=env if env is not None else {}, capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, r.stderr[-3000:]
    m = ALLOCATIONS.search(r.stderr)
    assert m, r.stderr[-3000:]
    rows = parse_rows(r.stdout)
    assert rows.shape[0] == STEPS, r.stderr[-3000:]
    return rows, (int(m[1]) if m[1] is not None else None, int(m[2]))


def extracted_fmus(native, model: str, platforms=("linux64",)) -> tuple[Path, Path, Path, Path]:
    fmu2 = native.fmu(model, platforms=platforms)
    fmu3 = native.fmu(model, platforms=platforms, fmi_version=3)
    return fmu2, native.extracted(fmu2), fmu3, native.extracted(fmu3)


@pytest.mark.parametrize("model", MODELS)
def test_the_c_hosts_model_exchange_and_fmi3_loops_give_the_co_simulation_numbers(native, model):
    """Linux, 1000 steps of 1 ms, every input set: FMI 3.0 Co-Simulation equals FMI 2.0
    Co-Simulation, and FMI 3.0 Model Exchange under the host's RK4 equals FMI 2.0's, bit for bit
    (one core, one value table); the host's RK4 on the Model Exchange FMU agrees with the FMU's own
    RK4 at h_max = 1 ms within 1e-7 of each state's scale: the same method and step, and the two
    differ only by what keeps the states on their manifolds (Model Exchange: the quaternion's
    norm-restoring term and the loops' Baumgarte term, acting on residuals of the size of RK4's
    local error; Co-Simulation: the projections), so by at most RK4's global error at h = 1 ms,
    C h^4 ~ 1e-9 to 1e-7 on these models (measured: 5.8e-9 on the four-bar, below 1e-14 on the
    others); explicit Euler runs too. Every
    loop makes no allocation after initialisation (FMI 2.0: the host's allocateMemory; FMI 3.0: the
    host's own malloc/calloc/realloc), while both counts do see the allocations of instantiation."""
    fmu2, x2, fmu3, x3 = extracted_fmus(native, model)
    cs2, (_, a) = run(host2(native, fmu2, x2, "linux64", None))
    assert a == 0
    rows = {}
    for me in ("rk4", "euler"):
        rows[me], (inst, a) = run(host2(native, fmu2, x2, "linux64", me))
        assert inst > 0 and a == 0, me
    cs3, (inst, a) = run(host3(native, fmu2, fmu3, x3, "linux64", None))
    assert inst > 0 and a == 0
    np.testing.assert_array_equal(cs3, cs2)
    for me in ("rk4", "euler"):
        me3, (inst, a) = run(host3(native, fmu2, fmu3, x3, "linux64", me))
        assert inst > 0 and a == 0, me
        np.testing.assert_array_equal(me3, rows[me])
    scale = np.maximum(1.0, np.abs(cs2[:, 1:]).max(axis=0))
    assert (np.abs(rows["rk4"][:, 1:] - cs2[:, 1:]) / scale).max() <= 1e-7


def wine() -> str:
    exe = (
        shutil.which("wine")
        or shutil.which("wine64")
        or next((str(p) for p in (Path("/usr/lib/wine/wine64"),) if p.is_file()), None)
    )
    if exe is None:
        pytest.skip("wine is not installed (.ci/run installs Debian's wine64; apt-get install -y wine64)")
    return exe


@pytest.mark.slow
@pytest.mark.parametrize("model", WINE_MODELS)
def test_win64_model_exchange_and_fmi3_under_wine_equal_linux64(native, tmp_path, model):
    """The win64 DLLs run by the hosts cross-compiled by zig for Windows under wine: FMI 2.0 Model
    Exchange (host RK4), FMI 3.0 Co-Simulation and FMI 3.0 Model Exchange (host RK4) give the
    linux64 binaries' numbers bit for bit over 1000 steps (the core's arithmetic is IEEE without
    FMA and its own sin, cos), and FMI 2.0 Model Exchange makes no allocation after initialisation
    under Windows too (FMI 3.0's DLL calls the Windows C runtime's malloc directly, which a host
    cannot count: "not measured", checked on Linux above)."""
    exe = wine()
    fmu2, x2, fmu3, x3 = extracted_fmus(native, model, platforms=("linux64", "win64"))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "WINEPREFIX": str(native.wine_prefix()),
        "WINEDEBUG": "-all",
        "HOME": str(tmp_path),
    }
    for platform_cmd in (
        lambda p: host2(native, fmu2, x2, p, "rk4"),
        lambda p: host3(native, fmu2, fmu3, x3, p, None),
        lambda p: host3(native, fmu2, fmu3, x3, p, "rk4"),
    ):
        lin, _ = run(platform_cmd("linux64"))
        win = subprocess.run([exe, *platform_cmd("win64")], env=env, capture_output=True, text=True, timeout=900)
        assert win.returncode == 0, win.stderr[-3000:]
        np.testing.assert_array_equal(parse_rows(win.stdout), lin)
        m = ALLOCATIONS.search(win.stderr)
        assert (m is not None and m[2] == "0") or "allocations: not measured" in win.stderr, win.stderr[-3000:]
        if "fmu_run" in platform_cmd("win64")[0]:
            assert m is not None and m[2] == "0"
