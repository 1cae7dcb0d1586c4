"""A symbol's kind is the label the database gives it, whatever its first letter."""
from __future__ import annotations

from support.hydra_scene import hydra_scene

from heracles_ros.graphdb.falkordb_store import FalkorStore
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.mirror.symbols import symbol_layers
from heracles_ros.schema import Layer


def test_labels_decide_kinds(store: FalkorStore) -> None:
    Mirror(store).reconcile(hydra_scene())
    kinds = symbol_layers(store, ["Q6", "O1", "p0", "R1", "B0", "f0", "a1", "Q99", "not a symbol", "Q6"])
    assert kinds == {
        "Q6": Layer.MESH_PLACE, "O1": Layer.OBJECT, "p0": Layer.PLACE, "R1": Layer.ROOM, "B0": Layer.BUILDING
    }  # frontiers, agents, absent and malformed symbols are not scene nodes of the mirror
    assert symbol_layers(store, []) == {}
