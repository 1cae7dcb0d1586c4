"""Turn driver result values into plain JSON-able Python values.

Rows leave the graphdb package as ``dict[str, plain]`` so nothing above it
depends on a driver's node, edge, path or point classes.
"""
from __future__ import annotations

import math
from typing import Any


def plain(value: Any) -> Any:
    """Recursively convert a driver value (node, edge, path, point, ...) to plain data."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    # Neo4j spatial points and FalkorDB-style objects, by duck typing.
    if hasattr(value, "x") and hasattr(value, "y") and hasattr(value, "srid"):
        coords = [value.x, value.y] + ([value.z] if hasattr(value, "z") else [])
        return [float(c) for c in coords]
    if hasattr(value, "nodes") and hasattr(value, "edges") and callable(value.nodes):
        return {"nodes": [plain(n) for n in value.nodes()], "edges": [plain(e) for e in value.edges()]}
    if hasattr(value, "properties") and isinstance(value.properties, dict):
        # FalkorDB Node / Edge
        return plain(value.properties)
    if hasattr(value, "items") and hasattr(value, "labels"):
        return plain(dict(value.items()))  # Neo4j Node
    if hasattr(value, "items") and hasattr(value, "type"):
        return plain(dict(value.items()))  # Neo4j Relationship
    if hasattr(value, "iso_format"):
        return value.iso_format()  # Neo4j temporal types
    return str(value)
