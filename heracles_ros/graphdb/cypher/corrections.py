"""Statements of the corrections overlay: correction records, and the node properties they set.

A record is one ``Correction`` node per (target symbol, property): ``value``
is what the operator set, ``original`` what the node held before the first
correction, ``status`` active | retired (its node vanished) | reverted.
"""
from __future__ import annotations

from heracles_ros.schema import CORRECTION_LABEL, Dialect, Layer

_FIELDS = (
    "c.target AS symbol, c.property AS property, c.value AS value, c.original AS original, "
    "c.status AS status, c.author AS author, c.request AS request, c.created_s AS created_s, "
    "c.updated_s AS updated_s"
)

NODE_PROPERTY = "MATCH (n {nodeSymbol: $symbol}) RETURN labels(n) AS labels, n[$property] AS value"
UPSERT_CORRECTION = (
    f"MERGE (c:{CORRECTION_LABEL} {{target: $symbol, property: $property}}) "
    "ON CREATE SET c.original = $original, c.created_s = $now "
    "SET c.value = $value, c.status = 'active', c.updated_s = $now, c.author = $author, c.request = $request"
)
ACTIVE_CORRECTIONS = f"MATCH (c:{CORRECTION_LABEL} {{status: 'active'}}) RETURN {_FIELDS} ORDER BY c.created_s"
ALL_CORRECTIONS = f"MATCH (c:{CORRECTION_LABEL}) RETURN {_FIELDS} ORDER BY c.created_s"
ONE_CORRECTION = f"MATCH (c:{CORRECTION_LABEL} {{target: $symbol, property: $property}}) RETURN {_FIELDS}"
RETIRE_CORRECTIONS = (
    f"UNWIND $symbols AS s MATCH (c:{CORRECTION_LABEL} {{target: s, status: 'active'}}) "
    "SET c.status = 'retired', c.updated_s = $now RETURN DISTINCT c.target AS symbol"
)
MARK_REVERTED = (
    f"MATCH (c:{CORRECTION_LABEL} {{target: $symbol, property: $property}}) "
    "SET c.status = 'reverted', c.updated_s = $now, c.author = $author"
)
DELETE_CORRECTIONS = f"MATCH (c:{CORRECTION_LABEL}) DELETE c RETURN count(c) AS n"
COUNT_BY_STATUS = f"MATCH (c:{CORRECTION_LABEL}) RETURN c.status AS status, count(c) AS n"


def apply_correction(layer: Layer, prop: str, dialect: Dialect) -> str:
    """Set one whitelisted property on nodes of one layer (prop comes from CORRECTABLE_PROPERTIES)."""
    extra = ""
    if prop in {"x", "y", "z"}:
        extra = f" SET n.center = {dialect.point('n.x', 'n.y', 'n.z')}"
    return f"UNWIND $rows AS r MATCH (n:{layer.value} {{nodeSymbol: r.s}}) SET n.{prop} = r.v{extra}"

