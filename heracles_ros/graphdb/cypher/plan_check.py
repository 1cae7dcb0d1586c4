"""The reads the dispatcher's plan check sends: where the database says a plan's symbols are, and
which of its hops an edge of the place graph joins.

One round trip per plan, each symbol looked up through its label's index, so a
check costs the same on any scene. Labels come from the closed set in
:mod:`..schema`, never from input text.
"""
from __future__ import annotations

from heracles_ros.schema import CONTAINS, Layer

#: Label, position and containers (for an object, the place holding it) of each of ``$symbols``.
SYMBOL_POSITIONS = " UNION ALL ".join(
    f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}) "
    f"OPTIONAL MATCH (c)-[:{CONTAINS}]->(n) "
    f"RETURN s AS symbol, '{layer.value}' AS label, n.x AS x, n.y AS y, n.z AS z, "
    "collect(c.nodeSymbol) AS containers"
    for layer in Layer
)

#: Which of ``$pairs`` (``[a, b]`` place symbols) an edge of their layer joins, either way round.
JOINED_PLACES = " UNION ALL ".join(
    f"UNWIND $pairs AS pair MATCH (a:{layer.value} {{nodeSymbol: pair[0]}})-[:{layer.connected}]-"
    f"(b:{layer.value} {{nodeSymbol: pair[1]}}) "
    "RETURN DISTINCT pair[0] AS a, pair[1] AS b"
    for layer in (Layer.MESH_PLACE, Layer.PLACE)
)
