"""Spot commands for plan actions, checked on the real bosdyn protos from PyPI."""
from __future__ import annotations

import dataclasses
import math

import pytest
from bosdyn.api import manipulation_api_pb2, robot_command_pb2
from bosdyn.api.spot import robot_command_pb2 as spot_command_pb2
from bosdyn.client.math_helpers import Quat, SE2Pose
from bosdyn.util import duration_to_seconds
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from heracles_ros.errors import ConfigError, ExecutionError
from heracles_ros.execution import spot_commands as sc
from heracles_ros.execution.driver import Pose
from heracles_ros.execution.spot_frames import yaw_from_quaternion
from heracles_ros.plan_types import PlanAction

#: The scene graph's map sits 10 m east, 5 m north and a quarter turn from Spot's odom frame.
MAP_TO_ODOM = sc.SE2Transform(x=10.0, y=5.0, yaw=math.pi / 2, z=0.3)


def se2_request(command: robot_command_pb2.RobotCommand):
    return command.synchronized_command.mobility_command.se2_trajectory_request


def mobility_params(command: robot_command_pb2.RobotCommand) -> spot_command_pb2.MobilityParams:
    params = spot_command_pb2.MobilityParams()
    assert command.synchronized_command.mobility_command.params.Unpack(params)
    return params


# --- frames ---------------------------------------------------------------------------------
def test_map_points_go_into_the_command_frame_as_bosdyn_computes_it():
    point = (12.0, 9.0, 1.0)
    x, y, z = MAP_TO_ODOM.to_frame(point)
    expected = SE2Pose(MAP_TO_ODOM.x, MAP_TO_ODOM.y, MAP_TO_ODOM.yaw).inverse() * SE2Pose(point[0], point[1], 0.0)
    assert (x, y) == pytest.approx((expected.x, expected.y))
    assert (x, y) == pytest.approx((4.0, -2.0))
    assert z == pytest.approx(0.7)
    assert MAP_TO_ODOM.to_map((x, y, z)) == pytest.approx(point)


transforms = st.builds(
    sc.SE2Transform, st.floats(-1e3, 1e3), st.floats(-1e3, 1e3), st.floats(-math.pi, math.pi), st.floats(-5.0, 5.0)
)


@settings(deadline=None)
@given(transform=transforms, target=st.tuples(st.floats(-1e3, 1e3), st.floats(-1e3, 1e3)))
def test_a_walk_goal_put_back_by_bosdyns_own_arithmetic_is_the_map_target(transform, target):
    # bosdyn's SE2Pose (its own implementation) takes each goal point from the command frame into the map.
    here = Pose(target[0] + 2.0, target[1] - 1.0)
    path, _ = sc.walk_path(here, goto([(target[0], target[1], 0.0)], ["P1"]), skip_within_m=0.0, speed_mps=1.0)
    command = sc.trajectory_command(path, frame="odom", map_to_frame=transform, max_speed_mps=0.0)
    (point,) = se2_request(command).trajectory.points
    in_map = SE2Pose(transform.x, transform.y, transform.yaw) * SE2Pose(
        point.pose.position.x, point.pose.position.y, point.pose.angle
    )
    assert (in_map.x, in_map.y) == pytest.approx(target, abs=1e-6)
    assert math.remainder(in_map.angle - path[0].heading, 2 * math.pi) == pytest.approx(0.0, abs=1e-9)
    odom = transform.to_frame((target[0], target[1], 0.0))
    assert transform.pose_to_map(odom[0], odom[1], 0.0, 0.3).position[:2] == pytest.approx(target, abs=1e-6)


def test_odometry_poses_come_back_into_the_map_frame():
    pose = MAP_TO_ODOM.pose_to_map(4.0, -2.0, 0.2, 0.0)
    assert (pose.x, pose.y, pose.z) == pytest.approx((12.0, 9.0, 0.5))
    assert pose.yaw == pytest.approx(math.pi / 2)


@pytest.mark.parametrize("values", [[1.0, 2.0], [1, 2, 3, 4, 5], [1.0, True, 0.0], [0.0, math.nan, 0.0], ["1", 0, 0]])
def test_a_malformed_transform_is_refused(values):
    with pytest.raises(ConfigError, match="map_to_frame"):
        sc.SE2Transform.from_values(values)


