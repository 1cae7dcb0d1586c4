"""The map's reads from the database: whole, or only the places the mirror's history says changed since the last.

At 10^5 places a whole read is seconds of queries and parsing; an update after a
1 % change should cost what changed. The mirror's history (:mod:`heracles_ros.mirror.history`)
records every place that appeared, disappeared or moved beyond its move threshold,
by snapshot time; a read leaves a :class:`~.scene_feed.MapMark` (the history's newest
time then), and the next one asks the history which places changed after it, then
reads only those places and their connections, through the symbol index. Rooms and
objects are few (under 3,000 at 10^5 places) and change without history events (the
dispatcher moves objects, an operator adds them): they are read whole every time.

The map is read whole instead when the history cannot tell: no mark yet, no history
(turned off, or reset with the database), one that began again, one pruned past the
mark, a mirror generation that moved while the history's clock did not (a reconcile it
did not record), a changed correction (it moves a place without an event), more
changed places than :data:`PARTIAL_MAX_SHARE` of the map, and every :data:`WHOLE_EVERY_S`
anyway: a place's drift under the history's move threshold and a connection between two
places that did not change reach the page then.

Consistency: a reconcile writes the nodes, then the history's clock and events, then
bumps the generation. A read of what changed runs between two reconciles
(:func:`~heracles_ros.mirror.snapshot_reads.read_whole`); one that overlapped a reconcile
keeps the old mark, so the next read asks for the same events again. A whole read reads
the history's clock before the rows, so every snapshot up to that time is in what it reads.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from heracles_ros.console.protocol import MapLayer
from heracles_ros.console.scene_feed import DECIMALS, MapMark, MapRead, SceneItem
from heracles_ros.graphdb.cypher import console as q
from heracles_ros.graphdb.cypher.scene_view import read_connections, read_drawn_nodes, read_place_positions
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.snapshot_reads import read_stamp, read_whole
from heracles_ros.schema import OPERATOR_SOURCE, Layer

#: Seconds between two whole reads at most while the map changes.
WHOLE_EVERY_S = 300.0
#: More changed places than this share of the map (or than PARTIAL_MIN, whichever is more) are read whole.
PARTIAL_MAX_SHARE = 0.2
PARTIAL_MIN = 1000
#: Seconds a read of what changed waits for a reconcile in progress (then it reads anyway and keeps its mark).
RECONCILE_WAIT_S = 2.0


@dataclass(frozen=True)
class _Marks:
    """MAP_MARKS' row."""

    generation: int | None
    t: float | None
    start_t: float | None
    kept_from_t: float | None
    corrections: tuple[int, float | None]


def read_map(store: GraphStore, mark: MapMark | None, *, places_shown: int, timeout_s: float = 60.0,
             now: float | None = None) -> MapRead:
    """What changed since ``mark`` (the map whole when that cannot be told; see the module's docstring).
    ``places_shown``: how many places the map shows (a change to a large share of them is read whole)."""
    now = time.monotonic() if now is None else now
    found = read_whole(store, lambda: _changed_since(store, mark, places_shown, now, timeout_s),
                       wait_s=RECONCILE_WAIT_S)
    changed = found.value
    if isinstance(changed, str):
        return read_whole_map(store, why=changed, timeout_s=timeout_s, now=now)
    assert mark is not None
    marks, items, places, edges, symbols = changed
    if found.whole and marks.t is not None and marks.start_t is not None:
        mark = MapMark(marks.t, marks.start_t, marks.generation, marks.corrections, mark.whole_at)
    return MapRead(False, items, places, edges, frozenset(symbols), mark, settled=found.whole)


def read_whole_map(store: GraphStore, *, why: str, timeout_s: float = 60.0, now: float | None = None) -> MapRead:
    """Every room, object, place and place edge; the mark the next read starts from (none without a history)."""
    now = time.monotonic() if now is None else now
    before = read_stamp(store)
    marks = _read_marks(store)  # before the rows: every snapshot up to the clock is in them
    items = _items(store, timeout_s)
    places = {text[0]: position for row in store.query(read_place_positions(Layer.MESH_PLACE), timeout_s=timeout_s)
              for text in [str(entry).split(" ") for entry in row["rows"] or ()]
              if (position := _position(text[1:3])) is not None}
    edges = frozenset(pair for row in store.query(read_connections(Layer.MESH_PLACE), timeout_s=timeout_s)
                      for pair in _pairs(row["pairs"]))
    settled = read_stamp(store) == before and not before.writing
    mark = None
    if marks.t is not None and marks.start_t is not None:
        mark = MapMark(marks.t, marks.start_t, marks.generation if settled else None, marks.corrections, now)
    return MapRead(True, items, places, edges, mark=mark, why_whole=why)


