"""A hand-built spark_dsg graph whose every node and edge a test can name."""
from __future__ import annotations

import numpy as np
import spark_dsg as dsg

from heracles_ros.scene.synthetic import fill_uninitialised

OBJECT_CLASSES = [[0, "box"], [1, "bag"], [2, "bicycle"], [3, "chair"]]
ROOM_CLASSES = [[0, "kitchen"], [1, "lounge"], [2, "hallway"]]


def _id(prefix: str, index: int) -> int:
    return int(dsg.NodeSymbol(prefix, index).value)


def tiny_scene() -> dsg.DynamicSceneGraph:
    """B0 > R0,R1 > P0..P5 (a line of mesh places) > O0..O3, plus O4 without a place."""
    graph = dsg.DynamicSceneGraph()
    graph.metadata.add({"labelspaces": {"_l2p0": OBJECT_CLASSES, "_l4p0": ROOM_CLASSES}})
    building = dsg.NodeAttributes()
    building.position = np.array([2.5, 0.0, 0.0])
    graph.add_node(5, _id("B", 0), building)
    for r in range(2):
        room = dsg.RoomNodeAttributes()
        room.position = np.array([1.0 + 3.0 * r, 0.0, 0.0])
        room.semantic_label = r
        graph.add_node(4, _id("R", r), room)
        graph.insert_edge(_id("B", 0), _id("R", r))
    graph.insert_edge(_id("R", 0), _id("R", 1))
    add_place_line(graph, "P", 6, per_room=3)
    for o, (place, label) in enumerate([(0, 0), (1, 1), (4, 2), (5, 0), (None, 3)]):
        add_object(graph, o, label, (float(place if place is not None else 2.5), 1.0, 0.5), place)
    return graph


def add_place_line(graph: dsg.DynamicSceneGraph, prefix: str, count: int, *, per_room: int) -> None:
    """Mesh places ``prefix``0.. on the x axis 1 m apart, each joined to the one before it, the first ``per_room``
    in room R0, the next in R1, and so on."""
    for i in range(count):
        place = dsg.Place2dNodeAttributes()
        place.position = np.array([float(i), 0.0, 0.0])
        fill_uninitialised(place)
        graph.add_node(3, _id(prefix, i), place, 1)
        graph.insert_edge(_id("R", i // per_room), _id(prefix, i))
        if i:
            graph.insert_edge(_id(prefix, i - 1), _id(prefix, i))


def add_object(
    graph: dsg.DynamicSceneGraph, index: int, label: int, position: tuple[float, float, float], place: int | None
) -> None:
    obj = dsg.ObjectNodeAttributes()
    obj.position = np.array(position)
    obj.semantic_label = label
    obj.name = f"{OBJECT_CLASSES[label][1]} {index}"
    obj.bounding_box = dsg.BoundingBox(np.array([0.5, 0.4, 0.3]), np.array(position))
    graph.add_node(2, _id("O", index), obj)
    if place is not None:
        graph.insert_edge(_id("P", place), _id("O", index))


def node_id(symbol: str) -> int:
    return _id(symbol[0], int(symbol[1:]))
