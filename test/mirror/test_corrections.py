"""Operator corrections: narrow updates only, re-applied after snapshots, retired with their node."""
from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from support.tiny_scene import OBJECT_CLASSES, node_id, tiny_scene
from support.zone import local_zone

from heracles_ros.errors import CorrectionError
from heracles_ros.graphdb.falkordb_store import FalkorStore
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import EXTENT_MARGIN_M, Corrections, operator_name
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.outcomes import OverlayEventKind, PlanStatus
from heracles_ros.planning.planner import Planner

#: A snapshot time (2027-01-15T08:00:00Z).
T0 = 1_800_000_000.0


def object_class(store: FalkorStore, symbol: str) -> str:
    rows = store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c", {"s": symbol})
    return str(rows[0]["c"])


def test_correction_survives_snapshots_that_would_undo_it(store: FalkorStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    changes = Corrections(store).apply([("O2", "class", "bag")])
    assert [str(c) for c in changes] == ["O2.class: 'bicycle' -> 'bag'"]
    assert object_class(store, "O2") == "bag"

    # Hydra moves the object (so the mirror rewrites it, class 'bicycle' included).
    graph.get_node(node_id("O2")).attributes.position = graph.get_node(node_id("O2")).attributes.position + 1.0
    report = mirror.reconcile(graph)
    assert report.nodes_changed == 1 and report.corrections_reapplied == 1
    assert object_class(store, "O2") == "bag"

    # A restarted mirror reading its baseline from the database keeps it too.
    Mirror(store).reconcile(graph)
    assert object_class(store, "O2") == "bag"
    [active] = Corrections(store).active()
    assert (active.symbol, active.property, active.value, active.original) == ("O2", "class", "bag", "bicycle")


def test_a_second_correction_keeps_the_value_hydra_gave(store: FalkorStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    corrections.apply([("O2", "class", "bag")])
    [change] = corrections.apply([("O2", "class", "box")])
    assert (change.old, change.new) == ("bag", "box")
    [active] = corrections.active()
    assert (active.value, active.original) == ("box", "bicycle")
    assert object_class(store, "O2") == "box"


@pytest.fixture
def non_utc_zone() -> Iterator[None]:
    """The record's times must read the same on a robot whose zone is not UTC."""
    with local_zone():
        yield


def test_correction_of_a_vanished_node_is_retired_and_returns_with_it(store: GraphStore, non_utc_zone: None) -> None:
    """One missed detection must not undo what the operator said (issue 22 item 7)."""
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, sequence=1, stamp_s=T0)
    corrections = Corrections(store)
    corrections.apply([("O1", "name", "blue bag"), ("O1", "x", 1.25)])
    graph.remove_node(node_id("O1"))
    report = mirror.reconcile(graph, sequence=2, stamp_s=T0 + 1)
    assert report.corrections_retired == ["O1"]
    assert corrections.active() == [] and corrections.counts() == {"retired": 2}
    for record in corrections.all():
        assert (record.status, record.retired_s, record.times_retired) == ("retired", T0 + 1, 1)
        assert record.retired_why == "O1 was not in Hydra's snapshot 2 of 2027-01-15T08:00:01+00:00"
        assert record.as_dict()["retired"] == "2027-01-15T08:00:01+00:00"

    mirror.reconcile(graph, sequence=3, stamp_s=T0 + 2)  # still gone: nothing changes
    assert corrections.counts() == {"retired": 2}
    mirror.reconcile(tiny_scene(), sequence=4, stamp_s=T0 + 3)  # Hydra sees it again
    assert corrections.counts() == {"active": 2}
    assert store.query("MATCH (o:Object {nodeSymbol: 'O1'}) RETURN o.name AS n", {}) == [{"n": "blue bag"}]
    assert position(store, "O1") == center(store, "O1") == [1.25, 1.0, 0.5]
    for record in corrections.all():
        assert (record.returned_s, record.times_retired, record.retired_s) == (T0 + 3, 1, T0 + 1)
        assert record.as_dict()["returned"] == "2027-01-15T08:00:03+00:00"

    # It stays through snapshots that rewrite the node, and a revert gives back what Hydra says now.
    graph = tiny_scene()
    graph.get_node(node_id("O1")).attributes.position = [1.0, 2.0, 0.5]
    mirror.reconcile(graph, sequence=5, stamp_s=T0 + 4)
    assert position(store, "O1") == center(store, "O1") == [1.25, 2.0, 0.5]
    corrections.revert("O1.x")
    assert position(store, "O1") == center(store, "O1") == [1.0, 2.0, 0.5]

    # A second miss counts.
    graph.remove_node(node_id("O1"))
    mirror.reconcile(graph, sequence=6, stamp_s=T0 + 5)
    assert {(r.id, r.status, r.times_retired) for r in corrections.all()} == {
        ("O1.name", "retired", 2), ("O1.x", "reverted", 1)
    }


def test_correction_ids_are_matched_exactly(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    corrections.apply([("O1", "class", "box"), ("O1", "name", "red box"), ("O4", "class", "bag")])
    for cut in ("O1.class\x00junk", "O1\x00.class", "O14\x00.class", "O1\n.class", "O1.cla\u200bss"):
        with pytest.raises(CorrectionError, match="contains a control character"):
            corrections.revert(cut)
    for wrong in ("O1.clas", "O1.classes", "O.class", "O1.class.x", "O1 .class", ".class"):
        with pytest.raises(CorrectionError, match=r"is not a correction id: expected SYMBOL\.PROPERTY"):
            corrections.revert(wrong)
    with pytest.raises(CorrectionError, match="there is no addition 'O1'"):  # a bare symbol names an addition
        corrections.revert("O1")
    with pytest.raises(CorrectionError, match=r"there is no correction 'O14\.class'"):
        corrections.revert("O14.class")
    with pytest.raises(CorrectionError, match="contains a control character"):
        corrections.manage("revert", "O4.class\x00")
    assert corrections.counts() == {"active": 3}
    assert object_class(store, "O1") == "box" and object_class(store, "O4") == "bag"
    # Text values are checked the same way (a NUL would cut the stored text short on FalkorDB).
    with pytest.raises(CorrectionError, match=r"O2\.class: the text 'bag\\x00box' contains a control character"):
        corrections.apply([("O2", "class", "bag\x00box")])
    assert object_class(store, "O2") == "bicycle"


def test_invalid_corrections_report_every_problem_and_change_nothing(store: FalkorStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    with pytest.raises(CorrectionError) as caught:
        Corrections(store).apply(
            [("O99", "class", "bag"), ("O1", "nodeSymbol", "O7"), ("O2", "x", "far"), ("robot", "class", "x")]
        )
    message = str(caught.value)
    for fragment in ("O99 does not exist", "'nodeSymbol' cannot be corrected", "O2.x: expected a number",
                     "'robot' is not a scene-graph node symbol"):
        assert fragment in message
    assert store.query("MATCH (c:Correction) RETURN count(c) AS n") == [{"n": 0}]
    assert object_class(store, "O1") == "bag"


def test_node_count_is_bounded(store: FalkorStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    with pytest.raises(CorrectionError, match="at most 2 nodes"):
        Corrections(store).apply([(f"P{i}", "class", "corridor") for i in range(3)], max_nodes=2)


def test_an_infinite_or_missing_number_is_refused_by_the_checker(store: FalkorStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    with pytest.raises(CorrectionError) as caught:
        Corrections(store).apply([("O1", "x", float("inf")), ("O2", "y", float("nan"))])
    assert "O1.x: expected a finite number, got inf" in str(caught.value)
    assert "O2.y: expected a finite number, got nan" in str(caught.value)
    assert store.query("MATCH (c:Correction) RETURN count(c) AS n") == [{"n": 0}]


def test_a_coordinate_is_taken_within_the_mapped_scene_and_its_margin_only(store: GraphStore) -> None:
    """The tiny scene spans x 0..5, y 0..1, z 0..0.5 (places, objects, rooms, the building): with the 10 m margin,
    x -10..15, y -10..11, z -10..10.5; the edges are taken, a hair beyond and 1.7e308 are refused."""
    assert EXTENT_MARGIN_M == 10.0
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    with pytest.raises(CorrectionError) as caught:
        corrections.apply([("O1", "x", 1.7e308), ("O2", "y", -10.001), ("O3", "z", 10.501)])
    assert str(caught.value) == (
        "O1.x: 1.7e+308 is outside the mapped scene (x from -10 to 15 m, its extent and a 10 m margin); "
        "O2.y: -10.001 is outside the mapped scene (y from -10 to 11 m, its extent and a 10 m margin); "
        "O3.z: 10.501 is outside the mapped scene (z from -10 to 10.5 m, its extent and a 10 m margin)")
    assert store.query("MATCH (c:Correction) RETURN count(c) AS n") == [{"n": 0}]
    assert position(store, "O1") == [1.0, 1.0, 0.5]
    corrections.apply([("O1", "x", 15.0), ("O2", "y", -10.0), ("O3", "z", 10.5), ("O0", "x", -10.0)])
    assert (position(store, "O1")[0], position(store, "O2")[1], position(store, "O3")[2]) == (15.0, -10.0, 10.5)


def test_the_extent_spans_every_layer_where_hydra_put_it_and_corrections_do_not_widen_it(store: GraphStore) -> None:
    """A room far from every place and object widens the box; a corrected node counts where Hydra put it, so a
    chain of corrections (each within the margin of the last) cannot walk a node away."""
    graph = tiny_scene()
    graph.get_node(node_id("R1")).attributes.position = np.array([40.0, 0.0, 0.0])
    Mirror(store).reconcile(graph)
    corrections = Corrections(store)
    corrections.apply([("O1", "x", 50.0)])
    assert position(store, "O1")[0] == 50.0
    with pytest.raises(CorrectionError, match=r"^O2.x: 55 is outside the mapped scene \(x from -10 to 50 m"):
        corrections.apply([("O2", "x", 55.0)])
    corrections.apply([("R1", "x", 45.0)])  # the far room itself corrected: it still counts at 40
    with pytest.raises(CorrectionError, match=r"^O1.x: 50.5 is outside the mapped scene \(x from -10 to 50 m"):
        corrections.apply([("O1", "x", 50.5)])


def test_a_reverted_retired_correction_does_not_return_with_its_node(store: FalkorStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    corrections = Corrections(store)
    corrections.apply([("O1", "class", "box")], author="carol", request="O1 is a box")
    graph.remove_node(node_id("O1"))
    mirror.reconcile(graph)
    [record] = corrections.all()
    assert (record.id, record.status, record.author, record.request) == ("O1.class", "retired", "carol", "O1 is a box")
    change = corrections.revert("O1.class")
    assert (change.old, change.new) == ("box", None)  # nothing to set: the node is gone
    assert corrections.counts() == {"reverted": 1}
    mirror.reconcile(tiny_scene())  # O1 is back, with Hydra's class
    assert object_class(store, "O1") == "bag" and corrections.counts() == {"reverted": 1}


def test_a_change_that_is_not_a_triple_is_named_by_its_position(store: FalkorStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    with pytest.raises(CorrectionError) as caught:
        Corrections(store).apply([("O1", "class", "box"), ("O1", "class")])  # type: ignore[list-item]
    assert str(caught.value) == "change 2 is not a (symbol, property, value) triple: ('O1', 'class')"
    assert object_class(store, "O1") == "bag"


def test_text_values_are_bounded_and_the_request_is_kept_in_part(store: FalkorStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    with pytest.raises(CorrectionError, match=r"O1\.name: expected a non-empty text of at most 80 characters"):
        corrections.apply([("O1", "name", "x" * 81)])
    corrections.apply([("O1", "name", "y" * 80)], request="r" * 600)
    [record] = corrections.active()
    assert (record.value, record.request) == ("y" * 80, "r" * 500)


def test_revert_gives_back_the_value_hydra_gave_and_keeps_the_record(store: FalkorStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    corrections.apply([("O2", "class", "bag")])
    corrections.apply([("O2", "class", "box")])
    change = corrections.revert(" O2.class ")
    assert (change.symbol, change.property, change.old, change.new) == ("O2", "class", "box", "bicycle")
    assert object_class(store, "O2") == "bicycle"
    assert corrections.active() == [] and [r.status for r in corrections.all()] == ["reverted"]
    with pytest.raises(CorrectionError, match=r"O2\.class is reverted \(it was reverted before\)"):
        corrections.revert("O2.class")
    with pytest.raises(CorrectionError, match=r"there is no correction 'O3\.class'"):
        corrections.revert("O3.class")
    assert object_class(store, "O2") == "bicycle"


def test_manage_lists_reverts_and_clears_by_name(store: FalkorStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    corrections.apply([("O1", "class", "box"), ("O2", "class", "bag")])
    listed, changes = corrections.manage(" List ")
    assert sorted(c.id for c in listed) == ["O1.class", "O2.class"] and changes == []

    listed, [change] = corrections.manage("revert", "O1.class")
    assert listed == [] and (change.symbol, change.old, change.new) == ("O1", "box", "bag")
    assert [c.id for c in corrections.manage("list", active_only=True)[0]] == ["O2.class"]
    assert len(corrections.manage("list")[0]) == 2  # the reverted record stays

    listed, [change] = corrections.manage("CLEAR")
    assert listed == [] and (change.symbol, change.old, change.new) == ("O2", "bag", "bicycle")
    assert corrections.all() == [] and object_class(store, "O2") == "bicycle"
    with pytest.raises(CorrectionError, match="revert needs the id of a correction"):
        corrections.manage("revert", " ")
    with pytest.raises(CorrectionError, match="unknown corrections action 'undo'"):
        corrections.manage("undo")


# -- coordinates: ``center`` follows x, y, z (issue 21) --------------------------------------------


def center(store: GraphStore, symbol: str) -> list[float]:
    """The point the model's ``point.distance`` queries use, as [x, y, z] on both backends."""
    [row] = store.query("MATCH (n {nodeSymbol: $s}) RETURN n.center AS c", {"s": symbol})
    return [float(v) for v in row["c"]]


def position(store: GraphStore, symbol: str) -> list[float]:
    [row] = store.query("MATCH (n {nodeSymbol: $s}) RETURN n.x AS x, n.y AS y, n.z AS z", {"s": symbol})
    return [float(row["x"]), float(row["y"]), float(row["z"])]


def model_distance(store: GraphStore, a: str, b: str) -> float:
    """What the model's distance query answers (both backends have ``point.distance``)."""
    [row] = store.query(
        "MATCH (a {nodeSymbol: $a}) MATCH (b {nodeSymbol: $b}) RETURN point.distance(a.center, b.center) AS d",
        {"a": a, "b": b},
    )
    return float(row["d"])


def test_a_coordinate_correction_moves_center_and_a_revert_moves_it_back(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    corrections = Corrections(store)
    corrections.apply([("O1", "x", 7.5)])
    assert position(store, "O1") == center(store, "O1") == [7.5, 1.0, 0.5]
    assert model_distance(store, "O1", "O0") == pytest.approx(7.5)

    corrections.apply([("O2", "y", 3.0)])
    corrections.apply([("O2", "z", 2.0)])
    assert center(store, "O2") == [4.0, 3.0, 2.0]
    corrections.apply([("O4", "x", -1.0), ("O4", "y", -2.0), ("O4", "z", -3.0)])  # one request, one node
    assert center(store, "O4") == [-1.0, -2.0, -3.0]

    corrections.revert("O1.x")
    assert position(store, "O1") == center(store, "O1") == [1.0, 1.0, 0.5]
    assert model_distance(store, "O1", "O0") == pytest.approx(1.0)
    corrections.revert("O2.z")
    assert center(store, "O2") == [4.0, 3.0, 0.5]


def test_a_coordinate_correction_holds_center_through_later_snapshots(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    corrections = Corrections(store)
    corrections.apply([("O2", "y", 3.0), ("P5", "x", 9.0)])

    # A snapshot that changes something else leaves them alone.
    graph.get_node(node_id("O0")).attributes.position = [0.0, 1.0, 2.5]
    mirror.reconcile(graph)
    assert center(store, "O2") == [4.0, 3.0, 0.5] and center(store, "P5") == [9.0, 0.0, 0.0]

    # Hydra moves both (x and z of O2, y of P5): the mirror rewrites them, the corrected axis stays.
    graph.get_node(node_id("O2")).attributes.position = [4.5, 1.0, 0.75]
    graph.get_node(node_id("P5")).attributes.position = [5.0, 0.25, 0.0]
    report = mirror.reconcile(graph)
    assert report.corrections_reapplied == 2
    assert position(store, "O2") == center(store, "O2") == [4.5, 3.0, 0.75]
    assert position(store, "P5") == center(store, "P5") == [9.0, 0.25, 0.0]
    assert model_distance(store, "P5", "P4") == pytest.approx(math.hypot(5.0, 0.25))

    # Reverted, the node takes the position Hydra gives now (not the one it gave before the correction).
    corrections.revert("O2.y")
    assert position(store, "O2") == center(store, "O2") == [4.5, 1.0, 0.75]
    mirror.reconcile(graph)
    assert center(store, "O2") == [4.5, 1.0, 0.75]


def test_the_planner_sees_a_corrected_place_and_object_at_once(store: GraphStore) -> None:
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene())
    planner = Planner(store, timeout_s=30.0)  # one planner: its cached place graph must notice the correction
    before = planner.plan("(at-place P5)", from_symbol="P0")
    assert before.status is PlanStatus.SOLVED and before.total_cost == pytest.approx(5.0, abs=0.01)

    Corrections(store).apply([("P5", "x", 9.0), ("O4", "x", 5.5), ("O4", "y", 0.25)])
    graph = planner.place_graph()
    assert graph.positions[graph.index["P5"]].tolist() == [9.0, 0.0, 0.0]
    after = planner.plan("(at-place P5)", from_symbol="P0")
    assert after.total_cost == pytest.approx(9.0, abs=0.01)  # P4 to P5 is now 5 m
    assert after.actions[-1].target == pytest.approx((9.0, 0.0, 0.0))

    # O4 (in no place) is reached from the place nearest where it is now: P4, and picked up at its corrected spot.
    pick = planner.plan("(holding O4)", from_symbol="P0")
    assert pick.status is PlanStatus.SOLVED, pick.reason
    assert pick.actions[-1].name == "pick" and pick.actions[-1].args == ("O4", "P4")
    assert pick.actions[-1].target == pytest.approx((5.5, 0.25, 0.5))


# -- corrections over time, against an oracle written from the operator's point of view --------------
#
# The oracle knows only what Hydra says (present or not, where, which class and name) and what the
# operator did; it says what the database must hold: a node Hydra has, with the operator's value where
# an active correction says so and Hydra's value otherwise, ``center`` at its x, y, z; and each
# record's state: active until reverted; retired while Hydra lacks its node, active again when the
# node is back; reverted for good.

#: Few nodes and values, so random sequences often hit the same record again.
TRACKED = {"O1": ("class", "name", "x", "y"), "P3": ("x", "y")}
CLASSES = [name for _, name in OBJECT_CLASSES]


@dataclass
class HydraNode:
    present: bool
    x: float
    y: float
    z: float
    label: int = 0
    name: str = ""

    def value(self, prop: str) -> Any:
        return {"class": CLASSES[self.label], "name": self.name, "x": self.x, "y": self.y}[prop]


@dataclass
class Oracle:
    hydra: dict[str, HydraNode] = field(default_factory=lambda: {
        "O1": HydraNode(True, 1.0, 1.0, 0.5, 1, "bag 1"), "P3": HydraNode(True, 3.0, 0.0, 0.0),
    })
    #: (symbol, property) -> [status, value]
    records: dict[tuple[str, str], list[Any]] = field(default_factory=dict)

    def expected(self, symbol: str, prop: str) -> Any:
        record = self.records.get((symbol, prop))
        return record[1] if record and record[0] == "active" else self.hydra[symbol].value(prop)

    def snapshot(self, presence: dict[str, bool]) -> None:
        for (symbol, _), record in self.records.items():
            if record[0] == "active" and not presence[symbol]:
                record[0] = "retired"
            elif record[0] == "retired" and presence[symbol]:
                record[0] = "active"


def hydra_scene(oracle: Oracle) -> Any:
    graph = tiny_scene()
    for symbol, node in oracle.hydra.items():
        if not node.present:
            graph.remove_node(node_id(symbol))
            continue
        attributes = graph.get_node(node_id(symbol)).attributes
        attributes.position = np.array([node.x, node.y, node.z])
        if symbol.startswith("O"):
            attributes.semantic_label = node.label
            attributes.name = node.name
    return graph


coordinate = st.sampled_from([0.5, 6.0])
correct_text = st.tuples(st.just("correct"), st.just("O1"), st.sampled_from(["class", "name"]),
                         st.sampled_from(["chair", "lamp"]))
#: O1 twice as often as P3: chains of operations on one node are what the properties are about.
node = st.sampled_from(["O1", "O1", "P3"])
correct_coordinate = st.tuples(st.just("correct"), node, st.sampled_from(["x", "y"]), coordinate)
#: Reverts the k-th record there is (by id), so reverts meet records; O1.class when there is none.
revert = st.tuples(st.just("revert"), st.integers(min_value=0, max_value=3))
#: A snapshot changes one node: it vanishes or comes back (toggle), moves, or is relabelled and renamed.
snapshot = st.tuples(st.just("snapshot"), node, st.sampled_from(["toggle", "move", "relabel"]), coordinate)
#: Weighted by repetition: snapshots often (corrections must live through them), a clear seldom (it resets).
correction_ops = st.one_of(correct_text, correct_coordinate, correct_coordinate, revert, revert, snapshot, snapshot,
                           snapshot, st.tuples(st.just("restart")), st.tuples(st.just("clear")))


def check_against(store: GraphStore, oracle: Oracle, history: list[Any]) -> None:
    rows = {r["s"]: r for r in store.query(
        "MATCH (n) WHERE n.nodeSymbol IN $symbols "
        "RETURN n.nodeSymbol AS s, n.class AS class, n.name AS name, n.x AS x, n.y AS y, n.z AS z, n.center AS c",
        {"symbols": sorted(TRACKED)},
    )}
    for symbol, props in TRACKED.items():
        node = oracle.hydra[symbol]
        assert (symbol in rows) == node.present, (symbol, history)
        if not node.present:
            continue
        row = rows[symbol]
        for prop in props:
            assert row[prop] == oracle.expected(symbol, prop), (symbol, prop, history)
        assert [float(v) for v in row["c"]] == [row["x"], row["y"], row["z"]], (symbol, history)
    statuses = {(str(r["s"]), str(r["p"])): r["status"] for r in store.query(
        "MATCH (c:Correction) RETURN c.target AS s, c.property AS p, c.status AS status"
    )}
    assert statuses == {key: record[0] for key, record in oracle.records.items()}, history


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(correction_ops, min_size=1, max_size=14))
# The stories random sequences must not be left to find by luck:
@example(ops=[("correct", "O1", "x", 6.0), ("snapshot", "O1", "toggle", 0.5), ("snapshot", "O1", "toggle", 0.5)])
@example(ops=[("correct", "O1", "class", "lamp"), ("snapshot", "O1", "relabel", 0.5), ("revert", 0)])
@example(ops=[("correct", "P3", "x", 6.0), ("revert", 0), ("snapshot", "P3", "move", 0.5),
              ("snapshot", "P3", "toggle", 0.5), ("snapshot", "P3", "toggle", 0.5)])
@example(ops=[("correct", "O1", "y", 6.0), ("snapshot", "O1", "toggle", 0.5), ("restart",),
              ("snapshot", "O1", "toggle", 0.5), ("snapshot", "O1", "move", 6.0), ("revert", 0)])
def test_corrections_over_snapshots_reverts_and_restarts_follow_the_oracle(store: GraphStore, ops: list[Any]) -> None:
    store.write("MATCH (n) DETACH DELETE n")
    oracle = Oracle()
    mirror = Mirror(store)
    mirror.reconcile(hydra_scene(oracle))
    corrections = Corrections(store)
    history: list[Any] = []
    for op in ops:
        history.append(op)
        if op[0] == "correct":
            _, symbol, prop, value = op
            if oracle.hydra[symbol].present:
                corrections.apply([(symbol, prop, value)])
                oracle.records[(symbol, prop)] = ["active", value]
            else:
                with pytest.raises(CorrectionError, match="does not exist"):
                    corrections.apply([(symbol, prop, value)])
        elif op[0] == "revert":
            symbol, prop = sorted(oracle.records)[op[1] % len(oracle.records)] if oracle.records else ("O1", "class")
            record = oracle.records.get((symbol, prop))
            if record is None or record[0] == "reverted":
                with pytest.raises(CorrectionError):
                    corrections.revert(f"{symbol}.{prop}")
            else:
                corrections.revert(f"{symbol}.{prop}")
                record[0] = "reverted"
        elif op[0] == "snapshot":
            _, symbol, change, value = op
            node = oracle.hydra[symbol]
            if change == "toggle":
                node.present = not node.present
            elif change == "move":
                node.x, node.y = node.y + value, node.x  # a move on both axes
            elif change == "relabel" and symbol.startswith("O"):
                node.label = (node.label + 1) % len(CLASSES)
                node.name = f"{node.name}'"
            mirror.reconcile(hydra_scene(oracle))
            oracle.snapshot({s: n.present for s, n in oracle.hydra.items()})
        elif op[0] == "restart":  # a new mirror process: its baseline is what the database holds
            mirror = Mirror(store)
            mirror.reconcile(hydra_scene(oracle))
            oracle.snapshot({s: n.present for s, n in oracle.hydra.items()})
        else:
            corrections.clear()
            oracle.records.clear()
        check_against(store, oracle, history)


# -- the record over time: what the timeline, the list and the log say ------------------------------
def test_the_timeline_lists_each_retirement_and_return_at_or_after_since(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, sequence=1, stamp_s=T0)
    corrections = Corrections(store)
    corrections.apply([("O1", "class", "box"), ("O2", "class", "bag")])  # O2's node never leaves
    graph.remove_node(node_id("O1"))
    mirror.reconcile(graph, sequence=2, stamp_s=T0 + 10)
    mirror.reconcile(tiny_scene(), sequence=3, stamp_s=T0 + 20)

    retired_kind, returned_kind = OverlayEventKind.CORRECTION_RETIRED, OverlayEventKind.CORRECTION_RETURNED
    assert [(e.kind, e.correction.id, e.t) for e in corrections.events(since=0.0)] == [
        (retired_kind, "O1.class", T0 + 10), (returned_kind, "O1.class", T0 + 20)
    ]
    assert [e.kind for e in corrections.events(since=T0 + 10)] == [retired_kind, returned_kind]  # at `since` counts
    assert [e.kind for e in corrections.events(since=T0 + 10.5)] == [returned_kind]
    assert [e.kind for e in corrections.events(since=T0 + 20)] == [returned_kind]
    assert corrections.events(since=T0 + 20.5) == []
    retired, returned = corrections.events(since=0.0)
    why = "O1 was not in Hydra's snapshot 2 of 2027-01-15T08:00:10+00:00"
    assert str(retired) == f"correction O1.class = 'box' retired: {why}"
    assert str(returned) == "correction O1.class = 'box' returned with its node"
    assert (retired.to_json()["kind"], retired.to_json()["why"]) == ("correction retired", why)
    assert returned.to_json()["kind"] == "correction returned" and "why" not in returned.to_json()


def test_a_fresh_record_has_no_retirement_or_return(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    before = time.time()
    Corrections(store).apply([("O1", "class", "box")])
    [record] = Corrections(store).all()
    assert before <= record.created_s <= time.time()
    assert (record.status, record.retired_s, record.retired_why, record.times_retired, record.returned_s) == (
        "active", 0.0, "", 0, 0.0
    )
    assert (record.as_dict()["retired"], record.as_dict()["returned"]) == ("", "")


@pytest.mark.parametrize(("sequence", "named"), [(0, "Hydra's snapshot 0 of"), (7, "Hydra's snapshot 7 of"),
                                                 (-1, "Hydra's snapshot of")])
def test_a_retirement_names_the_snapshot_by_its_number_when_it_has_one(
    store: GraphStore, sequence: int, named: str
) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    corrections = Corrections(store)
    corrections.apply([("O1", "class", "box")])
    graph.remove_node(node_id("O1"))
    mirror.reconcile(graph, sequence=sequence, stamp_s=T0)
    [record] = corrections.all()
    assert record.retired_why == f"O1 was not in {named} 2027-01-15T08:00:00+00:00"


def test_a_snapshot_that_rewrites_no_corrected_node_reapplies_nothing(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    corrections.apply([("O1", "class", "box")])
    assert corrections.after_reconcile(touched=set(), removed=[], sequence=1) == (0, [])
    assert corrections.after_reconcile(touched={"O3", "P2"}, removed=[], sequence=2) == (0, [])
    assert corrections.after_reconcile(touched={"O1", "O3"}, removed=[], sequence=3) == (1, [])


def test_the_log_says_what_a_clear_reverted_and_which_corrections_returned(
    store: GraphStore, caplog: pytest.LogCaptureFixture
) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    corrections = Corrections(store)
    with caplog.at_level(logging.INFO, logger="heracles_ros.mirror.corrections"):
        assert corrections.clear(author="ana") == []
        mirror.reconcile(graph)
    assert caplog.messages == []  # nothing cleared, nothing returned: nothing to say
    corrections.apply([("O1", "class", "box")])
    graph.remove_node(node_id("O1"))
    mirror.reconcile(graph)
    with caplog.at_level(logging.INFO, logger="heracles_ros.mirror.corrections"):
        mirror.reconcile(tiny_scene())
        corrections.clear(author="ana")
    assert caplog.messages == [
        "corrections returned with their nodes: O1",
        "ana cleared the corrections, reverted: O1.class: 'box' -> 'bag'",
    ]


def test_the_list_holds_reverted_records_and_additions_unless_only_active_ones_are_asked_for(
    store: GraphStore,
) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    corrections.apply([("O1", "class", "box"), ("O2", "class", "bag")])
    [added] = corrections.propose([], [{"add": "cone", "at": [0.5, -0.5, 0.0]}]).added
    [second] = corrections.propose([], [{"add": "bucket", "at": [4.5, 0.5, 0.0]}]).added
    corrections.revert("O1.class")
    corrections.revert(second.symbol)
    assert [r.id for r in corrections.records()] == ["O1.class", "O2.class", added.symbol, second.symbol]
    assert [r.id for r in corrections.records(active_only=True)] == ["O2.class", added.symbol]


def test_an_unknown_action_clears_nothing(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    corrections.apply([("O1", "class", "box")])
    for action in ("apply", "all", "abort", ""):  # some sort before 'clear'
        with pytest.raises(CorrectionError, match=f"unknown corrections action {action!r}"):
            corrections.manage(action)
    assert corrections.counts() == {"active": 1} and object_class(store, "O1") == "box"


def test_every_malformed_change_is_named_by_its_position_and_the_rest_still_checked(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    with pytest.raises(CorrectionError) as caught:
        Corrections(store).apply(
            [("O1", "class", "box"), ("O2", "class", "bag"), ("O3",), ("O99", "class", "x")]  # type: ignore[list-item]
        )
    assert str(caught.value) == (
        "change 3 is not a (symbol, property, value) triple: ('O3',); O99 does not exist in the scene graph"
    ).replace("O99 does", "node O99 does")
    with pytest.raises(CorrectionError, match="no change was proposed"):
        Corrections(store).apply([])


def test_by_default_one_answer_may_correct_ten_nodes_and_not_eleven(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    symbols = [*(f"P{i}" for i in range(6)), *(f"O{i}" for i in range(5))]
    with pytest.raises(CorrectionError, match="at most 10 nodes; this one touches 11"):
        Corrections(store).apply([(symbol, "name", "seen") for symbol in symbols])
    assert len(Corrections(store).apply([(symbol, "name", "seen") for symbol in symbols[:10]])) == 10


def test_a_correction_names_who_made_it_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("USER", "carol")
    monkeypatch.setenv("LOGNAME", "c-login")
    assert operator_name() == "carol"
    monkeypatch.delenv("USER")
    assert operator_name() == "c-login"
    monkeypatch.delenv("LOGNAME")
    assert operator_name() == "unknown user"


def test_records_and_events_cannot_be_changed_once_read(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    corrections = Corrections(store)
    applied = corrections.propose([("O1", "class", "box")], [])
    graph.remove_node(node_id("O1"))
    mirror.reconcile(graph)
    [record] = corrections.all()
    [event] = corrections.events(since=0.0)
    for value in (applied, applied.changes[0], record, event):
        name = dataclasses.fields(value)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(value, name, getattr(value, name))
