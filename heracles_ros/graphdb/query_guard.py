"""Make untrusted read-only Cypher safe to hand to FalkorDB's parser.

FalkorDB 4.16 aborts the *whole server* (signal 6 in ``cypher_fparse``) on a
comment next to the dot of a procedure name (``CALL db./**/labels()``,
``CALL db.// x``), and ``GRAPH.RO_QUERY`` does not protect against it. A fuzz
of the tool's input (docs/known-issues.md#falkordb-comment-crash) found no other crasher: every one had a
comment. So comments are removed outside string literals and backtick names,
with the same lexical rules as the server's parser (backslash escapes in
quotes; a backtick name ends at the next backtick), and text the two lexers
could read differently (an unterminated comment, string or name, a NUL that
the server would cut the text at) is refused.

Procedures that ignore the query timeout are refused too, by their name with
comments, whitespace, backticks and case taken out.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from heracles_ros.errors import QueryRefused

#: docs/known-issues.md#falkordb-sppaths
#: FalkorDB procedures that ignore the query timeout and can spin forever (measured on 4.16 with
#: relDirection 'both': adjacent or disconnected nodes never return), so they are not run at all.
_HANGING_PROCEDURES = re.compile(r"algo\.s[ps]paths", re.IGNORECASE)

_QUOTES = "'\"`"

#: Limits of a model-written query (see QueryLimits); chosen from ``heracles bench cypher-parse``.
#: docs/known-issues.md#falkordb-parser-backtracking
MAX_LENGTH = 8000
MAX_TOKENS = 2000
MAX_DEPTH = 12
#: 2 ** 17: at most about 0.1 s of parsing on a 2-core machine, at 0.4-0.8 µs per unit (16 expressions 12 levels
#: deep weigh 0.2 M and parse in 0.1 s, 64 of them 0.8 M and 0.3-0.6 s); one expression 12 levels deep weighs
#: 12-94 k (a CASE the most), the eval's gold queries 66-177.
MAX_WORK = 1 << 17


def sanitize_read_query(text: str) -> str:
    """``text`` without comments; QueryRefused for what the server cannot safely take."""
    if "\x00" in text:
        raise QueryRefused("the query contains a NUL character; remove it")
    kept: list[str] = []
    skeleton: list[str] = []  # code outside literals, for the procedure check
    for kind, piece in _segments(text):
        if kind == _COMMENT:
            kept.append(" " if piece.startswith("/*") else "")
            continue
        kept.append(piece)
        if kind == _NAME:
            skeleton.append(piece[1:-1])
        elif kind == _CODE and not piece.isspace():
            skeleton.append(piece)
    if _HANGING_PROCEDURES.search("".join(skeleton)):
        raise QueryRefused(
            "algo.SPpaths / algo.SSpaths are not allowed: on FalkorDB they can run forever, ignoring the timeout. "
            "Use a bounded variable-length match instead."
        )
    return "".join(kept)


@dataclass(frozen=True)
class QueryLimits:
    """How large a model-written query may be (defaults: measured, see ``heracles bench cypher-parse``)."""

    #: Characters of query text.
    max_length: int = MAX_LENGTH
    #: Tokens: words, numbers, literals, and each other character outside literals and comments.
    max_tokens: int = MAX_TOKENS
    #: Expression levels open at once (see :func:`check_model_query`).
    max_depth: int = MAX_DEPTH
    #: Nesting work: the sum over the tokens of 2 ** (levels open at the token), what the parser's time follows.
    max_work: int = MAX_WORK


#: The limits model-written queries get unless a caller names others.
MODEL_QUERY_LIMITS = QueryLimits()


def check_model_query(text: str, limits: QueryLimits = MODEL_QUERY_LIMITS) -> None:
    """QueryRefused, naming the limit and the value, for a query too large or too deep to send to a server.

    Both backends. FalkorDB's parser backtracks: its time doubles with each
    level of expression nesting, outside the query time limit, and long or
    deep expressions exhaust its stack; no model question needs either.
    Measured, each of these is one level and they add up: a bracket ``( [ {``
    (closed by its own kind), a ``NOT``, a sign ``-``/``+``, a ``CASE``.
    ``NOT toBoolean(NOT toBoolean(true))`` is four levels: a prefix operator's
    scope runs on through the call, subscript or bracket that follows it. So
    a ``NOT`` counts until ``AND``, ``OR``, ``XOR`` or ``,`` (it binds looser
    than comparisons and arithmetic), a sign until the next other operator
    (it binds tighter; a ``-`` after a number, string or closing bracket is
    that operator, after a name it counts), both across brackets; a ``CASE`` until its enclosing
    bracket closes (``end`` may also be a variable's name, so ``END`` is not
    trusted to close it). Over-counting is the safe side: only an under-count
    would let a slow query by.

    Deep expressions side by side add up (76 of 12 levels parse in 0.5 s), so
    the nesting *work* is bounded too: each token weighs 2 to the power of the
    levels open at it, as the parser's time doubles per level.
    """
    if len(text) > limits.max_length:
        raise QueryRefused(
            f"the query is {len(text):,} characters long, over the limit of {limits.max_length:,}; "
            "ask for less at once (several shorter queries, or a list parameter with UNWIND)"
        )
    shape = measure_query(text)
    tokens, deepest, deepest_at = shape.tokens, shape.deepest, shape.deepest_at
    if tokens > limits.max_tokens:
        raise QueryRefused(
            f"the query has {tokens:,} tokens, over the limit of {limits.max_tokens:,}; "
            "ask for less at once (several shorter queries, or a list parameter with UNWIND)"
        )
    if deepest > limits.max_depth:
        raise QueryRefused(
            f"nesting depth {deepest} exceeds the limit of {limits.max_depth} (brackets, CASE, NOT and signs "
            f"open at once; the deepest at column {deepest_at}): the database's parser slows down "
            "exponentially with nesting. Flatten the expression: drop redundant brackets and signs, or compute "
            "parts in WITH steps"
        )
    if shape.work > limits.max_work:
        raise QueryRefused(
            f"nesting work {shape.work:,} exceeds the limit of {limits.max_work:,} (each token weighs 2 to the "
            "number of brackets, CASE, NOT and signs open at it): the database's parser slows down exponentially "
            "with nesting, and nested expressions side by side add up. Flatten the expressions, or compute parts in "
            "WITH steps"
        )


@dataclass(frozen=True)
class QueryShape:
    """What the guard counts in a query: its tokens, its deepest nesting (and where), and its nesting work."""

    tokens: int
    deepest: int
    deepest_at: int
    #: The sum over its tokens of 2 ** (the levels open at the token): the parser's backtracking doubles per level.
    work: int


def measure_query(text: str) -> QueryShape:
    """The :class:`QueryShape` of ``text`` (see :func:`check_model_query` for what counts as a level)."""
    frames: list[_Frame] = [_Frame("", 0)]
    nots = signs = deepest = deepest_at = tokens = work = 0
    word: list[str] = []
    after_value = False  # the last token was a number, a string or a closing bracket: a sign is binary
    for kind, piece, column in _positioned(text + " "):
        if kind == _CODE and (piece.isalnum() or piece in "_$"):
            word.append(piece)
            continue
        if word:  # a word just ended
            tokens += 1
            name, word = "".join(word).upper(), []
            after_value = name[0].isdigit()  # after a name (or a keyword) a sign still counts
            if name == "NOT":
                nots += 1
            elif name in _ENDS_NOT:
                nots = signs = 0
            elif name == "CASE":  # the prefixes before it stay counted as long as the CASE
                frames[-1].levels += nots + signs + 1
                nots = signs = 0
        elif kind == _COMMENT or piece.isspace():
            continue
        if kind == _CODE and not piece.isspace():
            tokens += 1
            value, after_value = after_value, piece in _CLOSERS
            if piece in "-+":
                signs = 0 if value else signs + 1  # ``1 - -1``: the first ends an operand, the second nests
            elif piece in _OPENERS:
                frames.append(_Frame(_CLOSERS[_OPENERS.index(piece)], frames[-1].levels + nots + signs + 1,
                                     nots, signs))
                nots = signs = 0
            elif piece == frames[-1].closer:
                closed = frames.pop()
                nots, signs = closed.nots, closed.signs  # ``NOT f(x)[0]``: the prefixes go on after it
            elif piece == ",":
                nots = signs = 0
            elif piece not in ".:":
                signs = 0  # another operator: a sign's operand ended (NOT's goes on)
        elif kind != _CODE and kind != _COMMENT:
            tokens += 1
            after_value = True
        level = frames[-1].levels + nots + signs
        work += 1 << min(level, 62)
        deepest, deepest_at = _deeper(level, column, deepest, deepest_at)
    return QueryShape(tokens, deepest, deepest_at, work)


#: Words that end the operand of a NOT (it binds tighter than they do).
_ENDS_NOT = frozenset({"AND", "OR", "XOR"})


def _deeper(level: int, column: int, deepest: int, deepest_at: int) -> tuple[int, int]:
    return (level, column) if level > deepest else (deepest, deepest_at)


@dataclass
class _Frame:
    """An open bracket: the character that closes it, the levels open inside it, the prefixes before it."""

    closer: str
    levels: int
    nots: int = 0
    signs: int = 0


_CODE, _STRING, _NAME, _COMMENT = "code", "string", "name", "comment"
_OPENERS = "([{"
_CLOSERS = ")]}"


def _segments(text: str) -> Iterator[tuple[str, str]]:
    """``(kind, text)`` pieces: one code character, a whole string, backtick name or comment."""
    for kind, piece, _column in _positioned(text):
        yield kind, piece


def _positioned(text: str) -> Iterator[tuple[str, str, int]]:
    """Lexes like FalkorDB's parser: backslash escapes in quotes, a backtick name ends at the next backtick.

    Raises QueryRefused for an unterminated string, name or block comment (the lexers could disagree).
    """
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in _QUOTES:
            end = _literal_end(text, i)
            if end < 0:
                what = "name" if char == "`" else "string"
                raise QueryRefused(f"unterminated {what} starting at column {i + 1}: add the closing {char}")
            yield (_NAME if char == "`" else _STRING), text[i:end], i + 1
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise QueryRefused(f"unterminated /* comment starting at column {i + 1}: add */ or remove it")
            yield _COMMENT, text[i : end + 2], i + 1
            i = end + 2
        elif text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            yield _COMMENT, text[i:end], i + 1
            i = end
        else:
            yield _CODE, char, i + 1
            i += 1


def _literal_end(text: str, start: int) -> int:
    """Index just past the literal opened at ``start``, or -1 when it never closes."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        char = text[i]
        if char == "\\" and quote != "`":
            i += 2
            continue
        if char == quote:
            return i + 1
        i += 1
    return -1
