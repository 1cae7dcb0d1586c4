"""Statements of the scene's history (see :mod:`heracles_ros.mirror.history` for the schema).

Event rows are lists, [symbol, kind, layer, class, name, x, y, z, from_x, from_y, from_z, from_class,
from_name, room, from_room]; Seen rows are [symbol, layer, class, name, x, y, z, first_t, first_seq].

Events fall in two pools, each pruned apart: the objects' (they carry ``object_t``, the event's ``t``
again, indexed: reads and prunes of the objects' past walk their own events only) and the rest
(places, rooms, buildings: no ``object_t``). Scans and index reads test each row's label (``'Change' IN
labels(c)``): after many deletions FalkorDB 4.16.3 returned nodes of other labels from both
(docs/known-issues.md#falkordb-label-scan-leak).
"""
from __future__ import annotations

from heracles_ros.outcomes import ChangeKind
from heracles_ros.schema import CHANGE_LABEL, CONTAINS, HISTORY_CLOCK_LABEL, SEEN_LABEL, Layer

#: Indexes: Change by time, object time and symbol, Seen by symbol and last sighting (label, property),
#: created before the first event is written (an index added to a populated label once answered a range
#: with fewer nodes than a scan). Pruning by age reads only what it deletes through the time indexes.
INDEXES: tuple[tuple[str, str], ...] = (
    (CHANGE_LABEL, "t"), (CHANGE_LABEL, "object_t"), (CHANGE_LABEL, "symbol"), (SEEN_LABEL, "symbol"),
    (SEEN_LABEL, "last_t"),
)

_CHANGE_FIELDS = (
    "symbol: r[0], kind: r[1], layer: r[2], class: r[3], name: r[4], x: r[5], y: r[6], z: r[7], from_x: r[8], "
    "from_y: r[9], from_z: r[10], from_class: r[11], from_name: r[12], room: r[13], from_room: r[14], t: $t, "
    "seq: $seq"
)
#: Events of places, rooms and buildings.
CREATE_CHANGES = f"UNWIND $rows AS r CREATE (:{CHANGE_LABEL} {{{_CHANGE_FIELDS}}})"
#: Events of objects: the same, with ``object_t``.
CREATE_OBJECT_CHANGES = f"UNWIND $rows AS r CREATE (:{CHANGE_LABEL} {{{_CHANGE_FIELDS}, object_t: $t}})"
#: Object events written before ``object_t`` existed join their pool (run once the index exists).
MARK_OBJECT_CHANGES = (
    f"MATCH (c:{CHANGE_LABEL}) WHERE '{CHANGE_LABEL}' IN labels(c) AND c.layer = '{Layer.OBJECT.value}' "
    "AND c.object_t IS NULL SET c.object_t = c.t"
)

#: A node with an event: created at its first event (first_t: r[7], the history's start for a node there
#: since then, the snapshot's time for one that appeared), updated at later ones.
SEEN_PRESENT = (
    f"UNWIND $rows AS r MERGE (s:{SEEN_LABEL} {{symbol: r[0]}}) "
    "ON CREATE SET s.first_t = r[7], s.first_seq = r[8] "
    "SET s.present = true, s.layer = r[1], s.class = r[2], s.name = r[3], s.x = r[4], s.y = r[5], s.z = r[6], "
    "s.last_t = $t, s.last_seq = $seq"
)

#: Nodes gone from the scene: last seen in the snapshot before this one (rows as SEEN_PRESENT's; a node
#: without an entry yet gets one, with where it was last).
SEEN_GONE = (
    f"UNWIND $rows AS r MERGE (s:{SEEN_LABEL} {{symbol: r[0]}}) "
    "ON CREATE SET s.first_t = r[7], s.first_seq = r[8], s.layer = r[1], s.class = r[2], s.name = r[3], "
    "s.x = r[4], s.y = r[5], s.z = r[6] "
    "SET s.present = false, s.last_t = $last_t, s.last_seq = $last_seq, s.gone_t = $t"
)

#: Where each node was recorded last (the reference a move is measured from).
READ_SEEN = f"MATCH (s:{SEEN_LABEL}) WHERE s.present = true RETURN s.symbol AS s, s.x AS x, s.y AS y, s.z AS z"

