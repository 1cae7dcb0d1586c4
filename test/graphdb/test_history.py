"""The scene's history on a real database: events from the mirror's diffs, thresholds, retention."""
from __future__ import annotations

import numpy as np
import pytest
from support.history_scene import MOVED_FROM, MOVED_TO, changed_scene
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.errors import ConfigError
from heracles_ros.graphdb.history import HistorySettings
from heracles_ros.graphdb.mirror import Mirror
from heracles_ros.graphdb.store import GraphStore

T0 = 1_800_000_000.0


def _kinds(events: list) -> set[tuple[str, str]]:
    return {(e.kind, e.symbol) for e in events}


def test_the_first_snapshot_starts_the_history_and_writes_no_entry_per_node(store: GraphStore) -> None:
    report = Mirror(store).reconcile(tiny_scene(), stamp_s=T0, sequence=1)
    assert report.changes == []  # the starting point, not news
    assert store.query("MATCH (s:Seen) RETURN count(s) AS n") == [{"n": 0}]  # a first load costs one statement
    assert store.query("MATCH (h:HistoryClock) RETURN h.t AS t, h.seq AS seq, h.start_t AS s0, h.start_seq AS q0"
                       ) == [{"t": T0, "seq": 1, "s0": T0, "q0": 1}]


def test_first_sightings_of_nodes_there_from_the_start_and_of_new_ones(store: GraphStore) -> None:
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=T0, sequence=1)
    mirror.reconcile(tiny_scene(), stamp_s=T0 + 30, sequence=2)  # nothing changed: still no entries
    assert store.query("MATCH (s:Seen) RETURN count(s) AS n") == [{"n": 0}]
    mirror.reconcile(changed_scene(), stamp_s=T0 + 60, sequence=3)  # O0 moves, O3 goes, O5 comes
    rows = store.query("MATCH (s:Seen) RETURN s.symbol AS s, s.first_t AS first, s.first_seq AS q, "
                       "s.present AS p, s.last_t AS last, s.class AS c, s.x AS x ORDER BY s")
    assert rows == [
        {"s": "O0", "first": T0, "q": 1, "p": True, "last": T0 + 60, "c": "box", "x": MOVED_TO[0]},
        {"s": "O3", "first": T0, "q": 1, "p": False, "last": T0 + 30, "c": "box", "x": 5.0},
        {"s": "O5", "first": T0 + 60, "q": 3, "p": True, "last": T0 + 60, "c": "chair", "x": 2.0},
    ]
    # The clock's start does not move with later snapshots.
    assert store.query("MATCH (h:HistoryClock) RETURN h.start_t AS s0, h.t AS t") == [{"s0": T0, "t": T0 + 60}]


def test_additions_carry_their_room(store: GraphStore) -> None:
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=T0)
    mirror.reconcile(changed_scene(), stamp_s=T0 + 1)
    assert store.query("MATCH (c:Change) WHERE c.kind = 'appeared' OR c.kind = 'disappeared' "
                       "RETURN c.symbol AS s, c.room AS room ORDER BY s") == [
        {"s": "O3", "room": "R1"}, {"s": "O5", "room": "R0"}]


def test_moves_beyond_the_threshold_removals_and_additions_are_recorded(store: GraphStore) -> None:
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=T0, sequence=1)
    report = mirror.reconcile(changed_scene(), stamp_s=T0 + 60, sequence=2)
    assert _kinds(report.changes) == {("moved", "O0"), ("disappeared", "O3"), ("appeared", "O5")}
    moved = next(e for e in report.changes if e.kind == "moved")
    assert (moved.from_position, moved.position, moved.t, moved.seq) == (MOVED_FROM, MOVED_TO, T0 + 60, 2)
    # Present-tense queries see the present only.
    assert store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s ORDER BY s") == [
        {"s": s} for s in ("O0", "O1", "O2", "O4", "O5")]
    assert store.query("MATCH (n) WHERE n.nodeSymbol = 'O3' RETURN count(n) AS n") == [{"n": 0}]
    # Where the moved object was before, from the history schema.
    before = store.query("MATCH (c:Change {symbol: 'O0', kind: 'moved'}) WHERE c.t <= $t "
                         "RETURN c.from_x AS x, c.from_y AS y, c.from_z AS z, c.t AS t", {"t": T0 + 60})
    assert before == [{"x": 0.0, "y": 1.0, "z": 0.5, "t": T0 + 60}]
    gone = store.query("MATCH (s:Seen {symbol: 'O3'}) RETURN s.present AS p, s.last_t AS last, s.gone_t AS gone, "
                       "s.first_t AS first")
    assert gone == [{"p": False, "last": T0, "gone": T0 + 60, "first": T0}]


