"""GraphStore over FalkorDB's own protocol (never its Bolt port: docs/known-issues.md#falkordb-bolt-port).

Read-only queries go through ``GRAPH.RO_QUERY`` so the *server* refuses writes,
whatever the query text looks like, after :mod:`.query_guard` took out what
crashes the server's parser. Errors are told apart by the client's exception
type and the server's own error codes (the start of its message), never by
words that may come from the query text.
"""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from heracles_ros.errors import (
    DatabaseBusy,
    DatabaseError,
    DatabaseUnavailable,
    QueryError,
    QueryRefused,
    QueryTimeout,
    QueryTooLarge,
    ReadOnlyViolation,
)
from heracles_ros.graphdb.cypher.falkordb_paths import undirected_connectivity
from heracles_ros.graphdb.falkordb_stream import run_capped
from heracles_ros.graphdb.query_guard import sanitize_read_query
from heracles_ros.graphdb.store import CappedRows, GraphStore, Params, Row
from heracles_ros.graphdb.values import plain
from heracles_ros.schema import FALKORDB

#: Seconds the socket waits beyond the query timeout before asking whether the server is alive.
_SOCKET_SLACK_S = 5.0
#: Reply bytes a capped query reads at most: the rows a model can be shown fit in far less.
CAPPED_REPLY_BYTES = 8 * 2**20

#: The server's error codes (start of its message; measured on FalkorDB 4.16) and what they mean.
_SERVER_ERRORS: tuple[tuple[str, type[DatabaseError], str], ...] = (
    ("Query timed out", QueryTimeout, "the server stopped the query at its time limit"),
    ("graph.RO_QUERY is to be executed only on read-only queries", ReadOnlyViolation,
     "query refused, the database only allows reads here"),
    ("Query's mem consumption exceeded capacity", QueryTooLarge,
     "the server stopped the query at its memory limit (QUERY_MEM_CAPACITY)"),
    ("Max pending queries exceeded", DatabaseBusy,
     "the server is busy: its queue of waiting queries is full (MAX_QUEUED_QUERIES)"),
)


#: The server's code for a query on a graph that does not exist yet.
_EMPTY_KEY = "Invalid graph operation on empty key"


def _carried(params: Params) -> dict[str, Any]:
    """``params`` as the client inlines them (a ``CYPHER k=v ...`` prefix of the query text), or QueryRefused.

    The server reads that text as a C string: a NUL in a value or key would cut the query there,
    and its string literals have no escape for NUL (``\\u0000`` stays six characters), so such a
    parameter cannot travel intact and is refused before anything is sent.
    """
    for name, value in params.items():
        if _has_nul(name) or _has_nul(value):
            raise QueryRefused(f"query parameter {name!r} contains a NUL character, which FalkorDB cannot carry; "
                               "nothing was sent")
    return dict(params)


def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    return False


