"""The mirror's place-graph change log: what each generation changed of places, rooms and their links."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from support.tiny_scene import node_id

from heracles_ros.graphdb.cypher import mirror as meta
from heracles_ros.graphdb.cypher import place_changes as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror import place_changes
from heracles_ros.mirror.reconcile import Mirror


def _entries(store: GraphStore) -> dict[int, dict[str, Any]]:
    return {row["generation"]: row for row in store.query(q.READ_CHANGES, {"after": 0, "upto": 1_000_000})}


def _token(store: GraphStore) -> str:
    return str(store.query(meta.READ_META)[0]["token"])


def _nudge(scene: Any, symbol: str) -> None:
    attributes = scene.get_node(node_id(symbol)).attributes
    attributes.position = np.asarray(attributes.position) + np.array([0.5, 0.0, 0.0])


def test_each_generation_names_the_places_rooms_and_link_ends_it_changed(
    store: GraphStore, small_scene: Any
) -> None:
    mirror = Mirror(store)
    mirror.reconcile(small_scene)
    assert _entries(store) == {}  # a first load is not listed: its readers read the whole graph
    before = _token(store)
    small_scene.get_node(node_id("P47")).attributes.position = np.array([7.0, 4.6, 0.0])
    small_scene.remove_edge(node_id("P42"), node_id("P52"))
    _nudge(small_scene, "O1")
    mirror.reconcile(small_scene)
    entry = _entries(store)[2]
    assert entry["from_token"] == before
    assert sorted(entry["symbols"]) == ["P42", "P47", "P52"]  # the moved object is not the place graph's
    _nudge(small_scene, "O1")
    mirror.reconcile(small_scene)
    assert _entries(store)[3]["symbols"] == []


def test_only_the_newest_generations_are_kept(
    store: GraphStore, small_scene: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(place_changes, "KEEP", 3)
    mirror = Mirror(store)
    for step in range(6):
        small_scene.get_node(node_id("P47")).attributes.position = np.array([7.0, 4.0 + 0.1 * step, 0.0])
        mirror.reconcile(small_scene)
    assert sorted(_entries(store)) == [4, 5, 6]


def test_a_reconcile_over_one_stopped_half_way_is_not_listed(store: GraphStore, small_scene: Any) -> None:
    """What the stopped reconcile wrote is in no entry, so its readers must read the whole graph."""
    Mirror(store).reconcile(small_scene)
    small_scene.get_node(node_id("P47")).attributes.position = np.array([7.0, 4.6, 0.0])
    Mirror(store).reconcile(small_scene)  # a restarted mirror, the database as the last one left it
    assert 2 in _entries(store)
    store.write("MATCH (m:MirrorMeta {id: 'mirror'}) SET m.writing = true")  # a reconcile killed mid-way
    small_scene.get_node(node_id("P47")).attributes.position = np.array([7.0, 4.2, 0.0])
    Mirror(store).reconcile(small_scene)
    assert 3 not in _entries(store)
