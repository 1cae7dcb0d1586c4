"""An independent oracle for the mirror: what the database must hold, read straight off a spark_dsg graph.

Written from the schema the README promises, in Hydra's conventions, sharing
no code with the library (not ``scene.tables``, not ``relation_of``), so a bug
in the library's extraction or in its diff cannot hide itself by also being in
the expectation:

- labels by (layer, partition): objects (2, 0), 3D places (3, 0), mesh places
  (3, 1) or (20, 0), rooms (4, 0), buildings (5, 0); nothing else (agent
  partitions) and no frontier (a 3D place whose ``real_place`` is false);
- ``class`` from the layer's labelspace in the graph's metadata, spelled as
  there, else the node's ``name``, else the layer's fallback word; ``name``
  as the node has it ("" when none); ``x``, ``y``, ``z`` and ``center`` the
  position; objects also ``bbox_center`` / ``bbox_dim``;
- an edge within a layer: ``<LAYER>_CONNECTED`` in both directions; between
  layers: ``CONTAINS`` from the higher layer down (a 3D place and a mesh
  place are neither); edges touching an unmirrored node are dropped.

The database side is read generically (every property of every node that has
a ``nodeSymbol``, every relationship between such nodes), so a property the
schema does not promise, or one missing, fails the comparison too.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import spark_dsg as dsg

from heracles_ros.graphdb.store import GraphStore

_LABELS = {
    (2, 0): "Object", (3, 0): "Place", (3, 1): "MeshPlace", (20, 0): "MeshPlace", (4, 0): "Room", (5, 0): "Building",
}  # fmt: skip
_FALLBACK = {"Object": "object", "Place": "place", "MeshPlace": "mesh place", "Room": "room", "Building": "building"}
_CONNECTED = {
    "Object": "OBJECT_CONNECTED",
    "Place": "PLACE_CONNECTED",
    "MeshPlace": "MESH_PLACE_CONNECTED",
    "Room": "ROOM_CONNECTED",
    "Building": "BUILDING_CONNECTED",
}
#: Lower is higher up the hierarchy; the two place layers share a level (never parent and child).
_LEVEL = {"Building": 0, "Room": 1, "Place": 2, "MeshPlace": 2, "Object": 3}

Edge = tuple[str, str, str]  # (source symbol, target symbol, type)


@dataclass
class Contents:
    """Scene nodes (symbol -> label and properties) and relationships between them."""

    nodes: dict[str, tuple[str, dict[str, Any]]]
    edges: set[Edge]


def _symbol(node_id: int) -> str:
    symbol = dsg.NodeSymbol(node_id)
    return f"{symbol.category}{symbol.category_id}"


def _labelspace(graph: dsg.DynamicSceneGraph, layer: int, partition: int) -> dict[int, str] | None:
    spaces = (graph.metadata.get() or {}).get("labelspaces") or {}
    entries = spaces.get(f"_l{layer}p{partition}")
    return {int(label): str(name) for label, name in entries} if entries else None


def expected(graph: dsg.DynamicSceneGraph, classes: dict[str, str] | None = None) -> Contents:
    """What the mirror must hold for ``graph``; ``classes`` overrides a node's class (a correction)."""
    nodes: dict[str, tuple[str, dict[str, Any]]] = {}
    label_of: dict[int, str] = {}
    for node in graph.nodes:
        key = (node.layer.layer, node.layer.partition)
        label = _LABELS.get(key)
        attrs = node.attributes
        if label is None or (label == "Place" and getattr(attrs, "real_place", True) is False):
            continue
        symbol = _symbol(node.id.value)
        name = getattr(attrs, "name", "") or ""
        space = _labelspace(graph, *key)
        if space is not None:
            cls = space.get(int(attrs.semantic_label), f"label_{attrs.semantic_label}")
        else:
            cls = name or _FALLBACK[label]
        x, y, z = (float(v) for v in attrs.position)
        props: dict[str, Any] = {
            "nodeSymbol": symbol, "class": (classes or {}).get(symbol, cls), "name": name,
            "x": x, "y": y, "z": z, "center": (x, y, z),
        }  # fmt: skip
        if label == "Object":
            box = attrs.bounding_box
            props["bbox_center"] = tuple(float(v) for v in box.world_P_center)
            props["bbox_dim"] = tuple(float(v) for v in box.dimensions)
        nodes[symbol] = (label, props)
        label_of[node.id.value] = label
    edges: set[Edge] = set()
    for edge in graph.edges:
        a, b = edge.source, edge.target
        la, lb = label_of.get(a), label_of.get(b)
        if la is None or lb is None:
            continue
        sa, sb = _symbol(a), _symbol(b)
        if la == lb:
            edges |= {(sa, sb, _CONNECTED[la]), (sb, sa, _CONNECTED[la])}
        elif _LEVEL[la] < _LEVEL[lb]:
            edges.add((sa, sb, "CONTAINS"))
        elif _LEVEL[lb] < _LEVEL[la]:
            edges.add((sb, sa, "CONTAINS"))
    return Contents(nodes, edges)


