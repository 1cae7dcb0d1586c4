"""The resolver on real graphs, both backends: words to live objects, rooms, weak matches, and the live mirror.

Every object it returns is read from the database at the call: after snapshots that move, relabel and
remove objects it returns the moved ones where they are now and never a removed one.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
from support.tiny_scene import OBJECT_CLASSES, add_object, node_id, tiny_scene

from heracles_ros.errors import ConfigError
from heracles_ros.meaning.embeddings import CachedEmbedder, open_embedder
from heracles_ros.meaning.resolver import MAX_TEXT_CHARS, Resolver
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import SceneTables, extract_tables, symbol_of
from heracles_ros.schema import Layer


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    return open_embedder()


def _objects(tables: SceneTables, cls: str) -> dict[str, tuple[float, float, float]]:
    return {symbol_of(i): (r[3], r[4], r[5]) for i, r in tables.nodes.items() if r[0] is Layer.OBJECT and r[1] == cls}


def test_paraphrases_find_the_class_with_live_positions_and_rooms(store, embedder) -> None:
    Mirror(store).reconcile(tiny_scene())
    resolver = Resolver(store, embedder)
    found = resolver.find("something to sit on")
    first = found.objects[0]
    assert (first.symbol, first.cls, first.room, first.matched) == ("O4", "chair", None, "chair")
    # The objects of the best three classes follow, best first, each class once.
    assert [t for t, _ in found.terms] == list(dict.fromkeys(f.matched for f in found.objects))
    assert [f.score for f in found.objects] == sorted((f.score for f in found.objects), reverse=True)
    assert found.terms[0][0] == "chair" and found.whole
    carried = resolver.find("my rucksack").objects[0]  # a word of the lexicon's, not a class
    assert (carried.symbol, carried.x, carried.y, carried.z, carried.room) == ("O1", 1.0, 1.0, 0.5, "R0")
    boxes = resolver.find("a cardboard carton", k=1)
    assert [f.symbol for f in boxes.objects] == ["O0"] and boxes.terms[0][0] == "box"  # k=1 of the two boxes
    assert set(boxes.objects[0].to_json()) >= {"symbol", "class", "score", "x", "y", "z", "room"}


def test_a_room_named_in_the_text_ranks_its_objects_first(store, embedder) -> None:
    Mirror(store).reconcile(tiny_scene())  # boxes O0 (R0, kitchen) and O3 (R1, lounge)
    resolver = Resolver(store, embedder)
    assert [f.symbol for f in resolver.find("the box in the lounge").objects][:2] == ["O3", "O0"]
    assert [f.symbol for f in resolver.find("the box in the kitchen").objects][:2] == ["O0", "O3"]
    assert resolver.find("the box in the lounge").rooms == ["lounge"]
    # A tail that names no room of the scene is part of the thing, not a place.
    assert resolver.find("a box on wheels").rooms == []


def test_a_weak_match_says_uncertain(store, embedder) -> None:
    Mirror(store).reconcile(tiny_scene())
    resolver = Resolver(store, embedder)
    assert not resolver.find("bicycle").uncertain
    weak = resolver.find("quantum chromodynamics")
    assert weak.uncertain and all(f.uncertain for f in weak.objects)


def test_bad_requests_name_what_was_wrong(store, embedder) -> None:
    Mirror(store).reconcile(tiny_scene())
    resolver = Resolver(store, embedder)
    for text, k, words in (("", 5, "needs words"), ("x" * (MAX_TEXT_CHARS + 1), 5, "at most 1,000"),
                           ("a box", 0, "k must be 1 to")):
        with pytest.raises(ConfigError, match=words):
            resolver.find(text, k=k)
    with pytest.raises(ConfigError, match="'O99' is not an object"):
        resolver.like("O99")
    with pytest.raises(ConfigError, match="O1 has no semantic feature"):
        resolver.like("O1")
    assert resolver.find("a bag").objects[0].symbol == "O1"  # and it goes on answering


def test_new_words_from_hydra_and_the_operator_reach_it_without_a_restart(store, embedder) -> None:
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene())
    resolver = Resolver(store, embedder)
    assert resolver.find("a lorry").objects[0].cls != "truck"
    graph = tiny_scene()
    graph.metadata.add({"labelspaces": {"_l2p0": [*OBJECT_CLASSES, [4, "truck"]]}})
    add_object(graph, 5, 3, (3.0, 1.0, 0.5), 3)
    graph.get_node(node_id("O5")).attributes.semantic_label = 4
    mirror.reconcile(graph)  # Hydra starts reporting a class
    assert [(f.symbol, f.cls) for f in resolver.find("a lorry").objects][:1] == [("O5", "truck")]
    Corrections(store).apply([("O2", "class", "canoe")], request="that is a canoe")  # the operator relabels one
    assert [(f.symbol, f.cls) for f in resolver.find("a kayak").objects][:1] == [("O2", "canoe")]


def test_after_moves_relabels_and_removals_it_returns_objects_where_they_are_now(store, embedder) -> None:
    """The issue's held-out check: a second snapshot moves, relabels and removes objects."""
    mirror = Mirror(store)
    mirror.reconcile(tiny_scene(), stamp_s=1000.0)
    resolver = Resolver(store, embedder)
    assert {f.symbol for f in resolver.find("a crate").objects if f.cls == "box"} == {"O0", "O3"}
    graph = tiny_scene()
    graph.get_node(node_id("O0")).attributes.position = np.array([4.0, 3.0, 0.5])  # moved 3.6 m
    graph.get_node(node_id("O1")).attributes.semantic_label = 0  # the bag is a box after all
    graph.remove_node(node_id("O3"))  # a box gone
    mirror.reconcile(graph, stamp_s=1001.0)
    boxes = {f.symbol: (f.x, f.y, f.z) for f in resolver.find("a crate").objects if f.cls == "box"}
    assert boxes == {"O0": (4.0, 3.0, 0.5), "O1": (1.0, 1.0, 0.5)}
    assert "O3" not in {f.symbol for f in resolver.find("a crate", k=1000).objects}
    assert "bag" not in {f.cls for f in resolver.find("my rucksack", k=1000).objects}


