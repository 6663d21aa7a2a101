"""The architecture's rules as tests (docs/explanation/architecture.md): the import contracts of
pyproject.toml ([tool.importlinter]: layers, the checker's independence, the ROS package above
mbsfmu, no cycles), no private name of one module used by another, the checker importable without
the engine, and the import paths of 0.1 gone (removed in 0.3.0)."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"mbsfmu": ROOT / "mbsfmu", "mbsfmu_ros": ROOT / "ros_node" / "mbsfmu_ros"}  # name: its folder


def sources() -> list[Path]:
    """The .py files of PACKAGES; each package folder must exist (a moved package would otherwise
    leave its modules unchecked)."""
    gone = [str(folder.relative_to(ROOT)) for folder in PACKAGES.values() if not folder.is_dir()]
    assert not gone, f"package folders do not exist: {gone}"
    return sorted(p for folder in PACKAGES.values() for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def module_of(path: Path) -> str:
    """The dotted module name of a source file (its path below the folder holding its package)."""
    base = next(folder.parent for folder in PACKAGES.values() if folder in path.parents)
    parts = list(path.relative_to(base).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_import_contracts_hold():
    """lint-imports over the installed sources: every contract KEPT (its output names the import
    that breaks one). A subprocess, so no other test's imports matter; no cache written."""
    pytest.importorskip("importlinter")
    code = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "BROKEN" not in r.stdout and "0 broken" in r.stdout


def test_contracts_can_fail(tmp_path):
    """The layers contract is not vacuous: a config whose layers put the engine above the simulator
    is reported broken."""
    pytest.importorskip("importlinter")
    cfg = tmp_path / "contracts.ini"
    cfg.write_text(
        "[importlinter]\nroot_package = mbsfmu\n\n[importlinter:contract:upside-down]\n"
        "name = upside down\ntype = layers\nlayers =\n    mbsfmu.engine\n    mbsfmu.sim\n"
    )
    code = (
        f"import sys; from importlinter.cli import lint_imports; "
        f"sys.exit(lint_imports(config_filename={str(cfg)!r}, no_cache=True, no_logo=True))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "mbsfmu.sim" in r.stdout and "BROKEN" in r.stdout


def private_definitions() -> dict[str, set[str]]:
    """Per module, the private names it defines: functions, classes, module-level names, and
    attributes assigned on self."""
    out = {}
    for path in sources():
        names = set()
        for n in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and private(n.name):
                names.add(n.name)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and private(n.id):
                names.add(n.id)
            elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and private(n.attr):
                names.add(n.attr)
        out[module_of(path)] = names
    return out


def test_no_private_name_used_across_modules():
    """No ``from x import _name`` between our modules, and no ``obj._name`` in one module where
    only another module defines ``_name`` (self./cls. access inside a class is its own business)."""
    defs = private_definitions()
    bad = []
    for path in sources():
        mod = module_of(path)
        for n in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").split(".")[0] in PACKAGES):
                bad += [f"{mod}:{n.lineno} imports {a.name}" for a in n.names if private(a.name)]
            elif isinstance(n, ast.Attribute) and private(n.attr) and isinstance(n.ctx, ast.Load):
                if isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
                    continue
                owners = {m for m, names in defs.items() if n.attr in names}
                if owners and mod not in owners:
                    bad.append(f"{mod}:{n.lineno} uses {ast.unparse(n)} (defined in {', '.join(sorted(owners))})")
    assert not bad, "\n".join(bad)


def test_checker_loads_without_the_engine():
    """``import mbsfmu.checker`` (and a check on a trajectory) loads neither the engine, the
    simulator, the readers nor scipy: the checker is the independent test of the engine."""
    code = (
        "import sys, mbsfmu.checker, mbsfmu.trajectory; "
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('mbsfmu', 'scipy', 'yaml')))))"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    loaded = set(r.stdout.split())
    assert {"mbsfmu.checker.conservation", "mbsfmu.checker.quantities", "mbsfmu.checker.records"} <= loaded
    assert not {m for m in loaded if m.startswith(("mbsfmu.engine", "mbsfmu.sim", "mbsfmu.io", "scipy", "yaml"))}, (
        loaded
    )


@pytest.mark.parametrize("old", ["mbsfmu.simulator", "mbsfmu.invariants", "mbsfmu.multibody"])
def test_the_paths_of_version_0_1_are_gone(old):
    """Deprecated in 0.2.0 with a warning naming the new path, removed in 0.3.0 as announced."""
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


def test_the_package_never_names_itself_in_an_import():
    """Inside mbsfmu every import of our own code is relative: the python-runtime FMU runs a copy
    of the package renamed mbsfmu_engine_<hash> (fmu/build.py), which an absolute ``mbsfmu.``
    import would leave for whatever mbsfmu the host's Python has, or none."""
    bad = []
    for path in sorted((ROOT / "mbsfmu").rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(n, ast.ImportFrom) and not n.level and (n.module or "").split(".")[0] == "mbsfmu":
                bad.append(f"{module_of(path)}:{n.lineno} from {n.module} import ...")
            elif isinstance(n, ast.Import):
                bad += [
                    f"{module_of(path)}:{n.lineno} import {a.name}" for a in n.names if a.name.split(".")[0] == "mbsfmu"
                ]
            elif (
                isinstance(n, ast.Call)
                and getattr(n.func, "attr", getattr(n.func, "id", None)) in ("import_module", "__import__")
                and n.args
                and isinstance(n.args[0], ast.Constant)
                and str(n.args[0].value).startswith("mbsfmu")
            ):
                bad.append(f"{module_of(path)}:{n.lineno} imports {n.args[0].value!r} by name")
    assert not bad, "\n".join(bad)