def test_yaw_of_a_quaternion_matches_bosdyn():
    for yaw in (0.0, 0.7, -2.5, math.pi - 0.01):
        q = Quat.from_yaw(yaw)
        assert yaw_from_quaternion(q.x, q.y, q.z, q.w) == pytest.approx(yaw)


@settings(deadline=None)
@given(
    yaw=st.floats(-3.1, 3.1), pitch=st.floats(-1.4, 1.4), roll=st.floats(-3.1, 3.1),
)
def test_the_heading_of_a_tilted_body_is_where_its_forward_axis_points_on_the_ground(yaw, pitch, roll):
    """A body on a slope: its heading is the direction of its x axis seen from above (bosdyn rotates the
    axis). bosdyn's own Quat.to_yaw is the twist about z instead: the two agree for a level body and
    differ by under 0.3 degrees for tilts under 5 degrees."""
    q = Quat.from_yaw(yaw) * Quat.from_pitch(pitch) * Quat.from_roll(roll)
    forward = q.transform_point(1.0, 0.0, 0.0)
    assert yaw_from_quaternion(q.x, q.y, q.z, q.w) == pytest.approx(math.atan2(forward[1], forward[0]), abs=1e-6)


@pytest.mark.parametrize(("values", "expected"), [
    ([1, 2, 0.5], sc.SE2Transform(1.0, 2.0, 0.5, 0.0)),
    ([1.0, -2.0, 0.5, 0.3], sc.SE2Transform(1.0, -2.0, 0.5, 0.3)),
])
def test_a_transform_of_three_or_four_numbers_is_taken(values, expected):
    assert sc.SE2Transform.from_values(values) == expected


# --- walking -----------------------------------------------------------------------------------
def goto(points, symbols) -> PlanAction:
    return PlanAction("goto", (symbols[0], symbols[-1]), symbols[-1], points[-1], tuple(points), tuple(symbols))


def test_walk_path_skips_the_place_the_robot_stands_on_and_faces_along_each_segment():
    action = goto([(0.0, 0.0, 0.0), (4.0, 0.0, 0.0), (4.0, 3.0, 0.0)], ["P1", "P2", "P3"])
    path, here = sc.walk_path(Pose(0.1, 0.0, 0.0, 0.0), action, skip_within_m=0.5, speed_mps=0.5, yaw_rate=1.0)
    assert here == "P1"
    assert [p.symbol for p in path] == ["P2", "P3"]
    assert [p.heading for p in path] == pytest.approx([0.0, math.pi / 2])
    assert [p.distance for p in path] == pytest.approx([3.9, 6.9])
    # 3.9 m at 0.5 m/s, then a quarter turn at 1 rad/s and 3 m more.
    assert [p.time_s for p in path] == pytest.approx([7.8, 7.8 + math.pi / 2 + 6.0])


def test_walk_without_waypoints_goes_straight_to_the_target():
    action = PlanAction("goto", ("P1", "P9"), "P9", (0.0, -2.0, 0.0))
    path, here = sc.walk_path(Pose(0.0, 0.0, 0.0, -math.pi / 2), action, skip_within_m=0.5, speed_mps=1.0)
    assert here == ""
    assert len(path) == 1
    assert path[0].symbol == "P9"
    assert path[0].heading == pytest.approx(-math.pi / 2)
    assert path[0].time_s == pytest.approx(2.0)


def test_walk_to_where_the_robot_already_is_keeps_its_heading():
    action = goto([(1.0, 1.0, 0.0)], ["P4"])
    path, _ = sc.walk_path(Pose(1.0, 1.0, 0.0, 0.3), action, skip_within_m=0.5, speed_mps=1.0)
    assert len(path) == 1
    assert path[0].heading == pytest.approx(0.3)


@pytest.mark.parametrize(("speed", "yaw_rate"), [(0.0, 1.0), (-0.5, 1.0), (1.0, 0.0), (1.0, -1.0)])
def test_walk_path_refuses_a_speed_or_yaw_rate_that_is_not_positive(speed, yaw_rate):
    with pytest.raises(ConfigError, match="speed and yaw rate must be > 0"):
        sc.walk_path(
            Pose(0.0, 0.0), goto([(1.0, 0.0, 0.0)], ["P1"]), skip_within_m=0.5, speed_mps=speed, yaw_rate=yaw_rate
        )


