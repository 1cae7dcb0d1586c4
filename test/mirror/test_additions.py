"""Objects the operator adds: checked, linked like Hydra's, kept through snapshots, replaced by perception."""
from __future__ import annotations

import math
from typing import Any

import pytest
from support.tiny_scene import add_object, node_id, tiny_scene

from heracles_ros.errors import CorrectionError, GoalError
from heracles_ros.formats.pddl_goal import check_goal
from heracles_ros.graphdb.cypher import admin as admin_q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.additions import AdditionSettings
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.mirror.timeline import read_timeline

T0 = 1_800_000_000.0
#: By the bicycle O2 (4, 1, 0.5); nearest place P4 (4, 0, 0), in room R1.
BY_BICYCLE = {"add": "fire extinguisher", "at": [4.2, 1.6, 0.5], "near": "O2"}


def scene_counts(store: GraphStore) -> tuple[int, int]:
    nodes = store.query("MATCH (n) WHERE n.nodeSymbol IS NOT NULL RETURN count(n) AS n")[0]["n"]
    edges = store.query("MATCH (a)-[e]->(b) WHERE a.nodeSymbol IS NOT NULL RETURN count(e) AS n")[0]["n"]
    return int(nodes), int(edges)


def added_object(store: GraphStore, symbol: str) -> dict[str, Any]:
    rows = store.query(
        "MATCH (a:Object {nodeSymbol: $s}) RETURN a.class AS class, a.x AS x, a.y AS y, a.z AS z, "
        "a.source AS source, a.author AS author, a.request AS request, a.added_s AS added_s", {"s": symbol},
    )
    return rows[0] if rows else {}


def containers(store: GraphStore, symbol: str) -> set[tuple[str, str]]:
    rows = store.query(
        "MATCH (c)-[:CONTAINS]->(a:Object {nodeSymbol: $s}) RETURN labels(c)[0] AS label, c.nodeSymbol AS c",
        {"s": symbol},
    )
    return {(str(r["label"]), str(r["c"])) for r in rows}


