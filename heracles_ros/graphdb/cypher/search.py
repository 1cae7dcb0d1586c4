"""Statements of the search for what the map lacks (heracles_ros/search) and of the simulated Hydra."""
from __future__ import annotations

from heracles_ros.schema import Layer

#: Every object's symbol: what the map holds at start (the simulated Hydra keeps these in its snapshots).
OBJECT_SYMBOLS = f"MATCH (o:{Layer.OBJECT.value}) RETURN o.nodeSymbol AS symbol"

#: Every object with its class and position: what the search ranks rooms by (rooms from the place graph).
OBJECTS = f"MATCH (o:{Layer.OBJECT.value}) RETURN o.nodeSymbol AS symbol, o.class AS class, o.x AS x, o.y AS y"

#: The rooms and their labels.
ROOMS = f"MATCH (r:{Layer.ROOM.value}) RETURN r.nodeSymbol AS symbol, r.class AS class"

#: The objects not among ``$before`` (the map's at the start): what a search looks at for WHAT.
NEW_OBJECTS = (
    f"MATCH (o:{Layer.OBJECT.value}) WHERE NOT o.nodeSymbol IN $before "
    "RETURN o.nodeSymbol AS symbol, o.class AS class, o.x AS x, o.y AS y ORDER BY symbol"
)
