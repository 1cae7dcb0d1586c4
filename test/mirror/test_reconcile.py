"""The mirror on a real database: exact contents, minimal writes, what it must not touch."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import spark_dsg as dsg
from support.hydra_scene import hydra_scene
from support.mirror_checks import assert_mirrors, database_contents
from support.tiny_scene import add_object, node_id, tiny_scene

from heracles_ros.errors import DatabaseUnavailable, SuspectSnapshot
from heracles_ros.graphdb.cypher import admin
from heracles_ros.graphdb.cypher import mirror as mirror_q
from heracles_ros.graphdb.falkordb_store import FalkorStore
from heracles_ros.mirror.history import HistorySettings
from heracles_ros.mirror.reconcile import _STATEMENTS_PER_TRANSACTION, Mirror


def test_first_reconcile_writes_the_schema(store: FalkorStore) -> None:
    graph = tiny_scene()
    report = Mirror(store).reconcile(graph)
    assert (report.nodes_added, report.edges_added) == (14, 18)
    assert_mirrors(store, graph)
    row = store.query("MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {nodeSymbol: 'O2'}) RETURN p.nodeSymbol AS p, "
                      "o.class AS c, o.name AS name, o.bbox_dim AS dim, o.bbox_center AS bc, o.center AS center")
    assert row == [{"p": "P4", "c": "bicycle", "name": "bicycle 2", "dim": pytest.approx([0.5, 0.4, 0.3]),
                    "bc": [4.0, 1.0, 0.5], "center": [4.0, 1.0, 0.5]}]
    assert store.query("MATCH (r:Room {nodeSymbol: 'R1'}) RETURN r.class AS c") == [{"c": "lounge"}]
    # O4 has no place; it is mirrored anyway, with no parent.
    assert store.query("MATCH (o:Object {nodeSymbol: 'O4'}) OPTIONAL MATCH (p)-[:CONTAINS]->(o) "
                       "RETURN count(p) AS parents") == [{"parents": 0}]


class TransactionLog:
    """The real store, noting the statements of every transaction the mirror sends."""

    def __init__(self, store: FalkorStore) -> None:
        self.store = store
        self.transactions: list[list[tuple[str, Any]]] = []
        self.streamed = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def write_many(self, statements: Any, **kwargs: Any) -> None:
        if statements:  # an empty one sends nothing
            self.transactions.append(list(statements))
        self.store.write_many(statements, **kwargs)

    def write_batches(self, batches: Any, **kwargs: Any) -> None:
        def noted() -> Any:
            for batch in batches:
                self.transactions.append(list(batch))
                yield batch

        self.streamed = True
        self.store.write_batches(noted(), **kwargs)


def test_a_diff_over_atomic_rows_streams_the_same_statements(store: FalkorStore) -> None:
    graph = tiny_scene()
    no_history = HistorySettings(enabled=False)  # the diff's statements are then the only multi-statement writes

    def first_load(atomic_rows: int) -> TransactionLog:
        store.write("MATCH (n) DETACH DELETE n")
        log = TransactionLog(store)
        Mirror(log, atomic_rows=atomic_rows, history=no_history).reconcile(graph)  # type: ignore[arg-type]
        assert_mirrors(store, graph)
        return log

    atomic = TransactionLog(store)
    report = Mirror(atomic, history=no_history).reconcile(graph)  # type: ignore[arg-type]
    rows = report.nodes_added + report.edges_added  # a first load writes each node and edge once
    assert not atomic.streamed and len(atomic.transactions) == 1
    assert not first_load(atomic_rows=rows).streamed  # the limit itself is still one transaction

    streamed = first_load(atomic_rows=rows - 1)
    sizes = [len(t) for t in streamed.transactions]
    assert streamed.streamed and len(sizes) > 1
    assert all(size == _STATEMENTS_PER_TRANSACTION for size in sizes[:-1]), sizes
    assert 0 < sizes[-1] <= _STATEMENTS_PER_TRANSACTION, sizes
    assert [s for t in streamed.transactions for s in t] == atomic.transactions[0]


def test_unchanged_snapshot_writes_nothing(store: FalkorStore) -> None:
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene())
    report = mirror.reconcile(tiny_scene())
    assert report.writes == 0


def test_changes_are_written_exactly(store: FalkorStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)

    graph.get_node(node_id("O0")).attributes.position = np.array([0.2, 1.5, 0.5])  # moved
    graph.get_node(node_id("O1")).attributes.semantic_label = 3  # relabelled bag -> chair
    graph.remove_node(node_id("O3"))  # removed
    room = dsg.RoomNodeAttributes()  # a new room with two places
    room.position = np.array([8.0, 0.0, 0.0])
    room.semantic_label = 2
    graph.add_node(4, node_id("R2"), room)
    for index in (6, 7):
        place = dsg.Place2dNodeAttributes()
        place.position = np.array([float(index), 0.0, 0.0])
        graph.add_node(3, node_id(f"P{index}"), place, 1)
        graph.insert_edge(node_id("R2"), node_id(f"P{index}"))
    graph.insert_edge(node_id("P5"), node_id("P6"))
    graph.insert_edge(node_id("P6"), node_id("P7"))
    add_object(graph, 5, 1, (7.0, 1.0, 0.5), 7)

    report = mirror.reconcile(graph)
    assert (report.nodes_added, report.nodes_changed, report.nodes_removed) == (4, 2, 1)
    assert (report.edges_added, report.edges_removed) == (5, 1)  # R2>P6, R2>P7, P5-P6, P6-P7, P7>O5; P5>O3
    assert_mirrors(store, graph)
    assert store.query("MATCH (n) WHERE n.nodeSymbol = 'O3' RETURN n") == []


def test_no_duplicates_and_no_foreign_nodes_touched(store: FalkorStore) -> None:
    store.write("CREATE (:Robot {nodeSymbol: 'robot', holding: 'O1'})")
    store.write("MATCH (r:Robot), (o:Object) WHERE o.nodeSymbol = 'O1' CREATE (r)-[:HOLDING]->(o)")
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    store.write("MATCH (r:Robot), (o:Object {nodeSymbol: 'O1'}) CREATE (r)-[:HOLDING]->(o)")
    fresh = Mirror(store)  # a restarted mirror reads its baseline from the database
    report = fresh.reconcile(graph)
    assert report.writes == 0
    assert store.query("MATCH (n {nodeSymbol: 'O1'}) RETURN count(n) AS n") == [{"n": 1}]
    assert store.query("MATCH (r:Robot)-[:HOLDING]->(o) RETURN r.holding AS h, o.nodeSymbol AS o") == [
        {"h": "O1", "o": "O1"}
    ]


def test_mass_removal_is_held_back_unless_allowed(store: FalkorStore) -> None:
    mirror = Mirror(store, suspect_min_nodes=5)
    mirror.reconcile(tiny_scene())
    with pytest.raises(SuspectSnapshot, match="would remove 14 of 14"):
        mirror.reconcile(dsg.DynamicSceneGraph())
    assert len(database_contents(store)[0]) == 14  # nothing lost
    report = mirror.reconcile(dsg.DynamicSceneGraph(), force=True)
    assert report.nodes_removed == 14
    assert database_contents(store) == ({}, set())


def test_database_down_then_back_reconciles_newest(falkordb_server: Any, graph_name: str) -> None:
    good = FalkorStore(falkordb_server.host, falkordb_server.port, graph=graph_name)
    mirror = Mirror(good)
    mirror.reconcile(tiny_scene())
    # Point the mirror at a dead address, as if the server went away.
    mirror.store = FalkorStore("127.0.0.1", 9, timeout_s=1.0)
    mirror.corrections.store = mirror.store
    newer = tiny_scene()
    newer.remove_node(node_id("O2"))
    with pytest.raises(DatabaseUnavailable):
        mirror.reconcile(newer)
    mirror.store = good
    mirror.corrections.store = good
    report = mirror.reconcile(newer)
    assert report.nodes_removed == 1
    assert_mirrors(good, newer)
    good.write("MATCH (n) DETACH DELETE n")


def test_a_change_by_another_writer_is_noticed(store: FalkorStore) -> None:
    node_mirror = Mirror(store)
    graph = tiny_scene()
    node_mirror.reconcile(graph)
    # Meanwhile `heracles load` (another Mirror) writes a scene without O1 and O2.
    other = tiny_scene()
    other.remove_node(node_id("O1"))
    other.remove_node(node_id("O2"))
    Mirror(store).reconcile(other)
    assert_mirrors(store, other)
    # Hydra's next snapshot is unchanged for the node, but the database is not: the node re-reads it.
    report = node_mirror.reconcile(graph)
    assert (report.nodes_added, report.edges_added) == (2, 2)
    assert_mirrors(store, graph)
    assert node_mirror.reconcile(graph).writes == 0


def test_a_hydra_convention_scene_mirrors_completely(store: FalkorStore) -> None:
    graph = hydra_scene()
    report = Mirror(store).reconcile(graph)
    assert_mirrors(store, graph)  # every Q mesh place and edge, both directions, center on every node
    counts = store.query("MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN count(n) AS n")[0]["n"]
    relationships = store.query("MATCH ()-[e]->() RETURN count(e) AS n")[0]["n"]
    assert (report.nodes, report.relationships) == (counts, relationships) == (15, 2 * 7 + 2 * 1 + 2 * 1 + 14)
    assert store.query("MATCH (r:Room) RETURN r.nodeSymbol AS s, r.class AS c, r.name AS name ORDER BY s") == [
        {"s": "R0", "c": "kitchen", "name": "kitchen"}, {"s": "R1", "c": "lounge", "name": "lounge"}
    ]
    assert store.query("MATCH (o:Object) RETURN o.class AS c ORDER BY c") == [{"c": "Box"}, {"c": "Door"}]
    assert store.query("MATCH (n) WHERE n.nodeSymbol IN ['f0', 'a0'] RETURN n") == []
    assert Mirror(store).reconcile(graph).writes == 0  # a second mirror reads it all back as unchanged


def test_removing_a_connection_removes_both_directions(store: FalkorStore) -> None:
    mirror = Mirror(store)
    graph = hydra_scene()
    mirror.reconcile(graph)
    graph.remove_edge(node_id("Q3"), node_id("Q4"))
    report = mirror.reconcile(graph)
    assert (report.edges_removed, report.writes) == (1, 1)
    assert_mirrors(store, graph)
    assert store.query("MATCH (a {nodeSymbol: 'Q3'})-[e]-(b {nodeSymbol: 'Q4'}) RETURN count(e) AS n") == [{"n": 0}]


def test_a_database_with_one_way_connections_is_completed(store: FalkorStore) -> None:
    graph = hydra_scene()
    Mirror(store).reconcile(graph)
    store.write("MATCH (a {nodeSymbol: 'Q1'})-[e:MESH_PLACE_CONNECTED]->(b {nodeSymbol: 'Q0'}) DELETE e")
    store.write("MATCH (n:MeshPlace {nodeSymbol: 'Q5'}) REMOVE n.center")
    report = Mirror(store).reconcile(graph)  # reads the database: Q0-Q1 is half there, Q5 lacks its center
    assert (report.edges_added, report.nodes_changed) == (1, 1)
    assert_mirrors(store, graph)



class _ResetDuring:
    """The real store; runs ``heracles db reset``'s statement just before the mirror's diff transaction."""

    def __init__(self, store: Any) -> None:
        self.store, self.armed = store, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def write_many(self, statements: Any, **kwargs: Any) -> None:
        if self.armed:
            self.armed = False
            self.store.write(admin.DELETE_ALL_NODES)  # what `heracles db reset` sends, between our statements
        self.store.write_many(statements, **kwargs)


def test_a_reset_between_snapshots_or_during_a_reconcile_is_detected_and_the_whole_snapshot_rewritten(
    store: FalkorStore,
) -> None:
    """Issue 22 item 8: a reset (or restore, or another writer) under a running mirror loses nothing."""
    graph = tiny_scene()
    hooked = _ResetDuring(store)
    mirror = Mirror(hooked)  # type: ignore[arg-type]
    mirror.reconcile(graph)
    # Between two snapshots: the next one, identical for the mirror, writes everything again.
    store.write(admin.DELETE_ALL_NODES)
    mirror.reconcile(graph)
    assert_mirrors(store, graph)
    # During a reconcile: after the mirror read its bookkeeping, before its diff lands.
    moved = tiny_scene()
    moved.get_node(node_id("O1")).attributes.position = np.array([3.0, 3.0, 0.5])
    hooked.armed = True
    report = mirror.reconcile(moved)
    assert not hooked.armed  # the reset ran inside this reconcile
    assert_mirrors(store, moved)
    assert report.nodes == 14
    assert mirror.reconcile(moved).writes == 0  # and the mirror knows the database again


class _DiesAfter:
    """The real store until the mirror's process 'dies' (a SIGKILL, a shutdown past its timeout)
    ``statements`` writing calls after it marked a reconcile begun: every later call raises and
    nothing of it reaches the database."""

    def __init__(self, store: Any, statements: int) -> None:
        self.store, self.left, self.begun = store, statements, False

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def _spend(self) -> None:
        if self.begun and self.left <= 0:
            raise _Died()
        if self.begun:
            self.left -= 1

    def write(self, cypher: str, *args: Any, **kwargs: Any) -> Any:
        self._spend()
        rows = self.store.write(cypher, *args, **kwargs)
        self.begun = self.begun or cypher == mirror_q.BEGIN_UPDATE
        return rows

    def write_many(self, *args: Any, **kwargs: Any) -> None:
        self._spend()
        self.store.write_many(*args, **kwargs)


class _Died(BaseException):
    """Not a database error: the mirror gets no chance to clean up."""


@pytest.mark.parametrize("dies_after", [0, 1], ids=["after BEGIN_UPDATE", "after the diff, before the bump"])
def test_a_mirror_killed_mid_snapshot_leaves_it_marked_and_the_restart_reconciles_the_newest(
    store: FalkorStore, dies_after: int
) -> None:
    """Issue 20 item 4: a snapshot dropped half-written at shutdown stays marked (readers know), and the
    restarted mirror's first snapshot clears the mark with the newest scene whole, even when the
    diff had landed (nothing left to write)."""
    from heracles_ros.mirror.snapshot_reads import read_stamp

    Mirror(store).reconcile(tiny_scene())
    moved = tiny_scene()
    moved.get_node(node_id("O1")).attributes.position = np.array([3.0, 3.0, 0.5])
    moved.remove_node(node_id("O3"))
    with pytest.raises(_Died):
        Mirror(_DiesAfter(store, dies_after)).reconcile(moved)  # type: ignore[arg-type]
    assert read_stamp(store).writing  # half-written, and readers can tell
    Mirror(store).reconcile(moved)  # the restarted node, fed the newest snapshot
    assert not read_stamp(store).writing
    assert_mirrors(store, moved)