def test_every_leading_waypoint_within_reach_of_the_start_is_skipped():
    # The robot stands on P1 and 0.2 m from P2: it walks to P3 only, from where P2 is.
    action = goto([(0.0, 0.0, 0.0), (0.2, 0.0, 0.0), (5.0, 0.0, 0.0)], ["P1", "P2", "P3"])
    path, here = sc.walk_path(Pose(0.0, 0.0, 0.0, 0.0), action, skip_within_m=0.5, speed_mps=1.0)
    assert ([p.symbol for p in path], here) == (["P3"], "P2")
    assert path[0].distance == pytest.approx(5.0)


def test_a_waypoint_exactly_at_the_skip_distance_counts_as_stood_on():
    action = goto([(0.5, 0.0, 0.0), (3.0, 0.0, 0.0)], ["P1", "P2"])
    path, here = sc.walk_path(Pose(0.0, 0.0, 0.0, 0.0), action, skip_within_m=0.5, speed_mps=1.0)
    assert ([p.symbol for p in path], here) == (["P2"], "P1")


def test_the_place_the_robot_stands_at_is_the_last_named_waypoint_it_skipped():
    # The waypoint between P1 and P3 has no place symbol: the robot is known to stand at P1.
    action = goto([(0.0, 0.0, 0.0), (0.2, 0.0, 0.0), (5.0, 0.0, 0.0)], ["P1", "", "P3"])
    _, here = sc.walk_path(Pose(0.1, 0.0, 0.0, 0.0), action, skip_within_m=0.5, speed_mps=1.0)
    assert here == "P1"


def test_a_repeated_waypoint_is_walked_once_and_a_short_step_still_turns_the_robot():
    points = [(0.0, 0.0, 0.0), (2.0, 0.0, 0.0), (2.0, 0.0, 0.0), (2.0, 0.5, 0.0), (4.0, 0.5, 0.0)]
    action = goto(points, ["P1", "P2", "P2", "P3", "P4"])
    path, _ = sc.walk_path(Pose(0.0, 0.0, 0.0, 0.0), action, skip_within_m=0.1, speed_mps=1.0, yaw_rate=0.5)
    assert [p.symbol for p in path] == ["P2", "P3", "P4"]
    assert [p.heading for p in path] == pytest.approx([0.0, math.pi / 2, 0.0])
    assert [p.distance for p in path] == pytest.approx([2.0, 2.5, 4.5])
    # Each quarter turn takes (pi / 2) / 0.5 s at 0.5 rad/s.
    assert [p.time_s for p in path] == pytest.approx([2.0, 2.5 + math.pi, 4.5 + 2 * math.pi])


def test_a_walk_assumes_spot_turns_one_radian_a_second_unless_told_otherwise():
    action = goto([(0.0, 2.0, 0.0)], ["P1"])  # a quarter turn left, then 2 m
    path, _ = sc.walk_path(Pose(0.0, 0.0, 0.0, 0.0), action, skip_within_m=0.1, speed_mps=1.0)
    assert path[0].time_s == pytest.approx(2.0 + math.pi / 2)


def test_a_walk_is_one_se2_trajectory_through_every_point_in_the_command_frame():
    action = goto([(12.0, 9.0, 0.0), (12.0, 11.0, 0.0), (14.0, 11.0, 0.0)], ["P1", "P2", "P3"])
    path, _ = sc.walk_path(Pose(12.0, 7.0, 0.0, math.pi / 2), action, skip_within_m=0.1, speed_mps=1.0)
    command = sc.trajectory_command(path, frame="vision", map_to_frame=MAP_TO_ODOM, max_speed_mps=0.0)
    request = se2_request(command)
    assert request.se2_frame_name == "vision"
    points = request.trajectory.points
    assert len(points) == 3
    expected = [c for p in path for c in MAP_TO_ODOM.to_frame(p.target)[:2]]
    assert [c for p in points for c in (p.pose.position.x, p.pose.position.y)] == pytest.approx(expected)
    assert [p.pose.angle for p in points] == pytest.approx([0.0, 0.0, -math.pi / 2])
    assert [duration_to_seconds(p.time_since_reference) for p in points] == pytest.approx([p.time_s for p in path])
    assert not request.HasField("end_time")
    assert not mobility_params(command).HasField("vel_limit")


