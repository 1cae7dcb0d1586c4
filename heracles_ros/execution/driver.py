"""The one interface every robot driver implements (simulator, Spot over spot_ros2).

The dispatcher only ever talks to a :class:`RobotDriver`: it hands over one
self-contained :class:`~heracles_ros.plan_types.PlanAction` at a time with a
cancel token and a time limit, and gets a typed :class:`StepOutcome` back. A
driver never raises for an ordinary failure of the robot (blocked path, missed
grasp): those are outcomes the dispatcher recovers from by replanning.
:class:`~heracles_ros.errors.DriverError` is for a driver that cannot work at
all (missing packages, driver node absent).
"""
from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

from heracles_ros.outcomes import DriverOutcome
from heracles_ros.plan_types import PlanAction, Point3

#: Actions a driver must carry out (the PDDL domain's action names).
ACTIONS: tuple[str, ...] = ("goto", "inspect", "pick", "place")
#: Wall-clock seconds of walking a driver hands the robot at a time, renewed while the step runs: a controller
#: that dies, hangs or loses the robot leaves it standing within this (as Spot's own e-stop heartbeat would).
COMMAND_HORIZON_S = 1.0


@dataclass(frozen=True)
class Pose:
    """Robot body pose in the map frame the plan's positions use."""

    x: float
    y: float
    z: float = 0.0
    yaw: float = 0.0

    @property
    def position(self) -> Point3:
        return (self.x, self.y, self.z)

    def distance_to(self, point: Point3) -> float:
        """Planar distance to ``point`` (height differs between places and the body)."""
        return math.hypot(point[0] - self.x, point[1] - self.y)

    def bearing_to(self, point: Point3) -> float:
        """Heading from the body to ``point`` (the current heading when right above it)."""
        dx, dy = point[0] - self.x, point[1] - self.y
        return math.atan2(dy, dx) if math.hypot(dx, dy) > 1e-6 else self.yaw


def goto_path(action: PlanAction) -> tuple[list[Point3], list[str]]:
    """The points a goto walks through (its waypoints, else its target) and their place symbols.

    Symbols are "" where the plan gave none, except the final target's, so every
    driver can say which place it last reached.
    """
    points = list(action.waypoints) or [action.target]
    if len(action.waypoint_symbols) == len(points):
        return points, list(action.waypoint_symbols)
    return points, [""] * (len(points) - 1) + [action.target_symbol]


@dataclass(frozen=True)
class StepOutcome:
    """How one action ended, and where the robot is now."""

    outcome: DriverOutcome
    pose: Pose
    reason: str = ""
    #: Last place symbol the robot is known to have reached during this step
    #: ("" when it reached none): where a replan starts after a broken goto.
    reached_symbol: str = ""

    @property
    def ok(self) -> bool:
        return self.outcome is DriverOutcome.SUCCEEDED


class CancelToken:
    """Thread-safe request to stop, with the reason reported to the operator."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._reason = ""

    def cancel(self, reason: str = "cancelled") -> None:
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    @property
    def reason(self) -> str:
        return self._reason

    def wait(self, timeout_s: float) -> bool:
        """Sleep up to ``timeout_s``; True as soon as cancel is requested."""
        return self._event.wait(max(0.0, timeout_s))


#: Called with the robot's pose while a step runs (from the driver's thread).
FeedbackCallback = Callable[[Pose], None]


class RobotDriver(ABC):
    """Carries out plan actions on one robot."""

    #: Short name for logs and parameters ("sim", "spot_ros2").
    name: str = ""

    @abstractmethod
    def start(self) -> None:
        """Bring the robot to a state where it can execute actions (claim, power, stand)."""

    @abstractmethod
    def shutdown(self) -> None:
        """Stop motion and release what :meth:`start` acquired; safe to call twice."""

    @abstractmethod
    def stop(self, *, hard: bool = False) -> None:
        """Stop all motion now, whatever runs; bounded, callable from any thread, safe to call twice.

        ``hard``: the robot's gentle e-stop where it has one (settles, then cuts motor power).
        """

    @abstractmethod
    def pose(self) -> Pose:
        """Latest known body pose in the map frame."""

    def wait_pose(self, timeout_s: float) -> Pose | None:
        """The robot's real pose in the map frame, waiting up to ``timeout_s`` for it; None if it never came.

        Needs no :meth:`start` (a real robot reports its pose unclaimed), so the
        robot's record can be set from where it really is before anything moves.
        """
        return self.pose()

    def nominal_speed_mps(self) -> float | None:
        """Walking speed in metres per wall-clock second the driver expects (time estimates); None: no figure."""
        return None

    @abstractmethod
    def execute(
        self,
        action: PlanAction,
        *,
        cancel: CancelToken,
        timeout_s: float,
        feedback: FeedbackCallback | None = None,
    ) -> StepOutcome:
        """Run one action to its end; return promptly after ``cancel`` or ``timeout_s``.

        Blocks the calling (worker) thread, never an executor callback.
        """
