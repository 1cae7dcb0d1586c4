"""Hydra's conventions plus every spark_dsg attribute type with its variable-length fields filled.

What the payload check and the decoder's fuzzing start from: each length spark_dsg writes
(strings, vectors, matrices, maps, metadata, a mesh) appears at least once.
"""
from __future__ import annotations

import numpy as np
import spark_dsg as dsg

from heracles_ros.scene.synthetic import fill_uninitialised
from support.hydra_scene import hydra_scene


def sym(prefix: str, index: int) -> int:
    return int(dsg.NodeSymbol(prefix, index).value)


def rich_scene() -> dsg.DynamicSceneGraph:
    """Hydra's conventions plus every attribute type with its variable-length fields filled, metadata and a mesh."""
    graph = hydra_scene()
    obj = dsg.ObjectNodeAttributes()
    obj.position = np.array([1.0, 2.0, 3.0])
    obj.name = "chaise longue é"
    obj.mesh_connections = [1, 2, 3]
    obj.semantic_feature = np.arange(6, dtype=np.float32).reshape(2, 3)
    obj.metadata.add({"note": ["a", {"b": 1}]})
    graph.add_node(2, sym("O", 50), obj)
    room = dsg.RoomNodeAttributes()
    room.semantic_class_probabilities = {"kitchen": 0.7, "lounge": 0.3}
    graph.add_node(4, sym("R", 50), room)
    place = dsg.PlaceNodeAttributes()
    place.pcl_mesh_connections = [4, 5]
    place.mesh_vertex_labels = [1, 2, 3]
    place.deformation_connections = [9]
    graph.add_node(3, sym("p", 50), place)
    mesh_place = dsg.Place2dNodeAttributes()
    mesh_place.boundary = [np.array([0.0, 0.0, 0.0]), np.array([1.0, 0.0, 0.0]), np.array([1.0, 1.0, 0.0])]
    mesh_place.pcl_boundary_connections = [1, 2]
    fill_uninitialised(mesh_place)
    mesh_place.ellipse_matrix_expand = 2 * np.eye(2)
    graph.add_node(3, sym("Q", 50), mesh_place, 1)
    agent = dsg.AgentNodeAttributes()
    agent.dbow_ids = np.array([1, 2, 3], dtype=np.uint32)
    agent.dbow_values = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    fill_uninitialised(agent)
    graph.add_node(2, sym("a", 50), agent, ord("a"))
    graph.add_node(2, sym("K", 50), dsg.KhronosObjectAttributes())
    traversable = dsg.TraversabilityNodeAttributes()
    traversable.boundary.min, traversable.boundary.max = np.array([0.0, 0.0]), np.array([1.0, 1.0])
    graph.add_node(6, sym("T", 50), traversable)
    graph.add_node(5, sym("B", 50), dsg.SemanticNodeAttributes())
    mesh = dsg.Mesh(True, True, True, True)  # colours, stamps, labels, first-seen stamps
    mesh.set_vertices(np.array([[0, 0, 0, 1, 0, 0], [1, 0, 0, 0, 1, 0], [0, 1, 0, 0, 0, 1], [1, 1, 0, 1, 1, 1]]).T)
    mesh.set_faces(np.array([[0, 1, 2], [1, 2, 3]]).T)
    for i in range(4):
        mesh.set_timestamp(i, 10 + i)
        mesh.set_label(i, i)
        mesh.set_first_seen_timestamp(i, 5 + i)
    graph.mesh = mesh
    edge = dsg.EdgeAttributes()
    edge.weighted, edge.weight = True, 2.5
    edge.metadata.add({"w": 1})
    graph.insert_edge(sym("O", 50), sym("Q", 50), edge)
    return graph
