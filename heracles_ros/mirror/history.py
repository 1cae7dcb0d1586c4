"""The scene's memory: what changed and when, recorded from the mirror's own diffs.

Hydra overwrites positions and forgets what vanished; the mirror already knows
every difference between snapshots, so it writes the ones that matter here.
Schema (linked to nothing, keyed by ``symbol`` rather than ``nodeSymbol``, so
present-tense queries such as ``MATCH (o:Object)`` never see it):

- ``(:Change {symbol, kind, t, seq, layer, class, name, x, y, z, from_x, from_y, from_z, from_class,
  from_name, room, from_room, object_t})``: one event; ``kind`` is appeared, disappeared, moved, relabelled or
  renamed; ``t`` the snapshot's time (seconds since the Unix epoch, UTC; strictly increasing from snapshot to
  snapshot, see below), ``seq`` its sequence number; x, y, z where the node is (was, for disappeared), from_*
  what it was before (moved, relabelled, renamed); ``room`` the symbol of the room that contained it then
  (null when none), ``from_room`` the one that held it in the snapshot before a move; ``object_t`` is ``t``
  again on an object's event only (the objects' events are a pool of their own, see retention).
- ``(:Seen {symbol, layer, class, name, x, y, z, first_t, first_seq, last_t, last_seq, present, gone_t})``:
  one per node that appeared, changed or vanished since the history began; x, y, z its last recorded
  position; last_t the last snapshot that held it (for a node still present: the snapshot of its last
  change; it is in the scene now, see HistoryClock.t). A node there since the history began and never
  changed has no entry: its first sighting is HistoryClock.start_t.
- ``(:HistoryClock {id: 'history', t, seq, start_t, start_seq, kept_from_t, object_kept_from_t})``: the
  newest snapshot's time and sequence, those of the first (where the history began), and from when the
  events of places and rooms, and of objects, are complete (null until pruning first deleted some).

A move counts only beyond ``move_threshold_m`` from the position last recorded
(so loop-closure re-optimisation, which nudges everything a little, writes
nothing, and a slow drift is caught once it adds up). Retention is bounded by
age and by count: the objects' events and the others' have a cap each, so the
places' churn (most of a large scene's events) never prunes what the objects
did; Seen entries too (those of nodes gone longest go first; a node in the
scene keeps its entry). Pruning runs as events are written, at a cost that does
not grow with the history, and deletes whole snapshots' events, raising the
pool's ``kept_from_t`` first (see ``_prune``): the scene as of any time from
there on is exact (:mod:`heracles_ros.mirror.as_of`). Snapshot times are made
strictly increasing: a stamp at or before the newest (a replayed bag, a file
loaded with an older time) is recorded 1 ms after it, with a warning the first
time one goes back, so "the first snapshot after T" is always one snapshot. The first snapshot a
history sees (no HistoryClock yet) is its starting point: it writes no entry
per node, so a first load of a large map costs the history one statement
(an entry per node cost 0.4 s on a 16k-node scene, half the database's own
insert). A node without an entry is measured from its position in the
mirror's baseline, which in a running mirror is where it was at the start;
after a restart it is where the database holds it, so a drift below the
threshold before the restart is not added to one after it.
"""
from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from heracles_ros.errors import ConfigError, DatabaseError
from heracles_ros.graphdb.cypher import history as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.indexes import ensure_indexes
from heracles_ros.outcomes import ChangeKind
from heracles_ros.scene.tables import NodeRow, SceneTables, id_of, symbol_of
from heracles_ros.schema import Layer

log = logging.getLogger(__name__)

Point = tuple[float, float, float]
#: One thing a snapshot did to a node: (kind, node id, its row, its row before for a relabel or rename).
_Found = tuple[ChangeKind, int, NodeRow, NodeRow | None]
#: Rows per statement and statements per transaction (as the mirror's own writes).
_ROWS_PER_STATEMENT = 5000
#: A count cap, once passed, prunes down to this share of itself.
PRUNE_TO = 0.9
#: A snapshot stamped at or before the newest is recorded this much after it.
STEP_S = 0.001
_STATEMENTS_PER_TRANSACTION = 8


