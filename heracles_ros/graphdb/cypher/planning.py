"""Statements the goal checker and the planner send (all read-only).

The place graph is read whole once; after that a new mirror generation re-reads
only the places and rooms its change log names (``*_NAMED`` / ``*_of``), and per
plan only the goal's symbols and objects are looked up, each by ``nodeSymbol``
through the label's index, so nothing sent per plan grows with the scene. Labels
come from the closed set in :mod:`..schema`, never from input text.
"""
from __future__ import annotations

from heracles_ros.schema import CONTAINS, CORRECTION_LABEL, MIRROR_META_LABEL, Layer

#: What decides whether a cached place graph is still the database's: the mirror's
#: generation and token (which the change log's entries chain from) and the corrections
#: overlay (which can move places without a new generation).
GRAPH_STAMP = (
    f"OPTIONAL MATCH (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) "
    f"OPTIONAL MATCH (c:{CORRECTION_LABEL}) "
    "RETURN m.generation AS generation, m.token AS token, count(c) AS corrections, max(c.updated_s) AS corrected_s"
)


#: One round trip: the label of each of ``$symbols`` that a mirrored layer holds (a symbol's
#: kind is its label, whatever its prefix), each looked up through the label's index.
SYMBOL_LABELS = " UNION ALL ".join(
    f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}) RETURN s AS symbol, '{layer.value}' AS label"
    for layer in Layer
)


def place_nodes(layer: Layer) -> str:
    return f"MATCH (n:{layer.value}) RETURN n.nodeSymbol AS s, n.x AS x, n.y AS y, n.z AS z"


def places_named(layer: Layer) -> str:
    return (
        f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}) "
        "RETURN n.nodeSymbol AS s, n.x AS x, n.y AS y, n.z AS z"
    )


def place_edges_of(layer: Layer) -> str:
    """The links of ``$symbols`` (stored both ways: the outgoing ones are all of them)."""
    return (
        f"UNWIND $symbols AS s MATCH (a:{layer.value} {{nodeSymbol: s}})-[:{layer.connected}]->(b:{layer.value}) "
        "RETURN a.nodeSymbol AS a, b.nodeSymbol AS b"
    )


def place_edges(layer: Layer) -> str:
    return (
        f"MATCH (a:{layer.value})-[:{layer.connected}]->(b:{layer.value}) "
        "RETURN a.nodeSymbol AS a, b.nodeSymbol AS b"
    )


def room_places(place_layer: Layer) -> str:
    return (
        f"MATCH (r:{Layer.ROOM.value})-[:{CONTAINS}]->(p:{place_layer.value}) "
        "RETURN r.nodeSymbol AS room, p.nodeSymbol AS place"
    )


ROOMS = f"MATCH (r:{Layer.ROOM.value}) RETURN r.nodeSymbol AS s, r.x AS x, r.y AS y, r.z AS z"
ROOMS_NAMED = (
    f"UNWIND $symbols AS s MATCH (r:{Layer.ROOM.value} {{nodeSymbol: s}}) "
    "RETURN r.nodeSymbol AS s, r.x AS x, r.y AS y, r.z AS z"
)
#: Which rooms hold which places, for the rooms and places among ``$symbols`` (each looked up by its index).
MEMBERS_OF = " UNION ".join(
    [f"UNWIND $symbols AS s MATCH (r:{Layer.ROOM.value} {{nodeSymbol: s}})-[:{CONTAINS}]->(p:{layer.value}) "
     "RETURN r.nodeSymbol AS room, p.nodeSymbol AS place" for layer in (Layer.MESH_PLACE, Layer.PLACE)]
    + [f"UNWIND $symbols AS s MATCH (r:{Layer.ROOM.value})-[:{CONTAINS}]->(p:{layer.value} {{nodeSymbol: s}}) "
       "RETURN r.nodeSymbol AS room, p.nodeSymbol AS place" for layer in (Layer.MESH_PLACE, Layer.PLACE)]
)

#: Where each goal object is now and which place (if any) contains it; read per plan
#: because the dispatcher moves objects without a new mirror generation.
OBJECTS = (
    f"UNWIND $symbols AS s MATCH (o:{Layer.OBJECT.value} {{nodeSymbol: s}}) "
    f"OPTIONAL MATCH (c)-[:{CONTAINS}]->(o) WHERE c:{Layer.MESH_PLACE.value} OR c:{Layer.PLACE.value} "
    "RETURN o.nodeSymbol AS s, o.x AS x, o.y AS y, o.z AS z, collect(c.nodeSymbol) AS containers"
)
