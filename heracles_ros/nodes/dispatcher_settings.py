"""The dispatcher's parameters: its table, its typed settings, and the driver settings it passes on.

The driver's settings come straight from the driver factory's tables, as ``sim_<setting>`` and
``spot_<setting>``; what the robot holds and where it starts come from its record in the database, never from
parameters.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from heracles_ros.errors import ConfigError, ExecutionError
from heracles_ros.execution.driver_factory import DRIVER_KINDS, checked_settings
from heracles_ros.execution.driver_factory import SETTINGS as DRIVER_SETTINGS
from heracles_ros.execution.plan_check import PlanLimits
from heracles_ros.execution.plan_runner import DispatchConfig
from heracles_ros.execution.robot_state import check_symbol
from heracles_ros.plan_types import MAX_HOP_M
from heracles_ros.ros.node_settings import (
    CLIENT_LOST,
    COMMON,
    MAP_FRAME,
    PLANNER_TIMEOUT,
    ROBOT_SYMBOL,
    SNAPSHOT_WAIT,
    NodeSettings,
)
from heracles_ros.settings import Setting

#: Driver settings the node fills in itself (from the robot's recorded state), not parameters.
_FROM_STATE = {"start_pose", "holding"}


def _driver_parameter(kind: str, name: str) -> str:
    """ROS parameter name of one driver setting: sim_<name> / spot_<name> (spot_name stays)."""
    prefix = "sim_" if kind == "sim" else "spot_"
    return name if name.startswith(prefix) else prefix + name


#: kind -> {parameter name: driver setting name}, straight from the driver factory's tables.
DRIVER_PARAMETERS: dict[str, dict[str, str]] = {
    kind: {_driver_parameter(kind, s.name): s.name for s in table if s.name not in _FROM_STATE}
    for kind, table in DRIVER_SETTINGS.items()
}


def _driver_spec(kind: str, setting: Setting) -> Setting:
    return replace(
        setting,
        name=_driver_parameter(kind, setting.name),
        description=f"{kind}: {setting.description}",
        items=setting.item_type,
    )


PARAMETERS: tuple[Setting, ...] = (
    *COMMON,
    ROBOT_SYMBOL,
    Setting("driver", "sim", "Robot driver: sim (kinematic simulator) or spot_ros2", choices=DRIVER_KINDS),
    MAP_FRAME,
    Setting("start_place", "", "Place symbol the robot starts at (recorded in the database); '' keeps the record"),
    Setting("start_robot_at_launch", False,
            "Claim, power on and stand the robot when the node starts (else when the first plan starts)"),
    Setting("step_timeout_s", 60.0, "Time limit of every step, seconds", minimum=0.1),
    Setting("timeout_per_metre_s", 2.0, "Extra time a walk gets per metre of path, seconds", minimum=0.0),
    Setting("max_replans", 2, "Replans allowed after failed steps before a plan fails", minimum=0, maximum=20),
    PLANNER_TIMEOUT,
    SNAPSHOT_WAIT,
    Setting("max_plan_steps", 200, "Most steps a plan may have; a longer one is rejected", minimum=1, maximum=100000),
    Setting("max_plan_path_m", 5000.0, "Longest total walk a plan may ask for, metres; a longer one is rejected",
            minimum=0.001),
    Setting("plan_tolerance_m", 1.0,
            "Farthest a plan's target or waypoint may be from where the database has its symbol, metres "
            "(also how near an object a pick without a named place needs the robot)", minimum=0.001),
    Setting("plan_max_hop_m", MAX_HOP_M,
            "Farthest a walk may go between two points no edge of the place graph joins (from the robot onto the "
            "graph, or between a 3D place and its mesh place), metres; a plan with a longer hop is rejected",
            minimum=0.001, maximum=1000.0),
    CLIENT_LOST,
    *(
        _driver_spec(kind, setting)
        for kind, table in DRIVER_SETTINGS.items()
        for setting in table
        if setting.name not in _FROM_STATE
    ),
)
#: The driver parameters (read by :func:`driver_settings`, not fields of :class:`DispatcherSettings`).
DRIVER_PARAMETER_NAMES = frozenset(name for names in DRIVER_PARAMETERS.values() for name in names)


@dataclass(frozen=True)
class DispatcherSettings(NodeSettings):
    """The node's own parameters, checked (the driver's: :func:`driver_settings`)."""

    robot_symbol: str
    driver: str
    map_frame: str
    start_place: str
    start_robot_at_launch: bool
    step_timeout_s: float
    timeout_per_metre_s: float
    max_replans: int
    planner_timeout_s: float
    snapshot_wait_s: float
    max_plan_steps: int
    max_plan_path_m: float
    plan_tolerance_m: float
    plan_max_hop_m: float
    client_lost_s: float

    def __post_init__(self) -> None:
        """ConfigError naming the parameter for anything the library refuses."""
        for name in ("robot_symbol", "map_frame"):
            if not getattr(self, name).strip():
                raise ConfigError(f"parameter {name} must not be empty")
        if self.start_place:
            try:
                check_symbol(self.start_place)
            except ExecutionError as exc:
                raise ConfigError(f"parameter start_place: {exc}") from exc

    @property
    def dispatch(self) -> DispatchConfig:
        """What the plan runner is given: the steps' time limits, the replans, the plan limits."""
        return DispatchConfig(
            step_timeout_s=self.step_timeout_s,
            timeout_per_metre_s=self.timeout_per_metre_s,
            max_replans=self.max_replans,
            limits=PlanLimits(
                max_steps=self.max_plan_steps,
                max_path_length_m=self.max_plan_path_m,
                tolerance_m=self.plan_tolerance_m,
                max_hop_m=self.plan_max_hop_m,
            ),
        )


def driver_settings(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every driver kind's settings from the parameter ``values``, checked by the driver factory whichever driver
    is chosen (robot-state settings not included)."""
    checked: dict[str, dict[str, Any]] = {}
    for kind, names in DRIVER_PARAMETERS.items():
        kind_values = checked_settings(kind, {setting: values[param] for param, setting in names.items()})
        checked[kind] = {name: value for name, value in kind_values.items() if name not in _FROM_STATE}
    return checked
