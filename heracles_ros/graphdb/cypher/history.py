"""Statements of the scene's history (see :mod:`heracles_ros.mirror.history` for the schema).

Event rows are lists, [symbol, kind, layer, class, name, x, y, z, from_x, from_y, from_z, from_class,
from_name, room]; Seen rows are [symbol, layer, class, name, x, y, z, first_t, first_seq].
"""
from __future__ import annotations

from heracles_ros.outcomes import ChangeKind
from heracles_ros.schema import CHANGE_LABEL, HISTORY_CLOCK_LABEL, SEEN_LABEL

#: Indexes: Change by time and symbol, Seen by symbol and last sighting (label, property). Pruning by
#: age reads only what it deletes through the time indexes.
INDEXES: tuple[tuple[str, str], ...] = (
    (CHANGE_LABEL, "t"), (CHANGE_LABEL, "symbol"), (SEEN_LABEL, "symbol"), (SEEN_LABEL, "last_t"),
)

CREATE_CHANGES = (
    f"UNWIND $rows AS r CREATE (:{CHANGE_LABEL} {{symbol: r[0], kind: r[1], layer: r[2], class: r[3], name: r[4], "
    "x: r[5], y: r[6], z: r[7], from_x: r[8], from_y: r[9], from_z: r[10], from_class: r[11], from_name: r[12], "
    "room: r[13], t: $t, seq: $seq})"
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
READ_CLOCK = (
    f"MATCH (h:{HISTORY_CLOCK_LABEL} {{id: 'history'}}) "
    "RETURN h.t AS t, h.seq AS seq, coalesce(h.start_t, h.t) AS start_t, coalesce(h.start_seq, h.seq) AS start_seq"
)

COUNT_CHANGES = f"MATCH (c:{CHANGE_LABEL}) RETURN count(c) AS n"
PRUNE_CHANGES_BEFORE = f"MATCH (c:{CHANGE_LABEL}) WHERE c.t < $cutoff DELETE c"
PRUNE_GONE_BEFORE = f"MATCH (s:{SEEN_LABEL}) WHERE s.present = false AND s.last_t < $cutoff DELETE s"
#: Count caps prune down to a low-water mark (history.PRUNE_TO), so these sorts run once per tenth of
#: the cap written, not on every snapshot.
PRUNE_OLDEST_CHANGES = (
    f"MATCH (c:{CHANGE_LABEL}) WITH c ORDER BY c.t, c.seq, c.symbol, c.kind LIMIT $excess DELETE c"
)
COUNT_SEEN = f"MATCH (s:{SEEN_LABEL}) RETURN count(s) AS n"
#: Seen entries of nodes gone longest first (present ones are the scene's own: never pruned).
PRUNE_OLDEST_GONE = (
    f"MATCH (s:{SEEN_LABEL}) WHERE s.present = false WITH s ORDER BY s.last_t, s.symbol LIMIT $excess DELETE s"
)

#: Events since a time, oldest first, optionally in one room ($room null: everywhere).
READ_CHANGES = (
    f"MATCH (c:{CHANGE_LABEL}) WHERE c.t >= $since AND ($room IS NULL OR c.room = $room) "
    "RETURN c.symbol AS symbol, c.kind AS kind, c.layer AS layer, c.class AS class, c.name AS name, "
    "c.x AS x, c.y AS y, c.z AS z, c.from_x AS from_x, c.from_y AS from_y, c.from_z AS from_z, "
    "c.from_class AS from_class, c.from_name AS from_name, c.room AS room, c.t AS t, c.seq AS seq "
    "ORDER BY c.t, c.seq, c.symbol LIMIT $limit"
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
