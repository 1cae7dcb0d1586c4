"""Statements of operator additions: objects the operator says exist that perception has not mapped.

An addition's record is a ``Correction`` node with ``property: 'added'`` (it lives in the
corrections overlay: the planner's stamp counts it, ``heracles db reset`` keeps it), ``target``
its symbol, ``value`` its class, ``x, y, z`` where it stands, ``near`` the node it was placed by,
``place`` and ``room`` what it is linked to, ``status`` active | retired (a perceived object
replaced it: ``replaced_by``) | reverted. While perception shows a same-class object within the
merge radius, ``candidate`` names it, ``candidate_first_s`` is the stamp of the snapshot that first
showed it and ``candidate_seen`` how many snapshots in a row have; ``returned_s`` is when a retired
addition came back because the object that replaced it disappeared. The scene node is an ``Object`` like Hydra's, with
``source: 'operator'`` (the mirror's baseline leaves such nodes out, so no snapshot deletes
them), linked as Hydra's objects are: ``(place)-[:CONTAINS]->(object)``, the place's room holding the
place (``room`` on the record names it).

Positions are compared with ``x, y, z`` arithmetic (the same on both backends); labels come
from the closed set in :mod:`heracles_ros.schema`.
"""
from __future__ import annotations

from heracles_ros.outcomes import RecordStatus
from heracles_ros.schema import ADDITION_PROPERTY as ADDED
from heracles_ros.schema import CONTAINS, CORRECTION_LABEL, MIRROR_META_LABEL, Dialect, Layer
from heracles_ros.schema import OPERATOR_SOURCE as OPERATOR

_RECORD = f"(c:{CORRECTION_LABEL} {{property: '{ADDED}'}})"
_ACTIVE, _RETIRED, _REVERTED = RecordStatus.ACTIVE.value, RecordStatus.RETIRED.value, RecordStatus.REVERTED.value
_FIELDS = (
    "c.target AS symbol, c.value AS class, c.x AS x, c.y AS y, c.z AS z, c.near AS near, c.place AS place, "
    "c.room AS room, c.status AS status, c.author AS author, c.request AS request, c.created_s AS created_s, "
    "c.updated_s AS updated_s, c.retired_s AS retired_s, c.replaced_by AS replaced_by, c.retired_why AS retired_why, "
    "c.claim AS claim, c.candidate AS candidate, c.candidate_first_s AS candidate_first_s, "
    "c.candidate_seen AS candidate_seen, c.returned_s AS returned_s"
)

