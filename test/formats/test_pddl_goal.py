"""The PDDL goal grammar and name mapping, without a database."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heracles_ros.domain import load_domain
from heracles_ros.errors import GoalError
from heracles_ros.formats.goal_ast import And, Atom, Not, Or, symbols
from heracles_ros.formats.pddl_goal import from_pddl_name, parse_goal, static_problems, to_pddl_name
from heracles_ros.schema import Layer


def test_keywords_are_case_insensitive_and_symbols_kept_exactly() -> None:
    expr = parse_goal("(OR (HOLDING O43) (And (VISITED-ROOM R2) (nOt (visited-room R1)) (at-place p12)))")
    assert expr == Or(
        (
            Atom("holding", ("O43",)),
            And((Atom("visited-room", ("R2",)), Not(Atom("visited-room", ("R1",))), Atom("at-place", ("p12",)))),
        )
    )
    assert symbols(expr) == ["O43", "R2", "R1", "p12"]


def test_nesting_whitespace_and_comments() -> None:
    text = """
    (and ; bring the bag
      (object-in-place O1 P3)
      (or (safe O2)
          (not (not (visited-place P12)))))
    """
    expr = parse_goal(text)
    assert isinstance(expr, And)
    assert expr.items[1] == Or((Atom("safe", ("O2",)), Not(Not(Atom("visited-place", ("P12",))))))
    assert str(parse_goal(str(expr))) == str(expr)


def test_predicate_named_like_a_keyword_prefix_is_an_atom() -> None:
    assert parse_goal("(orange O1)") == Atom("orange", ("O1",))
    assert parse_goal("(note O1)") == Atom("note", ("O1",))


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty goal"),
        ("(visited-place P1", "goal ends early at column 18: missing ')'"),
        ("(and (safe O1) (  \n", "goal ends early at column 17: missing ')'"),
        ("(visited-place P1))", "unexpected ')' at column 19"),
        ("(holding O$1)", "unexpected character '$' at column 11"),
        ("()", "unexpected ')' at column 2"),
        ("(and)", "unexpected ')' at column 5"),
        ("(not (safe O1) (safe O2))", "unexpected '(' at column 16"),
        ("and (safe O1)", "unexpected 'and' at column 1"),
        ("(safe O1) (safe O2)", "unexpected '(' at column 11"),
        ("(and (safe O1)\n (holding O2 ]))", "line 2, column 14"),
    ],
)
def test_syntax_errors_name_the_token_and_position(text: str, fragment: str) -> None:
    with pytest.raises(GoalError) as info:
        parse_goal(text)
    assert fragment in str(info.value)
    assert len(info.value.problems) == 1


def test_symbol_names_are_case_safe_and_round_trip() -> None:
    assert [to_pddl_name(s) for s in ("P12", "p12", "O3", "R2", "Q6", "q6")] == [
        "mp12", "p3d12", "o3", "r2", "uq6", "lq6"
    ]
    for symbol in ("P12", "p12", "O3", "R2", "Q6", "q6", "S1", "f2"):
        assert from_pddl_name(to_pddl_name(symbol).upper()) == symbol
    with pytest.raises(GoalError, match="'bag1' is not a scene symbol"):
        to_pddl_name("bag1")
    with pytest.raises(GoalError, match="'x12'"):
        from_pddl_name("x12")
    for malformed in ("O14\n", "O14\r\n", " O14", "O"):  # "$" in a pattern accepts a trailing newline
        with pytest.raises(GoalError, match="not a scene symbol"):
            to_pddl_name(malformed)
    with pytest.raises(GoalError, match="not a PDDL name"):
        from_pddl_name("o14\n")


def test_static_problems_report_everything_at_once() -> None:
    expr = parse_goal("(and (fly O1) (holding O1 O2) (holding P3) (object-in-place O1 R2) (safe bag1) (safe O1))")
    kinds = {"O1": Layer.OBJECT, "O2": Layer.OBJECT, "P3": Layer.MESH_PLACE, "R2": Layer.ROOM}
    problems = static_problems(expr, load_domain(), kinds)
    assert len(problems) == 5
    assert "unknown predicate 'fly'" in problems[0]
    assert problems[1] == "wrong arity in (holding O1 O2): holding takes 1 argument (holding ?o - item), got 2"
    assert "wrong kind in (holding P3)" in problems[2] and "mesh place 'P3'" in problems[2]
    assert "argument 2 of object-in-place" in problems[3] and "room 'R2'" in problems[3]
    assert "'bag1' in (safe bag1) is not a scene symbol" in problems[4]


def test_limits_give_one_line_errors_not_recursion_errors() -> None:
    from heracles_ros.formats.pddl_goal import MAX_GOAL_ATOMS, MAX_GOAL_CHARS, MAX_GOAL_DEPTH

    at_limit = "(and " * (MAX_GOAL_DEPTH - 1) + "(visited-place P1)" + ")" * (MAX_GOAL_DEPTH - 1)
    assert symbols(parse_goal(at_limit)) == ["P1"]
    for deep in (at_limit.replace("(and ", "(and (and ", 1) + ")", "(not " * 5000 + "(safe O1)" + ")" * 5000):
        with pytest.raises(GoalError, match=f"goal nested too deep: more than {MAX_GOAL_DEPTH} levels") as caught:
            parse_goal(deep)
        assert "\n" not in str(caught.value)
    commented = "(and ; ((((((((((((((((((((((((((((((((((((\n (safe O1))"
    assert symbols(parse_goal(commented)) == ["O1"]  # parentheses in comments do not count
    many = "(and " + " ".join(f"(visited-place P{i})" for i in range(MAX_GOAL_ATOMS + 1)) + ")"
    with pytest.raises(GoalError, match=f"goal too large: {MAX_GOAL_ATOMS + 1} atoms, at most {MAX_GOAL_ATOMS}"):
        parse_goal(many)
    with pytest.raises(GoalError, match="goal too long"):
        parse_goal("(safe O1)" + " " * MAX_GOAL_CHARS)


def test_wrong_arity_names_the_arguments_in_the_plural() -> None:
    [problem] = static_problems(parse_goal("(object-in-place O1)"), load_domain())
    assert problem == (
        "wrong arity in (object-in-place O1): object-in-place takes 2 arguments "
        "(object-in-place ?o - item ?p - place), got 1"
    )


def test_the_goal_limits_the_docs_document_are_enforced() -> None:
    limits = (Path(__file__).resolve().parents[2] / "docs" / "limits.md").read_text()
    row = re.search(r"^\| goal text \| ([\d,]+) characters, (\d+) levels of parentheses, (\d+) atoms \|", limits, re.M)
    assert row, "docs/limits.md's Bounded input table has no goal text row"
    chars, depth, atom_count = (int(number.replace(",", "")) for number in row.groups())

    goal = "(safe O1)"
    assert parse_goal(goal + " " * (chars - len(goal))) == Atom("safe", ("O1",))
    with pytest.raises(GoalError) as caught:
        parse_goal(goal + " " * (chars + 1 - len(goal)))
    assert str(caught.value) == f"goal too long: {chars + 1:,} characters, at most {chars:,} are accepted"

    assert symbols(parse_goal("(and " * (depth - 1) + goal + ")" * (depth - 1))) == ["O1"]
    with pytest.raises(GoalError) as caught:
        parse_goal("(" * (depth + 1))
    assert str(caught.value).startswith(
        f"goal nested too deep: more than {depth} levels of parentheses at column {depth + 1}; write it flatter"
    )

    def visits(n: int) -> str:
        return "(and " + " ".join(f"(visited-place P{i})" for i in range(n)) + ")"

    assert len(symbols(parse_goal(visits(atom_count)))) == atom_count
    with pytest.raises(GoalError, match=f"goal too large: {atom_count + 1} atoms, at most {atom_count} are planned"):
        parse_goal(visits(atom_count + 1))


_GOAL_PIECES = st.sampled_from(
    ["(", ")", "and ", "or ", "not ", "safe ", "visited-place ", "O1 ", "P2 ", "p3", "R1", ";", "\n", " ", "-", "é"]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_GOAL_PIECES, max_size=60).map("".join) | st.text(max_size=200))
def test_fuzz_any_text_parses_or_gives_a_goal_error(text: str) -> None:
    try:
        expr = parse_goal(text)
    except GoalError as exc:
        assert exc.problems and all(problem for problem in exc.problems)
        return
    assert parse_goal(str(expr)) == expr  # what parsed prints back to the same goal
