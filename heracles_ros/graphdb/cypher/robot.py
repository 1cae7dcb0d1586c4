"""Statements that read and write the robot's state (written by the dispatcher only).

The robot is one node, ``(:Robot {nodeSymbol: 'robot', x, y, z, place, holding})``,
linked ``-[:AT]->`` to the place it stands at and ``-[:HOLDING]->`` to the object
in its gripper. The mirror never touches it. Labels cannot be parameters, so
statements that name a layer are built from :class:`~..schema.Layer` (a closed
set, never input text).
"""
from __future__ import annotations

from heracles_ros.schema import AT, CONTAINS, HOLDING, ROBOT_LABEL, Dialect, Layer

READ_ROBOT = (
    f"MATCH (r:{ROBOT_LABEL} {{nodeSymbol: $symbol}}) "
    f"OPTIONAL MATCH (r)-[:{AT}]->(p) "
    f"OPTIONAL MATCH (r)-[:{HOLDING}]->(o) "
    "RETURN r.x AS x, r.y AS y, r.z AS z, r.place AS place, r.holding AS holding, "
    "p.nodeSymbol AS at_symbol, o.nodeSymbol AS held_symbol"
)

#: Create the robot node on first use (MERGE on its key only), then set every property.
UPSERT_ROBOT = (
    f"MERGE (r:{ROBOT_LABEL} {{nodeSymbol: $symbol}}) "
    "SET r.x = $x, r.y = $y, r.z = $z, r.place = $place, r.holding = $holding"
)

#: Drop the old AT and HOLDING links before the current ones are created.
UNLINK_ROBOT = f"MATCH (r:{ROBOT_LABEL} {{nodeSymbol: $symbol}})-[rel:{AT}|{HOLDING}]->() DELETE rel"

DELETE_ROBOT = f"MATCH (r:{ROBOT_LABEL} {{nodeSymbol: $symbol}}) DETACH DELETE r"


def link_robot_at(place_layer: Layer) -> str:
    """(:Robot)-[:AT]->(place); creates nothing when the place is not in the graph."""
    return (
        f"MATCH (r:{ROBOT_LABEL} {{nodeSymbol: $symbol}}) "
        f"MATCH (p:{place_layer.value} {{nodeSymbol: $place}}) CREATE (r)-[:{AT}]->(p)"
    )


LINK_ROBOT_HOLDING = (
    f"MATCH (r:{ROBOT_LABEL} {{nodeSymbol: $symbol}}) "
    f"MATCH (o:{Layer.OBJECT.value} {{nodeSymbol: $object}}) CREATE (r)-[:{HOLDING}]->(o)"
)


def node_position(layer: Layer) -> str:
    """Position of one scene node by symbol (to place the robot at a named start)."""
    return f"MATCH (n:{layer.value} {{nodeSymbol: $symbol}}) RETURN n.x AS x, n.y AS y, n.z AS z"


def move_object(dialect: Dialect) -> str:
    """Set a placed object's position (and its ``center`` / ``bbox_center`` points with it)."""
    point = dialect.point("$x", "$y", "$z")
    sets = f"o.x = $x, o.y = $y, o.z = $z, o.center = {point}, o.bbox_center = {point}"
    return f"MATCH (o:{Layer.OBJECT.value} {{nodeSymbol: $object}}) SET {sets}"


#: A placed object leaves whatever place contained it...
UNLINK_OBJECT_CONTAINER = f"MATCH ()-[c:{CONTAINS}]->(o:{Layer.OBJECT.value} {{nodeSymbol: $object}}) DELETE c"


def link_object_container(place_layer: Layer) -> str:
    """...and is contained by the place it was put down at."""
    return (
        f"MATCH (p:{place_layer.value} {{nodeSymbol: $place}}) "
        f"MATCH (o:{Layer.OBJECT.value} {{nodeSymbol: $object}}) CREATE (p)-[:{CONTAINS}]->(o)"
    )
