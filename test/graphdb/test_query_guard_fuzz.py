"""The query guard against FalkorDB's own lexer and parser: what the guard lets through parses at once.

Generated queries nest brackets, CASE and NOT just under and over the limit, with literals and
comments that hide brackets, quotes and backslashes from one lexer but not the other (escaped
quotes, a string ending in a backslash, backtick names, ``//`` and ``/*`` in strings, brackets
in comments, a variable named ``end``). Whatever the guard admits must get its answer or its
error from the real server well within a client-side bound: had the guard mis-lexed a literal
and under-counted, the server's parser would take seconds to hours (time doubles per level).
"""
from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from heracles_ros.embedded.process import ServerInfo
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.errors import QueryError, QueryRefused
from heracles_ros.graphdb.falkordb_store import FalkorStore
from heracles_ros.graphdb.query_guard import MODEL_QUERY_LIMITS, check_model_query

LIMIT = MODEL_QUERY_LIMITS.max_depth
#: What a query the guard admits may take, parse included (measured worst: ~0.1 s; see bench cypher-parse).
BOUND_S = 2.0

_OPEN = {"(": ")", "[": "]", "{a: ": "}", "abs(": ")", "CASE WHEN true THEN ": " END", "NOT ": "", "- ": "",
         "NOT toBoolean(": ")"}
#: Pieces that one lexer could read as a literal or comment and the other as code.
_TRICKS = [
    "'a'", "'it\\'s'", "'\\\\'", "'\\\\' + '('", '"say \\"(\\""', "\"'\"", "'\"'", "'//'", "'/*'", "'*/'",
    "'(((('", "'))))'", "\"[[[[\"", "'{{'", "`a`", "`((((`", "`a\\`", "`'`", "`\"`", "`//`",
    "/* ((((( */ 1", "/* ' */ 1", "/* \" */ 1", "/* ` */ 1", "1 // ((((\n", "1 // '\n", "1 // `\n", "end",
]
_TAILS = ["", "'", '"', "`", "/*", "\\", "(((((((((((((", "NOT NOT NOT NOT NOT NOT NOT", ")))))"]


@st.composite
def nested_queries(draw: st.DrawFn) -> str:
    """``RETURN <nesting around a literal> AS x``, depth near the limit, tricks at every level."""
    # Just under or at the limit, or so far over it that parsing would take seconds to hours if admitted.
    depth = draw(st.one_of(st.integers(LIMIT - 3, LIMIT + 1), st.integers(LIMIT + 10, LIMIT + 14)))
    openers = draw(st.lists(st.sampled_from(sorted(_OPEN)), min_size=depth, max_size=depth))
    parts, closers = [], []
    for opener in openers:
        trick = draw(st.sampled_from(["", *_TRICKS]))
        parts.append(opener + (f"{trick}, " if trick and opener.endswith(("(", "[")) else ""))
        closers.append(_OPEN[opener])
    core = draw(st.sampled_from(["1", "true", *_TRICKS]))
    tail = draw(st.sampled_from(_TAILS))
    prefix = draw(st.sampled_from(["", "WITH 1 AS end ", "/* ( */ ", "// ((\n"]))
    return prefix + "RETURN " + "".join(parts) + core + "".join(reversed(closers)) + tail + " AS x"


#: Literals that end at a different place for a lexer that gets escapes or quotes wrong.
_SMUGGLERS = ["'\\''", '"\\""', "'\\\\'", "'a\\'b'", "`a'`", "`a\"`", "'`'", "\"`\"", "'/*'", "'//'",
              "/* ' */", "/* \" */", "/* ` */"]


@st.composite
def smuggled_queries(draw: st.DrawFn) -> str:
    """Nesting far past the limit between two literals that a mistaken lexer could read as one."""
    depth = draw(st.integers(LIMIT + 10, LIMIT + 14))
    openers = draw(st.lists(st.sampled_from(["(", "[", "{a: "]), min_size=depth, max_size=depth))
    inner = "".join(openers) + "1" + "".join(_OPEN[o] for o in reversed(openers))
    first, last = draw(st.sampled_from(_SMUGGLERS)), draw(st.sampled_from(_SMUGGLERS))
    return f"RETURN [{first}, {inner}, {last}] AS x"


#: Prefix operators before a call, subscript or bracket: two levels each for the parser.
_PREFIXED = ["NOT toBoolean(", "- abs(", "NOT (", "NOT [", "- (", "NOT NOT (", "CASE WHEN true THEN -abs("]


@st.composite
def prefixed_queries(draw: st.DrawFn) -> str:
    """Chains of prefix operators each followed by a call or bracket, up to the limit counted in pairs."""
    pairs = draw(st.integers(LIMIT // 2 - 1, LIMIT))
    openers = draw(st.lists(st.sampled_from(_PREFIXED), min_size=pairs, max_size=pairs))
    closers = [(" END" if o.startswith("CASE") else "") + ("]" if o.endswith("[") else ")") for o in openers]
    return "RETURN " + "".join(openers) + "1" + "".join(reversed(closers)) + " AS x"


@pytest.fixture(scope="module")
def parser_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedServer, ServerInfo]]:
    server = EmbeddedServer(tmp_path_factory.mktemp("guardfuzz"))
    info = server.ensure_started()
    FalkorStore(info.host, info.port, graph="fuzz").write("CREATE (:A {a: 1})")  # a query on no graph is not parsed
    try:
        yield server, info
    finally:
        server.stop(timeout_s=2.0)


# No shrinking: every attempt at a query the guard wrongly admits would itself take seconds to hours.
@settings(max_examples=200, deadline=None, phases=[Phase.explicit, Phase.reuse, Phase.generate],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(query=st.one_of(nested_queries(), smuggled_queries(), prefixed_queries()))
def test_what_the_guard_admits_the_server_parses_within_the_bound(
    parser_server: tuple[EmbeddedServer, ServerInfo], query: str
) -> None:
    server, info = parser_server
    try:
        check_model_query(query)
    except QueryRefused:
        return  # never sent
    # The server's own limit and the client's bound: an admitted query that overran fails here.
    store = FalkorStore(info.host, info.port, graph="fuzz", timeout_s=BOUND_S)
    started = time.monotonic()
    try:
        store.query_capped(query, max_rows=5, timeout_s=BOUND_S)
    except QueryRefused:
        pass  # refused by the comment sanitizer (e.g. an unterminated literal): not sent either
    except QueryError:
        pass  # a syntax or type error: parsed, and answered at once
    finally:
        store.close()
    took = time.monotonic() - started
    assert took < BOUND_S, f"{took:.1f} s for {query!r}"
    alive = server.running()
    assert alive is not None and alive.pid == info.pid, f"server died on {query!r}"