@dataclass(frozen=True)
class HistorySettings:
    """``max_age_s`` / ``max_changes`` / ``max_object_changes`` / ``max_seen``: 0 means no limit of that kind."""

    enabled: bool = True
    move_threshold_m: float = 0.5
    max_age_s: float = 30 * 86400.0
    #: Events of places, rooms and buildings kept at most.
    max_changes: int = 200_000
    #: Events of objects kept at most: a cap of their own, so the places' churn never prunes them (an hour
    #: of 1 % churn of the kilometre-scale scene writes about 11,000).
    max_object_changes: int = 50_000
    #: Seen entries kept at most (those of nodes gone longest are pruned first; 0: no count limit).
    max_seen: int = 100_000

    def __post_init__(self) -> None:
        if not (self.move_threshold_m >= 0 and math.isfinite(self.move_threshold_m)):
            raise ConfigError(f"move_threshold_m must be a finite number >= 0, got {self.move_threshold_m!r}")
        if not self.max_age_s >= 0:
            raise ConfigError(f"history max_age_s must be >= 0 (0: no age limit), got {self.max_age_s!r}")
        if self.max_changes < 0:
            raise ConfigError(f"history max_changes must be >= 0 (0: no count limit), got {self.max_changes!r}")
        if self.max_object_changes < 0:
            raise ConfigError("history max_object_changes must be >= 0 (0: no count limit), got "
                              f"{self.max_object_changes!r}")
        if self.max_seen < 0:
            raise ConfigError(f"history max_seen must be >= 0 (0: no count limit), got {self.max_seen!r}")


@dataclass(frozen=True)
class ChangeEvent:
    """One Change node, as written and as read back."""

    symbol: str
    kind: ChangeKind
    layer: str
    cls: str
    name: str
    position: Point
    t: float
    seq: int
    from_position: Point | None = None
    from_class: str | None = None
    from_name: str | None = None
    room: str | None = None
    #: The room that held the node in the snapshot before a move.
    from_room: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "symbol": self.symbol, "kind": self.kind.value, "layer": self.layer, "class": self.cls, "name": self.name,
            "position": list(self.position), "t": self.t, "time": iso_time(self.t), "seq": self.seq,
            "room": self.room,
        }
        if self.from_position is not None:
            out["from_position"] = list(self.from_position)
            out["distance_m"] = round(math.dist(self.position, self.from_position), 3)
            out["from_room"] = self.from_room
        if self.from_class is not None:
            out["from_class"] = self.from_class
        if self.from_name is not None:
            out["from_name"] = self.from_name
        return out

    def row(self) -> list[Any]:
        fx, fy, fz = self.from_position if self.from_position is not None else (None, None, None)
        return [self.symbol, self.kind.value, self.layer, self.cls, self.name, *self.position, fx, fy, fz,
                self.from_class, self.from_name, self.room, self.from_room]


def iso_time(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


def record_time(seconds: float) -> str:
    """When a correction's or addition's record changed, to the second (ISO 8601 UTC); '' for never (0)."""
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="seconds") if seconds else ""


