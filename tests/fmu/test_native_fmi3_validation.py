"""fmpy's validation (fmpy.validation.validate_fmu: the FMI 3.0 XML schema, variable names,
ModelStructure, start values, causality/variability combinations, units) of the FMI 3.0 FMU of
every bundled model (issue 36 item 5)."""

from __future__ import annotations

import pytest

from tests.support.native_fmu import description
from tests.support.paths import MODELS

pytestmark = pytest.mark.integration

BUNDLED = sorted(p.name for p in MODELS.iterdir() if p.suffix in (".yaml", ".urdf"))


@pytest.mark.parametrize("model", BUNDLED)
def test_fmpy_finds_no_problem_in_the_fmi3_fmu(native, model):
    """Each bundled model's ``--fmi-version 3`` FMU: an FMI 3.0 modelDescription with both
    interfaces, and fmpy's validation returns no problem."""
    from fmpy.validation import validate_fmu

    fmu = native.fmu(model, fmi_version=3)
    root = description(fmu)
    assert root.get("fmiVersion") == "3.0"
    assert root.find("ModelExchange") is not None and root.find("CoSimulation") is not None
    assert validate_fmu(str(fmu)) == []
