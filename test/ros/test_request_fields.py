"""The bound of every request field, at its edge and one past it (the nodes' own tests send them over DDS)."""
from __future__ import annotations

import math
from typing import Any

import pytest

from heracles_ros.ros.request_fields import (
    DEFAULT_CHANGES,
    LIMITS,
    MAX_CHANGES,
    MAX_PLAN_WAYPOINTS,
    MAX_SINCE_S,
    answer_type_problem,
    at_problem,
    changes_limit,
    plan_problem,
    resume_problem,
    since_problem,
    text_problem,
)


@pytest.mark.parametrize("field", sorted(LIMITS))
def test_each_text_field_is_taken_up_to_its_limit_and_refused_one_past_it_naming_both(field: str) -> None:
    limit = LIMITS[field]
    assert text_problem(**{field: "x" * limit}) == ""
    assert text_problem(**{field: "x" * (limit + 1)}) == (
        f"{field} is {limit + 1:,} characters long; at most {limit:,} are taken")


@pytest.mark.parametrize("field", ["command_id", "session", "client_node", "id", "room", "action", "operator_name",
                                   "answer_type"])
@pytest.mark.parametrize("control", ["\n", "\r", "\x1b", "\x00", "\x7f", "\x85", "\u2028", "\u2029", "\u202e",
                                     "\ud800"])
def test_ids_and_names_are_one_printable_line(field: str, control: str) -> None:
    assert text_problem(**{field: f"ana{control}x"}) == (
        f"{field} must be one line of printable characters (it holds a control character)")


@pytest.mark.parametrize("field", ["instruction", "question", "reason"])
def test_free_text_may_span_lines(field: str) -> None:
    assert text_problem(**{field: "first line\nsecond line"}) == ""


def test_an_unknown_field_name_is_a_programming_error() -> None:
    with pytest.raises(KeyError):
        text_problem(operator="ana")


@pytest.mark.parametrize(("answer_type", "problem"), [
    ("", ""), ("number", ""), (" set[string] ", ""), ("dict[list[point]]", ""),
    ("vector", "answer_type: unknown SLDP type 'vector': expected one of string, number, point, list, set, dict"),
    ("number[string]", "answer_type: bad SLDP type 'number[string]': only list, set and dict take an element type"),
    ("set[", "answer_type: bad SLDP type 'set['"),
    ("list[" * 12 + "x" + "]" * 12, "answer_type is 73 characters long; at most 64 are taken"),
])
def test_answer_type_is_a_type_the_checker_knows(answer_type: str, problem: str) -> None:
    assert answer_type_problem(answer_type).startswith(problem) and bool(answer_type_problem(answer_type)) == bool(
        problem)


@pytest.mark.parametrize("since_s", [0.0, -3600.0, 1_700_000_000.0, MAX_SINCE_S, -MAX_SINCE_S])
def test_since_s_within_its_range_is_taken(since_s: float) -> None:
    assert since_problem(since_s) == ""


@pytest.mark.parametrize("since_s", [math.nan, math.inf, -math.inf, MAX_SINCE_S * 1.0001, -1.7e308])
def test_since_s_not_finite_or_past_its_range_is_refused(since_s: float) -> None:
    assert since_problem(since_s) == (
        f"since_s must be a finite number of seconds within ±{MAX_SINCE_S:g} (epoch seconds, or <= 0: "
        f"seconds before now), got {since_s!r}")


@pytest.mark.parametrize("at_s", [0.0, -600.0, 1.8e9, -1e10, 1e10])
def test_at_s_now_ago_or_epoch_within_its_range_is_taken(at_s: float) -> None:
    assert at_problem(at_s) == ""


@pytest.mark.parametrize("at_s", [math.nan, math.inf, -math.inf, 1.0000001e10, -2e10])
def test_at_s_not_finite_or_past_its_range_is_refused_naming_it(at_s: float) -> None:
    assert at_problem(at_s).startswith("at_s must be a finite number of seconds")


