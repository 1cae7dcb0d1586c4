"""The Neo4j store: error mapping as Neo4j raises errors, and the real driver path against a Bolt server.

The mapping tests build each error the way the driver does when a Neo4j server
answers FAILURE (``Neo4jError._hydrate_neo4j`` picks the class from the status
code), so they cover what ArcadeDB cannot show: READ-mode refusals and
transaction timeouts. The other tests run Neo4jStore against ArcadeDB over Bolt.
"""
from __future__ import annotations

import logging
import socket
import time
import tracemalloc

import pytest
from neo4j import exceptions as driver_errors

from heracles_ros.errors import (
    ConfigError,
    DatabaseError,
    DatabaseUnavailable,
    QueryError,
    QueryTimeout,
    ReadOnlyViolation,
)
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.neo4j_store import Neo4jStore, translate_error
from heracles_ros.graphdb.store import GraphStore


def server_error(code: str, message: str) -> driver_errors.Neo4jError:
    """The exception the driver raises for a server FAILURE with this status code."""
    return driver_errors.Neo4jError._hydrate_neo4j(code=code, message=message)


def test_server_errors_are_built_as_the_driver_builds_them() -> None:
    assert isinstance(server_error("Neo.ClientError.Statement.SyntaxError", "x"), driver_errors.CypherSyntaxError)
    assert isinstance(server_error("Neo.ClientError.Security.Unauthorized", "x"), driver_errors.AuthError)
    assert isinstance(server_error("Neo.TransientError.General.DatabaseUnavailable", "x"),
                      driver_errors.DatabaseUnavailable)


@pytest.mark.parametrize(
    ("code", "message", "expected"),
    [
        # Neo4j 5 ends a transaction past the client's limit / the server's db.transaction.timeout.
        ("Neo.ClientError.Transaction.TransactionTimedOutClientConfiguration",
         "The transaction has not completed within the timeout specified at its start by the client.", QueryTimeout),
        ("Neo.ClientError.Transaction.TransactionTimedOut",
         "The transaction has not completed within the specified timeout (db.transaction.timeout).", QueryTimeout),
        # A write in a READ-mode transaction, on a server and through Fabric; a read-only database.
        ("Neo.ClientError.Statement.AccessMode", "Writing in read access mode not allowed.", ReadOnlyViolation),
        ("Neo.ClientError.Fabric.AccessMode", "Writing in read access mode not allowed.", ReadOnlyViolation),
        ("Neo.ClientError.General.ForbiddenOnReadOnlyDatabase", "This is a read only database", ReadOnlyViolation),
        # Credentials refused: nothing can run; a role without the right: this request is refused.
        ("Neo.ClientError.Security.Unauthorized", "The client is unauthorized due to authentication failure.",
         DatabaseUnavailable),
        ("Neo.ClientError.Security.TokenExpired", "Token expired.", DatabaseUnavailable),
        ("Neo.ClientError.Security.Forbidden", "Create node with labels 'Object' is not allowed for user 'bot'.",
         QueryError),
        ("Neo.ClientError.Database.DatabaseNotFound", "Graph not found: scenes", DatabaseUnavailable),
        ("Neo.TransientError.General.DatabaseUnavailable", "Database 'neo4j' is unavailable.", DatabaseUnavailable),
        ("Neo.ClientError.Statement.SyntaxError", "Invalid input 'RETURN'", QueryError),
        ("Neo.ClientError.Statement.SemanticError", "Variable `m` not defined", QueryError),
        ("Neo.ClientError.Statement.TypeError", "Expected a number", QueryError),
        ("Neo.ClientError.Procedure.ProcedureNotFound", "There is no procedure with the name `algo.SPpaths`",
         QueryError),
        ("Neo.DatabaseError.General.UnknownError", "Something went wrong", DatabaseError),
    ],
)
def test_server_errors_map_by_status_code(code: str, message: str, expected: type[Exception]) -> None:
    error = translate_error(server_error(code, message), "bolt://robot:7687")
    assert type(error) is expected
    assert code in str(error) or expected is DatabaseUnavailable


@pytest.mark.parametrize(
    ("code", "message"),
    [
        # The words of a timeout or of a READ-mode refusal in the message (here: the query text
        # echoed back) do not make one; only the status code does.
        ("Neo.ClientError.Statement.SyntaxError", "Invalid input 'x': MATCH (t:Timeout {state: 'timed out'}) RETURN x"),
        ("Neo.ClientError.Statement.SemanticError", "Variable `timeout` not defined (read access mode, AccessMode)"),
    ],
)
def test_message_text_never_decides_the_kind(code: str, message: str) -> None:
    error = translate_error(server_error(code, message), "bolt://robot:7687")
    assert type(error) is QueryError


