"""The scene's history on a real database: events from the mirror's diffs, thresholds, retention."""
from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
import spark_dsg as dsg
from support.history_scene import MOVED_FROM, MOVED_TO, changed_scene
from support.tiny_scene import OBJECT_CLASSES, add_object, node_id, tiny_scene

from heracles_ros.errors import ConfigError
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.mirror.history import HistorySettings, iso_time, read_clock
from heracles_ros.mirror.reconcile import Mirror

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


def test_a_move_is_measured_from_where_the_last_recorded_move_left_it(store: GraphStore) -> None:
    """One mirror throughout (no restart): the reference moves with each recorded move, and only then."""
    mirror = Mirror(store, history=HistorySettings(move_threshold_m=0.5))
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    o2 = graph.get_node(node_id("O2")).attributes
    moves = []
    for step, x in enumerate((5.0, 5.3, 5.6, 4.9), start=1):  # O2 starts at x = 4.0
        o2.position = np.array([x, 1.0, 0.5])
        moves += [(e.t, e.from_position[0]) for e in mirror.reconcile(graph, stamp_s=T0 + step).changes
                  if e.kind == "moved"]
    # 1 m: recorded from 4.0. 0.3 m, then 0.6 m from 5.0: the second is recorded. 0.7 m back: recorded from 5.6.
    assert moves == [(T0 + 1, 4.0), (T0 + 3, 5.0), (T0 + 4, 5.6)]


def test_a_rename_or_relabel_does_not_reset_where_a_move_is_measured_from(store: GraphStore) -> None:
    mirror = Mirror(store, history=HistorySettings(move_threshold_m=0.5))
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    o2 = graph.get_node(node_id("O2")).attributes
    o2.position = np.array([4.3, 1.0, 0.5])
    assert mirror.reconcile(graph, stamp_s=T0 + 1).changes == []  # 0.3 m: no news
    o2.name, o2.semantic_label = "red bicycle", 3
    o2.position = np.array([4.35, 1.0, 0.5])
    assert _kinds(mirror.reconcile(graph, stamp_s=T0 + 2).changes) == {("renamed", "O2"), ("relabelled", "O2")}
    o2.position = np.array([4.6, 1.0, 0.5])  # 0.6 m from where it was recorded, 0.25 m from the rename
    moved = [e for e in mirror.reconcile(graph, stamp_s=T0 + 3).changes if e.kind == "moved"]
    assert [(e.symbol, e.from_position) for e in moved] == [("O2", (4.0, 1.0, 0.5))]


