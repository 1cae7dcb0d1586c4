"""A scene in Hydra's real conventions, built with spark_dsg's own API.

What Hydra writes and our tidy scenes did not: mesh places prefixed ``Q``
(Hydra's code default), rooms with ``semantic_label`` 0 and their name in
``name`` and no room labelspace, an object labelspace spelled as ade20k's
("Box", "Door"), a frontier (``f0``, ``real_place`` false) in the 3D places
layer, and an agent layer (layer 2, partition ``'a'``) of robot poses linked
to the mesh places they were taken on.

    B0 > R0 "kitchen" > Q0..Q3,  R1 "lounge" > Q4..Q7 (a line, 1 m apart)
    p0, p1 (3D places) with frontier f0 next to p1
    O0 Box on Q2, O1 Door on Q6; agent poses a0..a2 on Q0..Q2
"""
from __future__ import annotations

import numpy as np
import spark_dsg as dsg

from heracles_ros.scene.synthetic import fill_uninitialised
from support.tiny_scene import add_place_line

OBJECT_LABELSPACE = [[0, "Box"], [1, "Door"]]
ROOM_NAMES = ["kitchen", "lounge"]
AGENT_PARTITION = ord("a")


def _id(prefix: str, index: int) -> int:
    return int(dsg.NodeSymbol(prefix, index).value)


def hydra_scene() -> dsg.DynamicSceneGraph:
    graph = dsg.DynamicSceneGraph()
    graph.metadata.add({"labelspaces": {"_l2p0": OBJECT_LABELSPACE}})
    building = dsg.NodeAttributes()
    building.position = np.array([3.5, 0.0, 0.0])
    graph.add_node(dsg.DsgLayers.BUILDINGS, _id("B", 0), building)
    for r, name in enumerate(ROOM_NAMES):
        room = dsg.RoomNodeAttributes()
        room.position = np.array([1.5 + 4.0 * r, 0.0, 0.0])
        room.semantic_label = 0
        room.name = name
        graph.add_node(dsg.DsgLayers.ROOMS, _id("R", r), room)
        graph.insert_edge(_id("B", 0), _id("R", r))
    graph.insert_edge(_id("R", 0), _id("R", 1))
    add_place_line(graph, "Q", 8, per_room=4)
    for p in range(2):
        place = dsg.PlaceNodeAttributes()
        place.position = np.array([1.0 + 4.0 * p, 0.5, 1.0])
        place.distance = 0.8
        graph.add_node(dsg.DsgLayers.PLACES, _id("p", p), place)
        graph.insert_edge(_id("R", p), _id("p", p))
    graph.insert_edge(_id("p", 0), _id("p", 1))
    frontier = dsg.PlaceNodeAttributes()
    frontier.position = np.array([6.0, 1.5, 1.0])
    frontier.real_place = False
    frontier.active_frontier = True
    graph.add_node(dsg.DsgLayers.PLACES, _id("f", 0), frontier)
    graph.insert_edge(_id("p", 1), _id("f", 0))
    for o, (place, label) in enumerate([(2, 0), (6, 1)]):
        obj = dsg.ObjectNodeAttributes()
        position = np.array([float(place), 0.3, 0.4])
        obj.position = position
        obj.semantic_label = label
        obj.bounding_box = dsg.BoundingBox(np.array([0.4, 0.3, 0.2]), position + np.array([0.0, 0.0, 0.1]))
        graph.add_node(dsg.DsgLayers.OBJECTS, _id("O", o), obj)
        graph.insert_edge(_id("Q", place), _id("O", o))
    for k in range(3):
        pose = dsg.AgentNodeAttributes()
        pose.position = np.array([float(k), 0.0, 0.5])
        fill_uninitialised(pose)
        graph.add_node(2, _id("a", k), pose, AGENT_PARTITION)
        if k:
            graph.insert_edge(_id("a", k - 1), _id("a", k))
        graph.insert_edge(_id("Q", k), _id("a", k))
    return graph