def test_an_addition_is_an_object_linked_like_hydras_with_its_provenance(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    applied = corrections.propose([], [BY_BICYCLE], author="ana", request="there is a fire extinguisher by the bike")
    [added] = applied.added
    assert added.symbol == "A1" and applied.changes == [] and applied.existing == []
    assert str(added) == "A1 added: 'fire extinguisher' at (4.20, 1.60, 0.50) near O2 (place P4, room R1)"
    node = added_object(store, "A1")
    assert node["class"] == "fire extinguisher" and node["source"] == "operator" and node["author"] == "ana"
    assert node["request"] == "there is a fire extinguisher by the bike" and node["added_s"] > 0
    assert math.dist((node["x"], node["y"], node["z"]), (4.0, 1.0, 0.5)) < 1.5
    assert containers(store, "A1") == {("MeshPlace", "P4")}
    # The room holds it through its place, as it holds Hydra's objects.
    rows = store.query("MATCH (r:Room)-[:CONTAINS]->(:MeshPlace)-[:CONTAINS]->(a:Object {nodeSymbol: 'A1'}) "
                       "RETURN r.nodeSymbol AS r")
    assert rows == [{"r": "R1"}]
    [record] = corrections.records()
    listed = record.as_dict()
    assert (listed["id"], listed["kind"], listed["class"], listed["author"], listed["status"]) == (
        "A1", "addition", "fire extinguisher", "ana", "active")
    assert listed["near"] == "O2" and listed["place"] == "P4" and listed["room"] == "R1"
    # The next one gets the next symbol; the symbol is one a goal may name.
    second = corrections.propose([], [{"add": "cone", "at": [0.5, -0.5, 0.0]}]).added
    assert [a.symbol for a in second] == ["A2"]
    assert check_goal("(visited-object A1)", store) is not None


def test_an_addition_outlasts_snapshots_and_is_linked_again_when_its_place_goes(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    Corrections(store).propose([], [BY_BICYCLE])
    graph.get_node(node_id("O1")).attributes.position = [1.0, 3.0, 0.5]
    report = mirror.reconcile(graph)
    assert report.nodes_changed == 1 and report.additions_replaced == []
    assert added_object(store, "A1")["class"] == "fire extinguisher"
    # A restarted mirror reads its baseline from the database: the addition is not Hydra's, it stays.
    report = Mirror(store).reconcile(graph)
    assert report.nodes_removed == 0 and added_object(store, "A1")
    assert containers(store, "A1") == {("MeshPlace", "P4")}
    # Hydra drops the place it stood by: it is linked to the nearest place left.
    graph.remove_node(node_id("P4"))
    graph.insert_edge(node_id("P3"), node_id("P5"))
    mirror.reconcile(graph)
    assert containers(store, "A1") == {("MeshPlace", "P5")}
    [record] = Corrections(store).records()
    assert (record.status, record.place) == ("active", "P5")


def test_a_database_reset_that_keeps_the_corrections_keeps_the_additions(store: GraphStore) -> None:
    graph = tiny_scene()
    Mirror(store).reconcile(graph)
    Corrections(store).propose([], [BY_BICYCLE], author="ana")
    before = added_object(store, "A1")
    store.write(admin_q.DELETE_ALL_BUT_CORRECTIONS)  # heracles db reset --keep-corrections
    assert added_object(store, "A1") == {}
    Mirror(store).reconcile(graph)
    assert added_object(store, "A1") == before
    assert containers(store, "A1") == {("MeshPlace", "P4")}


def test_perception_replaces_an_addition_and_the_history_says_which(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph, sequence=1, stamp_s=T0)
    corrections = Corrections(store)
    [added] = corrections.propose([], [{"add": "Bag", "at": [4.0, 2.0, 0.5], "near": "O2"}], author="ana").added
    # Hydra perceives a bag 0.5 m from it (O1 stays a bag far away; a chair nearby is another class).
    add_object(graph, 7, 1, (4.3, 2.4, 0.5), 4)
    add_object(graph, 8, 3, (4.0, 2.1, 0.5), 4)
    report = mirror.reconcile(graph, sequence=2, stamp_s=T0 + 1)
    assert report.additions_replaced == [added.symbol] == ["A1"]
    assert added_object(store, "A1") == {}
    [record] = corrections.records()
    assert (record.status, record.replaced_by, record.retired_s) == ("retired", "O7", T0 + 1)
    assert "Hydra perceived O7 (Bag) 0.50 m away" in record.retired_why
    events = [e.to_json() for e in read_timeline(store, since=0)]
    replaced = [e for e in events if e["kind"] == "addition replaced"]
    assert [(e["symbol"], e["replaced_by"]) for e in replaced] == [("A1", "O7")]
    assert "addition A1 (Bag) retired, replaced by O7" in replaced[0]["text"]
    assert any(e["kind"] == "addition added" and e["author"] == "ana" for e in events)
    # A goal naming the retired addition is told its replacement.
    with pytest.raises(GoalError, match="A1 was the operator's 'Bag', replaced by the perceived object O7: use O7"):
        check_goal("(visited-object A1)", store)
    # Nothing is there to revert any more, and the next snapshot changes nothing.
    with pytest.raises(CorrectionError, match="addition A1 is retired"):
        corrections.revert("A1")
    assert mirror.reconcile(graph, sequence=3, stamp_s=T0 + 2).additions_replaced == []


def test_revert_removes_the_addition_and_nothing_else(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    corrections.apply([("O1", "name", "blue bag")])
    before = scene_counts(store)
    corrections.propose([], [BY_BICYCLE])
    assert scene_counts(store) == (before[0] + 1, before[1] + 1)
    removed = corrections.revert("A1")
    assert str(removed) == "A1 ('fire extinguisher', added by the operator) removed"
    assert scene_counts(store) == before and added_object(store, "A1") == {}
    assert {(r.id, r.status) for r in corrections.records()} == {("O1.name", "active"), ("A1", "reverted")}
    with pytest.raises(GoalError, match="A1 was the operator's 'fire extinguisher', removed by an operator"):
        check_goal("(visited-object A1)", store)
    # A new addition never takes a reverted one's symbol.
    assert [a.symbol for a in corrections.propose([], [BY_BICYCLE]).added] == ["A2"]
    changes = corrections.clear()
    assert [str(c) for c in changes] == ["O1.name: 'blue bag' -> 'bag 1'",
                                         "A2 ('fire extinguisher', added by the operator) removed"]
    assert scene_counts(store) == (before[0], before[1]) and corrections.records() == []


def test_an_object_of_that_class_within_the_merge_radius_is_named_not_duplicated(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    before = scene_counts(store)
    applied = Corrections(store).propose([], [{"add": "bicycle", "at": [4.3, 1.2, 0.5], "near": "O2"}])
    assert applied.added == []
    [existing] = applied.existing
    assert existing.symbol == "O2" and "exists already: O2 (bicycle)" in str(existing)
    assert scene_counts(store) == before


REFUSALS = [
    pytest.param([{"add": "crate", "at": [60.0, 60.0, 0.0]}], "outside the mapped area", id="far-from-the-map"),
    pytest.param([{"add": "crate", "at": [4.0, 1.5, 0.5], "near": "O99"}], "near 'O99' is not a node", id="no-near"),
    pytest.param([{"add": "crate", "at": [1.0, 9.0, 0.5], "near": "O2"}], "farther than the 5 m", id="far-from-near"),
    pytest.param([{"add": "crate", "at": [math.nan, 1.0, 0.5]}], "finite coordinates", id="nan"),
    pytest.param([{"add": "crate", "at": [math.inf, 1.0, 0.5]}], "finite coordinates", id="inf"),
    pytest.param([{"add": "crate", "at": [1e9, 1.0, 0.5]}], "finite coordinates within", id="huge"),
    pytest.param([{"add": "", "at": [1.0, 1.0, 0.5]}], "an addition needs a class", id="empty-class"),
    pytest.param([{"at": [1.0, 1.0, 0.5]}], "an addition needs a class", id="no-class"),
    pytest.param([{"add": "crate", "at": [1.0, 1.0]}], r"'at' must be \[x, y, z\]", id="two-coordinates"),
    pytest.param([{"add": "crate", "at": [1.0, 1.5, 0.5]}, {"add": "crate", "at": [80.0, 1.0, 0.5]}],
                 "addition 2 .* outside the mapped area", id="valid-and-invalid"),
    pytest.param([{"add": f"crate {i}", "at": [1.0, 1.5, 0.5]} for i in range(100)],
                 "at most 10 objects; this one proposes 100", id="too-many"),
]


@pytest.mark.parametrize(("additions", "problem"), REFUSALS)
def test_a_refused_addition_writes_nothing(store: GraphStore, additions: list[Any], problem: str) -> None:
    Mirror(store).reconcile(tiny_scene())
    corrections = Corrections(store)
    before = scene_counts(store)
    with pytest.raises(CorrectionError, match=problem):
        # A valid property update in the same answer is not applied either.
        corrections.propose([("O1", "name", "blue bag")], additions)
    assert scene_counts(store) == before
    assert corrections.records() == []
    assert store.query("MATCH (o:Object {nodeSymbol: 'O1'}) RETURN o.name AS n") == [{"n": "bag 1"}]


def test_the_bounds_are_parameters(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    strict = Corrections(store, AdditionSettings(max_distance_m=0.5, max_place_distance_m=0.5, max_per_request=1))
    with pytest.raises(CorrectionError, match=r"farther than the 0\.5 m"):
        strict.propose([], [BY_BICYCLE])
    with pytest.raises(CorrectionError, match=r"no connected place within 0\.5 m"):
        strict.propose([], [{"add": "crate", "at": [1.0, 1.0, 0.0]}])
    with pytest.raises(CorrectionError, match="at most 1 objects"):
        strict.propose([], [BY_BICYCLE, BY_BICYCLE])


def test_apply_takes_an_answer_list_of_triples_and_additions(store: GraphStore) -> None:
    Mirror(store).reconcile(tiny_scene())
    applied = Corrections(store).apply([("O1", "name", "blue bag"), BY_BICYCLE], author="ana")
    assert [str(item) for item in applied] == [
        "O1.name: 'bag 1' -> 'blue bag'",
        "A1 added: 'fire extinguisher' at (4.20, 1.60, 0.50) near O2 (place P4, room R1)",
    ]
    assert added_object(store, "A1")["author"] == "ana"


def test_perception_matches_an_addition_as_the_operator_corrected_it(store: GraphStore) -> None:
    mirror = Mirror(store)
    graph = tiny_scene()
    mirror.reconcile(graph)
    corrections = Corrections(store)
    corrections.propose([], [{"add": "crate", "at": [4.0, 2.0, 0.5], "near": "O2"}])
    corrections.apply([("A1", "class", "chair")])  # "that crate is a chair"
    add_object(graph, 9, 3, (4.3, 2.0, 0.5), 4)  # Hydra perceives a chair 0.3 m away
    assert mirror.reconcile(graph).additions_replaced == ["A1"]
