"""mbsfmu: rigid multibody dynamics with momentum and energy tests, as library, FMU and ROS 2 node."""
from __future__ import annotations

from pathlib import Path

from .errors import InputError, MbsError, ModelError, Problem
from .model import Body, Joint, ModelSpec, Origin, Spring
from .multibody import Model

__version__ = "0.1.0"


def load_model(path: str | Path) -> Model:
    """Load and validate a model file: YAML/JSON (.yaml, .yml, .json), a URDF robot description
    (.urdf), or a YAML/JSON overlay with a ``urdf`` key (a URDF plus wheels, forces, gravity,
    initial state; see README "URDF"). ModelError lists every problem."""
    from .model.loader import parse_file, spec_from_dict
    if Path(path).suffix.lower() == ".urdf":
        from .model.urdf import load_urdf
        return load_urdf(path)
    data, lines = parse_file(path)
    if isinstance(data, dict) and "urdf" in data:
        from .model.urdf import load_overlay
        return load_overlay(data, lines, path)
    spec = spec_from_dict(data, lines, str(path))
    return Model(spec, source=str(path), lines=lines)


__all__ = ["Body", "InputError", "Joint", "MbsError", "Model", "ModelError", "ModelSpec", "Origin", "Problem",
           "Spring", "load_model", "__version__"]