def test_slow_drift_is_caught_once_it_adds_up(store: GraphStore) -> None:
    mirror = Mirror(store, history=HistorySettings(move_threshold_m=0.5))
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    moves = []
    for step in range(1, 7):  # 0.1 m per snapshot: the sixth passes 0.5 m from where it was recorded
        graph.get_node(node_id("O2")).attributes.position = np.array([4.0 + 0.1 * step, 1.0, 0.5])
        moves += [e for e in mirror.reconcile(graph, stamp_s=T0 + step).changes if e.kind == "moved"]
    assert [(e.symbol, e.t) for e in moves] == [("O2", T0 + 6)]


def test_relabel_and_rename_are_recorded(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    graph.get_node(node_id("O1")).attributes.semantic_label = 3
    graph.get_node(node_id("O2")).attributes.name = "red bicycle"
    events = mirror.reconcile(graph, stamp_s=T0 + 1).changes
    assert {(e.kind, e.symbol, e.from_class or e.from_name) for e in events} == {
        ("relabelled", "O1", "bag"), ("renamed", "O2", "bicycle 2")}


def test_a_restarted_mirror_keeps_the_reference_positions(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene(), stamp_s=T0)
    events = Mirror(store).reconcile(changed_scene(), stamp_s=T0 + 5).changes
    assert ("moved", "O0") in _kinds(events) and ("moved", "O1") not in _kinds(events)
    # After another restart O0 is measured from where its move was recorded, not from scratch.
    graph = changed_scene()
    graph.get_node(node_id("O0")).attributes.position = np.array([MOVED_TO[0] + 0.4, MOVED_TO[1], MOVED_TO[2]])
    assert Mirror(store).reconcile(graph, stamp_s=T0 + 6).changes == []
    graph.get_node(node_id("O0")).attributes.position = np.array([MOVED_TO[0] + 0.7, MOVED_TO[1], MOVED_TO[2]])
    moved = Mirror(store).reconcile(graph, stamp_s=T0 + 7).changes
    assert [(e.kind, e.symbol, e.from_position) for e in moved] == [("moved", "O0", MOVED_TO)]


def test_retention_by_count_and_age(store: GraphStore) -> None:
    mirror = Mirror(store, history=HistorySettings(max_changes=20, max_age_s=0))
    mirror = Mirror(store, history=HistorySettings(max_changes=7, max_age_s=0))
    mirror.reconcile(tiny_scene(), stamp_s=T0)  # the start: no events
    for step in range(1, 4):  # 3 events each (O0 moves 3 m away and back, O3 goes and comes, O5 comes and goes)
        mirror.reconcile(changed_scene() if step % 2 else tiny_scene(), stamp_s=T0 + step)
    assert mirror.history.size()["changes"] == 7  # 9 written, the 2 oldest pruned
    assert store.query("MATCH (c:Change) RETURN min(c.t) AS t") == [{"t": T0 + 1}]
    assert store.query("MATCH (c:Change) WHERE c.t = $t RETURN count(c) AS n", {"t": T0 + 1}) == [{"n": 1}]
    aged = Mirror(store, history=HistorySettings(max_age_s=10))
    aged.reconcile(tiny_scene(), stamp_s=T0 + 12)
    assert store.query("MATCH (c:Change) RETURN min(c.t) AS t") == [{"t": T0 + 2}]


def test_history_off_writes_nothing(store: GraphStore) -> None:
    Mirror(store, history=HistorySettings(enabled=False)).reconcile(tiny_scene())
    assert store.query("MATCH (c:Change) RETURN count(c) AS n") == [{"n": 0}]


@pytest.mark.parametrize("bad", [{"move_threshold_m": -1.0}, {"max_age_s": -5.0}, {"max_changes": -1}])
def test_bad_settings_are_named(bad: dict) -> None:
    with pytest.raises(ConfigError, match=next(iter(bad))):
        HistorySettings(**bad)