def test_a_speed_limit_bounds_velocity_both_ways_as_spot_ros2_sets_it():
    path, _ = sc.walk_path(Pose(0.0, 0.0), goto([(3.0, -1.5, 0.4)], ["P1"]), skip_within_m=0.1, speed_mps=1.0)
    command = sc.trajectory_command(path, frame="odom", max_speed_mps=0.8, max_yaw_rate=0.6)
    limit = mobility_params(command).vel_limit
    assert (limit.max_vel.linear.x, limit.max_vel.linear.y, limit.max_vel.angular) == pytest.approx((0.8, 0.8, 0.6))
    assert (limit.min_vel.linear.x, limit.min_vel.linear.y, limit.min_vel.angular) == pytest.approx(
        (-0.8, -0.8, -0.6)
    )


def test_a_speed_limit_turns_at_most_one_radian_a_second_unless_told_otherwise():
    path, _ = sc.walk_path(Pose(0.0, 0.0), goto([(3.0, 0.0, 0.0)], ["P1"]), skip_within_m=0.1, speed_mps=1.0)
    limit = mobility_params(sc.trajectory_command(path, frame="odom", max_speed_mps=0.8)).vel_limit
    assert (limit.max_vel.angular, limit.min_vel.angular) == (1.0, -1.0)


@pytest.mark.parametrize("max_speed_mps", [0.0, -1.0])
def test_no_speed_limit_is_sent_unless_one_above_zero_is_asked_for(max_speed_mps):
    assert not sc.mobility_params(max_speed_mps).HasField("vel_limit")


def test_trajectory_times_are_sent_to_the_nanosecond_and_never_before_the_start():
    path = [
        sc.PathPoint((1.0, 0.0, 0.0), 0.0, "P1", 1.0, -0.5),
        sc.PathPoint((2.0, 0.0, 0.0), 0.0, "P2", 2.0, 0.0),
        sc.PathPoint((3.0, 0.0, 0.0), 0.0, "P3", 3.0, 2.5),
    ]
    points = se2_request(sc.trajectory_command(path, frame="odom", max_speed_mps=0.0)).trajectory.points
    sent = [(p.time_since_reference.seconds, p.time_since_reference.nanos) for p in points]
    assert sent == [(0, 0), (0, 0), (2, 500_000_000)]


def test_walk_goal_in_an_unknown_frame_or_without_points_is_refused():
    path, _ = sc.walk_path(Pose(0.0, 0.0), goto([(1.0, 0.0, 0.0)], ["P1"]), skip_within_m=0.1, speed_mps=1.0)
    with pytest.raises(ConfigError, match="odom, vision"):
        sc.trajectory_command(path, frame="map", max_speed_mps=0.0)
    with pytest.raises(ExecutionError, match="at least one"):
        sc.trajectory_command([], frame="odom", max_speed_mps=0.0)


def test_walk_time_budget_is_the_trajectory_time_plus_margin():
    assert sc.walk_time_budget(24.0, 10.0) == pytest.approx(34.0)
    assert sc.walk_time_budget(0.0, 10.0) == pytest.approx(10.0)


def test_a_negative_trajectory_time_or_margin_counts_as_none():
    assert sc.walk_time_budget(-0.5, 10.0) == 10.0
    assert sc.walk_time_budget(24.0, -3.0) == 24.0
    assert sc.walk_time_budget(24.0, 0.0) == 24.0


#: The largest trajectory time a goal can carry: builtin_interfaces/Duration's ``sec`` is an int32.
INT32_MAX = 2_147_483_647


def test_the_longest_walk_a_goal_can_carry_is_accepted_and_one_second_more_is_refused():
    assert sc.walk_time_budget(float(INT32_MAX), 0.0) == INT32_MAX
    with pytest.raises(ExecutionError, match="time budget cannot be set"):
        sc.walk_time_budget(float(INT32_MAX + 1), 0.0)


@pytest.mark.parametrize(
    ("trajectory_s", "margin_s"), [(math.inf, 10.0), (math.nan, 10.0), (24.0, math.inf), (24.0, math.nan), (1e300, 0.0)]
)
def test_a_walk_time_that_is_not_finite_or_too_long_for_a_goal_is_refused(trajectory_s, margin_s):
    with pytest.raises(ExecutionError, match="time budget cannot be set"):
        sc.walk_time_budget(trajectory_s, margin_s)


