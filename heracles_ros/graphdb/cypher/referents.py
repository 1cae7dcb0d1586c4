"""Statements that describe the scene nodes a request refers to (for clarifications and goals in words).

Every statement takes ``$symbols`` (a list of nodeSymbols) and returns one row
per symbol found; symbols not in the graph return no row, which is how
callers find made-up symbols.
"""
from __future__ import annotations

from heracles_ros.schema import CONTAINS, Layer

#: Class, position and source (``operator`` for an operator's addition) of each node, and the rooms above it
#: (through at most two CONTAINS hops: Room > place > Object, or Room > place).
DESCRIBE_REFERENTS = (
    "UNWIND $symbols AS s MATCH (n) WHERE n.nodeSymbol = s "
    f"OPTIONAL MATCH (room:{Layer.ROOM.value})-[:{CONTAINS}*1..2]->(n) "
    "RETURN s AS symbol, n.class AS class, n.x AS x, n.y AS y, n.source AS source, "
    "collect(room.nodeSymbol) AS rooms, collect(room.class) AS room_classes"
)
