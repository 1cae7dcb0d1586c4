"""Statements that read what the database holds, for prompts built from live facts.

The agent's prompt lists labels, relationship patterns, property keys and class
names as the database reports them, so it stays true when the graph changes.
Labels and relationship types cannot be parameters; they come from the
database's own catalogue (``db.labels()``), are checked by :func:`quote` and
written as backtick-quoted names.
"""
from __future__ import annotations

import re

from heracles_ros.schema import CONTAINS, Layer

LABELS = "CALL db.labels() YIELD label RETURN label"
RELATIONSHIP_TYPES = "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType AS type"
PROPERTY_KEYS = "CALL db.propertyKeys() YIELD propertyKey RETURN propertyKey AS key"

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def quote(name: str) -> str:
    """A catalogue name as a Cypher identifier; ValueError for anything unusual."""
    if not _NAME.fullmatch(name):
        raise ValueError(f"unexpected label or relationship type name {name!r}")
    return f"`{name}`"


def label_keys(label: str) -> str:
    """Property keys seen on a sample of nodes of one label (``$sample`` nodes)."""
    return f"MATCH (n:{quote(label)}) WITH n LIMIT $sample UNWIND keys(n) AS key RETURN DISTINCT key"


def label_classes(label: str) -> str:
    """Class names of one label with their counts, most frequent first (null class counted too)."""
    return f"MATCH (n:{quote(label)}) RETURN n.class AS class, count(n) AS n ORDER BY n DESC"


def relationship_ends(rel_type: str) -> str:
    """Which labels one relationship type joins, source to target."""
    return (
        f"MATCH (a)-[:{quote(rel_type)}]->(b) "
        "RETURN DISTINCT labels(a)[0] AS source, labels(b)[0] AS target"
    )


# --- the whole scene as text (the paper's context-window baseline) ---------------
CONTEXT_OBJECTS = (
    f"MATCH (o:{Layer.OBJECT.value}) "
    f"OPTIONAL MATCH (p)-[:{CONTAINS}]->(o) WHERE p:{Layer.MESH_PLACE.value} OR p:{Layer.PLACE.value} "
    "RETURN o.nodeSymbol AS id, o.class AS type, o.x AS x, o.y AS y, o.z AS z, "
    "collect(p.nodeSymbol) AS parents"
)


def context_places(layer: Layer) -> str:
    """Places of one layer with their siblings and parent rooms."""
    label = layer.value
    return (
        f"MATCH (p:{label}) "
        f"OPTIONAL MATCH (p)-[:{layer.connected}]-(q:{label}) "
        "WITH p, collect(DISTINCT q.nodeSymbol) AS siblings "
        f"OPTIONAL MATCH (r:{Layer.ROOM.value})-[:{CONTAINS}]->(p) "
        "RETURN p.nodeSymbol AS id, siblings, collect(DISTINCT r.nodeSymbol) AS parents"
    )


CONTEXT_ROOMS = (
    f"MATCH (r:{Layer.ROOM.value}) "
    f"OPTIONAL MATCH (r)-[:{Layer.ROOM.connected}]-(s:{Layer.ROOM.value}) "
    "RETURN r.nodeSymbol AS id, r.class AS type, r.x AS x, r.y AS y, r.z AS z, "
    "collect(DISTINCT s.nodeSymbol) AS siblings"
)
