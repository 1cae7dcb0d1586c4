"""Bounded shortest-path searches: the plans unbounded searches give, for a fraction of the graph's cost."""
from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
import spark_dsg as dsg
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import dijkstra

from heracles_ros.bench.plan import random_goals
from heracles_ros.formats.pddl_goal import parse_goal
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.planning import paths as paths_module
from heracles_ros.planning.paths import ShortestPaths
from heracles_ros.planning.places import PlaceGraph
from heracles_ros.planning.planner import Planner
from heracles_ros.planning.problem import Start, build_problem
from heracles_ros.scene.tables import symbol_of
from heracles_ros.schema import Layer


def _objects(scene: dsg.DynamicSceneGraph) -> list[str]:
    layer = scene.get_layer(dsg.DsgLayers.OBJECTS)
    return sorted((symbol_of(n.id.value) for n in layer.nodes), key=lambda s: int(s[1:]))


def _plans(planner: Planner, goals: list[tuple[str, str]]) -> list[tuple[Any, ...]]:
    """What a plan is to its user: status, cost, and each action with its cost; a goto's waypoints must be a
    walk along the graph's edges as long as the goto's cost (where two walks tie, either will do)."""
    graph = planner.place_graph()
    out = []
    for goal, start in goals:
        result = planner.plan(goal, from_symbol=start)
        for action in (a for a in result.actions if a.name == "goto"):
            places = [graph.index[s] for s in action.waypoint_symbols]
            steps = [graph.matrix[a, b] for a, b in itertools.pairwise(places)]
            assert all(step > 0 for step in steps) and sum(steps) == pytest.approx(action.cost), (goal, action)
        actions = [(a.name, a.args, round(a.cost, 6)) for a in result.actions]
        out.append((goal, start, result.status, round(result.total_cost, 6), actions))
    return out


def _seeded_goals(planner: Planner, scene: dsg.DynamicSceneGraph, count: int, seed: int) -> list[tuple[str, str]]:
    graph = planner.place_graph()
    rng = np.random.default_rng(seed)
    goals = random_goals(rng, graph, _objects(scene), count)
    return [(goal, graph.symbols[int(rng.integers(graph.nav_count))]) for goal in goals]


def _unbounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every search over the whole graph, as the planner searched before it bounded them."""

    def whole_graph(*args: Any, **kwargs: Any) -> Any:
        kwargs["limit"] = np.inf
        return dijkstra(*args, **kwargs)

    monkeypatch.setattr(paths_module, "dijkstra", whole_graph)


def _bounded_plans_are_whole_graph_plans(store: GraphStore, scene: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeded goals of every kind (rooms big and small, objects, `or`, forbidden rooms) from random starts:
    the same status, cost, actions and action costs with the searches bounded as over the whole graph."""
    planner = Planner(store, timeout_s=30.0)
    goals = _seeded_goals(planner, scene, 30, seed=7)
    bounded = _plans(planner, goals)
    _unbounded(monkeypatch)
    whole = _plans(planner, goals)
    assert [p[2].value for p in bounded].count("solved") >= 20  # the comparison covers real plans
    for got, want in zip(bounded, whole, strict=True):
        assert got == want


def test_bounded_searches_give_the_small_scenes_plans(
    small_store: GraphStore, small_scene: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bounded_plans_are_whole_graph_plans(small_store, small_scene, monkeypatch)


def test_bounded_searches_give_the_kilometre_scale_scenes_plans(
    large_store: GraphStore, large_scene: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bounded_plans_are_whole_graph_plans(large_store, large_scene, monkeypatch)


def test_a_goal_near_the_robot_searches_near_the_robot(large_store: GraphStore) -> None:
    """Places a few metres apart on the 16k-place scene: the searches reach a sliver of the graph, where one
    search over the whole graph reaches all of it (the cost of a plan follows the goal, not the scene)."""
    graph = Planner(large_store).place_graph()
    start = graph.nav_count // 2
    target = graph.nearest_place(graph.positions[start] + np.array([6.0, 4.0, 0.0]))
    assert target is not None and target != start
    expr = parse_goal(f"(visited-place {graph.symbols[target]})")
    problem = build_problem(graph, expr, Start(start), {}, frozenset(), {graph.symbols[target]: Layer.MESH_PLACE})
    assert problem.places == [start, target]
    assert problem.paths.reached < 0.01 * graph.size
    whole, _ = graph.shortest_paths([start])
    assert problem.dist[0, 1] == pytest.approx(whole[0, target], rel=1e-12)
    assert problem.paths.path(start, target)[-1] == target


def _corridor_and_room() -> PlaceGraph:
    """A corridor P0-P3 along x, then a room's places P4-P7 on a loop behind P3, one component."""
    positions = [(float(i), 0.0, 0.0) for i in range(4)] + [(4.0, 0.0, 0.0), (5.0, 1.0, 0.0), (6.0, 0.0, 0.0),
                                                            (5.0, -1.0, 0.0)]
    edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (6, 7), (7, 4)]
    a = np.array([e[0] for e in edges] + [e[1] for e in edges])
    b = np.array([e[1] for e in edges] + [e[0] for e in edges])
    xyz = np.array(positions)
    weights = np.linalg.norm(xyz[a] - xyz[b], axis=1)
    n = len(positions)
    return PlaceGraph(
        symbols=[f"P{i}" for i in range(n)], positions=xyz, matrix=csr_matrix((weights, (a, b)), shape=(n, n)),
        nav_layer=Layer.MESH_PLACE, nav_count=n, room_places={"R1": np.arange(4, 8)},
        room_boundary={"R1": np.array([4])}, room_positions={"R1": (5.0, 0.0, 0.0)},
        room_of=np.array([-1] * 4 + [0] * 4), component=np.zeros(n, dtype=np.int64),
    )


def test_a_place_cut_off_by_what_a_goal_forbids_is_known_unreachable() -> None:
    """With P3 cut off nothing behind it is reachable, which a bounded search must not mistake for 'farther
    than its limit'; with it, a distance and a path found from one end serve the other."""
    graph = _corridor_and_room()
    cut = ShortestPaths(graph, graph.without([3]))
    assert np.isinf(cut.search(0, [6])[6])
    assert cut.distance(6, 0) == np.inf and cut.path(0, 6) == []
    assert not cut.reaches(0, [5, 6, 7])
    walk = ShortestPaths(graph, graph.matrix)
    assert walk.distance(0, 6) == pytest.approx(4.0 + 2 * np.sqrt(2.0))
    assert walk.path(6, 0) in ([6, 5, 4, 3, 2, 1, 0], [6, 7, 4, 3, 2, 1, 0])  # P0's search, walked backwards
    assert walk.reaches(0, [6])
    assert walk.reached < 2 * graph.size  # one search served both ends
