"""SLDP (Set, List, Dictionary, Point): the answer language of the reference paper.

Answers to questions are written in SLDP so that they can be checked by a
machine with well-defined equality (paper, appendix B.2): strings match
exactly, numbers within 0.01, points within 0.01 in the l-infinity norm, lists
element by element, sets by mutual inclusion, dicts by equal key sets and equal
values per key.

Syntax (the paper's Listing 1, parsed with lark)::

    bag   O12   "dining table"      string (bare identifier, or quoted)
    3   -2.5   1e3                  number
    POINT(1.0 -2.5 0.3)             point (case-insensitive keyword; commas tolerated)
    [a, b, c]                       list (ordered)
    <a, b, c>                       set (unordered)
    {bag: 2, box: 3}                dict (string keys)

Quoted strings are our extension: scene class names may hold spaces or
hyphens, which the paper's bare ``CNAME`` strings cannot express.

Values are plain Python for primitives and small frozen dataclasses for the
rest: ``str`` (string), ``float`` (number; ``int`` is accepted too),
:class:`Point`, :class:`SldpList`, :class:`SldpSet`, :class:`SldpDict`.
Sets and dicts keep their items in canonical order, so two values that are
the same set or dict are also ``==`` as Python objects and ``to_sldp`` gives
one text for them.

Types for ``check_type`` are the six names of :data:`SLDP_TYPES`, optionally
with an element type for containers: ``set[string]``, ``list[point]``,
``dict[number]`` (the dict's value type).

Our second extension is an answer *kind* beside the values: a clarification,
``CLARIFY("Which bicycle do you mean?", <O3, O7>)``, which asks the operator
back when a request does not pin down what it means (several candidates, or
none: ``<>``). It is read by :func:`parse_clarification`, never by
:func:`parse_sldp`, so a clarification can never pass as a value.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lark import Lark, Token, Transformer, UnexpectedInput, v_args
from lark.exceptions import VisitError

from heracles_ros.errors import AnswerFormatError, ConfigError

SLDP_TYPES = ("string", "number", "point", "list", "set", "dict")
#: Largest absolute difference at which two numbers are equal (paper: epsilon = 0.01).
NUMBER_TOLERANCE = 0.01
#: Largest l-infinity distance at which two points are equal (paper: delta = 0.01).
POINT_TOLERANCE = 0.01
#: Slack for binary floating point, so that 1.01 and 1.00 are still "within 0.01".
_FLOAT_SLACK = 1e-9
#: Limits on one answer, checked before parsing. Parsing, checking and comparing recurse once per
#: nesting level (Python stops near 1,000); real answers nest two or three levels (a dict of sets)
#: and a list of every place of the kilometre-scale scene (~16,000 symbols) is under 150,000 characters.
MAX_SLDP_CHARS = 200_000
MAX_SLDP_DEPTH = 32


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    z: float


@dataclass(frozen=True)
class SldpList:
    items: tuple[SldpValue, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "items", tuple(self.items))


@dataclass(frozen=True)
class SldpSet:
    """Items in canonical order with exact duplicates removed (order and repeats carry no meaning)."""

    items: tuple[SldpValue, ...] = ()

    def __post_init__(self) -> None:
        unique = dict.fromkeys(self.items)
        object.__setattr__(self, "items", tuple(sorted(unique, key=to_sldp)))


@dataclass(frozen=True)
class SldpDict:
    """(key, value) pairs sorted by key; keys are unique strings."""

    items: tuple[tuple[str, SldpValue], ...] = ()

    def __post_init__(self) -> None:
        pairs = tuple(self.items)
        keys = [key for key, _ in pairs]
        for key in keys:
            if not isinstance(key, str):
                raise TypeError(f"SLDP dict keys are strings, got {key!r}")
        seen: set[str] = set()
        repeated: set[str] = set()
        for key in keys:  # a set, not keys.count(): an answer may hold thousands of keys
            (repeated if key in seen else seen).add(key)
        duplicates = sorted(repeated)
        if duplicates:
            raise ValueError(f"duplicate dict key(s): {', '.join(duplicates)}")
        object.__setattr__(self, "items", tuple(sorted(pairs, key=lambda pair: pair[0])))

    def keys(self) -> list[str]:
        return [key for key, _ in self.items]

    def __getitem__(self, key: str) -> SldpValue:
        for k, value in self.items:
            if k == key:
                return value
        raise KeyError(key)

    def __len__(self) -> int:
        return len(self.items)


SldpValue = str | float | Point | SldpList | SldpSet | SldpDict

# --- grammar ----------------------------------------------------------------
_GRAMMAR = r"""
?start: value
?value: string | number | point | list | set | dict
string: CNAME | ESCAPED_STRING | SINGLE_QUOTED
number: SIGNED_NUMBER
point: _POINT "(" number [","] number [","] number ")"
list: "[" [_items] "]"
set: "<" [_items] ">"
_items: value ("," value)*
dict: "{" [_pairs] "}"
_pairs: pair ("," pair)*
pair: string ":" value

