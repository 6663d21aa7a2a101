"""The ROS 2 package folder ros_node/ as ROS tools see it: package.xml (format 3) parsed and
validated by catkin_pkg (the parser colcon uses), every import of the node declared as a
dependency, a real ``colcon build`` of a workspace holding it (plain and --symlink-install) whose
install tree runs the node's code, and the launch file's declarations."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import ROOT

PKG = ROOT / "ros_node"
# Python imports of the node -> the ROS package (or rosdep key) that provides them
PROVIDERS = {"rclpy": "rclpy", "numpy": "python3-numpy", "scipy": "python3-scipy", "yaml": "python3-yaml",
             "matplotlib": "python3-matplotlib", "mbsfmu": "python3-mbsfmu-pip"}  # fmt: skip
STDLIB = set(sys.stdlib_module_names) | {"mbsfmu_ros"}


def _imports(folder: Path) -> set[str]:
    out = set()
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                out |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                out.add(node.module.split(".")[0])
    return out - STDLIB


def test_package_xml_is_valid_format_3_and_declares_every_import():
    catkin_pkg = pytest.importorskip("catkin_pkg.package", reason="catkin_pkg comes with colcon-ros (test extra)")
    pkg = catkin_pkg.parse_package(str(PKG / "package.xml"))
    pkg.validate()
    assert pkg.package_format == 3 and pkg.name == "mbsfmu_ros" and pkg.get_build_type() == "ament_python"
    declared = {d.name for d in pkg.exec_depends}
    needed = {PROVIDERS.get(m, m) for m in _imports(PKG / "mbsfmu_ros") | _imports(PKG / "launch")}
    assert needed <= declared, needed - declared


@pytest.mark.integration
@pytest.mark.parametrize("symlink", [False, True], ids=["install", "symlink-install"])
def test_colcon_builds_the_package_and_its_install_tree_runs_the_node_code(tmp_path, symlink):
    colcon = shutil.which("colcon")
    if colcon is None:
        pytest.skip("colcon is not installed (test extra: colcon-core, colcon-ros)")
    ws = tmp_path / "ws"
    shutil.copytree(PKG, ws / "src" / "mbsfmu_ros", ignore=shutil.ignore_patterns("__pycache__"))
    cmd = [colcon, "--log-base", str(tmp_path / "log"), "build"] + (["--symlink-install"] if symlink else [])
    r = subprocess.run(cmd, cwd=ws, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    prefix = ws / "install" / "mbsfmu_ros"
    share = prefix / "share" / "mbsfmu_ros"
    for rel in ("package.xml", "launch/mbsfmu.launch.py", "config/mbsfmu.yaml"):
        assert (share / rel).is_file(), rel
    assert (prefix / "share" / "ament_index" / "resource_index" / "packages" / "mbsfmu_ros").is_file()
    assert (prefix / "lib" / "mbsfmu_ros" / "mbs_node").is_file()  # what `ros2 run mbsfmu_ros mbs_node` starts
    site = next(prefix.glob("lib/python*/site-packages"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ws / "build" / "mbsfmu_ros")])}
    code = "import mbsfmu_ros.config as c, mbsfmu_ros; print(mbsfmu_ros.__file__); print(len(c.declarations()))"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    origin = Path(r.stdout.splitlines()[0]).resolve()
    assert str(origin).startswith(str((ws / ("src" if symlink else "install")).resolve())), origin


def test_launch_file_declares_the_model_use_sim_time_and_starts_the_node():
    """The launch file as the launch API would read it (no wheel of launch/launch_ros here): its
    arguments and the executables it starts, from its syntax tree."""
    tree = ast.parse((PKG / "launch" / "mbsfmu.launch.py").read_text())
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    kw = [{k.arg: k.value for k in c.keywords} for c in calls]
    names = {getattr(c.func, "id", getattr(c.func, "attr", "")) for c in calls}
    assert {"DeclareLaunchArgument", "Node", "LaunchDescription"} <= names
    text = ast.unparse(tree)
    assert "'use_sim_time'" in text and "'model'" in text and "'world'" in text
    executables = {ast.literal_eval(k["executable"]) for k in kw if "executable" in k}
    packages = {ast.literal_eval(k["package"]) for k in kw if "package" in k}
    assert "mbs_node" in executables and "mbsfmu_ros" in packages


def test_the_pure_python_modules_import_without_ros():
    """The modules the package docstring names as pure Python import with rclpy and every ROS
    message package blocked (a client without ROS reads JointState bytes with one of them)."""
    code = (
        "import sys\n"
        "for m in ('rclpy', 'sensor_msgs', 'std_msgs', 'rosgraph_msgs', 'geometry_msgs', 'builtin_interfaces',\n"
        "          'diagnostic_msgs', 'tf2_msgs', 'simulation_interfaces', 'control_msgs', 'trajectory_msgs'):\n"
        "    sys.modules[m] = None  # an import of it raises ImportError\n"
        "import mbsfmu_ros\n"
        "from mbsfmu_ros import config, conversion, diagnostics, joint_state_reader, pacing, world\n"
        "from mbsfmu_ros.cdr import CdrLayout\n"
        "lay = CdrLayout(); stamp = lay.header('base'); lay.strings(['a', 'bc'])\n"
        "offsets = [lay.float64_sequence(2) for _ in range(3)]; cdr = lay.finish()\n"
        "cdr.f8[cdr.doubles(offsets[0], 2)] = [1.5, -2.0]\n"
        "js = joint_state_reader.JointStateReader().read(cdr.data())\n"
        "assert js.name == ('a', 'bc') and js.position.tolist() == [1.5, -2.0] and js.frame_id == 'base'\n"
        "assert 'rclpy' not in [k for k, v in sys.modules.items() if v is not None]\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(PKG), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
