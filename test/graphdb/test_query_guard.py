"""What the read path takes out of, or refuses in, query text before FalkorDB's parser sees it."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heracles_ros.errors import QueryError, QueryRefused
from heracles_ros.graphdb.query_guard import sanitize_read_query


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
