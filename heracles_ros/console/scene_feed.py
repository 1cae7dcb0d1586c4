"""The map's data as diffs: successive scene views -> what changed, keyed by symbol.

A kilometre-scale scene has 16k places and 34k place edges; sending it whole on
every mirror update would freeze a tablet's page. The feed keeps what it last sent
and turns each new :class:`~heracles_ros.mirror.scene_view.SceneView` into upserts
(new or changed items), removals (symbols gone), and the place edges added and
removed, as pairs of place symbols: the page draws an edge between its places
wherever they are, so a place that moves costs one upsert and no edge.
A page that joins late gets :meth:`SceneFeed.full` and then the same diffs as
everyone else.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from heracles_ros.mirror.scene_view import SceneView

#: A place edge: its two places' symbols, the lower first.
Edge = tuple[str, str]


@dataclass(frozen=True)
class SceneItem:
    """One drawn node as the page gets it (``layer``: room, place or object)."""

    symbol: str
    layer: str
    cls: str
    name: str
    x: float
    y: float
    operator: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"symbol": self.symbol, "layer": self.layer, "cls": self.cls, "name": self.name, "x": self.x,
                "y": self.y, "operator": self.operator}


@dataclass(frozen=True)
class SceneDiff:
    """What a page must change: items to add or replace, symbols to drop, place edges to add and to drop."""

    full: bool
    upsert: tuple[SceneItem, ...] = ()
    remove: tuple[str, ...] = ()
    edges_added: tuple[Edge, ...] = ()
    edges_removed: tuple[Edge, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.full or self.upsert or self.remove or self.edges_added or self.edges_removed)

    def to_message(self) -> dict[str, Any]:
        return {"type": "scene", "full": self.full, "upsert": [item.to_json() for item in self.upsert],
                "remove": list(self.remove),
                "edges": {"add": [list(edge) for edge in self.edges_added],
                          "remove": [list(edge) for edge in self.edges_removed]}}


#: Decimals of metres a position is sent with: a millimetre is far below what a map shows; shorter numbers
#: (the first scene of 16k places and 34k edges is ~2.2 MB of JSON) and no diff for sub-millimetre jitter.
DECIMALS = 3


def scene_items(view: SceneView) -> dict[str, SceneItem]:
    """Rooms, mesh places (the planner's traversable layer) and objects by symbol."""
    items: dict[str, SceneItem] = {}
    for layer, drawn in (("room", view.rooms), ("place", view.mesh_places), ("object", view.objects)):
        for node in drawn.nodes:
            items[node.symbol] = SceneItem(node.symbol, layer, node.cls, node.name,
                                           round(node.position[0], DECIMALS), round(node.position[1], DECIMALS),
                                           node.operator)
    return items


class SceneFeed:
    """What was last sent, and the diff to a new view (one feed serves every page, in the same order)."""

    def __init__(self) -> None:
        self._items: dict[str, SceneItem] = {}
        self._edges: frozenset[Edge] = frozenset()

    def full(self) -> SceneDiff:
        """Everything, for a page that has nothing yet."""
        return SceneDiff(True, tuple(self._items.values()), (), tuple(sorted(self._edges)))

    def update(self, view: SceneView) -> SceneDiff:
        """The diff from the last view to ``view`` (empty when nothing changed); ``view`` becomes the last."""
        items = scene_items(view)
        upsert = tuple(item for symbol, item in items.items() if self._items.get(symbol) != item)
        remove = tuple(symbol for symbol in self._items if symbol not in items)
        edges = frozenset(_edge(a, b) for a, b in view.mesh_places.connected)
        added, removed = tuple(sorted(edges - self._edges)), tuple(sorted(self._edges - edges))
        self._items, self._edges = items, edges
        return SceneDiff(False, upsert, remove, added, removed)

    def item(self, symbol: str) -> SceneItem | None:
        return self._items.get(symbol)


def _edge(a: str, b: str) -> Edge:
    return (a, b) if a < b else (b, a)
