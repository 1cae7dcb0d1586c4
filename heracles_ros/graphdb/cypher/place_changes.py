"""Statements of the place-graph change log: which places, rooms and their links each mirror generation changed.

One bookkeeping node per generation that can be listed, ``(:MirrorMeta {id: 'place-changes', generation,
from_token, symbols})`` (MirrorMeta is the mirror's bookkeeping label, hidden from the model's schema):
``generation`` the one the reconcile's bump makes, ``from_token`` the MirrorMeta token it replaces (a reader
holding that token's scene may apply the entry), ``symbols`` the places and rooms that were added, changed or
removed, or at an end of a link between them that was. A generation without an entry (a first load, a
replaced scene) cannot be followed.
"""
from __future__ import annotations

from heracles_ros.schema import MIRROR_META_LABEL

_ID = "place-changes"

#: Written in the reconcile before the generation bump, so the entry is there when its generation is; entries
#: older than the ``$keep`` newest generations go in the same statement.
LOG_CHANGE = (
    f"OPTIONAL MATCH (m:{MIRROR_META_LABEL} {{id: 'mirror'}}) "
    "WITH coalesce(m.generation, 0) + 1 AS generation "
    f"CREATE (:{MIRROR_META_LABEL} {{id: '{_ID}', generation: generation, "
    "from_token: $from_token, symbols: $symbols}) "
    f"WITH generation MATCH (c:{MIRROR_META_LABEL} {{id: '{_ID}'}}) WHERE c.generation <= generation - $keep "
    "DELETE c"
)
#: The entries after generation ``$after`` up to ``$upto``, in order.
READ_CHANGES = (
    f"MATCH (c:{MIRROR_META_LABEL} {{id: '{_ID}'}}) "
    "WHERE c.generation > $after AND c.generation <= $upto "
    "RETURN c.generation AS generation, c.from_token AS from_token, c.symbols AS symbols "
    "ORDER BY c.generation"
)
