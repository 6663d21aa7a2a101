"""mbsfmu: rigid multibody dynamics with momentum and energy tests, as library, FMU and ROS 2 node.

Docstrings cite their sources by title and equation ("MBS Momentum Testing Eq. 9", "No's method,
Eq. 24", "RBDA Table 7.1"); the full references, and the errata found in them, are in the
documentation: docs/explanation/methods.md and docs/explanation/errata.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .errors import InputError, MbsError, ModelError, Problem
from .lazy import lazy_names

if TYPE_CHECKING:
    from .engine.model import Model
    from .engine.spec import Body, Joint, ModelSpec, Origin, Spring

# the public names of the engine, imported on first use: ``import mbsfmu.checker`` (numpy only, the
# independent check) or ``import mbsfmu.trajectory`` must not load the engine and scipy
LAZY = {
    "Model": ".engine.model",
    "Body": ".engine.spec",
    "Joint": ".engine.spec",
    "ModelSpec": ".engine.spec",
    "Origin": ".engine.spec",
    "Spring": ".engine.spec",
    "linearize": ".linear.statespace",
    "rollout": ".sim.rollout",
    "Rollout": ".sim.rollout",
}


def _version() -> str:
    """The version; pyproject.toml is its one source. In a source tree (a clone, an editable
    install) the pyproject.toml beside the package; else the installed distribution's metadata,
    which pip wrote from it; else (e.g. the engine copy inside an FMU) "0+unknown"."""
    import re

    try:
        text = (Path(__file__).parent.parent / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        text = ""
    project = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S)
    if project and re.search(r'^name\s*=\s*"mbsfmu"', project.group(1), re.M):
        found = re.search(r'^version\s*=\s*"([^"]+)"', project.group(1), re.M)
        if found:
            return found.group(1)
    if __name__ == "mbsfmu":
        from importlib import metadata

        try:
            return metadata.version("mbsfmu")
        except metadata.PackageNotFoundError:
            pass
    return "0+unknown"


_engine_names = lazy_names(__name__, LAZY)


def __getattr__(name: str):
    """``__version__`` is computed on first use (reading package metadata costs ~15-50 ms of start-up);
    the engine's names (LAZY) are imported on first use."""
    if name == "__version__":
        global __version__
        __version__ = _version()
        return __version__
    return _engine_names(name)


def load_model(path: str | Path, repair_inertia: bool = False, floating_base: bool = False) -> Model:
    """Load and validate a model file: YAML/JSON (.yaml, .yml, .json), a URDF robot description
    (.urdf), or a YAML/JSON overlay with a ``urdf`` key (a URDF plus wheels, forces, gravity,
    initial state; see docs/guides/urdf.md). ModelError lists every problem. repair_inertia:
    moving bodies whose inertia no rigid body has get their smallest principal moments raised
    (mbsfmu/engine/spec/repair.py), each change listed in ``Model.notes``. floating_base: the
    URDF's root link on a free joint ``root_joint`` (a .urdf file, or an overlay as with its
    ``floating_base: true``); InputError for a YAML/JSON model, whose joints say it."""
    from .engine.model import Model
    from .io.model_file import read_document, spec_from_dict

    if Path(path).suffix.lower() == ".urdf":
        from .io.urdf import load_urdf

        return load_urdf(path, floating_base=floating_base, repair_inertia=repair_inertia)
    data, lines, duplicates = read_document(path)
    if isinstance(data, dict) and "urdf" in data:
        from .io.urdf import load_overlay

        return load_overlay(
            data, lines, path, repair_inertia=repair_inertia, floating_base=floating_base, problems=duplicates
        )
    if floating_base:
        raise InputError(
            f"{path}: floating_base (--floating-base) applies to a URDF (a .urdf file or an overlay with a "
            "'urdf' key); in a YAML/JSON model file the root body's joint says it (type: free)"
        )
    spec = spec_from_dict(data, lines, str(path), problems=duplicates)
    if repair_inertia:
        from .engine.spec.repair import repair_inertia as repaired

        spec, _repairs = repaired(spec)
    return Model(spec, source=str(path), lines=lines)  # repair_inertia: true in the file: spec_from_dict


__all__ = [
    "Body",
    "InputError",
    "Joint",
    "MbsError",
    "Model",
    "ModelError",
    "ModelSpec",
    "Origin",
    "Problem",
    "Spring",
    "linearize",
    "load_model",
    "__version__",
]