_POINT.2: /point(?=\s*\()/i
SINGLE_QUOTED: /'(?:[^'\\]|\\.)*'/

%import common.CNAME
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""

#: Readable names of the grammar's terminals, for error messages.
_TERMINAL_NAMES = {
    "CNAME": "a string",
    "ESCAPED_STRING": "a quoted string",
    "SINGLE_QUOTED": "a quoted string",
    "SIGNED_NUMBER": "a number",
    "_POINT": "POINT(",
    "LSQB": "'['",
    "RSQB": "']'",
    "LESSTHAN": "'<'",
    "MORETHAN": "'>'",
    "LBRACE": "'{'",
    "RBRACE": "'}'",
    "LPAR": "'('",
    "RPAR": "')'",
    "COMMA": "','",
    "COLON": "':'",
    "$END": "the end of the answer",
}

_PARSER = Lark(_GRAMMAR, parser="lalr", maybe_placeholders=True)


@v_args(inline=True)
class _ToValue(Transformer[Token]):
    def string(self, token: Token) -> str:
        text = str(token)
        if token.type == "ESCAPED_STRING":
            try:
                return str(json.loads(text))
            except json.JSONDecodeError as exc:
                raise AnswerFormatError(f"bad escape in quoted string {text} at column {token.column}") from exc
        if token.type == "SINGLE_QUOTED":
            return re.sub(r"\\(.)", r"\1", text[1:-1])
        return text

    def number(self, token: Token) -> float:
        value = float(token)
        if not math.isfinite(value):
            raise AnswerFormatError(f"number {token} at column {token.column} is out of range")
        return value

    def point(self, *parts: float | None) -> Point:
        x, y, z = (part for part in parts if part is not None)
        return Point(x, y, z)

    def list(self, *items: SldpValue | None) -> SldpList:
        return SldpList(tuple(item for item in items if item is not None))

    def set(self, *items: SldpValue | None) -> SldpSet:
        return SldpSet(tuple(item for item in items if item is not None))

    def pair(self, key: str, value: SldpValue) -> tuple[str, SldpValue]:
        return (key, value)

    def dict(self, *pairs: tuple[str, SldpValue] | None) -> SldpDict:
        try:
            return SldpDict(tuple(pair for pair in pairs if pair is not None))
        except ValueError as exc:
            raise AnswerFormatError(str(exc)) from exc


def parse_sldp(text: str) -> SldpValue:
    """Parse one SLDP expression; AnswerFormatError says where and what was wrong."""
    if not text or not text.strip():
        raise AnswerFormatError("empty answer: expected an SLDP expression")
    if len(text) > MAX_SLDP_CHARS:
        raise AnswerFormatError(
            f"answer too long: {len(text):,} characters, at most {MAX_SLDP_CHARS:,} are accepted; "
            "answer with a count or a summary instead of every item"
        )
    _check_depth(text)
    try:
        tree = _PARSER.parse(text)
    except UnexpectedInput as exc:
        raise AnswerFormatError(_syntax_message(text, exc)) from exc
    try:
        value: SldpValue = _ToValue().transform(tree)
    except VisitError as exc:
        if isinstance(exc.orig_exc, AnswerFormatError):
            raise exc.orig_exc from exc
        raise
    return value


_OPENERS = "[<{("
_CLOSERS = "]>})"


def _check_depth(text: str) -> None:
    """AnswerFormatError at the first bracket nested deeper than MAX_SLDP_DEPTH (quoted text skipped)."""
    depth = 0
    quote = ""
    escaped = False
    for index, char in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in _OPENERS:
            depth += 1
            if depth > MAX_SLDP_DEPTH:
                raise AnswerFormatError(
                    f"answer nested too deep: more than {MAX_SLDP_DEPTH} levels of brackets at column {index + 1}"
                )
        elif char in _CLOSERS:
            depth -= 1


