"""``heracles bench search``: the search for what the map lacks against visiting the nearest room first, on
seeded floors (:func:`heracles_ros.search.worlds.synthetic_floor`), run on the library: no ROS, no database.

Each floor is searched twice from the same start place, by the ranking (:mod:`heracles_ros.search.ranking`:
room labels and similar things on the map, against the walk) and by nearest-room-first (the same bookkeeping of
what has been looked at; the nearest room with anything left). The robot walks the place graph's shortest paths
place by place and the simulated Hydra (:mod:`heracles_ros.execution.sim_hydra`) looks at every step; a search
ends as soon as the hidden thing is seen, or once every room has been looked at. "Similar things" are the
target's family (``worlds.FAMILIES``): the bench's declared commonsense, where the robot has the meaning
resolver's word vectors. A *visit* is one leg to a room; seen on the way there counts for that leg.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import ConfigError
from heracles_ros.execution.sim_hydra import SimHydra, World
from heracles_ros.planning.places import path_indices
from heracles_ros.search.area import area_of, walk_lengths
from heracles_ros.search.runner import Leg, Search, SearchResult
from heracles_ros.search.worlds import FAMILIES, FAMILY_OF, Floor, synthetic_floor

#: The issue's targets: found within this many visits on this share of floors, and this much less walking.
VISITS = 5
TARGET_FOUND_PCT = 90.0
TARGET_SAVED_PCT = 30.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--floors", type=int, default=300, help="seeded floors searched (default: 300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the first floor (default: 0)")
    parser.add_argument("--width", type=int, default=4, help="rooms across a floor (default: 4)")
    parser.add_argument("--height", type=int, default=4, help="rooms along a floor (default: 4)")
    parser.add_argument("--objects-per-room", type=float, default=6.0, help="things on the map per room (default: 6)")
    parser.add_argument("--sensor-range", type=float, default=3.0, help="how far the robot sees, m (default: 3)")


@dataclass(frozen=True)
class Run:
    found: bool
    visits: int
    distance_m: float


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.floors < 1 or args.width < 1 or args.height < 1 or args.width * args.height < 2:
        raise ConfigError("--floors must be >= 1 and a floor needs at least two rooms (--width x --height)")
    if args.objects_per_room < 0 or args.sensor_range <= 0:
        raise ConfigError("--objects-per-room must be >= 0 and --sensor-range > 0")
    runs: dict[str, list[Run]] = {"ranked": [], "nearest": []}
    for seed in range(args.seed, args.seed + args.floors):
        floor = synthetic_floor(seed, width=args.width, height=args.height, objects_per_room=args.objects_per_room)
        world = World(floor.world)
        for policy, nearest_first in (("ranked", False), ("nearest", True)):
            runs[policy].append(search_floor(floor, world, nearest_first=nearest_first,
                                             sensor_range_m=args.sensor_range))
    figures: dict[str, Any] = {"floors": args.floors, "rooms_per_floor": args.width * args.height,
                               "objects_per_room": args.objects_per_room}
    for policy, done in runs.items():
        within = sum(r.found and r.visits <= VISITS for r in done)
        figures[f"{policy}_found_within_{VISITS}_pct"] = 100.0 * within / len(done)
        figures[f"{policy}_found_pct"] = 100.0 * sum(r.found for r in done) / len(done)
        figures[f"{policy}_mean_visits"] = statistics.fmean(r.visits for r in done)
        figures[f"{policy}_mean_distance_m"] = statistics.fmean(r.distance_m for r in done)
    saved = 100.0 * (1.0 - figures["ranked_mean_distance_m"] / figures["nearest_mean_distance_m"]) \
        if figures["nearest_mean_distance_m"] > 0 else 0.0
    figures["distance_saved_pct"] = saved
    figures["target_found_met"] = figures[f"ranked_found_within_{VISITS}_pct"] >= TARGET_FOUND_PCT
    figures["target_saved_met"] = saved >= TARGET_SAVED_PCT
    return figures


def search_floor(floor: Floor, world: World, *, nearest_first: bool, sensor_range_m: float) -> Run:
    """One search of ``floor`` from its start place, the simulated Hydra looking along the walk."""
    graph = floor.graph
    known = [symbol for symbol in world.objects if symbol != floor.target]
    hydra = SimHydra(world, known, sensor_range_m=sensor_range_m)
    start = graph.positions[floor.start]
    if floor.target in hydra.observe(start, start):
        return Run(True, 0, 0.0)
    area = area_of(graph, floor.labels, floor.objects)
    similarity = dict.fromkeys(FAMILIES[FAMILY_OF[floor.target_class]][0], 1.0)
    search = Search(area, similarity, sensor_range_m=sensor_range_m, max_rooms=len(area.rooms),
                    nearest_first=nearest_first)
    here = [floor.start]

    def walk(room: str, viewpoint: str) -> Leg:
        source, goal = here[0], graph.index[viewpoint]
        _, predecessors = graph.shortest_paths([source])
        positions = []
        path = path_indices(predecessors[0], source, goal)
        for before, after in itertools.pairwise(path):
            here[0] = after
            positions.append((float(graph.positions[after][0]), float(graph.positions[after][1])))
            if floor.target in hydra.observe(graph.positions[before], graph.positions[after]):
                return Leg("found", positions, found=floor.target, found_where=world.objects[floor.target].room)
        return Leg("arrived", positions)

    result: SearchResult = search.run((float(start[0]), float(start[1])), walk,
                                      lambda xy: walk_lengths(graph, area, xy))
    return Run(result.outcome == "found", len(result.visited), result.distance_m)
