"""Build a robot driver by name from flat settings (ROS parameters, CLI options).

Each driver kind lists its settings (:data:`SETTINGS`) with defaults,
descriptions and bounds, so the dispatcher node can declare them as ROS
parameters one-to-one and every value is checked here before a driver exists.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heracles_ros.errors import ConfigError
from heracles_ros.execution.driver import Pose, RobotDriver
from heracles_ros.execution.sim import SimConfig, SimSpotDriver
from heracles_ros.execution.sim_hydra import SENSOR_RANGE_M
from heracles_ros.execution.spot_config import MAP_FRAME_SOURCES, SpotConfig
from heracles_ros.execution.spot_frames import FRAMES, SE2Transform
from heracles_ros.scene import HYDRA_DSG_TOPIC
from heracles_ros.settings import Setting

if TYPE_CHECKING:  # the adapter imports bosdyn and grpc: only when a spot_ros2 driver is made
    from heracles_ros.execution.spot_ros2 import SpotRos2Driver

_SIM = SimConfig()
#: Hydra publishes about once a second.
HYDRA_PERIOD_S = 1.0
_SPOT = SpotConfig()


def _number(name: str, default: float, description: str, minimum: float | None = 0.0, **kw: Any) -> Setting:
    return Setting(name, default, description, minimum, **kw)


SIM_SETTINGS: tuple[Setting, ...] = (
    _number("speed_mps", _SIM.speed_mps, "Simulated walking speed, m/s.", 0.001),
    _number("pick_s", _SIM.pick_s, "Simulated seconds a pick takes."),
    _number("place_s", _SIM.place_s, "Simulated seconds a place takes."),
    _number("inspect_s", _SIM.inspect_s, "Simulated seconds an inspection takes."),
    _number("time_scale", _SIM.time_scale, "Simulated seconds per wall-clock second.", 0.001),
    _number("tick_s", _SIM.tick_s, "Wall-clock seconds between pose updates (and cancel checks).", 0.001),
    Setting("fail_steps", [], "Execute-call numbers (0-based since start) that fail, to exercise recovery.",
            minimum=0, items=int),
    _number("fail_probability", _SIM.fail_probability, "Chance that any step fails.", 0.0, maximum=1.0),
    _number("fail_fraction", _SIM.fail_fraction, "How far through a failing step it gives up.", 0.0, maximum=1.0),
    _number("seed", _SIM.seed, "Seed of the failure draw.", None),
    Setting("start_pose", [0.0, 0.0, 0.0, 0.0], "Simulated robot's start pose in the map frame: x, y[, z[, yaw]]."),
    Setting("holding", "", "Symbol of the object in the gripper at start ('' for none)."),
    Setting("world", "", "Scene file of the simulated Hydra's world: the map and objects not yet seen ('' for no "
            "simulated Hydra)."),
    _number("sensor_range_m", SENSOR_RANGE_M, "Simulated Hydra: how far the robot sees objects in its room, m.",
            0.01),
    Setting("dsg_topic", HYDRA_DSG_TOPIC, "Simulated Hydra: DsgUpdate topic it publishes on (the mirror's "
            "dsg_topic)."),
    _number("hydra_period_s", HYDRA_PERIOD_S, "Simulated Hydra: wall-clock seconds between snapshots.", 0.01),
)
#: The simulator's settings that belong to the simulated Hydra, not to the driver.
SIM_HYDRA_SETTINGS = ("world", "sensor_range_m", "dsg_topic", "hydra_period_s")

SPOT_ROS2_SETTINGS: tuple[Setting, ...] = (
    Setting("spot_name", "", "Namespace of the spot_ros2 driver (its spot_name; '' for none)."),
    Setting("frame", _SPOT.frame, "Spot frame for goals; must match the driver's preferred_odom_frame.",
            choices=FRAMES),
    Setting("map_frame_source", _SPOT.map_frame_source,
            "Where map->frame comes from: tf (latest from TF, as Hydra's backend publishes it) or fixed "
            "(map_to_frame).", choices=MAP_FRAME_SOURCES),
    Setting("tf_map_frame", _SPOT.tf_map_frame, "TF name of the scene graph's map frame (Hydra's map frame)."),
    Setting("tf_odom_frame", _SPOT.tf_odom_frame,
            "TF name of Spot's goal frame ('' for spot_ros2's own: <spot_name>/<frame>)."),
    _number("map_frame_max_age_s", _SPOT.map_frame_max_age_s,
            "A TF map->frame older than this fails the step, seconds (0: any age)."),
    Setting("map_to_frame", [0.0, 0.0, 0.0],
            "With map_frame_source fixed: pose of that frame in the map frame, x, y, yaw[, z] "
            "([0, 0, 0] when the scene graph is in Spot's odom frame)."),
    _number("arrival_tolerance_m", _SPOT.arrival_tolerance_m, "Distance from the final goal that counts as arrived.",
            0.01),
    _number("waypoint_tolerance_m", _SPOT.waypoint_tolerance_m,
            "Distance within which a waypoint counts as passed (a leading one: as where the robot stands).", 0.01),
    _number("yaw_tolerance_rad", _SPOT.yaw_tolerance_rad, "Heading error that still counts as arrived.", 0.01),
    _number("expected_speed_mps", _SPOT.expected_speed_mps, "Walking speed the walk trajectory's timing assumes.",
            0.01),
    _number("walk_margin_s", _SPOT.walk_margin_s,
            "Extra seconds beyond the trajectory's own time before a walk counts as stuck."),
    _number("max_speed_mps", _SPOT.max_speed_mps, "Speed limit sent with walk goals (0: the robot's own)."),
    _number("service_timeout_s", _SPOT.service_timeout_s, "Limit for a Trigger service call.", 0.01),
    _number("power_on_timeout_s", _SPOT.power_on_timeout_s, "Limit for power_on.", 0.01),
    _number("accept_timeout_s", _SPOT.accept_timeout_s, "Limit for the driver to accept a goal.", 0.01),
    _number("pose_timeout_s", _SPOT.pose_timeout_s, "Limit to wait for (fresh) odometry.", 0.01),
    _number("arm_timeout_s", _SPOT.arm_timeout_s, "Limit for one arm motion (gaze, hand pose, stow).", 0.01),
    _number("pick_timeout_s", _SPOT.pick_timeout_s, "Limit for a grasp, walking to the object included.", 0.01),
    _number("inspect_dwell_s", _SPOT.inspect_dwell_s, "Seconds the hand camera looks at an inspected object."),
    _number("hand_height_m", _SPOT.hand_height_m, "Height above the place point where the object is released."),
    _number("min_reach_m", _SPOT.min_reach_m, "Closest release point ahead of the body."),
    _number("max_reach_m", _SPOT.max_reach_m, "Farthest release point from the body.", 0.01),
    _number("ray_back_m", _SPOT.ray_back_m, "Grasp ray start: back toward the robot from the object."),
    _number("ray_up_m", _SPOT.ray_up_m, "Grasp ray start: above the object.", 0.01),
    _number("release_pause_s", _SPOT.release_pause_s, "Seconds between opening the gripper and stowing."),
    Setting("sit_on_shutdown", _SPOT.sit_on_shutdown, "Sit the robot down before releasing it at shutdown."),
    _number("tick_s", _SPOT.tick_s, "Seconds between checks of a running goal.", 0.001),
    Setting("holding", "", "Symbol of the object in the gripper at start ('' for none)."),
)

#: Driver kinds and the settings each accepts.
SETTINGS: dict[str, tuple[Setting, ...]] = {"sim": SIM_SETTINGS, "spot_ros2": SPOT_ROS2_SETTINGS}
DRIVER_KINDS: tuple[str, ...] = tuple(SETTINGS)


def checked_settings(kind: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Every setting of ``kind`` (defaults filled in), checked; ConfigError naming unknown or bad ones."""
    if kind not in SETTINGS:
        raise ConfigError(f"unknown robot driver {kind!r}: choose one of {', '.join(DRIVER_KINDS)}")
    table = {s.name: s for s in SETTINGS[kind]}
    unknown = sorted(set(settings) - set(table))
    if unknown:
        raise ConfigError(
            f"unknown {kind} driver setting(s) {', '.join(unknown)}; accepted: {', '.join(sorted(table))}"
        )
    values = {name: spec.default for name, spec in table.items()}
    for name, value in settings.items():
        values[name] = table[name].check(value, owner=f"{kind} driver setting")
    return values