def _syntax_message(text: str, exc: UnexpectedInput) -> str:
    names = getattr(exc, "accepts", None) or getattr(exc, "expected", None) or ()
    expected = sorted({_TERMINAL_NAMES.get(name, name) for name in names})
    token = getattr(exc, "token", None)
    if token is not None and token.type == "$END":
        found = "the end of the answer"
    elif token is not None:
        found = repr(str(token))
    else:
        char = getattr(exc, "char", None)
        found = repr(char) if char is not None else "input"
    column = getattr(exc, "column", None)
    where = f"line {exc.line} column {column}" if column not in (None, -1) else "the end"
    message = f"not valid SLDP at {where}: unexpected {found}"
    if expected:
        message += f"; expected {' or '.join(expected)}"
    context = exc.get_context(text, span=30).rstrip("\n") if column not in (None, -1) else ""
    return f"{message}\n{context}" if context else message


# --- clarifications ------------------------------------------------------------
@dataclass(frozen=True)
class Clarification:
    """A question back to the operator, the scene symbols the request could mean (none: nothing matched), and
    what the map lacks when nothing matched and the model names it (the thing a search could go and look for)."""

    question: str
    candidates: tuple[str, ...] = ()
    missing: str = ""


_CLARIFY = re.compile(r"\s*CLARIFY\b(.*)", re.DOTALL | re.IGNORECASE)


def parse_clarification(text: str) -> Clarification | None:
    """``CLARIFY("question", <O3, O7>)``, or ``CLARIFY("question", <>, "fire extinguisher")`` naming what the map
    lacks, as a Clarification; None for any other answer.

    AnswerFormatError when the text starts with CLARIFY but is not that shape.
    """
    match = _CLARIFY.fullmatch(text or "")
    if match is None:
        return None
    shape = ('CLARIFY("your question", <O3, O7>): a quoted question, then the set of candidate symbols (and, '
             'when nothing matched, optionally the quoted thing the map lacks: '
             'CLARIFY("...", <>, "fire extinguisher"))')
    rest = match.group(1).strip()
    if not (rest.startswith("(") and rest.endswith(")")):
        raise AnswerFormatError(f"a clarification is written {shape}")
    try:
        value = parse_sldp("[" + rest[1:-1] + "]")
    except AnswerFormatError as exc:
        raise AnswerFormatError(f"a clarification is written {shape}; {exc}") from exc
    items = value.items if isinstance(value, SldpList) else ()
    question, candidates, missing = (*items, "") if len(items) == 2 else items if len(items) == 3 else ("", None, "")
    if not isinstance(question, str) or not isinstance(candidates, SldpSet | SldpList) or not isinstance(missing, str):
        raise AnswerFormatError(f"a clarification is written {shape}")
    if not question.strip():
        raise AnswerFormatError("a clarification needs a question for the operator")
    if not all(isinstance(c, str) for c in candidates.items):
        raise AnswerFormatError("the candidates of a clarification are scene symbols such as O3")
    if missing.strip() and candidates.items:
        raise AnswerFormatError("a clarification names what the map lacks only when no candidate matched (<>)")
    return Clarification(question.strip(), tuple(dict.fromkeys(str(c) for c in candidates.items)),
                         " ".join(missing.split()))


# --- types ------------------------------------------------------------------
def sldp_type(value: SldpValue) -> str:
    """The SLDP type name of a value (one of :data:`SLDP_TYPES`)."""
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        raise TypeError("booleans are not SLDP values")
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, Point):
        return "point"
    if isinstance(value, SldpList):
        return "list"
    if isinstance(value, SldpSet):
        return "set"
    if isinstance(value, SldpDict):
        return "dict"
    raise TypeError(f"not an SLDP value: {value!r}")


_TYPE_RE = re.compile(r"\s*(\w+)\s*(?:\[(.*)\])?\s*")


def parse_type(spec: str) -> tuple[str, ...]:
    """``"set[string]"`` -> ``("set", "string")``; ConfigError for an unknown type."""
    match = _TYPE_RE.fullmatch(spec)
    if match is None:
        raise ConfigError(f"bad SLDP type {spec!r}: write a type name such as set or set[string]")
    base, inner = match.group(1).lower(), match.group(2)
    if base not in SLDP_TYPES:
        raise ConfigError(f"unknown SLDP type {spec!r}: expected one of {', '.join(SLDP_TYPES)}")
    if inner is None:
        return (base,)
    if base not in ("list", "set", "dict"):
        raise ConfigError(f"bad SLDP type {spec!r}: only list, set and dict take an element type")
    return (base, *parse_type(inner))


def describe_type(spec: str) -> str:
    """Words for a type: ``"set[point]"`` -> ``"a set of points"``."""
    return "a " + _type_words(parse_type(spec))


def _type_words(parts: tuple[str, ...]) -> str:
    words = parts[0]
    for inner in parts[1:]:
        joiner = " whose values are " if words.endswith("dict") else " of "
        words += joiner + inner + "s"
    return words


