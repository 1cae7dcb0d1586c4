"""Worlds and their maps: a scene with objects the map lacks, for the simulated Hydra's tests and the bench
(:func:`synthetic_floor`: seeded floors of labelled rooms whose things follow a declared commonsense).

A world holds every node of its map under the same symbol, plus the hidden objects; the map is the world
without them. The world's object labelspace names the hidden class, so a snapshot of it mirrors that class.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import spark_dsg as dsg
from scipy.sparse import coo_matrix

from heracles_ros.planning.places import PlaceGraph
from heracles_ros.scene.tables import id_of, symbol_of
from heracles_ros.schema import Layer

#: Symbol numbers of hidden objects start here (far above a synthetic scene's own).
HIDDEN_FROM = 900


def class_label(graph: dsg.DynamicSceneGraph, class_name: str) -> int:
    """The object labelspace's label of ``class_name``, added when the labelspace lacks it."""
    names = graph.metadata.get().get("labelspaces", {}).get("_l2p0", [])
    for label, name in names:
        if name == class_name:
            return int(label)
    label = 1 + max((int(label) for label, _ in names), default=-1)
    graph.metadata.add({"labelspaces": {"_l2p0": [*names, [label, class_name]]}})
    return label


def hide_objects(world: dsg.DynamicSceneGraph, class_name: str, places: Sequence[str], *,
                 first: int = HIDDEN_FROM) -> list[str]:
    """Add one object of ``class_name`` on each of ``places`` (symbols) to ``world``; their symbols."""
    label = class_label(world, class_name)
    hidden = []
    for k, place in enumerate(places):
        position = np.asarray(world.get_node(id_of(place)).attributes.position, dtype=float) + np.array([0.0, 0.0, 0.5])
        attrs = dsg.ObjectNodeAttributes()
        attrs.position = position
        attrs.semantic_label = label
        attrs.name = f"{class_name} {first + k}"
        attrs.bounding_box = dsg.BoundingBox(np.array([0.3, 0.3, 0.6]), position)
        node_id = id_of(f"O{first + k}")
        world.add_node(2, node_id, attrs)
        world.insert_edge(id_of(place), node_id)
        hidden.append(symbol_of(node_id))
    return hidden


def map_of(world: dsg.DynamicSceneGraph, hidden: Sequence[str]) -> dsg.DynamicSceneGraph:
    """The world without the ``hidden`` objects: what the robot's map holds at start."""
    graph = dsg.DynamicSceneGraph.from_binary(world.to_binary(include_mesh=False))
    for symbol in hidden:
        graph.remove_node(id_of(symbol))
    return graph


# === Seeded floors for the search bench =================================================================
#: Room labels of the synthetic floors.
ROOM_LABELS = ("kitchen", "office", "bathroom", "bedroom", "lounge", "storage", "hallway", "lab")
#: Families of things and how often each room label holds them: the commonsense the floors are drawn from,
#: and the bench's declared source of "similar things" (the search is told a family, never the weights).
FAMILIES: dict[str, tuple[tuple[str, ...], dict[str, float]]] = {
    "kitchenware": (("mug", "kettle", "plate", "microwave"), {"kitchen": 8, "lounge": 1, "office": 1}),
    "office": (("laptop", "printer", "stapler", "monitor"), {"office": 8, "lab": 2, "lounge": 1}),
    "bath": (("towel", "soap", "toilet brush", "hair dryer"), {"bathroom": 9, "bedroom": 1}),
    "sleep": (("pillow", "lamp", "alarm clock", "blanket"), {"bedroom": 8, "lounge": 2}),
    "safety": (("fire extinguisher", "first-aid kit", "fire alarm", "emergency light"),
               {"hallway": 6, "kitchen": 2, "storage": 2, "lab": 1}),
    "tools": (("toolbox", "ladder", "drill", "broom"), {"storage": 8, "lab": 2, "hallway": 1}),
    "lab": (("microscope", "test tube rack", "centrifuge", "pipette"), {"lab": 9, "storage": 1}),
}
FAMILY_OF = {cls: family for family, (classes, _) in FAMILIES.items() for cls in classes}