SET_CLOCK = (
    f"MERGE (h:{HISTORY_CLOCK_LABEL} {{id: 'history'}}) ON CREATE SET h.start_t = $t, h.start_seq = $seq "
    "SET h.t = $t, h.seq = $seq"
)
#: The newest snapshot, the first, and from when each pool of events is complete (null: nothing pruned yet).
READ_CLOCK = (
    f"MATCH (h:{HISTORY_CLOCK_LABEL} {{id: 'history'}}) "
    "RETURN h.t AS t, h.seq AS seq, coalesce(h.start_t, h.t) AS start_t, coalesce(h.start_seq, h.seq) AS start_seq, "
    "h.kept_from_t AS kept_from_t, h.object_kept_from_t AS object_kept_from_t"
)

COUNT_CHANGES = f"MATCH (c:{CHANGE_LABEL}) RETURN count(c) AS n"
#: Object events (read once, when a mirror starts; then counted as written and deleted).
COUNT_OBJECT_CHANGES = f"MATCH (c:{CHANGE_LABEL}) WHERE c.object_t IS NOT NULL RETURN count(c) AS n"


def _pool(objects: bool) -> tuple[str, str]:
    """The time property of a pool's events and the test that keeps to them."""
    if objects:
        return "c.object_t", "c.object_t IS NOT NULL"
    return "c.t", f"c.object_t IS NULL AND '{CHANGE_LABEL}' IN labels(c)"


def newest_before(objects: bool) -> str:
    """The newest time of a pool's events before $cutoff (null: none): what an age prune deletes up to."""
    t, _ = _pool(objects)
    test = "" if objects else " AND c.object_t IS NULL"
    return f"MATCH (c:{CHANGE_LABEL}) WHERE {t} < $cutoff{test} RETURN max({t}) AS t"


def oldest_cut(objects: bool) -> str:
    """The time of a pool's $excess-th oldest event (null: none): a count prune deletes up to it, whole
    snapshots, so the kept events are complete from that time on."""
    t, test = _pool(objects)
    return f"MATCH (c:{CHANGE_LABEL}) WHERE {test} WITH {t} AS t ORDER BY t LIMIT $excess RETURN max(t) AS t"


def delete_up_to(objects: bool) -> str:
    """Delete a pool's events at or before $t, through its time index; returns how many went."""
    t, _ = _pool(objects)
    test = "" if objects else " AND c.object_t IS NULL"
    return f"MATCH (c:{CHANGE_LABEL}) WHERE {t} <= $t{test} DELETE c RETURN count(*) AS n"


def raise_kept_from(objects: bool) -> str:
    """Record that a pool is complete from $t on only (written before its older events are deleted)."""
    field = "h.object_kept_from_t" if objects else "h.kept_from_t"
    return (
        f"MATCH (h:{HISTORY_CLOCK_LABEL} {{id: 'history'}}) "
        f"SET {field} = CASE WHEN {field} IS NULL OR {field} < $t THEN $t ELSE {field} END"
    )


PRUNE_GONE_BEFORE = f"MATCH (s:{SEEN_LABEL}) WHERE s.present = false AND s.last_t < $cutoff DELETE s"
COUNT_SEEN = f"MATCH (s:{SEEN_LABEL}) RETURN count(s) AS n"
#: Seen entries of nodes gone longest first (present ones are the scene's own: never pruned). Count caps
#: prune down to a low-water mark (history.PRUNE_TO), so this sort runs once per tenth of the cap written.
PRUNE_OLDEST_GONE = (
    f"MATCH (s:{SEEN_LABEL}) WHERE s.present = false WITH s ORDER BY s.last_t, s.symbol LIMIT $excess DELETE s"
)

_EVENT_COLUMNS = (
    "{c}.symbol AS symbol, {c}.kind AS kind, {c}.layer AS layer, {c}.class AS class, {c}.name AS name, "
    "{c}.x AS x, {c}.y AS y, {c}.z AS z, {c}.from_x AS from_x, {c}.from_y AS from_y, {c}.from_z AS from_z, "
    "{c}.from_class AS from_class, {c}.from_name AS from_name, {c}.room AS room, {c}.from_room AS from_room, "
    "{c}.t AS t, {c}.seq AS seq"
)