coordinates = st.floats(-1e4, 1e4)
points = st.tuples(coordinates, coordinates).map(lambda p: (p[0], p[1], 0.0))


@settings(deadline=None)
@given(
    start=st.tuples(coordinates, coordinates, st.floats(-math.pi, math.pi)),
    waypoints=st.lists(points, min_size=1, max_size=6),
    extra=points,
    speed=st.floats(0.1, 3.0),
    margin=st.floats(0.0, 60.0),
)
@example(start=(0.0, 0.0, 0.0), waypoints=[(0.0, 3e-205, 0.0)], extra=(0.0, 0.0, 0.0), speed=1.0, margin=0.0)
def test_a_walks_budget_covers_its_length_and_grows_with_it(start, waypoints, extra, speed, margin):
    here = Pose(start[0], start[1], 0.0, start[2])

    def budget(path_points):
        action = goto(path_points, [f"P{i}" for i in range(len(path_points))])
        path, _ = sc.walk_path(here, action, skip_within_m=0.0, speed_mps=speed)
        return path[-1].distance, sc.walk_time_budget(path[-1].time_s, margin)

    length, short = budget(waypoints)
    assert math.isfinite(short)
    assert short >= length / speed + margin - 1e-6
    longer_length, longer = budget([*waypoints, extra])
    assert longer_length >= length - 1e-5  # a step under a micrometre is not walked (nor counted)
    if longer_length > length + 1e-3:  # the extra point is a real step further
        assert longer > short


def test_arrival_is_judged_by_distance_and_heading():
    target = (5.0, 5.0, 0.0)
    assert sc.arrival_error(Pose(5.2, 5.1, 0.0, 0.0), target, 0.3) == ""
    assert "1.00 m from the goal" in sc.arrival_error(Pose(4.0, 5.0, 0.0, 0.0), target, 0.3)
    # Headings either side of +-pi are close.
    assert sc.arrival_error(Pose(5.0, 5.0, 0.0, 3.1), target, 0.3, heading=-3.1, yaw_tolerance_rad=0.2) == ""
    assert "heading" in sc.arrival_error(Pose(5.0, 5.0, 0.0, 1.0), target, 0.3, heading=0.0, yaw_tolerance_rad=0.2)


def test_arrival_tolerances_are_inclusive():
    target = (5.0, 5.0, 0.0)
    assert sc.arrival_error(Pose(5.5, 5.0, 0.0, 0.0), target, 0.5) == ""
    assert sc.arrival_error(Pose(5.0, 5.0, 0.0, 0.5), target, 0.3, heading=0.0, yaw_tolerance_rad=0.5) == ""


def test_arrival_compares_the_heading_with_the_goal_heading_by_its_difference():
    target = (5.0, 5.0, 0.0)
    assert sc.arrival_error(Pose(5.0, 5.0, 0.0, 1.0), target, 0.3, heading=1.0, yaw_tolerance_rad=0.2) == ""
    turned = sc.arrival_error(Pose(5.0, 5.0, 0.0, -1.0), target, 0.3, heading=1.0, yaw_tolerance_rad=0.2)
    assert "2.00 rad off the goal heading" in turned


# --- inspecting and picking -----------------------------------------------------------------------
def test_inspect_turns_the_body_toward_the_object_and_gazes_at_it():
    here = MAP_TO_ODOM.pose_to_map(1.0, 1.0, 0.0, 0.0)  # odom (1, 1) facing odom +x
    target = MAP_TO_ODOM.to_map((1.0, 4.0, 0.8))  # 3 m to the odom +y side, 0.8 m up
    command = sc.inspect_command(here, target, frame="odom", map_to_frame=MAP_TO_ODOM)
    gaze = command.synchronized_command.arm_command.arm_gaze_command
    assert gaze.frame1_name == "odom"
    point = gaze.target_trajectory_in_frame1.points[0].point
    assert (point.x, point.y, point.z) == pytest.approx((1.0, 4.0, 0.8))
    turn = se2_request(command)
    assert turn.se2_frame_name == "odom"
    pose = turn.trajectory.points[0].pose
    assert (pose.position.x, pose.position.y) == pytest.approx((1.0, 1.0))
    assert pose.angle == pytest.approx(math.pi / 2)
    # The gripper is not touched: opening it would drop a held object.
    assert not command.synchronized_command.HasField("gripper_command")


