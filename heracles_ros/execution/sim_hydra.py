"""A simulated Hydra: what the simulated robot would perceive of a *world*, published as Hydra's snapshots.

The world is a scene file holding more than the map: every node the map has, under the same symbols, and
objects the robot has not seen yet. As the robot walks, an object is **seen** when

- its planar distance to the stretch walked since the last look (a segment, so a coarse tick misses nothing)
  is at most ``sensor_range_m``, and
- it is in the robot's room: the room of the world place nearest the robot. An object's room is its parent
  place's room; an object without a parent place takes the room of its nearest place. Rooms join only through
  doorways, so walls come free: nothing is seen through them.

Seen is monotonic (Hydra does not forget an object it mapped). The published graph is the world without the
objects neither known at start (the map's) nor seen since: every place, room, building and edge of the world,
with the world's metadata, so its labelspace names a hidden object's class. It is rebuilt from the world's
bytes only when something new was seen (0.8 ms on the small scene).
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import spark_dsg as dsg
from scipy.spatial import cKDTree

from heracles_ros.errors import ConfigError, SceneError
from heracles_ros.planar import segment_distance
from heracles_ros.scene.io import load_scene
from heracles_ros.scene.tables import extract_tables, symbol_of
from heracles_ros.schema import Layer

#: Default sensor range, metres.
SENSOR_RANGE_M = 3.0

XY = tuple[float, float]


@dataclass(frozen=True)
class WorldObject:
    symbol: str
    node_id: int
    class_name: str
    xy: XY
    #: Symbol of the room holding it ('' when none can be told).
    room: str


class World:
    """A world scene: its objects with their rooms, and where each room's places are."""

    def __init__(self, graph: dsg.DynamicSceneGraph):
        tables = extract_tables(graph)
        self.payload: bytes = graph.to_binary(include_mesh=False)
        nodes = tables.nodes
        places = [i for i, row in nodes.items() if row[0] in (Layer.MESH_PLACE, Layer.PLACE)]
        if not places:
            raise SceneError("the world has no places: the robot's room cannot be told")
        rooms = tables.rooms(places)
        self._place_rooms = [symbol_of(rooms[p]) if p in rooms else "" for p in places]
        self._place_tree = cKDTree(np.array([nodes[p][3:5] for p in places], dtype=float))
        object_rooms = tables.rooms(i for i, row in nodes.items() if row[0] is Layer.OBJECT)
        self.objects: dict[str, WorldObject] = {}
        for node_id, row in nodes.items():
            if row[0] is not Layer.OBJECT:
                continue
            xy = (float(row[3]), float(row[4]))
            room = symbol_of(object_rooms[node_id]) if node_id in object_rooms else self.room_at(xy)
            self.objects[symbol_of(node_id)] = WorldObject(symbol_of(node_id), node_id, str(row[1]), xy, room)

    @classmethod
    def load(cls, path: str | Path) -> World:
        """The world in a scene file; ConfigError naming the file when it cannot be read."""
        try:
            return cls(load_scene(path))
        except SceneError as exc:
            raise ConfigError(f"sim_world {path}: {exc}") from exc

    def room_at(self, xy: Iterable[float]) -> str:
        """The room of the world place nearest ``xy`` ('' when that place is in none)."""
        _, index = self._place_tree.query(list(xy)[:2])
        return self._place_rooms[int(index)]


class SimHydra:
    """What has been seen of ``world`` by a robot walking in it, and the snapshot Hydra would publish.

    ``known``: the symbols of the objects mapped at start (the map's); the world must hold every one of them,
    since a full snapshot that lacks a node makes the mirror delete it.
    """

    def __init__(self, world: World, known: Iterable[str], *, sensor_range_m: float = SENSOR_RANGE_M):
        if not sensor_range_m > 0:
            raise ConfigError(f"sim_sensor_range_m must be > 0, got {sensor_range_m}")
        known = set(known)
        missing = sorted(known - set(world.objects))
        if missing:
            raise ConfigError(
                f"sim_world lacks {len(missing)} of the map's {len(known)} objects ({', '.join(missing[:5])}"
                f"{', ...' if len(missing) > 5 else ''}): a world holds every object of the map under its symbol"
            )
        self.world = world
        self.sensor_range_m = sensor_range_m
        self._hidden = {s: o for s, o in world.objects.items() if s not in known}
        self._lock = threading.Lock()
        self._seen: list[str] = []
        self._version = 0
        self._built: tuple[int, bytes] | None = None

    @property
    def hidden(self) -> list[str]:
        """The world's objects the map lacked, seen or not."""
        return sorted(self._hidden)

    @property
    def seen(self) -> list[str]:
        """Hidden objects seen so far, in the order they were seen."""
        with self._lock:
            return list(self._seen)

    @property
    def version(self) -> int:
        """Rises by one each time something new is seen."""
        return self._version

    def observe(self, start: Iterable[float], end: Iterable[float]) -> list[str]:
        """Look along the walk from ``start`` to ``end`` (positions, x and y read); the objects newly seen."""
        a, b = tuple(start)[:2], tuple(end)[:2]
        segment = ((float(a[0]), float(a[1])), (float(b[0]), float(b[1])))
        room = self.world.room_at(segment[1])
        with self._lock:
            seen = set(self._seen)
            new = [
                o.symbol for o in self._hidden.values()
                if o.symbol not in seen and room and o.room == room
                and segment_distance(o.xy, *segment) <= self.sensor_range_m
            ]
            if new:
                self._seen.extend(sorted(new))
                self._version += 1
        return new

    def snapshot(self) -> bytes:
        """The seen graph as spark_dsg bytes (what Hydra's DsgUpdate carries in ``layer_contents``)."""
        with self._lock:
            version, unseen = self._version, [o.node_id for s, o in self._hidden.items() if s not in self._seen]
            if self._built is not None and self._built[0] == version:
                return self._built[1]
        graph = dsg.DynamicSceneGraph.from_binary(self.world.payload)
        for node_id in unseen:
            graph.remove_node(node_id)
        payload: bytes = graph.to_binary(include_mesh=False)
        with self._lock:
            self._built = (version, payload)
        return payload
