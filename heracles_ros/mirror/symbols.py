"""What kind of node a scene symbol names, asked of the database.

A symbol's prefix does not tell its layer (Hydra's mesh places are ``Q…`` by
default, ``P…`` in its dataset configs; agents and frontiers have their own):
the label the mirror gave the node does. Goal checking, planning and the
command line resolve symbols here.
"""
from __future__ import annotations

from collections.abc import Iterable

from heracles_ros.graphdb.cypher import planning as cypher
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.schema import Layer, is_scene_symbol


def symbol_layers(store: GraphStore, symbols: Iterable[str]) -> dict[str, Layer]:
    """Layer of each symbol the database holds as a mirrored node (absent symbols are left out)."""
    wanted = [s for s in dict.fromkeys(symbols) if is_scene_symbol(s)]
    if not wanted:
        return {}
    layers: dict[str, Layer] = {}
    for row in store.query(cypher.SYMBOL_LABELS, {"symbols": wanted}):
        layers.setdefault(str(row["symbol"]), Layer(row["label"]))
    return layers
