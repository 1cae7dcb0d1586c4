"""Statements the mirror and the admin commands send.

Labels and relationship types cannot be query parameters, so statements that
need them are built here from the closed sets in :mod:`heracles_ros.schema` (never from
input text).
"""
from __future__ import annotations

from heracles_ros.schema import (
    MIRROR_META_LABEL,
    Dialect,
    Layer,
)


def create_index(dialect: Dialect, label: str, prop: str) -> str:
    """Neo4j skips an existing index itself; FalkorDB refuses one: ask ``falkordb_indexes.INDEXES`` first."""
    if dialect.name == "neo4j":
        return f"CREATE INDEX {label.lower()}_{prop.lower()} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})"
    return f"CREATE INDEX FOR (n:{label}) ON (n.{prop})"


#: Node rows are lists, [symbol, class, name, x, y, z] plus [bbox centre x, y, z, bbox size x, y, z]
#: for objects: shorter to encode and parse than maps (see mirror.node_params).
def _node_sets(dialect: Dialect, layer: Layer) -> str:
    sets = (
        "n.class = r[1], n.name = r[2], n.x = r[3], n.y = r[4], n.z = r[5], "
        f"n.center = {dialect.point('r[3]', 'r[4]', 'r[5]')}"
    )
    if layer is Layer.OBJECT:
        sets += (
            f", n.bbox_center = {dialect.point('r[6]', 'r[7]', 'r[8]')}"
            f", n.bbox_dim = {dialect.point('r[9]', 'r[10]', 'r[11]')}"
        )
    return sets


def upsert_nodes(dialect: Dialect, layer: Layer) -> str:
    """MERGE on nodeSymbol, then SET every mirrored property (never MERGE on a property map)."""
    return f"UNWIND $rows AS r MERGE (n:{layer.value} {{nodeSymbol: r[0]}}) SET {_node_sets(dialect, layer)}"


def create_nodes(dialect: Dialect, layer: Layer) -> str:
    """For nodes known to be absent (the label held none of them when the diff was made)."""
    return f"UNWIND $rows AS r CREATE (n:{layer.value} {{nodeSymbol: r[0]}}) SET {_node_sets(dialect, layer)}"


def delete_links(layer: Layer, *, outgoing: bool) -> str:
    """The relationships of the nodes :func:`delete_nodes` deletes next, leaving (or else entering) them.

    Deleted before the nodes, one plain pattern per direction: a batch ``DETACH DELETE`` over the
    kilometre-scale scene left FalkorDB 4.16 with deleted nodes in its label scans in 7 of 13 runs
    (their properties "undefined", returning them whole segfaulted the server, and it persisted
    across restarts); deleting the relationships first did not
    (docs/known-issues.md#falkordb-detach-delete). Plain patterns keep it linear: 15,945 mesh places
    with their edges go in 0.4 s, where collecting the distinct relationships of a batch in one
    statement grouped the rows by the whole batch and took 20 s.
    """
    arrow = "-[e]->()" if outgoing else "<-[e]-()"
    return f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}){arrow} DELETE e"


def delete_nodes(layer: Layer) -> str:
    """Delete nodes whose relationships :func:`delete_links` deleted."""
    return f"UNWIND $symbols AS s MATCH (n:{layer.value} {{nodeSymbol: s}}) DELETE n"


#: Edge rows are [source symbol, target symbol]. Connectivity (``both_ways``) is written and
#: deleted in both directions, as the reference system stores it, from one row.
def merge_edges(source: Layer, target: Layer, relation: str, *, both_ways: bool = False) -> str:
    back = f" MERGE (b)-[:{relation}]->(a)" if both_ways else ""
    return (
        f"UNWIND $rows AS r MATCH (a:{source.value} {{nodeSymbol: r[0]}}) "
        f"MATCH (b:{target.value} {{nodeSymbol: r[1]}}) MERGE (a)-[:{relation}]->(b){back}"
    )


def create_edges(source: Layer, target: Layer, relation: str, *, both_ways: bool = False) -> str:
    """For edges between nodes created in the same reconcile: they cannot exist yet."""
    back = f", (b)-[:{relation}]->(a)" if both_ways else ""
    return (
        f"UNWIND $rows AS r MATCH (a:{source.value} {{nodeSymbol: r[0]}}) "
        f"MATCH (b:{target.value} {{nodeSymbol: r[1]}}) CREATE (a)-[:{relation}]->(b){back}"
    )


def delete_edges(source: Layer, target: Layer, relation: str, *, both_ways: bool = False) -> str:
    arrow = "-" if both_ways else "->"
    return (
        f"UNWIND $rows AS r MATCH (a:{source.value} {{nodeSymbol: r[0]}})-[e:{relation}]{arrow}"
        f"(b:{target.value} {{nodeSymbol: r[1]}}) DELETE e"
    )


def read_nodes(layer: Layer) -> str:
    """Mirrored rows of one layer, in the shape the diff compares (points come back as 3-sequences).

    Objects also return their ``source``: the operator's additions are not Hydra's (the mirror leaves them out).
    The label is tested again on each row: FalkorDB 4.16.3's label scans return nodes of other labels after
    enough deletions (docs/known-issues.md#falkordb-label-scan-leak), and a place read back as an object
    would be diffed, and deleted, as one.
    """
    extra = ", n.bbox_center AS bc, n.bbox_dim AS bd, n.source AS source" if layer is Layer.OBJECT else ""
    return (
        f"MATCH (n:{layer.value}) WHERE '{layer.value}' IN labels(n) RETURN n.nodeSymbol AS s, n.class AS c, "
        f"n.name AS name, n.x AS x, n.y AS y, n.z AS z, n.center AS center{extra}"
    )


def read_edges(relation: str) -> str:
    """Every relationship of one type between nodes with symbols, as "A B" strings in one list.

    One list of strings parses ~3x faster in the client than a row per edge
    (a restarted mirror reads ~50k edges of a kilometre-scale scene).
    """
    return f"MATCH (a)-[:{relation}]->(b) RETURN collect(a.nodeSymbol + ' ' + b.nodeSymbol) AS pairs"


# --- mirror bookkeeping ---------------------------------------------------------
#: Set before the first statement of a reconcile that changes anything; BUMP_GENERATION clears it
#: after the last (see :mod:`heracles_ros.mirror.snapshot_reads`).
BEGIN_UPDATE = f"MERGE (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) SET m.writing = true"
#: ``token`` is new with every bump (whoever bumps): a mirror that finds another token than the one it wrote last
#: (a reset deleted the node, a restore brought back an older one, another writer bumped it) reads
#: the database again; ``previous`` tells it whether that happened during its own reconcile.
BUMP_GENERATION = (
    f"MERGE (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) "
    "WITH m, m.token AS previous "
    "SET m.generation = coalesce(m.generation, 0) + 1, m.sequence = $sequence, m.updated_s = $now, "
    "m.writing = false, m.token = randomUUID() "
    "RETURN m.generation AS generation, previous, m.token AS token"
)
#: What a reader compares before and after its query: the same generation, not being written.
READ_STAMP = f"MATCH (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) RETURN m.generation AS generation, m.writing AS writing"
READ_META = (
    f"MATCH (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) "
    "RETURN m.generation AS generation, m.sequence AS sequence, m.token AS token"
)
