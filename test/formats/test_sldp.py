"""SLDP: grammar, canonical text, type enforcement and the paper's equality rules."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from heracles_ros.errors import AnswerFormatError, ConfigError
from heracles_ros.formats.sldp import (
    SLDP_TYPES,
    Point,
    SldpDict,
    SldpList,
    SldpSet,
    SldpValue,
    check_type,
    parse_sldp,
    parse_type,
    sldp_equal,
    sldp_from_python,
    sldp_type,
    to_sldp,
)

# --- strategies -------------------------------------------------------------------
finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9)
strings = st.one_of(
    st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True),
    st.text(min_size=0, max_size=8),  # quoted: spaces, digits first, unicode, quotes, backslashes
)
primitives = st.one_of(strings, finite, st.builds(Point, finite, finite, finite))


def _dicts(children: st.SearchStrategy[SldpValue]) -> st.SearchStrategy[SldpDict]:
    return st.dictionaries(strings, children, max_size=4).map(lambda d: SldpDict(tuple(d.items())))


values: st.SearchStrategy[SldpValue] = st.recursive(
    primitives,
    lambda children: st.one_of(
        st.lists(children, max_size=4).map(lambda items: SldpList(tuple(items))),
        st.lists(children, max_size=4).map(lambda items: SldpSet(tuple(items))),
        _dicts(children),
    ),
    max_leaves=12,
)


# --- parsing --------------------------------------------------------------------------
@given(values)
def test_canonical_text_parses_back_to_the_same_value(value: SldpValue) -> None:
    text = to_sldp(value)
    assert parse_sldp(text) == value
    assert to_sldp(parse_sldp(text)) == text


@given(values)
def test_equality_is_reflexive_and_holds_after_a_round_trip(value: SldpValue) -> None:
    assert sldp_equal(value, value)
    assert sldp_equal(value, parse_sldp(to_sldp(value)))


@given(values, values)
def test_equality_is_symmetric(a: SldpValue, b: SldpValue) -> None:
    assert sldp_equal(a, b) == sldp_equal(b, a)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", 3.0),
        ("-2.5e1", -25.0),
        ("+0.5", 0.5),
        ("O12", "O12"),
        ('"dining table"', "dining table"),
        ("'it\\'s'", "it's"),
        ("POINT(1 -2 3.5)", Point(1, -2, 3.5)),
        ("point( 1, 2, 3 )", Point(1, 2, 3)),  # case and commas tolerated
        ("  [ a , b ]  ", SldpList(("a", "b"))),
        ("<b, a, b>", SldpSet(("a", "b"))),
        ("{box: 3, bag: 2}", SldpDict((("bag", 2.0), ("box", 3.0)))),
        ("<point, x>", SldpSet(("point", "x"))),  # "point" is an ordinary string unless "(" follows
        ("{hallway: <O1, O2>, lounge: <>}", SldpDict((("hallway", SldpSet(("O1", "O2"))), ("lounge", SldpSet()))),),
        ("[]", SldpList()),
        ("{}", SldpDict()),
    ],
)
def test_parses_the_papers_syntax(text: str, expected: SldpValue) -> None:
    assert parse_sldp(text) == expected


def test_paper_example_answers_parse_to_their_types() -> None:
    counts = parse_sldp("{SEATING: 22, SIGN: 8, STORAGE: 15, FOOD: 1, BAG: 1}")
    assert isinstance(counts, SldpDict) and counts["SEATING"] == 22
    trash = parse_sldp("<POINT(-18.70 -4.21 0.12), POINT(-19.22 -4.42 0.03)>")
    check_type(trash, "set[point]")
    check_type(parse_sldp("28"), "number")
    check_type(parse_sldp("O59"), "string")


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "empty answer"),
        ("[1, 2", "expected ',' or ']'"),
        ("<1 2>", "column 4: unexpected '2'; expected ',' or '>'"),
        ("{a 1}", "expected ':'"),
        ("{1: 2}", "unexpected '1'"),
        ("{a: 1, a: 2}", "duplicate dict key(s): a"),
        ("POINT(1 2)", "unexpected ')'"),
        ("bag bag", "expected the end of the answer"),
        ("1e999", "out of range"),
        ('"\\q"', "bad escape"),
        ("<1, 2]", "expected '>'"),
    ],
)
def test_malformed_answers_name_the_problem(text: str, fragment: str) -> None:
    with pytest.raises(AnswerFormatError) as info:
        parse_sldp(text)
    assert fragment in str(info.value)


# --- types ----------------------------------------------------------------------------
def test_types_of_values() -> None:
    assert [sldp_type(parse_sldp(t)) for t in ("a", "1", "POINT(0 0 0)", "[]", "<>", "{}")] == list(SLDP_TYPES)


@pytest.mark.parametrize(
    ("text", "expected", "message"),
    [
        ("[1, 2]", "number", "expected a number, got a list ([1, 2])"),
        ("<a, 1>", "set[string]", "expected a set of strings, got a number (1) in a set"),
        ("{a: [1], b: [x]}", "dict[list[number]]", "got a string (x) at list position 1 at key b"),
        ("7", "string", "expected a string, got a number (7)"),
    ],
)
def test_check_type_names_expected_and_actual(text: str, expected: str, message: str) -> None:
    with pytest.raises(AnswerFormatError) as info:
        check_type(parse_sldp(text), expected)
    assert message in str(info.value)


def test_check_type_accepts_matching_values() -> None:
    check_type(parse_sldp("<O1, O2>"), "set")
    check_type(parse_sldp("<O1, O2>"), "set[string]")
    check_type(parse_sldp("<>"), "set[point]")  # empty containers satisfy any element type
    check_type(parse_sldp("{a: POINT(1 2 3)}"), "dict[point]")


@pytest.mark.parametrize("spec", ["integer", "number[string]", "set[", "", "list[foo]"])
def test_unknown_type_names_are_config_errors(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse_type(spec)


# --- equality -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        ("1.0", "1.01", True),  # within epsilon = 0.01
        ("1.0", "1.02", False),
        ("POINT(0 0 0)", "POINT(0.01 -0.01 0.005)", True),  # l-infinity within delta = 0.01
        ("POINT(0 0 0)", "POINT(0.011 0 0)", False),
        ("bag", "Bag", False),  # strings match exactly
        ('bag', '"bag"', True),
        ("[a, b]", "[b, a]", False),  # lists are ordered
        ("<a, b>", "<b, a, a>", True),  # sets: mutual inclusion
        ("<a, b>", "<a>", False),
        ("<1, 1.005>", "<1>", True),  # mutual inclusion under tolerance
        ("{a: 1, b: <x>}", "{b: <x>, a: 1.001}", True),
        ("{a: 1}", "{a: 1, b: 2}", False),
        ("{a: 1}", "{A: 1}", False),
        ("<O1>", "O1", False),  # different types never match
        ("[1]", "<1>", False),
        ("3", "three", False),
    ],
)
def test_paper_equality_rules(a: str, b: str, equal: bool) -> None:
    assert sldp_equal(parse_sldp(a), parse_sldp(b)) is equal


@given(st.lists(strings, max_size=6), st.randoms())
def test_sets_ignore_order_and_repeats(items: list[str], rnd: object) -> None:
    shuffled = list(items) + list(items[:2])
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert sldp_equal(SldpSet(tuple(items)), SldpSet(tuple(shuffled)))
    assert SldpSet(tuple(items)) == SldpSet(tuple(shuffled))


@given(finite, st.floats(min_value=0.0101, max_value=1e3))
def test_numbers_beyond_tolerance_differ(x: float, delta: float) -> None:
    assert not sldp_equal(x, x + delta)
    assert sldp_equal(x, x + 0.009)


def test_from_python_converts_database_rows() -> None:
    value = sldp_from_python({"hallway": ["O1", 2], "lounge": {"O3"}})
    assert value == SldpDict((("hallway", SldpList(("O1", 2.0))), ("lounge", SldpSet(("O3",)))))
    with pytest.raises(TypeError):
        sldp_from_python(None)


# -- clarifications --------------------------------------------------------------------------
def test_a_clarification_is_a_question_and_a_set_of_candidates():
    from heracles_ros.formats.sldp import Clarification, parse_clarification

    assert parse_clarification('CLARIFY("Which bicycle do you mean?", <O3, O7, O3>)') == Clarification(
        "Which bicycle do you mean?", ("O3", "O7"))
    assert parse_clarification("clarify ( 'None is in the kitchen; which room?' , <> )") == Clarification(
        "None is in the kitchen; which room?", ())
    assert parse_clarification('CLARIFY("Which one?", [O7, O3])').candidates == ("O7", "O3")
    for answer in ("O3", "<O3, O7>", '"CLARIFY"', "(holding O3)"):  # any other answer is not one
        assert parse_clarification(answer) is None


@pytest.mark.parametrize("text, message", [
    ("CLARIFY", "a clarification is written CLARIFY"),
    ('CLARIFY("Which one?")', "a clarification is written CLARIFY"),
    ('CLARIFY(<O3, O7>, "Which one?")', "a clarification is written CLARIFY"),
    ('CLARIFY("", <O3>)', "needs a question"),
    ('CLARIFY("Which one?", <1, 2>)', "candidates of a clarification are scene symbols"),
    ('CLARIFY("Which one?", <O3, O7)', "not valid SLDP"),
])
def test_a_malformed_clarification_says_what_is_wrong(text, message):
    from heracles_ros.formats.sldp import parse_clarification

    with pytest.raises(AnswerFormatError, match=message):
        parse_clarification(text)


def test_a_clarification_never_parses_as_a_value():
    with pytest.raises(AnswerFormatError):
        parse_sldp('CLARIFY("Which one?", <O3, O7>)')

def test_limits_give_one_line_errors_not_recursion_errors() -> None:
    from heracles_ros.formats.sldp import MAX_SLDP_CHARS, MAX_SLDP_DEPTH

    at_limit = "[" * MAX_SLDP_DEPTH + "1" + "]" * MAX_SLDP_DEPTH
    assert to_sldp(parse_sldp(at_limit)) == at_limit
    for deep in ("[" + at_limit + "]", "[" * 500 + "]" * 500, "{a: " * 400 + "1" + "}" * 400):
        with pytest.raises(AnswerFormatError, match=f"answer nested too deep: more than {MAX_SLDP_DEPTH} levels"):
            parse_sldp(deep)
    quoted = "[" * (MAX_SLDP_DEPTH + 5)
    assert parse_sldp(f'["{quoted}", 1]') == SldpList((quoted, 1.0))  # brackets in quotes do not nest
    with pytest.raises(AnswerFormatError, match="answer too long"):
        parse_sldp("[" + "1, " * MAX_SLDP_CHARS + "1]")


_SLDP_PIECES = st.sampled_from(
    ["[", "]", "<", ">", "{", "}", "(", ")", ",", ":", "POINT", "point(", "1", "-2.5", "1e999", "O1", '"a b"',
     "'c'", '"', "'", "\\", " ", "\n", "é"]
)


@settings(max_examples=500, deadline=None)
@given(st.lists(_SLDP_PIECES, max_size=60).map("".join) | st.text(max_size=200))
def test_fuzz_any_text_parses_or_gives_an_answer_format_error(text: str) -> None:
    try:
        value = parse_sldp(text)
    except AnswerFormatError as exc:
        assert str(exc)
        return
    assert sldp_equal(parse_sldp(to_sldp(value)), value)  # canonical text parses back
