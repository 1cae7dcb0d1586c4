"""The map's data as diffs: successive scene views -> what changed, keyed by symbol.

A kilometre-scale scene has 16k places and 34k place edges; sending it whole on
every mirror update would freeze a tablet's page. The feed keeps what it last sent
and turns each new :class:`~heracles_ros.mirror.scene_view.SceneView` into upserts
(new or changed items), removals (symbols gone), and the place edges added and
removed, as pairs of place symbols: the page draws an edge between its places
wherever they are, so a place that moves costs one upsert and no edge.
A page that joins late gets :meth:`SceneFeed.full` and then the same diffs as
everyone else.

The work is meant for a worker thread (16k places take a tenth of a second to
diff and encode, which the web server's loop must not wait for): a feed's state is
replaced whole, so :meth:`SceneFeed.full` in one thread sees one state while
:meth:`SceneFeed.update` builds the next in another, and a message's text is
encoded in pieces (:meth:`SceneDiff.to_text`), so no single call holds the
interpreter's lock for long. The message's shape is
:func:`heracles_ros.console.protocol.scene`'s.
"""
from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from heracles_ros.console import protocol
from heracles_ros.console.protocol import MapEdge, MapItem, MapLayer
from heracles_ros.mirror.scene_view import DrawnLayer, SceneView


@dataclass(frozen=True)
class SceneItem:
    """One drawn node as the page gets it (``layer``: room, place or object)."""

    symbol: str
    layer: MapLayer
    cls: str
    name: str
    x: float
    y: float
    operator: bool = False

    def to_json(self) -> MapItem:
        return {"symbol": self.symbol, "layer": self.layer, "cls": self.cls, "name": self.name, "x": self.x,
                "y": self.y, "operator": self.operator}


@dataclass(frozen=True)
class SceneDiff:
    """What a page must change: items to add or replace, symbols to drop, place edges to add and to drop."""

    full: bool
    upsert: tuple[SceneItem, ...] = ()
    remove: tuple[str, ...] = ()
    edges_added: tuple[MapEdge, ...] = ()
    edges_removed: tuple[MapEdge, ...] = ()

    @property
    def empty(self) -> bool:
        return not (self.full or self.upsert or self.remove or self.edges_added or self.edges_removed)

    def to_message(self) -> dict[str, Any]:
        """The scene message (a plain dict, as ``heracles bench console`` measures it)."""
        return dict(protocol.scene(self.full, [item.to_json() for item in self.upsert], list(self.remove),
                                   self.edges_added, self.edges_removed))

    def to_text(self) -> str:
        """The scene message on the wire, a chunk at a time (:func:`~heracles_ros.console.protocol.scene_text`)."""
        return protocol.scene_text(self.full, self.upsert, self.remove, self.edges_added, self.edges_removed,
                                   item=SceneItem.to_json)


#: Decimals of metres a position is sent with: a millimetre is far below what a map shows; shorter numbers
#: (the first scene of 16k places and 34k edges is ~2.2 MB of JSON) and no diff for sub-millimetre jitter.
DECIMALS = 3


def scene_items(view: SceneView) -> dict[str, SceneItem]:
    """Rooms, mesh places (the planner's traversable layer) and objects by symbol."""
    items: dict[str, SceneItem] = {}
    layers: tuple[tuple[MapLayer, DrawnLayer], ...] = (
        ("room", view.rooms), ("place", view.mesh_places), ("object", view.objects))
    for layer, drawn in layers:
        for node in drawn.nodes:
            items[node.symbol] = SceneItem(node.symbol, layer, node.cls, node.name,
                                           round(node.position[0], DECIMALS), round(node.position[1], DECIMALS),
                                           node.operator)
    return items


@dataclass(frozen=True)
class _Shown:
    """What the feed last sent, replaced whole on each change; ``revision`` counts the changes."""

    revision: int
    items: dict[str, SceneItem]
    edges: frozenset[MapEdge]


class SceneFeed:
    """What was last sent, and the diff to a new view (one feed serves every page, in the same order).

    One thread at a time may :meth:`update`; :meth:`full`, :meth:`full_text` and :meth:`item` may be called
    from any thread meanwhile."""

    def __init__(self) -> None:
        self._shown = _Shown(0, {}, frozenset())
        self._full_text: tuple[int, str] = (-1, "")
        self._full_lock = threading.Lock()

    @property
    def revision(self) -> int:
        """How many changes the feed has made (a diff of revision r turns revision r-1's map into r's)."""
        return self._shown.revision

    def full(self) -> SceneDiff:
        """Everything, for a page that has nothing yet."""
        shown = self._shown
        return SceneDiff(True, tuple(shown.items.values()), (), tuple(sorted(shown.edges)))

    def full_text(self) -> tuple[int, str]:
        """:meth:`full`'s wire text and the revision it shows (encoded once per revision, for every page that
        opens meanwhile)."""
        with self._full_lock:
            revision = self._shown.revision
            if self._full_text[0] != revision:
                self._full_text = (revision, self.full().to_text())
            return self._full_text

    def update(self, view: SceneView) -> SceneDiff:
        """The diff from the last view to ``view`` (empty when nothing changed); ``view`` becomes the last."""
        shown = self._shown
        items = scene_items(view)
        upsert = tuple(item for symbol, item in items.items() if shown.items.get(symbol) != item)
        remove = tuple(symbol for symbol in shown.items if symbol not in items)
        edges = frozenset(_edge(a, b) for a, b in view.mesh_places.connected)
        added, removed = tuple(sorted(edges - shown.edges)), tuple(sorted(shown.edges - edges))
        diff = SceneDiff(False, upsert, remove, added, removed)
        if not diff.empty:
            self._shown = _Shown(shown.revision + 1, items, edges)
        return diff

    def item(self, symbol: str) -> SceneItem | None:
        return self._shown.items.get(symbol)

    def items(self) -> Mapping[str, SceneItem]:
        """What the map shows now, by symbol (a state replaced whole on each change, never changed in place)."""
        return self._shown.items


def _edge(a: str, b: str) -> MapEdge:
    return (a, b) if a < b else (b, a)
