"""The map's data as diffs: each read of the database -> what changed on the map, keyed by symbol.

A map of 10^5 places has some 200k place edges; sending it whole on every mirror
update would freeze a tablet's page. The feed keeps what it last sent and turns each
:class:`MapRead` (:mod:`.map_reads`: the whole map, or only the places the history
says changed) into upserts of rooms and objects, places added or moved (symbols and
positions in one list of numbers), removals (symbols gone) and the place edges added
and removed, as pairs of place symbols: the page draws an edge between its places
wherever they are, so a place that moves costs one entry and no edge. A page that
joins late gets :meth:`SceneFeed.full_texts` (the whole map in pieces, rooms and
objects first) and then the same diffs as everyone else.

The work is meant for a worker thread (10^5 places take a second to diff and encode
whole, which the web server's loop must not wait for): :meth:`SceneFeed.apply` changes
the map under a lock that :meth:`SceneFeed.full_texts` takes only to copy it, and a
message's text is encoded in pieces (:func:`~heracles_ros.console.protocol.scene_text`),
so no single call holds the interpreter's lock for long. The rooms and objects are a
mapping replaced whole on each change, so :meth:`SceneFeed.items` may be read from any thread.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from heracles_ros.console import protocol
from heracles_ros.console.protocol import PLACES_PER_MESSAGE, MapEdge, MapItem, MapLayer

#: Decimals of metres a position is sent with: a millimetre is far below what a map shows; shorter numbers and
#: no diff for sub-millimetre jitter.
DECIMALS = 3

#: A place as the page gets it: symbol, x, y.
Place = tuple[str, float, float]


@dataclass(frozen=True)
class SceneItem:
    """One drawn room or object as the page gets it."""

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
class MapMark:
    """Where a read left the map, for the next one to start from: the history's newest snapshot time then (the
    next read asks for the places changed after it), where that history began, the mirror's generation (None
    when the read overlapped a reconcile), the corrections' stamp and when the last whole read was made
    (``time.monotonic()``)."""

    t: float
    start_t: float
    generation: int | None
    corrections: tuple[int, float | None]
    whole_at: float


@dataclass(frozen=True)
class MapRead:
    """What one read of the database found. Rooms and objects are always all of them; places and edges all of them
    when ``whole``, else only ``changed``: the places the history named, with those still in the scene in
    ``places`` and every edge of those in ``edges``."""

    whole: bool
    items: dict[str, SceneItem]
    places: dict[str, tuple[float, float]]
    edges: frozenset[MapEdge]
    changed: frozenset[str] = frozenset()
    #: Where the next read starts from (None: it reads the map whole).
    mark: MapMark | None = None
    #: False when a reconcile overlapped the read: read again soon (what it read is the database's, but a
    #: snapshot's events may not all have been there yet).
    settled: bool = True
    #: Why the map was read whole ('' for a read of what changed).
    why_whole: str = ""


@dataclass(frozen=True)
class SceneDiff:
    """What a page must change: items to add or replace, places added or moved, symbols to drop, place edges to add
    and to drop. ``more``: messages that follow complete the whole map."""

    full: bool
    upsert: tuple[SceneItem, ...] = ()
    remove: tuple[str, ...] = ()
    places: tuple[Place, ...] = ()
    edges_added: tuple[MapEdge, ...] = ()
    edges_removed: tuple[MapEdge, ...] = ()
    more: bool = False

    @property
    def empty(self) -> bool:
        return not (self.full or self.upsert or self.remove or self.places or self.edges_added or self.edges_removed)

    def to_message(self) -> dict[str, Any]:
        """The scene message (a plain dict, as tests and ``heracles bench console`` read it)."""
        return dict(protocol.scene(self.full, self.more, [item.to_json() for item in self.upsert], list(self.remove),
                                   self.places, self.edges_added, self.edges_removed))

    def to_text(self) -> str:
        """The scene message on the wire, a chunk at a time (:func:`~heracles_ros.console.protocol.scene_text`)."""
        return protocol.scene_text(self.full, self.more, self.upsert, self.remove, self.places, self.edges_added,
                                   self.edges_removed, item=SceneItem.to_json)


@dataclass
class _Map:
    """What the feed last sent: rooms and objects (replaced whole), places, place edges and each place's neighbours
    (changed in place, under the feed's lock)."""

    items: dict[str, SceneItem] = field(default_factory=dict)
    places: dict[str, tuple[float, float]] = field(default_factory=dict)
    edges: set[MapEdge] = field(default_factory=set)
    neighbours: dict[str, set[str]] = field(default_factory=dict)

    def edges_of(self, symbols: Iterable[str]) -> set[MapEdge]:
        return {_edge(a, b) for a in symbols for b in self.neighbours.get(a, ())}


class SceneFeed:
    """What was last sent, and the diff to a new read (one feed serves every page, in the same order).

    One thread at a time may :meth:`apply`; :meth:`full_texts`, :meth:`items` and :meth:`position` may be called
    from any thread meanwhile."""

    def __init__(self) -> None:
        self._map = _Map()
        self._revision = 0
        self._lock = threading.Lock()
        self._full_texts: tuple[int, tuple[str, ...]] = (-1, ())
        self._full_lock = threading.Lock()
        self.mark: MapMark | None = None

    @property
    def revision(self) -> int:
        """How many changes the feed has made (a diff of revision r turns revision r-1's map into r's)."""
        return self._revision

    @property
    def place_count(self) -> int:
        return len(self._map.places)

    def full(self) -> tuple[SceneDiff, ...]:
        """Everything, for a page that has nothing yet: rooms and objects, then the places PLACES_PER_MESSAGE at a
        time, then their edges twice as many at a time (no work per edge here: 10^5 places have 200k)."""
        with self._lock:
            items = tuple(self._map.items.values())
            places = [(symbol, x, y) for symbol, (x, y) in self._map.places.items()]
            edges = list(self._map.edges)
        size = PLACES_PER_MESSAGE
        rest = [SceneDiff(False, places=tuple(places[start:start + size]), more=True)
                for start in range(0, len(places), size)]
        rest += [SceneDiff(False, edges_added=tuple(edges[start:start + 2 * size]), more=True)
                 for start in range(0, len(edges), 2 * size)]
        if rest:
            rest[-1] = replace(rest[-1], more=False)
        return (SceneDiff(True, items, more=bool(rest)), *rest)

    def head_text(self) -> str:
        """:meth:`full`'s first text alone (rooms and objects: a page draws them while the places are encoded)."""
        revision, texts = self._full_texts
        if revision == self._revision:
            return texts[0]
        shown = self._map
        return SceneDiff(True, tuple(shown.items.values()), more=bool(shown.places or shown.edges)).to_text()

    def full_texts(self) -> tuple[int, tuple[str, ...]]:
        """:meth:`full`'s wire texts and the revision they show (encoded once per revision, for every page that
        opens meanwhile)."""
        with self._full_lock:
            revision = self._revision
            if self._full_texts[0] != revision:
                self._full_texts = (revision, tuple(piece.to_text() for piece in self.full()))
            return self._full_texts

    def apply(self, read: MapRead) -> SceneDiff:
        """The diff from what was sent to what ``read`` found (empty when nothing changed); the map becomes that."""
        shown = self._map
        items = read.items
        upsert = tuple(item for symbol, item in items.items() if shown.items.get(symbol) != item)
        remove = [symbol for symbol in shown.items if symbol not in items]
        places = tuple((symbol, *position) for symbol, position in read.places.items()
                       if shown.places.get(symbol) != position)
        if read.whole:
            remove += [symbol for symbol in shown.places if symbol not in read.places]
            before = shown.edges
        else:
            remove += [symbol for symbol in read.changed if symbol not in read.places and symbol in shown.places]
            before = shown.edges_of(read.changed)
        added, removed = tuple(read.edges - before), tuple(before - read.edges)
        diff = SceneDiff(False, upsert, tuple(remove), places, added, removed)
        with self._lock:
            self.mark = read.mark
            if diff.empty:
                return diff
            shown.items = dict(items)
            for symbol in remove:
                shown.places.pop(symbol, None)
                for near in shown.neighbours.pop(symbol, ()):
                    shown.neighbours.get(near, set()).discard(symbol)
                    shown.edges.discard(_edge(symbol, near))
            shown.places.update((symbol, (x, y)) for symbol, x, y in places)
            for a, b in removed:
                shown.neighbours.get(a, set()).discard(b)
                shown.neighbours.get(b, set()).discard(a)
            shown.edges.difference_update(removed)
            for a, b in added:
                shown.neighbours.setdefault(a, set()).add(b)
                shown.neighbours.setdefault(b, set()).add(a)
            shown.edges.update(added)
            self._revision += 1
        return diff

    def items(self) -> Mapping[str, SceneItem]:
        """The rooms and objects the map shows now, by symbol (a mapping replaced whole on each change, never changed
        in place)."""
        return self._map.items

    def position(self, symbol: str) -> tuple[float, float] | None:
        """Where the map shows a room, an object or a place (None: not on the map)."""
        if (item := self._map.items.get(symbol)) is not None:
            return (item.x, item.y)
        return self._map.places.get(symbol)


def _edge(a: str, b: str) -> MapEdge:
    return (a, b) if a < b else (b, a)
