"""What the mirror holds, read back for drawing: rooms, both place layers with their connections, objects.

Read from the database, not from the mirror's baseline, so what is drawn is what
queries see (corrections included). The operator's additions are marked as such:
they are drawn in their own style (``heracles/added`` on the history markers).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from heracles_ros.graphdb.cypher.scene_view import read_connections, read_drawn_nodes, read_place_positions
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.plan_types import Point3
from heracles_ros.schema import OPERATOR_SOURCE, Layer


@dataclass(frozen=True)
class DrawnNode:
    symbol: str
    cls: str
    name: str
    position: Point3
    #: Added by the operator, not perceived.
    operator: bool = False


@dataclass(frozen=True)
class DrawnLayer:
    """The nodes of one layer (in symbol order) and its connections, as pairs of their positions (and the same
    connections by symbol, in the same order)."""

    nodes: tuple[DrawnNode, ...] = ()
    connections: tuple[tuple[Point3, Point3], ...] = ()
    connected: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class SceneView:
    rooms: DrawnLayer = field(default_factory=DrawnLayer)
    mesh_places: DrawnLayer = field(default_factory=DrawnLayer)
    places: DrawnLayer = field(default_factory=DrawnLayer)
    objects: DrawnLayer = field(default_factory=DrawnLayer)


def read_scene_view(store: GraphStore, *, timeout_s: float = 60.0) -> SceneView:
    """One query per layer and one per place layer's connections; nodes without a finite position are left out."""
    layers = {layer: _read_layer(store, layer, timeout_s) for layer in
              (Layer.ROOM, Layer.MESH_PLACE, Layer.PLACE, Layer.OBJECT)}
    return SceneView(rooms=layers[Layer.ROOM], mesh_places=layers[Layer.MESH_PLACE], places=layers[Layer.PLACE],
                     objects=layers[Layer.OBJECT])


def _read_layer(store: GraphStore, layer: Layer, timeout_s: float) -> DrawnLayer:
    if layer not in (Layer.MESH_PLACE, Layer.PLACE):
        nodes = [node for row in store.query(read_drawn_nodes(layer), timeout_s=timeout_s)
                 if (node := _drawn(row)) is not None]
        return DrawnLayer(tuple(sorted(nodes, key=_symbol_order)))
    places = [node for row in store.query(read_place_positions(layer), timeout_s=timeout_s)
              for text in row["rows"] or () if (node := _place(str(text))) is not None]
    where = {n.symbol: n.position for n in places}
    pairs: list[tuple[Point3, Point3, str, str]] = []
    for row in store.query(read_connections(layer), timeout_s=timeout_s):
        for pair in row["pairs"] or ():
            first, _, second = str(pair).partition(" ")
            if first in where and second in where:
                pairs.append((where[first], where[second], first, second))
    pairs.sort()
    return DrawnLayer(tuple(sorted(places, key=_symbol_order)), tuple((a, b) for a, b, _, _ in pairs),
                      tuple((first, second) for _, _, first, second in pairs))


def _symbol_order(node: DrawnNode) -> tuple[int, str]:
    return (len(node.symbol), node.symbol)


def _place(text: str) -> DrawnNode | None:
    """A place from its "symbol x y z" string."""
    symbol, *numbers = text.split(" ")
    return _drawn({"s": symbol, **dict(zip("xyz", numbers, strict=False))}) if len(numbers) == 3 else None


def _drawn(row: dict[str, Any]) -> DrawnNode | None:
    try:
        position = (float(row["x"]), float(row["y"]), float(row["z"]))
    except (KeyError, TypeError, ValueError):
        return None
    if not all(math.isfinite(v) for v in position) or not isinstance(row.get("s"), str):
        return None
    return DrawnNode(
        symbol=row["s"],
        cls=row["c"] if isinstance(row.get("c"), str) else "",
        name=row["name"] if isinstance(row.get("name"), str) else "",
        position=position,
        operator=row.get("source") == OPERATOR_SOURCE,
    )
