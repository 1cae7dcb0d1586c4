"""What a plan promises, on scenes built so the promise can fail: rooms kept out of, optimality reported truly.

The detour scene: the robot starts in R0 and the goal lies in R2; the straight
way (3 m) runs through R1, the only other way is a corridor through R3
(about 7.6 m). So the unconstrained, proved-optimal route must cross R1, and a
route that keeps out of R1 must take the corridor.

    P10 ---- P11 ---- P12        R3 (corridor)
     |                 |
    P0 ---- P1 ---- P2 ---- P3   R0 | R1 (P1 with O1, P2) | R2 (P3 with O0)
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import spark_dsg as dsg
from support.tiny_scene import node_id

from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.outcomes import PlanStatus
from heracles_ros.plan_types import PlanResult
from heracles_ros.planning.planner import Planner

PLACES = {
    "P0": ((0.0, 0.0, 0.0), "R0"),
    "P1": ((1.0, 0.0, 0.0), "R1"),
    "P2": ((2.0, 0.0, 0.0), "R1"),
    "P3": ((3.0, 0.0, 0.0), "R2"),
    "P10": ((0.0, 2.0, 0.0), "R3"),
    "P11": ((1.5, 3.0, 0.0), "R3"),
    "P12": ((3.0, 2.0, 0.0), "R3"),
}
LINKS = [("P0", "P1"), ("P1", "P2"), ("P2", "P3"), ("P0", "P10"), ("P10", "P11"), ("P11", "P12"), ("P12", "P3")]
STRAIGHT = 3.0
DETOUR = 2.0 + 2 * math.dist((0.0, 2.0), (1.5, 3.0)) + 2.0


def detour_scene() -> dsg.DynamicSceneGraph:
    graph = dsg.DynamicSceneGraph()
    graph.metadata.add({"labelspaces": {"_l2p0": [[0, "box"]]}})
    building = dsg.NodeAttributes()
    building.position = np.array([1.5, 1.0, 0.0])
    graph.add_node(5, node_id("B0"), building)
    for room in ("R0", "R1", "R2", "R3"):
        members = [np.array(p) for p, r in PLACES.values() if r == room]
        attrs = dsg.RoomNodeAttributes()
        attrs.position = np.mean(members, axis=0)
        attrs.name = room.lower()
        graph.add_node(4, node_id(room), attrs)
        graph.insert_edge(node_id("B0"), node_id(room))
    for symbol, (position, room) in PLACES.items():
        place = dsg.Place2dNodeAttributes()
        place.position = np.array(position)
        graph.add_node(3, node_id(symbol), place, 1)
        graph.insert_edge(node_id(room), node_id(symbol))
    for a, b in LINKS:
        graph.insert_edge(node_id(a), node_id(b))
    for obj, (place, x) in {"O0": ("P3", 3.0), "O1": ("P1", 1.0)}.items():
        box = dsg.ObjectNodeAttributes()
        box.position = np.array([x, 0.3, 0.2])
        box.semantic_label = 0
        box.bounding_box = dsg.BoundingBox(np.array([0.3, 0.3, 0.3]), box.position)
        graph.add_node(2, node_id(obj), box)
        graph.insert_edge(node_id(place), node_id(obj))
    return graph


@pytest.fixture
def planner(store: GraphStore) -> Planner:
    Mirror(store).reconcile(detour_scene())
    return Planner(store, timeout_s=30.0)


def walked(plan: PlanResult) -> list[str]:
    return [s for a in plan.actions if a.name == "goto" for s in a.waypoint_symbols]


@pytest.mark.parametrize("goal", ["(visited-place P3)", "(visited-room R2)", "(holding O0)"])
def test_kept_out_of_a_room_the_free_route_provably_crosses(planner: Planner, goal: str) -> None:
    forbidden = {"P1", "P2"}
    assert {planner.place_graph().symbols[i] for i in planner.place_graph().room_places["R1"]} == forbidden
    free = planner.plan(goal, from_symbol="P0")
    assert free.status is PlanStatus.SOLVED and free.optimal, free.reason
    assert set(walked(free)) & forbidden, walked(free)  # the premise: the free route does enter R1
    walk_cost = sum(a.cost for a in free.actions if a.name == "goto")
    assert walk_cost == pytest.approx(STRAIGHT, abs=0.01)

    kept_out = planner.plan(f"(and {goal} (not (visited-room R1)))", from_symbol="P0")
    assert kept_out.status is PlanStatus.SOLVED and kept_out.optimal, kept_out.reason
    route = walked(kept_out)
    assert not set(route) & forbidden, route
    assert route[:4] == ["P0", "P10", "P11", "P12"] and route[-1] == "P3"
    assert kept_out.total_cost - free.total_cost == pytest.approx(DETOUR - STRAIGHT, abs=0.02)


def test_an_object_is_visited_by_walking_to_it_and_avoided_by_keeping_off_its_place(planner: Planner) -> None:
    visit = planner.plan("(visited-object O0)", from_symbol="P0")
    assert visit.status is PlanStatus.SOLVED and walked(visit) == ["P0", "P1", "P2", "P3"], visit.reason
    kept_off = planner.plan("(and (visited-place P3) (not (visited-object O1)))", from_symbol="P0")
    assert kept_off.status is PlanStatus.SOLVED and kept_off.optimal, kept_off.reason
    assert "P1" not in walked(kept_off) and walked(kept_off)[-1] == "P3", walked(kept_off)


def test_holding_one_object_leaves_the_others_where_they_lie(planner: Planner, store: GraphStore) -> None:
    """The robot holds O1 (picked up earlier): O0, whose symbol sorts before it, is still at P3."""
    RobotStateStore(store).write(RobotState((0.0, 0.0, 0.0), place="P0", holding="O1"))
    plan = planner.plan("(and (visited-object O0) (not (visited-room R1)))")
    assert plan.status is PlanStatus.SOLVED, plan.reason
    assert walked(plan)[-1] == "P3" and not {"P1", "P2"} & set(walked(plan))


def test_forbidding_the_only_way_is_unsolvable(planner: Planner) -> None:
    plan = planner.plan("(and (visited-place P3) (not (visited-room R1)) (not (visited-room R3)))", from_symbol="P0")
    assert plan.status is PlanStatus.UNSOLVABLE and not plan.actions, plan.reason


@pytest.mark.backends("falkordb")
def test_a_plan_whose_optimality_was_not_proved_says_so(small_store: GraphStore) -> None:
    """No time to prove: the best plan found is returned, marked not optimal, and the reason says why."""
    goal = "(and " + " ".join(f"(visited-place P{i})" for i in (11, 27, 42, 63, 81, 99)) + ")"
    rushed = Planner(small_store, timeout_s=30.0, prove_s=0.0).plan(goal, from_symbol="P0")
    assert rushed.status is PlanStatus.SOLVED, rushed.reason
    assert not rushed.optimal
    assert "cost-optimality not proved" in rushed.reason
    patient = Planner(small_store, timeout_s=30.0, prove_s=20.0).plan("(visited-place P11)", from_symbol="P0")
    assert patient.optimal and "not proved" not in patient.reason