@dataclass(frozen=True)
class Floor:
    """One seeded floor: its world (the map plus one hidden object) and what the search is given of it."""

    world: dsg.DynamicSceneGraph
    graph: PlaceGraph
    #: Room symbol -> label.
    labels: dict[str, str]
    #: The map's objects: (class, x y).
    objects: list[tuple[str, tuple[float, float]]]
    #: The hidden object: its class and symbol.
    target_class: str
    target: str
    #: Index (in ``graph``) of the place the robot starts at.
    start: int


def synthetic_floor(seed: int, *, width: int = 4, height: int = 4, room_places: int = 5,
                    objects_per_room: float = 6.0, extra_doors: float = 0.3, smoothing: float = 0.1) -> Floor:
    """A ``width`` x ``height`` grid of square rooms of ``room_places`` x ``room_places`` places 1 m apart,
    joined by doorways (a random spanning tree plus ``extra_doors`` of the other walls), random labels; the map
    holds ``objects_per_room`` x rooms things of every class but the target's, each in a room drawn by its
    family's weights (+ ``smoothing`` for every label); the hidden target is drawn the same way."""
    rng = np.random.default_rng(seed)
    k, rooms = room_places, width * height
    grid: dict[tuple[int, int], int] = {}
    xy: list[tuple[float, float]] = []
    room_of: list[int] = []
    for ry in range(height):
        for rx in range(width):
            for py in range(k):
                for px in range(k):
                    grid[(rx * k + px, ry * k + py)] = len(xy)
                    xy.append((rx * k + px + 0.5, ry * k + py + 0.5))
                    room_of.append(ry * width + rx)
    edges = [(i, grid[(gx + dx, gy + dy)]) for (gx, gy), i in grid.items() for dx, dy in ((1, 0), (0, 1))
             if (gx + dx, gy + dy) in grid and room_of[grid[(gx + dx, gy + dy)]] == room_of[i]]
    edges += [_doorway(grid, a, b, width, k) for a, b in _doors(rng, width, height, extra_doors)]
    labels = [ROOM_LABELS[i] for i in rng.integers(0, len(ROOM_LABELS), size=rooms)]
    classes = list(FAMILY_OF)
    target_class = classes[int(rng.integers(len(classes)))]

    def drawn_place(cls: str) -> int:
        weights = np.array([FAMILIES[FAMILY_OF[cls]][1].get(label, 0.0) + smoothing for label in labels])
        room = int(rng.choice(rooms, p=weights / weights.sum()))
        return int(rng.choice([i for i, r in enumerate(room_of) if r == room]))

    visible = [c for c in classes if c != target_class]
    things = [(str(c), drawn_place(str(c))) for c in rng.choice(visible, size=int(objects_per_room * rooms))]
    world = _floor_scene(xy, room_of, labels, edges, things)
    (target,) = hide_objects(world, target_class, [symbol_of(_sym("p", drawn_place(target_class)))])
    graph = _place_graph(xy, room_of, edges, rooms)
    objects = [(cls, xy[place]) for cls, place in things]
    return Floor(world, graph, {f"R{r}": labels[r] for r in range(rooms)}, objects, target_class, target,
                 int(rng.integers(len(xy))))


def _doors(rng: np.random.Generator, width: int, height: int, extra: float) -> list[tuple[int, int]]:
    """Pairs of rooms joined by a doorway: a random spanning tree over neighbours, plus ``extra`` of the rest."""
    rooms = width * height
    walls = [(r, r + 1) for r in range(rooms) if r % width + 1 < width] + [(r, r + width) for r in range(rooms - width)]
    parent = list(range(rooms))

    def root(a: int) -> int:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    doors = []
    for index in rng.permutation(len(walls)):
        a, b = walls[int(index)]
        if root(a) != root(b):
            parent[root(a)] = root(b)
            doors.append((a, b))
        elif rng.random() < extra:
            doors.append((a, b))
    return doors


