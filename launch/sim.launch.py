"""The whole system without a robot or Hydra: the simulated Spot on the bundled example scene, with RViz.

    ros2 launch heracles_ros sim.launch.py
    ros2 action send_goal --feedback /spot/execute_command heracles_ros/action/ExecuteCommand \
        "{instruction: 'bring a box from the office to the lounge', execute: true}"

(the `ros2` lines of the README and docs/, run by test/test_readme_ros2.py, show the rest).

It is heracles.launch.py (beside this file) with driver:=sim and scene_file:= the
example scene shipped in the Python package (heracles_ros/data/example_scene.json)
and sim_world:= the ``world`` argument (a simulated Hydra's world: the map and objects
not yet seen, published on dsg_topic as the robot walks; '' = none); every other
argument passes through. Without rviz2 installed, RViz is skipped
with a warning.
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration

import heracles_ros


def generate_launch_description():
    example = os.path.join(os.path.dirname(heracles_ros.__file__), "data", "example_scene.json")
    return LaunchDescription([
        DeclareLaunchArgument(
            "scene_file", default_value=example,
            description="spark_dsg file to mirror at start (default: the bundled example scene)"),
        DeclareLaunchArgument(
            "world", default_value="",
            description="scene file of a simulated Hydra's world, scene_file plus objects the map lacks: the "
            "dispatcher publishes what the simulated robot sees of it on dsg_topic, where the mirror listens "
            "('' = no simulated Hydra)"),
        DeclareLaunchArgument(
            "start_rviz", default_value="true", choices=["true", "false"],
            description="start RViz with the operator console"),
        DeclareLaunchArgument(
            "start_console", default_value="true", choices=["true", "false"],
            description="start the web console (open the address it prints)"),
        DeclareLaunchArgument(
            "console_port", default_value="8765", description="port of the web console"),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(
                os.path.join(os.path.dirname(os.path.abspath(__file__)), "heracles.launch.py")),
            launch_arguments={
                "driver": "sim",
                "scene_file": LaunchConfiguration("scene_file"),
                "sim_world": LaunchConfiguration("world"),
                "start_rviz": LaunchConfiguration("start_rviz"),
                "start_console": LaunchConfiguration("start_console"),
                "console_port": LaunchConfiguration("console_port"),
            }.items(),
        ),
    ])
