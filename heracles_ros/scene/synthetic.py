"""Seeded, Hydra-like synthetic scene graphs for tests, benchmarks and the bundled example.

Two kinds, both shaped like what Hydra really writes: an object labelspace
(``_l2p0``) and none for rooms (Hydra's rooms carry ``semantic_label`` 0 and
their name in ``name``) or places; objects without a parent place; more than
one connected component of places; frontier nodes (``f…``, ``real_place``
false) in the 3D places layer; an agent layer (``a…``, layer 2 partition
``'a'``) of robot poses linked to the mesh places they were taken on. Mesh
places are ``P…`` as in Hydra's dataset configs, or any other prefix with
``mesh_prefix`` (Hydra's code default is ``Q``).

- ``small``: an indoor floor. Four rooms on a 10 x 10 grid of mesh places, joined
  only through doorways (so a path can be kept out of a room), a 4 x 4 grid of
  3D places, tens of objects, and a shed whose places are not connected to
  the rest (for unreachable goals).
- ``large``: a kilometre-scale outdoor graph like the reference paper's:
  ~15,944 mesh places on a jittered 8 m lattice with dropped and diagonal
  edges, ~124 regions in 4 classes (nearest-seed partition), ~314 objects in
  12 classes. ``scale`` multiplies places, regions and objects: 0.1 gives ~1,600 places for contrast
  runs, 6.272 gives 10^5 places (a robot's hour of mapping), 62.72 gives 10^6 (a load test: ~75 s
  and ~3 GB to build, a 542 MB payload).

The same (kind, seed, scale) always gives the same graph.
"""
from __future__ import annotations

import numpy as np
import spark_dsg as dsg
from scipy.spatial import cKDTree

from heracles_ros.errors import ConfigError

SMALL_OBJECT_CLASSES = ["box", "bag", "bicycle", "chair", "table", "plant", "trash can", "laptop"]
SMALL_ROOM_CLASSES = ["kitchen", "lounge", "hallway", "office", "storage"]
LARGE_OBJECT_CLASSES = [
    "car", "truck", "bicycle", "bench", "tree", "trash can", "sign",
    "fire hydrant", "box", "bag", "traffic cone", "lamp post",
]
LARGE_REGION_CLASSES = ["road", "parking lot", "field", "sidewalk"]

KINDS = ("small", "large")
#: Bounds of the large kind's ``scale``: 4 x 4 places at least; at most ~1.6 million places (~5 GB to build).
MIN_SCALE = 0.01
MAX_SCALE = 100.0


def generate_scene(kind: str, seed: int = 0, *, scale: float = 1.0, mesh_prefix: str = "P") -> dsg.DynamicSceneGraph:
    """Build a synthetic scene graph; ``scale`` applies to the large kind only."""
    if len(mesh_prefix) != 1 or not mesh_prefix.isalpha() or mesh_prefix in _RESERVED_PREFIXES:
        raise ConfigError(
            f"mesh place prefix must be one letter other than {', '.join(sorted(_RESERVED_PREFIXES))}, "
            f"got {mesh_prefix!r}"
        )
    if kind == "small":
        return _SceneBuilder(seed, SMALL_OBJECT_CLASSES, SMALL_ROOM_CLASSES, mesh_prefix).small()
    if kind == "large":
        if not MIN_SCALE <= scale <= MAX_SCALE:
            raise ConfigError(f"scale must be within [{MIN_SCALE:g}, {MAX_SCALE:g}], got {scale}")
        return _SceneBuilder(seed, LARGE_OBJECT_CLASSES, LARGE_REGION_CLASSES, mesh_prefix).large(scale)
    raise ConfigError(f"unknown scene kind {kind!r}; choose one of {', '.join(KINDS)}")


#: Prefixes the other layers of the synthetic scenes use.
_RESERVED_PREFIXES = frozenset("OpRBfa")
#: Hydra's agent layer: layer 2, partitioned by the robot's prefix.
AGENT_PREFIX = "a"


def fill_uninitialised(attrs: dsg.NodeAttributes) -> None:
    """Set the fields spark_dsg's constructors leave as raw memory and Hydra always fills: a NaN
    there is written to JSON as null, and spark_dsg then refuses to load its own file."""
    if isinstance(attrs, dsg.AgentNodeAttributes):
        attrs.world_R_body = dsg.Quaternion(1.0, 0.0, 0.0, 0.0)
        attrs.external_key = 0
    elif isinstance(attrs, dsg.Place2dNodeAttributes):
        attrs.ellipse_centroid = np.asarray(attrs.position, dtype=float)
        attrs.ellipse_matrix_compress = np.eye(2)
        attrs.ellipse_matrix_expand = np.eye(2)


def _sym(prefix: str, index: int) -> int:
    return int(dsg.NodeSymbol(prefix, index).value)


