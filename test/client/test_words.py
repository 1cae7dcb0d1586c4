"""The running system's messages in words: the plan as the demo prints it, stamps, the final line."""
from __future__ import annotations

import json
import time

import pytest
from geometry_msgs.msg import Point
from heracles_ros.action import ExecuteCommand
from heracles_ros.msg import DispatchProgress, Plan, PlanStep

from heracles_ros.client.words import (
    duration_words,
    final_line,
    message_dict,
    plan_lines,
    progress_line,
    stamped,
    where_robot_is,
)


def test_a_plan_reads_as_the_demo_prints_it():
    walk = PlanStep(action="goto", args=["P0", "P2"], target_symbol="P2", waypoint_symbols=["P0", "P1", "P2"],
                    waypoints=[Point(x=0.0, y=0.0), Point(x=3.0, y=4.0), Point(x=3.0, y=5.0)])
    pick = PlanStep(action="pick", args=["O3", "P2"], target_symbol="O3")
    assert plan_lines(Plan(steps=[walk, pick])) == [
        "plan: 2 steps, 6.0 m of walking",
        "  1. goto  P0 -> P2  6.0 m through 3 places",
        "  2. pick  O3 at P2",
    ]


def test_the_final_line_says_how_it_ended_where_the_robot_is_and_what_it_holds():
    result = ExecuteCommand.Result(outcome="succeeded", steps_completed=2, robot_place="P2", holding="O3")
    assert final_line(result, Point(x=3.04, y=5.0)) == "succeeded, 2 steps; robot at P2 (3.0, 5.0), holding O3"
    stopped = ExecuteCommand.Result(outcome="cancelled", steps_completed=0, replans=1)
    assert final_line(stopped) == ("cancelled, 0 steps, 1 replans; robot at its start (it had not moved), "
                                   "holding nothing")
    assert where_robot_is("", Point(x=1.0, y=2.0)) == "(1.0, 2.0)"


def test_progress_lines_carry_the_local_time():
    at = time.mktime((2026, 11, 25, 14, 5, 9, 0, 0, -1)) + 0.25
    assert stamped("step 1/2 started", at) == "14:05:09.25 step 1/2 started"


def test_a_message_becomes_plain_json_data():
    plan = Plan(plan_id="p", steps=[PlanStep(action="pick", args=["O3", "P2"], target=Point(x=1.0))])
    data = message_dict(plan)
    assert data["plan_id"] == "p" and data["steps"][0]["args"] == ["O3", "P2"]
    assert data["steps"][0]["target"] == {"x": 1.0, "y": 0.0, "z": 0.0} and data["header"]["frame_id"] == ""
    json.dumps(data)  # nothing left that JSON cannot hold


def walking(distance_m: float, time_s: float, state: str = "walking") -> DispatchProgress:
    return DispatchProgress(step_index=0, step_count=4, state=state, message="walking to P12",
                            robot_position=Point(x=3.04, y=4.06), distance_remaining_m=distance_m,
                            time_remaining_s=time_s, speed_basis="measured")


def test_a_progress_line_says_the_walking_left_and_about_how_long_it_takes():
    assert progress_line(walking(14.24, 11.6)) == (
        "step 1/4 walking    walking to P12 — 14.2 m left, about 12 s  robot (3.0, 4.1)")
    assert progress_line(walking(14.24, -1.0)) == "step 1/4 walking    walking to P12 — 14.2 m left  robot (3.0, 4.1)"
    assert progress_line(walking(0.0, 0.0, "succeeded")) == (
        "step 1/4 succeeded  walking to P12 — no walking left  robot (3.0, 4.1)")
    assert progress_line(walking(-1.0, -1.0, "replanning")) == "step 1/4 replanning walking to P12  robot (3.0, 4.1)"


@pytest.mark.parametrize(("seconds", "words"), [
    (0.4, "0 s"), (59.4, "59 s"), (125.0, "2 min 05 s"), (599.0, "9 min 59 s"), (845.0, "14 min"),
    (3780.0, "1 h 03 min"),
])  # fmt: skip
def test_a_duration_reads_at_a_glance(seconds, words):
    assert duration_words(seconds) == words


def test_the_walking_left_is_plain_json_data():
    data = message_dict(walking(14.24, 11.6))
    assert (data["distance_remaining_m"], data["time_remaining_s"], data["speed_basis"]) == (14.24, 11.6, "measured")
