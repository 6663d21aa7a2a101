"""``build_fmu``: the python runtime's FMI 2.0 Co-Simulation FMU of a model file (pythonfmu, the
model and this engine bundled in its resources; ``package.py`` packages it, ``slave.py`` runs
it). The Python-free FMU is ``native.build_native_fmu``; the command ``mbsfmu build-fmu`` is
``command.py``."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from .. import __version__, load_model
from ..errors import InputError
from ..sim.simulator import Simulator
from .description import FmuBuildError, build_info, model_identifier, now
from .package import check_output, engine_info, package_python_fmu, python_info, require_pythonfmu
from .variables import variable_table

MODEL_DIR = "mbsfmu_model"  # resources/ folder of the model file (and the URDF an overlay names)


def build_fmu(
    model: str | Path,
    output: str | Path | None = None,
    *,
    naming: str = "structured",
    integrator: str = "rk4",
    h_max: float = 1e-3,
    rtol: float = 1e-10,
    atol: float = 1e-12,
    loader: bool | None = None,
    floating_base: bool = False,
) -> Path:
    """Build ``output`` (default ``<modelIdentifier>.fmu``) from the model file ``model``.

    naming: "structured" (``q1.tau``, ``push.f[1]``) or "flat" (``q1_tau``, ``push_f_1``);
    integrator, h_max [s], rtol, atol: start values of the solver parameters (tunable before
    initialisation). loader: True = the Linux loader binary is required (FmuBuildError if it
    cannot be compiled), False = ship pythonfmu's binary only, None = loader if possible.
    floating_base: a URDF model's root link on a free joint (``load_model``; the FMU loads it so).
    Returns the FMU's path. ModelError lists the model's problems."""
    require_pythonfmu()
    model_path = Path(model)
    m = load_model(model_path, floating_base=floating_base)
    Simulator(m, integrator=integrator, h_max=h_max, rtol=rtol, atol=atol)  # InputError on bad settings
    try:
        table = variable_table(m, naming, integrator, h_max, rtol, atol)
    except ValueError as e:
        raise InputError(f"model {model_path}: {e}") from None
    identifier = model_identifier(m.name)
    output = Path(output) if output is not None else Path(f"{identifier}.fmu")
    if output.is_dir():
        output = output / f"{identifier}.fmu"
    check_output(output)  # before the build: a bad --out fails in ms, not after it
    info = build_info(
        str(uuid.uuid4()),
        identifier,
        m.name,
        naming,
        (
            f"mbsfmu rigid multibody model {m.name}: {m.N} bodies, nq = {m.nq}, nv = {m.nv} "
            f"(FMI 2.0 Co-Simulation, engine mbsfmu {__version__})"
        ),
        model_file=f"{MODEL_DIR}/{model_path.name}",
        model_source=model_path.name,
        floating_base=bool(floating_base),
        solver={"method": integrator, "h_max": float(h_max), "rtol": float(rtol), "atol": float(atol)},
        **engine_info(),
        built=now(),
        python=python_info(),
    )

    def stage_files(stage: Path) -> list[Path]:
        copy_model(model_path, stage / MODEL_DIR)
        return [stage / MODEL_DIR]

    return package_python_fmu(
        output,
        table,
        info,
        slave="fmu.slave import MbsfmuSlave",
        what=f"mbsfmu model {m.name}",
        maker="mbsfmu build-fmu",
        module="mbsfmu_slave",
        stage_files=stage_files,
        loader=loader,
    )


def copy_model(path: Path, dest: Path) -> str:
    """Copy the model file (and the URDF an overlay names) into dest; its path relative to dest."""
    dest.mkdir(parents=True)
    shutil.copyfile(path, dest / path.name)
    if path.suffix.lower() in (".yaml", ".yml", ".json"):
        from ..io.model_file import parse_file

        data, _lines = parse_file(path)
        if isinstance(data, dict) and isinstance(data.get("urdf"), str):
            rel = Path(data["urdf"])
            if rel.is_absolute() or ".." in rel.parts:
                raise FmuBuildError(
                    f"{path}: urdf: {rel}: an FMU bundles the URDF only when its path is relative and "
                    "inside the overlay's folder"
                )
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path.parent / rel, dest / rel)
    return path.name


__all__ = ["MODEL_DIR", "build_fmu", "copy_model"]