#: Events since a time, oldest first, optionally in one room ($room null: everywhere).
READ_CHANGES = (
    f"MATCH (c:{CHANGE_LABEL}) WHERE c.t >= $since AND ($room IS NULL OR c.room = $room) "
    f"RETURN {_EVENT_COLUMNS.format(c='c')} ORDER BY c.t, c.seq, c.symbol LIMIT $limit"
)

# --- the scene as of a time (mirror/as_of.py) --------------------------------------------------------
#: Each object's events of its first snapshot after $at (snapshots have distinct times): the object
#: events after $at through their own index, then the chosen ones through the symbol index.
FIRST_OBJECT_EVENTS_AFTER = (
    f"MATCH (c:{CHANGE_LABEL}) WHERE c.object_t > $at WITH c.symbol AS symbol, min(c.object_t) AS first "
    f"MATCH (e:{CHANGE_LABEL} {{symbol: symbol}}) WHERE e.t = first AND '{CHANGE_LABEL}' IN labels(e) "
    f"RETURN {_EVENT_COLUMNS.format(c='e')}"
)
#: One node's events after $at, oldest first (those of its first snapshot after $at lead; a snapshot
#: holds at most three events of a node).
EVENTS_OF_AFTER = (
    f"MATCH (e:{CHANGE_LABEL} {{symbol: $symbol}}) WHERE e.t > $at AND '{CHANGE_LABEL}' IN labels(e) "
    f"RETURN {_EVENT_COLUMNS.format(c='e')} ORDER BY e.t LIMIT 8"
)
#: The Seen entries of some symbols: the class, name and last sighting of nodes that are gone.
SEEN_OF = (
    f"UNWIND $symbols AS symbol MATCH (s:{SEEN_LABEL} {{symbol: symbol}}) WHERE '{SEEN_LABEL}' IN labels(s) "
    "RETURN s.symbol AS symbol, s.layer AS layer, s.class AS class, s.name AS name, s.present AS present, "
    "s.last_t AS last_t"
)
_OBJECT = Layer.OBJECT.value
_ROOM = Layer.ROOM.value
#: Every object now, with its room (Room > place > Object) and, for an operator's addition, when it was added.
LIVE_OBJECTS = (
    f"MATCH (o:{_OBJECT}) WHERE '{_OBJECT}' IN labels(o) "
    f"OPTIONAL MATCH (r:{_ROOM})-[:{CONTAINS}]->()-[:{CONTAINS}]->(o) "
    "RETURN o.nodeSymbol AS symbol, o.class AS class, o.name AS name, o.x AS x, o.y AS y, o.z AS z, "
    "o.source AS source, o.added_s AS added_s, r.nodeSymbol AS room"
)


def live_node(layer: Layer) -> str:
    """One node of ``layer`` now by $symbol (its symbol index), with the room above it (objects: two
    CONTAINS hops, places: one, rooms and buildings: none)."""
    hops = {Layer.OBJECT: 2, Layer.PLACE: 1, Layer.MESH_PLACE: 1}.get(layer, 0)
    path = f"-[:{CONTAINS}]->()" * (hops - 1) + f"-[:{CONTAINS}]->"
    room = (f"OPTIONAL MATCH (r:{_ROOM}){path}(n) RETURN r.nodeSymbol AS room, " if hops
            else "RETURN null AS room, ")
    return (
        f"MATCH (n:{layer.value} {{nodeSymbol: $symbol}}) WHERE '{layer.value}' IN labels(n) {room}"
        "n.class AS class, n.name AS name, n.x AS x, n.y AS y, n.z AS z, n.source AS source, n.added_s AS added_s"
    )


# --- examples the agent's prompt shows (the history section) -------------------------------
EXAMPLE_WHERE_BEFORE = (
    f"MATCH (c:{CHANGE_LABEL} {{symbol: 'O12', kind: '{ChangeKind.MOVED.value}'}}) "
    "RETURN c.from_x AS x, c.from_y AS y, c.from_z AS z, c.t AS t ORDER BY c.t DESC LIMIT 1"
)
EXAMPLE_ROOM_LAST_HOUR = (
    f"MATCH (h:{HISTORY_CLOCK_LABEL}) MATCH (c:{CHANGE_LABEL}) WHERE c.room = 'R2' AND c.t >= h.t - 3600 "
    "RETURN c.symbol AS symbol, c.kind AS kind, c.t AS t ORDER BY c.t"
)