def test_relabel_and_rename_are_recorded(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    graph.get_node(node_id("O1")).attributes.semantic_label = 3
    graph.get_node(node_id("O2")).attributes.name = "red bicycle"
    events = mirror.reconcile(graph, stamp_s=T0 + 1).changes
    assert {(e.kind, e.symbol, e.from_class or e.from_name) for e in events} == {
        ("relabelled", "O1", "bag"), ("renamed", "O2", "bicycle 2")}


def test_corrections_are_no_news_to_a_restarted_mirror(store: GraphStore) -> None:
    """The baseline a restarted mirror reads back holds what Hydra said, not the operator's corrections."""
    graph = tiny_scene()
    Mirror(store).reconcile(graph, stamp_s=T0)
    Corrections(store).apply([("O2", "class", "lamp"), ("O1", "x", 9.0)])
    assert Mirror(store).reconcile(graph, stamp_s=T0 + 1).changes == []  # no relabel, no move
    held = "MATCH (n:Object {nodeSymbol: $s}) RETURN n.class AS c, n.x AS x"
    assert store.query(held, {"s": "O2"})[0]["c"] == "lamp" and store.query(held, {"s": "O1"})[0]["x"] == 9.0
    graph.get_node(node_id("O2")).attributes.semantic_label = 3  # Hydra itself relabels it after another restart
    events = Mirror(store).reconcile(graph, stamp_s=T0 + 2).changes
    assert [(e.kind, e.symbol, e.from_class, e.cls) for e in events] == [
        ("relabelled", "O2", "bicycle", "chair")]
    assert store.query(held, {"s": "O2"})[0]["c"] == "lamp"  # the correction still holds over Hydra's new label


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


def _churn(step: int) -> object:
    """The tiny scene with one renumbered detection: O(100+step) there only in this snapshot."""
    graph = tiny_scene()
    add_object(graph, 100 + step, 1, (1.0, 1.0, 0.5), None)
    return graph


class _RetentionOracle:
    """The docs' retention rules, applied to what the test itself sent (not to the library's output).

    Events (here all of objects, so under ``max_changes``' sibling cap for objects): older than ``max_age_s``
    before the newest snapshot go; past the cap, the oldest snapshots' events go, whole, until at most 90 % of
    it remain; the history is complete from the newest time deleted on (``kept_from``). Seen entries: gone
    ones older than the age go; past ``max_seen`` those gone longest go down to 90 %; a node in the scene
    keeps its entry.
    """

    def __init__(self, max_changes: int, max_seen: int, max_age_s: float) -> None:
        self.max_changes, self.max_seen, self.max_age_s = max_changes, max_seen, max_age_s
        self.changes: list[tuple[float, str, str]] = []  # (t, symbol, kind)
        self.seen: dict[str, tuple[bool, float]] = {}  # symbol -> (present, last_t)
        self.kept_from: float | None = None

    def snapshot(self, t: float, appeared: str, vanished: str | None, previous_t: float) -> None:
        self.changes.append((t, appeared, "appeared"))
        self.seen[appeared] = (True, t)
        if vanished is not None:
            self.changes.append((t, vanished, "disappeared"))
            self.seen[vanished] = (False, previous_t)  # last held by the snapshot before this one
        if self.max_age_s > 0:
            self._cut_up_to(max((c[0] for c in self.changes if c[0] < t - self.max_age_s), default=None))
            self.seen = {s: v for s, v in self.seen.items() if v[0] or v[1] >= t - self.max_age_s}
        if self.max_changes > 0 and len(self.changes) > self.max_changes:
            excess = len(self.changes) - int(0.9 * self.max_changes)
            self._cut_up_to(sorted(self.changes)[excess - 1][0])
        if self.max_seen > 0 and len(self.seen) > self.max_seen:
            gone = sorted((v[1], s) for s, v in self.seen.items() if not v[0])
            for _, symbol in gone[: len(self.seen) - int(0.9 * self.max_seen)]:
                del self.seen[symbol]

    def _cut_up_to(self, t: float | None) -> None:
        if t is not None:
            self.changes = [c for c in self.changes if c[0] > t]
            self.kept_from = max(t, self.kept_from or t)


@pytest.mark.parametrize(
    ("max_changes", "max_seen", "max_age_s"),
    [(20, 0, 0), (0, 12, 0), (0, 0, 7.5), (9, 7, 11.0), (1, 0, 0), (0, 1, 0), (0, 0, 1.0)],  # the last: the smallest
)
def test_retention_by_count_and_age_matches_the_rules(
    store: GraphStore, max_changes: int, max_seen: int, max_age_s: float
) -> None:
    """Under churn (a renumbered detection every snapshot) Change and Seen stay within their bounds,
    and what is kept is exactly what the rules keep, after every snapshot; so is the time from which
    the objects' events are complete."""
    settings = HistorySettings(max_changes=1, max_object_changes=max_changes, max_seen=max_seen, max_age_s=max_age_s)
    mirror = Mirror(store, history=settings)  # max_changes=1: the places' cap never touches the objects' events
    mirror.reconcile(tiny_scene(), stamp_s=T0)  # the start: no events
    oracle = _RetentionOracle(max_changes, max_seen, max_age_s)
    previous_t = T0
    for step in range(1, 41):
        t = T0 + 1.5 * step
        mirror.reconcile(_churn(step), stamp_s=t)
        oracle.snapshot(t, f"O{100 + step}", f"O{99 + step}" if step > 1 else None, previous_t)
        previous_t = t
        changes = store.query("MATCH (c:Change) RETURN c.t AS t, c.symbol AS s, c.kind AS k")
        assert sorted((r["t"], r["s"], r["k"]) for r in changes) == sorted(oracle.changes), f"step {step}"
        seen = store.query("MATCH (s:Seen) RETURN s.symbol AS s, s.present AS p, s.last_t AS t")
        assert {r["s"]: (r["p"], r["t"]) for r in seen} == oracle.seen, f"step {step}"
        clock = store.query("MATCH (h:HistoryClock) RETURN h.object_kept_from_t AS k, h.kept_from_t AS other")
        assert clock == [{"k": oracle.kept_from, "other": None}], f"step {step}"
    assert max_changes == 0 or len(oracle.changes) <= max_changes
    assert max_seen == 0 or len(oracle.seen) <= max_seen
    assert len(oracle.changes) < 79 or len(oracle.seen) < 40  # some bound did cut


def test_history_off_writes_nothing(store: GraphStore) -> None:
    Mirror(store, history=HistorySettings(enabled=False)).reconcile(tiny_scene())
    assert store.query("MATCH (c:Change) RETURN count(c) AS n") == [{"n": 0}]


@pytest.mark.parametrize(
    "bad", [{"move_threshold_m": -1.0}, {"max_age_s": -5.0}, {"max_age_s": -0.5}, {"max_changes": -1}, {"max_seen": -1}]
)
def test_bad_settings_are_named(bad: dict) -> None:
    with pytest.raises(ConfigError, match=next(iter(bad))):
        HistorySettings(**bad)


@pytest.fixture
def new_york(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The process runs in America/New_York (UTC-5 in January), as a robot's computer may."""
    import time

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    assert time.timezone != 0  # the zone really is not UTC
    try:
        yield
    finally:
        monkeypatch.undo()
        time.tzset()


def test_history_times_are_utc_whatever_the_local_zone(store: GraphStore, new_york: None) -> None:
    """Issue 21: times read without a zone passed only because the machine ran in UTC."""
    from heracles_ros.mirror.history import iso_time, read_changes
    from heracles_ros.mirror.time_text import parse_time

    t0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z, 03:00 in New York
    assert iso_time(t0 + 0.25) == "2027-01-15T08:00:00.250Z"
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=t0)
    mirror.reconcile(changed_scene(), stamp_s=t0 + 3600)  # 09:00Z
    # `heracles changes --since` with a time without a zone means UTC, not the local clock.
    assert parse_time("2027-01-15T08:30:00", what="--since") == t0 + 1800
    assert parse_time("2027-01-15T03:30:00-05:00", what="--since") == t0 + 1800
    events = read_changes(store, since=parse_time("2027-01-15T08:30:00", what="--since"))
    assert events and {e.t for e in events} == {t0 + 3600}
    assert all(e.to_json()["time"] == "2027-01-15T09:00:00.000Z" for e in events)
    assert read_changes(store, since=parse_time("2027-01-15T09:30:00", what="--since")) == []


def test_an_event_carries_what_changed_and_nothing_else_in_both_directions(store: GraphStore) -> None:
    """A relabel or rename is news whichever way the label or name changes; only a move has a from_position."""
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    o1 = graph.get_node(node_id("O1")).attributes
    for step, (label, name) in enumerate(((3, "bag 1"), (1, "bag 1"), (1, "a bag"), (1, "bag 1")), start=1):
        before_class, before_name = ("chair", "bag 1") if step == 2 else ("bag", "a bag" if step == 4 else "bag 1")
        o1.semantic_label, o1.name = label, name
        [event] = mirror.reconcile(graph, stamp_s=T0 + step).changes
        expected_kind = "relabelled" if step <= 2 else "renamed"
        assert (event.kind, event.symbol, event.cls, event.name) == (
            expected_kind, "O1", OBJECT_CLASSES[label][1], name), step
        assert event.from_position is None
        if expected_kind == "relabelled":
            assert (event.from_class, event.from_name) == (before_class, None)
            assert "from_name" not in event.to_json() and event.to_json()["from_class"] == before_class
        else:
            assert (event.from_class, event.from_name) == (None, before_name)
            assert "from_class" not in event.to_json() and event.to_json()["from_name"] == before_name
        assert "from_position" not in event.to_json() and "distance_m" not in event.to_json()


def test_a_move_reports_its_distance_to_the_millimetre(store: GraphStore) -> None:
    mirror = Mirror(store, history=HistorySettings(move_threshold_m=0.5))
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    graph.get_node(node_id("O2")).attributes.position = np.array([5.0, 2.0, 0.5])  # from (4, 1, 0.5): sqrt 2
    [event] = mirror.reconcile(graph, stamp_s=T0 + 1).changes
    assert event.to_json()["distance_m"] == 1.414 and event.to_json()["from_position"] == [4.0, 1.0, 0.5]


def test_seen_entries_keep_each_nodes_class_name_and_place(store: GraphStore) -> None:
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=T0)
    mirror.reconcile(changed_scene(), stamp_s=T0 + 1)
    rows = store.query("MATCH (s:Seen) RETURN s.symbol AS s, s.layer AS layer, s.class AS c, s.name AS name, "
                       "s.x AS x, s.y AS y, s.z AS z ORDER BY s")
    graph = changed_scene()
    names = {symbol: graph.get_node(node_id(symbol)).attributes.name for symbol in ("O0", "O5")}
    assert [(r["s"], r["layer"], r["name"]) for r in rows] == [
        ("O0", "Object", names["O0"]), ("O3", "Object", "box 3"), ("O5", "Object", names["O5"])]
    assert (rows[0]["x"], rows[0]["y"], rows[0]["z"]) == MOVED_TO


