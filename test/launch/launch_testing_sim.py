"""launch_testing of sim.launch.py, run by test_launch.py with ``launch_test`` (not collected by pytest).

launch_testing's own pytest plugin does not load under pytest 9, so its runner runs this file:
the three nodes come up (each says what it serves), and after launch shuts them down (SIGINT, as
Ctrl-C does) every process has exited with status 0, without a traceback.
Arguments: ``robot_name:=NS db_uri:=embedded:DIR`` (launch_test passes them to the launch).
"""
import os
import unittest

import launch_testing
import launch_testing.asserts
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration

LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch", "sim.launch.py")
UP_S = 90.0


def generate_test_description():
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(LAUNCH),
            launch_arguments={
                "robot_name": LaunchConfiguration("robot_name"),
                "db_uri": LaunchConfiguration("db_uri"),
                "start_rviz": "false",
                "llm": "ollama",
                "base_url": "http://127.0.0.1:9",
            }.items(),
        ),
        launch_testing.actions.ReadyToTest(),
    ])


class TheNodesComeUp(unittest.TestCase):
    def test_each_node_reports_what_it_serves(self, proc_output):
        proc_output.assertWaitFor("mirrored scene file", timeout=UP_S, stream="stderr")
        proc_output.assertWaitFor("dispatching with the sim driver", timeout=UP_S, stream="stderr")
        proc_output.assertWaitFor("answering with ollama", timeout=UP_S, stream="stderr")


@launch_testing.post_shutdown_test()
class EveryNodeExitsCleanly(unittest.TestCase):
    def test_every_process_exited_with_status_0(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)

    def test_no_node_ended_with_a_traceback(self, proc_output):
        for output in proc_output:
            self.assertNotIn("Traceback", output.text.decode(errors="replace"), output.process_name)
