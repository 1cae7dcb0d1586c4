"""The place graph the robot walks on, read from the database once per mirror generation.

Spot walks on the ground, so the mesh places (2D traversability, label ``MeshPlace``) and
their ``MESH_PLACE_CONNECTED`` edges are the navigation graph; 3D places
(label ``Place``) hang off it, each joined to its nearest mesh place on the ground plane by
one edge (a leaf, so no path passes through free space) when that is within
:data:`~heracles_ros.plan_types.MAX_HOP_M`, the farthest hop off the graph the dispatcher takes.
A scene without mesh places navigates on its 3D places instead. Edge weights are Euclidean lengths.

Loading costs one pass over the scene's places; everything per plan works on
the cached arrays: shortest paths between the few places a plan needs
(:mod:`.paths`) and nearest places by k-d tree.
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
    index: dict[str, int] = field(init=False)
    room_names: list[str] = field(init=False)
    _tree: Any = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.index = {s: i for i, s in enumerate(self.symbols)}
        self.room_names = list(self.room_places)
        self._tree = cKDTree(self.positions[: self.nav_count]) if self.nav_count else None

    @property
    def size(self) -> int:
        return len(self.symbols)

    def nearest_place(self, position: Sequence[float]) -> int | None:
        """Index of the navigation place nearest ``position`` (None when there are none)."""
        if self._tree is None:
            return None
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


def load_place_graph(store: GraphStore) -> PlaceGraph:
    """Read places, their edges and rooms from the database (one pass over the scene)."""
    started = time.perf_counter()
    places = _read_places(store)
    n, nav_count = len(places.symbols), places.nav_count
    a, b, matrix = _edges(store, places)
    room_positions, members = _room_members(store, places.index)
    room_names = list(members)
    room_of = -np.ones(n, dtype=np.int64)
    for r, room in enumerate(room_names):
        in_room = np.array(members[room], dtype=np.int64)
        room_of[in_room[room_of[in_room] < 0]] = r
    outside = (room_of[a] != room_of[b]) & (a < nav_count) & (b < nav_count)
    boundary_nodes = np.unique(np.concatenate([a[outside], b[outside]]))
    room_places = {room: np.array(sorted(set(members[room])), dtype=np.int64) for room in room_names}
    is_boundary = np.zeros(n, dtype=bool)
    is_boundary[boundary_nodes] = True
    room_boundary = {room: in_room[is_boundary[in_room]] for room, in_room in room_places.items()}
    _, component = connected_components(matrix, directed=False)
    graph = PlaceGraph(
        places.symbols, places.positions, matrix, places.nav_layer, nav_count, room_places, room_boundary,
        room_positions, room_of, np.asarray(component),
    )  # fmt: skip
    log.info(
        "place graph loaded: %d places (%d %s), %d edges, %d rooms in %.2f s",
        n, nav_count, places.nav_layer.value if places.nav_layer else "none", matrix.nnz // 2, len(room_names),
        time.perf_counter() - started,
    )  # fmt: skip
    return graph


@dataclass(frozen=True)
class _Places:
    """The places read for the graph: the navigation layer's first (mesh places where there are any), then the
    3D places beside them; ``index`` gives each symbol's row."""

    nav_layer: Layer | None
    nav_count: int
    symbols: list[str]
    positions: np.ndarray
    index: dict[str, int]


def _read_places(store: GraphStore) -> _Places:
    layers = {layer: store.query(cypher.place_nodes(layer), timeout_s=120) for layer in (Layer.MESH_PLACE, Layer.PLACE)}
    layers = {layer: [r for r in rows if r["x"] is not None] for layer, rows in layers.items()}
    nav_layer = Layer.MESH_PLACE if layers[Layer.MESH_PLACE] else (Layer.PLACE if layers[Layer.PLACE] else None)
    leaf_layer = Layer.PLACE if nav_layer is Layer.MESH_PLACE else None
    nav_rows = layers[nav_layer] if nav_layer else []
    leaf_rows = layers[leaf_layer] if leaf_layer else []
    symbols = [r["s"] for r in nav_rows] + [r["s"] for r in leaf_rows]
    positions = np.array(
        [(float(r["x"]), float(r["y"]), float(r["z"] or 0.0)) for r in nav_rows + leaf_rows], dtype=float
    ).reshape(-1, 3)
    return _Places(nav_layer, len(nav_rows), symbols, positions, {s: i for i, s in enumerate(symbols)})


def _edges(store: GraphStore, places: _Places) -> tuple[np.ndarray, np.ndarray, csr_matrix]:
    """The navigation layer's edges, each 3D place joined to its nearest navigation place within MAX_HOP_M:
    (one end, the other end, the symmetric distance matrix)."""
    index, nav_count, positions, n = places.index, places.nav_count, places.positions, len(places.symbols)
    a_list: list[int] = []
    b_list: list[int] = []
    if places.nav_layer is not None:
        for row in store.query(cypher.place_edges(places.nav_layer), timeout_s=120):
            a, b = index.get(row["a"]), index.get(row["b"])
            if a is not None and b is not None and a != b and a < nav_count and b < nav_count:
                a_list.append(a)
                b_list.append(b)
    if n > nav_count and nav_count:  # a 3D place farther than MAX_HOP_M from every mesh place is not walked to
        leaf_xy = np.column_stack([positions[nav_count:, :2], np.zeros(n - nav_count)])
        nav_xy = np.column_stack([positions[:nav_count, :2], np.zeros(nav_count)])
        distance, nearest = cKDTree(nav_xy).query(leaf_xy)
        joined = np.atleast_1d(distance) <= MAX_HOP_M
        a_list.extend(int(i) for i in np.arange(nav_count, n)[joined])
        b_list.extend(int(i) for i in np.atleast_1d(nearest)[joined])
    # One entry per undirected edge, whichever way (or both ways) the database lists it.
    pairs = np.unique(np.sort(np.array([a_list, b_list], dtype=np.int64).reshape(2, -1), axis=0), axis=1)
    a, b = pairs[0], pairs[1]
    weights = np.maximum(np.linalg.norm(positions[a] - positions[b], axis=1), _MIN_EDGE)
    matrix = csr_matrix(
        (np.concatenate([weights, weights]), (np.concatenate([a, b]), np.concatenate([b, a]))), shape=(n, n)
    )
    return a, b, matrix


def _room_members(
    store: GraphStore, index: dict[str, int]
) -> tuple[dict[str, tuple[float, float, float]], dict[str, list[int]]]:
    """Each room's position, and the rows of the places it contains (of both layers)."""
    room_rows = store.query(cypher.ROOMS, timeout_s=60)
    room_positions = {
        r["s"]: (float(r["x"] or 0.0), float(r["y"] or 0.0), float(r["z"] or 0.0)) for r in room_rows
    }
    members: dict[str, list[int]] = {s: [] for s in room_positions}
    for layer in (Layer.MESH_PLACE, Layer.PLACE):
        for row in store.query(cypher.room_places(layer), timeout_s=120):
            i = index.get(row["place"])
            if i is not None and row["room"] in members:
                members[row["room"]].append(i)
    return room_positions, members
