"""Reads of the operator console: an object's details, and the map whole or by what changed since a read."""
from __future__ import annotations

from heracles_ros.schema import (
    ADDITION_PROPERTY,
    CHANGE_LABEL,
    CONTAINS,
    CORRECTION_LABEL,
    HISTORY_CLOCK_LABEL,
    MIRROR_META_LABEL,
    SEEN_LABEL,
    Layer,
)

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

# --- the map, read whole or by what changed (console/map_reads.py) ----------------------------------------------
_PLACE = Layer.MESH_PLACE.value

#: Where the map stands, one row: the mirror's generation, the history's newest snapshot time, where the history
#: began and from when its events of places are complete (null until pruning deleted some), and the corrections'
#: stamp (an operator's correction moves a place without a history event; additions are objects, read whole).
MAP_MARKS = (
    f"OPTIONAL MATCH (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) "
    f"OPTIONAL MATCH (h:{HISTORY_CLOCK_LABEL} {{id: 'history'}}) "
    "WITH m, h "
    f"OPTIONAL MATCH (c:{CORRECTION_LABEL}) WHERE c.property <> '{ADDITION_PROPERTY}' "
    "RETURN m.generation AS generation, h.t AS t, coalesce(h.start_t, h.t) AS start_t, h.kept_from_t AS kept_from_t, "
    "count(c) AS corrections, max(c.updated_s) AS corrected_s"
)
#: The places the history says appeared, moved or disappeared in the snapshots after $since, once each (through
#: the events' time index). No upper bound: FalkorDB returns a time to 15 digits (10 microseconds), so the time
#: a read was given back would not find the events stamped with it.
PLACES_CHANGED = (
    f"MATCH (c:{CHANGE_LABEL}) WHERE c.t > $since AND c.layer = '{_PLACE}' "
    f"AND '{CHANGE_LABEL}' IN labels(c) RETURN collect(DISTINCT c.symbol) AS symbols"
)
#: Those of $symbols still in the scene, as "symbol x y" strings in one list (through the symbol index).
PLACES_OF = (
    f"UNWIND $symbols AS s MATCH (n:{_PLACE} {{nodeSymbol: s}}) WHERE '{_PLACE}' IN labels(n) "
    "RETURN collect(n.nodeSymbol + ' ' + toString(n.x) + ' ' + toString(n.y)) AS rows"
)
#: Every connection of $symbols now, as "A B" strings from each of them (connections are stored both ways).
CONNECTIONS_OF = (
    f"UNWIND $symbols AS s MATCH (a:{_PLACE} {{nodeSymbol: s}})-[:{Layer.MESH_PLACE.connected}]->(b:{_PLACE}) "
    "RETURN collect(a.nodeSymbol + ' ' + b.nodeSymbol) AS pairs"
)
