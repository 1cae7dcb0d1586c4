"""The planner end to end: a mirrored small synthetic scene on a real FalkorDB, real Fast Downward."""
from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import spark_dsg
from support.tiny_scene import node_id

from heracles_ros.domain import load_domain
from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.outcomes import PlanStatus
from heracles_ros.plan_types import PlanResult
from heracles_ros.planning.planner import Planner


def add_mesh_place(scene: Any, index: int, position: tuple[float, float, float], *, neighbour: str) -> None:
    attrs = spark_dsg.Place2dNodeAttributes()
    attrs.position = np.array(position)
    scene.add_node(3, node_id(f"P{index}"), attrs, 1)
    scene.insert_edge(node_id(neighbour), node_id(f"P{index}"))


@pytest.fixture
def planner(small_store: GraphStore) -> Planner:
    return Planner(small_store, timeout_s=30.0)


def room_places(planner: Planner, room: str) -> set[str]:
    graph = planner.place_graph()
    return {graph.symbols[i] for i in graph.room_places[room]}


def walked(plan: PlanResult) -> list[str]:
    return [s for a in plan.actions if a.name == "goto" for s in a.waypoint_symbols]


def test_and_goal_inspects_and_picks(planner: Planner) -> None:
    plan = planner.plan("(AND (safe O1) (holding O3))", from_symbol="P0")
    assert plan.status is PlanStatus.SOLVED, plan.reason
    assert plan.start_symbol == "P0" and plan.optimal
    names = [(a.name, a.target_symbol) for a in plan.actions]
    assert ("inspect", "O1") in names and names[-1] == ("pick", "O3")
    pick = plan.actions[-1]
    assert pick.args == ("O3", "P53")  # O3 lies in mesh place P53
    assert pick.target == pytest.approx((3.096, 5.396, pick.target[2]), abs=1e-3)  # the object's own position
    graph = planner.place_graph()
    for action in plan.actions:
        if action.name != "goto":
            continue
        assert action.waypoint_symbols[-1] == action.target_symbol
        assert action.target == action.waypoints[-1]
        steps = list(zip(action.waypoint_symbols, action.waypoint_symbols[1:], strict=False))
        assert all(graph.matrix[graph.index[a], graph.index[b]] > 0 for a, b in steps)  # real edges only
        length = sum(math.dist(p, q) for p, q in zip(action.waypoints, action.waypoints[1:], strict=False))
        assert action.cost == pytest.approx(length)
    assert plan.total_cost == pytest.approx(sum(a.cost for a in plan.actions), abs=0.02)
    assert {"parse", "validate", "problem", "search", "expand", "total"} <= set(plan.timings)


@pytest.mark.parametrize(
    "goal", ["(or (visited-place P99) (visited-place P11))", "(OR (visited-place P11) (visited-place P99))"]
)
def test_or_goal_takes_the_cheaper_branch(planner: Planner, goal: str) -> None:
    plan = planner.plan(goal, from_symbol="P0")
    assert plan.ok and plan.optimal
    assert [a.target_symbol for a in plan.actions] == ["P11"]
    far = planner.plan("(visited-place P99)", from_symbol="P0")
    assert plan.total_cost == pytest.approx(2.0)
    assert far.total_cost > 2.0


def test_or_goal_cheaper_branch_needs_more_steps(planner: Planner) -> None:
    # Carrying O1 one place over beats walking to the far corner, though it takes three actions.
    plan = planner.plan("(or (visited-place P99) (object-in-place O1 P12))", from_symbol="P0")
    assert plan.ok and plan.optimal
    assert [a.name for a in plan.actions] == ["goto", "pick", "goto", "place"]
    assert plan.actions[-1].args == ("O1", "P12")


def test_not_visited_room_keeps_every_waypoint_out_of_it(planner: Planner) -> None:
    r1 = room_places(planner, "R1")
    free = planner.plan("(visited-place P99)", from_symbol="P0")
    kept_out = planner.plan("(and (visited-place P99) (not (visited-room R1)))", from_symbol="P0")
    assert kept_out.ok and free.ok
    assert walked(kept_out)[-1] == "P99"
    assert not set(walked(kept_out)) & r1
    assert kept_out.total_cost >= free.total_cost


def test_disjuncts_forbidding_different_rooms_are_planned_apart(planner: Planner) -> None:
    goal = "(or (and (visited-place P99) (not (visited-room R1))) (and (visited-place P9) (not (visited-room R2))))"
    plan = planner.plan(goal, from_symbol="P0")
    assert plan.ok
    assert walked(plan)[-1] == "P9"  # 13 m, against 18 m for P99
    assert not set(walked(plan)) & room_places(planner, "R2")


