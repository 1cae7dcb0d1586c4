"""Statements the mirror, the corrections overlay and the admin commands send.

Labels and relationship types cannot be query parameters, so statements that
need them are built here from the closed sets in :mod:`..schema` (never from
input text).
"""
from __future__ import annotations

from heracles_ros.graphdb.schema import (
    CORRECTION_LABEL,
    MIRROR_META_LABEL,
    Dialect,
    Layer,
)


def create_index(dialect: Dialect, label: str, prop: str) -> str:
    if dialect.name == "neo4j":
        return f"CREATE INDEX {label.lower()}_{prop.lower()} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})"
    return f"CREATE INDEX FOR (n:{label}) ON (n.{prop})"


def upsert_nodes(dialect: Dialect, layer: Layer) -> str:
    """MERGE on nodeSymbol, then SET every mirrored property (never MERGE on a property map)."""
    sets = "n.class = r.c, n.x = r.x, n.y = r.y, n.z = r.z"
    if layer is Layer.OBJECT:
        sets += ", n.name = r.name, n.bbox_dx = r.dx, n.bbox_dy = r.dy, n.bbox_dz = r.dz"
    if dialect.has_points:
        sets += ", n.center = point({x: r.x, y: r.y, z: r.z})"
    return f"UNWIND $rows AS r MERGE (n:{layer.value} {{nodeSymbol: r.s}}) SET {sets}"


def delete_nodes(layer: Layer) -> str:
    return f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}) DETACH DELETE n"


def merge_edges(source: Layer, target: Layer, relation: str) -> str:
    return (
        f"UNWIND $rows AS r MATCH (a:{source.value} {{nodeSymbol: r.a}}) "
        f"MATCH (b:{target.value} {{nodeSymbol: r.b}}) MERGE (a)-[:{relation}]->(b)"
    )


def create_edges(source: Layer, target: Layer, relation: str) -> str:
    """For edges between nodes created in the same reconcile: they cannot exist yet."""
    return (
        f"UNWIND $rows AS r MATCH (a:{source.value} {{nodeSymbol: r.a}}) "
        f"MATCH (b:{target.value} {{nodeSymbol: r.b}}) CREATE (a)-[:{relation}]->(b)"
    )


def delete_edges(source: Layer, target: Layer, relation: str) -> str:
    return (
        f"UNWIND $rows AS r MATCH (a:{source.value} {{nodeSymbol: r.a}})-[e:{relation}]->"
        f"(b:{target.value} {{nodeSymbol: r.b}}) DELETE e"
    )


def read_nodes(layer: Layer) -> str:
    """Mirrored rows of one layer, in the shape the diff compares."""
    extra = ", n.name AS name, n.bbox_dx AS dx, n.bbox_dy AS dy, n.bbox_dz AS dz" if layer is Layer.OBJECT else ""
    return f"MATCH (n:{layer.value}) RETURN n.nodeSymbol AS s, n.class AS c, n.x AS x, n.y AS y, n.z AS z{extra}"


def read_edges(source: Layer, target: Layer, relation: str) -> str:
    return (
        f"MATCH (a:{source.value})-[:{relation}]->(b:{target.value}) "
        "RETURN a.nodeSymbol AS a, b.nodeSymbol AS b"
    )


# --- mirror bookkeeping ---------------------------------------------------------
BUMP_GENERATION = (
    f"MERGE (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) "
    "SET m.generation = coalesce(m.generation, 0) + 1, m.sequence = $sequence, m.updated_s = $now "
    "RETURN m.generation AS generation"
)
READ_META = f"MATCH (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) RETURN m.generation AS generation, m.sequence AS sequence"

# --- corrections overlay ----------------------------------------------------------
NODE_PROPERTY = "MATCH (n {nodeSymbol: $symbol}) RETURN labels(n) AS labels, n[$property] AS value"
UPSERT_CORRECTION = (
    f"MERGE (c:{CORRECTION_LABEL} {{target: $symbol, property: $property}}) "
    "ON CREATE SET c.original = $original, c.created_s = $now "
    "SET c.value = $value, c.status = 'active', c.updated_s = $now"
)
ACTIVE_CORRECTIONS = (
    f"MATCH (c:{CORRECTION_LABEL} {{status: 'active'}}) "
    "RETURN c.target AS symbol, c.property AS property, c.value AS value, c.original AS original, "
    "c.created_s AS created_s ORDER BY c.created_s"
)
RETIRE_CORRECTIONS = (
    f"UNWIND $symbols AS s MATCH (c:{CORRECTION_LABEL} {{target: s, status: 'active'}}) "
    "SET c.status = 'retired', c.updated_s = $now RETURN DISTINCT c.target AS symbol"
)


def apply_correction(layer: Layer, prop: str, dialect: Dialect) -> str:
    """Set one whitelisted property on nodes of one layer (prop comes from CORRECTABLE_PROPERTIES)."""
    extra = ""
    if dialect.has_points and prop in {"x", "y", "z"}:
        extra = " SET n.center = point({x: n.x, y: n.y, z: n.z})"
    return f"UNWIND $rows AS r MATCH (n:{layer.value} {{nodeSymbol: r.s}}) SET n.{prop} = r.v{extra}"


def existing_symbols(layer: Layer) -> str:
    return f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}) RETURN n.nodeSymbol AS s"


