"""Goal analysis of the compact problem builder (no database needed)."""
from __future__ import annotations

from heracles_ros.language.goal_ast import Atom
from heracles_ros.language.pddl_goal import parse_goal
from heracles_ros.planning.problem import avoidance_groups, positive_symbols, render_goal


def test_goal_without_forbidden_visits_is_one_unchanged_group() -> None:
    expr = parse_goal("(or (holding O1) (and (safe O2) (not (in-room R1))))")
    [group] = avoidance_groups(expr)
    assert group.goal == expr and group.avoid == frozenset()


def test_same_forbidden_room_everywhere_keeps_the_goal() -> None:
    expr = parse_goal("(and (not (visited-room R1)) (or (visited-place P1) (visited-place P2)))")
    [group] = avoidance_groups(expr)
    assert group.goal == expr and group.avoid == {Atom("visited-room", ("R1",))}


def test_disjuncts_forbidding_different_things_split() -> None:
    expr = parse_goal(
        "(or (holding O43) (and (visited-room R2) (not (visited-room R1))) (not (and (visited-place P3))))"
    )
    groups = {g.avoid: g.goal for g in avoidance_groups(expr)}
    assert set(groups) == {
        frozenset(),
        frozenset({Atom("visited-room", ("R1",))}),
        frozenset({Atom("visited-place", ("P3",))}),
    }
    assert str(groups[frozenset()]) == "(holding O43)"
    assert str(groups[frozenset({Atom("visited-room", ("R1",))})]) == "(and (not (visited-room R1)) (visited-room R2))"


def test_self_contradicting_disjunct_is_dropped() -> None:
    expr = parse_goal("(or (and (visited-place P1) (not (visited-place P1))) (and (safe O1) (not (visited-room R3))))")
    [group] = avoidance_groups(expr)
    assert group.avoid == {Atom("visited-room", ("R3",))}


def test_positive_symbols_and_safe_names() -> None:
    expr = parse_goal("(and (object-in-place O1 P12) (not (visited-room R1)) (not (not (at-place p12))))")
    assert positive_symbols(expr) == ["O1", "P12", "p12"]
    assert render_goal(expr) == "(and (object-in-place o1 mp12) (not (visited-room r1)) (not (not (at-place p3d12))))"
