"""The mirror against an independent oracle (support/scene_oracle.py), over sequences of Hydra's commonest changes.

After every reconcile the database must equal what the oracle reads straight
off the spark_dsg graph: every node with every promised property, every
relationship in its stored direction(s), nothing more. Each sequence runs with
one long-lived mirror (its cached baseline) and with a mirror restarted before
every snapshot (its baseline read back from the database), on both backends.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import spark_dsg as dsg
from support.hydra_scene import hydra_scene
from support.scene_oracle import assert_equals_oracle, differences
from support.tiny_scene import node_id

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror

Change = Callable[[dsg.DynamicSceneGraph], None]


def move_object(obj: str, old_place: str, new_place: str) -> Change:
    """The object is re-parented (the edge between two surviving nodes goes, another comes)."""

    def change(graph: dsg.DynamicSceneGraph) -> None:
        assert graph.remove_edge(node_id(old_place), node_id(obj))
        assert graph.insert_edge(node_id(new_place), node_id(obj))

    return change


def cut(a: str, b: str) -> Change:
    def change(graph: dsg.DynamicSceneGraph) -> None:
        assert graph.remove_edge(node_id(a), node_id(b))

    return change


def join(a: str, b: str) -> Change:
    def change(graph: dsg.DynamicSceneGraph) -> None:
        assert graph.insert_edge(node_id(a), node_id(b))

    return change


def rename(symbol: str, name: str) -> Change:
    def change(graph: dsg.DynamicSceneGraph) -> None:
        graph.get_node(node_id(symbol)).attributes.name = name

    return change


def resize(symbol: str, dimensions: tuple[float, float, float], centre: tuple[float, float, float] | None) -> Change:
    """Only the bounding box changes (the position stays)."""

    def change(graph: dsg.DynamicSceneGraph) -> None:
        attrs = graph.get_node(node_id(symbol)).attributes
        box = attrs.bounding_box
        new_centre = np.array(centre) if centre is not None else box.world_P_center
        attrs.bounding_box = dsg.BoundingBox(np.array(dimensions), new_centre)

    return change


def steps(*changes: Change) -> Change:
    def change(graph: dsg.DynamicSceneGraph) -> None:
        for each in changes:
            each(graph)

    return change


SEQUENCES: dict[str, list[Change]] = {
    # O0 (Box) sits on Q2: carried to Q5 in the other room, then back, then to Q3.
    "object moved between places": [
        move_object("O0", "Q2", "Q5"),
        move_object("O0", "Q5", "Q2"),
        steps(move_object("O0", "Q2", "Q3"), move_object("O1", "Q6", "Q0")),
    ],
    # The doorway between the rooms: the mesh-place link Q3-Q4, the room link R0-R1, the 3D link p0-p1.
    "doorways cut and added": [
        steps(cut("Q3", "Q4"), cut("R0", "R1")),
        cut("p0", "p1"),
        steps(join("Q3", "Q4"), join("R0", "R1"), join("Q0", "Q7")),
        steps(join("p0", "p1"), cut("Q0", "Q7")),
    ],
    # A place handed to the other room (the room boundary redrawn): R0 > Q3 becomes R1 > Q3.
    "place moved between rooms": [
        steps(cut("R0", "Q3"), join("R1", "Q3")),
        steps(cut("R1", "Q3"), join("R0", "Q3")),
    ],
    "objects renamed and resized": [
        rename("O0", "cardboard box"),
        resize("O0", (0.8, 0.3, 0.2), None),
        resize("O1", (0.4, 0.3, 0.2), (6.0, 0.3, 0.9)),
        steps(rename("R1", "living room"), rename("O1", "")),
    ],
}


@pytest.mark.parametrize("restart", [False, True], ids=["one mirror", "mirror restarted"])
@pytest.mark.parametrize("sequence", sorted(SEQUENCES))
def test_database_equals_the_oracle_after_every_snapshot(store: GraphStore, sequence: str, restart: bool) -> None:
    graph = hydra_scene()
    mirror = Mirror(store)
    mirror.reconcile(graph)
    assert_equals_oracle(store, graph)
    for number, change in enumerate(SEQUENCES[sequence], 1):
        before = differences(store, _changed_copy(graph, change), None)
        assert before, f"step {number} of '{sequence}' changes nothing the oracle sees: the step tests nothing"
        change(graph)
        if restart:
            mirror = Mirror(store)
        report = mirror.reconcile(graph)
        assert report.writes > 0, f"step {number}"
        assert_equals_oracle(store, graph)


def _changed_copy(graph: dsg.DynamicSceneGraph, change: Change) -> dsg.DynamicSceneGraph:
    copy = graph.clone()
    change(copy)
    return copy


def test_oracle_sees_hydra_conventions(store: GraphStore) -> None:
    """The oracle's own reading of the Hydra scene, pinned by hand: labels, classes, names, both edge directions."""
    from support.scene_oracle import expected

    want = expected(hydra_scene())
    labels = {s: label for s, (label, _) in want.nodes.items()}
    assert labels == {
        "B0": "Building", "R0": "Room", "R1": "Room", **{f"Q{i}": "MeshPlace" for i in range(8)},
        "p0": "Place", "p1": "Place", "O0": "Object", "O1": "Object",
    }  # fmt: skip  (no frontier f0, no agent poses a0..a2)
    assert want.nodes["R1"][1]["class"] == "lounge" and want.nodes["O1"][1]["class"] == "Door"
    box = want.nodes["O0"][1]  # spark_dsg keeps bounding boxes in float32
    assert box["bbox_center"] == pytest.approx((2.0, 0.3, 0.5)) and box["bbox_dim"] == pytest.approx((0.4, 0.3, 0.2))
    assert box["center"] == (2.0, 0.3, 0.4) and box["name"] == ""
    assert {("Q3", "Q4", "MESH_PLACE_CONNECTED"), ("Q4", "Q3", "MESH_PLACE_CONNECTED")} <= want.edges
    assert ("R0", "Q2", "CONTAINS") in want.edges and ("Q2", "R0", "CONTAINS") not in want.edges
    assert ("Q2", "O0", "CONTAINS") in want.edges
    assert not {e for e in want.edges if "f0" in e or "a0" in e}
    assert len(want.edges) == 2 * 8 + 2 + 8 + 2 + 2 + 2  # 8 links both ways, B>R, R>Q, R>p, p-p both ways, Q>O
    Mirror(store).reconcile(hydra_scene())
    assert_equals_oracle(store, hydra_scene())