def test_unreachable_symbol_is_named(planner: Planner) -> None:
    plan = planner.plan("(and (visited-place P5) (safe O32))", from_symbol="P0")  # O32 is in the detached shed
    assert plan.status is PlanStatus.UNSOLVABLE
    assert plan.unreachable == ["O32"]
    assert "O32" in plan.reason and "not connected" in plan.reason
    room = planner.plan("(in-room R4)", from_symbol="P0")
    assert room.status is PlanStatus.UNSOLVABLE and room.unreachable == ["R4"]
    # The other branch of an `or` still works.
    assert planner.plan("(or (visited-place P103) (visited-place P5))", from_symbol="P0").ok


def test_contradictory_goal_is_unsolvable_without_unreachable_symbols(planner: Planner) -> None:
    plan = planner.plan("(and (holding O1) (holding O3))", from_symbol="P0")
    assert plan.status is PlanStatus.UNSOLVABLE
    assert plan.unreachable == [] and "contradict" in plan.reason


@pytest.mark.parametrize(
    ("goal", "named"),
    [
        ("(holding O999)", "unknown symbol 'O999'"),
        ("(teleport O1)", "unknown predicate 'teleport'"),
        ("(holding O1 O3)", "wrong arity in (holding O1 O3)"),
        ("(visited-room P5)", "wrong kind in (visited-room P5)"),
        ("(and (holding O1)", "missing ')'"),
    ],
)
def test_invalid_goals_are_rejected_before_fast_downward(planner: Planner, goal: str, named: str) -> None:
    plan = planner.plan(goal)
    assert plan.status is PlanStatus.INVALID_GOAL
    assert named in plan.reason
    assert "search" not in plan.timings and "problem" not in plan.timings and not plan.actions


def test_starts_from_the_recorded_robot_state(planner: Planner, small_store: GraphStore) -> None:
    RobotStateStore(small_store).write(RobotState((5.0, 5.0, 0.0), place="P55", holding="O3"))
    plan = planner.plan("(object-in-place O3 P50)")
    assert plan.ok and plan.start_symbol == "P55" and plan.reason == ""
    assert [(a.name, a.target_symbol) for a in plan.actions] == [("goto", "P50"), ("place", "O3")]
    assert plan.actions[-1].target == plan.actions[0].target  # put down where the robot stands
    # An explicit start overrides the recorded place (the held object stays held).
    assert planner.plan("(object-in-place O3 P50)", from_symbol="P51").actions[0].waypoint_symbols == ("P51", "P50")


def test_an_object_already_where_the_goal_wants_it_needs_no_step(planner: Planner) -> None:
    stay = planner.plan("(object-in-place O3 P53)", from_symbol="P0")  # O3 lies in P53
    assert stay.ok and stay.actions == [], stay.reason
    away = planner.plan("(not (object-in-place O3 P53))", from_symbol="P0")
    assert away.ok and [a.name for a in away.actions][:2] == ["goto", "pick"]


def test_without_robot_state_starts_near_the_origin(planner: Planner) -> None:
    plan = planner.plan("(visited-place P2)")
    assert plan.ok and plan.start_symbol == "P0"
    assert "no robot state" in plan.reason


def test_unknown_recorded_place_starts_nearest_the_recorded_position(planner: Planner, small_store: GraphStore) -> None:
    RobotStateStore(small_store).write(RobotState((5.0, 5.0, 0.0), holding="O3"))
    graph = planner.place_graph()
    plan = planner.plan("(object-in-place O3 P50)")
    assert plan.ok and plan.start_symbol == graph.symbols[graph.nearest_place((5.0, 5.0, 0.0))]
    assert "robot place unknown" in plan.reason and plan.start_symbol in plan.reason
    assert plan.actions[-1].name == "place"  # still holding O3: nothing to pick first


def test_orphan_object_and_3d_place(planner: Planner) -> None:
    orphan = planner.plan("(holding O5)", from_symbol="P0")  # O5 has no parent place
    assert orphan.ok
    goto, pick = orphan.actions
    assert pick.name == "pick" and pick.target == pytest.approx((9.342, 2.374, pick.target[2]), abs=1e-3)
    assert math.dist(goto.target[:2], pick.target[:2]) < 1.0  # walked to the place nearest the object
    place3d = planner.plan("(at-place p5)", from_symbol="P0")
    assert place3d.ok and place3d.actions[-1].target_symbol == "p5"
    assert place3d.actions[-1].waypoint_symbols[-2].startswith("P")  # on the ground until the last hop


