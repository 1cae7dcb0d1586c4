"""The adapter's links to spot_ros2: its namespace, Trigger calls over real DDS, waiting on futures, all bounded."""
from __future__ import annotations

import threading
import time

import pytest
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future
from std_srvs.srv import Trigger
from support.ros import ros_session, spinning

from heracles_ros.errors import ConfigError
from heracles_ros.execution.driver import CancelToken
from heracles_ros.execution.spot_links import TriggerServices, robot_namespace, wait_future


@pytest.mark.parametrize(
    ("spot_name", "namespace"), [("spot", "/spot"), ("/spot/", "/spot"), ("", ""), ("robots/spot_1", "/robots/spot_1")]
)
def test_robot_namespace(spot_name, namespace):
    assert robot_namespace(spot_name) == namespace


@pytest.mark.parametrize("spot_name", ["my spot", "spot-1", "1spot", "a//b", "spot\n", "robots/spot\n"])
def test_a_malformed_spot_name_is_refused(spot_name):
    with pytest.raises(ConfigError, match="spot_name"):
        robot_namespace(spot_name)


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