class History:
    """Writes the events of each reconcile; holds the last recorded position of every present node."""

    def __init__(self, store: GraphStore, settings: HistorySettings | None = None):
        self.store = store
        self.settings = settings or HistorySettings()
        self._anchors: dict[int, Point] | None = None
        self._clock: tuple[float, int] | None = None
        #: Time and sequence of the history's first snapshot (the first sighting of a node without an entry).
        self._start: tuple[float, int] = (0.0, 0)
        #: Events kept, by pool: objects' (True) and the others' (False).
        self._counts: dict[bool, int] = {True: 0, False: 0}
        self._schema_ready = False
        self._warned_backwards = False

    def forget(self) -> None:
        """Read the database again before the next record (after a failure or another writer)."""
        self._anchors = None
        self._clock = None

    def use_store(self, store: GraphStore) -> None:
        self.store = store
        self._schema_ready = False
        self.forget()

    def record(
        self, old: SceneTables, new: SceneTables, *, added: set[int], changed: list[int], removed: set[int],
        stamp_s: float, sequence: int,
    ) -> list[ChangeEvent]:
        """Write the events of one reconcile (``added``/``changed``/``removed`` as the diff found them)."""
        if not self.settings.enabled:
            return []
        try:
            return self._record(old, new, added, changed, removed, stamp_s, sequence)
        except DatabaseError:
            self.forget()
            raise

    def _record(
        self, old: SceneTables, new: SceneTables, added: set[int], changed: list[int], removed: set[int],
        stamp_s: float, sequence: int,
    ) -> list[ChangeEvent]:
        self._ensure_loaded()
        anchors = self._anchors
        assert anchors is not None
        t = self._snapshot_time(stamp_s)
        relayered = added & removed  # moved to another layer: the same node, compared like a changed one
        appeared = [i for i in added if i not in relayered]
        vanished = [i for i in removed if i not in relayered]
        if self._clock is None:  # the history starts here: what is there now is its baseline, not news
            self._start = (t, sequence)
            appeared = []
            anchors.update((node_id, _point(row)) for node_id, row in new.nodes.items())
        found = self._found(old, new, appeared, vanished, [*changed, *relayered])
        written = self._events(found, old, new, t, sequence)
        objects = [e.row() for e in written if e.layer == Layer.OBJECT.value]
        others = [e.row() for e in written if e.layer != Layer.OBJECT.value]
        statements: list[tuple[str, dict[str, Any]]] = [(q.SET_CLOCK, {"t": t, "seq": sequence})]
        # One CREATE per pool, split here: a CREATE filtered by a test of its row creates only the rows passing it.
        for create, rows in ((q.CREATE_OBJECT_CHANGES, objects), (q.CREATE_CHANGES, others)):
            statements += [(create, {"rows": chunk, "t": t, "seq": sequence}) for chunk in _chunks(rows)]
        statements += self._seen_statements(found, old, new, set(appeared), vanished, t, sequence)
        for start in range(0, len(statements), _STATEMENTS_PER_TRANSACTION):
            self.store.write_many(statements[start : start + _STATEMENTS_PER_TRANSACTION], timeout_s=120)
        self._clock = (t, sequence)
        for kind, node_id, row, _ in found:
            if kind is ChangeKind.APPEARED or kind is ChangeKind.MOVED:
                anchors[node_id] = _point(row)
        for node_id in vanished:
            anchors.pop(node_id, None)
        if written:
            self._counts[True] += len(objects)
            self._counts[False] += len(others)
            self._prune(t)
        return written

    def _snapshot_time(self, stamp_s: float) -> float:
        """``stamp_s``, or 1 ms after the newest snapshot when it is not later (times strictly increase)."""
        if self._clock is None or stamp_s > self._clock[0]:
            return stamp_s
        newest = self._clock[0]
        if stamp_s < newest and not self._warned_backwards:
            self._warned_backwards = True
            log.warning("a snapshot stamped %s is older than the history's newest (%s): it and any other such are "
                        "recorded just after the newest, so the history's times keep their order (a replayed "
                        "bag? a scene file loaded with an older --time?)", iso_time(stamp_s), iso_time(newest))
        return newest + STEP_S

    def _found(
        self, old: SceneTables, new: SceneTables, appeared: list[int], vanished: list[int], compared: list[int]
    ) -> list[_Found]:
        """What happened to each node the diff names: it appeared or disappeared; or, in both snapshots, it was
        relabelled, renamed, or moved beyond the threshold from its last recorded position."""
        anchors = self._anchors
        assert anchors is not None
        found: list[_Found] = [(ChangeKind.APPEARED, node_id, new.nodes[node_id], None) for node_id in appeared]
        found += [(ChangeKind.DISAPPEARED, node_id, old.nodes[node_id], None) for node_id in vanished]
        for node_id in compared:
            row, before = new.nodes[node_id], old.nodes.get(node_id)
            if before is None:
                continue
            if before[1] != row[1]:
                found.append((ChangeKind.RELABELLED, node_id, row, before))
            if before[2] != row[2]:
                found.append((ChangeKind.RENAMED, node_id, row, before))
            anchor = anchors.setdefault(node_id, _point(before))  # no entry: where the baseline had it
            if math.dist(anchor, row[3:6]) > self.settings.move_threshold_m:
                found.append((ChangeKind.MOVED, node_id, row, None))
        return found

    def _events(
        self, found: list[_Found], old: SceneTables, new: SceneTables, t: float, sequence: int
    ) -> list[ChangeEvent]:
        """The Change events to write, each with the room that held its node (from the anchors as they were);
        a move also with the room that held it in the snapshot before."""
        anchors = self._anchors
        assert anchors is not None
        ids = {node_id for _, node_id, _, _ in found}
        present = {node_id for node_id in ids if node_id in new.nodes}
        moved = {node_id for kind, node_id, _, _ in found if kind is ChangeKind.MOVED}
        rooms_now = _rooms(present, new)
        rooms_before = _rooms((ids - present) | moved, old)  # one walk of the old tables for both
        return [
            ChangeEvent(
                symbol_of(node_id), kind, row[0].value, row[1], row[2], _point(row), t, sequence,
                from_position=anchors.get(node_id) if kind is ChangeKind.MOVED else None,
                from_class=before[1] if kind is ChangeKind.RELABELLED and before else None,
                from_name=before[2] if kind is ChangeKind.RENAMED and before else None,
                room=rooms_now.get(node_id) if node_id in present else rooms_before.get(node_id),
                from_room=rooms_before.get(node_id) if kind is ChangeKind.MOVED else None,
            )
            for kind, node_id, row, before in found
        ]

    def _seen_statements(
        self, found: list[_Found], old: SceneTables, new: SceneTables, fresh: set[int], vanished: list[int],
        stamp_s: float, sequence: int,
    ) -> list[tuple[str, dict[str, Any]]]:
        """The Seen entries of the nodes an event names: present ones as the new snapshot has them (first seen
        now if they appeared, else when the history began), vanished ones as the last snapshot that held them."""
        start_t, start_seq = self._start
        last_t, last_seq = self._clock or (stamp_s, sequence)
        statements: list[tuple[str, dict[str, Any]]] = []
        present = {i for kind, i, _, _ in found if kind is not ChangeKind.DISAPPEARED}
        if present:
            rows = [
                [symbol_of(i), *_seen_row(new.nodes[i]), *((stamp_s, sequence) if i in fresh else self._start)]
                for i in present
            ]
            statements += [
                (q.SEEN_PRESENT, {"rows": chunk, "t": stamp_s, "seq": sequence}) for chunk in _chunks(rows)
            ]
        if vanished:
            rows = [[symbol_of(i), *_seen_row(old.nodes[i]), start_t, start_seq] for i in vanished]
            statements += [
                (q.SEEN_GONE, {"rows": chunk, "t": stamp_s, "last_t": last_t, "last_seq": last_seq})
                for chunk in _chunks(rows)
            ]
        return statements

    def size(self) -> dict[str, int]:
        """Change events (all, and the objects' among them) and Seen entries the database holds."""
        changes = self.store.query(q.COUNT_CHANGES)
        objects = self.store.query(q.COUNT_OBJECT_CHANGES)
        seen = self.store.query(q.COUNT_SEEN)
        return {"changes": _count(changes), "object_changes": _count(objects), "seen": _count(seen)}

    def _prune(self, now: float) -> None:
        """Per pool (objects', the others'): by age, what is older goes, read through the time indexes; by
        count, past its cap, the oldest snapshots' events go until at most PRUNE_TO of it remain, so the
        sort that finds them runs once per tenth of the cap, not per snapshot. Seen entries: past their cap,
        those of nodes gone longest."""
        settings = self.settings
        for objects, cap in ((True, settings.max_object_changes), (False, settings.max_changes)):
            if settings.max_age_s > 0:
                self._cut(objects, q.newest_before(objects), {"cutoff": now - settings.max_age_s})
            if cap > 0 and self._counts[objects] > cap:
                self._cut(objects, q.oldest_cut(objects), {"excess": self._counts[objects] - int(cap * PRUNE_TO)})
        if settings.max_age_s > 0:
            self.store.write(q.PRUNE_GONE_BEFORE, {"cutoff": now - settings.max_age_s}, timeout_s=120)
        if settings.max_seen > 0:
            seen = _count(self.store.query(q.COUNT_SEEN))  # a label count: the databases keep it, nothing is scanned
            if seen > settings.max_seen:
                self.store.write(q.PRUNE_OLDEST_GONE, {"excess": seen - int(settings.max_seen * PRUNE_TO)},
                                 timeout_s=120)

    def _cut(self, objects: bool, find: str, params: dict[str, Any]) -> None:
        """Delete a pool's events up to the time ``find`` answers (whole snapshots), after recording that the
        pool is complete from that time on only: an as-of read never trusts a range that lost events."""
        rows = self.store.query(find, params, timeout_s=120)
        up_to = rows[0]["t"] if rows else None
        if up_to is None:
            return
        self.store.write(q.raise_kept_from(objects), {"t": up_to})
        deleted = self.store.write(q.delete_up_to(objects), {"t": up_to}, timeout_s=120)
        self._counts[objects] = max(0, self._counts[objects] - _count(deleted))

    def _ensure_loaded(self) -> None:
        if not self._schema_ready:
            ensure_indexes(self.store, q.INDEXES)
            self.store.write(q.MARK_OBJECT_CHANGES, timeout_s=120)  # a history from before object_t, once
            self._schema_ready = True
        if self._anchors is None:
            anchors: dict[int, Point] = {}
            for row in self.store.query(q.READ_SEEN, timeout_s=120):
                symbol = row["s"]
                if isinstance(symbol, str) and all(isinstance(row[k], (int, float)) for k in "xyz"):
                    anchors[id_of(symbol)] = (float(row["x"]), float(row["y"]), float(row["z"]))
            self._anchors = anchors
            clock = self.store.query(q.READ_CLOCK)
            newest = clock[0] if clock and clock[0]["t"] is not None else None
            self._clock = (float(newest["t"]), int(newest["seq"])) if newest else None
            self._start = (float(newest["start_t"]), int(newest["start_seq"])) if newest else (0.0, 0)
            objects = _count(self.store.query(q.COUNT_OBJECT_CHANGES, timeout_s=120))
            self._counts = {True: objects, False: max(0, _count(self.store.query(q.COUNT_CHANGES)) - objects)}


