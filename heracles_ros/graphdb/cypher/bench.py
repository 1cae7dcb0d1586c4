"""Statements of the mirror benchmark's floor: plain inserts, no diff, no MERGE."""
from __future__ import annotations

from heracles_ros.graphdb.schema import Dialect, Layer


def create_nodes(dialect: Dialect, layer: Layer) -> str:
    """CREATE with the same properties the mirror's upsert sets."""
    sets = "n.nodeSymbol = r.s, n.class = r.c, n.x = r.x, n.y = r.y, n.z = r.z"
    if layer is Layer.OBJECT:
        sets += ", n.name = r.name, n.bbox_dx = r.dx, n.bbox_dy = r.dy, n.bbox_dz = r.dz"
    if dialect.has_points:
        sets += ", n.center = point({x: r.x, y: r.y, z: r.z})"
    return f"UNWIND $rows AS r CREATE (n:{layer.value}) SET {sets}"


def create_edges(source: Layer, target: Layer, relation: str) -> str:
    return (
        f"UNWIND $rows AS r MATCH (a:{source.value} {{nodeSymbol: r.a}}) "
        f"MATCH (b:{target.value} {{nodeSymbol: r.b}}) CREATE (a)-[:{relation}]->(b)"
    )


#: Empties a benchmark graph (never used on a real one).
DROP_ALL = "MATCH (n) DETACH DELETE n"
