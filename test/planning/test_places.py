"""The place graph the planner walks: 3D places hang off the mesh places only within the dispatcher's hop."""
from __future__ import annotations

from typing import Any

import numpy as np
import spark_dsg as dsg
from support.tiny_scene import node_id, tiny_scene

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.plan_types import MAX_HOP_M
from heracles_ros.planning.places import PlaceGraph, load_place_graph
from heracles_ros.planning.planner import Planner
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


def _described(graph: PlaceGraph) -> dict[str, Any]:
    """A graph by its symbols (indices differ between a followed graph and one read whole); a 3D place by how far
    it is from the mesh place it joins (of two as near, either)."""
    s, nav = graph.symbols, graph.nav_count
    coo = graph.matrix.tocoo()
    components: dict[int, set[str]] = {}
    for i, c in enumerate(graph.component):
        components.setdefault(int(c), set()).add(s[i])
    return {
        "nav": set(s[:nav]),
        "leaves": set(s[nav:]),
        "positions": {s[i]: tuple(np.round(graph.positions[i], 9)) for i in range(graph.size)},
        "edges": {(s[a], s[b]): round(float(w), 9) for a, b, w in zip(coo.row, coo.col, coo.data, strict=True)
                  if a < nav and b < nav},
        "joins": {s[a]: round(float(w), 9) for a, w in zip(coo.row, coo.data, strict=True) if a >= nav},
        "rooms": {room: {s[i] for i in places} for room, places in graph.room_places.items()},
        "boundary": {room: {s[i] for i in places} for room, places in graph.room_boundary.items()},
        "room_of": {s[i]: graph.room_symbol_of(i) for i in range(graph.size)},
        "room_positions": graph.room_positions,
        "components": {frozenset(members) for members in components.values()},
    }


def test_a_followed_graph_is_the_graph_read_whole(small_store: GraphStore, small_scene: dsg.DynamicSceneGraph) -> None:
    """Places moved, removed and added, a link cut, a 3D place added, a room gone: the graph followed through
    the mirror's change log equals the one read whole from the same database."""
    planner = Planner(small_store)
    planner.place_graph()
    small_scene.get_node(node_id("P47")).attributes.position = np.array([7.0, 4.6, 0.0])
    small_scene.remove_node(node_id("P42"))
    small_scene.remove_edge(node_id("P47"), node_id("P57"))
    added = dsg.Place2dNodeAttributes()
    added.position = np.array([10.0, 0.0, 0.0])
    small_scene.add_node(3, node_id("P200"), added, 1)
    small_scene.insert_edge(node_id("P9"), node_id("P200"))
    leaf = dsg.PlaceNodeAttributes()
    leaf.position = np.array([9.5, 0.5, 1.2])
    fill_uninitialised(leaf)
    small_scene.add_node(3, int(dsg.NodeSymbol("p", 77).value), leaf, 0)
    room = next(iter(small_scene.get_layer(dsg.DsgLayers.ROOMS).nodes)).id.value
    small_scene.remove_node(room)
    Mirror(small_store).reconcile(small_scene)
    followed = planner.place_graph()
    assert planner.graph_reads == {"whole": 1, "changes": 1}
    assert _described(followed) == _described(load_place_graph(small_store))
