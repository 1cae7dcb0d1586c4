"""The spot_ros2 adapter without the Spot packages: lazy imports, odometry, Trigger calls over real DDS."""
from __future__ import annotations

import contextlib
import importlib.util
import math
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import rclpy
from bosdyn.api.spot import robot_command_pb2 as spot_command_pb2
from geometry_msgs.msg import TransformStamped
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future
from std_srvs.srv import Trigger
from support.ros import ros_session, spinning, wait_for_subscribers, wait_until
from support.spot_driver import (
    ORIGIN,
    FakeSpotDriver,
    TopicMapFrame,
    Walk,
    proto_to_ros,
    trajectory_points,
    transform_msg,
)

from heracles_ros.errors import ConfigError, DriverError
from heracles_ros.execution import spot_commands as sc
from heracles_ros.execution.driver import CancelToken, Outcome, Pose
from heracles_ros.execution.spot_ros2 import (
    PoseTracker,
    SpotConfig,
    SpotRos2Driver,
    TriggerServices,
    robot_namespace,
    wait_future,
)
from heracles_ros.plan_types import PlanAction


def test_the_module_imports_without_loading_ros():
    code = (
        "import sys, heracles_ros.execution.spot_ros2\n"
        "loaded = [m for m in ('rclpy', 'spot_msgs', 'bosdyn_msgs', 'nav_msgs') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_without_spot_msgs_the_driver_says_what_is_missing_and_how_to_get_it(ros_domain_id, monkeypatch):
    # The test-only spot_msgs is built here: hide it, as on a machine without spot_ros2.
    monkeypatch.setitem(sys.modules, "spot_msgs", None)
    monkeypatch.setitem(sys.modules, "spot_msgs.action", None)
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


@pytest.mark.skipif(importlib.util.find_spec("tf2_ros") is not None, reason="tf2_ros is installed here")
def test_without_tf2_ros_the_tf_map_frame_says_what_is_missing(ros_domain_id):
    with ros_session(ros_domain_id):
        node = rclpy.create_node("spot_adapter_probe")
        try:
            with pytest.raises(DriverError, match=r"tf2_ros is missing.*spot_map_frame_source:=fixed"):
                SpotRos2Driver(node, spot_name="spot", convert=proto_to_ros)
            fixed = SpotRos2Driver(node, spot_name="spot", convert=proto_to_ros,
                                   config=SpotConfig(map_frame_source="fixed", map_to_frame=MAP_TO_ODOM))
            assert fixed.map_frame.current() == MAP_TO_ODOM
        finally:
            node.destroy_node()


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
def test_pose_tracker_keeps_odometry_in_the_command_frame():
    tracker = PoseTracker("odom")
    assert tracker.latest() is None
    tracker.update("spot/odom", 4.0, -2.0, 0.1, 0.5)
    pose = tracker.latest()
    assert pose is not None
    assert (pose.x, pose.y, pose.z, pose.yaw) == pytest.approx((4.0, -2.0, 0.1, 0.5))
    assert tracker.count == 1


def test_pose_tracker_refuses_odometry_in_another_frame():
    tracker = PoseTracker("odom")
    tracker.update("spot/vision", 1.0, 2.0, 0.0, 0.0)
    assert tracker.latest() is None
    assert "preferred_odom_frame" in tracker.frame_error
    assert "'spot/vision'" in tracker.frame_error


def test_pose_tracker_waits_for_a_fresh_message():
    tracker = PoseTracker("vision")
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


# --- the adapter's action loops against a driver over real DDS ----------------------------------
#: Hydra's map sits 10 m east, 5 m north and a quarter turn from Spot's odom frame...
MAP_TO_ODOM = sc.SE2Transform(x=10.0, y=5.0, yaw=math.pi / 2)
#: ...until a loop closure moves it.
CORRECTED = sc.SE2Transform(x=10.4, y=4.7, yaw=math.pi / 2 + 0.05)
TRANSFORM_TOPIC = "/test/map_to_odom"


def goto(symbols: list[str], points: list[tuple[float, float]]) -> PlanAction:
    waypoints = tuple((x, y, 0.0) for x, y in points)
    return PlanAction("goto", (symbols[0], symbols[-1]), symbols[-1], waypoints[-1], waypoints, tuple(symbols))


class Rig:
    """The fake spot_ros2 driver, a publisher of map->odom, and the real adapter, all spinning."""

    def __init__(self, fake: FakeSpotDriver, adapter: Any, hydra: Any, driver: SpotRos2Driver):
        self.fake, self.adapter, self.hydra, self.driver = fake, adapter, hydra, driver
        self._tf = hydra.create_publisher(TransformStamped, TRANSFORM_TOPIC, 10)

    def publish_map_to_odom(self, transform: sc.SE2Transform, *, age_s: float = 0.0) -> None:
        wait_for_subscribers(self._tf)
        self._tf.publish(transform_msg(self.hydra, transform, age_s=age_s))
        wait_until(lambda: self._received(transform), 5.0, f"map->odom {transform}")

    def _received(self, transform: sc.SE2Transform) -> bool:
        latest = self.driver.map_frame._latest  # type: ignore[attr-defined]
        return latest is not None and latest.transform.translation.x == pytest.approx(transform.x)

    def execute(self, action: PlanAction, timeout_s: float = 10.0, cancel: CancelToken | None = None):
        return self.driver.execute(action, cancel=cancel or CancelToken(), timeout_s=timeout_s)


@contextlib.contextmanager
def rig(ros_domain_id: int, *, max_age_s: float = 5.0, start: Pose = ORIGIN, actions: bool = True,
        **config: Any) -> Iterator[Rig]:
    settings = {"service_timeout_s": 3.0, "accept_timeout_s": 3.0, "pose_timeout_s": 3.0, "tick_s": 0.02,
                "walk_margin_s": 5.0, "expected_speed_mps": 2.0, **config}
    with ros_session(ros_domain_id):
        fake = FakeSpotDriver("spot", start=start, actions=actions)
        adapter = rclpy.create_node("heracles_adapter")
        hydra = rclpy.create_node("hydra_backend")
        source = TopicMapFrame(adapter, TRANSFORM_TOPIC, max_age_s=max_age_s)
        driver = SpotRos2Driver(adapter, spot_name="spot", config=SpotConfig(**settings), map_frame=source,
                                convert=proto_to_ros)
        with spinning(fake, adapter, hydra, num_threads=6):
            yield Rig(fake, adapter, hydra, driver)


def started(r: Rig) -> Rig:
    r.publish_map_to_odom(MAP_TO_ODOM)
    r.driver.start()
    return r


def test_each_goto_is_one_trajectory_goal_with_every_waypoint_in_the_odom_frame_of_the_latest_transform(
    ros_domain_id,
):
    with rig(ros_domain_id, max_speed_mps=0.8) as r:
        started(r)
        assert r.fake.calls == ["claim", "power_on", "stand"]
        path = [(10.0, 5.0), (10.0, 7.0), (12.0, 7.0), (12.0, 9.0)]  # starts where the robot stands
        outcome = r.execute(goto(["p1", "p2", "p3", "p4"], path))
        assert outcome.ok, outcome.reason
        assert outcome.reached_symbol == "p4"
        assert len(r.fake.commands) == 1  # one motion: no goal per waypoint
        command = r.fake.commands[0]
        request = command.synchronized_command.mobility_command.se2_trajectory_request
        assert request.se2_frame_name == "odom"
        points = trajectory_points(command)
        expected = [c for x, y in path[1:] for c in MAP_TO_ODOM.to_frame((x, y, 0.0))[:2]]
        assert [c for p in points for c in p[:2]] == pytest.approx(expected)
        times = [p[3] for p in points]
        assert times == sorted(times) and times[0] > 0
        params = spot_command_pb2.MobilityParams()
        assert command.synchronized_command.mobility_command.params.Unpack(params)
        assert params.vel_limit.max_vel.linear.x == pytest.approx(0.8)
        assert params.vel_limit.min_vel.linear.x == pytest.approx(-0.8)
        assert (outcome.pose.x, outcome.pose.y) == pytest.approx((12.0, 9.0), abs=1e-6)

        # A loop closure moves map->odom: the next walk's goal follows it.
        r.publish_map_to_odom(CORRECTED)
        outcome = r.execute(goto(["p4", "p5", "p6"], [(12.0, 9.0), (14.0, 9.0), (14.0, 11.0)]))
        assert len(r.fake.commands) == 2
        points = trajectory_points(r.fake.commands[1])
        expected = [c for x, y in [(14.0, 9.0), (14.0, 11.0)] for c in CORRECTED.to_frame((x, y, 0.0))[:2]]
        assert [c for p in points for c in p[:2]] == pytest.approx(expected)
        assert outcome.ok, outcome.reason
        assert (outcome.pose.x, outcome.pose.y) == pytest.approx((14.0, 11.0), abs=1e-6)


def test_a_missing_or_stale_map_to_odom_fails_the_step_and_sends_nothing(ros_domain_id):
    with rig(ros_domain_id, max_age_s=2.0) as r:
        r.driver.start()  # odometry is there; map->odom is not
        # Never a transform: no map pose to report at all, so the driver itself cannot work.
        with pytest.raises(DriverError, match=r"no map->odom transform received"):
            r.execute(goto(["p1", "p2"], [(0.0, 0.0), (3.0, 0.0)]))
        r.publish_map_to_odom(MAP_TO_ODOM)
        known = r.driver.pose()
        r.publish_map_to_odom(CORRECTED, age_s=30.0)  # Hydra's backend stopped publishing long ago
        outcome = r.execute(goto(["p1", "p2"], [(10.0, 5.0), (13.0, 5.0)]))
        assert outcome.outcome is Outcome.FAILED
        assert "walk to p2: the map->odom transform is stale" in outcome.reason
        assert "(limit 2 s)" in outcome.reason
        assert outcome.pose == known  # the last pose known in the map frame
        assert r.fake.commands == []


def test_a_walk_reported_done_short_of_its_goal_fails_the_arrival_check(ros_domain_id):
    with rig(ros_domain_id) as r:
        started(r)
        r.fake.walks.append(Walk.SHORT)
        outcome = r.execute(goto(["p1", "p2", "p3"], [(10.0, 5.0), (10.0, 8.0), (10.0, 12.0)]))
        assert outcome.outcome is Outcome.FAILED
        assert "walk to p3 reported done, but robot is 2.00 m from the goal" in outcome.reason
        assert outcome.reached_symbol == "p2"  # passed on the way
        assert outcome.pose.y == pytest.approx(10.0, abs=1e-6)


def test_an_aborted_walk_fails_with_the_drivers_message(ros_domain_id):
    with rig(ros_domain_id) as r:
        started(r)
        r.fake.walks.append(Walk.ABORT)
        outcome = r.execute(goto(["p1", "p2"], [(10.0, 5.0), (10.0, 8.0)]))
        assert outcome.outcome is Outcome.FAILED
        assert outcome.reason == "walk to p2 failed: robot fell over"


def test_cancel_stops_the_robot(ros_domain_id):
    with rig(ros_domain_id) as r:
        started(r)
        r.fake.walks.append(Walk.HANG)
        cancel = CancelToken()
        threading.Timer(0.5, cancel.cancel, args=("operator stop",)).start()
        outcome = r.execute(goto(["p1", "p2"], [(10.0, 5.0), (10.0, 8.0)]), cancel=cancel)
        assert outcome.outcome is Outcome.CANCELLED and outcome.reason == "operator stop"
        assert r.fake.called("stop") == 1
        wait_until(lambda: r.fake.cancelled == 1, 5.0, "the driver to see the goal cancelled")


def test_a_step_timeout_and_a_walk_over_its_budget_stop_the_robot(ros_domain_id):
    with rig(ros_domain_id, walk_margin_s=0.5) as r:
        started(r)
        r.fake.walks.extend([Walk.HANG, Walk.HANG])
        outcome = r.execute(goto(["p1", "p2"], [(10.0, 5.0), (10.0, 8.0)]), timeout_s=0.8)
        assert outcome.outcome is Outcome.TIMEOUT
        assert r.fake.called("stop") == 1
        # 3 m at 2 m/s plus a 0.5 s margin: the walk's own budget runs out long before the step's limit.
        started_at = time.monotonic()
        outcome = r.execute(goto(["p1", "p2"], [(10.0, 5.0), (10.0, 8.0)]), timeout_s=30.0)
        assert outcome.outcome is Outcome.FAILED
        assert "walk to p2 did not finish within 2.0 s (blocked?)" in outcome.reason
        assert time.monotonic() - started_at < 10.0
        assert r.fake.called("stop") == 2
        wait_until(lambda: r.fake.cancelled == 2, 5.0, "both goals cancelled at the driver")


def test_a_driver_without_its_action_server_fails_the_step(ros_domain_id):
    with rig(ros_domain_id, accept_timeout_s=0.5, actions=False) as r:
        started(r)
        started_at = time.monotonic()
        outcome = r.execute(goto(["p1", "p2"], [(10.0, 5.0), (10.0, 8.0)]))
        assert outcome.outcome is Outcome.FAILED
        assert outcome.reason == "walk to p2: action server not available within 0.5 s"
        assert time.monotonic() - started_at < 5.0


def test_a_driver_that_never_answers_a_goal_fails_the_step_and_stops_the_robot(ros_domain_id):
    with rig(ros_domain_id, accept_timeout_s=0.5) as r:
        started(r)
        r.fake.answering.clear()
        r.fake.walks.append(Walk.HANG)
        outcome = r.execute(goto(["p1", "p2"], [(10.0, 5.0), (10.0, 8.0)]))
        assert outcome.outcome is Outcome.FAILED
        assert outcome.reason == "walk to p2: goal not accepted within 0.5 s"
        assert r.fake.called("stop") == 1
        # Accepted after all, later: the adapter cancels it at once.
        r.fake.answering.set()
        wait_until(lambda: r.fake.cancelled == 1, 10.0, "the late goal cancelled at the driver")


def test_a_failed_start_releases_the_lease_it_claimed_and_only_that(ros_domain_id):
    with rig(ros_domain_id) as r:
        r.fake.failing["stand"] = "motor fault"
        with pytest.raises(DriverError, match="stand failed: motor fault"):
            r.driver.start()
        assert r.fake.calls == ["claim", "power_on", "stand", "release"]
        assert not r.driver.claimed

        del r.fake.failing["stand"]
        r.fake.failing["claim"] = "lease held by the tablet"
        r.fake.calls.clear()
        with pytest.raises(DriverError, match="claim failed: lease held by the tablet"):
            r.driver.start()
        assert r.fake.calls == ["claim"]  # someone else's lease is never released

        del r.fake.failing["claim"]
        r.fake.calls.clear()
        r.driver.start()
        r.driver.shutdown()
        assert r.fake.calls == ["claim", "power_on", "stand", "stop", "sit", "release"]


def test_the_real_pose_is_known_before_the_robot_is_claimed(ros_domain_id):
    with rig(ros_domain_id, start=Pose(2.0, 1.0)) as r:
        r.publish_map_to_odom(MAP_TO_ODOM)
        pose = r.driver.wait_pose(5.0)
        assert pose is not None
        assert (pose.x, pose.y, pose.yaw) == pytest.approx((9.0, 7.0, math.pi / 2), abs=1e-3)
        assert r.fake.calls == []


def test_grasp_gaze_and_place_run_through_the_drivers_actions_and_services(ros_domain_id):
    with rig(ros_domain_id, inspect_dwell_s=0.0, release_pause_s=0.0) as r:
        started(r)
        cup = (10.0, 5.8, 0.5)  # 0.8 m ahead of the robot, which faces +y in the map
        pick = r.execute(PlanAction("pick", ("o1", "p1"), "o1", cup))
        assert pick.ok, pick.reason
        assert r.driver.holding == "o1"
        ray = r.fake.manipulations[0].pick_object_ray_in_world
        assert ray.frame_name == "odom"
        start = MAP_TO_ODOM.to_map((ray.ray_start_rt_frame.x, ray.ray_start_rt_frame.y, ray.ray_start_rt_frame.z))
        assert start[:2] == pytest.approx((10.0, 5.3))

        look = r.execute(PlanAction("inspect", ("o1",), "o1", cup))
        assert look.ok, look.reason
        assert r.fake.commands[-1].synchronized_command.arm_command.arm_gaze_command.frame1_name == "odom"

        place = r.execute(PlanAction("place", ("o1", "p1"), "o1", cup))
        assert place.ok, place.reason
        assert r.fake.commands[-1].synchronized_command.arm_command.arm_cartesian_command.root_frame_name == "odom"
        assert r.fake.calls[-4:] == ["arm_carry", "open_gripper", "arm_stow", "close_gripper"]
        assert r.driver.holding == ""
