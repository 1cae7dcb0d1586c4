"""Names the database schema uses; prompts, queries and users depend on them.

Compatible with the reference system: one label per scene-graph layer,
``nodeSymbol`` as the key, ``CONTAINS`` down the hierarchy and
``<LAYER>_CONNECTED`` within a layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Layer(str, Enum):
    """Mirrored scene-graph layers, as Neo4j/FalkorDB labels."""

    OBJECT = "Object"
    PLACE = "Place"  # 3D places, symbols p12
    MESH_PLACE = "MeshPlace"  # 2D places, symbols P12
    ROOM = "Room"
    BUILDING = "Building"

    @property
    def connected(self) -> str:
        """Relationship type between two nodes of this layer."""
        return _CONNECTED[self]


_CONNECTED = {
    Layer.OBJECT: "OBJECT_CONNECTED",
    Layer.PLACE: "PLACE_CONNECTED",
    Layer.MESH_PLACE: "MESH_PLACE_CONNECTED",
    Layer.ROOM: "ROOM_CONNECTED",
    Layer.BUILDING: "BUILDING_CONNECTED",
}

#: Higher layers first; a parent is always in an earlier entry than its child.
HIERARCHY: tuple[Layer, ...] = (Layer.BUILDING, Layer.ROOM, Layer.PLACE, Layer.MESH_PLACE, Layer.OBJECT)

#: Scene-symbol prefix of each layer (spark_dsg NodeSymbol categories).
SYMBOL_PREFIX: dict[Layer, str] = {
    Layer.OBJECT: "O",
    Layer.PLACE: "p",
    Layer.MESH_PLACE: "P",
    Layer.ROOM: "R",
    Layer.BUILDING: "B",
}
PREFIX_LAYER: dict[str, Layer] = {v: k for k, v in SYMBOL_PREFIX.items()}

CONTAINS = "CONTAINS"
CONNECTED_TYPES: tuple[str, ...] = tuple(_CONNECTED.values())
MIRRORED_LABELS: tuple[str, ...] = tuple(layer.value for layer in Layer)

# Nodes the mirror never touches.
ROBOT_LABEL = "Robot"
ROBOT_SYMBOL = "robot"
AT = "AT"  # (:Robot)-[:AT]->(:MeshPlace|Place)
HOLDING = "HOLDING"  # (:Robot)-[:HOLDING]->(:Object)
CORRECTION_LABEL = "Correction"
MIRROR_META_LABEL = "MirrorMeta"

#: Properties an operator correction may change (narrow, typed).
CORRECTABLE_PROPERTIES: dict[str, type] = {"class": str, "name": str, "x": float, "y": float, "z": float}


def layer_of_symbol(symbol: str) -> Layer | None:
    """Layer a scene symbol belongs to by its prefix ("O12" -> OBJECT), or None."""
    if len(symbol) < 2 or not symbol[1:].isdigit():
        return None
    return PREFIX_LAYER.get(symbol[0])


@dataclass(frozen=True)
class Dialect:
    """What differs between backends' Cypher, for queries and prompts."""

    name: str  # "neo4j" | "falkordb"
    has_points: bool  # Neo4j: point({x,y,z}) and point.distance

    def distance_expr(self, a: str, b: str) -> str:
        """Cypher for the 3D Euclidean distance between nodes bound to ``a`` and ``b``."""
        if self.has_points:
            return f"point.distance({a}.center, {b}.center)"
        return f"sqrt(({a}.x-{b}.x)^2 + ({a}.y-{b}.y)^2 + ({a}.z-{b}.z)^2)"


NEO4J = Dialect("neo4j", has_points=True)
FALKORDB = Dialect("falkordb", has_points=False)
