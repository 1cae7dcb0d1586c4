"""Random edits of a Hydra-like scene graph, one snapshot after another, drawn by hypothesis.

What Hydra's successive snapshots do to its graph, and what the mirror's comparison of payloads must get
right: moves, update times only (bytes change, nothing the mirror keeps), nodes and edges coming and going,
frontiers that turn into places and back, renames, relabels, features, a node that changes layer, and a new
labelspace (another header).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import spark_dsg as dsg
from hypothesis import strategies as st

from heracles_ros.scene.synthetic import fill_uninitialised

Edit = Callable[[dsg.DynamicSceneGraph], None]
_fresh = iter(range(1000, 10**9))


def _ids(graph: dsg.DynamicSceneGraph, layer: int, partition: int = 0) -> list[int]:
    if not graph.has_layer(layer, partition):
        return []
    return sorted(n.id.value for n in graph.get_layer(layer, partition).nodes)


def _sym(prefix: str) -> int:
    return int(dsg.NodeSymbol(prefix, next(_fresh)).value)


def _pick(data: st.DataObject, ids: list[int]) -> int | None:
    return ids[data.draw(st.integers(0, len(ids) - 1))] if ids else None


def _move(graph: dsg.DynamicSceneGraph, node: int, step: float) -> None:
    attrs = graph.get_node(node).attributes
    attrs.position = attrs.position + np.array([step, -step / 2, 0.0])


def _object(graph: dsg.DynamicSceneGraph, label: int, place: int | None, at: float) -> None:
    obj = dsg.ObjectNodeAttributes()
    obj.position = np.array([at, 1.0, 0.5])
    obj.semantic_label = label
    obj.name = f"thing {label}"
    obj.bounding_box = dsg.BoundingBox(np.array([0.3, 0.3, 0.3]), obj.position)
    node = _sym("O")
    graph.add_node(2, node, obj)
    if place is not None:
        graph.insert_edge(place, node)


def _mesh_place(graph: dsg.DynamicSceneGraph, room: int | None, neighbour: int | None, at: float) -> None:
    place = dsg.Place2dNodeAttributes()
    place.position = np.array([at, 2.0, 0.0])
    fill_uninitialised(place)
    node = _sym("Q")
    graph.add_node(3, node, place, 1)
    for other in (room, neighbour):
        if other is not None:
            graph.insert_edge(other, node)


def _flip(graph: dsg.DynamicSceneGraph, node: int) -> None:
    attrs = graph.get_node(node).attributes
    attrs.real_place = not attrs.real_place


def _relayer(graph: dsg.DynamicSceneGraph, node: int) -> None:
    """A 3D place (or frontier) comes back under the same id as a mesh place, without its edges."""
    position = graph.get_node(node).attributes.position
    graph.remove_node(node)
    place = dsg.Place2dNodeAttributes()
    place.position = position
    fill_uninitialised(place)
    graph.add_node(3, node, place, 1)


#: Every kind of edit; the commoner ones (moves, update times) listed twice.
KINDS = ("move", "move", "nudge", "touch", "touch", "remove", "add object", "add place", "flip", "edge", "unedge",
         "rename", "relabel", "feature", "relayer", "labelspace")
#: Picks one of the ids offered (sorted), or None.
Pick = Callable[[list[int]], "int | None"]


def draw_edit(data: st.DataObject, graph: dsg.DynamicSceneGraph) -> str:
    """Apply one random edit to ``graph``; what it was, for the failure report."""
    kind = data.draw(st.sampled_from(KINDS))
    return edit(graph, kind, lambda ids: _pick(data, ids), data.draw(st.floats(-5, 15, allow_nan=False)),
                data.draw(st.integers(1, 2**40)))


def edit(graph: dsg.DynamicSceneGraph, kind: str, pick: Pick, at: float, number: int) -> str:
    """Apply one edit of ``kind`` to ``graph`` on nodes ``pick`` chooses (``at`` a coordinate, ``number`` any
    other value it needs); what it did."""
    objects, meshes, places = _ids(graph, 2), _ids(graph, 3, 1), _ids(graph, 3)
    rooms, agents = _ids(graph, 4), _ids(graph, 2, ord("a"))
    everything = sorted({*objects, *meshes, *places, *rooms, *agents})
    node = pick(everything) if kind in ("move", "nudge", "touch", "remove") else None
    if kind == "touch" and node is not None:
        graph.get_node(node).attributes.last_update_time_ns = number
    elif kind in ("move", "nudge") and node is not None:
        _move(graph, node, 1.0 if kind == "move" else 0.01)
    elif kind == "remove" and node is not None and len(everything) > 4:
        graph.remove_node(node)
    elif kind == "add object":
        _object(graph, number % 2, pick([*meshes, *places]) if meshes else None, at)
    elif kind == "add place":
        _mesh_place(graph, pick(rooms), pick(meshes), at)
    elif kind in ("flip", "relayer") and places:
        node = pick(places)
        assert node is not None
        if kind == "flip":
            _flip(graph, node)
        else:
            _relayer(graph, node)
    elif kind in ("edge", "unedge") and len(meshes) > 1:
        a, b = pick(meshes), pick(meshes[::-1])
        assert a is not None and b is not None
        if a != b and kind == "edge":
            graph.insert_edge(a, b)
        elif a != b and graph.has_edge(a, b):
            graph.remove_edge(a, b)
        return f"{kind} {dsg.NodeSymbol(a).str()} {dsg.NodeSymbol(b).str()}"
    elif kind in ("rename", "relabel", "feature") and objects:
        node = pick(objects)
        assert node is not None
        attrs = graph.get_node(node).attributes
        if kind == "rename":
            attrs.name = ("", "box", "a much longer name than that")[number % 3]
        elif kind == "relabel":
            attrs.semantic_label = 1 - attrs.semantic_label
        else:
            attrs.semantic_feature = np.full((2, 1), at, dtype=np.float32)
    elif kind == "labelspace":
        graph.metadata.add({"labelspaces": {"_l2p0": [[0, "Box"], [1, ("Door", "Gate")[number % 2]]]}})
    else:
        return "nothing"
    return f"{kind} {dsg.NodeSymbol(node).str()}" if node is not None else kind
