"""The place graph the robot walks on, read from the database once, then kept up with the mirror's changes.

Spot walks on the ground, so the mesh places (2D traversability, label ``MeshPlace``) and
their ``MESH_PLACE_CONNECTED`` edges are the navigation graph; 3D places
(label ``Place``) hang off it, each joined to its nearest mesh place on the ground plane by
one edge (a leaf, so no path passes through free space) when that is within
:data:`~heracles_ros.plan_types.MAX_HOP_M`, the farthest hop off the graph the dispatcher takes.
A scene without mesh places navigates on its 3D places instead. Edge weights are Euclidean lengths.

Loading costs one pass over the scene's places (seconds at 10^5). After that a
new mirror generation re-reads only the places and rooms the mirror's change log
names (:mod:`heracles_ros.mirror.place_changes`) and rebuilds the arrays from the
kept tables (:func:`updated`). Everything per plan works on the arrays: shortest
paths between the few places a plan needs (:mod:`.paths`) and nearest places by
k-d tree.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, dijkstra
from scipy.spatial import cKDTree

from heracles_ros.graphdb.cypher import planning as cypher
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.plan_types import MAX_HOP_M
from heracles_ros.schema import Layer

log = logging.getLogger(__name__)

#: Shortest edge weight: csgraph must not see a zero-length edge as "no edge".
_MIN_EDGE = 1e-6


@dataclass
class PlaceGraph:
    """Places (navigation places first, then leaves) with positions, edges, rooms."""

    symbols: list[str]
    positions: np.ndarray  # (n, 3)
    matrix: csr_matrix  # symmetric edge weights, metres
    nav_layer: Layer | None
    nav_count: int
    #: Room symbol -> indices of its places.
    room_places: dict[str, np.ndarray]
    #: Room symbol -> its places with a neighbour outside the room (where a walk enters it).
    room_boundary: dict[str, np.ndarray]
    room_positions: dict[str, tuple[float, float, float]]
    #: Index of the (first) room of each place, -1 when none.
    room_of: np.ndarray
    component: np.ndarray
    #: What the graph was built from, where it was read from a database (see :func:`updated`).
    tables: PlaceTables | None = None
    index: dict[str, int] = field(init=False)
    room_names: list[str] = field(init=False)
    _tree: Any = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.index = {s: i for i, s in enumerate(self.symbols)}
        self.room_names = list(self.room_places)

    @property
    def size(self) -> int:
        return len(self.symbols)

    def nearest_place(self, position: Sequence[float]) -> int | None:
        """Index of the navigation place nearest ``position`` (None when there are none)."""
        if not self.nav_count:
            return None
        if self._tree is None:  # built on first use: many plans never ask, and a graph changes every snapshot
            self._tree = cKDTree(self.positions[: self.nav_count])
        _, i = self._tree.query(np.asarray(position, dtype=float))
        return int(i)

    def room_symbol_of(self, place: int) -> str:
        r = int(self.room_of[place])
        return self.room_names[r] if r >= 0 else ""

    def without(self, removed: Iterable[int]) -> csr_matrix:
        """The edge matrix with ``removed`` places cut off (for paths that must avoid them)."""
        drop = np.fromiter(removed, dtype=np.int64)
        if drop.size == 0:
            return self.matrix
        gone = np.zeros(self.size, dtype=bool)
        gone[drop] = True
        m = self.matrix
        rows = np.repeat(np.arange(self.size), np.diff(m.indptr))
        keep = ~(gone[rows] | gone[m.indices])
        indptr = np.concatenate([[0], np.cumsum(np.bincount(rows[keep], minlength=self.size))])
        return csr_matrix((m.data[keep], m.indices[keep], indptr), shape=m.shape)

    def shortest_paths(self, sources: Sequence[int], matrix: csr_matrix | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(distances, predecessors) over the whole graph, one row per source; inf / -9999 where unreachable
        (a plan's searches are bounded: :mod:`.paths`)."""
        graph = self.matrix if matrix is None else matrix
        dist, pred = dijkstra(graph, directed=True, indices=list(sources), return_predecessors=True)
        return np.atleast_2d(dist), np.atleast_2d(pred)


def path_indices(pred_row: np.ndarray, source: int, target: int) -> list[int]:
    """Places from ``source`` to ``target`` along one predecessor row (empty when unreachable)."""
    if source == target:
        return [source]
    path = [target]
    node = target
    while node != source:
        node = int(pred_row[node])
        if node < 0:
            return []
        path.append(node)
    path.reverse()
    return path


@dataclass(frozen=True)
class PlaceTables:
    """What a place graph is built from: its places (navigation layer first), the navigation layer's links and
    which room holds which place, as index arrays, so that a change re-reads and rebuilds only what it names."""

    nav_layer: Layer | None
    nav_count: int
    symbols: list[str]
    positions: np.ndarray  # (n, 3)
    #: (2, links): each navigation link once, lower index first.
    links: np.ndarray
    room_positions: dict[str, tuple[float, float, float]]
    #: (2, memberships): a room's number in ``room_positions``' order, and a place it contains.
    members: np.ndarray


