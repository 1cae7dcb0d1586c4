"""``heracles bench cypher-parse``: FalkorDB's cost of a read-only query against how deeply it nests.

FalkorDB 4.16's parser backtracks on nested parenthesised expressions (the
time doubles per level) and its query time limit does not cover parsing; other
deep expressions exhaust the server's stack (
docs/known-issues.md#falkordb-parser-backtracking). For each construct the query is
sent as ``GRAPH.RO_QUERY`` to a throwaway embedded server at growing depths,
each with a client-side cap; a curve stops at the first query that passes the
cap, fails to answer, or takes the server down (which is then killed and
started again). Then the worst cases the query guard lets through are timed:
the deepest query of each construct, and its expressions side by side (as
many as the guard admits, at the depth that admits the most nesting work),
since their parse times add up.
"""
from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from heracles_ros.errors import ConfigError, QueryRefused
from heracles_ros.graphdb.falkordb_stream import run_capped
from heracles_ros.graphdb.query_guard import check_model_query, measure_query

#: Construct -> the query nesting it ``depth`` times.
CONSTRUCTS: dict[str, Callable[[int], str]] = {
    "parentheses": lambda d: "RETURN " + "(" * d + "1" + ")" * d + " AS x",
    "calls": lambda d: "RETURN " + "abs(" * d + "1" + ")" * d + " AS x",
    "lists": lambda d: "RETURN " + "[" * d + "1" + "]" * d + " AS x",
    "maps": lambda d: "RETURN " + "{a:" * d + "1" + "}" * d + " AS x",
    "mixed": lambda d: "RETURN " + "".join(("(", "[", "{a:")[i % 3] for i in range(d)) + "1"
    + "".join(")]}"[i % 3] for i in reversed(range(d))) + " AS x",
    "case": lambda d: "RETURN " + "CASE WHEN true THEN " * d + "1" + " END" * d + " AS x",
    "not": lambda d: "RETURN " + "NOT " * d + "true AS x",
    "plus": lambda d: "RETURN 1" + "+1" * d + " AS x",
    "minus": lambda d: "RETURN " + "- " * d + "1 AS x",
    "not-parentheses": lambda d: "RETURN " + "NOT (" * (d // 2) + "true" + ")" * (d // 2) + " AS x",
    "not-calls": lambda d: "RETURN " + "NOT toBoolean(" * (d // 2) + "true" + ")" * (d // 2) + " AS x",
    "sign-calls": lambda d: "RETURN " + "- abs(" * (d // 2) + "1" + ")" * (d // 2) + " AS x",
    "subscripts": lambda d: "WITH [1] AS l RETURN l" + "[0]" * d + " AS x",
    "properties": lambda d: "WITH {a: 1} AS m RETURN m" + ".a" * d + " AS x",
    "and": lambda d: "RETURN true" + " AND true" * d + " AS x",
    "comparisons": lambda d: "RETURN 1" + " < 2" * d + " AS x",
    "is-null": lambda d: "RETURN 1" + " IS NULL" * d + " AS x",
}
#: Depths tried per construct (a curve stops early at the cap).
PAREN_DEPTHS = tuple(range(1, 41))
GROWING_DEPTHS = tuple(sorted({int(2 ** (k / 2)) for k in range(0, 39)}))  # 1 .. ~370,000
_GRAPH = "parse"


@dataclass(frozen=True)
class Timing:
    depth: int
    seconds: float
    #: ``ok``, ``error: ...`` (the server's answer), ``over cap`` or ``server died``.
    outcome: str

    def brief(self) -> str:
        return f"{self.depth}:{self.seconds:.3g}" + ("" if self.outcome == "ok" else f"({self.outcome})")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--cap-s", type=float, default=3.0,
                        help="client-side limit per query; a curve stops at the first query past it (default: 3)")
    parser.add_argument("--constructs", default=",".join(CONSTRUCTS),
                        help=f"comma-separated subset of {', '.join(CONSTRUCTS)}")


def run(args: argparse.Namespace) -> dict[str, Any]:
    import tempfile

    if not args.cap_s > 0:
        raise ConfigError("--cap-s must be positive")
    names = [n.strip() for n in args.constructs.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONSTRUCTS]
    if unknown or not names:
        raise ConfigError(f"unknown construct(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(CONSTRUCTS)}")
    figures: dict[str, Any] = {"cap_s": args.cap_s}
    with tempfile.TemporaryDirectory(prefix="heracles-bench-parse-") as tmp:
        server = _Server(Path(tmp), args.cap_s)
        try:
            for name in names:
                curve = measure(server, CONSTRUCTS[name], _depths(name), args.cap_s)
                figures[name] = ", ".join(t.brief() for t in curve)
                worst = _deepest_admitted(CONSTRUCTS[name])
                timing = server.time(CONSTRUCTS[name](worst), worst) if worst else None
                figures[f"{name}_admitted"] = (f"{timing.brief()} ({len(CONSTRUCTS[name](worst))} chars)"
                                               if timing else "none")
                beside = _worst_side_by_side(CONSTRUCTS[name], worst) if worst else None
                if beside is not None:
                    depth, copies, query = beside
                    timing = server.time(query, depth)
                    figures[f"{name}_side_by_side"] = (f"{copies} x depth {timing.brief()} (work "
                                                       f"{measure_query(query).work:,}, {len(query)} chars)")
        finally:
            server.stop()
    return figures


def measure(server: _Server, build: Callable[[int], str], depths: tuple[int, ...], cap_s: float) -> list[Timing]:
    """Timings at growing depths, up to and including the first that is not a quick answer."""
    curve: list[Timing] = []
    for depth in depths:
        timing = server.time(build(depth), depth)
        curve.append(timing)
        if timing.outcome in ("over cap", "server died") or timing.seconds > cap_s:
            break
    return curve


#: Constructs whose time doubles per level, tried level by level (the others at doubling depths).
_EXPONENTIAL = ("parentheses", "calls", "mixed", "not-parentheses", "not-calls", "sign-calls")


def _depths(name: str) -> tuple[int, ...]:
    return PAREN_DEPTHS if name in _EXPONENTIAL else GROWING_DEPTHS


def _deepest_admitted(build: Callable[[int], str]) -> int:
    """The largest depth whose query the guard lets through (0 if none)."""
    return _largest(lambda depth: _admitted(build(depth)))


def side_by_side(build: Callable[[int], str], depth: int, copies: int) -> str:
    """The construct's expression at ``depth``, ``copies`` times as the items of one RETURN."""
    head, _, expression = build(depth).rpartition("RETURN ")
    expression = expression.removesuffix(" AS x")
    return f"{head}RETURN " + ", ".join(f"{expression} AS x{i}" for i in range(copies))


def _worst_side_by_side(build: Callable[[int], str], deepest: int) -> tuple[int, int, str] | None:
    """(depth, copies, query): of the construct's expressions at the deepest few depths, each repeated as often as
    the guard admits, the query with the most nesting work; None when no two copies are admitted."""
    candidates = []
    for depth in range(max(1, deepest - 4), deepest + 1):
        copies = _largest(partial(_copies_admitted, build, depth))
        if copies > 1:
            query = side_by_side(build, depth, copies)
            candidates.append((measure_query(query).work, depth, copies, query))
    if not candidates:
        return None
    _, depth, copies, query = max(candidates)
    return depth, copies, query


def _copies_admitted(build: Callable[[int], str], depth: int, copies: int) -> bool:
    return _admitted(side_by_side(build, depth, copies))


def _admitted(query: str) -> bool:
    try:
        check_model_query(query)
    except QueryRefused:
        return False
    return True


def _largest(admitted: Callable[[int], bool], ceiling: int = 1 << 22) -> int:
    """The largest n >= 1 for which ``admitted(n)`` holds (0 if none), for a test that holds up to a point."""
    low, high = 0, 1
    while high < ceiling and admitted(high):
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if admitted(middle) else (low, middle)
    return low


class _Server:
    """A throwaway embedded server, killed and started again when a query leaves it stuck or kills it."""

    def __init__(self, data_dir: Path, cap_s: float):
        from heracles_ros.embedded.server import EmbeddedServer

        self.embedded = EmbeddedServer(data_dir)
        self.cap_s = cap_s
        self._start()

    def _start(self) -> None:
        self.info = self.embedded.ensure_started()
        self._send("GRAPH.QUERY", "MERGE (:A {x: 1})")

    def stop(self) -> None:
        self.embedded.stop(timeout_s=2.0)

    def _send(self, command: str, query: str) -> None:
        """One query on a connection of its own, no retries (redis-py's client retries a timed-out call)."""
        run_capped((self.info.host, self.info.port), [command, _GRAPH, query, "--compact", "timeout",
                   max(1, int(self.cap_s * 1000))], password=os.environ.get("FALKORDB_PASSWORD") or None,
                   timeout_s=self.cap_s, max_rows=1, max_bytes=2**16)

    def time(self, query: str, depth: int) -> Timing:
        import redis

        started = time.perf_counter()
        try:
            self._send("GRAPH.RO_QUERY", query)
            outcome = "ok"
        except redis.exceptions.ResponseError as exc:
            outcome = "error: " + str(exc).split("\n")[0][:60]
        except TimeoutError:
            outcome = "over cap"
        except OSError:  # ConnectionError included: the server closed the connection
            outcome = "server died"
        seconds = time.perf_counter() - started
        if outcome in ("over cap", "server died"):
            self.stop()  # a stuck parser thread is only freed by ending the process
            self._start()
        elif outcome == "ok" and seconds > self.cap_s:
            outcome = "over cap"  # answered, but after the cap: the curve ends here as well
        return Timing(depth, seconds, outcome)
