"""The place-graph change log the mirror keeps for its readers (the planner's place-graph cache).

A reader holding the place graph of one generation reads the entries after it and re-reads only the places
and rooms they name, instead of the whole graph (at 10^5 places a whole read takes seconds, Hydra sends a
snapshot a second). Written from the diff each reconcile writes anyway; the newest :data:`KEEP` generations
are kept, and a reader further behind, or at a generation without an entry, reads the whole graph.
"""
from __future__ import annotations

from heracles_ros.graphdb.cypher import place_changes as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.scene_diff import SceneDiff
from heracles_ros.scene.tables import edge_ends, symbol_of
from heracles_ros.schema import Layer

#: Generations whose entries are kept (a few minutes of Hydra's snapshots).
KEEP = 256
#: More changed symbols than this are not listed: a reader reads the whole graph anyway.
MAX_SYMBOLS = 20_000
_PLACE_GRAPH_LAYERS = frozenset({Layer.MESH_PLACE, Layer.PLACE, Layer.ROOM})



def changed_symbols(diff: SceneDiff) -> set[str]:
    """Places and rooms the diff adds, changes or removes, and both ends of each link between two of them it
    adds or removes."""
    layer_of = {**{i: row[0] for i, row in diff.old_rows.items()}, **{i: row[0] for i, row in diff.rows.items()}}
    ids = {i for i in (*diff.upserted_ids, *diff.removed_nodes) if layer_of.get(i) in _PLACE_GRAPH_LAYERS}
    for key in diff.added_edges | diff.removed_edges:
        a, b = edge_ends(key)
        if layer_of.get(a) in _PLACE_GRAPH_LAYERS and layer_of.get(b) in _PLACE_GRAPH_LAYERS:
            ids.update((a, b))
    return {symbol_of(i) for i in ids}


def record(store: GraphStore, diff: SceneDiff, token: str | None, *, whole: bool) -> None:
    """Write the entry for the generation the reconcile's bump makes next (pruning old ones), unless the change
    is ``whole`` (the reconcile replaces the scene, or diffs against a database a stopped reconcile left
    half-written: what that one wrote is in no entry), has no token to chain from (a first load), or is too large
    to list: a generation without an entry makes its readers read the whole graph."""
    symbols = sorted(changed_symbols(diff)) if not whole and token is not None else []
    if whole or token is None or len(symbols) > MAX_SYMBOLS:
        return
    store.write(q.LOG_CHANGE, {"from_token": token, "symbols": symbols, "keep": KEEP})
