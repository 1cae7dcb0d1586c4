"""Goal analysis of the compact problem builder (no database needed)."""
from __future__ import annotations

import numpy as np
from scipy.sparse import csr_matrix

from heracles_ros.formats.goal_ast import Atom
from heracles_ros.formats.pddl_goal import parse_goal
from heracles_ros.planning.places import PlaceGraph
from heracles_ros.planning.problem import (
    MAX_ROOM_ENTRIES,
    Start,
    avoidance_groups,
    build_problem,
    positive_symbols,
    render_goal,
)
from heracles_ros.schema import Layer


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


def test_a_split_disjunct_lists_its_literals_by_atom_not_by_sign() -> None:
    expr = parse_goal("(or (visited-place P1) (and (not (visited-room R1)) (safe O2) (holding O1)))")
    groups = {g.avoid: g.goal for g in avoidance_groups(expr)}
    assert str(groups[frozenset({Atom("visited-room", ("R1",))})]) == (
        "(and (holding O1) (safe O2) (not (visited-room R1)))"
    )


def test_self_contradicting_disjunct_is_dropped() -> None:
    expr = parse_goal("(or (and (visited-place P1) (not (visited-place P1))) (and (safe O1) (not (visited-room R3))))")
    [group] = avoidance_groups(expr)
    assert group.avoid == {Atom("visited-room", ("R3",))}


def test_positive_symbols_and_safe_names() -> None:
    expr = parse_goal("(and (object-in-place O1 P12) (not (visited-room R1)) (not (not (at-place p12))))")
    assert positive_symbols(expr) == ["O1", "P12", "p12"]
    assert render_goal(expr) == "(and (object-in-place o1 mp12) (not (visited-room r1)) (not (not (at-place p3d12))))"


def rooms_graph() -> PlaceGraph:
    """A corridor P0-P3; room R1, ten places P4..P13 each entered from P3 (P4 nearest); room R2, nine places
    P14..P22 in a chain no walk reaches, its centre at P18."""
    big = MAX_ROOM_ENTRIES + 2
    positions = [(float(i), 0.0, 0.0) for i in range(4)]
    positions += [(3.0, 1.0 + k, 0.0) for k in range(big)]
    positions += [(20.0 + k, 10.0, 0.0) for k in range(MAX_ROOM_ENTRIES + 1)]
    n = len(positions)
    edges = [(i, i + 1, 1.0) for i in range(3)]
    edges += [(3, 4 + k, 1.0 + k) for k in range(big)]
    edges += [(14 + k, 15 + k, 1.0) for k in range(MAX_ROOM_ENTRIES)]
    rows = [a for a, b, _ in edges] + [b for a, b, _ in edges]
    cols = [b for a, b, _ in edges] + [a for a, b, _ in edges]
    weights = [w for _, _, w in edges] * 2
    r1, r2 = np.arange(4, 4 + big), np.arange(14, n)
    room_of = np.array([-1] * 4 + [0] * big + [1] * r2.size)
    return PlaceGraph(
        symbols=[f"P{i}" for i in range(n)], positions=np.array(positions),
        matrix=csr_matrix((weights, (rows, cols)), shape=(n, n)), nav_layer=Layer.MESH_PLACE, nav_count=n,
        room_places={"R1": r1, "R2": r2}, room_boundary={"R1": r1, "R2": np.zeros(0, dtype=np.int64)},
        room_positions={"R1": (3.0, 5.0, 0.0), "R2": (24.0, 10.0, 0.0)}, room_of=room_of, component=np.zeros(n),
    )


def test_a_big_room_is_entered_where_it_is_nearest_and_a_cut_off_one_named_by_its_centre() -> None:
    graph = rooms_graph()
    kinds = {"R1": Layer.ROOM, "R2": Layer.ROOM}
    problem = build_problem(
        graph, parse_goal("(and (visited-room R1) (visited-room R2))"), Start(0), {}, frozenset(), kinds
    )
    assert [graph.symbols[p] for p in problem.places] == ["P0", "P4", "P18"]
    assert "(place-in-room mp4 r1)" in problem.text and "(place-in-room mp18 r2)" in problem.text