ALL_ADDITIONS = f"MATCH {_RECORD} RETURN {_FIELDS} ORDER BY c.created_s"
ACTIVE_ADDITIONS = f"MATCH {_RECORD} WHERE c.status = '{_ACTIVE}' RETURN {_FIELDS} ORDER BY c.created_s"
SOME_ADDITIONS = f"UNWIND $symbols AS s MATCH {_RECORD} WHERE c.target = s RETURN {_FIELDS}"
#: Reserve a symbol: only the caller whose token the record holds owns it (two requests at once
#: cannot take the same symbol).
CLAIM_SYMBOL = (
    f"MERGE (c:{CORRECTION_LABEL} {{target: $symbol, property: '{ADDED}'}}) "
    f"ON CREATE SET c.claim = $token, c.status = '{RecordStatus.CLAIMED.value}', c.created_s = $now "
    "RETURN c.claim AS claim"
)
DROP_CLAIM = f"MATCH {_RECORD} WHERE c.target = $symbol AND c.claim = $token DELETE c"
WRITE_RECORD = (
    f"MATCH {_RECORD} WHERE c.target = $symbol AND c.claim = $token "
    "SET c.value = $class, c.original = null, c.x = $x, c.y = $y, c.z = $z, c.near = $near, c.place = $place, "
    f"c.room = $room, c.status = '{_ACTIVE}', c.created_s = $now, c.updated_s = $now, c.author = $author, "
    "c.request = $request"
)
MARK_REVERTED = (
    f"MATCH {_RECORD} WHERE c.target = $symbol "
    f"SET c.status = '{_REVERTED}', c.updated_s = $now, c.author = $author"
)
MARK_REPLACED = (
    f"UNWIND $rows AS r MATCH {_RECORD} WHERE c.target = r.symbol AND c.status = '{_ACTIVE}' "
    f"SET c.status = '{_RETIRED}', c.updated_s = $now, c.retired_s = $stamp, c.replaced_by = r.by, "
    "c.retired_why = r.why, "
    "c.candidate = null, c.candidate_first_s = null, c.candidate_seen = null"
)
#: What perception showed near each active addition this snapshot (``r.candidate`` null: nothing).
MARK_CANDIDATES = (
    f"UNWIND $rows AS r MATCH {_RECORD} WHERE c.target = r.symbol AND c.status = '{_ACTIVE}' "
    "SET c.candidate = r.candidate, c.candidate_first_s = r.first_s, c.candidate_seen = r.seen"
)
#: Retired additions whose replacing object is gone: active again (their node is written back after).
MARK_RETURNED = (
    f"UNWIND $symbols AS s MATCH {_RECORD} WHERE c.target = s AND c.status = '{_RETIRED}' "
    f"SET c.status = '{_ACTIVE}', c.updated_s = $now, c.returned_s = $stamp"
)
#: Additions perception replaced, and by what (whether that object is still there is asked apart:
#: a pattern on ``c.replaced_by`` would scan every object once per record).
REPLACED_ADDITIONS = (
    f"MATCH {_RECORD} WHERE c.status = '{_RETIRED}' AND c.replaced_by IS NOT NULL "
    "RETURN c.target AS symbol, c.replaced_by AS replaced_by"
)
#: The next addition symbol's number, taken: one counter, so a new addition never reads the others.
#: The counter is a ``MirrorMeta`` node (hidden from the model's schema; a database reset drops it).
TAKE_INDEX = f"MATCH (k:{MIRROR_META_LABEL} {{id: 'additions'}}) SET k.next = k.next + 1 RETURN k.next - 1 AS index"
#: The counter (re)started past every addition symbol in ``$next``'s favour; the number taken.
RESTART_INDEX = (
    f"MERGE (k:{MIRROR_META_LABEL} {{id: 'additions'}}) "
    "SET k.next = CASE WHEN k.next IS NULL OR k.next < $next THEN $next ELSE k.next END + 1 RETURN k.next - 1 AS index"
)
#: The highest number of an addition symbol a record holds (``$prefix`` and digits).
HIGHEST_INDEX = (
    f"MATCH (c:{CORRECTION_LABEL}) WHERE c.property = '{ADDED}' AND c.target STARTS WITH $prefix "
    "RETURN max(toInteger(substring(c.target, size($prefix)))) AS top"
)
RELINKED = f"UNWIND $rows AS r MATCH {_RECORD} WHERE c.target = r.symbol SET c.place = r.place, c.room = r.room"

