"""Make untrusted read-only Cypher safe to hand to FalkorDB's parser.

FalkorDB 4.16 aborts the *whole server* (signal 6 in ``cypher_fparse``) on a
comment next to the dot of a procedure name (``CALL db./**/labels()``,
``CALL db.// x``), and ``GRAPH.RO_QUERY`` does not protect against it. A fuzz
of the tool's input (platform.md) found no other crasher: every one had a
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

from heracles_ros.errors import QueryRefused

#: FalkorDB procedures that ignore the query timeout and can spin forever (measured on 4.16 with
#: relDirection 'both': adjacent or disconnected nodes never return), so they are not run at all.
_HANGING_PROCEDURES = re.compile(r"algo\.s[ps]paths", re.IGNORECASE)

_QUOTES = "'\"`"


def sanitize_read_query(text: str) -> str:
    """``text`` without comments; QueryRefused for what the server cannot safely take."""
    if "\x00" in text:
        raise QueryRefused("the query contains a NUL character; remove it")
    kept: list[str] = []
    skeleton: list[str] = []  # code outside literals, for the procedure check
    i, n = 0, len(text)
    while i < n:
        char = text[i]
        if char in _QUOTES:
            end = _literal_end(text, i)
            if end < 0:
                what = "name" if char == "`" else "string"
                raise QueryRefused(f"unterminated {what} starting at column {i + 1}: add the closing {char}")
            kept.append(text[i:end])
            if char == "`":
                skeleton.append(text[i + 1 : end - 1])
            i = end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise QueryRefused(f"unterminated /* comment starting at column {i + 1}: add */ or remove it")
            kept.append(" ")
            i = end + 2
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        else:
            kept.append(char)
            if not char.isspace():
                skeleton.append(char)
            i += 1
    if _HANGING_PROCEDURES.search("".join(skeleton)):
        raise QueryRefused(
            "algo.SPpaths / algo.SSpaths are not allowed: on FalkorDB they can run forever, ignoring the timeout. "
            "Use a bounded variable-length match instead."
        )
    return "".join(kept)


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