def test_the_changes_limit_defaults_and_is_capped() -> None:
    assert changes_limit(0) == (DEFAULT_CHANGES, "")
    assert changes_limit(1) == (1, "")
    assert changes_limit(MAX_CHANGES) == (MAX_CHANGES, "")
    assert changes_limit(2**32 - 1) == (0, f"limit is {2**32 - 1:,}; at most {MAX_CHANGES:,} events are returned "
                                           "at once (ask again from a later since_s)")


def test_resume_needs_a_name_and_bounds_both_fields() -> None:
    assert resume_problem("ana", "") == ""
    assert resume_problem("ana", "path clear\nchecked twice") == ""
    assert resume_problem("  ", "path clear") == "resume needs the operator's name (who resumes)"
    assert resume_problem("a" * 129, "") == "operator_name is 129 characters long; at most 128 are taken"
    assert resume_problem("ana", "r" * 1001) == "reason is 1,001 characters long; at most 1,000 are taken"
    assert resume_problem("ana\n[WARN] forged", "") == (
        "operator_name must be one line of printable characters (it holds a control character)")


def _plan(steps: int = 2, waypoints: int = 3) -> Any:
    from geometry_msgs.msg import Point
    from heracles_ros.msg import Plan, PlanStep

    return Plan(plan_id="cmd-1-plan", goal="(holding O3)", start_symbol="P0", total_cost=4.0, steps=[
        PlanStep(action="goto", args=["P0", f"P{i + 1}"], target_symbol=f"P{i + 1}", target=Point(x=1.0 * i),
                 waypoints=[Point(x=0.1 * w) for w in range(waypoints)],
                 waypoint_symbols=[f"P{w}" for w in range(waypoints)], cost=1.0)
        for i in range(steps)])


def test_a_plan_the_planner_makes_is_taken() -> None:
    assert plan_problem(_plan()) == ""
    assert plan_problem(_plan(steps=0)) == ""  # an empty plan is the plan check's to judge


@pytest.mark.parametrize(("damage", "problem"), [
    (lambda p: setattr(p, "plan_id", "x" * 257), "plan: plan_id is 257 characters long; at most 256 are taken"),
    (lambda p: setattr(p, "plan_id", "p\nq"), "plan: plan_id must be one line of printable characters"),
    (lambda p: setattr(p, "goal", "(" * 200_001), "plan: goal is 200,001 characters long; at most 200,000"),
    (lambda p: setattr(p, "start_symbol", "P0\x1b[2J"), "plan: start_symbol must be one line"),
    (lambda p: setattr(p, "total_cost", math.nan), "plan: total_cost must be finite, got nan"),
    (lambda p: setattr(p.steps[1], "args", ["P1"] * 17), "plan step 2: 17 arguments; at most 16 are taken"),
    (lambda p: setattr(p.steps[0], "target_symbol", "P" * 300), "plan step 1: symbol is 300 characters long"),
    (lambda p: setattr(p.steps[0], "action", "goto\n"), "plan step 1: action must be one line"),
    (lambda p: p.steps[1].waypoint_symbols.pop(), "plan step 2: 3 waypoints but 2 waypoint_symbols"),
    (lambda p: setattr(p.steps[1].waypoints[2], "y", math.inf), "plan step 2: its target, waypoints and cost must"),
    (lambda p: setattr(p.steps[0].target, "z", -math.inf), "plan step 1: its target, waypoints and cost must"),
    (lambda p: setattr(p.steps[0], "cost", math.nan), "plan step 1: its target, waypoints and cost must"),
])
def test_a_plan_with_a_field_out_of_bounds_is_refused_naming_it(damage: Any, problem: str) -> None:
    plan = _plan()
    damage(plan)
    assert plan_problem(plan).startswith(problem), plan_problem(plan)


def test_a_plan_carries_at_most_its_waypoint_budget() -> None:
    assert plan_problem(_plan(steps=2, waypoints=MAX_PLAN_WAYPOINTS // 2)) == ""
    assert plan_problem(_plan(steps=3, waypoints=MAX_PLAN_WAYPOINTS // 2)) == (
        f"plan: more than {MAX_PLAN_WAYPOINTS:,} waypoints; a plan that long is not one the planner makes")
