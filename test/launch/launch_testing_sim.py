"""launch_testing of sim.launch.py, run by test_launch.py with ``launch_test`` (not collected by pytest).

launch_testing's own pytest plugin does not load under pytest 9 (
docs/known-issues.md#launch-testing-pytest), so its runner runs this file:
the three nodes come up (each says what it serves and answers a parameter request, so it is
spinning), and after launch shuts them down (SIGINT, as Ctrl-C does) every process has exited
with status 0, without a traceback. Arguments: ``db_uri:=embedded:DIR`` and ``console_port:=PORT`` (launch_test
passes them on; a port of the test's own, not the default a second run on the machine may hold).
"""
import os
import unittest

import launch_testing
import launch_testing.asserts
import rclpy
import rclpy.executors
from launch import LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from rcl_interfaces.srv import GetParameters

LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "launch", "sim.launch.py")
UP_S = 90.0
NAMESPACE = "launch_testing_spot"
NODES = ("dsg_mirror", "language_server", "dispatcher")


def generate_test_description():
    return LaunchDescription([
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(LAUNCH),
            launch_arguments={
                "robot_name": NAMESPACE,
                "db_uri": LaunchConfiguration("db_uri"),
                "console_port": LaunchConfiguration("console_port"),
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

    def test_each_node_answers_a_request(self):
        context = rclpy.Context()
        rclpy.init(context=context)
        try:
            probe = rclpy.create_node("launch_testing_probe", context=context)
            for name in NODES:
                client = probe.create_client(GetParameters, f"/{NAMESPACE}/{name}/get_parameters")
                self.assertTrue(client.wait_for_service(timeout_sec=UP_S), name)
                future = client.call_async(GetParameters.Request(names=["db_uri"]))
                executor = rclpy.executors.SingleThreadedExecutor(context=context)
                executor.add_node(probe)
                executor.spin_until_future_complete(future, timeout_sec=30.0)
                executor.remove_node(probe)
                self.assertTrue(future.done(), f"{name} did not answer")
                self.assertTrue(future.result().values[0].string_value.startswith("embedded:"), name)
            probe.destroy_node()
        finally:
            rclpy.shutdown(context=context)


@launch_testing.post_shutdown_test()
class EveryNodeExitsCleanly(unittest.TestCase):
    def test_every_process_exited_with_status_0(self, proc_info):
        launch_testing.asserts.assertExitCodes(proc_info)

    def test_no_node_ended_with_a_traceback(self, proc_output):
        for output in proc_output:
            self.assertNotIn("Traceback", output.text.decode(errors="replace"), output.process_name)