def carry_o0_into_r1(graph: dsg.DynamicSceneGraph) -> None:
    """O0 carried from P0 (room R0) to P4 (room R1)."""
    graph.remove_edge(node_id("P0"), node_id("O0"))
    graph.insert_edge(node_id("P4"), node_id("O0"))
    graph.get_node(node_id("O0")).attributes.position = np.array([4.0, 1.0, 0.5])


def test_a_moved_object_is_placed_in_the_room_it_moved_into(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    carry_o0_into_r1(graph)
    [moved] = [e for e in mirror.reconcile(graph, stamp_s=T0 + 1).changes if e.kind == "moved"]
    # The room as the mirrored scene has it now, read through the present-tense graph, not the history.
    now = store.query("MATCH (r:Room)-[:CONTAINS]->(:MeshPlace)-[:CONTAINS]->(o:Object {nodeSymbol: 'O0'}) "
                      "RETURN r.nodeSymbol AS room")
    assert now == [{"room": "R1"}] and moved.room == "R1"


def test_a_reconcile_whose_events_span_many_statements_and_transactions_writes_them_all(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heracles_ros.mirror import history

    monkeypatch.setattr(history, "_ROWS_PER_STATEMENT", 2)
    monkeypatch.setattr(history, "_STATEMENTS_PER_TRANSACTION", 2)
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    for index in range(200, 207):
        add_object(graph, index, 2, (1.0, 1.5, 0.5), None)
    events = mirror.reconcile(graph, stamp_s=T0 + 1).changes
    assert len(events) == 7
    written = store.query("MATCH (c:Change) RETURN c.symbol AS s ORDER BY s")
    seen = store.query("MATCH (s:Seen) RETURN s.symbol AS s ORDER BY s")
    wanted = [{"s": f"O{i}"} for i in sorted(range(200, 207), key=str)]
    assert written == wanted and seen == wanted
    assert read_clock(store) == T0 + 1


def test_the_clock_and_the_size_read_back_what_was_written(store: GraphStore) -> None:
    assert read_clock(store) is None  # nothing mirrored yet
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=T0)
    assert read_clock(store) == T0
    mirror.reconcile(changed_scene(), stamp_s=T0 + 60)
    assert read_clock(store) == T0 + 60
    assert mirror.history.size() == {"changes": 3, "object_changes": 3, "seen": 3}  # O0 moved, O3 gone, O5 new


def test_times_keep_their_milliseconds_whatever_the_second() -> None:
    assert iso_time(1_800_000_001.9995) == "2027-01-15T08:00:01.999Z"  # an odd second, a fraction near 1
    assert iso_time(1_800_000_000.0) == "2027-01-15T08:00:00.000Z"


@pytest.mark.parametrize("edge", [{"move_threshold_m": 0.0}, {"max_age_s": 0.0}, {"max_changes": 0}, {"max_seen": 0}])
def test_settings_at_their_lower_edge_are_accepted(edge: dict) -> None:
    assert HistorySettings(**edge)


@pytest.mark.backends("falkordb")
def test_the_history_indexes_exist_once_it_has_recorded(store: GraphStore) -> None:
    from heracles_ros.graphdb.cypher.falkordb_indexes import INDEXES
    from heracles_ros.graphdb.cypher.history import INDEXES as WANTED

    Mirror(store).reconcile(tiny_scene(), stamp_s=T0)
    have = {(row["label"], prop) for row in store.query(INDEXES) for prop in row["properties"]}
    assert set(WANTED) <= have


def test_a_seen_entry_without_coordinates_does_not_stop_a_restarted_mirror(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene(), stamp_s=T0)
    Mirror(store).reconcile(changed_scene(), stamp_s=T0 + 1)
    store.write("CREATE (:Seen {symbol: 'O77', present: true})")  # damaged by hand: no x, y, z
    graph = changed_scene()
    graph.get_node(node_id("O0")).attributes.position = np.array([MOVED_TO[0] + 0.7, MOVED_TO[1], MOVED_TO[2]])
    moved = Mirror(store).reconcile(graph, stamp_s=T0 + 2).changes
    assert [(e.kind, e.symbol, e.from_position) for e in moved] == [("moved", "O0", MOVED_TO)]


def test_the_defaults_are_thirty_days_200k_events_100k_entries_half_a_metre() -> None:
    """The README's defaults (the dsg_mirror node declares these same values as its parameters')."""
    settings = HistorySettings()
    assert (settings.enabled, settings.max_age_s, settings.max_changes, settings.max_seen,
            settings.move_threshold_m) == (True, 30 * 24 * 3600.0, 200_000, 100_000, 0.5)


def test_a_restarted_mirror_counts_the_events_already_kept_against_the_cap(store: GraphStore) -> None:
    mirror = Mirror(store, history=HistorySettings(max_changes=0))
    mirror.reconcile(tiny_scene(), stamp_s=T0)
    for step in range(1, 7):  # 11 events, no cap yet
        mirror.reconcile(_churn(step), stamp_s=T0 + step)
    capped = Mirror(store, history=HistorySettings(max_object_changes=10, max_age_s=0))
    capped.reconcile(_churn(7), stamp_s=T0 + 7)  # 2 more: 13 kept before pruning, past the cap of 10
    # The oldest snapshots, whole, until at most 90 % of the cap remain: T0+1 (1 event), T0+2 and T0+3 (2 each).
    assert capped.history.size() == {"changes": 8, "object_changes": 8, "seen": 7}


def test_a_removal_alone_carries_the_room_it_left(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    graph.remove_node(node_id("O3"))  # on P5, room R1
    [gone] = mirror.reconcile(graph, stamp_s=T0 + 1).changes
    assert (gone.kind, gone.symbol, gone.room) == ("disappeared", "O3", "R1")
    assert gone.from_position is None  # only a move says where from


def test_a_move_carries_the_room_it_left_and_the_room_it_entered(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    carry_o0_into_r1(graph)
    [moved] = mirror.reconcile(graph, stamp_s=T0 + 1).changes
    assert (moved.kind, moved.room, moved.from_room) == ("moved", "R1", "R0")
    assert moved.to_json()["from_room"] == "R0"
    assert store.query("MATCH (c:Change {symbol: 'O0'}) RETURN c.room AS room, c.from_room AS from_room") == [
        {"room": "R1", "from_room": "R0"}]
    graph.get_node(node_id("O1")).attributes.semantic_label = 3  # a relabel has no from_room
    [relabelled] = mirror.reconcile(graph, stamp_s=T0 + 2).changes
    assert (relabelled.kind, relabelled.room, relabelled.from_room) == ("relabelled", "R0", None)


def test_snapshot_times_strictly_increase_even_when_stamps_go_back(
    store: GraphStore, caplog: pytest.LogCaptureFixture
) -> None:
    """A replayed bag or a file loaded with an older --time: each such snapshot is recorded 1 ms after the newest,
    so the first snapshot after a time is always one snapshot; the first going back is logged, once."""
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    o2 = graph.get_node(node_id("O2")).attributes
    times = []
    for step, stamp in enumerate((T0 - 100, T0 - 50, T0, T0 + 10), start=1):
        o2.position = np.array([4.0 + step, 1.0, 0.5])
        [event] = mirror.reconcile(graph, stamp_s=stamp).changes
        times.append(event.t)
    assert times == pytest.approx([T0 + 0.001, T0 + 0.002, T0 + 0.003, T0 + 10], abs=1e-6)
    assert read_clock(store) == T0 + 10
    warnings = [r for r in caplog.records if "older than the history's newest" in r.getMessage()]
    assert len(warnings) == 1 and "2027-01-15T07:58:20.000Z" in warnings[0].getMessage()


def _move_place(graph: object, step: int) -> None:
    graph.get_node(node_id("P2")).attributes.position = np.array([2.0, float(step), 0.0])  # 1 m a step


def test_the_objects_events_and_the_others_are_pruned_apart(store: GraphStore) -> None:
    """The places' churn (most of a large scene's events) never prunes what the objects did, and each pool says
    from when it is complete."""
    mirror = Mirror(store, history=HistorySettings(max_changes=4, max_object_changes=100, max_age_s=0))
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    graph.get_node(node_id("O0")).attributes.position = np.array([3.0, 1.0, 0.5])
    _move_place(graph, 1)
    mirror.reconcile(graph, stamp_s=T0 + 1)  # O0 and P2 move
    for step in range(2, 7):  # P2 alone, 5 more moves: past the places' cap of 4
        _move_place(graph, step)
        mirror.reconcile(graph, stamp_s=T0 + step)
    kept = store.query("MATCH (c:Change) RETURN c.symbol AS s, c.t AS t, c.object_t AS ot ORDER BY t, s")
    # The fifth place event passed the cap of 4: the oldest two snapshots' went (down to 90 % of 4, 3 kept);
    # the object's event, in the oldest snapshot, stayed.
    places = [{"s": "P2", "t": T0 + n, "ot": None} for n in (3, 4, 5, 6)]
    assert kept == [{"s": "O0", "t": T0 + 1, "ot": T0 + 1}, *places]
    assert store.query("MATCH (h:HistoryClock) RETURN h.kept_from_t AS k, h.object_kept_from_t AS ok") == [
        {"k": T0 + 2, "ok": None}]
    assert mirror.history.size() == {"changes": 5, "object_changes": 1, "seen": 2}


def test_object_events_from_before_object_t_join_their_pool(store: GraphStore) -> None:
    """A history written before the objects' pool existed: its object events get object_t when a mirror starts,
    after the index exists, and count against the objects' cap."""
    Mirror(store).reconcile(tiny_scene(), stamp_s=T0)
    Mirror(store).reconcile(changed_scene(), stamp_s=T0 + 1)
    store.write("MATCH (c:Change) REMOVE c.object_t")  # as an older version wrote them
    store.write("CREATE (:Change {symbol: 'P9', kind: 'moved', layer: 'MeshPlace', t: $t})", {"t": T0 + 1})
    mirror = Mirror(store, history=HistorySettings(max_object_changes=2, max_age_s=0))
    mirror.reconcile(changed_scene(), stamp_s=T0 + 2)  # no news: nothing to prune yet
    assert store.query("MATCH (c:Change) WHERE c.object_t = c.t RETURN count(c) AS n") == [{"n": 3}]
    assert store.query("MATCH (c:Change {symbol: 'P9'}) RETURN c.object_t AS ot") == [{"ot": None}]
    graph = changed_scene()
    graph.get_node(node_id("O2")).attributes.position = np.array([5.0, 1.0, 0.5])
    mirror.reconcile(graph, stamp_s=T0 + 3)  # a fourth object event: past the cap of 2, the oldest snapshot goes
    assert store.query("MATCH (c:Change) RETURN c.symbol AS s ORDER BY s") == [{"s": "O2"}, {"s": "P9"}]
    assert store.query("MATCH (h:HistoryClock) RETURN h.object_kept_from_t AS ok") == [{"ok": T0 + 1}]


def test_the_time_indexes_answer_ranges_as_a_scan_does(store: GraphStore) -> None:
    """History indexes exist before the first event: an indexed range returns what a scan (``+ 0`` defeats the
    index) returns, for both pools, after churn and pruning."""
    mirror = Mirror(store, history=HistorySettings(max_changes=30, max_object_changes=30))
    graph = tiny_scene()
    mirror.reconcile(graph, stamp_s=T0)
    for step in range(1, 41):
        churned = _churn(step)
        _move_place(churned, step)
        mirror.reconcile(churned, stamp_s=T0 + step)
    for at in (T0, T0 + 10.5, T0 + 30, T0 + 39):
        for time_of in ("c.t", "c.object_t"):
            indexed = store.query(f"MATCH (c:Change) WHERE {time_of} > $at RETURN count(c) AS n", {"at": at})
            scanned = store.query(f"MATCH (c:Change) WHERE {time_of} + 0 > $at RETURN count(c) AS n", {"at": at})
            assert indexed == scanned and indexed[0]["n"] > 0, (at, time_of)
