"""Flatten a spark_dsg graph into the rows the database mirrors.

The mirror compares these tables with the previous ones, so extraction is the
hot path (it runs for every snapshot, about once a second, and costs about as
much as spark_dsg's own decode): it walks each layer once, touches each node's
attributes once, keeps node ids and edges as plain ints, and decides what an
edge means from the two ids' symbol prefixes with one dict lookup. Symbols
are built only for rows that are written.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import spark_dsg as dsg

from heracles_ros.errors import SceneDecodeError
from heracles_ros.graphdb.schema import CONTAINS, HIERARCHY, PREFIX_LAYER, SYMBOL_PREFIX, Layer

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


@dataclass(frozen=True)
class EdgeKind:
    """How the mirror stores an edge between two layers: type, and which end is the source."""

    source: Layer
    target: Layer
    relation: str
    #: True when the edge key's second id (the larger one) is the source.
    flipped: bool


def _edge_kinds() -> dict[tuple[int, int], EdgeKind]:
    """(prefix code of the smaller id, prefix code of the larger id) -> kind, for every mirrored pair."""
    kinds: dict[tuple[int, int], EdgeKind] = {}
    for la, pa in SYMBOL_PREFIX.items():
        for lb, pb in SYMBOL_PREFIX.items():
            if la is lb:
                kinds[(ord(pa), ord(pb))] = EdgeKind(la, lb, la.connected, False)
            elif {la, lb} != _PLACE_KINDS:
                parent_first = _RANK[la] < _RANK[lb]
                source, target = (la, lb) if parent_first else (lb, la)
                kinds[(ord(pa), ord(pb))] = EdgeKind(source, target, CONTAINS, not parent_first)
    return kinds


#: Every pair of mirrored layers that an edge may join (3D and mesh places never do).
EDGE_KINDS = _edge_kinds()


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
    isfinite = math.isfinite
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
            if not isfinite(x + y + z):
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
        add = edges.add
        for edge in view.edges:
            a, b = edge.source, edge.target
            add(a << 64 | b if a < b else b << 64 | a)
    kinds = EDGE_KINDS
    for edge in graph.interlayer_edges:
        a, b = edge.source, edge.target
        if a > b:
            a, b = b, a
        # Agents and other unmirrored layers, and 3D place to mesh place, are not mirrored.
        if (a >> 56, b >> 56) in kinds and a in nodes and b in nodes:
            edges.add(a << 64 | b)
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
    low, high = (a, b) if a < b else (b, a)
    kind = EDGE_KINDS.get((low >> 56, high >> 56))
    if kind is None:
        return None
    if kind.relation != CONTAINS:
        return (a, b, kind.relation)
    return (high, low, CONTAINS) if kind.flipped else (low, high, CONTAINS)


def _class_names(graph: dsg.DynamicSceneGraph, layer_id: int, partition: int) -> dict[int, str] | None:
    """Label -> lower-case class name for a layer, or None if the graph has no labelspace for it."""
    try:
        space = graph.get_labelspace(layer_id, partition)
    except Exception:  # a malformed metadata entry must not stop the mirror
        return None
    if not space:
        return None
    return {int(label): str(name).lower() for label, name in space.labels_to_names.items()}


def group_edges(edges: Iterable[EdgeKey]) -> dict[EdgeKind, list[list[str]]]:
    """Edges as [source symbol, target symbol] rows by kind, oriented as the schema stores them."""
    groups: dict[EdgeKind, list[list[str]]] = {}
    kinds = EDGE_KINDS
    for key in edges:
        low, high = key >> 64, key & _LOW64
        kind = kinds.get((low >> 56, high >> 56))
        if kind is None:
            continue
        rows = groups.get(kind)
        if rows is None:
            rows = groups[kind] = []
        a = f"{chr(low >> 56)}{low & _INDEX_MASK}"
        b = f"{chr(high >> 56)}{high & _INDEX_MASK}"
        rows.append([b, a] if kind.flipped else [a, b])
    return groups
