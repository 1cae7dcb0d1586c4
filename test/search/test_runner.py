"""A search over the live map (real FalkorDB, the real planner's place graph), walked by the simulated Hydra's
perception without ROS: it ends as soon as the hidden thing is seen, or lists where it looked."""
from __future__ import annotations

import math

import pytest

from heracles_ros.execution.sim_hydra import SimHydra, World
from heracles_ros.planning.planner import Planner
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.search.area import search_area, walk_lengths
from heracles_ros.search.ranking import MapObject, next_room, prior
from heracles_ros.search.runner import Leg, Search

pytestmark = pytest.mark.backends("falkordb")


def teleport_walk(area, hydra: SimHydra, here: list[tuple[float, float]], what: str):
    """Legs walked in a straight line in 0.5 m steps, the simulated Hydra looking at each."""
    def walk(room: str, viewpoint: str) -> Leg:
        goal = area.place_xy[viewpoint]
        start = here[0]
        steps = max(1, math.ceil(math.dist(start, goal) / 0.5))
        positions = []
        for k in range(1, steps + 1):
            xy = (start[0] + (goal[0] - start[0]) * k / steps, start[1] + (goal[1] - start[1]) * k / steps)
            positions.append(xy)
            seen = [symbol for symbol in hydra.observe((*(positions[-2] if len(positions) > 1 else start), 0.0),
                                                       (*xy, 0.0))
                    if hydra.world.objects[symbol].class_name == what]
            if seen:
                here[0] = xy
                return Leg("found", positions, found=seen[0], found_where=room)
        here[0] = goal
        return Leg("arrived", positions)
    return walk


def searched(small_store, what_class: str, hidden_at: list[str]):
    world = generate_scene("small", 0)
    from heracles_ros.search.worlds import hide_objects
    hidden = hide_objects(world, "fire extinguisher", hidden_at)
    known = [row["s"] for row in small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s")]
    hydra = SimHydra(World(world), known)
    graph = Planner(small_store).place_graph()
    area = search_area(small_store, graph)
    here = [(0.0, 0.0)]
    search = Search(area, {what_class: 1.0})
    lines: list[str] = []
    result = search.run(here[0], teleport_walk(area, hydra, here, what_class), lambda xy: walk_lengths(graph, area, xy),
                        feedback=lines.append)
    return result, hidden, lines


def test_the_search_ends_as_soon_as_the_hidden_thing_is_seen_naming_it(small_store):
    result, hidden, lines = searched(small_store, "fire extinguisher", ["P77"])  # in R3, far corner
    assert result.outcome == "found" and result.found == hidden[0] and result.where == "R3"
    assert result.visited[-1] == "R3" and len(result.visited) <= 4
    assert 8.0 < result.distance_m < 40.0
    assert lines and lines[0].startswith("looking in ")


def test_a_search_for_what_the_world_lacks_ends_not_found_listing_the_rooms_looked_at(small_store):
    result, _, lines = searched(small_store, "unicorn", ["P77"])
    assert result.outcome == "not_found" and result.found is None
    assert sorted(result.visited) == ["R0", "R1", "R2", "R3"]  # every reachable room; the shed is cut off
    assert "reached" in result.reason or "looked at" in result.reason
    assert len(lines) == 4


def test_rooms_whose_label_held_similar_things_rank_first_and_nearest_first_ignores_them():
    rooms = {"R0": "hallway", "R1": "kitchen", "R2": "kitchen", "R3": "office"}
    objects = [MapObject("mug", "R1"), MapObject("kettle", "R1"), MapObject("laptop", "R3")]
    p = prior(rooms, objects, {"mug": 0.8, "kettle": 0.8, "plate": 1.0})
    assert max(p, key=p.get) == "R1" and p["R2"] > p["R0"] and math.isclose(sum(p.values()), 1.0)
    walks = {"R0": 30.0, "R1": 8.0, "R2": 4.0, "R3": 6.0}
    assert next_room(p, walks) == "R1"  # p / (d + 4 m): 0.41 / 12 beats the nearer kitchen's 0.23 / 8
    assert next_room(p, walks, nearest_first=True) == "R2"
    assert next_room(p, {**walks, "R0": 0.5}) == "R0"  # a likely-enough room at the robot's feet goes first
    assert next_room({room: 0.0 for room in rooms}, walks) is None