def load_place_graph(store: GraphStore) -> PlaceGraph:
    """Read places, their links and rooms from the database (one pass over the scene)."""
    started = time.perf_counter()
    layers = {layer: _positioned(store.query(cypher.place_nodes(layer), timeout_s=120)) for layer in _LAYERS}
    nav_layer = Layer.MESH_PLACE if layers[Layer.MESH_PLACE] else (Layer.PLACE if layers[Layer.PLACE] else None)
    nav_rows = layers[nav_layer] if nav_layer else []
    leaf_rows = layers[Layer.PLACE] if nav_layer is Layer.MESH_PLACE else []
    symbols = [r["s"] for r in nav_rows] + [r["s"] for r in leaf_rows]
    index = {s: i for i, s in enumerate(symbols)}
    link_rows = store.query(cypher.place_edges(nav_layer), timeout_s=120) if nav_layer else []
    room_positions = {r["s"]: _point(r) for r in store.query(cypher.ROOMS, timeout_s=60)}
    member_rows = [row for layer in _LAYERS for row in store.query(cypher.room_places(layer), timeout_s=120)]
    tables = PlaceTables(
        nav_layer, len(nav_rows), symbols, _positions(nav_rows + leaf_rows),
        _links(link_rows, index, len(nav_rows)), room_positions, _members(member_rows, index, room_positions),
    )  # fmt: skip
    graph = build_graph(tables)
    log.info(
        "place graph loaded: %d places (%d %s), %d edges, %d rooms in %.2f s",
        graph.size, graph.nav_count, nav_layer.value if nav_layer else "none", graph.matrix.nnz // 2,
        len(room_positions), time.perf_counter() - started,
    )  # fmt: skip
    return graph


def updated(graph: PlaceGraph, store: GraphStore, changed: set[str]) -> PlaceGraph | None:
    """``graph`` with the places and rooms in ``changed`` read again (added, moved, gone, relinked), or None
    when a whole read is needed (the graph was not read from a database, or its navigation layer changed)."""
    old = graph.tables
    if old is None or old.nav_layer is None:
        return None
    if not changed:  # the generation changed objects only
        return graph
    wanted = sorted(changed)
    found = {layer: _positioned(store.query(cypher.places_named(layer), {"symbols": wanted})) for layer in _LAYERS}
    leaf_layer = Layer.PLACE if old.nav_layer is Layer.MESH_PLACE else None
    if old.nav_layer is Layer.PLACE and found[Layer.MESH_PLACE]:
        return None  # mesh places appeared: the robot walks on them from now on
    keep = np.fromiter((s not in changed for s in old.symbols), dtype=bool, count=len(old.symbols))
    kept_nav = int(keep[: old.nav_count].sum())
    if kept_nav + len(found[old.nav_layer]) == 0:
        return None
    nav_rows, leaf_rows = found[old.nav_layer], found[leaf_layer] if leaf_layer else []
    # Kept navigation places, the re-read ones, the kept leaves, the re-read leaves.
    kept = np.flatnonzero(keep)
    symbols = [old.symbols[i] for i in kept[:kept_nav]] + [r["s"] for r in nav_rows]
    symbols += [old.symbols[i] for i in kept[kept_nav:]] + [r["s"] for r in leaf_rows]
    renumber = -np.ones(len(old.symbols), dtype=np.int64)
    renumber[kept[:kept_nav]] = np.arange(kept_nav)
    renumber[kept[kept_nav:]] = np.arange(kept.size - kept_nav) + kept_nav + len(nav_rows)
    nav_count = kept_nav + len(nav_rows)
    positions = np.concatenate([
        old.positions[kept[:kept_nav]], _positions(nav_rows), old.positions[kept[kept_nav:]], _positions(leaf_rows)
    ])  # fmt: skip
    index = {s: i for i, s in enumerate(symbols)}
    a, b = renumber[old.links[0]], renumber[old.links[1]]
    links = np.concatenate(
        [np.vstack([a, b])[:, (a >= 0) & (b >= 0)], _links(store.query(
            cypher.place_edges_of(old.nav_layer), {"symbols": [r["s"] for r in nav_rows]}
        ), index, nav_count)], axis=1,
    )  # fmt: skip
    rooms = {r["s"]: _point(r) for r in store.query(cypher.ROOMS_NAMED, {"symbols": wanted})}
    room_names = list(old.room_positions)
    room_positions = {room: at for room, at in old.room_positions.items() if room not in changed} | rooms
    # Memberships: the kept ones of kept rooms and places, then those of every changed room and place.
    new_number = {room: i for i, room in enumerate(room_positions)}
    old_to_new = np.array([new_number.get(room, -1) for room in room_names], dtype=np.int64)
    r, p = old_to_new[old.members[0]], renumber[old.members[1]]
    rooms_kept = np.fromiter((room not in changed for room in room_names), dtype=bool, count=len(room_names))
    still = (r >= 0) & (p >= 0) & rooms_kept[old.members[0]]
    member_rows = store.query(cypher.MEMBERS_OF, {"symbols": wanted})
    members = np.concatenate([np.vstack([r, p])[:, still], _members(member_rows, index, room_positions)], axis=1)
    tables = PlaceTables(old.nav_layer, nav_count, symbols, positions, links, room_positions, members)
    return build_graph(tables)


