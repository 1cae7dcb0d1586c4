"""``heracles bench search`` runs at a small size and its figures agree with each other and with the floors."""
from __future__ import annotations

import math

import pytest
from support.cli import heracles

from heracles_ros.bench.search import search_floor
from heracles_ros.execution.sim_hydra import World
from heracles_ros.search.worlds import synthetic_floor


def test_bench_search_reports_both_policies_consistently(capsys) -> None:
    status, figures, err = heracles(capsys, "bench", "search", "--floors", "8", "--seed", "3", "--json")
    assert status == 0, err
    assert figures["floors"] == 8 and figures["rooms_per_floor"] == 16
    for policy in ("ranked", "nearest"):
        assert 0.0 <= figures[f"{policy}_found_within_5_pct"] <= figures[f"{policy}_found_pct"] <= 100.0
        assert 0.0 < figures[f"{policy}_mean_visits"] <= 16
        assert figures[f"{policy}_mean_distance_m"] > 0.0
    saved = 100.0 * (1.0 - figures["ranked_mean_distance_m"] / figures["nearest_mean_distance_m"])
    assert figures["distance_saved_pct"] == pytest.approx(saved)
    assert figures["target_found_met"] == (figures["ranked_found_within_5_pct"] >= 90.0)
    assert figures["target_saved_met"] == (saved >= 30.0)


@pytest.mark.parametrize("nearest_first", [False, True], ids=["ranked", "nearest"])
def test_each_search_walks_to_within_sight_of_what_it_found(nearest_first: bool) -> None:
    """A found thing was walked to within sensor range, along the floor's place graph (edges of 1 m: a whole
    number of metres), and most floors' things are found."""
    found = 0
    for seed in range(6):
        floor = synthetic_floor(seed)
        world = World(floor.world)
        run = search_floor(floor, world, nearest_first=nearest_first, sensor_range_m=3.0)
        start = floor.graph.positions[floor.start][:2]
        straight = math.dist(start, world.objects[floor.target].xy)
        if run.found:
            found += 1
            assert run.distance_m >= straight - 3.0 - 1e-6, (seed, run, straight)
            assert run.distance_m == pytest.approx(round(run.distance_m)), (seed, run)
            assert run.visits >= (1 if straight > 3.0 else 0), (seed, run)
    assert found >= 5


def test_bench_search_refuses_a_floor_of_one_room(capsys) -> None:
    status, _, err = heracles(capsys, "bench", "search", "--width", "1", "--height", "1")
    assert status == 1 and "two rooms" in err
