"""GraphStore over Neo4j 5 with the official driver (the production backend).

Credentials come only from the environment (NEO4J_USERNAME / NEO4J_PASSWORD).
Reads run in READ-mode transactions, which the server refuses to let write.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from heracles_ros.errors import DatabaseError, DatabaseUnavailable, QueryError, QueryTimeout, ReadOnlyViolation
from heracles_ros.graphdb.schema import NEO4J
from heracles_ros.graphdb.store import GraphStore, Params, Row
from heracles_ros.graphdb.values import plain


def neo4j_auth_from_env() -> tuple[str, str] | None:
    """(user, password) from NEO4J_USERNAME/NEO4J_USER and NEO4J_PASSWORD; None for no auth."""
    password = os.environ.get("NEO4J_PASSWORD")
    if not password:
        return None
    user = os.environ.get("NEO4J_USERNAME") or os.environ.get("NEO4J_USER") or "neo4j"
    return (user, password)


class Neo4jStore(GraphStore):
    """One database on one Neo4j server (or cluster, with neo4j:// routing)."""

    dialect = NEO4J

    def __init__(self, uri: str, *, database: str | None = None, timeout_s: float = 10.0):
        try:
            import neo4j
        except ImportError as exc:  # pragma: no cover - a hard dependency
            raise DatabaseUnavailable("the 'neo4j' driver is not installed (pip install neo4j)") from exc
        self._neo4j = neo4j
        self.description = uri + (f" database {database!r}" if database else "")
        self.timeout_s = timeout_s
        self._database = database
        self._driver = neo4j.GraphDatabase.driver(
            uri, auth=neo4j_auth_from_env(), connection_timeout=min(timeout_s, 10.0)
        )

    def query(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        return self._run(cypher, params, timeout_s, read_only=True)

    def write(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        return self._run(cypher, params, timeout_s, read_only=False)

    def write_many(self, statements: Sequence[tuple[str, Params]], *, timeout_s: float | None = None) -> None:
        """All statements in one write transaction: all or nothing."""
        if not statements:
            return
        query_type = self._neo4j.Query

        def work(tx: Any) -> None:
            for cypher, params in statements:
                tx.run(query_type(cypher, timeout=self._timeout(timeout_s)), dict(params)).consume()

        try:
            with self._session(read_only=False) as session:
                session.execute_write(work)
        except Exception as exc:
            raise self._translate(exc) from exc

    def ping(self) -> None:
        try:
            self._driver.verify_connectivity()
        except Exception as exc:
            raise DatabaseUnavailable(f"{self.description} does not answer: {exc}") from exc

    def close(self) -> None:
        self._driver.close()

    # -- internals --------------------------------------------------------------
    def _timeout(self, timeout_s: float | None) -> float:
        return self.timeout_s if timeout_s is None else timeout_s

    def _session(self, *, read_only: bool) -> Any:
        mode = self._neo4j.READ_ACCESS if read_only else self._neo4j.WRITE_ACCESS
        return self._driver.session(database=self._database, default_access_mode=mode)

    def _run(self, cypher: str, params: Params | None, timeout_s: float | None, *, read_only: bool) -> list[Row]:
        query = self._neo4j.Query(cypher, timeout=self._timeout(timeout_s))

        def work(tx: Any) -> list[Row]:
            result = tx.run(query, dict(params or {}))
            return [{key: plain(record[key]) for key in record} for record in result]

        try:
            with self._session(read_only=read_only) as session:
                runner = session.execute_read if read_only else session.execute_write
                rows: list[Row] = runner(work)
                return rows
        except Exception as exc:
            raise self._translate(exc) from exc

    def _translate(self, exc: BaseException) -> DatabaseError:
        errors = self._neo4j.exceptions
        text = str(exc)
        code = getattr(exc, "code", "") or ""
        if isinstance(exc, (errors.ServiceUnavailable, errors.SessionExpired, OSError)):
            return DatabaseUnavailable(f"{self.description} unavailable: {text}")
        if isinstance(exc, errors.AuthError):
            return DatabaseUnavailable(f"{self.description} refused the credentials from NEO4J_USERNAME/PASSWORD")
        if "AccessMode" in code or "ReadOnly" in code or "read access mode" in text.lower():
            return ReadOnlyViolation(f"query refused, the database only allows reads here: {text}")
        if "TransactionTimedOut" in code or "timed out" in text.lower():
            return QueryTimeout(f"query exceeded its time limit: {text}")
        return QueryError(f"database rejected the query: {text}")