def build_graph(tables: PlaceTables) -> PlaceGraph:
    """The graph's arrays from its tables: 3D places joined to the navigation layer, weights, rooms, components."""
    n, nav_count, positions = len(tables.symbols), tables.nav_count, tables.positions
    a_list, b_list = [tables.links[0]], [tables.links[1]]
    if n > nav_count and nav_count:  # a 3D place farther than MAX_HOP_M from every mesh place is not walked to
        leaf_xy = np.column_stack([positions[nav_count:, :2], np.zeros(n - nav_count)])
        nav_xy = np.column_stack([positions[:nav_count, :2], np.zeros(nav_count)])
        distance, nearest = cKDTree(nav_xy).query(leaf_xy)
        joined = np.atleast_1d(distance) <= MAX_HOP_M
        a_list.append(np.arange(nav_count, n)[joined])
        b_list.append(np.atleast_1d(nearest)[joined].astype(np.int64))
    ends = np.sort(np.vstack([np.concatenate(a_list), np.concatenate(b_list)]), axis=0)
    keys = _distinct(ends[0] * n + ends[1])  # each link once
    a, b = keys // n, keys % n
    weights = np.maximum(np.linalg.norm(positions[a] - positions[b], axis=1), _MIN_EDGE)
    matrix = csr_matrix(
        (np.concatenate([weights, weights]), (np.concatenate([a, b]), np.concatenate([b, a]))), shape=(n, n)
    )
    room_names = list(tables.room_positions)
    rooms, places = tables.members
    room_of = np.full(n, len(room_names), dtype=np.int64)
    np.minimum.at(room_of, places, rooms)  # a place in two rooms counts in the first
    room_of[room_of == len(room_names)] = -1
    pairs = _distinct(rooms * max(n, 1) + places)  # by room, then place, each membership once
    grouped_rooms, grouped_places = pairs // max(n, 1), pairs % max(n, 1)
    cuts = np.searchsorted(grouped_rooms, np.arange(len(room_names) + 1))
    room_places = {room: grouped_places[cuts[r] : cuts[r + 1]] for r, room in enumerate(room_names)}
    outside = (room_of[a] != room_of[b]) & (a < nav_count) & (b < nav_count)
    is_boundary = np.zeros(n, dtype=bool)
    is_boundary[a[outside]] = True
    is_boundary[b[outside]] = True
    room_boundary = {room: in_room[is_boundary[in_room]] for room, in_room in room_places.items()}
    _, component = connected_components(matrix, directed=False)
    return PlaceGraph(
        tables.symbols, positions, matrix, tables.nav_layer, nav_count, room_places, room_boundary,
        tables.room_positions, room_of, np.asarray(component), tables,
    )  # fmt: skip


_LAYERS = (Layer.MESH_PLACE, Layer.PLACE)


def _distinct(keys: np.ndarray) -> np.ndarray:
    """``keys`` sorted, each once (a plain sort: np.unique hashes first, 5x slower on 10^5 links)."""
    ordered = np.sort(keys)
    return ordered[np.concatenate([[True], ordered[1:] != ordered[:-1]])] if ordered.size else ordered


def _positioned(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in rows if r["x"] is not None]


def _point(row: dict[str, Any]) -> tuple[float, float, float]:
    return (float(row["x"] or 0.0), float(row["y"] or 0.0), float(row["z"] or 0.0))


def _positions(rows: list[dict[str, Any]]) -> np.ndarray:
    return np.array([(float(r["x"]), float(r["y"]), float(r["z"] or 0.0)) for r in rows], dtype=float).reshape(-1, 3)


def _links(rows: list[dict[str, Any]], index: dict[str, int], nav_count: int) -> np.ndarray:
    """Navigation links between two distinct navigation places of ``index``, each once, lower index first."""
    a = np.fromiter((index.get(row["a"], -1) for row in rows), dtype=np.int64, count=len(rows))
    b = np.fromiter((index.get(row["b"], -1) for row in rows), dtype=np.int64, count=len(rows))
    ok = (a >= 0) & (b >= 0) & (a != b) & (a < nav_count) & (b < nav_count)
    return np.sort(np.vstack([a[ok], b[ok]]), axis=0).reshape(2, -1)


def _members(
    rows: list[dict[str, Any]], index: dict[str, int], room_positions: dict[str, tuple[float, float, float]]
) -> np.ndarray:
    """(room number, place index) of each row naming a known room and place."""
    number = {room: i for i, room in enumerate(room_positions)}
    pairs = [(number[row["room"]], index[row["place"]]) for row in rows
             if row["room"] in number and row["place"] in index]
    return np.array(pairs, dtype=np.int64).reshape(-1, 2).T