class _SceneBuilder:
    def __init__(self, seed: int, object_classes: list[str], room_classes: list[str], mesh_prefix: str):
        self.rng = np.random.default_rng(seed)
        self.graph = dsg.DynamicSceneGraph()
        self.object_classes = object_classes
        self.room_classes = room_classes
        self.mesh_prefix = mesh_prefix
        self.graph.metadata.add({"labelspaces": {"_l2p0": [[i, name] for i, name in enumerate(object_classes)]}})
        self.mesh_positions: list[np.ndarray] = []

    # -- scene kinds -----------------------------------------------------------
    def small(self) -> dsg.DynamicSceneGraph:
        self._building(np.array([4.5, 4.5, 0.0]))
        rooms = [(0, 0), (1, 1), (2, 2), (3, 3)]  # (room index, class label): quadrants
        centres = [np.array([2.0 + 5.0 * (r % 2), 2.0 + 5.0 * (r // 2), 0.0]) for r, _ in rooms]
        for (room, label), centre in zip(rooms, centres, strict=True):
            self._room(room, label, centre)
        for a, b in ((0, 1), (0, 2), (1, 3), (2, 3)):  # quadrants that share a doorway
            self.graph.insert_edge(_sym("R", a), _sym("R", b))
        # 10 x 10 mesh places, 1 m apart; a room per 5 x 5 quadrant.
        size = 10
        for row in range(size):
            for col in range(size):
                index = row * size + col
                self._mesh_place(index, np.array([float(col), float(row), 0.0]), room=(row // 5) * 2 + col // 5)
        for row in range(size):
            for col in range(size):
                index = row * size + col
                # Walls between quadrants, with a two-place doorway in each.
                if col + 1 < size and (col != 4 or row in (2, 7)):
                    self.graph.insert_edge(_sym(self.mesh_prefix, index), _sym(self.mesh_prefix, index + 1))
                if row + 1 < size and (row != 4 or col in (2, 7)):
                    self.graph.insert_edge(_sym(self.mesh_prefix, index), _sym(self.mesh_prefix, index + size))
        # A shed (room 4) with places not connected to the floor.
        self._room(4, 4, np.array([15.0, 1.0, 0.0]))
        self.graph.insert_edge(_sym("B", 0), _sym("R", 4))
        shed = range(size * size, size * size + 4)
        for k, index in enumerate(shed):
            self._mesh_place(index, np.array([14.0 + k % 2, 0.5 + k // 2, 0.0]), room=4)
        for a, b in ((0, 1), (0, 2), (1, 3), (2, 3)):
            self.graph.insert_edge(_sym(self.mesh_prefix, shed[a]), _sym(self.mesh_prefix, shed[b]))
        # 4 x 4 3D places above the floor, 3 m apart.
        for row in range(4):
            for col in range(4):
                index = row * 4 + col
                attrs = dsg.PlaceNodeAttributes()
                attrs.position = np.array([0.5 + 3.0 * col, 0.5 + 3.0 * row, 1.0])
                attrs.distance = 1.0
                self.graph.add_node(3, _sym("p", index), attrs)
                room = (int(attrs.position[1] >= 5) * 2) + int(attrs.position[0] >= 5)
                self.graph.insert_edge(_sym("R", room), _sym("p", index))
                if col:
                    self.graph.insert_edge(_sym("p", index - 1), _sym("p", index))
                if row:
                    self.graph.insert_edge(_sym("p", index - 4), _sym("p", index))
        # Objects: most on a floor place, every class at least twice, some without a parent.
        labels = [i % len(self.object_classes) for i in range(32)]
        self.rng.shuffle(labels)
        places = self.rng.choice(size * size, size=len(labels), replace=False)
        for index, (label, place) in enumerate(zip(labels, places, strict=True)):
            orphan = index % 6 == 5
            self._object(index, int(label), self.mesh_positions[int(place)], None if orphan else int(place))
        self._object(len(labels), 0, self.mesh_positions[shed[3]], shed[3])  # a box in the shed
        self._frontier(0, np.array([12.0, 0.5, 1.0]), place=3)
        self._frontier(1, np.array([0.5, 11.0, 1.0]), place=12)
        self._agent_path([0, 1, 2, 12, 22, 23])
        return self.graph

    def large(self, scale: float) -> dsg.DynamicSceneGraph:
        rows = max(4, round(125 * np.sqrt(scale)))
        cols = max(4, round(128 * np.sqrt(scale)))
        spacing = 8.0
        keep = self.rng.random(rows * cols) >= (56 / 16000)  # ~15,944 of 16,000 at scale 1
        grid_index = -np.ones(rows * cols, dtype=np.int64)
        grid_index[keep] = np.arange(int(keep.sum()))
        rc = np.argwhere(keep.reshape(rows, cols))
        jitter = self.rng.uniform(-1.5, 1.5, size=(len(rc), 2))
        xy = rc[:, ::-1] * spacing + jitter
        region_count = max(4, round(124 * scale))
        seeds = self.rng.uniform(0, [cols * spacing, rows * spacing], size=(region_count, 2))
        region_of = cKDTree(seeds).query(xy)[1]  # the nearest seed; memory O(places), not places x regions
        self._building(np.array([cols * spacing / 2, rows * spacing / 2, 0.0]))
        region_labels = self.rng.integers(0, len(LARGE_REGION_CLASSES), size=region_count)
        for region in range(region_count):
            self._room(region, int(region_labels[region]), np.array([*seeds[region], 0.0]))
        for index, ((x, y), region) in enumerate(zip(xy, region_of, strict=True)):
            self._mesh_place(index, np.array([x, y, 0.0]), room=int(region))
        touching: set[tuple[int, int]] = set()
        for (r, c), index in zip(rc, range(len(rc)), strict=True):
            for dr, dc, p_keep in ((0, 1, 0.9), (1, 0, 0.9), (1, 1, 0.35)):
                rr, cc = r + dr, c + dc
                if rr >= rows or cc >= cols or self.rng.random() >= p_keep:
                    continue
                other = int(grid_index[rr * cols + cc])
                if other < 0:
                    continue
                self.graph.insert_edge(_sym(self.mesh_prefix, index), _sym(self.mesh_prefix, other))
                a, b = int(region_of[index]), int(region_of[other])
                if a != b:
                    touching.add((min(a, b), max(a, b)))
        for a, b in sorted(touching):
            self.graph.insert_edge(_sym("R", a), _sym("R", b))
        object_count = max(12, round(314 * scale))
        labels = self.rng.integers(0, len(self.object_classes), size=object_count)
        labels[: len(self.object_classes)] = np.arange(len(self.object_classes))
        places = self.rng.choice(len(xy), size=object_count, replace=False)
        for index, (label, place) in enumerate(zip(labels, places, strict=True)):
            orphan = index % 7 == 6
            self._object(index, int(label), self.mesh_positions[int(place)], None if orphan else int(place))
        self._agent_path(list(range(min(8, len(xy)))))
        return self.graph

    # -- nodes -----------------------------------------------------------------
    def _building(self, position: np.ndarray) -> None:
        attrs = dsg.NodeAttributes()
        attrs.position = position
        self.graph.add_node(5, _sym("B", 0), attrs)

    def _room(self, index: int, label: int, position: np.ndarray) -> None:
        """A room as Hydra writes it: semantic label 0, its class in ``name`` (no room labelspace)."""
        attrs = dsg.RoomNodeAttributes()
        attrs.position = position
        attrs.semantic_label = 0
        attrs.name = self.room_classes[label]
        self.graph.add_node(4, _sym("R", index), attrs)
        self.graph.insert_edge(_sym("B", 0), _sym("R", index))

    def _mesh_place(self, index: int, position: np.ndarray, *, room: int) -> None:
        attrs = dsg.Place2dNodeAttributes()
        attrs.position = position
        fill_uninitialised(attrs)
        self.graph.add_node(3, _sym(self.mesh_prefix, index), attrs, 1)
        self.graph.insert_edge(_sym("R", room), _sym(self.mesh_prefix, index))
        self.mesh_positions.append(position)

    def _object(self, index: int, label: int, near: np.ndarray, place: int | None) -> None:
        offset = self.rng.uniform(-0.4, 0.4, size=3) * np.array([1.0, 1.0, 0.0])
        position = near + offset + np.array([0.0, 0.0, self.rng.uniform(0.2, 1.0)])
        dims = self.rng.uniform(0.2, 1.2, size=3)
        attrs = dsg.ObjectNodeAttributes()
        attrs.position = position
        attrs.semantic_label = label
        attrs.name = f"{self.object_classes[label]} {index}"
        attrs.bounding_box = dsg.BoundingBox(dims, position)
        self.graph.add_node(2, _sym("O", index), attrs)
        if place is not None:
            self.graph.insert_edge(_sym(self.mesh_prefix, place), _sym("O", index))

    def _frontier(self, index: int, position: np.ndarray, *, place: int) -> None:
        """A frontier as Hydra writes it: a 3D-places-layer node with ``real_place`` false, next to a place."""
        attrs = dsg.PlaceNodeAttributes()
        attrs.position = position
        attrs.real_place = False
        attrs.active_frontier = True
        self.graph.add_node(3, _sym("f", index), attrs)
        self.graph.insert_edge(_sym("p", place), _sym("f", index))

    def _agent_path(self, places: list[int]) -> None:
        """Robot poses along mesh places (Hydra's agent layer), chained, each linked to its place."""
        partition = ord(AGENT_PREFIX)
        for k, place in enumerate(places):
            attrs = dsg.AgentNodeAttributes()
            attrs.position = self.mesh_positions[place] + np.array([0.0, 0.0, 0.5])
            fill_uninitialised(attrs)
            self.graph.add_node(2, _sym(AGENT_PREFIX, k), attrs, partition)
            if k:
                self.graph.insert_edge(_sym(AGENT_PREFIX, k - 1), _sym(AGENT_PREFIX, k))
            self.graph.insert_edge(_sym(self.mesh_prefix, place), _sym(AGENT_PREFIX, k))
