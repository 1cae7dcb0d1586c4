"""A synthetic scene changed as Hydra changes one between two snapshots: objects and places moved, added, removed.

For the console's map tests: what changed is returned by symbol, so a test can say what must reach the page.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import spark_dsg as dsg

from heracles_ros.scene.synthetic import fill_uninitialised

OBJECTS_LAYER, PLACES_LAYER, MESH_PARTITION = 2, 3, 1


@dataclass
class MapChanges:
    """What :func:`change_map` did, by symbol (positions: x, y where the node is now)."""

    moved_objects: dict[str, tuple[float, float]] = field(default_factory=dict)
    added_objects: dict[str, tuple[float, float]] = field(default_factory=dict)
    removed_objects: list[str] = field(default_factory=list)
    moved_places: dict[str, tuple[float, float]] = field(default_factory=dict)
    added_places: dict[str, tuple[float, float]] = field(default_factory=dict)
    removed_places: list[str] = field(default_factory=list)

    @property
    def places(self) -> set[str]:
        return {*self.moved_places, *self.added_places, *self.removed_places}


def change_map(graph: dsg.DynamicSceneGraph, *, place_share: float = 0.0, metres: float = 2.0) -> MapChanges:
    """Move the first object ``metres`` along x, remove the last, add one beside the first place; move every
    ``1 / place_share``-th place without objects ``metres`` along x, removing every fourth of those instead (at
    least one place each), and add a place linked to the first place. Changes ``graph`` in place."""
    changes = MapChanges()
    objects = sorted(graph.get_layer(OBJECTS_LAYER).nodes, key=lambda node: node.id.value)
    places = sorted(graph.get_layer(PLACES_LAYER, MESH_PARTITION).nodes, key=lambda node: node.id.value)
    first, last = objects[0], objects[-1]
    first.attributes.position = first.attributes.position + np.array([metres, 0.0, 0.0])
    changes.moved_objects[first.id.str()] = _xy(first)
    changes.removed_objects.append(last.id.str())
    added = dsg.ObjectNodeAttributes()
    added.position = places[0].attributes.position + np.array([0.3, 0.3, 0.5])
    added.semantic_label = last.attributes.semantic_label
    added.name = f"{last.attributes.name} (new)"
    added.bounding_box = dsg.BoundingBox(np.array([0.4, 0.4, 0.4]), added.position)
    object_id = dsg.NodeSymbol("O", 90_000 + len(objects))
    graph.add_node(OBJECTS_LAYER, object_id.value, added)
    graph.insert_edge(places[0].id.value, object_id.value)
    changes.added_objects[object_id.str()] = (float(added.position[0]), float(added.position[1]))
    graph.remove_node(last.id.value)

    bare = [node for node in places[1:] if not any(graph.get_node(child).layer == OBJECTS_LAYER
                                                    for child in node.children())]
    step = max(1, round(1 / place_share)) if place_share > 0 else len(bare)
    for index, node in enumerate(bare[::step] or bare[:1]):
        if index % 4 == 3:
            changes.removed_places.append(node.id.str())
            graph.remove_node(node.id.value)
        else:
            node.attributes.position = node.attributes.position + np.array([metres, 0.0, 0.0])
            changes.moved_places[node.id.str()] = _xy(node)
    if not changes.removed_places:
        gone = next(node for node in reversed(bare) if node.id.str() not in changes.moved_places)
        changes.removed_places.append(gone.id.str())
        graph.remove_node(gone.id.value)
    place = dsg.Place2dNodeAttributes()
    place.position = places[0].attributes.position + np.array([0.0, 1.5, 0.0])
    fill_uninitialised(place)
    place_id = dsg.NodeSymbol(places[0].id.category, 90_000 + len(places))
    graph.add_node(PLACES_LAYER, place_id.value, place, MESH_PARTITION)
    graph.insert_edge(places[0].id.value, place_id.value)
    if (room := places[0].get_parent()) is not None:
        graph.insert_edge(room, place_id.value)
    changes.added_places[place_id.str()] = (float(place.position[0]), float(place.position[1]))
    return changes


def _xy(node: dsg.SceneGraphNode) -> tuple[float, float]:
    return (float(node.attributes.position[0]), float(node.attributes.position[1]))
