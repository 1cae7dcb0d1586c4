"""Read-only statements ``heracles demo`` uses to pick a goal that fits the mirrored scene."""
from __future__ import annotations

from heracles_ros.schema import CONTAINS, ROBOT_LABEL, Layer

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

# -- the scripted model's queries (heracles_ros/demo/scripted_model.py) ------------------------------
# Sent through the agent's read-only Cypher tool, exactly as a model's queries are: literal text, no parameters.
_BOX_IN_ROOM = (
    f"MATCH (r:{Layer.ROOM.value})-[:{CONTAINS}]->(p:{Layer.MESH_PLACE.value})-[:{CONTAINS}]->"
    f"(o:{Layer.OBJECT.value} {{class: 'box'}}) "
)
#: How many boxes stand in a lounge.
SCRIPTED_BOXES_IN_LOUNGE = f"{_BOX_IN_ROOM}WHERE r.class = 'lounge' RETURN count(DISTINCT o) AS boxes"
#: Boxes outside the lounge, with the class of their room and where they are.
SCRIPTED_BOXES_OUTSIDE_LOUNGE = (
    f"{_BOX_IN_ROOM}WHERE r.class <> 'lounge' "
    "RETURN o.nodeSymbol AS box, o.x AS x, o.y AS y, r.class AS room_class ORDER BY box"
)
#: The mesh places of the lounges, to put the box down near the middle of one.
SCRIPTED_LOUNGE_PLACES = (
    f"MATCH (r:{Layer.ROOM.value} {{class: 'lounge'}})-[:{CONTAINS}]->(p:{Layer.MESH_PLACE.value}) "
    "RETURN r.nodeSymbol AS room, p.nodeSymbol AS place, p.x AS x, p.y AS y ORDER BY room, place"
)
#: Where the robot stands.
SCRIPTED_ROBOT = f"MATCH (r:{ROBOT_LABEL}) RETURN r.x AS x, r.y AS y"


def _literal(text: str) -> str:
    """A class name as a Cypher string literal; only words, spaces and hyphens (the scripted model's patterns)."""
    if not text or not all(c.isalnum() or c in " -_" for c in text):
        raise ValueError(f"not a class name the scripted model writes into a query: {text!r}")
    return f"'{text}'"


def scripted_objects_of_class(cls: str) -> str:
    """The objects of one class, where they are and the class of their room."""
    return (
        f"MATCH (r:{Layer.ROOM.value})-[:{CONTAINS}]->(p:{Layer.MESH_PLACE.value})-[:{CONTAINS}]->"
        f"(o:{Layer.OBJECT.value} {{class: {_literal(cls)}}}) "
        "RETURN o.nodeSymbol AS object, o.x AS x, o.y AS y, r.class AS room_class ORDER BY object"
    )


def scripted_places_of_room_class(room_class: str) -> str:
    """The mesh places of the rooms of one class, to put something down near the middle of the first."""
    return (
        f"MATCH (r:{Layer.ROOM.value} {{class: {_literal(room_class)}}})-[:{CONTAINS}]->(p:{Layer.MESH_PLACE.value}) "
        "RETURN r.nodeSymbol AS room, p.nodeSymbol AS place, p.x AS x, p.y AS y ORDER BY room, place"
    )
