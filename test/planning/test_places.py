"""The place graph the planner walks: 3D places hang off the mesh places only within the dispatcher's hop."""
from __future__ import annotations

import numpy as np
import spark_dsg as dsg
from support.tiny_scene import tiny_scene

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.plan_types import MAX_HOP_M
from heracles_ros.planning.places import load_place_graph
from heracles_ros.scene.synthetic import fill_uninitialised


def _with_3d_places(*positions: tuple[float, float, float]) -> dsg.DynamicSceneGraph:
    graph = tiny_scene()
    for index, position in enumerate(positions):
        place = dsg.PlaceNodeAttributes()
        place.position = np.array(position)
        fill_uninitialised(place)
        graph.add_node(3, int(dsg.NodeSymbol("p", index).value), place, 0)
    return graph


def test_a_3d_place_farther_than_the_dispatchers_hop_from_every_mesh_place_is_not_walked_to(store: GraphStore) -> None:
    """Issue 39 N5: the dispatcher refuses a hop off the graph longer than MAX_HOP_M, so the planner must not
    plan one (it joined each 3D place to its nearest mesh place at any distance)."""
    near, far = (2.0, MAX_HOP_M - 0.5, 1.5), (2.0, MAX_HOP_M + 6.0, 1.5)  # the mesh places lie on y = 0
    Mirror(store).reconcile(_with_3d_places(near, far))
    graph = load_place_graph(store)
    distance, _ = graph.shortest_paths([graph.index["P0"]])
    # P0 along the line to P2, then the leaf edge up to p0 (edges weigh their Euclidean length).
    assert np.isclose(distance[0, graph.index["p0"]], 2.0 + np.linalg.norm([0.0, MAX_HOP_M - 0.5, 1.5]))
    assert np.isinf(distance[0, graph.index["p1"]])
