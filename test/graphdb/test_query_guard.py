"""What the read path takes out of, or refuses in, query text before FalkorDB's parser sees it."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heracles_ros.errors import QueryError, QueryRefused
from heracles_ros.graphdb.query_guard import (
    MODEL_QUERY_LIMITS,
    QueryLimits,
    check_model_query,
    measure_query,
    sanitize_read_query,
)


@pytest.mark.parametrize(
    ("text", "sent"),
    [
        ("CALL db./**/labels()", "CALL db. labels()"),
        ("CALL db.// x\nlabels()", "CALL db.\nlabels()"),
        ("MATCH (n) /* a */ RETURN n // b", "MATCH (n)   RETURN n "),
        ("RETURN n./* x */name", "RETURN n. name"),
    ],
)
def test_comments_are_removed(text: str, sent: str) -> None:
    assert sanitize_read_query(text) == sent


@pytest.mark.parametrize(
    "text",
    [
        "RETURN 'a /* b */ // c' AS s",
        'RETURN "it\'s /* not */ a comment" AS s',
        "RETURN 'escaped \\' /* still a string' AS s",
        "MATCH (n) RETURN n.`odd /* name */` AS x",
        "MATCH (n) RETURN count(n) AS n",
    ],
)
def test_literals_and_plain_queries_are_left_alone(text: str) -> None:
    assert sanitize_read_query(text) == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("MATCH (n) RETURN n /* open", r"unterminated /\* comment starting at column 20"),
        ("RETURN 'abc", "unterminated string starting at column 8"),
        ('RETURN "abc', "unterminated string"),
        ("RETURN `abc", "unterminated name"),
        ("RETURN 1 AS x\x00 CALL db./**/labels()", "NUL character"),
    ],
)
def test_text_the_two_lexers_could_read_differently_is_refused(text: str, reason: str) -> None:
    with pytest.raises(QueryRefused, match=reason) as caught:
        sanitize_read_query(text)
    assert isinstance(caught.value, QueryError)  # callers that handle query errors handle this one


@pytest.mark.parametrize(
    "text",
    [
        "CALL algo.SPpaths({})",
        "CALL ALGO . sppaths({})",
        "CALL algo./**/SPpaths({})",
        "CALL algo.// hidden\nSSpaths({})",
        "CALL `algo`.`SPpaths`({})",
        "CALL `algo.SSpaths`({})",
    ],
)
def test_hanging_procedures_are_refused_however_written(text: str) -> None:
    with pytest.raises(QueryRefused, match=r"algo\.SPpaths / algo\.SSpaths are not allowed"):
        sanitize_read_query(text)


def test_procedure_names_inside_strings_are_just_text() -> None:
    text = "RETURN 'algo.SPpaths' AS name"
    assert sanitize_read_query(text) == text


_PIECES = st.sampled_from(
    ["/*", "*/", "//", "\n", "'", '"', "`", "\\", "a", " ", ".", "x", "RETURN ", "CALL db.", "labels()"]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=20).map("".join))
def test_what_is_sent_has_no_comment_outside_literals(text: str) -> None:
    """Fuzz: either refused with a reason, or the result re-sanitizes to itself (no comment left)."""
    try:
        sent = sanitize_read_query(text)
    except QueryRefused as exc:
        assert str(exc)
        return
    assert sanitize_read_query(sent) == sent


# --- size and nesting of a model-written query -------------------------------------------------
def _nested(depth: int, opener: str = "(", closer: str = ")") -> str:
    return "RETURN " + opener * depth + "1" + closer * depth + " AS x"


def test_the_deepest_nesting_allowed_passes_and_one_more_level_is_refused() -> None:
    limit = QueryLimits().max_depth
    check_model_query(_nested(limit))
    with pytest.raises(QueryRefused, match=rf"nesting depth {limit + 1} exceeds the limit of {limit} ") as caught:
        check_model_query(_nested(limit + 1))
    assert "column" in str(caught.value) and "Flatten" in str(caught.value)


@pytest.mark.parametrize(("opener", "closer"), [("(", ")"), ("[", "]"), ("{a:", "}")])
def test_every_kind_of_bracket_counts_and_mixed_kinds_add_up(opener: str, closer: str) -> None:
    limits = QueryLimits(max_depth=4)
    with pytest.raises(QueryRefused, match="nesting depth 5 exceeds the limit of 4"):
        check_model_query(_nested(5, opener, closer), limits)
    with pytest.raises(QueryRefused, match="nesting depth 5 exceeds the limit of 4"):
        check_model_query("RETURN ([{a: " + opener * 2 + "1" + closer * 2 + "}]) AS x", limits)


@pytest.mark.parametrize(
    "inside",
    [
        "'((((((((('",  # a string
        '"[[[[[[[[[ \\" ((((("',  # an escaped quote does not end it
        "'it\\'s (((((((((('",
        "`(((((((((`",  # a backtick name
        "/* (((((((((( */ 1",  # a block comment
        "1 // ((((((((((\n",  # a line comment
    ],
)
def test_brackets_inside_literals_and_comments_do_not_count(inside: str) -> None:
    check_model_query(f"RETURN (({inside})) AS x", QueryLimits(max_depth=2))


def test_closing_brackets_inside_literals_do_not_hide_real_nesting() -> None:
    text = "RETURN " + "(')'," * 5 + "1" + ")" * 5 + " AS x"  # each ')' in a string closes nothing
    with pytest.raises(QueryRefused, match="nesting depth 5 exceeds the limit of 4"):
        check_model_query(text, QueryLimits(max_depth=4))


def test_length_is_limited_before_anything_else_is_read() -> None:
    limit = QueryLimits().max_length
    check_model_query("RETURN '" + "x" * (limit - 14) + "' AS x")
    text = "RETURN '" + "x" * (limit - 13) + "' AS x"
    with pytest.raises(QueryRefused, match=rf"is {len(text):,} characters long, over the limit of {limit:,}"):
        check_model_query(text)
    # An unterminated string past the limit is refused for its length, without lexing megabytes.
    with pytest.raises(QueryRefused, match="characters long"):
        check_model_query("RETURN '" + "(" * 10_000_000)


def test_tokens_are_limited_literals_counting_once() -> None:
    limit = QueryLimits().max_tokens
    ok = "RETURN 1" + "+1" * ((limit - 4) // 2) + " AS x"  # RETURN, 1, then + and 1 per term, AS, x
    check_model_query(ok)
    with pytest.raises(QueryRefused, match=rf"has {limit + 2:,} tokens, over the limit of {limit:,}"):
        check_model_query(ok + "+1")
    check_model_query("RETURN '" + "+1" * (limit // 2) + "' AS x")  # one string literal: one token


def test_words_and_numbers_are_one_token_each() -> None:
    text = "MATCH (abc:Object) RETURN abc.nodeSymbol AS s"  # MATCH ( abc : Object ) RETURN abc . nodeSymbol AS s
    check_model_query(text, QueryLimits(max_tokens=12))
    with pytest.raises(QueryRefused, match="has 12 tokens, over the limit of 11"):
        check_model_query(text, QueryLimits(max_tokens=11))


def test_unterminated_literals_are_refused_by_the_check_too() -> None:
    with pytest.raises(QueryRefused, match="unterminated string"):
        check_model_query("RETURN 'abc")


@pytest.mark.parametrize(
    ("text", "levels"),
    [
        ("RETURN " + "NOT " * 5 + "true AS x", 5),  # a NOT chain nests
        ("RETURN " + "- " * 5 + "1 AS x", 5),  # so does a chain of signs
        ("RETURN " + "NOT (" * 3 + "true" + ")" * 3 + " AS x", 6),  # and they add up with brackets
        ("RETURN " + "CASE WHEN true THEN " * 5 + "1" + " END" * 5 + " AS x", 5),
        ("RETURN -1 - 1 - 1 - 1 - 1 - 1 AS x", 1),  # binary operators do not nest, the leading sign does
        ("RETURN " + "NOT toBoolean(" * 3 + "true" + ")" * 3 + " AS x", 6),  # a NOT's scope runs into the call
        ("RETURN " + "- abs(" * 3 + "1" + ")" * 3 + " AS x", 6),  # a sign's too
        ("RETURN " + "NOT (true)[" * 3 + "0" + "]" * 3 + " AS x", 6),  # and on after a bracket it closed
        ("RETURN " + "NOT 1 = NOT 1 = " * 2 + "(((1))) AS x", 7),  # comparisons stay in a NOT's scope
        ("RETURN " + "CASE WHEN true THEN -" * 3 + "1" + " END" * 3 + " AS x", 6),
        ("MATCH (a) WHERE NOT a.x AND NOT a.y AND NOT a.z RETURN a", 1),
        ("MATCH (a)-[:R]->(b)<-[:R]-(c) RETURN c", 2),  # an arrow after a node is no sign; ``<-`` counts one
    ],
)
def test_prefix_operators_and_case_are_levels_too(text: str, levels: int) -> None:
    check_model_query(text, QueryLimits(max_depth=levels))
    with pytest.raises(QueryRefused, match=f"nesting depth {levels} exceeds the limit of {levels - 1}"):
        check_model_query(text, QueryLimits(max_depth=levels - 1))


def test_a_variable_named_end_does_not_close_a_case() -> None:
    """FalkorDB reads ``end`` where an expression is expected as a variable, so END never lowers the count."""
    text = "WITH 1 AS end RETURN " + "CASE WHEN end THEN " * 5 + "1" + " END" * 5 + " AS x"
    with pytest.raises(QueryRefused, match="nesting depth 5 exceeds the limit of 4"):
        check_model_query(text, QueryLimits(max_depth=4))


def test_a_closing_bracket_of_another_kind_closes_nothing() -> None:
    text = "RETURN " + "(]" * 5 + "1" + ")" * 5 + " AS x"
    with pytest.raises(QueryRefused, match="nesting depth 5 exceeds the limit of 4"):
        check_model_query(text, QueryLimits(max_depth=4))


@pytest.mark.parametrize("depth", range(1, 14))
def test_nesting_work_doubles_per_level(depth: int) -> None:
    """Each token weighs 2 to the levels open at it: ``RETURN (((1))) AS x`` is 1 + 2 + 4 + 8 + 4 + 2 + 1 + 1 + 1."""
    assert measure_query(_nested(depth)).work == 3 * 2**depth


def _side_by_side(copies: int, depth: int = 12) -> str:
    return "RETURN " + ", ".join(f"{'(' * depth}1{')' * depth} AS x{i}" for i in range(copies))


def test_deep_expressions_side_by_side_add_up_to_the_work_limit() -> None:
    """71 expressions 12 levels deep fit the token limit (76 joined by +: 0.5 s to parse on an idle machine, 1.0-1.7 s
    on a busy one); the work limit admits 10 (0.1 s at most)."""
    limit = MODEL_QUERY_LIMITS.max_work
    assert limit == 2**17
    assert measure_query(_side_by_side(71)).tokens <= MODEL_QUERY_LIMITS.max_tokens
    check_model_query(_side_by_side(10))
    work = measure_query(_side_by_side(11)).work
    assert 11 * 3 * 2**12 - 11 <= work <= 11 * 3 * 2**12 + 11 * 3  # the copies, their commas and names
    with pytest.raises(QueryRefused, match=rf"^nesting work {work:,} exceeds the limit of {limit:,} \(each token"):
        check_model_query(_side_by_side(11))


def test_work_is_checked_with_the_caller_s_limit() -> None:
    check_model_query(_nested(4), QueryLimits(max_work=48))
    with pytest.raises(QueryRefused, match="nesting work 48 exceeds the limit of 47"):
        check_model_query(_nested(4), QueryLimits(max_work=47))
