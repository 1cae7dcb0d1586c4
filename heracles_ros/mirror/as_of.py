"""The scene as of a time: which objects were there, where, in which room, under which label.

Read backward from the present: the scene at T is the scene now with every event the history recorded
after T undone. For each node only its events of the first snapshot after T matter (snapshot times
strictly increase, :mod:`heracles_ros.mirror.history`): ``appeared`` means it was not there at T;
``disappeared`` gives it as it was last seen; ``moved`` puts it back where it was recorded before the
move, in the room that held it then; ``relabelled`` / ``renamed`` give back its class / name. A node
without an event after T is as it is now. Every field comes from that one event, never from the present
row (a later event may have changed it).

Only events after T are read, so the answer is exact as long as none of them was pruned: from the
history's start, or from the time its pruning last deleted up to (``kept_from_t``, one per pool of
events: the objects', the others') if later. An earlier T is refused, saying what is kept.

Precision of a position: the history records a node's position when it appears, disappears, or moves
beyond ``move_threshold_m`` from where it was last recorded, exactly as that snapshot had it. So a
position given back from an event (``recorded``) is where the node was recorded before its next move
(or last seen before it vanished): exact unless it drifted by less than the threshold in between. A
node with no event after T is given its position now: it stayed within the threshold of its last
recorded position both then and now, so it is within twice the threshold of where it was (within the
threshold when it did not drift; each mirror restart starts the drift afresh). The class of a node with
no event after T is its class now, an operator's correction included (a correction made after T shows
at T); an event's class is what Hydra said. An object the operator added counts from its ``added_s``.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from heracles_ros.graphdb.cypher import history as q
from heracles_ros.graphdb.store import GraphStore, Row
from heracles_ros.mirror.history import iso_time
from heracles_ros.mirror.snapshot_reads import DEFAULT_WAIT_S, read_whole
from heracles_ros.outcomes import ChangeKind
from heracles_ros.schema import OPERATOR_SOURCE, Layer

Point = tuple[float, float, float]
#: Layers a symbol is looked up in, objects first (the question is usually about one).
_LOOKUP_ORDER = (Layer.OBJECT, Layer.MESH_PLACE, Layer.PLACE, Layer.ROOM, Layer.BUILDING)


@dataclass(frozen=True)
class HistoryRange:
    """The times the history answers: from ``earliest(objects)`` (exactly) to ``newest_t``; later ones are now."""

    start_t: float
    newest_t: float
    #: From when the events of places, rooms and buildings are complete (None: none pruned yet).
    kept_from_t: float | None = None
    #: From when the objects' events are complete (None: none pruned yet).
    object_kept_from_t: float | None = None

    def earliest(self, objects: bool) -> float:
        kept = self.object_kept_from_t if objects else self.kept_from_t
        return self.start_t if kept is None else max(self.start_t, kept)

    def pruned(self, objects: bool) -> bool:
        """Whether retention, not the history's start, sets ``earliest``."""
        return self.earliest(objects) > self.start_t


@dataclass(frozen=True)
class OutOfRange:
    """T is before what the history can answer (or there is no history)."""

    at: float
    #: The earliest time answered exactly (None: no history at all).
    earliest: float | None
    newest: float | None
    #: Retention deleted what T needs; otherwise T is before the history began.
    pruned: bool

    @property
    def message(self) -> str:
        if self.earliest is None or self.newest is None:
            return (f"no history to answer {iso_time(self.at)} from: the database keeps none (history off, or "
                    "nothing mirrored yet); only the present can be answered")
        why = "older than the history keeps (retention)" if self.pruned else "before the history began"
        return (f"{iso_time(self.at)} is {why}: it answers from {iso_time(self.earliest)} to "
                f"{iso_time(self.newest)} (and the present)")

    def to_json(self) -> dict[str, Any]:
        return {"error": "before_history", "at": self.at, "kept_from": self.earliest, "newest": self.newest,
                "pruned": self.pruned, "message": self.message}


@dataclass(frozen=True)
class NodeAt:
    """A node as it was at a time."""

    symbol: str
    layer: str
    present: bool
    cls: str
    name: str
    #: None when it was not there.
    position: Point | None
    room: str | None
    #: The position is one the history recorded (before a later move, or last seen before it vanished);
    #: otherwise it is the node's position now (see the module's precision).
    recorded: bool
    #: The last snapshot that held it (epoch seconds; the newest for a node still there), None if unknown.
    last_seen: float | None

    def to_json(self) -> dict[str, Any]:
        x, y, z = self.position if self.position is not None else (None, None, None)
        return {
            "symbol": self.symbol, "layer": self.layer, "class": self.cls, "name": self.name, "x": x, "y": y,
            "z": z, "room": self.room, "present": self.present, "recorded": self.recorded,
            "last_seen": self.last_seen, "last_seen_time": iso_time(self.last_seen) if self.last_seen else None,
        }


