"""Reads of what the mirror holds, for drawing it (the dsg_mirror's ``scene_markers``).

Built from the closed label set in :mod:`heracles_ros.schema` (never from input text).
"""
from __future__ import annotations

from heracles_ros.schema import Layer


def read_drawn_nodes(layer: Layer) -> str:
    """Every node of one layer (rooms, objects) with its symbol, class, name and position (objects with their
    ``source``)."""
    source = ", n.source AS source" if layer is Layer.OBJECT else ""
    return (
        f"MATCH (n:{layer.value}) RETURN n.nodeSymbol AS s, n.class AS c, n.name AS name, "
        f"n.x AS x, n.y AS y, n.z AS z{source}"
    )


def read_place_positions(layer: Layer) -> str:
    """Every node of a place layer as "symbol x y z" strings in one list (a node without a position left out).

    One list of strings parses several times faster in the client than a row per node (16k mesh
    places: ~60 ms against ~300 ms); FalkorDB writes the numbers to the micrometre, plenty to draw them.
    """
    return (
        f"MATCH (n:{layer.value}) RETURN collect(n.nodeSymbol + ' ' + toString(n.x) + ' ' + toString(n.y) + ' ' "
        "+ toString(n.z)) AS rows"
    )


def read_connections(layer: Layer) -> str:
    """Each connection within one layer once (stored both ways), as "A B" strings in one list."""
    return (
        f"MATCH (a:{layer.value})-[:{layer.connected}]->(b:{layer.value}) WHERE a.nodeSymbol < b.nodeSymbol "
        "RETURN collect(a.nodeSymbol + ' ' + b.nodeSymbol) AS pairs"
    )