def make_driver(kind: str, *, node: Any = None, **settings: Any) -> RobotDriver:
    """A driver of ``kind`` ("sim" or "spot_ros2"); ``node`` is the rclpy node spot_ros2 runs in."""
    values = checked_settings(kind, settings)
    if kind == "sim":
        return _make_sim(values)
    return _make_spot_ros2(node, values)


@dataclass(frozen=True)
class SimHydraSettings:
    """The simulated Hydra's settings (the simulator's ``world`` and its siblings)."""

    world: str
    sensor_range_m: float
    dsg_topic: str
    hydra_period_s: float


def sim_hydra_settings(settings: Mapping[str, Any]) -> SimHydraSettings | None:
    """The simulated Hydra asked for by the sim driver's checked ``settings``; None without a world."""
    values = {name: settings[name] for name in SIM_HYDRA_SETTINGS}
    if not str(values["world"]).strip():
        return None
    if not str(values["dsg_topic"]).strip():
        raise ConfigError("sim_dsg_topic must not be empty when sim_world is set")
    return SimHydraSettings(**values)


def _make_sim(values: dict[str, Any]) -> SimSpotDriver:
    for name in SIM_HYDRA_SETTINGS:  # the simulated Hydra's, not the driver's
        values.pop(name)
    start = _floats("sim", "start_pose", values.pop("start_pose"), 2, 4)
    holding = values.pop("holding")
    values["fail_steps"] = frozenset(values["fail_steps"])
    return SimSpotDriver(SimConfig(**values), start=Pose(*start), holding=holding)


def _make_spot_ros2(node: Any, values: dict[str, Any]) -> SpotRos2Driver:
    from heracles_ros.execution.spot_ros2 import SpotRos2Driver
    spot_name = values.pop("spot_name")
    holding = values.pop("holding")
    transform = _floats("spot_ros2", "map_to_frame", values["map_to_frame"], 3, 4)
    values["map_to_frame"] = SE2Transform.from_values(transform)
    return SpotRos2Driver(node, spot_name=spot_name, config=SpotConfig(**values), holding=holding)


def _floats(kind: str, name: str, values: list[Any], least: int, most: int) -> list[float]:
    if not least <= len(values) <= most or not all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values
    ):
        raise ConfigError(f"{kind} driver setting {name} must be {least} to {most} numbers, got {values!r}")
    return [float(v) for v in values]
