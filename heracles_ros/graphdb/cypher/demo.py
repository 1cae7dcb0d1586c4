"""Read-only statements ``heracles demo`` uses to pick a goal that fits the mirrored scene."""
from __future__ import annotations

from heracles_ros.schema import CONTAINS, Layer

#: Objects of class ``$cls`` that stand on a mesh place, with that place's room.
OBJECTS_OF_CLASS_WITH_ROOM = (
    f"MATCH (r:{Layer.ROOM.value})-[:{CONTAINS}]->(p:{Layer.MESH_PLACE.value})-[:{CONTAINS}]->"
    f"(o:{Layer.OBJECT.value} {{class: $cls}}) "
    "RETURN o.nodeSymbol AS object, o.x AS x, o.y AS y, o.z AS z, p.nodeSymbol AS place, "
    "r.nodeSymbol AS room, r.class AS room_class"
)

#: Mesh places of every room whose class is ``$room_class``.
PLACES_OF_ROOM_CLASS = (
    f"MATCH (r:{Layer.ROOM.value} {{class: $room_class}})-[:{CONTAINS}]->(p:{Layer.MESH_PLACE.value}) "
    "RETURN r.nodeSymbol AS room, p.nodeSymbol AS place, p.x AS x, p.y AS y, p.z AS z"
)