def test_place_graph_is_cached_until_the_mirror_changes_then_follows_its_changes(
    planner: Planner, small_store: GraphStore, small_scene: Any
) -> None:
    graph = planner.place_graph()
    assert planner.place_graph() is graph
    # Cut one doorway edge between R0 and R2: the next read follows it, without reading the whole graph again.
    small_scene.remove_edge(node_id("P42"), node_id("P52"))
    Mirror(small_store).reconcile(small_scene)
    fresh = planner.place_graph()
    assert fresh is not graph and planner.graph_reads == {"whole": 1, "changes": 1}
    assert fresh.matrix[fresh.index["P42"], fresh.index["P52"]] == 0
    assert fresh.matrix[fresh.index["P47"], fresh.index["P57"]] > 0
    assert planner.place_graph() is fresh


def test_a_graph_read_while_a_reconcile_seemed_to_run_is_kept_and_followed_on(
    small_store: GraphStore, small_scene: Any
) -> None:
    """With a graph cached, a plan does not wait for a reconcile under way (or one killed mid-way): it follows
    the log up to the last generation written whole at once, and keeps what it read; the next read follows the
    log from the generation read before it, instead of reading the whole graph again (at 10^5 places that
    read overlapped every snapshot, and each plan re-read the graph for seconds)."""
    planner = Planner(small_store, snapshot_wait_s=60.0)
    planner.place_graph()
    small_scene.remove_edge(node_id("P42"), node_id("P52"))
    Mirror(small_store).reconcile(small_scene)
    small_store.write("MATCH (m:MirrorMeta {id: 'mirror'}) SET m.writing = true")
    started = time.monotonic()
    mixed = planner.place_graph()
    assert planner.place_graph() is mixed and time.monotonic() - started < 30.0  # neither waited its 60 s
    assert mixed.matrix[mixed.index["P42"], mixed.index["P52"]] == 0
    small_store.write("MATCH (m:MirrorMeta {id: 'mirror'}) SET m.writing = false")
    small_scene.remove_edge(node_id("P47"), node_id("P57"))
    Mirror(small_store).reconcile(small_scene)
    fresh = planner.place_graph()
    assert fresh.matrix[fresh.index["P47"], fresh.index["P57"]] == 0
    assert planner.graph_reads == {"whole": 1, "changes": 2}


def test_a_generation_the_log_does_not_list_is_read_whole(
    planner: Planner, small_store: GraphStore, small_scene: Any
) -> None:
    """A mirror restarted over a reconcile stopped half-way lists nothing for its first generation: what the
    stopped one wrote is in no entry, so the planner reads the whole graph, and follows the log again after."""
    planner.place_graph()
    small_store.write("MATCH (m:MirrorMeta {id: 'mirror'}) SET m.writing = true")
    small_scene.remove_edge(node_id("P42"), node_id("P52"))
    Mirror(small_store).reconcile(small_scene)
    graph = planner.place_graph()
    assert planner.graph_reads == {"whole": 2, "changes": 0}
    assert graph.matrix[graph.index["P42"], graph.index["P52"]] == 0
    small_scene.remove_edge(node_id("P47"), node_id("P57"))
    Mirror(small_store).reconcile(small_scene)
    planner.place_graph()
    assert planner.graph_reads == {"whole": 2, "changes": 1}


def test_a_plan_after_a_snapshot_that_moved_removed_and_added_places_walks_the_new_graph(
    planner: Planner, small_store: GraphStore, small_scene: Any
) -> None:
    """The small scene's mesh places are a 1 m grid, P(10y + x) at (x, y)."""
    assert planner.plan("(at-place P47)", from_symbol="P46").total_cost == pytest.approx(1.0)
    around = planner.plan("(at-place P43)", from_symbol="P41")
    assert around.total_cost == pytest.approx(2.0) and around.actions[0].waypoint_symbols == ("P41", "P42", "P43")
    small_scene.get_node(node_id("P47")).attributes.position = np.array([7.0, 4.6, 0.0])
    small_scene.remove_node(node_id("P42"))
    add_mesh_place(small_scene, 200, (10.0, 0.0, 0.0), neighbour="P9")
    Mirror(small_store).reconcile(small_scene)
    moved = planner.plan("(at-place P47)", from_symbol="P46")
    around = planner.plan("(at-place P43)", from_symbol="P41")
    added = planner.plan("(at-place P200)", from_symbol="P9")
    assert planner.graph_reads == {"whole": 1, "changes": 1}  # the first plan after the snapshot followed it
    assert moved.actions[0].cost == pytest.approx(math.hypot(1.0, 0.6))
    assert around.ok and "P42" not in around.actions[0].waypoint_symbols and around.total_cost > 2.0
    assert added.ok and added.actions[0].waypoint_symbols == ("P9", "P200")


