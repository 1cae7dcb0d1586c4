"""pip install of the heracles_ros Python library (no ROS needed).

On the robot the package is built with colcon (CMakeLists.txt), which also
generates the msg/srv Python modules; pip installs the same library for use
without ROS, and the rclpy nodes once the ROS wheels are present.
"""
from pathlib import Path

from setuptools import find_packages, setup

HERE = Path(__file__).parent


def requirements(name: str) -> list[str]:
    """The requirement lines of ``name`` (comments dropped)."""
    lines = (line.split("#", 1)[0].strip() for line in (HERE / name).read_text().splitlines())
    return [line for line in lines if line]


setup(
    name="heracles_ros",
    version="0.1.0",
    description="Plain-language questions and commands for a Spot robot over its live Hydra scene graph",
    packages=find_packages(include=["heracles_ros", "heracles_ros.*"]),
    package_data={"heracles_ros": ["data/*", "data/**/*"]},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=requirements("requirements.txt"),  # the robot's install: the nodes and the CLI
    extras_require={"tools": requirements("requirements-tools.txt")},  # bench, eval, the demo's plots
    entry_points={
        "console_scripts": [
            "heracles = heracles_ros.cli:main",
            "dsg_mirror = heracles_ros.nodes.dsg_mirror:main",
            "language_server = heracles_ros.nodes.language_server:main",
            "dispatcher = heracles_ros.nodes.dispatcher:main",
            "console = heracles_ros.cli.console:main",
        ]
    },
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/heracles_ros"]),
        ("share/heracles_ros", ["package.xml"]),
    ],
)