#: Positions of scene nodes by symbol, each looked up through its label's index.
NODE_POSITIONS = " UNION ALL ".join(
    f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}) "
    f"RETURN s AS symbol, '{layer.value}' AS label, n.class AS class, n.x AS x, n.y AS y, n.z AS z"
    for layer in Layer
)
#: Objects of a class (compared in lower case), perceived or added, within each of ``$boxes``
#: (``{class, x0, x1, y0, y1}``): the duplicate check, through the index on ``x`` (ADDITION_INDEXES).
OBJECTS_IN_BOXES = (
    f"UNWIND $boxes AS b MATCH (o:{Layer.OBJECT.value}) WHERE o.x >= b.x0 AND o.x <= b.x1 AND o.y >= b.y0 "
    "AND o.y <= b.y1 AND toLower(o.class) = b.class "
    "RETURN o.nodeSymbol AS symbol, o.class AS class, o.x AS x, o.y AS y, o.z AS z, o.source AS source"
)
#: What keeps an addition's cost flat however many there are: records found by symbol, objects by position.
ADDITION_INDEXES = ((CORRECTION_LABEL, "target"), (Layer.OBJECT.value, "x"))
#: Perceived objects among symbols a snapshot wrote (the ones that may replace an addition).
PERCEIVED_OBJECTS = (
    f"UNWIND $symbols AS s MATCH (o:{Layer.OBJECT.value} {{nodeSymbol: s}}) WHERE o.source IS NULL "
    "RETURN o.nodeSymbol AS symbol, o.class AS class, o.x AS x, o.y AS y, o.z AS z"
)
#: Operator-added objects as they are now (a correction may have changed them) and how many places hold them.
ADDED_OBJECTS = (
    f"MATCH (a:{Layer.OBJECT.value}) WHERE a.source = '{OPERATOR}' OPTIONAL MATCH (p)-[:{CONTAINS}]->(a) "
    "RETURN a.nodeSymbol AS symbol, a.class AS class, a.x AS x, a.y AS y, a.z AS z, count(p) AS containers"
)
ANY_MESH_PLACE = f"MATCH (p:{Layer.MESH_PLACE.value}) RETURN p.nodeSymbol AS s LIMIT 1"


def nearest_place(layer: Layer) -> str:
    """The connected place of ``layer`` nearest ($x, $y, $z), its squared distance, and its rooms."""
    return (
        f"MATCH (p:{layer.value})-[:{layer.connected}]->(:{layer.value}) WITH DISTINCT p "
        "WITH p, (p.x - $x) * (p.x - $x) + (p.y - $y) * (p.y - $y) + (p.z - $z) * (p.z - $z) AS d2 "
        "ORDER BY d2 LIMIT 1 "
        f"OPTIONAL MATCH (r:{Layer.ROOM.value})-[:{CONTAINS}]->(p) "
        "RETURN p.nodeSymbol AS place, d2, collect(r.nodeSymbol) AS rooms"
    )


def create_object(dialect: Dialect) -> str:
    """The scene node of an addition (its record must be claimed by the same ``$token``)."""
    return (
        f"MATCH {_RECORD} WHERE c.target = $symbol AND c.claim = $token "
        f"CREATE (a:{Layer.OBJECT.value} {{nodeSymbol: $symbol}}) "
        "SET a.class = $class, a.name = $class, a.x = $x, a.y = $y, a.z = $z, "
        f"a.center = {dialect.point('$x', '$y', '$z')}, a.bbox_center = {dialect.point('$x', '$y', '$z')}, "
        f"a.bbox_dim = {dialect.point('0.0', '0.0', '0.0')}, a.source = '{OPERATOR}', a.author = $author, "
        "a.added_s = $now, a.request = $request"
    )


def link_object(container: Layer) -> str:
    """``(place)-[:CONTAINS]->(addition)`` for the places of ``container``'s layer named in ``$containers``."""
    return (
        f"MATCH (a:{Layer.OBJECT.value} {{nodeSymbol: $symbol}}) WHERE a.source = '{OPERATOR}' "
        f"UNWIND $containers AS s MATCH (p:{container.value} {{nodeSymbol: s}}) MERGE (p)-[:{CONTAINS}]->(a)"
    )


#: Drop an added object's links (before it is linked again).
UNLINK_OBJECT = (
    f"MATCH (c)-[e:{CONTAINS}]->(a:{Layer.OBJECT.value} {{nodeSymbol: $symbol}}) WHERE a.source = '{OPERATOR}' DELETE e"
)
#: Remove an added object and its relationships (never a perceived one: ``source`` is checked).
DELETE_OBJECT = (
    f"MATCH (a:{Layer.OBJECT.value} {{nodeSymbol: $symbol}}) WHERE a.source = '{OPERATOR}' "
    "OPTIONAL MATCH (a)-[e]-() WITH a, collect(DISTINCT e) AS links "
    "FOREACH (link IN links | DELETE link) WITH a DELETE a"
)
