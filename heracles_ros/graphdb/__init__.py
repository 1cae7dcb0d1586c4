"""Graph-database layer: one GraphStore interface, FalkorDB and Neo4j behind it."""
from __future__ import annotations

from heracles_ros.graphdb.store import GraphStore, Row
from heracles_ros.graphdb.uri import DbTarget, default_data_dir, parse_db_uri

__all__ = ["DbTarget", "GraphStore", "Row", "open_store", "parse_db_uri"]


def open_store(
    uri: str = "embedded", *, graph: str = "heracles", timeout_s: float = 10.0, read_replica: bool = False
) -> GraphStore:
    """Connect to the database ``uri`` names, starting the embedded server if it is down (unless
    ``heracles db stop`` stopped it: then DatabaseUnavailable says to run ``heracles db start``).

    The store follows the server through a stop, a crash and a restart (the embedded one to
    whatever port it listens on now), failing clearly meanwhile; it never starts a server itself.

    ``graph`` names the FalkorDB graph (one server can hold several); for
    Neo4j the database comes from the URI path (``neo4j://host:7687/name``).
    ``read_replica`` (embedded only; other backends ignore it) connects to the
    embedded server's read replica instead, for model-written read-only queries
    that must not be able to crash or starve the server the mirror writes to.
    """
    target = parse_db_uri(uri)
    if read_replica and target.kind == "embedded":
        from heracles_ros.graphdb.replica_store import open_read_store

        return open_read_store(target.data_dir or default_data_dir(), graph=graph, timeout_s=timeout_s)
    if target.kind == "neo4j":
        from heracles_ros.graphdb.neo4j_store import Neo4jStore

        return Neo4jStore(target.uri, database=target.database, timeout_s=timeout_s)
    from heracles_ros.graphdb.falkordb_store import FalkorStore

    if target.kind == "embedded":
        from heracles_ros.graphdb.embedded_store import open_embedded_store

        return open_embedded_store(target.data_dir or default_data_dir(), graph=graph, timeout_s=timeout_s)
    return FalkorStore(target.host, target.port, graph=graph, timeout_s=timeout_s)
