"""How much walking a plan has left and how long it should take, for progress an operator reads at a glance.

Nav2's ``NavigateToPose`` feedback carries ``distance_remaining`` and
``estimated_time_remaining``, both 0 when it cannot tell; here an unknown value
is :data:`UNKNOWN` (-1), so "nothing left" and "no idea" differ. The distance is
planar metres along the plan's waypoints: the rest of the running walk from the
robot's position, then every later walk from where the one before it ends. The
time is that distance over a speed (:func:`estimate`), walking only: picks,
places and inspections are not counted.
"""
from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from heracles_ros.execution.driver import goto_path
from heracles_ros.plan_types import PlanAction, Point3
from heracles_ros.planar import path_length, planar_distance, segment_distance

#: A distance or time that cannot be told (DispatchProgress ``distance_remaining_m`` / ``time_remaining_s``).
UNKNOWN = -1.0


class SpeedBasis(str, Enum):
    """Which speed a time estimate divides by (DispatchProgress ``speed_basis``)."""

    MEASURED = "measured"
    NOMINAL = "nominal"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Remaining:
    """Walking left for a plan: metres, estimated seconds, and the speed the seconds rest on."""

    distance_m: float
    time_s: float
    basis: SpeedBasis


#: Nothing can be told (a replan whose new plan is not known yet).
NOT_KNOWN = Remaining(UNKNOWN, UNKNOWN, SpeedBasis.UNKNOWN)


def later_walks_m(actions: Sequence[PlanAction], first: int, start: Point3) -> float:
    """Metres of every goto from ``actions[first]`` on, each from where the walk before it ends.

    ``start`` is where the robot stands when ``actions[first]`` begins (other actions do not move it).
    """
    total, here = 0.0, start
    for action in actions[first:]:
        if action.name == "goto":
            points = goto_path(action)[0]
            total += path_length([here, *points])
            here = points[-1]
    return total


class WalkProgress:
    """Where the robot is along one goto's path, and the metres left of it.

    The robot is matched to the path segment nearest its position, never one it
    has already left behind (a path passing twice near the same spot is not walked
    backwards); the metres left are from its position to that segment's end, then
    along the path.
    """

    def __init__(self, start: Point3, action: PlanAction):
        self._points: list[Point3] = [start, *goto_path(action)[0]]
        #: _tail[i]: metres of the path from point i to its end.
        self._tail = [path_length(self._points[i:]) for i in range(len(self._points))]
        self._segment = 0

    @property
    def end(self) -> Point3:
        return self._points[-1]

    def remaining_m(self, position: Point3) -> float:
        """Metres left of this walk from ``position``; 0 once at its end."""
        points = self._points
        if len(points) < 2:
            return 0.0
        best, best_d = self._segment, math.inf
        for i in range(self._segment, len(points) - 1):
            d = segment_distance(position, points[i], points[i + 1])
            if d < best_d:
                best, best_d = i, d
        self._segment = best
        return planar_distance(position, points[best + 1]) + self._tail[best + 1]


class SpeedMeter:
    """The robot's speed along the plan, from how fast the metres left fell over the last ``window_s``.

    Fed (time, metres left) samples; the speed is the fall from the oldest sample
    in the window to the newest over the time between them, once they are at
    least ``min_span_s`` apart. Standing still (or walking a detour) reads as a
    speed at or below 0.
    """

    def __init__(self, window_s: float = 2.0, min_span_s: float = 0.5):
        self.window_s = window_s
        self.min_span_s = min_span_s
        self._samples: deque[tuple[float, float]] = deque()

    def add(self, t: float, remaining_m: float) -> None:
        self._samples.append((t, remaining_m))
        while len(self._samples) > 2 and t - self._samples[1][0] >= self.window_s:
            self._samples.popleft()

    def clear(self) -> None:
        self._samples.clear()

    def speed_mps(self) -> float | None:
        """Metres per second over the window; None before two samples ``min_span_s`` apart."""
        if len(self._samples) < 2:
            return None
        (t0, d0), (t1, d1) = self._samples[0], self._samples[-1]
        if t1 - t0 < self.min_span_s:
            return None
        return (d0 - d1) / (t1 - t0)


#: Slowest measured speed that counts as walking, m/s; below it the nominal speed is used.
MOVING_MPS = 0.05


def estimate(distance_m: float, measured_mps: float | None, nominal_mps: float | None) -> Remaining:
    """``distance_m`` and the seconds to walk it.

    The speed is the measured one while the robot walks (above :data:`MOVING_MPS`),
    else the driver's nominal speed; with neither, the time is :data:`UNKNOWN`
    (0 still when nothing is left to walk).
    """
    if distance_m < 0:
        return NOT_KNOWN
    if measured_mps is not None and measured_mps > MOVING_MPS:
        speed, basis = measured_mps, SpeedBasis.MEASURED
    elif nominal_mps is not None and nominal_mps > 0:
        speed, basis = nominal_mps, SpeedBasis.NOMINAL
    else:
        return Remaining(distance_m, 0.0 if distance_m == 0 else UNKNOWN, SpeedBasis.UNKNOWN)
    return Remaining(distance_m, distance_m / speed, basis)
