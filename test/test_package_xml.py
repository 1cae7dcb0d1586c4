"""package.xml declares every ROS package the code imports; Hydra-ROS and spot_ros2 only as optional."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from catkin_pkg.package import parse_package

# catkin_pkg's condition parser calls a pyparsing API that pyparsing now deprecates.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

ROOT = Path(__file__).resolve().parents[1]
OPTIONAL = {"hydra_msgs", "hydra_visualizer", "spot_msgs", "bosdyn_msgs"}
#: Imported modules that are ROS packages although no wheel here installs them.
NOT_INSTALLABLE_HERE = {"launch", "launch_ros", "tf2_ros", *OPTIONAL}


def _declared(env: dict[str, str]) -> set[str]:
    package = parse_package(str(ROOT / "package.xml"))
    package.evaluate_conditions(env)
    return {d.name for d in package.build_depends + package.exec_depends if d.evaluated_condition}


def _imported_ros_packages() -> set[str]:
    index = Path(sys.prefix) / "share" / "ament_index" / "resource_index" / "packages"
    ros_packages = {p.name for p in index.iterdir()} | NOT_INSTALLABLE_HERE
    found: set[str] = set()
    pattern = re.compile(r"""^\s*(?:from|import)\s+([a-z_0-9]+)|import_module\("([a-z_0-9]+)""", re.MULTILINE)
    for path in [*(ROOT / "heracles_ros").rglob("*.py"), *(ROOT / "launch").glob("*.py")]:
        for match in pattern.finditer(path.read_text()):
            name = match[1] or match[2]
            if name in ros_packages and name != "heracles_ros":
                found.add(name)
    return found


def test_every_imported_ros_package_is_declared():
    imported = _imported_ros_packages()
    assert {"rclpy", "rcl_interfaces", "ament_index_python", "tf2_ros"} <= imported
    assert imported - OPTIONAL <= _declared({})


def test_hydra_and_spot_ros2_packages_are_optional():
    assert not OPTIONAL & _declared({})
    assert _declared({"HERACLES_WITH_HYDRA": "1", "HERACLES_WITH_SPOT": "1"}) >= OPTIONAL