def test_across_many_mirrored_snapshots_it_returns_every_current_object_and_no_removed_one(store, embedder) -> None:
    """40 snapshots of the small scene, each moving 5 objects, relabelling 2 to or from chair, removing 2 and
    bringing back the oldest beyond 4 removed: the chairs found are the snapshot's chairs, at its positions."""
    base = extract_tables(generate_scene("small", 0))
    mirror = Mirror(store)
    mirror.reconcile(base, stamp_s=0.0)
    resolver = Resolver(store, embedder)
    rng = np.random.default_rng(7)
    objects = sorted(i for i, row in base.nodes.items() if row[0] is Layer.OBJECT)
    current, removed = copy.deepcopy(base), {}
    for snapshot in range(1, 41):
        nodes = dict(current.nodes)
        present = [i for i in objects if i in nodes]
        for i in rng.choice(present, 5, replace=False):
            row = list(nodes[i])
            row[3] += float(rng.uniform(1, 3))
            row[4] -= float(rng.uniform(1, 3))
            nodes[i] = tuple(row)
        for i in rng.choice(present, 2, replace=False):
            row = list(nodes[i])
            row[1] = "table" if row[1] == "chair" else "chair"
            nodes[i] = tuple(row)
        for i in rng.choice(present, 2, replace=False):
            removed[int(i)] = nodes.pop(int(i))
        while len(removed) > 4:  # the oldest removals come back
            back = next(iter(removed))
            nodes[back] = removed.pop(back)
        edges = {e for e in base.edges if (e >> 64) in nodes and (e & ((1 << 64) - 1)) in nodes}
        current = SceneTables(nodes=nodes, edges=edges)
        mirror.reconcile(current, stamp_s=float(snapshot))
        found = {f.symbol: (f.x, f.y, f.z) for f in resolver.find("an armchair", k=1000).objects if f.cls == "chair"}
        want = _objects(current, "chair")
        assert set(found) == set(want), f"snapshot {snapshot}"
        for symbol, position in want.items():
            assert found[symbol] == pytest.approx(position, abs=1e-6), f"snapshot {snapshot}: {symbol}"
        gone = {symbol_of(i) for i in removed}
        assert not gone & {f.symbol for f in resolver.find("a table", k=1000).objects}


def test_it_reads_through_snapshot_reads(store, embedder) -> None:
    """A reconcile in progress (``writing`` on MirrorMeta) holds the read back, and it says when it gave up."""
    Mirror(store).reconcile(tiny_scene())
    resolver = Resolver(store, embedder, wait_s=0.2)
    store.write("MATCH (m:MirrorMeta {id: 'mirror'}) SET m.writing = true")
    held = resolver.find("a bag")
    assert not held.whole and held.objects[0].symbol == "O1"
    store.write("MATCH (m:MirrorMeta {id: 'mirror'}) SET m.writing = false")
    assert resolver.find("a bag").whole