def test_driver_errors_map_by_class() -> None:
    where = "neo4j://robot:7687"
    no_routing = driver_errors.ServiceUnavailable("Unable to retrieve routing information")
    assert isinstance(translate_error(no_routing, where), DatabaseUnavailable)
    assert isinstance(translate_error(driver_errors.SessionExpired("leader switched"), where), DatabaseUnavailable)
    assert isinstance(translate_error(ConnectionRefusedError(111, "refused"), where), DatabaseUnavailable)
    assert isinstance(translate_error(driver_errors.ConfigurationError("bad"), where), ConfigError)
    assert isinstance(translate_error(TypeError("Values of type <class 'set'> are not supported"), where), QueryError)


# --- against a real Bolt server (ArcadeDB) ---------------------------------------------
on_bolt = pytest.mark.backends("bolt")


@on_bolt
def test_rows_are_keyed_by_alias_and_points_are_plain(store: GraphStore) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1', class: 'box', center: point({x: 1.5, y: 2.0, z: 0.5})})")
    rows = store.query("MATCH (n:Object) RETURN n.nodeSymbol AS symbol, n.class AS class, n.center AS center")
    assert rows == [{"symbol": "O1", "class": "box", "center": [1.5, 2.0, 0.5]}]
    assert store.query("MATCH (n:Object {nodeSymbol: $s}) RETURN count(n) AS n", {"s": "O1"}) == [{"n": 1}]


@on_bolt
def test_a_capped_query_converts_the_first_rows_and_only_counts_the_rest(store: GraphStore) -> None:
    """Five rows of 20,000 shown, the total known, and memory holding a batch of rows, not all (all: 4-5 MB)."""
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    tracemalloc.start()
    try:
        result = store.query_capped("UNWIND range(1, 20000) AS x RETURN x", max_rows=5)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.rows == [{"x": x} for x in range(1, 6)] and result.total == 20_000 and not result.complete
    assert peak < 2 * 2**20, f"{peak / 2**20:.1f} MB held"


@on_bolt
def test_write_many_is_one_transaction(store: GraphStore) -> None:
    store.write_many([("CREATE (:Object {nodeSymbol: $s})", {"s": f"O{i}"}) for i in range(3)])
    assert store.query("MATCH (n:Object) RETURN count(n) AS n") == [{"n": 3}]
    with pytest.raises(QueryError):
        store.write_many([("CREATE (:Object {nodeSymbol: 'O9'})", {}), ("THIS IS NOT CYPHER", {})])
    assert store.query("MATCH (n:Object {nodeSymbol: 'O9'}) RETURN count(n) AS n") == [{"n": 0}]


@on_bolt
def test_neo4j_scheme_reads_the_servers_routing_table(store: GraphStore, db_uri: str) -> None:
    """neo4j:// asks the server where to read and write (ROUTE), then reaches the same database."""
    store.write("CREATE (:Room {nodeSymbol: 'R1'})")
    with open_store(db_uri.replace("bolt://", "neo4j://", 1)) as routed:
        assert routed.query("MATCH (r:Room) RETURN r.nodeSymbol AS s") == [{"s": "R1"}]
        routed.write("CREATE (:Room {nodeSymbol: 'R2'})")
    assert store.query("MATCH (r:Room) RETURN count(r) AS n") == [{"n": 2}]


@on_bolt
def test_syntax_error_carries_the_status_code(store: GraphStore) -> None:
    with pytest.raises(QueryError, match=r"Neo\.ClientError\.Statement\.SyntaxError") as caught:
        store.query("MATCH (n RETURN n")
    assert not isinstance(caught.value, ReadOnlyViolation)


@on_bolt
def test_wrong_credentials_and_missing_database_are_unavailable(
    store: GraphStore, db_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = db_uri.rsplit("/", 1)[0]
    with open_store(f"{base}/no_such_database") as missing, pytest.raises(DatabaseUnavailable, match="does not exist"):
        missing.query("RETURN 1 AS x")
    monkeypatch.setenv("NEO4J_PASSWORD", "wrong")
    with open_store(db_uri) as refused, pytest.raises(DatabaseUnavailable, match="NEO4J_USERNAME / NEO4J_PASSWORD"):
        refused.query("RETURN 1 AS x")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nobody listens once the socket is closed


@pytest.mark.parametrize("scheme", ["neo4j", "bolt"])
def test_unreachable_server_fails_fast_with_one_clear_error(
    scheme: str, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """The driver retries for 30 s by default and logs every attempt; one error in seconds instead."""
    caplog.set_level(logging.DEBUG)
    port = _closed_port()
    store = Neo4jStore(f"{scheme}://127.0.0.1:{port}", database="heracles", timeout_s=10.0)
    started = time.monotonic()
    with pytest.raises(DatabaseUnavailable, match=rf"127\.0\.0\.1:{port}.* is unreachable"):
        store.query("RETURN 1 AS x")
    with pytest.raises(DatabaseUnavailable):
        store.write_many([("CREATE (:Object {nodeSymbol: 'O1'})", {})])
    assert time.monotonic() - started < 8.0
    store.close()
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert not [r for r in caplog.records if r.name.startswith("neo4j") and r.levelno >= logging.WARNING]
