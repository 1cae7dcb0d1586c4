"""Is there a scene where a reader looks? A misspelt graph name must not read as an empty room.

FalkorDB answers a read of a graph that does not exist with no rows, and a
write creates it: a wrong ``--graph`` or ``graph_name`` gave "0 bags" and a
dispatcher on a misspelt graph made a new one. Readers ask here first; the
answer names the graph, what the server holds instead, and how to fix it.
"""
from __future__ import annotations

import time
from collections.abc import Callable

from heracles_ros.errors import NoScene
from heracles_ros.graphdb.cypher import admin as q
from heracles_ros.graphdb.store import GraphStore

#: How to fill a graph, for the messages.
HOW_TO_FILL = "start the dsg_mirror node on it, or 'heracles load SCENE_FILE --graph NAME'"


def graph_exists(store: GraphStore) -> bool:
    """Whether the store's graph exists (always True where the database is the graph); creates nothing."""
    names = store.graph_names()
    return names is None or store.graph_name in names


def require_graph(store: GraphStore, *, reader: str) -> None:
    """NoScene(missing=True) unless the store's graph exists; ``reader`` says who needed it."""
    names = store.graph_names()
    if names is None or store.graph_name in names:
        return
    held = f"the server holds {', '.join(repr(name) for name in names)}" if names else "the server holds no graph"
    raise NoScene(f"{reader}: {store.description} does not exist ({held}); check the graph name (--graph, or "
                  f"graph_name: the mirror's), or {HOW_TO_FILL}", missing=True)


def misspelt_graph_suspected(store: GraphStore) -> bool:
    """The store's graph is missing while the server holds others: a writer would create a stray graph.

    A server holding no graph at all is a fresh database: the first writer creates the graph, whoever it is.
    """
    names = store.graph_names()
    return bool(names) and store.graph_name not in (names or [])


def wait_for_graph(store: GraphStore, wait_s: float, *, reader: str, stopping: Callable[[], bool],
                   period_s: float = 0.5) -> None:
    """Wait up to ``wait_s`` for the store's graph to exist (a mirror starting beside the reader creates
    it), giving up early once ``stopping()``; NoScene(missing=True) when it never appears."""
    deadline = time.monotonic() + wait_s
    while not graph_exists(store) and time.monotonic() < deadline and not stopping():
        time.sleep(min(period_s, max(0.0, deadline - time.monotonic())))
    require_graph(store, reader=reader)


def require_scene(store: GraphStore, *, reader: str) -> None:
    """NoScene unless the store's graph exists and holds at least one mirrored scene node."""
    require_graph(store, reader=reader)
    if not store.query(q.ANY_SCENE_NODE):
        raise NoScene(f"{reader}: {store.description} holds no scene (no mirrored node): a misspelt graph name, or "
                      f"nothing mirrored yet; {HOW_TO_FILL}", missing=False)
