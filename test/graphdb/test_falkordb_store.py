"""The FalkorDB backend against a real server: rows, read-only guard, capped reads, timeouts, errors."""
from __future__ import annotations

import os
import threading

import pytest
import redis

from heracles_ros.embedded.server import EmbeddedServer
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
from heracles_ros.graphdb.falkordb_store import FalkorStore

pytestmark = pytest.mark.backends("falkordb")  # the Neo4j store's own tests: test_neo4j_store.py


def test_rows_are_plain_dicts_keyed_by_alias(store: FalkorStore) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1', class: 'box', x: 1.5, y: 2.0, z: 0.0})")
    rows = store.query("MATCH (n:Object) RETURN n.nodeSymbol AS symbol, n AS node, [n.x, n.y] AS xy")
    assert rows == [
        {"symbol": "O1", "node": {"nodeSymbol": "O1", "class": "box", "x": 1.5, "y": 2.0, "z": 0.0}, "xy": [1.5, 2.0]}
    ]


def test_parameters(store: FalkorStore) -> None:
    store.write("UNWIND $rows AS r CREATE (:Room {nodeSymbol: r.s})", {"rows": [{"s": "R1"}, {"s": "R2"}]})
    assert store.query("MATCH (r:Room {nodeSymbol: $s}) RETURN count(r) AS n", {"s": "R2"}) == [{"n": 1}]


@pytest.mark.parametrize(
    "cypher",
    ["CREATE (:Object {nodeSymbol: 'O9'})", "MATCH (n) DETACH DELETE n", "MATCH (n:Object) SET n.class = 'x'"],
)
def test_server_refuses_writes_in_read_only_queries(store: FalkorStore, cypher: str) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1', class: 'box'})")
    with pytest.raises(ReadOnlyViolation):
        store.query(cypher)
    assert store.query("MATCH (n) RETURN n.nodeSymbol AS s, n.class AS c") == [{"s": "O1", "c": "box"}]


def test_reads_of_a_graph_not_yet_written_are_empty(store: FalkorStore) -> None:
    assert store.query("MATCH (n) RETURN n") == []


def test_syntax_error_is_a_query_error_with_the_server_message(store: FalkorStore) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    with pytest.raises(QueryError, match="Invalid input") as caught:
        store.query("MATCH (n RETURN n")
    assert not isinstance(caught.value, ReadOnlyViolation)


def test_timeout(store: FalkorStore) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    with pytest.raises(QueryTimeout):
        store.query("UNWIND range(1, 50000000) AS x RETURN sum(x) AS s", timeout_s=0.01)


def test_write_many_runs_all_statements(store: FalkorStore) -> None:
    store.write_many(
        [("CREATE (:Object {nodeSymbol: $s})", {"s": f"O{i}"}) for i in range(5)]
        + [("MATCH (a:Object {nodeSymbol: 'O0'}), (b:Object {nodeSymbol: 'O1'}) "
              "CREATE (a)-[:OBJECT_CONNECTED]->(b)", {})]
    )
    assert store.query("MATCH (n:Object) RETURN count(n) AS n") == [{"n": 5}]
    assert store.query("MATCH ()-[e]->() RETURN count(e) AS n") == [{"n": 1}]


def test_write_many_reports_a_failing_statement(store: FalkorStore) -> None:
    with pytest.raises(QueryError):
        store.write_many([("CREATE (:Object {nodeSymbol: 'O1'})", {}), ("THIS IS NOT CYPHER", {})])


def test_write_batches_keep_their_order_and_stop_at_the_first_failure(store: FalkorStore) -> None:
    sent: list[int] = []

    def batches():  # a generator, as the mirror's first load hands them over
        for n, text in enumerate([
            "CREATE (:Object {nodeSymbol: 'O1'})",
            "MATCH (a:Object {nodeSymbol: 'O1'}) CREATE (a)-[:OBJECT_CONNECTED]->(:Object {nodeSymbol: 'O2'})",
            "THIS IS NOT CYPHER",
            "CREATE (:Object {nodeSymbol: 'O3'})",
            "CREATE (:Object {nodeSymbol: 'O4'})",
        ]):
            sent.append(n)
            yield [(text, {})]

    with pytest.raises(QueryError, match="database rejected the query"):
        store.write_batches(batches())
    assert store.query("MATCH (a)-[:OBJECT_CONNECTED]->(b) RETURN a.nodeSymbol AS a, b.nodeSymbol AS b") == [
        {"a": "O1", "b": "O2"}]  # the second ran after the first
    assert store.query("MATCH (n:Object) RETURN n.nodeSymbol AS s ORDER BY s") == [{"s": "O1"}, {"s": "O2"}]
    assert sent == [0, 1, 2, 3]  # the batch after the failing one was built, never sent; the next not built


def test_unreachable_server_is_reported() -> None:
    dead = FalkorStore("127.0.0.1", 9, timeout_s=1.0)
    with pytest.raises(DatabaseUnavailable, match=r"127\.0\.0\.1:9"):
        dead.query("RETURN 1 AS x")
    with pytest.raises(DatabaseUnavailable):
        dead.ping()


