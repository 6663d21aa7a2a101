"""The FMUs of a co-simulation: the scenario's model FMU and builtin controllers, built once into a
cache (``default_fmu_dir``) keyed by everything that goes into them, and extracted once next to
their file for the fmpy master."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
import zipfile
from pathlib import Path

from ..scenario.cosim_section import MBS
from ..scenario.run import build_simulator
from .interface import pid_units


def default_fmu_dir() -> Path:
    """Where built FMUs are cached: $MBSFMU_FMU_CACHE, else $XDG_CACHE_HOME/mbsfmu/fmus, else
    ~/.cache/mbsfmu/fmus. Entries are keyed by a hash of everything that goes into the FMU (the
    engine's sources, the model file with the scenario's overrides, the solver settings, the Python)."""
    env = os.environ.get("MBSFMU_FMU_CACHE")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mbsfmu" / "fmus"


def cached(fmu_dir: Path, kind: str, key: dict, build) -> Path:
    """The FMU ``<fmu_dir>/<kind>-<hash>/<kind>.fmu``, built by build(folder) -> path on a miss (in
    a private folder, then moved into place: concurrent runs do not see half-written files)."""
    from ..fmu.package import engine_hash

    key = {**key, "engine": engine_hash(), "python": sys.executable, "version": list(sys.version_info[:3])}
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()[:16]
    folder = Path(fmu_dir) / f"{kind}-{digest}"
    fmu = folder / f"{kind}.fmu"
    if fmu.is_file():
        return fmu
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder, prefix=".build-") as tmp:
        try:
            os.link(build(Path(tmp)), fmu)
        except FileExistsError:  # another process built the same FMU meanwhile: keep its file (and extraction)
            pass
    return fmu


def extracted(fmu: Path) -> Path:
    """The FMU's files, extracted once next to it (``<name>.x/``)."""
    target = fmu.with_suffix(".x")
    if target.is_dir():
        return target
    tmp = Path(tempfile.mkdtemp(dir=fmu.parent, prefix=".x-"))
    with zipfile.ZipFile(fmu) as z:
        z.extractall(tmp)
    for so in (tmp / "binaries").rglob("*.so"):
        so.chmod(0o755)
    try:
        tmp.rename(target)
    except OSError:  # another process got there first
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def model_files(scn) -> dict[str, bytes]:
    """The model file(s) the model FMU is built from, by file name, the first one the model: the
    scenario's model with its ``gravity`` and ``initial`` overrides written in (an inline model as
    a file named like the scenario, a URDF through an overlay), plus the URDF an overlay names."""
    from ..io.model_file import parse_file

    path = Path(scn.model_path)
    overrides = scn.gravity is not None or scn.initial_q or scn.initial_qd
    if scn.model_inline is None and not overrides:
        files = {path.name: path.read_bytes()}
        doc = None
        if path.suffix.lower() in (".yaml", ".yml", ".json"):
            doc, _ = parse_file(path)
        return {**files, **_urdf_of(doc, path.parent)}
    if scn.model_inline is not None:
        doc, name = _plain(scn.model_inline.doc), f"{scn.path.stem}.json"
    elif path.suffix.lower() in (".yaml", ".yml", ".json"):
        doc, name = _plain(parse_file(path)[0]), f"{path.stem}.json"
    else:  # a URDF: an overlay carries the overrides
        doc, name = {"version": 1, "urdf": path.name}, f"{path.stem}.json"
    if scn.gravity is not None:
        doc["gravity"] = list(scn.gravity)
    init = doc.setdefault("initial", {})
    for key, values in (("q", scn.initial_q), ("qd", scn.initial_qd)):
        if values:
            dest = init.setdefault(key, {})
            for joint, v in values.items():
                dest[joint] = v[0] if len(v) == 1 else list(v)
    extra = _urdf_of(doc, path.parent if scn.model_inline is None else scn.path.parent)
    return {name: json.dumps(doc, indent=1).encode(), **extra}


def _plain(doc):
    return json.loads(json.dumps(doc))


def _urdf_of(doc, folder: Path) -> dict[str, bytes]:
    if isinstance(doc, dict) and isinstance(doc.get("urdf"), str):
        return {doc["urdf"]: (folder / doc["urdf"]).read_bytes()}
    return {}


def build_fmus(scn, fmu_dir: str | Path | None = None, sim=None) -> dict[str, Path]:
    """The FMU file of every FMU of the scenario's co-simulation, ``mbs`` first; the model FMU and
    builtin controllers are built (``build_fmu``, ``build_pid_fmu``) into the cache ``fmu_dir``
    (default ``default_fmu_dir()``) unless an identical build is there. sim: the scenario's
    Simulator (``build_simulator``), if at hand."""
    from ..fmu import build_fmu

    fmu_dir = Path(fmu_dir) if fmu_dir is not None else default_fmu_dir()
    integ = scn.integrator
    files = model_files(scn)

    def build_model(tmp: Path) -> Path:
        for rel, data in files.items():
            (tmp / "model" / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp / "model" / rel).write_bytes(data)
        return build_fmu(
            tmp / "model" / next(iter(files)),
            tmp / "mbs.fmu",
            naming="structured",
            integrator=integ["method"],
            h_max=integ["h_max"],
            rtol=integ["rtol"],
            atol=integ["atol"],
        )

    key = {"files": {k: hashlib.sha256(v).hexdigest() for k, v in files.items()}, "solver": integ}
    out = {MBS: cached(fmu_dir, "mbs", key, build_model)}
    for name, entry in scn.cosim.fmus.items():
        if entry.builtin == "pid":
            from ..fmu.pid import build_pid_fmu, pid_config

            sim = build_simulator(scn) if sim is None else sim
            units = pid_units(sim.model, scn.controller)
            cfg = pid_config(scn.controller, scn.dt, units, scn.name)
            out[name] = cached(
                fmu_dir,
                "pid",
                {"config": cfg},
                lambda tmp, units=units: build_pid_fmu(
                    scn.controller, scn.dt, tmp / "pid.fmu", units=units, name=scn.name
                ),
            )
        else:
            out[name] = entry.path
    return out


__all__ = ["build_fmus", "cached", "default_fmu_dir", "extracted", "model_files"]
