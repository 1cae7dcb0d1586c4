"""Make ``point.distance`` / ``point.withinBBox`` work on a FalkorDB server (Neo4j has them built in).

Loaded where the mirror sets up its schema, so it holds for the embedded
server and for a remote ``falkordb://`` one alike. Loading is idempotent
(``GRAPH.UDF LOAD REPLACE``); the library lives in the server, for every graph,
and survives a restart with AOF on.
"""
from __future__ import annotations

from heracles_ros.graphdb.cypher import point_udf
from heracles_ros.graphdb.store import GraphStore


def ensure_point_functions(store: GraphStore) -> None:
    """Register the ``point`` library on a FalkorDB store; nothing to do for a store with native points."""
    if store.dialect.has_points:
        return
    command = getattr(store, "execute_command", None)
    if command is None:
        return  # not a server we can send commands to (no FalkorDB store)
    command("GRAPH.UDF", "LOAD", "REPLACE", point_udf.LIBRARY, point_udf.SCRIPT)
