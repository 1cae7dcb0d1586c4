"""The spot_ros2 adapter without the Spot packages: lazy imports, odometry, Trigger calls over real DDS."""
from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
import threading
import time

import pytest
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future
from std_srvs.srv import Trigger
from support.ros import ros_session, spinning

from heracles_ros.errors import ConfigError, DriverError
from heracles_ros.execution import spot_commands as sc
from heracles_ros.execution.driver import CancelToken
from heracles_ros.execution.spot_ros2 import (
    PoseTracker,
    SpotConfig,
    SpotRos2Driver,
    TriggerServices,
    robot_namespace,
    wait_future,
)


def test_the_module_imports_without_loading_ros():
    code = (
        "import sys, heracles_ros.execution.spot_ros2\n"
        "loaded = [m for m in ('rclpy', 'spot_msgs', 'bosdyn_msgs', 'nav_msgs') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


@pytest.mark.skipif(importlib.util.find_spec("spot_msgs") is not None, reason="spot_msgs is installed here")
def test_without_spot_msgs_the_driver_says_what_is_missing_and_how_to_get_it(ros_domain_id):
    with ros_session(ros_domain_id):
        node = rclpy.create_node("spot_adapter_probe")
        try:
            with pytest.raises(DriverError) as raised:
                SpotRos2Driver(node, spot_name="spot")
        finally:
            node.destroy_node()
    message = str(raised.value)
    assert "spot_msgs" in message
    assert "bosdyn_msgs" in message
    assert "build bdaiinstitute/spot_ros2 in your ROS 2 workspace" in message


def test_the_driver_needs_a_node():
    with pytest.raises(ConfigError, match="node"):
        SpotRos2Driver(None)


@pytest.mark.parametrize(
    ("spot_name", "namespace"), [("spot", "/spot"), ("/spot/", "/spot"), ("", ""), ("robots/spot_1", "/robots/spot_1")]
)
def test_robot_namespace(spot_name, namespace):
    assert robot_namespace(spot_name) == namespace


@pytest.mark.parametrize("spot_name", ["my spot", "spot-1", "1spot", "a//b"])
def test_a_malformed_spot_name_is_refused(spot_name):
    with pytest.raises(ConfigError, match="spot_name"):
        robot_namespace(spot_name)


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"frame": "map"}, "odom, vision"),
        ({"service_timeout_s": 0.0}, "service_timeout_s"),
        ({"arrival_tolerance_m": -1.0}, "arrival_tolerance_m"),
        ({"pick_timeout_s": "long"}, "pick_timeout_s"),
        ({"min_reach_m": 1.5, "max_reach_m": 1.0}, "min_reach_m"),
    ],
)
def test_bad_config_is_refused_naming_the_setting(changes, named):
    with pytest.raises(ConfigError, match=named):
        SpotConfig(**changes)


# --- odometry ------------------------------------------------------------------------------
def test_pose_tracker_turns_odometry_into_map_poses():
    tracker = PoseTracker("odom", sc.SE2Transform(x=10.0, y=5.0, yaw=math.pi / 2))
    assert tracker.latest() is None
    tracker.update("spot/odom", 4.0, -2.0, 0.1, 0.0)
    pose = tracker.latest()
    assert pose is not None
    assert (pose.x, pose.y, pose.yaw) == pytest.approx((12.0, 9.0, math.pi / 2))
    assert tracker.count == 1


def test_pose_tracker_refuses_odometry_in_another_frame():
    tracker = PoseTracker("odom", sc.IDENTITY)
    tracker.update("spot/vision", 1.0, 2.0, 0.0, 0.0)
    assert tracker.latest() is None
    assert "preferred_odom_frame" in tracker.frame_error
    assert "'spot/vision'" in tracker.frame_error


def test_pose_tracker_waits_for_a_fresh_message():
    tracker = PoseTracker("vision", sc.IDENTITY)
    tracker.update("vision", 0.0, 0.0, 0.0, 0.0)
    seen = tracker.count
    started = time.monotonic()
    assert tracker.wait_newer(seen, 0.1) is None
    assert time.monotonic() - started >= 0.09
    timer = threading.Timer(0.05, tracker.update, args=("vision", 3.0, 4.0, 0.0, 1.0))
    timer.start()
    pose = tracker.wait_newer(seen, 5.0)
    timer.join()
    assert pose is not None and (pose.x, pose.y, pose.yaw) == pytest.approx((3.0, 4.0, 1.0))


# --- Trigger services over real DDS -----------------------------------------------------------
def _serve(node, name: str, success: bool, message: str, delay_s: float = 0.0):
    def handle(request, response):
        time.sleep(delay_s)
        response.success = success
        response.message = message
        return response

    return node.create_service(Trigger, name, handle, callback_group=ReentrantCallbackGroup())


def test_trigger_calls_report_replies_absence_slowness_and_cancel(ros_domain_id):
    with ros_session(ros_domain_id):
        server = rclpy.create_node("trigger_server")  # real Trigger services where the Spot driver would be
        adapter = rclpy.create_node("adapter")
        _serve(server, "/spot/claim", True, "claimed")
        _serve(server, "/spot/power_on", False, "estop engaged")
        _serve(server, "/spot/stand", True, "standing", delay_s=1.5)
        services = TriggerServices(adapter, "/spot", ["claim", "power_on", "stand", "sit"])
        assert services.name_of("claim") == "/spot/claim"
        with spinning(server, adapter):
            claim = services.call("claim", 5.0)
            assert claim.ok and claim.message == "claimed"

            power = services.call("power_on", 5.0)
            assert not power.ok and power.message == "estop engaged"

            started = time.monotonic()
            sit = services.call("sit", 0.3)
            assert not sit.ok and "/spot/sit is not available" in sit.message
            assert time.monotonic() - started < 2.0

            slow = services.call("stand", 0.3)
            assert not slow.ok and "did not answer within 0.3 s" in slow.message

            cancel = CancelToken()
            threading.Timer(0.1, cancel.cancel, args=("operator stop",)).start()
            started = time.monotonic()
            cancelled = services.call("stand", 10.0, cancel)
            assert not cancelled.ok and "operator stop" in cancelled.message
            assert time.monotonic() - started < 1.4  # long before the 1.5 s reply


def test_wait_future_sees_completion_timeout_and_cancel():
    future = Future()
    threading.Timer(0.05, future.set_result, args=(7,)).start()
    assert wait_future(future, 5.0)
    assert future.result() == 7

    pending = Future()
    started = time.monotonic()
    assert not wait_future(pending, 0.1)
    assert time.monotonic() - started >= 0.09

    cancel = CancelToken()
    cancel.cancel("stop")
    started = time.monotonic()
    assert not wait_future(Future(), 10.0, cancel)
    assert time.monotonic() - started < 0.5
