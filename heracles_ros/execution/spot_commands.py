"""Spot commands for plan actions, built as bosdyn protos (no ROS needed).

The spot_ros2 driver takes Boston Dynamics' own command protos (converted to ROS
messages with ``bosdyn_msgs.conversions.convert``), so everything that decides
*what* Spot is asked to do lives here, as pure functions over bosdyn-client's
``RobotCommandBuilder`` and ``bosdyn.api`` messages, and can be checked without a
robot. :mod:`heracles_ros.execution.spot_ros2` only sends them and watches.

Frames: plan positions are in the map frame of the scene graph; Spot walks in
its ``odom`` (kinematic odometry) or ``vision`` frame. :class:`SE2Transform`
holds the pose of that frame in the map (identity when the scene graph was
built in the robot's odom frame, as Hydra on Spot usually is).

Pick uses ``PickObjectRayInWorld``: it is the one grasp request that takes a 3D
location without an image, Spot ray-casts it into its own depth map (so a
few centimetres of scene-graph error are absorbed by the real surface it hits),
and with ``PICK_AUTO_WALK_AND_GAZE`` it walks within reach and looks before
grasping. ``PickObject`` would need the robot already in reach, and the
image-based requests need a pixel we do not have.

Timing: a walk is a path of points that carry the times they are reached
(``time_since_reference``; the trajectory's reference time is left unset, i.e.
when the robot receives the command). It is never sent whole for the robot to
follow on its own: each command is valid for :data:`COMMAND_HORIZON_S` only
(the mobility command's end time) and carries the path still ahead
(:func:`path_ahead`, re-timed from where the robot stands), and the adapter
sends the next one while the robot walks. So a controller that dies, hangs or
loses the network leaves Spot standing within the horizon, as Spot's own
e-stop heartbeat would. How long a walk may take is a client-side budget
(:func:`walk_time_budget`) the adapter enforces by calling ``stop``.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bosdyn.api import geometry_pb2, manipulation_api_pb2, robot_command_pb2
from bosdyn.api.spot import robot_command_pb2 as spot_command_pb2
from bosdyn.client.math_helpers import Quat
from bosdyn.client.robot_command import RobotCommandBuilder

from heracles_ros.errors import ConfigError, ExecutionError
from heracles_ros.execution import driver
from heracles_ros.execution.driver import Pose, goto_path
from heracles_ros.execution.spot_frames import IDENTITY, SE2Transform, check_frame, wrap_angle
from heracles_ros.plan_types import PlanAction, Point3

# --- walking ---------------------------------------------------------------------------
#: Turning rate (rad/s) a walk's times assume and its speed limit allows: Spot turns about this fast walking.
YAW_RATE_RADPS = 1.0


@dataclass(frozen=True)
class PathPoint:
    """One point of a walk (map frame): where, the heading to pass it with, its place symbol, when."""

    target: Point3
    heading: float
    symbol: str
    #: Path length from the start to here, metres.
    distance: float
    #: When the trajectory reaches it, seconds after the command starts.
    time_s: float


#: Seconds a walk command keeps the robot moving after it arrives (its mobility end time): Spot stands still
#: when no newer command came by then (bosdyn SE2TrajectoryCommand.Request.end_time, "used to prevent runaway
#: commands").
COMMAND_HORIZON_S = driver.COMMAND_HORIZON_S
#: Most trajectory points one command carries: spot_ros2 splits longer trajectories into batches of 100 because
#: Spot refuses them whole, and a command renewed every fraction of a second needs only the next few.
MAX_COMMAND_POINTS = 50


def walk_path(
    start: Pose, action: PlanAction, *, skip_within_m: float, speed_mps: float, yaw_rate: float = YAW_RATE_RADPS
) -> tuple[list[PathPoint], str]:
    """The points of a goto's one trajectory, and the symbol of the place the robot already stands at.

    Follows the plan's waypoint path (the final target when it has none).
    Leading waypoints within ``skip_within_m`` of the start are where the robot
    already is and are left out; each point is passed facing along the segment
    that reaches it. Times assume ``speed_mps`` along the path plus turning at
    ``yaw_rate`` at each point.
    """
    if speed_mps <= 0 or yaw_rate <= 0:
        raise ConfigError(f"walking speed and yaw rate must be > 0, got {speed_mps} and {yaw_rate}")
    points, symbols = goto_path(action)
    first = 0
    while first < len(points) - 1 and start.distance_to(points[first]) <= skip_within_m:
        first += 1
    here = next((symbols[i] for i in range(first - 1, -1, -1) if symbols[i]), "")
    path: list[PathPoint] = []
    previous: Point3 = start.position
    heading, distance, time_s = start.yaw, 0.0, 0.0
    for i in range(first, len(points)):
        point = points[i]
        step = math.hypot(point[0] - previous[0], point[1] - previous[1])
        final = i == len(points) - 1
        if step <= 1e-6 and not final:
            continue  # a repeated point: nothing to walk
        new_heading = math.atan2(point[1] - previous[1], point[0] - previous[0]) if step > 1e-6 else heading
        distance += step
        time_s += step / speed_mps + abs(wrap_angle(new_heading - heading)) / yaw_rate
        heading = new_heading
        path.append(PathPoint(point, heading, symbols[i], distance, time_s))
        previous = point
    return path, here


def path_ahead(
    start: Pose, points: Sequence[PathPoint], *, speed_mps: float, yaw_rate: float = YAW_RATE_RADPS
) -> list[PathPoint]:
    """The points still ahead, at most :data:`MAX_COMMAND_POINTS`, re-timed from the robot at ``start``.

    Each keeps its place and heading on the plan's path; only distances and times
    start again from where the robot stands, so a renewed command neither sends
    it back to a point it passed nor hurries it to catch up with the old timing.
    """
    if speed_mps <= 0 or yaw_rate <= 0:
        raise ConfigError(f"walking speed and yaw rate must be > 0, got {speed_mps} and {yaw_rate}")
    ahead: list[PathPoint] = []
    previous, heading, distance, time_s = start.position, start.yaw, 0.0, 0.0
    for point in points[:MAX_COMMAND_POINTS]:
        step = math.hypot(point.target[0] - previous[0], point.target[1] - previous[1])
        distance += step
        time_s += step / speed_mps + abs(wrap_angle(point.heading - heading)) / yaw_rate
        ahead.append(PathPoint(point.target, point.heading, point.symbol, distance, time_s))
        previous, heading = point.target, point.heading
    return ahead


#: Distances to two segments closer than this (metres) are the same: rounding, not a side.
_ON_SEGMENT_M = 1e-9


def heading_for(here: Point3, start: Point3, path: Sequence[PathPoint], index: int) -> int:
    """Index of the path point a robot at ``here`` walks toward, never one before ``index``.

    The robot is on the segment that ends at the point it heads for (the first one
    starts at ``start``, where the walk began). It has passed that point once it is
    at or beyond the segment's end, or nearer the next segment and along it: then
    the next point is its target. A renewed command therefore starts at the corner
    ahead and never cuts it.
    """
    while index < len(path) - 1:
        begin = path[index - 1].target if index > 0 else start
        reach, off = _along(here, begin, path[index].target)
        next_reach, next_off = _along(here, path[index].target, path[index + 1].target)
        # Nearer the next segment by more than rounding: a path that folds back onto itself puts a point on
        # both, and the robot is then still on the segment it walks.
        if reach < 1.0 and not (next_off < off - _ON_SEGMENT_M and next_reach > 0.0):
            break
        index += 1
    return index


def _along(point: Point3, a: Point3, b: Point3) -> tuple[float, float]:
    """How far along segment a-b ``point`` projects (0 at a, 1 at b, unclamped) and its planar distance to it."""
    dx, dy = b[0] - a[0], b[1] - a[1]
    length2 = dx * dx + dy * dy
    if length2 <= 1e-12:
        return 1.0, math.hypot(point[0] - a[0], point[1] - a[1])
    t = ((point[0] - a[0]) * dx + (point[1] - a[1]) * dy) / length2
    u = min(max(t, 0.0), 1.0)
    return t, math.hypot(point[0] - (a[0] + u * dx), point[1] - (a[1] + u * dy))


#: Longest trajectory time a goal can carry: spot_ros2's goal holds it in a ROS Duration (int32 seconds).
MAX_TRAJECTORY_S = float(2**31 - 1)


def walk_time_budget(trajectory_s: float, margin_s: float) -> float:
    """Seconds a walk may take before it counts as stuck: the trajectory's own time plus a margin.

    ExecutionError for a trajectory time that is not a finite number or too long
    for the goal to carry (a path through a NaN or an absurdly far point): such a
    walk would never count as stuck.
    """
    if not (math.isfinite(trajectory_s) and math.isfinite(margin_s)) or trajectory_s > MAX_TRAJECTORY_S:
        raise ExecutionError(
            f"the walk's time budget cannot be set: trajectory time {trajectory_s} s, margin {margin_s} s "
            f"(both must be finite, the trajectory at most {MAX_TRAJECTORY_S:.0f} s); is a waypoint not a finite "
            "position?"
        )
    return max(0.0, trajectory_s) + max(0.0, margin_s)


def mobility_params(max_speed_mps: float, max_yaw_rate: float = YAW_RATE_RADPS) -> spot_command_pb2.MobilityParams:
    """Spot mobility parameters; a speed limit only when ``max_speed_mps`` > 0 (else the robot's own).

    The limit bounds velocity both ways, ``max_vel`` and ``min_vel`` (its negation),
    as spot_ros2's own ``max_velocity`` service sets it.
    """
    params = RobotCommandBuilder.mobility_params()
    if max_speed_mps > 0:
        params.vel_limit.CopyFrom(
            geometry_pb2.SE2VelocityLimit(
                max_vel=geometry_pb2.SE2Velocity(
                    linear=geometry_pb2.Vec2(x=max_speed_mps, y=max_speed_mps), angular=max_yaw_rate
                ),
                min_vel=geometry_pb2.SE2Velocity(
                    linear=geometry_pb2.Vec2(x=-max_speed_mps, y=-max_speed_mps), angular=-max_yaw_rate
                ),
            )
        )
    return params


def trajectory_command(
    path: Sequence[PathPoint],
    *,
    frame: str,
    map_to_frame: SE2Transform = IDENTITY,
    max_speed_mps: float,
    max_yaw_rate: float = YAW_RATE_RADPS,
) -> robot_command_pb2.RobotCommand:
    """One SE2 trajectory command through every point of ``path``, expressed in Spot's ``frame``.

    The robot passes the points without stopping between them; a newer command
    replaces this one where the robot is, without a stop (sent through spot_ros2's
    ``robot_command`` service, never its action, which stops the robot at every
    pre-emption: docs/known-issues.md#spot-ros2-preemption).
    """
    if not path:
        raise ExecutionError("a walk needs at least one path point")
    last = path[-1]
    x, y, _ = map_to_frame.to_frame(last.target)
    command = RobotCommandBuilder.synchro_se2_trajectory_point_command(
        goal_x=x,
        goal_y=y,
        goal_heading=map_to_frame.yaw_to_frame(last.heading),
        frame_name=check_frame(frame),
        params=mobility_params(max_speed_mps, max_yaw_rate),
    )
    points = command.synchronized_command.mobility_command.se2_trajectory_request.trajectory.points
    del points[:]
    for point in path:
        px, py, _ = map_to_frame.to_frame(point.target)
        added = points.add()
        added.pose.position.x, added.pose.position.y = px, py
        added.pose.angle = map_to_frame.yaw_to_frame(point.heading)
        added.time_since_reference.FromNanoseconds(round(max(point.time_s, 0.0) * 1e9))
    return command


def arrival_error(
    pose: Pose, target: Point3, tolerance_m: float, heading: float | None = None, yaw_tolerance_rad: float = math.pi
) -> str:
    """Why ``pose`` does not count as having arrived at ``target`` ("" when it does)."""
    off = pose.distance_to(target)
    if off > tolerance_m:
        return f"robot is {off:.2f} m from the goal (tolerance {tolerance_m:.2f} m)"
    if heading is not None:
        turn = abs(wrap_angle(pose.yaw - heading))
        if turn > yaw_tolerance_rad:
            return f"robot heading is {turn:.2f} rad off the goal heading (tolerance {yaw_tolerance_rad:.2f} rad)"
    return ""


# --- looking and grasping ------------------------------------------------------------------
def inspect_command(
    here: Pose, target: Point3, *, frame: str, map_to_frame: SE2Transform = IDENTITY
) -> robot_command_pb2.RobotCommand:
    """Turn the body toward ``target`` on the spot and gaze the hand camera at it, in one command.

    The gripper is left as it is: opening it to look would drop a held object.
    """
    check_frame(frame)
    gx, gy, gz = map_to_frame.to_frame(target)
    gaze = RobotCommandBuilder.arm_gaze_command(gx, gy, gz, frame)
    hx, hy, _ = map_to_frame.to_frame(here.position)
    turn = RobotCommandBuilder.synchro_se2_trajectory_point_command(
        goal_x=hx, goal_y=hy, goal_heading=map_to_frame.yaw_to_frame(here.bearing_to(target)), frame_name=frame
    )
    return RobotCommandBuilder.build_synchro_command(gaze, turn)


def pick_request(
    here: Pose,
    target: Point3,
    *,
    frame: str,
    map_to_frame: SE2Transform = IDENTITY,
    ray_back_m: float,
    ray_up_m: float,
) -> manipulation_api_pb2.ManipulationApiRequest:
    """Walk to and grasp whatever a ray through the object's point hits.

    The ray starts ``ray_back_m`` back toward the robot and ``ray_up_m`` above the
    point (the way a camera sees it) and runs the same length beyond it, so the
    object's surface is hit even when the scene graph's centroid is a little off.
    """
    check_frame(frame)
    direction = here.bearing_to(target)
    start_map = (
        target[0] - ray_back_m * math.cos(direction),
        target[1] - ray_back_m * math.sin(direction),
        target[2] + ray_up_m,
    )
    end_map = (2 * target[0] - start_map[0], 2 * target[1] - start_map[1], 2 * target[2] - start_map[2])
    start = map_to_frame.to_frame(start_map)
    end = map_to_frame.to_frame(end_map)
    pick = manipulation_api_pb2.PickObjectRayInWorld(
        ray_start_rt_frame=geometry_pb2.Vec3(x=start[0], y=start[1], z=start[2]),
        ray_end_rt_frame=geometry_pb2.Vec3(x=end[0], y=end[1], z=end[2]),
        frame_name=frame,
        walk_gaze_mode=manipulation_api_pb2.PICK_AUTO_WALK_AND_GAZE,
    )
    return manipulation_api_pb2.ManipulationApiRequest(pick_object_ray_in_world=pick)


# --- placing --------------------------------------------------------------------------------
@dataclass(frozen=True)
class CommandStep:
    """Send a robot command on the ``robot_command`` action and wait for it to finish."""

    command: robot_command_pb2.RobotCommand
    what: str


@dataclass(frozen=True)
class TriggerStep:
    """Call one of the driver's std_srvs/Trigger services (they return when the arm is done)."""

    service: str


@dataclass(frozen=True)
class PauseStep:
    """Wait, e.g. for a released object to settle before the arm moves away."""

    seconds: float


PlaceStep = CommandStep | TriggerStep | PauseStep


def place_point(
    here: Pose, target: Point3, *, min_reach_m: float, max_reach_m: float, hand_height_m: float
) -> Point3:
    """Where the hand releases the object (map frame), ``hand_height_m`` above the target height.

    A target under the body (the robot stands on the place it puts the object at)
    becomes a point ``min_reach_m`` ahead of the body; one beyond ``max_reach_m`` is
    out of the arm's reach and raises :class:`ExecutionError`.
    """
    off = here.distance_to(target)
    if off > max_reach_m:
        raise ExecutionError(
            f"place target is {off:.2f} m from the body, beyond the arm's reach of {max_reach_m:.2f} m"
        )
    if off < min_reach_m:
        return (
            here.x + min_reach_m * math.cos(here.yaw),
            here.y + min_reach_m * math.sin(here.yaw),
            target[2] + hand_height_m,
        )
    return (target[0], target[1], target[2] + hand_height_m)


def place_steps(
    here: Pose,
    target: Point3,
    *,
    frame: str,
    map_to_frame: SE2Transform = IDENTITY,
    min_reach_m: float,
    max_reach_m: float,
    hand_height_m: float,
    release_pause_s: float,
    arm_seconds: float = 3.0,
) -> list[PlaceStep]:
    """Hand over the place point pointing down, open the gripper, let go, stow, close.

    The gripper is closed only after the arm is stowed, so it cannot grab the
    released object again on the way.
    """
    check_frame(frame)
    point = place_point(here, target, min_reach_m=min_reach_m, max_reach_m=max_reach_m, hand_height_m=hand_height_m)
    hx, hy, hz = map_to_frame.to_frame(point)
    # Hand x axis (the gripper's pointing direction) down, turned to face away from the body.
    facing = map_to_frame.yaw_to_frame(here.bearing_to(point))
    rotation = Quat.from_yaw(facing) * Quat.from_pitch(math.pi / 2)
    arm = RobotCommandBuilder.arm_pose_command(
        hx, hy, hz, rotation.w, rotation.x, rotation.y, rotation.z, frame, seconds=arm_seconds
    )
    return [
        CommandStep(arm, "move the hand over the place point"),
        TriggerStep("open_gripper"),
        PauseStep(release_pause_s),
        TriggerStep("arm_stow"),
        TriggerStep("close_gripper"),
    ]
