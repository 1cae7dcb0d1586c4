"""The plan benchmark's pieces, and a cross-check: the compact problem loses nothing against the naive one.

The naive encoding puts every place of the small scene into the PDDL problem
with roads only between neighbours; both are solved optimally by the same Fast
Downward search, so their costs must agree.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from heracles_ros.bench.plan import naive_problem, random_goals
from heracles_ros.cli import main
from heracles_ros.formats.pddl_goal import parse_goal
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.planning.fast_downward import run_fast_downward
from heracles_ros.planning.planner import Planner
from heracles_ros.planning.problem import COST_SCALE
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.scene.tables import extract_tables
from heracles_ros.schema import Layer

GOALS = [
    "(or (visited-room R3) (holding O1))",
    "(and (safe O9) (visited-room R1))",
    "(and (visited-place P99) (not (visited-room R1)))",
    "(object-in-place O3 P7)",
]


@pytest.mark.backends("falkordb")  # the planner's encodings, not the database: one backend is enough
@pytest.mark.parametrize("goal", GOALS)
def test_compact_cost_equals_naive_cost(small_store: GraphStore, goal: str) -> None:
    planner = Planner(small_store, timeout_s=60.0)
    compact = planner.plan(goal, from_symbol="P0")
    naive = run_fast_downward(
        planner.domain.text, naive_problem(planner.place_graph(), planner, goal, "P0"), timeout_s=60.0,
        search=planner.search,
    )
    assert compact.ok and compact.optimal and naive.ok and naive.optimal
    assert compact.total_cost == pytest.approx(naive.cost / COST_SCALE, abs=0.02)


def test_random_goals_are_valid_and_sized(small_store: GraphStore) -> None:
    planner = Planner(small_store)
    goals = random_goals(np.random.default_rng(3), planner.place_graph(), ["O1", "O2", "O3", "O4"], 10)
    assert len(goals) == 10 and sum(g.startswith("(or") for g in goals) == 3
    for goal in goals:
        planner.check(goal)
        assert 1 <= len({a for a in goal.replace("(", " ").replace(")", " ").split() if a[1:].isdigit()}) <= 5
        parse_goal(goal)


def test_the_benchmark_plans_on_the_large_scene_at_the_scale_given(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "plan", "--scale", "0.05", "--goals", "5", "--skip-naive", "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    layers = [row[0] for row in extract_tables(generate_scene("large", 0, scale=0.05)).nodes.values()]
    assert figures["scene"] == "large seed 0 scale 0.05"
    assert figures["scene_nav_places"] == layers.count(Layer.MESH_PLACE)
    assert figures["scene_places"] == layers.count(Layer.MESH_PLACE) + layers.count(Layer.PLACE)
    assert figures["goals"] == 5 and sum(figures["statuses"].values()) == 5
    assert 0 < figures["median_s"] <= figures["p95_s"] <= figures["max_s"]


def test_the_churn_run_follows_the_mirrors_changes_without_reading_the_whole_graph(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Plans while another connection mirrors 1 %-changed snapshots: every update is followed through the change
    log (the figures are reported, not bounded)."""
    argv = ["bench", "plan", "--scale", "0.05", "--goals", "6", "--skip-naive", "--churn", "0.2", "--json"]
    assert main(argv) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["churn_snapshots"] >= 1 and figures["graph_changes"] >= 1
    assert figures["graph_whole_reads"] == 0
    assert sum(figures["churn_statuses"].values()) == 6
    assert 0 < figures["churn_graph_median_s"] <= figures["churn_median_s"] <= figures["churn_max_s"]