def test_a_comment_in_a_procedure_name_does_not_crash_the_server(store: FalkorStore, falkordb_server) -> None:
    """``CALL db./**/labels()`` aborts FalkorDB 4.16's parser; the read path strips the comment first."""
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    assert store.query("CALL db./**/labels()") == [{"label": "Object"}]
    assert store.query_capped("CALL db.// a comment\nlabels()", max_rows=5).rows == [{"label": "Object"}]
    assert os.kill(falkordb_server.pid, 0) is None  # the same server process still runs
    assert store.query("RETURN 1 AS one") == [{"one": 1}]


@pytest.mark.parametrize(
    "cypher",
    [
        "MATCH (n) WHERE n.timeout = 1 RETURN n.ro_query +",  # words that used to be read as a timeout / a write
        "RETURN 'timed out read-only' AS",
    ],
)
def test_errors_are_classified_by_the_server_code_not_by_words_in_the_query(store: FalkorStore, cypher: str) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    for run in (store.query, lambda text: store.query_capped(text, max_rows=10)):
        with pytest.raises(QueryError, match="Invalid input") as caught:
            run(cypher)
        assert type(caught.value) is QueryError


def test_capped_query_reads_only_the_first_rows_and_knows_the_total(store: FalkorStore) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    result = store.query_capped("UNWIND range(1, 3000000) AS x RETURN x", max_rows=5)
    assert result.rows == [{"x": 1}, {"x": 2}, {"x": 3}, {"x": 4}, {"x": 5}]
    assert result.total == 3_000_000 and not result.complete and result.cut_by_size == ""
    assert store.query("RETURN 1 AS one") == [{"one": 1}]  # the pooled connection is unaffected


def test_capped_query_stops_at_the_byte_limit(store: FalkorStore) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    result = store.query_capped("UNWIND range(1, 3000000) AS x RETURN collect(x) AS xs", max_rows=5)
    assert (result.rows, result.total) == ([], 1)
    assert "the reply passed 8 MB" in result.cut_by_size


def test_capped_query_converts_nodes_edges_and_parameters(store: FalkorStore) -> None:
    store.write("CREATE (:Object {nodeSymbol: 'O1', x: 1.5})-[:OBJECT_CONNECTED {w: 2}]->(:Object {nodeSymbol: 'O2'})")
    result = store.query_capped(
        "MATCH (a {nodeSymbol: $s})-[e]->(b) RETURN a, e, b.nodeSymbol AS b, [1, 'z'] AS l", {"s": "O1"}, max_rows=3
    )
    assert result.rows == [{"a": {"nodeSymbol": "O1", "x": 1.5}, "e": {"w": 2}, "b": "O2", "l": [1, "z"]}]
    assert result.complete


def test_capped_query_errors_are_the_same_as_the_plain_path(store: FalkorStore) -> None:
    assert store.query_capped("MATCH (n) RETURN n", max_rows=3).rows == []  # graph not written yet
    store.write("CREATE (:Object {nodeSymbol: 'O1'})")
    with pytest.raises(ReadOnlyViolation):
        store.query_capped("CREATE (:Object {nodeSymbol: 'O2'})", max_rows=3)
    with pytest.raises(QueryTimeout, match="time limit"):
        store.query_capped("UNWIND range(1, 50000000) AS x RETURN x", max_rows=3, timeout_s=0.01)
    with pytest.raises(QueryRefused, match="unterminated"):
        store.query_capped("RETURN 'open", max_rows=3)


def test_server_limits_are_named(store: FalkorStore, tmp_path) -> None:
    """A full queue says busy (never unavailable); a memory cap says memory limit."""
    server = EmbeddedServer(tmp_path / "db")
    info = server.ensure_started()
    own = FalkorStore(info.host, info.port, graph="g", timeout_s=10.0)
    try:
        own.write("CREATE (:Object {nodeSymbol: 'O1'})")
        admin = redis.Redis(host=info.host, port=info.port)
        admin.execute_command("GRAPH.CONFIG", "SET", "QUERY_MEM_CAPACITY", 10_000_000)
        with pytest.raises(QueryTooLarge, match="memory limit"):
            own.query_capped("UNWIND range(1, 3000000) AS x RETURN collect(x) AS xs", max_rows=3)
        admin.execute_command("GRAPH.CONFIG", "SET", "MAX_QUEUED_QUERIES", 1)
        errors: list[BaseException] = []

        def slow() -> None:
            try:
                FalkorStore(info.host, info.port, graph="g").query(
                    "UNWIND range(1, 30000000) AS x RETURN sum(x) AS s", timeout_s=3.0
                )
            except DatabaseError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=slow) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        busy = [e for e in errors if isinstance(e, DatabaseBusy)]
        assert busy and all("MAX_QUEUED_QUERIES" in str(e) for e in busy)
        assert not any(isinstance(e, DatabaseUnavailable) for e in errors)
    finally:
        own.close()
        server.stop()


def test_replies_are_parsed_by_hiredis(store: FalkorStore) -> None:
    """requirements.txt installs hiredis for its C parser (a 67,738-row read of the kilometre-scale scene took
    half the time): the store's connections use it, so a missing or broken install shows here, not as speed."""
    db, _ = store._connect()
    connection = db.connection.connection_pool.get_connection()
    try:
        assert type(connection._parser).__name__ == "_HiredisParser"
    finally:
        db.connection.connection_pool.release(connection)