class FalkorStore(GraphStore):
    """One named graph on one FalkorDB server."""

    dialect = FALKORDB

    def __init__(self, host: str, port: int, *, graph: str = "heracles", timeout_s: float = 10.0):
        self.description = f"falkordb://{host}:{port} graph {graph!r}"
        self.timeout_s = timeout_s
        self._host, self._port = host, port
        self._graph_name = graph
        #: (client, graph), replaced as one value so threads never see half a connection.
        self._conn: tuple[Any, Any] | None = None
        self._conn_lock = threading.Lock()

    def _connect(self) -> tuple[Any, Any]:
        """The client, created on first use and again after the server went away."""
        conn = self._conn
        if conn is not None:
            return conn
        with self._conn_lock:
            if self._conn is not None:
                return self._conn
            from falkordb import FalkorDB

            try:
                db = FalkorDB(
                    host=self._host,
                    port=self._port,
                    password=os.environ.get("FALKORDB_PASSWORD") or None,
                    socket_timeout=self.timeout_s + _SOCKET_SLACK_S,
                    socket_connect_timeout=min(self.timeout_s, 5.0),
                )
            except Exception as exc:
                raise self._translate(exc) from exc
            self._conn = (db, db.select_graph(self._graph_name))
            return self._conn

    # -- GraphStore -----------------------------------------------------------
    def query(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        return self._run(sanitize_read_query(cypher), params, timeout_s, read_only=True)

    def query_capped(
        self, cypher: str, params: Params | None = None, *, max_rows: int, timeout_s: float | None = None
    ) -> CappedRows:
        """Rows past ``max_rows`` (or past CAPPED_REPLY_BYTES) are left unread on the socket."""
        text = undirected_connectivity(sanitize_read_query(cypher))
        graph = self._connect()[1]
        if params:
            text = graph._build_params_header(_carried(params)) + text
        ms = self._timeout_ms(timeout_s)
        command: list[str | int] = ["GRAPH.RO_QUERY", self._graph_name, text, "--compact", "timeout", ms]
        try:
            raw = run_capped(
                (self._host, self._port), command, password=os.environ.get("FALKORDB_PASSWORD") or None,
                timeout_s=self._reply_wait_s(ms / 1000),
                max_rows=max_rows, max_bytes=CAPPED_REPLY_BYTES,
            )
        except Exception as exc:
            if str(exc).startswith(_EMPTY_KEY):
                return CappedRows([], 0, graph_missing=True)
            raise self._translate(exc) from exc
        from falkordb.query_result import QueryResult

        try:
            result = QueryResult(graph, [raw.header, raw.rows, []])
        except Exception as exc:
            raise self._translate(exc) from exc
        cut = f"the reply passed {CAPPED_REPLY_BYTES // 2**20} MB" if raw.bytes_exhausted else ""
        return CappedRows(self._rows(result), raw.total, cut)

    def write(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        return self._run(cypher, params, timeout_s, read_only=False)

    def write_many(self, statements: Sequence[tuple[str, Params]], *, timeout_s: float | None = None) -> None:
        """Send all statements in one MULTI/EXEC: no other client interleaves.

        Redis transactions do not roll back a failed command; callers that need
        all-or-nothing (the mirror) re-read their baseline after an error.
        """
        if statements:
            self._execute(self._commands(statements, self._timeout_ms(timeout_s)))

    def write_batches(
        self, batches: Iterable[Sequence[tuple[str, Params]]], *, timeout_s: float | None = None
    ) -> None:
        """One MULTI/EXEC per batch; the next is built and encoded while the server runs the one before.

        One transaction is in flight at a time, so the order is kept. On a first
        load this hides the client's share (building the edge rows, spelling
        every row as Cypher parameter text) behind the server's inserts.
        """
        ms = self._timeout_ms(timeout_s)
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="falkordb-writes") as sender:
            pending: Future[None] | None = None
            for batch in batches:
                if not batch:
                    continue
                commands = self._commands(batch, ms)
                if pending is not None:
                    pending.result()  # a failed transaction stops the rest
                pending = sender.submit(self._execute, commands)
            if pending is not None:
                pending.result()

    def _commands(self, statements: Sequence[tuple[str, Params]], ms: int) -> list[tuple[str | int, ...]]:
        graph = self._connect()[1]
        return [
            ("GRAPH.QUERY", self._graph_name, graph._build_params_header(_carried(params)) + cypher, "--compact",
             "timeout", ms)
            for cypher, params in statements
        ]

    def _execute(self, commands: list[tuple[str | int, ...]]) -> None:
        pipe = self._connect()[0].connection.pipeline(transaction=True)
        for command in commands:
            pipe.execute_command(*command)
        try:
            replies = pipe.execute(raise_on_error=False)
        except Exception as exc:
            raise self._translate(exc) from exc
        for reply in replies:
            if isinstance(reply, Exception):
                raise self._translate(reply) from reply

    def execute_command(self, *args: str) -> object:
        """One raw server command (e.g. ``GRAPH.UDF LOAD``), errors translated like queries'."""
        db = self._connect()[0]
        try:
            return db.connection.execute_command(*args)
        except Exception as exc:
            raise self._translate(exc) from exc

    def graph_names(self) -> list[str]:
        """``GRAPH.LIST``: a read of the key space, which (unlike a query) never creates the graph."""
        reply = self.execute_command("GRAPH.LIST")
        names = reply if isinstance(reply, list) else []
        return sorted(name.decode() if isinstance(name, bytes) else str(name) for name in names)

    @property
    def graph_name(self) -> str:
        return self._graph_name

    def ping(self) -> None:
        try:
            self._connect()[0].connection.ping()
        except Exception as exc:
            raise DatabaseUnavailable(f"{self.description} does not answer: {exc}") from exc

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):  # closing a dead connection is not worth an error
                conn[0].connection.close()

    # -- internals --------------------------------------------------------------
    def _reply_wait_s(self, limit_s: float) -> float:
        """How long a capped query waits for its reply (as the pooled connection waits)."""
        return max(limit_s, self.timeout_s) + _SOCKET_SLACK_S

    def _timeout_ms(self, timeout_s: float | None) -> int:
        return max(1, int(1000 * (self.timeout_s if timeout_s is None else timeout_s)))

    def _run(self, cypher: str, params: Params | None, timeout_s: float | None, *, read_only: bool) -> list[Row]:
        graph = self._connect()[1]
        call = graph.ro_query if read_only else graph.query
        # FalkorDB 4.16 loses directed variable-length endpoints: docs/known-issues.md#falkordb-directed-ranges
        cypher = undirected_connectivity(cypher)
        carried = _carried(params) if params else None
        try:
            result = call(cypher, carried, timeout=self._timeout_ms(timeout_s))
        except Exception as exc:
            if read_only and str(exc).startswith(_EMPTY_KEY):
                return []  # the graph does not exist yet: nothing mirrored, so nothing matches
            raise self._translate(exc) from exc
        return self._rows(result)

    @staticmethod
    def _rows(result: Any) -> list[Row]:
        header = [h[1] if isinstance(h, (list, tuple)) else h for h in (result.header or [])]
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in header]
        return [dict(zip(names, (plain(v) for v in row), strict=False)) for row in result.result_set or []]

    def _translate(self, exc: BaseException) -> DatabaseError:
        """Our error for a client exception: by its type, and for server errors by the server's code."""
        import redis

        text = str(exc)
        if isinstance(exc, redis.exceptions.ReadOnlyError):  # a write sent to a read replica
            return ReadOnlyViolation(f"query refused, the database only allows reads here: {text}")
        if isinstance(exc, redis.exceptions.ResponseError):
            for code, kind, meaning in _SERVER_ERRORS:
                if text.startswith(code):
                    return kind(f"{meaning}: {text}")
            return QueryError(f"database rejected the query: {text}")
        if isinstance(exc, (redis.exceptions.TimeoutError, TimeoutError)):
            self._conn = None  # the connection still waits for that reply: never reuse it
            if self._answers_ping():
                return QueryTimeout(
                    f"no reply within the time limit + {_SOCKET_SLACK_S:g} s; {self.description} still answers, "
                    f"so it is busy with other queries or this one overran its limit ({text})"
                )
            return DatabaseUnavailable(f"{self.description} unavailable: no reply ({text})")
        if isinstance(exc, (redis.exceptions.ConnectionError, ConnectionError, OSError)):
            self._conn = None  # reconnect on the next call
            return DatabaseUnavailable(f"{self.description} unavailable: {text}")
        return QueryError(f"database rejected the query: {text}")

    def _answers_ping(self) -> bool:
        """PING is served by the server's main thread, not the query workers: it tells busy from gone."""
        import redis

        client = redis.Redis(
            host=self._host, port=self._port, password=os.environ.get("FALKORDB_PASSWORD") or None,
            socket_timeout=1.0, socket_connect_timeout=1.0,
        )
        try:
            return bool(client.ping())
        except redis.exceptions.RedisError:
            return False
        finally:
            client.close()