def test_pick_casts_a_ray_through_the_object_and_walks_to_grasp_it():
    here = Pose(0.0, 0.0, 0.0, 0.0)
    target = (3.0, 0.0, 0.5)
    request = sc.pick_request(here, target, frame="vision", ray_back_m=0.5, ray_up_m=0.6)
    assert isinstance(request, manipulation_api_pb2.ManipulationApiRequest)
    assert request.WhichOneof("manipulation_cmd") == "pick_object_ray_in_world"
    pick = request.pick_object_ray_in_world
    assert pick.frame_name == "vision"
    assert pick.walk_gaze_mode == manipulation_api_pb2.PICK_AUTO_WALK_AND_GAZE
    start, end = pick.ray_start_rt_frame, pick.ray_end_rt_frame
    assert (start.x, start.y, start.z) == pytest.approx((2.5, 0.0, 1.1))  # back toward the robot, above
    # The object's point is the middle of the ray: it is hit even if the centroid is off a little.
    assert ((start.x + end.x) / 2, (start.y + end.y) / 2, (start.z + end.z) / 2) == pytest.approx(target)


def test_pick_ray_is_expressed_in_the_command_frame():
    target_odom = (2.0, 3.0, 0.4)
    target = MAP_TO_ODOM.to_map(target_odom)
    here = MAP_TO_ODOM.pose_to_map(2.0, 0.0, 0.0, 0.0)  # odom: 3 m on the -y side of the object
    pick = sc.pick_request(
        here, target, frame="odom", map_to_frame=MAP_TO_ODOM, ray_back_m=0.5, ray_up_m=0.6
    ).pick_object_ray_in_world
    start, end = pick.ray_start_rt_frame, pick.ray_end_rt_frame
    assert (start.x, start.y, start.z) == pytest.approx((2.0, 2.5, 1.0))
    assert (end.x, end.y, end.z) == pytest.approx((2.0, 3.5, -0.2))


def test_pick_ray_starts_back_along_the_line_from_the_robot_to_the_object():
    # The object is 5 m away along a 3-4-5 triangle: 0.5 m back is 0.3 m back in x and 0.4 m in y.
    pick = sc.pick_request(
        Pose(0.0, 0.0, 0.0, 0.0), (3.0, 4.0, 0.5), frame="odom", ray_back_m=0.5, ray_up_m=0.6
    ).pick_object_ray_in_world
    start = pick.ray_start_rt_frame
    assert (start.x, start.y, start.z) == pytest.approx((2.7, 3.6, 1.1))


# --- placing ------------------------------------------------------------------------------------
#: Spot's arm envelope as the adapter's parameters give it.
REACH = {"min_reach_m": 0.6, "max_reach_m": 1.0, "hand_height_m": 0.25}


def test_place_is_hand_pose_then_open_release_stow_close():
    here = Pose(0.0, 0.0, 0.0, 0.0)
    target = (0.0, 0.8, 0.4)  # within reach, to the left
    steps = sc.place_steps(
        here, target, frame="odom", arm_seconds=2.5, release_pause_s=0.7, **REACH
    )
    kinds = [type(step).__name__ for step in steps]
    assert kinds == ["CommandStep", "TriggerStep", "PauseStep", "TriggerStep", "TriggerStep"]
    assert [step.service for step in steps if isinstance(step, sc.TriggerStep)] == [
        "open_gripper",
        "arm_stow",
        "close_gripper",
    ]
    pause = steps[2]
    assert isinstance(pause, sc.PauseStep) and pause.seconds == pytest.approx(0.7)
    arm_step = steps[0]
    assert isinstance(arm_step, sc.CommandStep)
    cartesian = arm_step.command.synchronized_command.arm_command.arm_cartesian_command
    assert cartesian.root_frame_name == "odom"
    point = cartesian.pose_trajectory_in_task.points[0]
    assert duration_to_seconds(point.time_since_reference) == pytest.approx(2.5)
    position = point.pose.position
    assert (position.x, position.y, position.z) == pytest.approx((0.0, 0.8, 0.65))
    hand = Quat.from_proto(point.pose.rotation)
    assert hand.transform_point(1.0, 0.0, 0.0) == pytest.approx((0.0, 0.0, -1.0), abs=1e-6)  # gripper points down
    assert hand.transform_point(0.0, 0.0, 1.0) == pytest.approx((0.0, 1.0, 0.0), abs=1e-6)  # facing away