@dataclass(frozen=True)
class SceneAt:
    """The objects there at ``at`` (None: now), in symbol order."""

    at: float | None
    range: HistoryRange | None
    objects: tuple[NodeAt, ...]
    #: Read from one snapshot (no reconcile overlapped the read).
    whole: bool = True


def read_range(store: GraphStore) -> HistoryRange | None:
    """The history's range, None before its first snapshot (or with history off)."""
    rows = store.query(q.READ_CLOCK)
    if not rows or rows[0]["t"] is None:
        return None
    row = rows[0]
    return HistoryRange(
        start_t=float(row["start_t"]), newest_t=float(row["t"]), kept_from_t=_float(row["kept_from_t"]),
        object_kept_from_t=_float(row["object_kept_from_t"]),
    )


def check_range(history: HistoryRange | None, at: float | None, *, objects: bool) -> OutOfRange | None:
    """Why ``at`` cannot be answered exactly (None: it can; ``at`` None is now)."""
    if at is None:
        return None
    if history is None:
        return OutOfRange(at, None, None, pruned=False)
    if at >= history.newest_t or at >= history.earliest(objects):
        return None
    return OutOfRange(at, history.earliest(objects), history.newest_t, pruned=history.pruned(objects))


def scene_at(
    store: GraphStore, at: float | None, *, cls: str | None = None, room: str | None = None,
    wait_s: float = DEFAULT_WAIT_S, timeout_s: float = 60.0,
) -> SceneAt | OutOfRange:
    """The objects there at ``at`` (epoch seconds; None: now), optionally of one class (any case) or in one room;
    each of its two large queries may take ``timeout_s``."""
    refused = check_range(read_range(store), at, objects=True)
    if refused is not None:
        return refused

    def read() -> tuple[HistoryRange | None, list[Row], list[Row]]:
        history = read_range(store)
        live = store.query(q.LIVE_OBJECTS, timeout_s=timeout_s)
        events = (store.query(q.FIRST_OBJECT_EVENTS_AFTER, {"at": at}, timeout_s=timeout_s)
                  if at is not None and history is not None and at < history.newest_t else [])
        return history, live, events

    result = read_whole(store, read, wait_s=wait_s)
    history, live, events = result.value
    refused = check_range(history, at, objects=True)  # pruned meanwhile
    if refused is not None:
        return refused
    newest = history.newest_t if history is not None else None
    states: dict[str, NodeAt] = {}
    for row in live:
        state = _live_state(row, Layer.OBJECT.value, at, newest)
        if state is not None and state.symbol not in states:
            states[state.symbol] = state
    there_now = set(states)
    for symbol, first in _by_symbol(events).items():
        undone = _undo(symbol, first)
        if undone is None:
            states.pop(symbol, None)
        else:
            states[symbol] = _with_last_seen(undone, newest) if symbol in there_now else undone
    gone = [symbol for symbol, state in states.items() if symbol not in there_now and state.present]
    if gone:
        last = {str(r["symbol"]): _float(r["last_t"]) for r in store.query(q.SEEN_OF, {"symbols": gone})}
        states.update({symbol: _with_last_seen(states[symbol], last.get(symbol)) for symbol in gone})
    wanted = cls.casefold() if cls is not None else None
    objects = [s for s in states.values() if s.present
               and (wanted is None or s.cls.casefold() == wanted) and (room is None or s.room == room)]
    return SceneAt(at, history, tuple(sorted(objects, key=_symbol_order)), result.whole)


