"""One source for the version: pyproject.toml. ``mbsfmu.__version__`` reads it (or the installed
metadata pip wrote from it); the ROS package's package.xml cannot read it and must agree with it,
and ros_node/setup.py takes package.xml's."""

from __future__ import annotations

import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import setuptools

import mbsfmu

ROOT = Path(__file__).resolve().parent.parent


def pyproject_version() -> str:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib.loads(text)["project"]["version"]
    return re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)


def test_package_version_is_pyprojects():
    assert mbsfmu.__version__ == pyproject_version()
    assert not re.search(r"^__version__\s*=", (ROOT / "mbsfmu" / "__init__.py").read_text(), re.M)


def test_ros_package_xml_agrees_with_pyproject():
    assert ET.parse(ROOT / "ros_node" / "package.xml").getroot().findtext("version").strip() == pyproject_version()


def test_ros_setup_py_takes_package_xml_version(monkeypatch):
    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    path = ROOT / "ros_node" / "setup.py"
    exec(compile(path.read_text(), str(path), "exec"), {"__file__": str(path), "__name__": "__main__"})
    assert captured["version"] == pyproject_version()