def test_place_under_the_body_releases_ahead_of_it():
    here = Pose(2.0, 1.0, 0.0, math.pi)
    point = sc.place_point(here, (2.0, 1.0, 0.0), min_reach_m=0.6, max_reach_m=1.0, hand_height_m=0.3)
    assert point == pytest.approx((1.4, 1.0, 0.3))


def test_place_out_of_reach_is_an_execution_error():
    with pytest.raises(ExecutionError, match="beyond the arm's reach"):
        sc.place_steps(Pose(0.0, 0.0), (3.0, 0.0, 0.0), frame="odom", release_pause_s=1.0, **REACH)


def test_place_at_exactly_the_arms_reach_limits_releases_over_the_target():
    facing_away = Pose(0.0, 0.0, 0.0, math.pi / 2)  # facing +y; the targets lie along +x
    assert sc.place_point(facing_away, (1.0, 0.0, 0.2), **REACH) == pytest.approx((1.0, 0.0, 0.45))
    assert sc.place_point(facing_away, (0.6, 0.0, 0.2), **REACH) == pytest.approx((0.6, 0.0, 0.45))


def test_place_under_a_turned_body_releases_ahead_along_its_heading():
    ahead = SE2Pose(2.0, 1.0, math.pi / 3) * SE2Pose(0.6, 0.0, 0.0)  # bosdyn's own frame arithmetic
    point = sc.place_point(Pose(2.0, 1.0, 0.0, math.pi / 3), (2.1, 1.0, 0.3), **REACH)
    assert point == pytest.approx((ahead.x, ahead.y, 0.55))


def test_the_arm_gets_three_seconds_to_reach_the_place_point_unless_told_otherwise():
    steps = sc.place_steps(Pose(0.0, 0.0), (0.8, 0.0, 0.0), frame="odom", release_pause_s=1.0, **REACH)
    arm = steps[0]
    assert isinstance(arm, sc.CommandStep)
    point = arm.command.synchronized_command.arm_command.arm_cartesian_command.pose_trajectory_in_task.points[0]
    assert duration_to_seconds(point.time_since_reference) == 3.0


@pytest.mark.parametrize(
    "built",
    [
        sc.PathPoint((1.0, 0.0, 0.0), 0.0, "P1", 1.0, 1.0),
        sc.CommandStep(robot_command_pb2.RobotCommand(), "move the hand"),
        sc.TriggerStep("arm_stow"),
        sc.PauseStep(1.0),
    ],
)
def test_a_checked_path_point_or_place_step_cannot_be_changed_afterwards(built):
    name = dataclasses.fields(built)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(built, name, getattr(built, name))


# --- renewing a walk: the path still ahead, from where the robot is ---------------------------------
def square() -> list[sc.PathPoint]:
    """A walk from (0, 0) facing east: 4 m east, a left turn, 3 m north, a left turn, 4 m west."""
    action = goto([(4.0, 0.0, 0.0), (4.0, 3.0, 0.0), (0.0, 3.0, 0.0)], ["P1", "P2", "P3"])
    path, _ = sc.walk_path(Pose(0.0, 0.0, 0.0, 0.0), action, skip_within_m=0.1, speed_mps=1.0)
    return path


def test_the_path_ahead_keeps_each_points_place_and_heading_and_times_it_from_the_robot():
    path = square()
    ahead = sc.path_ahead(Pose(4.0, 1.0, 0.0, math.pi / 2), path[1:], speed_mps=0.5, yaw_rate=1.0)
    assert [(p.target, p.heading, p.symbol) for p in ahead] == [(p.target, p.heading, p.symbol) for p in path[1:]]
    # 2 m at 0.5 m/s facing north already; then a quarter turn at 1 rad/s and 4 m more.
    assert [p.distance for p in ahead] == pytest.approx([2.0, 6.0])
    assert [p.time_s for p in ahead] == pytest.approx([4.0, 4.0 + math.pi / 2 + 8.0])