def _doorway(grid: dict[tuple[int, int], int], a: int, b: int, width: int, k: int) -> tuple[int, int]:
    """The two places either side of the middle of the wall between rooms ``a`` and ``b`` (b east or south)."""
    ax, ay, bx, by = a % width, a // width, b % width, b // width
    if ay == by:
        return grid[(ax * k + k - 1, ay * k + k // 2)], grid[(bx * k, by * k + k // 2)]
    return grid[(ax * k + k // 2, ay * k + k - 1)], grid[(bx * k + k // 2, by * k)]


def _sym(prefix: str, index: int) -> int:
    return int(dsg.NodeSymbol(prefix, index).value)


def _floor_scene(xy: Sequence[tuple[float, float]], room_of: Sequence[int], labels: Sequence[str],
                 edges: Sequence[tuple[int, int]], things: Sequence[tuple[str, int]]) -> dsg.DynamicSceneGraph:
    graph = dsg.DynamicSceneGraph()
    for room, label in enumerate(labels):
        attrs = dsg.RoomNodeAttributes()
        members = np.array([p for p, r in zip(xy, room_of, strict=True) if r == room])
        attrs.position = np.array([*members.mean(axis=0), 0.0])
        attrs.name = label
        graph.add_node(4, _sym("R", room), attrs)
    for index, (x, y) in enumerate(xy):
        attrs = dsg.PlaceNodeAttributes()
        attrs.position = np.array([x, y, 0.0])
        graph.add_node(3, _sym("p", index), attrs)
        graph.insert_edge(_sym("R", room_of[index]), _sym("p", index))
    for a, b in edges:
        graph.insert_edge(_sym("p", a), _sym("p", b))
    for number, (cls, place) in enumerate(things):
        attrs = dsg.ObjectNodeAttributes()
        position = np.array([*xy[place], 0.5])
        attrs.position = position
        attrs.semantic_label = class_label(graph, cls)
        attrs.name = f"{cls} {number}"
        attrs.bounding_box = dsg.BoundingBox(np.array([0.3, 0.3, 0.3]), position)
        graph.add_node(2, _sym("O", number), attrs)
        graph.insert_edge(_sym("p", place), _sym("O", number))
    return graph


def _place_graph(xy: Sequence[tuple[float, float]], room_of: Sequence[int], edges: Sequence[tuple[int, int]],
                 rooms: int) -> PlaceGraph:
    n = len(xy)
    positions = np.array([(x, y, 0.0) for x, y in xy])
    pairs = np.array(edges)
    metres = np.linalg.norm(positions[pairs[:, 0]] - positions[pairs[:, 1]], axis=1)
    matrix = coo_matrix((np.concatenate([metres, metres]), (np.concatenate([pairs[:, 0], pairs[:, 1]]),
                                                            np.concatenate([pairs[:, 1], pairs[:, 0]]))),
                        shape=(n, n)).tocsr()
    members = {f"R{r}": np.array([i for i in range(n) if room_of[i] == r]) for r in range(rooms)}
    outside = {i for a, b in edges if room_of[a] != room_of[b] for i in (a, b)}
    return PlaceGraph(
        symbols=[symbol_of(_sym("p", i)) for i in range(n)], positions=positions, matrix=matrix,
        nav_layer=Layer.PLACE, nav_count=n, room_places=members,
        room_boundary={room: np.array([i for i in found if i in outside]) for room, found in members.items()},
        room_positions={room: tuple(positions[found].mean(axis=0)) for room, found in members.items()},
        room_of=np.array(room_of), component=np.zeros(n, dtype=int))
