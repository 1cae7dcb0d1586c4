"""Where the simulated robot starts in a scene file: the mesh place nearest the middle of a room of a class.

``heracles up`` starts the dispatcher before the mirror has written the scene,
so the place is read from the file itself (the same choice the demo makes from
the database: :func:`heracles_ros.demo.goal.room_anchor`).
"""
from __future__ import annotations

import math
from pathlib import Path

from heracles_ros.errors import SceneError
from heracles_ros.scene.io import load_scene
from heracles_ros.scene.tables import edge_ends, extract_tables, relation_of, symbol_of
from heracles_ros.schema import CONTAINS, Layer


def start_place(scene_file: Path, room_class: str) -> str:
    """The symbol of the mesh place nearest the centroid of the first room (by symbol) of ``room_class``."""
    tables = extract_tables(load_scene(scene_file))
    places: dict[str, list[tuple[str, float, float]]] = {}
    for key in tables.edges:
        relation = relation_of(*edge_ends(key), tables.nodes)
        if relation is None or relation[2] != CONTAINS:
            continue
        room, place = tables.nodes[relation[0]], tables.nodes[relation[1]]
        if room[0] == Layer.ROOM and room[1] == room_class and place[0] == Layer.MESH_PLACE:
            places.setdefault(symbol_of(relation[0]), []).append((symbol_of(relation[1]), place[3], place[4]))
    if not places:
        raise SceneError(f"{scene_file}: no room of class {room_class!r} with mesh places to start the robot at")
    first = places[min(places, key=lambda s: (s[:1], int(s[1:]) if s[1:].isdigit() else -1))]
    cx = sum(p[1] for p in first) / len(first)
    cy = sum(p[2] for p in first) / len(first)
    return min(first, key=lambda p: (math.hypot(p[1] - cx, p[2] - cy), p[0]))[0]