def node_at(
    store: GraphStore, symbol: str, at: float | None, *, wait_s: float = DEFAULT_WAIT_S
) -> NodeAt | OutOfRange | None:
    """One node (any layer) as it was at ``at`` (None: now); None when neither the scene nor the history
    knows ``symbol``."""

    def read() -> tuple[HistoryRange | None, tuple[Layer, Row] | None, list[Row], list[Row]]:
        history = read_range(store)
        live = _live_node(store, symbol)
        events = (store.query(q.EVENTS_OF_AFTER, {"symbol": symbol, "at": at}, timeout_s=60)
                  if at is not None and history is not None and at < history.newest_t else [])
        seen = store.query(q.SEEN_OF, {"symbols": [symbol]})
        return history, live, events, seen

    history, live, events, seen = read_whole(store, read, wait_s=wait_s).value
    layer = (live[0].value if live is not None else str(events[0]["layer"]) if events
             else str(seen[0]["layer"]) if seen and seen[0]["layer"] is not None else None)
    if layer is None:
        return None
    refused = check_range(history, at, objects=layer == Layer.OBJECT.value)
    if refused is not None:
        return refused
    newest = history.newest_t if history is not None else None
    state: NodeAt | None
    if events:
        first = [e for e in events if e["t"] == events[0]["t"]]
        state = _undo(symbol, first)
    else:
        state = _live_state(live[1], layer, at, newest, symbol=symbol) if live is not None else None
    last_seen = newest if live is not None else _float(seen[0]["last_t"]) if seen else None
    if state is None:  # not there at T
        entry = seen[0] if seen else {}
        cls = live[1]["class"] if live is not None else events[0]["class"] if events else entry.get("class")
        name = live[1]["name"] if live is not None else events[0]["name"] if events else entry.get("name")
        return NodeAt(symbol, layer, False, _text(cls), _text(name), None, None, False, last_seen)
    return _with_last_seen(state, last_seen)


def _live_node(store: GraphStore, symbol: str) -> tuple[Layer, Row] | None:
    for layer in _LOOKUP_ORDER:
        rows = store.query(q.live_node(layer), {"symbol": symbol})
        if rows:
            return layer, rows[0]
    return None


def _live_state(
    row: Row, layer: str, at: float | None, newest: float | None, *, symbol: str | None = None
) -> NodeAt | None:
    """A node there now, as it was at ``at`` given no event after it: as now, unless the operator added it
    later. None for a row without a usable symbol or position."""
    symbol = symbol if symbol is not None else row.get("symbol")
    position = _point(row, "x", "y", "z")
    if not isinstance(symbol, str) or position is None:
        return None
    added = _float(row.get("added_s"))
    if row.get("source") == OPERATOR_SOURCE and at is not None and added is not None and added > at:
        return NodeAt(symbol, layer, False, _text(row["class"]), _text(row["name"]), None, None, False, newest)
    return NodeAt(symbol, layer, True, _text(row["class"]), _text(row["name"]), position, _room(row["room"]),
                  False, newest)


def _by_symbol(events: Iterable[Row]) -> dict[str, list[Row]]:
    grouped: dict[str, list[Row]] = {}
    for event in events:
        grouped.setdefault(str(event["symbol"]), []).append(event)
    return grouped


def _undo(symbol: str, first: list[Row]) -> NodeAt | None:
    """The node as it was before its first snapshot after T did ``first`` to it; None if it was not there."""
    kinds = {str(e["kind"]): e for e in first}
    if ChangeKind.APPEARED.value in kinds:
        return None
    gone = kinds.get(ChangeKind.DISAPPEARED.value)
    moved = kinds.get(ChangeKind.MOVED.value)
    relabelled = kinds.get(ChangeKind.RELABELLED.value)
    renamed = kinds.get(ChangeKind.RENAMED.value)
    base = gone or moved or first[0]
    position = _point(moved, "from_x", "from_y", "from_z") if moved else _point(base, "x", "y", "z")
    return NodeAt(
        symbol, str(base["layer"]), True,
        _text(relabelled["from_class"] if relabelled else base["class"]),
        _text(renamed["from_name"] if renamed else base["name"]),
        position, _room(moved["from_room"] if moved else base["room"]), moved is not None or gone is not None,
        None,
    )


def _with_last_seen(state: NodeAt, last_seen: float | None) -> NodeAt:
    return NodeAt(state.symbol, state.layer, state.present, state.cls, state.name, state.position, state.room,
                  state.recorded, last_seen)


def _symbol_order(node: NodeAt) -> tuple[int, str]:
    return (len(node.symbol), node.symbol)


def _point(row: Row, *keys: str) -> Point | None:
    values = [_float(row.get(key)) for key in keys]
    if any(v is None or not math.isfinite(v) for v in values):
        return None
    x, y, z = (float(v) for v in values if v is not None)
    return (x, y, z)


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _room(value: object) -> str | None:
    return value if isinstance(value, str) else None
