"""Statements of the corrections overlay: correction records, and the node properties they set.

A record is one ``Correction`` node per (target symbol, property): ``value``
is what the operator set, ``original`` the value Hydra gave the node last (what
a revert gives back), ``status`` active | retired (its node is not in the
scene; it returns with the node) | reverted. A retirement is kept on the record:
``retired_s`` (the snapshot's time), ``retired_why``, ``times_retired``, and
``returned_s`` when the node came back.

FalkorDB evaluates every SET of one statement against the node as it was before
the statement (``SET n.x = 1 SET n.c = n.x`` stores the old x in ``c``), Neo4j
in order; so no statement here reads a property it sets: values set together
are computed from parameters or captured by a ``WITH`` first.
"""
from __future__ import annotations

from heracles_ros.outcomes import RecordStatus
from heracles_ros.schema import ADDITION_PROPERTY, CORRECTION_LABEL, OPERATOR_SOURCE, Dialect, Layer

_ACTIVE, _RETIRED, _REVERTED = RecordStatus.ACTIVE.value, RecordStatus.RETIRED.value, RecordStatus.REVERTED.value

_FIELDS = (
    "c.target AS symbol, c.property AS property, c.value AS value, c.original AS original, "
    "c.status AS status, c.author AS author, c.request AS request, c.created_s AS created_s, "
    "c.updated_s AS updated_s, c.retired_s AS retired_s, c.retired_why AS retired_why, "
    "c.times_retired AS times_retired, c.returned_s AS returned_s"
)
_COORDINATES = ("x", "y", "z")

NODE_PROPERTY = "MATCH (n {nodeSymbol: $symbol}) RETURN labels(n) AS labels, n[$property] AS value"
#: A record that was not active (new, reverted, retired) takes the node's value now as its original;
#: an active one keeps the value Hydra gave (the node holds the earlier correction's value).
UPSERT_CORRECTION = (
    f"MERGE (c:{CORRECTION_LABEL} {{target: $symbol, property: $property}}) "
    "ON CREATE SET c.created_s = $now "
    f"WITH c, coalesce(c.status = '{_ACTIVE}', false) AS was_active "
    "SET c.original = CASE WHEN was_active THEN c.original ELSE $original END, "
    f"c.value = $value, c.status = '{_ACTIVE}', c.updated_s = $now, c.author = $author, c.request = $request"
)
#: Property corrections only: the overlay's additions (``property: 'added'``) have their own statements
#: (:mod:`.additions`).
_PROPERTY_ONLY = f"c.property <> '{ADDITION_PROPERTY}'"
ACTIVE_CORRECTIONS = (
    f"MATCH (c:{CORRECTION_LABEL} {{status: '{_ACTIVE}'}}) WHERE {_PROPERTY_ONLY} RETURN {_FIELDS} ORDER BY c.created_s"
)
#: The records a rewritten node's snapshot concerns: active ones (set again) and retired ones (returning).
LIVE_CORRECTIONS = (
    f"MATCH (c:{CORRECTION_LABEL}) WHERE c.status IN ['{_ACTIVE}', '{_RETIRED}'] "
    "RETURN c.target AS symbol, c.property AS property"
)
ALL_CORRECTIONS = f"MATCH (c:{CORRECTION_LABEL}) WHERE {_PROPERTY_ONLY} RETURN {_FIELDS} ORDER BY c.created_s"
ONE_CORRECTION = f"MATCH (c:{CORRECTION_LABEL} {{target: $symbol, property: $property}}) RETURN {_FIELDS}"
RETIRE_CORRECTIONS = (
    f"UNWIND $symbols AS s MATCH (c:{CORRECTION_LABEL} {{target: s, status: '{_ACTIVE}'}}) WHERE {_PROPERTY_ONLY} "
    f"SET c.status = '{_RETIRED}', c.updated_s = $now, c.retired_s = $stamp, "
    "c.retired_why = s + ' was not in ' + $snapshot, c.times_retired = coalesce(c.times_retired, 0) + 1 "
    "RETURN DISTINCT c.target AS symbol"
)
MARK_REVERTED = (
    f"MATCH (c:{CORRECTION_LABEL} {{target: $symbol, property: $property}}) "
    f"SET c.status = '{_REVERTED}', c.updated_s = $now, c.author = $author"
)
DELETE_CORRECTIONS = f"MATCH (c:{CORRECTION_LABEL}) DELETE c RETURN count(c) AS n"
COUNT_BY_STATUS = f"MATCH (c:{CORRECTION_LABEL}) RETURN c.status AS status, count(c) AS n"
#: The box each layer's nodes span as Hydra placed them (one row per layer; nulls for a layer without
#: coordinates): neither the operator's additions nor the nodes in ``$corrected`` (whose position a correction
#: set) count, so corrections cannot widen it step by step. A coordinate correction must stay near it.
SCENE_EXTENT = " UNION ALL ".join(
    f"MATCH (n:{layer.value}) WHERE n.x IS NOT NULL AND NOT n.nodeSymbol IN $corrected "
    f"AND coalesce(n.source, '') <> '{OPERATOR_SOURCE}' "
    "RETURN min(n.x) AS min_x, max(n.x) AS max_x, min(n.y) AS min_y, max(n.y) AS max_y, "
    "min(n.z) AS min_z, max(n.z) AS max_z"
    for layer in Layer
)


def _center(dialect: Dialect, prop: str, value: str) -> str:
    """``, n.center = ...`` with ``value`` in the corrected coordinate's slot ('' for other properties)."""
    if prop not in _COORDINATES:
        return ""
    xyz = [value if axis == prop else f"n.{axis}" for axis in _COORDINATES]
    return f", n.center = {dialect.point(*xyz)}"


def apply_correction(layer: Layer, prop: str, dialect: Dialect) -> str:
    """Set one whitelisted property on nodes of one layer (prop comes from CORRECTABLE_PROPERTIES)."""
    return (
        f"UNWIND $rows AS r MATCH (n:{layer.value} {{nodeSymbol: r.s}}) "
        f"SET n.{prop} = r.v{_center(dialect, prop, 'r.v')}"
    )


def reapply_correction(layer: Layer, prop: str, dialect: Dialect) -> str:
    """Set the corrected ``prop`` again on nodes a snapshot rewrote, keeping Hydra's value as the original.

    A retired record whose node is back becomes active again (``returning`` says which).
    """
    return (
        f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}) "
        f"MATCH (c:{CORRECTION_LABEL} {{target: s, property: '{prop}'}}) WHERE c.status IN ['{_ACTIVE}', '{_RETIRED}'] "
        f"WITH s, n, c, n.{prop} AS hydra, c.status = '{_RETIRED}' AS returning "
        f"SET c.original = hydra, c.status = '{_ACTIVE}', "
        "c.returned_s = CASE WHEN returning THEN $stamp ELSE c.returned_s END, "
        "c.updated_s = CASE WHEN returning THEN $now ELSE c.updated_s END, "
        f"n.{prop} = c.value{_center(dialect, prop, 'c.value')} "
        "RETURN s AS symbol, returning"
    )