def test_the_path_ahead_turns_the_robot_to_the_first_points_heading():
    (point,) = sc.path_ahead(Pose(4.0, 2.0, 0.0, 0.0), square()[1:2], speed_mps=1.0, yaw_rate=0.5)
    assert point.time_s == pytest.approx(1.0 + (math.pi / 2) / 0.5)


def test_a_command_carries_at_most_max_command_points_of_a_long_path():
    action = goto([(float(i), 0.0, 0.0) for i in range(1, 200)], [f"P{i}" for i in range(1, 200)])
    path, _ = sc.walk_path(Pose(0.0, 0.0), action, skip_within_m=0.1, speed_mps=1.0)
    ahead = sc.path_ahead(Pose(0.0, 0.0), path, speed_mps=1.0)
    assert len(ahead) == sc.MAX_COMMAND_POINTS == 50
    assert ahead[-1].symbol == "P50"


@pytest.mark.parametrize(("speed", "yaw_rate"), [(0.0, 1.0), (1.0, -1.0)])
def test_the_path_ahead_refuses_a_speed_or_yaw_rate_that_is_not_positive(speed, yaw_rate):
    with pytest.raises(ConfigError, match="speed and yaw rate must be > 0"):
        sc.path_ahead(Pose(0.0, 0.0), square(), speed_mps=speed, yaw_rate=yaw_rate)


@pytest.mark.parametrize(
    ("here", "since", "expected"),
    [
        ((0.0, 0.0, 0.0), 0, 0),  # where the walk began: toward P1
        ((3.5, 0.0, 0.0), 0, 0),  # half a metre before the corner: still toward it, the corner is not cut
        ((4.0, 0.0, 0.0), 0, 1),  # at the corner: toward P2
        ((4.1, 0.3, 0.0), 0, 1),  # just round it, a little wide: along the second side
        ((4.6, -0.4, 0.0), 0, 1),  # overshot the corner: the second side is next
        ((2.0, 3.0, 0.0), 1, 2),  # on the last side
        ((-1.0, 3.0, 0.0), 2, 2),  # past the end: still the last point
    ],
)
def test_a_renewed_command_starts_at_the_corner_the_robot_walks_toward(here, since, expected):
    assert sc.heading_for(here, (0.0, 0.0, 0.0), square(), since) == expected


def test_the_point_walked_toward_never_goes_back():
    assert sc.heading_for((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), square(), 2) == 2


def test_a_path_that_turns_back_on_itself_is_walked_to_its_far_end_first():
    action = goto([(4.0, 0.0, 0.0), (0.0, 0.0, 0.0)], ["P1", "P2"])
    path, _ = sc.walk_path(Pose(0.0, 0.0, 0.0, 0.0), action, skip_within_m=0.1, speed_mps=1.0)
    assert sc.heading_for((3.0, 0.0, 0.0), (0.0, 0.0, 0.0), path, 0) == 0
    assert sc.heading_for((4.0, 0.0, 0.0), (0.0, 0.0, 0.0), path, 0) == 1


@settings(deadline=None)
@given(corners=st.lists(st.tuples(st.integers(-20, 20), st.integers(-20, 20)), min_size=1, max_size=8, unique=True))
@example(corners=[(9, 8), (8, 2), (10, 14)])  # folds back onto itself: 0.06 m before the corner is on both legs
def test_a_robot_following_any_path_heads_for_the_end_of_the_segment_it_is_on(corners):
    """However the path folds or crosses itself, odometry along it moves the target point on only at each corner."""
    start = (0.0, 0.0, 0.0)
    points = [(float(x), float(y), 0.0) for x, y in corners if (x, y) != (0, 0)]
    assume(points)
    path, _ = sc.walk_path(Pose(0.0, 0.0), goto(points, [f"P{i}" for i in range(len(points))]),
                           skip_within_m=0.0, speed_mps=1.0)
    toward = 0
    for index in range(len(path)):
        a = path[index - 1].target if index else start
        b = path[index].target
        for share in (0.0, 0.3, 0.6, 0.99):
            here = (a[0] + share * (b[0] - a[0]), a[1] + share * (b[1] - a[1]), 0.0)
            toward = sc.heading_for(here, start, path, toward)
            assert toward == index, (here, index, toward)
