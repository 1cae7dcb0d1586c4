"""GraphStore over FalkorDB's own protocol (never its Bolt port: see platform.md).

Read-only queries go through ``GRAPH.RO_QUERY`` so the *server* refuses writes,
whatever the query text looks like.
"""
from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from heracles_ros.errors import DatabaseError, DatabaseUnavailable, QueryError, QueryTimeout, ReadOnlyViolation
from heracles_ros.graphdb.cypher.falkordb_paths import undirected_connectivity
from heracles_ros.graphdb.schema import FALKORDB
from heracles_ros.graphdb.store import GraphStore, Params, Row
from heracles_ros.graphdb.values import plain

#: Seconds the socket waits beyond the query timeout before calling the server gone.
_SOCKET_SLACK_S = 5.0


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
        return self._run(cypher, params, timeout_s, read_only=True)

    def write(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        return self._run(cypher, params, timeout_s, read_only=False)

    def write_many(self, statements: Sequence[tuple[str, Params]], *, timeout_s: float | None = None) -> None:
        """Send all statements in one MULTI/EXEC: no other client interleaves.

        Redis transactions do not roll back a failed command; callers that need
        all-or-nothing (the mirror) re-read their baseline after an error.
        """
        if not statements:
            return
        db, graph = self._connect()
        pipe = db.connection.pipeline(transaction=True)
        ms = self._timeout_ms(timeout_s)
        for cypher, params in statements:
            text = graph._build_params_header(dict(params)) + cypher
            pipe.execute_command("GRAPH.QUERY", self._graph_name, text, "--compact", "timeout", ms)
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
    def _timeout_ms(self, timeout_s: float | None) -> int:
        return max(1, int(1000 * (self.timeout_s if timeout_s is None else timeout_s)))

    def _run(self, cypher: str, params: Params | None, timeout_s: float | None, *, read_only: bool) -> list[Row]:
        graph = self._connect()[1]
        call = graph.ro_query if read_only else graph.query
        cypher = undirected_connectivity(cypher)  # FalkorDB 4.16 loses directed variable-length endpoints
        try:
            result = call(cypher, dict(params) if params else None, timeout=self._timeout_ms(timeout_s))
        except Exception as exc:
            if read_only and "empty key" in str(exc):
                return []  # the graph does not exist yet: nothing mirrored, so nothing matches
            raise self._translate(exc) from exc
        header = [h[1] if isinstance(h, (list, tuple)) else h for h in (result.header or [])]
        names = [n.decode() if isinstance(n, bytes) else str(n) for n in header]
        return [dict(zip(names, (plain(v) for v in row), strict=False)) for row in result.result_set or []]

    def _translate(self, exc: BaseException) -> DatabaseError:
        import redis

        text = str(exc)
        if isinstance(exc, (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, ConnectionError, OSError)):
            self._conn = None  # reconnect on the next call
            return DatabaseUnavailable(f"{self.description} unavailable: {text}")
        lowered = text.lower()
        if "read-only" in lowered or "ro_query" in lowered:
            return ReadOnlyViolation(f"query refused, the database only allows reads here: {text}")
        if "timed out" in lowered or "timeout" in lowered:
            return QueryTimeout(f"query exceeded its time limit: {text}")
        return QueryError(f"database rejected the query: {text}")
