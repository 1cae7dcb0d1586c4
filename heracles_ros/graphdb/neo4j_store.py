"""GraphStore over Neo4j 5 with the official driver (the production backend).

``neo4j://`` URIs route (clusters, Aura), ``bolt://`` ones connect to one
server; the database comes from the URI path. Credentials come only from the
environment (NEO4J_USERNAME / NEO4J_PASSWORD). Reads run in READ-mode
transactions, which Neo4j refuses to let write. Errors are told apart by the
driver's exception classes and Neo4j's status codes, never by message text
(a query that merely mentions "timeout" is not a timeout).
"""
from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from heracles_ros.errors import (
    ConfigError,
    DatabaseError,
    DatabaseUnavailable,
    QueryError,
    QueryTimeout,
    ReadOnlyViolation,
)
from heracles_ros.graphdb.store import CappedRows, GraphStore, Params, Row
from heracles_ros.graphdb.values import plain
from heracles_ros.schema import NEO4J

T = TypeVar("T")

#: How long the driver may retry a transaction that failed transiently (a cluster
#: changing leader, a deadlock). Short: callers such as the mirror loop retry on
#: their own, and an unreachable server must fail in seconds, not the driver's 30 s.
RETRY_S = 2.0
#: Longest wait for a connection to open.
CONNECT_TIMEOUT_S = 3.0

#: Neo4j status codes of a transaction that ran past its time limit (Neo4j 5:
#: the client's limit, or the server's db.transaction.timeout).
_TIMEOUT_CODES = (
    "Neo.ClientError.Transaction.TransactionTimedOut",
    "Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
)
#: A write in a READ-mode transaction (single server, and through Fabric / composite databases).
_ACCESS_MODE_CODES = ("Neo.ClientError.Statement.AccessMode", "Neo.ClientError.Fabric.AccessMode")
_DATABASE_NOT_FOUND = "Neo.ClientError.Database.DatabaseNotFound"

# The driver logs every retry and failed connection attempt (warnings, errors);
# the error the caller gets says it once.
logging.getLogger("neo4j").setLevel(logging.CRITICAL)


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
        self._connected = False
        try:
            self._driver = neo4j.GraphDatabase.driver(
                uri,
                auth=neo4j_auth_from_env(),
                connection_timeout=min(timeout_s, CONNECT_TIMEOUT_S),
                connection_acquisition_timeout=max(timeout_s, CONNECT_TIMEOUT_S),
                max_transaction_retry_time=RETRY_S,
            )
        except (neo4j.exceptions.ConfigurationError, ValueError) as exc:
            raise ConfigError(f"database URI {uri!r}: {exc}") from exc

    def query(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        return self._run(cypher, params, timeout_s, read_only=True)

    def query_capped(
        self, cypher: str, params: Params | None = None, *, max_rows: int, timeout_s: float | None = None
    ) -> CappedRows:
        """The first ``max_rows`` rows converted; the rest are counted as they stream past (the driver fetches a
        batch at a time), so a query of millions of rows holds a few in memory."""
        def work(tx: Any) -> CappedRows:
            rows: list[Row] = []
            total = 0
            for record in tx.run(cypher, dict(params or {})):
                if total < max_rows:
                    rows.append({key: plain(value) for key, value in record.items()})
                total += 1
            return CappedRows(rows, total)

        return self._transaction(work, timeout_s, read_only=True)

    def write(self, cypher: str, params: Params | None = None, *, timeout_s: float | None = None) -> list[Row]:
        return self._run(cypher, params, timeout_s, read_only=False)

    def write_many(self, statements: Sequence[tuple[str, Params]], *, timeout_s: float | None = None) -> None:
        """All statements in one write transaction: all or nothing."""
        if not statements:
            return

        def work(tx: Any) -> None:
            for cypher, params in statements:
                tx.run(cypher, dict(params)).consume()

        self._transaction(work, timeout_s, read_only=False)

    def ping(self) -> None:
        try:
            self._driver.verify_connectivity()
        except Exception as exc:
            raise translate_error(exc, self.description) from exc
        self._connected = True

    def close(self) -> None:
        self._driver.close()

    # -- internals --------------------------------------------------------------
    def _run(self, cypher: str, params: Params | None, timeout_s: float | None, *, read_only: bool) -> list[Row]:
        def work(tx: Any) -> list[Row]:
            result = tx.run(cypher, dict(params or {}))
            return [{key: plain(value) for key, value in record.items()} for record in result]

        return self._transaction(work, timeout_s, read_only=read_only)

    def _transaction(self, work: Callable[[Any], T], timeout_s: float | None, *, read_only: bool) -> T:
        """Run ``work`` in one managed transaction with the server-side time limit on it."""
        if not self._connected:
            # A server that is not there fails here at once, instead of after the
            # driver's retries of the first transaction.
            self.ping()
        limited = self._neo4j.unit_of_work(timeout=self.timeout_s if timeout_s is None else timeout_s)(work)
        mode = self._neo4j.READ_ACCESS if read_only else self._neo4j.WRITE_ACCESS
        try:
            with self._driver.session(database=self._database, default_access_mode=mode) as session:
                runner = session.execute_read if read_only else session.execute_write
                result: T = runner(limited)
                return result
        except Exception as exc:
            error = translate_error(exc, self.description)
            if isinstance(error, DatabaseUnavailable):
                self._connected = False  # check the server again before the next transaction
            raise error from exc


def translate_error(exc: BaseException, where: str) -> DatabaseError | ConfigError:
    """The package's error for a driver or server error, decided by class and Neo4j status code."""
    from neo4j import exceptions as errors

    if isinstance(exc, errors.Neo4jError):
        return _translate_server_error(exc, where)
    if isinstance(exc, (errors.ServiceUnavailable, errors.SessionExpired, errors.ConnectionPoolError, OSError)):
        return DatabaseUnavailable(f"{where} is unreachable: {exc}")
    if isinstance(exc, errors.ConfigurationError):
        return ConfigError(f"{where}: {exc}")
    if isinstance(exc, (TypeError, ValueError)):  # parameters the driver cannot send
        return QueryError(f"query parameters could not be sent: {exc}")
    return DatabaseError(f"{where} failed: {type(exc).__name__}: {exc}")


def _translate_server_error(exc: Any, where: str) -> DatabaseError:
    from neo4j import exceptions as errors

    code: str = exc.code or ""
    message = exc.message or str(exc)
    if code in _TIMEOUT_CODES:
        return QueryTimeout(f"query exceeded its time limit ({code}): {message}")
    if code in _ACCESS_MODE_CODES or isinstance(exc, errors.ForbiddenOnReadOnlyDatabase):
        return ReadOnlyViolation(f"query refused, only reads are allowed here ({code}): {message}")
    if isinstance(exc, errors.AuthError):
        return DatabaseUnavailable(f"{where} refused the credentials from NEO4J_USERNAME / NEO4J_PASSWORD ({code})")
    if isinstance(exc, errors.Forbidden):  # Neo.ClientError.Security.Forbidden and the like
        return QueryError(f"the database user may not do this ({code}): {message}")
    if code == _DATABASE_NOT_FOUND:
        return DatabaseUnavailable(f"{where}: the database does not exist ({code}): {message}")
    if isinstance(exc, errors.TransientError):
        return DatabaseUnavailable(f"{where} could not run the query now ({code}): {message}")
    if isinstance(exc, errors.DatabaseError):
        return DatabaseError(f"{where} failed to run the query ({code}): {message}")
    return QueryError(f"database rejected the query ({code}): {message}")
