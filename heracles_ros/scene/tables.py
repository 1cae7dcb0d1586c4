"""Flatten a spark_dsg graph into the rows the database mirrors.

The mirror compares these tables with the previous ones, so extraction is the
hot path: it walks each layer once (layer iterators are ~3x faster than the
graph-wide ones), keeps node ids as ints and turns them into symbols only for
rows that changed.
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import spark_dsg as dsg

from heracles_ros.errors import SceneDecodeError
from heracles_ros.graphdb.schema import CONTAINS, HIERARCHY, PREFIX_LAYER, Layer

#: (class, x, y, z) and, for objects only, (name, bbox_dx, bbox_dy, bbox_dz) after them.
NodeRow = tuple[Any, ...]
#: ``smaller_id << 64 | larger_id``: one int hashes and compares ~4x faster than a pair.
#: The relationship type and direction follow from the two layers (see relation_of).
EdgeKey = int
_LOW64 = (1 << 64) - 1

_INDEX_MASK = (1 << 56) - 1

#: spark_dsg (layer, partition) of each mirrored layer.
LAYER_KEYS: dict[Layer, tuple[int, int]] = {
    Layer.OBJECT: (2, 0),
    Layer.PLACE: (3, 0),
    Layer.MESH_PLACE: (3, 1),
    Layer.ROOM: (4, 0),
    Layer.BUILDING: (5, 0),
}
#: Class of nodes whose layer has no labelspace (real Hydra files lack some).
FALLBACK_CLASS: dict[Layer, str] = {
    Layer.OBJECT: "object",
    Layer.PLACE: "place",
    Layer.MESH_PLACE: "mesh place",
    Layer.ROOM: "room",
    Layer.BUILDING: "building",
}
_RANK = {layer: rank for rank, layer in enumerate(HIERARCHY)}
_PLACE_KINDS = {Layer.PLACE, Layer.MESH_PLACE}


def symbol_of(node_id: int) -> str:
    """spark_dsg node id -> scene symbol, e.g. "O12" (cheap: no binding call)."""
    return f"{chr(node_id >> 56)}{node_id & _INDEX_MASK}"


def id_of(symbol: str) -> int:
    """Scene symbol -> spark_dsg node id."""
    return (ord(symbol[0]) << 56) | int(symbol[1:])


def layer_of_id(node_id: int) -> Layer | None:
    return PREFIX_LAYER.get(chr(node_id >> 56))


@dataclass
class SceneTables:
    """What the database should hold for one snapshot: node rows and edges, by id."""

    nodes: dict[int, NodeRow] = field(default_factory=dict)
    edges: set[EdgeKey] = field(default_factory=set)


def extract_tables(graph: dsg.DynamicSceneGraph) -> SceneTables:
    """Node rows of every mirrored layer, CONTAINS between layers, *_CONNECTED within them."""
    tables = SceneTables()
    nodes = tables.nodes
    edges = tables.edges
    for layer, (layer_id, partition) in LAYER_KEYS.items():
        if not graph.has_layer(layer_id, partition):
            continue
        view = graph.get_layer(layer_id, partition)
        names = _class_names(graph, layer_id, partition)
        fallback = FALLBACK_CLASS[layer]
        is_object = layer is Layer.OBJECT
        for node in view.nodes:
            attrs = node.attributes
            x, y, z = attrs.position.tolist()
            if not math.isfinite(x + y + z):
                raise SceneDecodeError(f"node {symbol_of(node.id.value)} has a non-finite position")
            if names is None:
                cls = fallback
            else:
                label = attrs.semantic_label
                cls = names.get(label) or f"label_{label}"
            if is_object:
                dx, dy, dz = attrs.bounding_box.dimensions.tolist()
                nodes[node.id.value] = (cls, x, y, z, attrs.name or "", dx, dy, dz)
            else:
                nodes[node.id.value] = (cls, x, y, z)
        for edge in view.edges:
            a, b = edge.source, edge.target
            edges.add(a << 64 | b if a < b else b << 64 | a)
    for edge in graph.interlayer_edges:
        a, b = edge.source, edge.target
        if a not in nodes or b not in nodes:
            continue  # agents and other unmirrored layers
        if relation_of(a, b) is not None:
            edges.add(a << 64 | b if a < b else b << 64 | a)
    return tables


def edge_key(a: int, b: int) -> EdgeKey:
    return a << 64 | b if a < b else b << 64 | a


def edge_ends(key: EdgeKey) -> tuple[int, int]:
    return key >> 64, key & _LOW64


def relation_of(a: int, b: int) -> tuple[int, int, str] | None:
    """(source, target, type) of the mirrored relationship between two nodes, or None.

    Within a layer: ``<LAYER>_CONNECTED``; across layers: ``CONTAINS`` from the
    higher layer down. 3D and mesh places are not parent and child.
    """
    la, lb = layer_of_id(a), layer_of_id(b)
    if la is None or lb is None:
        return None
    if la is lb:
        return (a, b, la.connected)
    if {la, lb} == _PLACE_KINDS:
        return None
    return (a, b, CONTAINS) if _RANK[la] < _RANK[lb] else (b, a, CONTAINS)


def _class_names(graph: dsg.DynamicSceneGraph, layer_id: int, partition: int) -> dict[int, str] | None:
    """Label -> lower-case class name for a layer, or None if the graph has no labelspace for it."""
    try:
        space = graph.get_labelspace(layer_id, partition)
    except Exception:  # a malformed metadata entry must not stop the mirror
        return None
    if not space:
        return None
    return {int(label): str(name).lower() for label, name in space.labels_to_names.items()}


def group_edges(edges: Iterable[EdgeKey]) -> dict[tuple[Layer, Layer, str], list[dict[str, str]]]:
    """Edges by (source layer, target layer, type), oriented as the schema stores them."""
    groups: dict[tuple[Layer, Layer, str], list[dict[str, str]]] = defaultdict(list)
    for key in edges:
        oriented = relation_of(*edge_ends(key))
        if oriented is None:
            continue
        source, target, relation = oriented
        la, lb = layer_of_id(source), layer_of_id(target)
        if la is not None and lb is not None:
            groups[(la, lb, relation)].append({"a": symbol_of(source), "b": symbol_of(target)})
    return groups
