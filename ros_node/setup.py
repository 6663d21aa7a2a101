"""ament_python build of the ROS 2 package ``mbsfmu_ros`` (colcon): this folder (``ros_node/``) is
the ROS package, ``mbsfmu_ros/`` in it the Python package (the layout of ros2/demos' Python
packages); ``ros2 run mbsfmu_ros mbs_node MODEL.yaml`` and ``ros2 launch mbsfmu_ros
mbsfmu.launch.py model:=MODEL.yaml`` then work. The engine itself (``mbsfmu``) comes from the
repository's pyproject.toml: ``pip install REPO`` into the Python of the ROS 2 installation
(package.xml declares it as ``python3-mbsfmu-pip``). Not used by ``pip install REPO`` (that
installs ``mbsfmu_ros`` from pyproject.toml, with ``mbsfmu``).

The version is package.xml's (this folder may be copied into a colcon workspace without the
repository's pyproject.toml); tests/test_version.py checks package.xml against pyproject.toml."""

import os
import xml.etree.ElementTree as ET
from glob import glob

from setuptools import setup

PACKAGE = "mbsfmu_ros"
HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = ET.parse(os.path.join(HERE, "package.xml")).getroot().findtext("version").strip()

setup(
    name=PACKAGE,
    version=VERSION,
    packages=[PACKAGE],
    package_data={PACKAGE: ["definitions/*/*", "definitions/*/*/*"]},  # vendored interface definitions
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="mbsfmu developers",
    description="ROS 2 node of the mbsfmu rigid multibody engine",
    license="MIT",
    tests_require=["pytest"],
    entry_points={"console_scripts": ["mbs_node = mbsfmu_ros.node:main"]},
)
