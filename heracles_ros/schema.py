"""Names the database schema uses; prompts, queries and users depend on them.

Compatible with the reference system (GoldenZephyr/heracles): one label per
scene-graph layer, ``nodeSymbol`` as the key, ``CONTAINS`` down the hierarchy,
``<LAYER>_CONNECTED`` within a layer stored in both directions, ``center`` on
every node and ``bbox_center`` / ``bbox_dim`` on objects. A node's label comes
from its spark_dsg layer, never from its symbol's prefix (Hydra names mesh
places ``Q…`` by default and ``P…`` in its dataset configs).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Layer(str, Enum):
    """Mirrored scene-graph layers, as Neo4j/FalkorDB labels."""

    OBJECT = "Object"
    PLACE = "Place"  # 3D places (spark_dsg layer 3, partition 0), usually p12
    MESH_PLACE = "MeshPlace"  # 2D places (layer 3 partition 1, or 20), usually P12 or Q12
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

#: A scene symbol as spark_dsg prints it: one letter (any) and an index.
SCENE_SYMBOL = re.compile(r"[A-Za-z][0-9]+")  # whole string: use fullmatch ("$" lets "O14\n" through)

CONTAINS = "CONTAINS"
CONNECTED_TYPES: tuple[str, ...] = tuple(_CONNECTED.values())
MIRRORED_LABELS: tuple[str, ...] = tuple(layer.value for layer in Layer)

# Nodes the mirror never touches.
ROBOT_LABEL = "Robot"
ROBOT_SYMBOL = "robot"
AT = "AT"  # (:Robot)-[:AT]->(:MeshPlace|Place)
HOLDING = "HOLDING"  # (:Robot)-[:HOLDING]->(:Object)
CORRECTION_LABEL = "Correction"
#: ``property`` of the Correction record of an operator's addition (an object perception has not mapped).
ADDITION_PROPERTY = "added"
#: ``source`` of an object the operator added (perceived objects have none).
OPERATOR_SOURCE = "operator"
#: Prefix of added objects' symbols: a letter none of Hydra's layers uses by default (objects ``O``, places
#: ``p``, mesh places ``P``/``Q``, rooms ``R``, buildings ``B``, agents ``a``...); ``is_scene_symbol`` accepts it.
ADDITION_PREFIX = "A"
MIRROR_META_LABEL = "MirrorMeta"
# The scene's history (see mirror/history.py): linked to nothing, keyed by ``symbol`` (not ``nodeSymbol``), so
# present-tense queries never meet it.
CHANGE_LABEL = "Change"
SEEN_LABEL = "Seen"
HISTORY_CLOCK_LABEL = "HistoryClock"
HISTORY_LABELS: tuple[str, ...] = (CHANGE_LABEL, SEEN_LABEL, HISTORY_CLOCK_LABEL)
#: Hydra's semantic_feature of an object, on a node of its own the mirror writes only when it changes (linked to
#: nothing, hidden from the model's schema: graphdb/cypher/meaning.py).
OBJECT_FEATURE_LABEL = "ObjectFeature"

#: Properties an operator correction may change (narrow, typed).
CORRECTABLE_PROPERTIES: dict[str, type] = {"class": str, "name": str, "x": float, "y": float, "z": float}


def is_scene_symbol(symbol: object) -> bool:
    """Whether ``symbol`` is shaped like a scene symbol ("O12", "Q6"); its kind is the database's label."""
    return isinstance(symbol, str) and SCENE_SYMBOL.fullmatch(symbol) is not None


@dataclass(frozen=True)
class Dialect:
    """What differs between backends' Cypher, for queries and prompts."""

    name: str  # "neo4j" | "falkordb"
    #: Neo4j: native 3D points (``point({x,y,z})``). FalkorDB: points are [x, y, z] arrays and
    #: ``point.distance`` / ``point.withinBBox`` come from a user-defined function library.
    has_points: bool

    def point(self, x: str, y: str, z: str) -> str:
        """Cypher for a 3D point value from three numeric expressions."""
        if self.has_points:
            return f"point({{x: {x}, y: {y}, z: {z}}})"
        return f"[{x}, {y}, {z}]"

    def distance_expr(self, a: str, b: str) -> str:
        """Cypher for the 3D Euclidean distance between nodes bound to ``a`` and ``b`` (both backends)."""
        return f"point.distance({a}.center, {b}.center)"


NEO4J = Dialect("neo4j", has_points=True)
FALKORDB = Dialect("falkordb", has_points=False)
