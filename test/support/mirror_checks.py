"""Compare what the database holds with what a scene graph says it should hold (through the oracle)."""
from __future__ import annotations

from typing import Any

import pytest
import spark_dsg as dsg

from heracles_ros.graphdb.store import GraphStore
from support.scene_oracle import assert_equals_oracle

Contents = tuple[dict[str, tuple[Any, ...]], set[tuple[str, str, str]]]


def database_contents(store: GraphStore) -> Contents:
    """Every scene node (symbol -> label, class, x, y, z) and every relationship between them.

    Every node's ``center`` must be its x, y, z (an [x, y, z] array on FalkorDB, a point on Neo4j).
    """
    nodes: dict[str, tuple[Any, ...]] = {}
    for r in store.query(
        "MATCH (n) WHERE n.nodeSymbol IS NOT NULL AND NOT n:Robot "
        "RETURN n.nodeSymbol AS s, labels(n)[0] AS label, n.class AS c, n.x AS x, n.y AS y, n.z AS z, "
        "n.center AS center"
    ):
        assert r["s"] not in nodes, f"duplicate node {r['s']}"
        assert list(r["center"]) == pytest.approx([r["x"], r["y"], r["z"]]), f"{r['s']}: center {r['center']}"
        nodes[r["s"]] = (r["label"], r["c"], r["x"], r["y"], r["z"])
    rows = store.query("MATCH (a)-[e]->(b) RETURN a.nodeSymbol AS a, b.nodeSymbol AS b, type(e) AS t")
    edges = {(r["a"], r["b"], r["t"]) for r in rows}
    assert len(edges) == len(rows), "duplicate relationships"
    return nodes, edges


def assert_mirrors(store: GraphStore, graph: dsg.DynamicSceneGraph, corrections: dict[str, str] | None = None) -> None:
    """The database holds exactly ``graph`` (with corrected classes), no more, no less.

    Judged by the independent oracle (support/scene_oracle.py), not by the library's own extraction.
    """
    assert_equals_oracle(store, graph, corrections)
