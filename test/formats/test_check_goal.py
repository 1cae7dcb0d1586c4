"""Goal validation against the domain and a live database holding the small synthetic scene."""
from __future__ import annotations

import pytest

from heracles_ros.errors import GoalError
from heracles_ros.formats.goal_ast import Atom
from heracles_ros.formats.pddl_goal import check_goal
from heracles_ros.graphdb.store import GraphStore


def test_valid_goal_returns_the_tree(small_store: GraphStore) -> None:
    expr = check_goal("(AND (object-in-place O1 P55) (visited-place p3) (in-room R2))", small_store)
    assert expr.items[0] == Atom("object-in-place", ("O1", "P55"))  # type: ignore[union-attr]


def test_every_problem_reported_at_once(small_store: GraphStore) -> None:
    goal = (
        "(and (holding O999) (visited-place P55) (visited-place p99) (safe P3) "
        "(teleport R1) (in-room R1 R2) (in-room R77))"
    )
    with pytest.raises(GoalError) as info:
        check_goal(goal, small_store)
    problems = info.value.problems
    assert len(problems) == 6, problems
    text = "\n".join(problems)
    assert "wrong kind in (safe P3)" in text
    assert "unknown predicate 'teleport'" in text
    assert "wrong arity in (in-room R1 R2)" in text
    assert "unknown symbol 'O999' in (holding O999): no node with that symbol" in text
    assert "unknown symbol 'p99' in (visited-place p99): no node" in text
    assert "unknown symbol 'R77'" in text
    assert "P55" not in text


def test_case_of_a_symbol_matters(small_store: GraphStore) -> None:
    check_goal("(visited-place P50)", small_store)  # mesh place 50 exists
    with pytest.raises(GoalError, match=r"unknown symbol 'p50'"):
        check_goal("(visited-place p50)", small_store)  # there are only 16 3D places
