"""Reads of the operator console (the rest of what it draws comes from :mod:`.scene_view`)."""
from __future__ import annotations

from heracles_ros.schema import CONTAINS, HISTORY_CLOCK_LABEL, SEEN_LABEL, Layer

#: One object's class, source, rooms above it (Room > place > Object), its history entry (a node gone from
#: the scene keeps one: when it was last seen) and the history's clock (the newest snapshot: when an object
#: still in the scene was last seen). Always one row; ``present`` false when the object is not in the scene.
OBJECT_DETAILS = (
    f"OPTIONAL MATCH (o:{Layer.OBJECT.value} {{nodeSymbol: $symbol}}) "
    f"OPTIONAL MATCH (room:{Layer.ROOM.value})-[:{CONTAINS}*1..2]->(o) "
    "WITH o, collect(room.nodeSymbol) AS rooms "
    f"OPTIONAL MATCH (s:{SEEN_LABEL} {{symbol: $symbol}}) "
    f"OPTIONAL MATCH (h:{HISTORY_CLOCK_LABEL} {{id: 'history'}}) "
    "RETURN o IS NOT NULL AS present, o.class AS class, o.source AS source, rooms, s.class AS seen_class, "
    "s.last_t AS seen_t, h.t AS clock_t"
)
