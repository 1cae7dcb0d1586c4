"""Make ``point.distance`` / ``point.withinBBox`` work on a FalkorDB server (Neo4j has them built in).

Loaded where the mirror sets up its schema, so it holds for the embedded
server and for a remote ``falkordb://`` one alike. Idempotent: the library is
(re)loaded only when the server lacks it or holds other code (``GRAPH.UDF
LIST`` costs ~0.2 ms; a load ~2-15 ms, the server's first ~270 ms). It lives
in the server, for every graph, and survives a restart with AOF on. docs/known-issues.md#falkordb-no-3d-points
"""
from __future__ import annotations

from typing import Any

from heracles_ros.graphdb.cypher import point_udf
from heracles_ros.graphdb.store import GraphStore


def ensure_point_functions(store: GraphStore) -> None:
    """Register the ``point`` library on a FalkorDB store; nothing to do for a store with native points."""
    if store.dialect.has_points:
        return
    command = getattr(store, "execute_command", None)
    if command is None:
        return  # not a server we can send commands to (no FalkorDB store)
    listed = command("GRAPH.UDF", "LIST", point_udf.LIBRARY, "WITHCODE")
    if loaded_code(listed, point_udf.LIBRARY) != point_udf.SCRIPT:
        command("GRAPH.UDF", "LOAD", "REPLACE", point_udf.LIBRARY, point_udf.SCRIPT)


def loaded_code(reply: Any, library: str) -> str | None:
    """The code of ``library`` in a ``GRAPH.UDF LIST ... WITHCODE`` reply (maps or flat key/value lists)."""
    for entry in reply or ():
        if isinstance(entry, dict):
            pairs = list(entry.items())
        elif isinstance(entry, (list, tuple)):
            pairs = list(zip(entry[::2], entry[1::2], strict=False))
        else:
            continue
        fields = {_text(key): value for key, value in pairs}
        if _text(fields.get("library_name")) == library:
            return _text(fields.get("library_code"))
    return None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