_Changed = tuple[_Marks, dict[str, SceneItem], dict[str, tuple[float, float]], frozenset[tuple[str, str]], list[str]]


def _changed_since(store: GraphStore, mark: MapMark | None, places_shown: int, now: float,
                   timeout_s: float) -> _Changed | str:
    """The marks, rooms and objects, and the places changed since ``mark`` with their edges; or why the map must be
    read whole."""
    marks = _read_marks(store)
    if why := _why_whole(mark, marks, now):
        return why
    assert mark is not None and marks.t is not None
    symbols: list[str] = []
    if marks.generation != mark.generation or mark.generation is None:
        rows = store.query(q.PLACES_CHANGED, {"since": mark.t}, timeout_s=timeout_s)
        symbols = [str(symbol) for symbol in (rows[0]["symbols"] or ())] if rows else []
    if len(symbols) > max(PARTIAL_MIN, PARTIAL_MAX_SHARE * places_shown):
        return f"{len(symbols)} places changed"
    places: dict[str, tuple[float, float]] = {}
    edges: frozenset[tuple[str, str]] = frozenset()
    if symbols:
        for row in store.query(q.PLACES_OF, {"symbols": symbols}, timeout_s=timeout_s):
            for text in [str(entry).split(" ") for entry in row["rows"] or ()]:
                if (position := _position(text[1:3])) is not None:
                    places[text[0]] = position
        edges = frozenset(pair for row in store.query(q.CONNECTIONS_OF, {"symbols": symbols}, timeout_s=timeout_s)
                          for pair in _pairs(row["pairs"]))
    return marks, _items(store, timeout_s), places, edges, symbols


def _why_whole(mark: MapMark | None, marks: _Marks, now: float) -> str:
    """Why the history cannot tell what changed since ``mark`` ('' when it can)."""
    if mark is None:
        return "no earlier read to start from"
    if marks.t is None or marks.start_t is None:
        return "no history"
    if marks.start_t != mark.start_t:
        return "the history began again"
    if marks.kept_from_t is not None and marks.kept_from_t > mark.t:
        return "the history was pruned past the last read"
    went_back = marks.generation is not None and mark.generation is not None and marks.generation < mark.generation
    if marks.t < mark.t or went_back:
        return "the database went back (restored)"
    if mark.generation is not None and marks.generation != mark.generation and marks.t == mark.t:
        return "the mirror changed the map without a history event"
    if marks.corrections != mark.corrections:
        return "the corrections changed"
    if now - mark.whole_at >= WHOLE_EVERY_S:
        return f"{WHOLE_EVERY_S:g} s since the last whole read"
    return ""


def _read_marks(store: GraphStore) -> _Marks:
    rows = store.query(q.MAP_MARKS)
    row = rows[0] if rows else {}
    generation, t, start_t, kept = (row.get(k) for k in ("generation", "t", "start_t", "kept_from_t"))
    return _Marks(int(generation) if isinstance(generation, int) else None, _number(t), _number(start_t),
                  _number(kept), (int(row.get("corrections") or 0), _number(row.get("corrected_s"))))


def _items(store: GraphStore, timeout_s: float) -> dict[str, SceneItem]:
    """Rooms and objects by symbol (those without a finite position left out)."""
    items: dict[str, SceneItem] = {}
    layers: tuple[tuple[MapLayer, Layer], ...] = (("room", Layer.ROOM), ("object", Layer.OBJECT))
    for name, layer in layers:
        for row in store.query(read_drawn_nodes(layer), timeout_s=timeout_s):
            symbol, position = row.get("s"), _position((row.get("x"), row.get("y")))
            if isinstance(symbol, str) and position is not None:
                items[symbol] = SceneItem(symbol, name, _text(row.get("c")), _text(row.get("name")), *position,
                                          operator=row.get("source") == OPERATOR_SOURCE)
    return items


def _position(values: Any) -> tuple[float, float] | None:
    """x, y to the millimetre, from numbers or their text (None unless both are finite)."""
    try:
        x, y = (float(v) for v in values)
    except (TypeError, ValueError):
        return None
    return (round(x, DECIMALS), round(y, DECIMALS)) if math.isfinite(x) and math.isfinite(y) else None


def _pairs(pairs: Any) -> list[tuple[str, str]]:
    """"A B" strings as edges, the lower symbol first."""
    edges = []
    for pair in pairs or ():
        a, _, b = str(pair).partition(" ")
        if a and b:
            edges.append((a, b) if a < b else (b, a))
    return edges


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
