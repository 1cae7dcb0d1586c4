"""Create the indexes a writer needs, once: FalkorDB's CREATE INDEX has no IF NOT EXISTS, so ask first."""
from __future__ import annotations

from collections.abc import Iterable

from heracles_ros.graphdb.cypher import falkordb_indexes
from heracles_ros.graphdb.cypher.mirror import create_index
from heracles_ros.graphdb.store import GraphStore


def ensure_indexes(store: GraphStore, wanted: Iterable[tuple[str, str]]) -> None:
    """Index each (label, property) in ``wanted`` that the database does not index yet."""
    dialect = store.dialect
    indexed: set[tuple[str, str]] = set()
    if dialect.name != "neo4j":  # Neo4j's statement says IF NOT EXISTS; FalkorDB refuses a second index
        rows = store.query(falkordb_indexes.INDEXES)
        indexed = {(row["label"], prop) for row in rows for prop in row["properties"]}
    for label, prop in wanted:
        if (label, prop) not in indexed:
            store.write(create_index(dialect, label, prop))
