"""What the database mirrors now, read back in the diff's shape: the mirror's baseline after a start, a failure or
another writer (the database stays the truth).

Only mirrored nodes count (the operator's additions, robot state and bookkeeping are others'), and corrected
properties are read at the value Hydra gave them, as the baseline kept in memory has them.
"""
from __future__ import annotations

import math
from typing import Any

from heracles_ros.graphdb.cypher import mirror as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.corrections import Correction
from heracles_ros.scene.tables import NodeRow, SceneTables, edge_key, id_of, relation_of
from heracles_ros.schema import CONNECTED_TYPES, CONTAINS, OPERATOR_SOURCE, Layer, is_scene_symbol


def read_baseline(store: GraphStore, corrections: list[Correction]) -> SceneTables:
    """What the database mirrors now, in the diff's shape (nodes and edges written by others are left out).

    Corrected properties hold what Hydra said (the corrections' ``original``), as the baseline
    kept in memory does: the diff and the history compare Hydra with Hydra, so a restart
    neither rewrites a corrected node nor records the correction as Hydra's relabel or move.
    A connectivity edge counts only when both of its directions are there
    (a database written before both were stored gets the missing one added).
    """
    tables = SceneTables()
    nodes = tables.nodes
    ids: dict[str, int] = {}
    for layer in Layer:
        for row in store.query(q.read_nodes(layer), timeout_s=120):
            symbol = row["s"]
            if not is_scene_symbol(symbol) or symbol in ids or row.get("source") == OPERATOR_SOURCE:
                continue  # not a mirrored node (written by someone else, added by the operator), or a duplicate
            node_id = ids[symbol] = id_of(symbol)
            nodes[node_id] = _row_from_db(row, layer)
    for correction in corrections:
        corrected = ids.get(correction.symbol)
        if corrected is not None:
            nodes[corrected] = _as_hydra_said(nodes[corrected], correction.property, correction.original)
    if not ids:
        tables.within_layer = 0
        return tables  # no mirrored nodes, so no mirrored edges
    within = 0
    for relation in (CONTAINS, *CONNECTED_TYPES):
        one_way: set[tuple[int, int]] = set()
        for row in store.query(q.read_edges(relation), timeout_s=120):
            for pair in row["pairs"] or ():
                first, _, second = str(pair).partition(" ")
                a, b = ids.get(first), ids.get(second)
                if a is None or b is None or relation_of(a, b, nodes) != (a, b, relation):
                    continue
                if relation == CONTAINS:
                    tables.edges.add(edge_key(a, b))
                elif (b, a) in one_way:
                    tables.edges.add(edge_key(a, b))
                    within += 1
                else:
                    one_way.add((a, b))
    tables.within_layer = within
    return tables


def _row_from_db(row: dict[str, Any], layer: Layer) -> NodeRow:
    def num(value: Any) -> float:
        return float(value) if isinstance(value, (int, float)) else float("nan")

    def triple(value: Any) -> tuple[float, float, float]:
        # FalkorDB: [x, y, z]; Neo4j: a CartesianPoint (a tuple of x, y, z).
        items = list(value) if isinstance(value, (list, tuple)) else []
        return (num(items[0]), num(items[1]), num(items[2])) if len(items) == 3 else (math.nan,) * 3

    cls: str = row["c"] if isinstance(row.get("c"), str) else ""
    name: str = row["name"] if isinstance(row.get("name"), str) else ""
    x, y, z = num(row["x"]), num(row["y"]), num(row["z"])
    center = triple(row.get("center"))
    if not all(math.isclose(c, v, rel_tol=1e-12, abs_tol=1e-12) for c, v in zip(center, (x, y, z), strict=True)):
        x = math.nan  # center out of step with x, y, z (written before it existed): rewrite the node
    if layer is Layer.OBJECT:
        return (layer, cls, name, x, y, z, *triple(row.get("bc")), *triple(row.get("bd")))
    return (layer, cls, name, x, y, z)


#: Column of each correctable property in a NodeRow (layer, class, name, x, y, z, ...).
_ROW_COLUMN = {"class": 1, "name": 2, "x": 3, "y": 4, "z": 5}


def _as_hydra_said(row: NodeRow, prop: str, original: Any) -> NodeRow:
    """``row`` with ``prop`` back at Hydra's value (unknown: a value no snapshot matches, so it is rewritten)."""
    column = _ROW_COLUMN.get(prop)
    if column is None:
        return row
    if column <= 2:
        value: Any = original if isinstance(original, str) else ""
    else:
        value = float(original) if isinstance(original, (int, float)) else math.nan
    return (*row[:column], value, *row[column + 1:])
