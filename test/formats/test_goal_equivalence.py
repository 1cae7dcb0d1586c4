"""PDDL goal equivalence: exact, checked against a truth table and with goals too large for one."""
from __future__ import annotations

import itertools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from heracles_ros.formats.goal_ast import And, Atom, GoalExpr, Not, Or, atoms
from heracles_ros.formats.goal_equivalence import (
    describe_difference,
    evaluate,
    goal_difference,
    goals_equivalent,
)

POOL = [Atom("holding", ("O1",)), Atom("holding", ("O2",)), Atom("safe", ("O1",)), Atom("visited-place", ("P3",))]
FRESH = Atom("visited-room", ("R9",))

goals: st.SearchStrategy[GoalExpr] = st.recursive(
    st.sampled_from(POOL),
    lambda children: st.one_of(
        children.map(Not),
        st.lists(children, min_size=1, max_size=3).map(lambda items: And(tuple(items))),
        st.lists(children, min_size=1, max_size=3).map(lambda items: Or(tuple(items))),
    ),
    max_leaves=8,
)


def truth_table(expr: GoalExpr, over: list[Atom]) -> tuple[bool, ...]:
    """The oracle: the goal's value in every one of the 2^n states."""
    return tuple(
        evaluate(expr, {atom for atom, bit in zip(over, bits, strict=True) if bit})
        for bits in itertools.product((False, True), repeat=len(over))
    )


def shuffled(expr: GoalExpr, rnd: random.Random) -> GoalExpr:
    if isinstance(expr, Atom):
        return expr
    if isinstance(expr, Not):
        return Not(shuffled(expr.item, rnd))
    items = [shuffled(item, rnd) for item in expr.items]
    rnd.shuffle(items)
    return type(expr)(tuple(items))


def de_morgan(expr: GoalExpr) -> GoalExpr:
    """Push every negation to the atoms (negation normal form)."""
    if isinstance(expr, Atom):
        return expr
    if isinstance(expr, And | Or):
        return type(expr)(tuple(de_morgan(item) for item in expr.items))
    inner = expr.item
    if isinstance(inner, Atom):
        return expr
    if isinstance(inner, Not):
        return de_morgan(inner.item)
    flipped = Or if isinstance(inner, And) else And
    return flipped(tuple(de_morgan(Not(item)) for item in inner.items))


@settings(max_examples=300)
@given(goals, goals)
def test_agrees_with_the_truth_table(a: GoalExpr, b: GoalExpr) -> None:
    assert goals_equivalent(a, b) == (truth_table(a, POOL) == truth_table(b, POOL))


@given(goals, st.randoms(use_true_random=False))
def test_reordering_conjuncts_and_disjuncts_is_equivalent(goal: GoalExpr, rnd: random.Random) -> None:
    assert goals_equivalent(goal, shuffled(goal, rnd))


@given(goals)
def test_double_negation_and_de_morgan_are_equivalent(goal: GoalExpr) -> None:
    assert goals_equivalent(goal, Not(Not(goal)))
    assert goals_equivalent(Not(goal), de_morgan(Not(goal)))
    assert goals_equivalent(goal, And((goal, goal)))  # idempotence


@given(goals)
def test_an_unrelated_atom_changes_the_goal(goal: GoalExpr) -> None:
    table = truth_table(goal, POOL)
    if any(table):  # satisfiable: requiring one more atom excludes some states
        assert not goals_equivalent(goal, And((goal, FRESH)))
    if not all(table):  # not valid: allowing one more atom admits some states
        assert not goals_equivalent(goal, Or((goal, FRESH)))


@given(goals, goals)
def test_a_difference_is_a_state_where_exactly_one_goal_holds(a: GoalExpr, b: GoalExpr) -> None:
    difference = goal_difference(a, b)
    if difference is None:
        assert goals_equivalent(a, b)
        assert describe_difference(a, b) == ""
        return
    true_atoms = {atom for atom, value in difference.items() if value}
    assert evaluate(a, true_atoms) != evaluate(b, true_atoms)
    assert "goal holds" in describe_difference(a, b)


def test_paper_example_in_text_form() -> None:
    gold = (
        "(OR (HOLDING O43) (AND (VISITED-ROOM R2) (VISITED-ROOM R3) (VISITED-ROOM R4)"
        " (VISITED-ROOM R5) (NOT (VISITED-ROOM R1))))"
    )
    # Same goal, rewritten: disjuncts swapped, conjuncts reordered, the negated room
    # pulled out with De Morgan and distribution over the disjunction.
    rewritten = (
        "(and (or (visited-room R5) (holding O43)) (or (holding O43) (not (or (visited-room R1)"
        " (not (and (visited-room R4) (visited-room R3) (visited-room R2)))))))"
    )
    assert goals_equivalent(gold, rewritten)
    assert not goals_equivalent(gold, "(or (holding O43) (and (visited-room R2) (visited-room R3)))")
    # Symbols are case sensitive: P12 (mesh place) and p12 (3D place) are different nodes.
    assert not goals_equivalent("(visited-place P12)", "(visited-place p12)")
    assert "(holding O43) false" in describe_difference(gold, "(holding O43)")


def test_many_atoms_beyond_any_truth_table() -> None:
    rnd = random.Random(7)
    objects = [Atom("visited-object", (f"O{i}",)) for i in range(80)]
    goal = And(tuple(objects))
    assert goals_equivalent(goal, shuffled(goal, rnd))
    assert goals_equivalent(goal, Not(Or(tuple(Not(atom) for atom in objects))))
    missing_one = And(tuple(objects[:-1]))
    assert not goals_equivalent(goal, missing_one)
    assert goal_difference(goal, missing_one) is not None
    # Pairwise choices, 2^40 states: (or a_i b_i) for 40 pairs in CNF, against the same with
    # each clause's disjuncts swapped.
    pairs = [(Atom("holding", (f"O{i}",)), Atom("safe", (f"O{i}",))) for i in range(40)]
    cnf = And(tuple(Or(pair) for pair in pairs))
    assert goals_equivalent(cnf, And(tuple(Or((b, a)) for a, b in reversed(pairs))))
    assert len(set(atoms(cnf))) == 80


def test_constant_goals() -> None:
    a = POOL[0]
    assert goals_equivalent(Or((a, Not(a))), Or((POOL[1], Not(POOL[1]))))  # both always true
    assert goals_equivalent(And((a, Not(a))), And((POOL[2], Not(POOL[2]))))  # both never true
    assert not goals_equivalent(Or((a, Not(a))), And((a, Not(a))))
