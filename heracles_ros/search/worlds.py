"""Worlds and their maps: a scene with objects the map lacks, for the simulated Hydra's tests and the bench.

A world holds every node of its map under the same symbol, plus the hidden objects; the map is the world
without them. The world's object labelspace names the hidden class, so a snapshot of it mirrors that class.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import spark_dsg as dsg

from heracles_ros.scene.tables import id_of, symbol_of

#: Symbol numbers of hidden objects start here (far above a synthetic scene's own).
HIDDEN_FROM = 900


def class_label(graph: dsg.DynamicSceneGraph, class_name: str) -> int:
    """The object labelspace's label of ``class_name``, added when the labelspace lacks it."""
    names = graph.metadata.get().get("labelspaces", {}).get("_l2p0", [])
    for label, name in names:
        if name == class_name:
            return int(label)
    label = 1 + max((int(label) for label, _ in names), default=-1)
    graph.metadata.add({"labelspaces": {"_l2p0": [*names, [label, class_name]]}})
    return label


def hide_objects(world: dsg.DynamicSceneGraph, class_name: str, places: Sequence[str], *,
                 first: int = HIDDEN_FROM) -> list[str]:
    """Add one object of ``class_name`` on each of ``places`` (symbols) to ``world``; their symbols."""
    label = class_label(world, class_name)
    hidden = []
    for k, place in enumerate(places):
        position = np.asarray(world.get_node(id_of(place)).attributes.position, dtype=float) + np.array([0.0, 0.0, 0.5])
        attrs = dsg.ObjectNodeAttributes()
        attrs.position = position
        attrs.semantic_label = label
        attrs.name = f"{class_name} {first + k}"
        attrs.bounding_box = dsg.BoundingBox(np.array([0.3, 0.3, 0.6]), position)
        node_id = id_of(f"O{first + k}")
        world.add_node(2, node_id, attrs)
        world.insert_edge(id_of(place), node_id)
        hidden.append(symbol_of(node_id))
    return hidden


def map_of(world: dsg.DynamicSceneGraph, hidden: Sequence[str]) -> dsg.DynamicSceneGraph:
    """The world without the ``hidden`` objects: what the robot's map holds at start."""
    graph = dsg.DynamicSceneGraph.from_binary(world.to_binary(include_mesh=False))
    for symbol in hidden:
        graph.remove_node(id_of(symbol))
    return graph