def check_type(value: SldpValue, expected: str) -> None:
    """Raise AnswerFormatError unless ``value`` has type ``expected`` (e.g. ``number``, ``set[string]``)."""
    _check(value, parse_type(expected), expected)


def _check(value: SldpValue, parts: tuple[str, ...], spec: str, where: str = "") -> None:
    actual = sldp_type(value)
    if actual != parts[0]:
        got = f"a {actual} ({_short(value)})"
        raise AnswerFormatError(f"expected {describe_type(spec)}, got {got}{where}")
    if len(parts) == 1:
        return
    if isinstance(value, SldpDict):
        for key, item in value.items:
            _check(item, parts[1:], spec, f" at key {to_sldp(key)}{where}")
    elif isinstance(value, SldpList):
        for index, item in enumerate(value.items, start=1):
            _check(item, parts[1:], spec, f" at list position {index}{where}")
    elif isinstance(value, SldpSet):
        for item in value.items:
            _check(item, parts[1:], spec, f" in a set{where}")


def _short(value: SldpValue, limit: int = 40) -> str:
    text = to_sldp(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --- canonical text -----------------------------------------------------------
_BARE_STRING = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def to_sldp(value: SldpValue) -> str:
    """The canonical SLDP text of a value (parses back to an equal value)."""
    if isinstance(value, str):
        return value if _BARE_STRING.fullmatch(value) else json.dumps(value, ensure_ascii=False)
    if isinstance(value, Point):
        return f"POINT({_number(value.x)} {_number(value.y)} {_number(value.z)})"
    if isinstance(value, SldpList):
        return "[" + ", ".join(map(to_sldp, value.items)) + "]"
    if isinstance(value, SldpSet):
        return "<" + ", ".join(map(to_sldp, value.items)) + ">"
    if isinstance(value, SldpDict):
        return "{" + ", ".join(f"{to_sldp(k)}: {to_sldp(v)}" for k, v in value.items) + "}"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _number(value)
    raise TypeError(f"not an SLDP value: {value!r}")


def _number(value: float) -> str:
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"SLDP numbers are finite, got {value!r}")
    if number == 0:
        return "0"
    if number.is_integer() and abs(number) < 1e15:
        return str(int(number))
    return repr(number)


def sldp_from_python(value: Any) -> SldpValue:
    """Plain Python data (e.g. database rows) as SLDP: list/tuple -> list, set -> set, dict -> dict."""
    if isinstance(value, bool) or value is None:
        raise TypeError(f"no SLDP form for {value!r}")
    if isinstance(value, str | Point | SldpList | SldpSet | SldpDict):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, Mapping):
        return SldpDict(tuple((str(k), sldp_from_python(v)) for k, v in value.items()))
    if isinstance(value, set | frozenset):
        return SldpSet(tuple(sldp_from_python(v) for v in value))
    if isinstance(value, Iterable):
        return SldpList(tuple(sldp_from_python(v) for v in value))
    raise TypeError(f"no SLDP form for {value!r}")


# --- equality -----------------------------------------------------------------
def sldp_equal(
    a: SldpValue,
    b: SldpValue,
    *,
    number_tolerance: float = NUMBER_TOLERANCE,
    point_tolerance: float = POINT_TOLERANCE,
) -> bool:
    """The paper's equality: exact strings, numbers and points within tolerance, sets by mutual inclusion."""

    def equal(x: SldpValue, y: SldpValue) -> bool:
        if sldp_type(x) != sldp_type(y):
            return False
        if isinstance(x, str):
            return x == y
        if isinstance(x, Point) and isinstance(y, Point):
            return max(abs(x.x - y.x), abs(x.y - y.y), abs(x.z - y.z)) <= point_tolerance + _FLOAT_SLACK
        if isinstance(x, SldpList) and isinstance(y, SldpList):
            return len(x.items) == len(y.items) and all(map(equal, x.items, y.items))
        if isinstance(x, SldpSet) and isinstance(y, SldpSet):
            return _included(x.items, y.items, equal) and _included(y.items, x.items, equal)
        if isinstance(x, SldpDict) and isinstance(y, SldpDict):
            return x.keys() == y.keys() and all(equal(u, v) for (_, u), (_, v) in zip(x.items, y.items, strict=True))
        if isinstance(x, int | float) and isinstance(y, int | float):
            return abs(x - y) <= number_tolerance + _FLOAT_SLACK
        return False

    return equal(a, b)


def _included(part: tuple[SldpValue, ...], whole: tuple[SldpValue, ...], equal: Any) -> bool:
    return all(any(equal(item, other) for other in whole) for item in part)
