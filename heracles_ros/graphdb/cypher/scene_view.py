"""Reads of what the mirror holds, for drawing it (the dsg_mirror's ``scene_markers``).

Built from the closed label set in :mod:`heracles_ros.schema` (never from input text).
"""
from __future__ import annotations

from heracles_ros.schema import Layer


def read_drawn_nodes(layer: Layer) -> str:
    """Every node of one layer with its symbol, class, name and position (objects with their ``source``)."""
    source = ", n.source AS source" if layer is Layer.OBJECT else ""
    return (
        f"MATCH (n:{layer.value}) RETURN n.nodeSymbol AS s, n.class AS c, n.name AS name, "
        f"n.x AS x, n.y AS y, n.z AS z{source}"
    )


def read_connections(layer: Layer) -> str:
    """Each connection within one layer once (stored both ways), as "A B" strings in one list."""
    return (
        f"MATCH (a:{layer.value})-[:{layer.connected}]->(b:{layer.value}) WHERE a.nodeSymbol < b.nodeSymbol "
        "RETURN collect(a.nodeSymbol + ' ' + b.nodeSymbol) AS pairs"
    )
