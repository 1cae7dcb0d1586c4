"""Settings of the spot_ros2 driver adapter, checked on construction (no ROS, no bosdyn needed).

Kept apart from spot_ros2 so the driver factory can list and check them
without importing the adapter, which pulls in bosdyn and grpc.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields

from heracles_ros.errors import ConfigError
from heracles_ros.execution.spot_frames import IDENTITY, SE2Transform, check_frame

#: Where the map->odom transform comes from.
MAP_FRAME_SOURCES: tuple[str, ...] = ("tf", "fixed")


@dataclass(frozen=True)
class SpotConfig:
    """How the adapter commands Spot and judges the results; times in seconds."""

    #: Spot frame the goals are given in; must match the driver's ``preferred_odom_frame``.
    frame: str = "odom"
    #: "tf": map->frame from TF (Hydra's backend publishes it); "fixed": ``map_to_frame``.
    map_frame_source: str = "tf"
    #: TF name of the scene graph's map frame (Hydra's ``map``).
    tf_map_frame: str = "map"
    #: TF name of Spot's command frame; "" for spot_ros2's own ``<spot_name>/<frame>``.
    tf_odom_frame: str = ""
    #: A TF map->odom older than this fails the step (0: any age).
    map_frame_max_age_s: float = 10.0
    #: Pose of the command frame in the map frame, used with ``map_frame_source="fixed"``.
    map_to_frame: SE2Transform = IDENTITY
    #: Distance from the final goal within which a walk counts as arrived.
    arrival_tolerance_m: float = 0.35
    #: Distance within which a waypoint counts as passed (and a leading one as where the robot stands).
    waypoint_tolerance_m: float = 0.75
    yaw_tolerance_rad: float = 0.35
    #: Walking speed the trajectory's timing assumes (Spot reaches each point at its time).
    expected_speed_mps: float = 0.5
    #: Extra seconds beyond the trajectory's own time before a walk counts as stuck.
    walk_margin_s: float = 15.0
    #: Speed limit sent with walk goals; 0 leaves the robot's own.
    max_speed_mps: float = 0.0
    service_timeout_s: float = 10.0
    power_on_timeout_s: float = 30.0
    #: How long the driver may take to accept a goal.
    accept_timeout_s: float = 5.0
    #: How long to wait for odometry (first message at start, a fresh one to verify arrival).
    pose_timeout_s: float = 3.0
    #: Limit for one arm motion (gaze, hand pose, stow, gripper).
    arm_timeout_s: float = 20.0
    #: Limit for a whole grasp, walking to the object included.
    pick_timeout_s: float = 90.0
    #: How long the hand camera looks at an inspected object.
    inspect_dwell_s: float = 2.0
    hand_height_m: float = 0.25
    min_reach_m: float = 0.6
    max_reach_m: float = 1.0
    ray_back_m: float = 0.5
    ray_up_m: float = 0.6
    release_pause_s: float = 1.0
    #: Sit the robot down before releasing it at shutdown (a released standing robot stays standing).
    sit_on_shutdown: bool = True
    #: How often a running goal is checked for cancel, timeout and progress.
    tick_s: float = 0.05

    def __post_init__(self) -> None:
        check_frame(self.frame)
        if self.map_frame_source not in MAP_FRAME_SOURCES:
            raise ConfigError(
                f"spot_ros2 map_frame_source must be one of {', '.join(MAP_FRAME_SOURCES)}, "
                f"got {self.map_frame_source!r}"
            )
        if not isinstance(self.map_to_frame, SE2Transform):
            raise ConfigError(f"spot_ros2 map_to_frame must be an SE2Transform, got {self.map_to_frame!r}")
        if not self.tf_map_frame.strip():
            raise ConfigError("spot_ros2 tf_map_frame must not be empty")
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _NOT_NUMBERS:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"spot_ros2 {f.name} must be a number, got {value!r}")
            allow_zero = f.name in ("max_speed_mps", "inspect_dwell_s", "release_pause_s", "walk_margin_s",
                                    "hand_height_m", "min_reach_m", "ray_back_m", "map_frame_max_age_s")
            if not math.isfinite(value):
                raise ConfigError(f"spot_ros2 {f.name} must be a finite number, got {value}")
            if value < 0 or (value == 0 and not allow_zero):
                raise ConfigError(f"spot_ros2 {f.name} must be {'>= 0' if allow_zero else '> 0'}, got {value}")
        if self.min_reach_m > self.max_reach_m:
            raise ConfigError(
                f"spot_ros2 min_reach_m ({self.min_reach_m}) must not exceed max_reach_m ({self.max_reach_m})"
            )


_NOT_NUMBERS = ("frame", "map_frame_source", "tf_map_frame", "tf_odom_frame", "map_to_frame", "sit_on_shutdown")
