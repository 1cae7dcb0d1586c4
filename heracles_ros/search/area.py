"""The search's view of the live map: rooms and their labels, the objects and their rooms, each room's
viewpoint, the walk from anywhere to each viewpoint over the place graph (the planner's), and the things
the mirror holds now that are what the search looks for."""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from scipy.sparse.csgraph import dijkstra

from heracles_ros.graphdb.cypher import search as q
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.planning.places import PlaceGraph
from heracles_ros.search.ranking import MapObject
from heracles_ros.search.runner import XY, SearchArea
from heracles_ros.search.target import Target

#: Seconds a look for the thing in the database may take.
LOOK_TIMEOUT_S = 5.0


def search_area(store: GraphStore, graph: PlaceGraph) -> SearchArea:
    """The map as the search reads it, from ``store`` and its place graph ``graph``."""
    labels = {str(row["symbol"]): str(row["class"] or "room") for row in store.query(q.ROOMS)}
    objects = [(str(row["class"]), (float(row["x"]), float(row["y"]))) for row in store.query(q.OBJECTS)
               if row.get("x") is not None and row.get("class") is not None]
    return area_of(graph, labels, objects)


def area_of(graph: PlaceGraph, labels: Mapping[str, str], objects: Iterable[tuple[str, XY]]) -> SearchArea:
    """The search's map from a place graph, the rooms' labels (symbol -> label) and the objects (class, x y);
    an object's room is its nearest place's."""
    nav = range(graph.nav_count)
    place_room = {graph.symbols[i]: _room(graph, i) for i in nav}
    place_xy = {graph.symbols[i]: (float(graph.positions[i][0]), float(graph.positions[i][1])) for i in nav}
    things = []
    for class_name, (x, y) in objects:
        near = graph.nearest_place((x, y, 0.0))
        things.append(MapObject(class_name, _room(graph, near) if near is not None else ""))
    viewpoints = {}
    for room, indices in graph.room_places.items():
        nav_indices = [int(i) for i in indices if i < graph.nav_count]
        if room in labels and nav_indices:
            centre = np.asarray(graph.positions[nav_indices])[:, :2].mean(axis=0)
            viewpoints[room] = graph.symbols[min(
                nav_indices, key=lambda i: (float(np.linalg.norm(graph.positions[i][:2] - centre)), i))]
    rooms = {room: label for room, label in labels.items() if room in viewpoints}
    return SearchArea(rooms, things, place_xy, place_room, viewpoints)


def walk_lengths(graph: PlaceGraph, area: SearchArea, start: XY) -> Mapping[str, float]:
    """Metres from ``start`` (onto its nearest place, then along the place graph) to each room's viewpoint."""
    near = graph.nearest_place((start[0], start[1], 0.0))
    if near is None:
        return {}
    hop = float(np.linalg.norm(graph.positions[near][:2] - np.asarray(start)))
    distances = dijkstra(graph.matrix, directed=False, indices=near)
    lengths = {}
    for room, place in area.viewpoints.items():
        metres = float(distances[graph.index[place]])
        if np.isfinite(metres):
            lengths[room] = hop + metres
    return lengths


def _room(graph: PlaceGraph, index: int) -> str:
    room = int(graph.room_of[index])
    return graph.room_names[room] if room >= 0 else ""


def map_objects(store: GraphStore) -> list[str]:
    """The symbols of the objects the map holds now (what a search does not count as found)."""
    return [str(row["symbol"]) for row in store.query(q.OBJECT_SYMBOLS)]


def things_seen(store: GraphStore, target: Target, before: Sequence[str]) -> list[dict[str, Any]]:
    """The objects not among ``before`` that are what ``target`` looks for, by symbol (``symbol``, ``class``,
    ``x``, ``y``)."""
    rows = [row for row in store.query(q.NEW_OBJECTS, {"before": list(before)}, timeout_s=LOOK_TIMEOUT_S)
            if row.get("class")]
    wanted = target.which({str(row["class"]) for row in rows}) if rows else set()
    return [row for row in rows if str(row["class"]) in wanted]
