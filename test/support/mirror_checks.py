"""Compare what the database holds with what a scene graph says it should hold."""
from __future__ import annotations

from typing import Any

import pytest
import spark_dsg as dsg

from heracles_ros.graphdb.store import GraphStore
from heracles_ros.scene.tables import edge_ends, extract_tables, relation_of, symbol_of

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


def expected_contents(graph: dsg.DynamicSceneGraph, corrections: dict[str, str] | None = None) -> Contents:
    """What the mirror should hold for ``graph``; ``corrections`` maps symbol -> corrected class.

    Connectivity edges (``*_CONNECTED``) are expected in both directions.
    """
    tables = extract_tables(graph)
    nodes = {}
    for node_id, row in tables.nodes.items():
        symbol = symbol_of(node_id)
        cls = (corrections or {}).get(symbol, row[1])
        nodes[symbol] = (row[0].value, cls, row[3], row[4], row[5])
    edges = set()
    for key in tables.edges:
        oriented = relation_of(*edge_ends(key), tables.nodes)
        assert oriented is not None
        source, target, relation = symbol_of(oriented[0]), symbol_of(oriented[1]), oriented[2]
        edges.add((source, target, relation))
        if relation != "CONTAINS":
            edges.add((target, source, relation))
    return nodes, edges


def assert_mirrors(store: GraphStore, graph: dsg.DynamicSceneGraph, corrections: dict[str, str] | None = None) -> None:
    """The database holds exactly ``graph`` (with corrected classes), no more, no less."""
    actual_nodes, actual_edges = database_contents(store)
    wanted_nodes, wanted_edges = expected_contents(graph, corrections)
    missing, extra = set(wanted_nodes) - set(actual_nodes), set(actual_nodes) - set(wanted_nodes)
    assert not missing and not extra, f"missing nodes {sorted(missing)}, extra nodes {sorted(extra)}"
    # FalkorDB returns doubles with 15 significant digits: compare positions to 1e-12.
    wrong = {
        s: (actual_nodes[s], wanted_nodes[s])
        for s in wanted_nodes
        if actual_nodes[s][:2] != wanted_nodes[s][:2]
        or actual_nodes[s][2:] != pytest.approx(wanted_nodes[s][2:], rel=1e-12, abs=1e-12)
    }
    assert not wrong, f"nodes differ (database, expected): {wrong}"
    assert actual_edges == wanted_edges, (
        f"missing edges {sorted(wanted_edges - actual_edges)}, extra {sorted(actual_edges - wanted_edges)}"
    )