def _plain(value: Any) -> Any:
    """A point (Neo4j CartesianPoint) or [x, y, z] list as a tuple of floats; other values unchanged."""
    if isinstance(value, (list, tuple)):
        return tuple(float(v) for v in value)
    return value


def actual(store: GraphStore) -> Contents:
    """Every node with a ``nodeSymbol`` (the robot aside) with all its properties, and every relationship."""
    nodes: dict[str, tuple[str, dict[str, Any]]] = {}
    for row in store.query(
        "MATCH (n) WHERE n.nodeSymbol IS NOT NULL AND NOT n:Robot RETURN labels(n) AS labels, properties(n) AS p"
    ):
        props = {key: _plain(value) for key, value in row["p"].items()}
        symbol = props["nodeSymbol"]
        assert symbol not in nodes, f"duplicate node {symbol}"
        assert len(row["labels"]) == 1, f"{symbol} has labels {row['labels']}"
        nodes[symbol] = (row["labels"][0], props)
    rows = store.query(
        "MATCH (a)-[e]->(b) WHERE a.nodeSymbol IS NOT NULL AND b.nodeSymbol IS NOT NULL AND NOT a:Robot "
        "RETURN a.nodeSymbol AS a, b.nodeSymbol AS b, type(e) AS t"
    )
    edges = {(r["a"], r["b"], r["t"]) for r in rows}
    assert len(edges) == len(rows), "duplicate relationships"
    return Contents(nodes, edges)


def _same(a: Any, b: Any) -> bool:
    """Equal, floats to 1e-12 (FalkorDB returns doubles with 15 significant digits)."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return bool(a == b)


def differences(store: GraphStore, graph: dsg.DynamicSceneGraph, classes: dict[str, str] | None = None) -> list[str]:
    """Every way the database differs from the oracle's expectation, one line each (empty: equal)."""
    want, have = expected(graph, classes), actual(store)
    problems = [f"missing node {s}" for s in sorted(want.nodes.keys() - have.nodes.keys())]
    problems += [f"extra node {s}" for s in sorted(have.nodes.keys() - want.nodes.keys())]
    for symbol in sorted(want.nodes.keys() & have.nodes.keys()):
        (wl, wp), (hl, hp) = want.nodes[symbol], have.nodes[symbol]
        if wl != hl:
            problems.append(f"{symbol}: label {hl}, expected {wl}")
        for key in sorted(wp.keys() | hp.keys()):
            if key not in hp:
                problems.append(f"{symbol}: property {key} missing")
            elif key not in wp:
                problems.append(f"{symbol}: unexpected property {key} = {hp[key]!r}")
            elif not _same(hp[key], wp[key]):
                problems.append(f"{symbol}.{key} = {hp[key]!r}, expected {wp[key]!r}")
    problems += [f"missing edge {e}" for e in sorted(want.edges - have.edges)]
    problems += [f"extra edge {e}" for e in sorted(have.edges - want.edges)]
    return problems


def assert_equals_oracle(
    store: GraphStore, graph: dsg.DynamicSceneGraph, classes: dict[str, str] | None = None
) -> None:
    problems = differences(store, graph, classes)
    assert not problems, "database differs from the scene graph:\n  " + "\n  ".join(problems)