@pytest.mark.parametrize("restart", [False, True], ids=["one mirror", "mirror restarted"])
def test_a_node_that_changes_layer_is_relabelled(store: GraphStore, restart: bool) -> None:
    """Hydra reuses an id in another layer (mesh place Q7 becomes an object): the old label goes, with its edges."""
    graph = hydra_scene()
    mirror = Mirror(store)
    mirror.reconcile(graph)
    graph.remove_node(node_id("Q7"))
    obj = dsg.ObjectNodeAttributes()
    obj.position = np.array([7.0, 0.5, 0.5])
    obj.semantic_label = 0
    obj.name = "crate"
    obj.bounding_box = dsg.BoundingBox(np.array([0.5, 0.5, 0.5]), obj.position)
    graph.add_node(2, node_id("Q7"), obj)
    graph.insert_edge(node_id("Q6"), node_id("Q7"))
    if restart:
        mirror = Mirror(store)
    mirror.reconcile(graph)
    assert_equals_oracle(store, graph)


def test_a_relationship_stored_the_wrong_way_is_not_taken_for_the_right_one(store: GraphStore) -> None:
    """A restarted mirror reads its baseline back: a reversed CONTAINS (Object > place) is not Q2 > O0."""
    graph = hydra_scene()
    Mirror(store).reconcile(graph)
    store.write("MATCH (p:MeshPlace {nodeSymbol: 'Q2'})-[e:CONTAINS]->(o:Object {nodeSymbol: 'O0'}) DELETE e")
    store.write("MATCH (p:MeshPlace {nodeSymbol: 'Q2'}), (o:Object {nodeSymbol: 'O0'}) CREATE (o)-[:CONTAINS]->(p)")
    store.write("MATCH (a:MeshPlace {nodeSymbol: 'Q0'}), (b:MeshPlace {nodeSymbol: 'Q1'}) "
                "MATCH (a)-[e:MESH_PLACE_CONNECTED]-(b) DELETE e")
    store.write("MATCH (a:MeshPlace {nodeSymbol: 'Q0'}), (b:MeshPlace {nodeSymbol: 'Q1'}) "
                "CREATE (a)-[:CONTAINS]->(b), (b)-[:CONTAINS]->(a)")
    Mirror(store).reconcile(graph)
    problems = differences(store, graph)
    # What another writer put there is left alone (the mirror never deletes what it does not own) ...
    # ... and what the scene says is written again.
    assert sorted(problems) == [
        "extra edge ('O0', 'Q2', 'CONTAINS')",
        "extra edge ('Q0', 'Q1', 'CONTAINS')",
        "extra edge ('Q1', 'Q0', 'CONTAINS')",
    ]


def test_stage_timings_add_up_to_the_total(store: GraphStore) -> None:
    report = Mirror(store).reconcile(hydra_scene())
    stages = [report.timings[k] for k in ("extract", "read_baseline", "diff", "write", "corrections", "history")]
    assert all(0 <= s <= report.timings["total"] for s in stages), report.timings
    assert sum(stages) == pytest.approx(report.timings["total"], rel=1e-6), report.timings