def test_goal_naming_a_new_place_reloads_a_young_cache(
    planner: Planner, small_store: GraphStore, small_scene: Any
) -> None:
    graph = planner.place_graph()
    add_mesh_place(small_scene, 200, (10.0, 0.0, 0.0), neighbour="P9")
    Mirror(small_store).reconcile(small_scene)
    plan = planner.plan("(at-place P200)", from_symbol="P9")
    assert plan.ok and plan.actions[0].waypoint_symbols == ("P9", "P200")
    assert planner.place_graph() is not graph


def test_timeout_and_planner_failure_are_statuses(small_store: GraphStore, tmp_path: Path) -> None:
    slow = Planner(small_store, timeout_s=0.01).plan("(visited-place P99)", from_symbol="P0")
    assert slow.status is PlanStatus.TIMEOUT and "0.01 s" in slow.reason
    broken = tmp_path / "domain.pddl"
    broken.write_text(load_domain().text.replace("(at-place ?from) (road ?from ?to)", "(at-place ?nowhere)"))
    failed = Planner(small_store, domain_path=broken).plan("(visited-place P99)", from_symbol="P0")
    assert failed.status is PlanStatus.ERROR and "exit code 31" in failed.reason and "?nowhere" in failed.reason
    bad_start = Planner(small_store).plan("(visited-place P99)", from_symbol="O1")
    assert bad_start.status is PlanStatus.ERROR and "'O1' is not a place" in bad_start.reason


def test_forbidding_the_start_room_is_unsolvable(planner: Planner) -> None:
    plan = planner.plan("(and (visited-place P99) (not (visited-room R0)))", from_symbol="P0")
    assert plan.status is PlanStatus.UNSOLVABLE
    assert "starts at P0, which (not (visited-room R0)) forbids" in plan.reason
    assert "search" not in plan.timings and not plan.actions  # decided without Fast Downward


def test_preload_loads_the_place_graph_so_the_first_plan_does_not(
    small_store: GraphStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="heracles_ros.planning.places")
    planner = Planner(small_store)
    thread = planner.preload()
    thread.join(30.0)
    assert not thread.is_alive()
    assert [r for r in caplog.records if "place graph loaded" in r.getMessage()]
    caplog.clear()
    assert planner.plan("(visited-room R1)").ok
    assert not [r for r in caplog.records if "place graph loaded" in r.getMessage()]


def test_preload_without_a_database_only_warns(caplog: pytest.LogCaptureFixture) -> None:
    from heracles_ros.graphdb.falkordb_store import FalkorStore

    caplog.set_level(logging.WARNING, logger="heracles_ros.planning.planner")
    unreachable = FalkorStore("127.0.0.1", 9, graph="nothing", timeout_s=1.0)  # port 9: nobody listens
    thread = Planner(unreachable).preload()
    thread.join(30.0)
    assert any("place graph not preloaded" in r.getMessage() for r in caplog.records)


def test_the_whole_plan_call_stays_within_its_time_limit(large_store: GraphStore) -> None:
    """Problem building counts: 64 visits on the kilometre-scale scene take ~0.7 s to build, then FD gets the rest."""
    from heracles_ros.formats.pddl_goal import MAX_GOAL_ATOMS

    planner = Planner(large_store, timeout_s=2.0)
    graph = planner.place_graph()  # loaded once, as a running system has it
    step = graph.nav_count // MAX_GOAL_ATOMS
    goal = "(and " + " ".join(f"(visited-place {graph.symbols[i * step]})" for i in range(MAX_GOAL_ATOMS)) + ")"
    started = time.perf_counter()
    result = planner.plan(goal, from_symbol=graph.symbols[1])
    elapsed = time.perf_counter() - started
    assert result.status is PlanStatus.TIMEOUT, result.reason
    assert elapsed < 2.0 + 0.3, result.timings  # Fast Downward is stopped at the deadline, not 2 s after building