def _count(rows: list[dict[str, Any]]) -> int:
    return int(rows[0]["n"]) if rows and rows[0]["n"] is not None else 0


def _chunks(rows: list[Any]) -> list[list[Any]]:
    return [rows[start : start + _ROWS_PER_STATEMENT] for start in range(0, len(rows), _ROWS_PER_STATEMENT)]


def _point(row: NodeRow) -> Point:
    return (float(row[3]), float(row[4]), float(row[5]))


def _seen_row(row: NodeRow) -> list[Any]:
    return [row[0].value, row[1], row[2], *_point(row)]


def _rooms(wanted: set[int], tables: SceneTables) -> dict[int, str]:
    """The room that contains each of ``wanted`` (through its place) in ``tables``: a walk up the tables' parent
    index, carried from snapshot to snapshot by the mirror's diffs (no pass over the edges)."""
    return {node: symbol_of(room) for node, room in tables.rooms(wanted).items()} if wanted else {}


def read_changes(store: GraphStore, *, since: float, room: str | None = None, limit: int = 1000) -> list[ChangeEvent]:
    """Change events at or after ``since`` (epoch seconds), oldest first, optionally in one room."""
    events = []
    for r in store.query(q.READ_CHANGES, {"since": since, "room": room, "limit": limit}, timeout_s=60):
        moved = r["from_x"] is not None
        events.append(ChangeEvent(
            str(r["symbol"]), ChangeKind(r["kind"]), str(r["layer"]), str(r["class"]), str(r["name"]),
            (float(r["x"]), float(r["y"]), float(r["z"])), float(r["t"]), int(r["seq"]),
            from_position=(float(r["from_x"]), float(r["from_y"]), float(r["from_z"])) if moved else None,
            from_class=r["from_class"], from_name=r["from_name"], room=r["room"], from_room=r["from_room"],
        ))
    return events


def read_clock(store: GraphStore) -> float | None:
    """The newest snapshot's time (epoch seconds), None before the first."""
    rows = store.query(q.READ_CLOCK)
    return float(rows[0]["t"]) if rows and rows[0]["t"] is not None else None
