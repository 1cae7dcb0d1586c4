"""Walking left and its estimated time, on a hand-made plan whose distances are worked out by hand.

The plan, from the robot at (0, 0): walk to P1 through (3, 0) and (3, 4) (3 + 4 = 7 m), pick O1, walk
to P2 at (0, 4) (3 m), place O1, walk to P3 through (0, 4) (where it stands: 0 m) and (0, 0) (4 m).
"""
from __future__ import annotations

import math

import pytest

from heracles_ros.execution.remaining import (
    NOT_KNOWN,
    UNKNOWN,
    Remaining,
    SpeedBasis,
    SpeedMeter,
    WalkProgress,
    estimate,
    later_walks_m,
)
from heracles_ros.plan_types import PlanAction


def goto(symbol: str, *points: tuple[float, float]) -> PlanAction:
    waypoints = tuple((x, y, 0.0) for x, y in points)
    return PlanAction("goto", ("", symbol), symbol, waypoints[-1], waypoints)


PLAN = [
    goto("P1", (3, 0), (3, 4)),
    PlanAction("pick", ("O1", "P1"), "O1", (3.0, 4.5, 0.0)),
    goto("P2", (0, 4)),
    PlanAction("place", ("O1", "P2"), "O1", (0.0, 4.5, 0.0)),
    goto("P3", (0, 4), (0, 0)),
]


@pytest.mark.parametrize(("first", "start", "metres"), [
    (0, (0.0, 0.0, 0.0), 7 + 3 + 4),
    (1, (3.0, 4.0, 0.0), 3 + 4),  # the pick does not move the robot
    (2, (3.0, 4.0, 0.0), 3 + 4),
    (3, (0.0, 4.0, 0.0), 4),
    (4, (0.0, 4.0, 0.0), 4),
    (5, (0.0, 0.0, 0.0), 0),
    (2, (3.0, 0.0, 0.0), 5 + 4),  # a robot off its plan walks from where it is: (3, 0) to (0, 4) is 5 m
])  # fmt: skip
def test_later_walks_add_every_goto_from_where_the_one_before_ends(first, start, metres):
    assert later_walks_m(PLAN, first, start) == pytest.approx(metres)


@pytest.mark.parametrize(("position", "metres"), [
    ((0.0, 0.0, 0.0), 7.0),
    ((1.5, 0.0, 0.0), 5.5),
    ((3.0, 0.0, 0.0), 4.0),
    ((3.0, 2.0, 0.0), 2.0),
    ((3.0, 4.0, 0.0), 0.0),
    ((1.5, 0.5, 0.0), math.hypot(1.5, 0.5) + 4),  # beside the path: straight to the segment's end
    ((3.0, 2.0, 9.0), 2.0),  # height does not count
])  # fmt: skip
def test_a_walk_has_left_the_rest_of_its_path_from_the_robot(position, metres):
    assert WalkProgress((0.0, 0.0, 0.0), PLAN[0]).remaining_m(position) == pytest.approx(metres)


def test_a_walk_is_not_walked_backwards_where_its_path_passes_twice():
    """Out along y = 0 to x = 4, back along y = 0.2: 4 + 0.2 + 4 = 8.2 m."""
    there_and_back = goto("P9", (4, 0), (4, 0.2), (0, 0.2))
    fresh = WalkProgress((0.0, 0.0, 0.0), there_and_back)
    assert fresh.remaining_m((1.0, 0.05, 0.0)) == pytest.approx(math.hypot(3, 0.05) + 0.2 + 4)  # on the way out
    walked = WalkProgress((0.0, 0.0, 0.0), there_and_back)
    assert walked.remaining_m((4.0, 0.1, 0.0)) == pytest.approx(0.1 + 4)
    assert walked.remaining_m((1.0, 0.05, 0.0)) == pytest.approx(math.hypot(1, 0.15))  # on the way back
    assert walked.end == (0.0, 0.2, 0.0)


def test_the_measured_speed_is_the_fall_of_the_distance_over_the_window():
    meter = SpeedMeter(window_s=2.0, min_span_s=0.5)
    assert meter.speed_mps() is None
    meter.add(0.0, 10.0)
    meter.add(0.25, 9.5)
    assert meter.speed_mps() is None  # 0.25 s is too short to tell
    meter.add(1.0, 8.0)
    assert meter.speed_mps() == pytest.approx(2.0)
    meter.add(2.0, 7.0)
    meter.add(3.0, 4.0)
    meter.add(4.0, 1.0)  # the window keeps t = 2..4: 6 m in 2 s
    assert meter.speed_mps() == pytest.approx(3.0)
    meter.add(5.0, 1.0)
    meter.add(6.0, 1.0)  # standing since t = 4
    assert meter.speed_mps() == pytest.approx(0.0)
    meter.clear()
    assert meter.speed_mps() is None


@pytest.mark.parametrize(("distance", "measured", "nominal", "expected"), [
    (10.0, 2.0, 0.5, Remaining(10.0, 5.0, SpeedBasis.MEASURED)),
    (10.0, 0.01, 0.5, Remaining(10.0, 20.0, SpeedBasis.NOMINAL)),  # standing: the nominal speed
    (10.0, -1.0, 0.5, Remaining(10.0, 20.0, SpeedBasis.NOMINAL)),  # walking away: the nominal speed
    (10.0, None, 0.5, Remaining(10.0, 20.0, SpeedBasis.NOMINAL)),
    (10.0, None, None, Remaining(10.0, UNKNOWN, SpeedBasis.UNKNOWN)),
    (10.0, 0.0, 0.0, Remaining(10.0, UNKNOWN, SpeedBasis.UNKNOWN)),
    (0.0, None, None, Remaining(0.0, 0.0, SpeedBasis.UNKNOWN)),  # nothing left takes no time
    (UNKNOWN, 2.0, 0.5, NOT_KNOWN),
])  # fmt: skip
def test_the_time_left_divides_by_the_measured_speed_while_walking_else_the_nominal(
    distance, measured, nominal, expected
):
    assert estimate(distance, measured, nominal) == expected
    assert UNKNOWN == -1.0
