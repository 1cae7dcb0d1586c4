"""The FalkorDB backend against a real server: rows, read-only guard, timeouts, errors."""
from __future__ import annotations

import pytest

from heracles_ros.errors import DatabaseUnavailable, QueryError, QueryTimeout, ReadOnlyViolation
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


def test_unreachable_server_is_reported() -> None:
    dead = FalkorStore("127.0.0.1", 9, timeout_s=1.0)
    with pytest.raises(DatabaseUnavailable, match=r"127\.0\.0\.1:9"):
        dead.query("RETURN 1 AS x")
    with pytest.raises(DatabaseUnavailable):
        dead.ping()
