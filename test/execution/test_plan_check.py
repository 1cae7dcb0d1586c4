"""Plans checked against the world: the rules on a hand-made world, and the world read from a real database.

The tiny scene: places P0..P5 on a line at x = 0..5, each joined to the next, O2 (a bicycle)
in P4 at (4, 1, 0.5), O4 in no place; the hand-made world adds a 3D place p0 above P1 and p9
far from every mesh place. Each refusal must name the step and what was wrong with it.
"""
from __future__ import annotations

import math
from dataclasses import replace

import pytest
from support.tiny_scene import tiny_scene

from heracles_ros.errors import ConfigError
from heracles_ros.execution.plan_check import (
    Located,
    PlanLimits,
    World,
    check_plan,
    check_step,
    plan_hops,
    plan_symbols,
    read_world,
)
from heracles_ros.execution.robot_state import RobotState
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.outcomes import PlanStatus
from heracles_ros.plan_types import PlanAction, PlanResult
from heracles_ros.schema import Layer

LIMITS = PlanLimits(max_steps=10, max_path_length_m=100.0, tolerance_m=0.5)
AT_P0 = RobotState((0.0, 0.0, 0.0), place="P0")
LINE = [(f"P{i}", f"P{i + 1}") for i in range(5)]
WORLD = World(
    {
        **{f"P{i}": Located(Layer.MESH_PLACE, (float(i), 0.0, 0.0), ("R0",)) for i in range(6)},
        "p0": Located(Layer.PLACE, (1.0, 0.5, 1.0), ("R0",)),
        "p9": Located(Layer.PLACE, (1.0, 9.0, 1.0), ("R0",)),
        "O2": Located(Layer.OBJECT, (4.0, 1.0, 0.5), ("P4",)),
        "O4": Located(Layer.OBJECT, (2.5, 1.0, 0.5)),
    },
    frozenset(LINE + [(b, a) for a, b in LINE]),
)


def goto(a: int, b: int, **changes) -> PlanAction:
    step = 1 if b >= a else -1
    symbols = tuple(f"P{k}" for k in range(a, b + step, step))
    points = tuple((float(k), 0.0, 0.0) for k in range(a, b + step, step))
    action = PlanAction("goto", (f"P{a}", f"P{b}"), f"P{b}", points[-1], points, symbols)
    return PlanAction(**{**action.__dict__, **changes})


def pick(obj: str = "O2", place: str = "P4", target=(4.0, 1.0, 0.5)) -> PlanAction:
    return PlanAction("pick", (obj, place), obj, target)


def place(obj: str = "O2", at: str = "P0", target=(0.0, 0.0, 0.0)) -> PlanAction:
    return PlanAction("place", (obj, at), obj, target)


def plan(*actions: PlanAction) -> PlanResult:
    return PlanResult(PlanStatus.SOLVED, "(holding O2)", "P0", list(actions))


def test_a_plan_true_to_the_world_passes():
    assert check_plan(plan(goto(0, 4), pick(), goto(4, 0), place()), AT_P0, WORLD, LIMITS) == []


@pytest.mark.parametrize(
    ("actions", "message"),
    [
        ((goto(0, 4, target=(4.0, 1e6, 0.0)),), "step 0 (goto P4): target P4 is given at (4, 1e+06, 0), 1e+06 m"),
        ((goto(0, 4, waypoints=((0.0, 0.0, 0.0), (1.0, 0.0, 0.0), (2.0, 3.0, 0.0), (3.0, 0.0, 0.0),
                                (4.0, 0.0, 0.0))),),
         "step 0 (goto P4): waypoint 2 P2 is given at (2, 3, 0), 3 m from where the database has it"),
        ((goto(0, 4, target=(1e308, 0.0, 0.0)),), "step 0 (goto P4): target P4 is given at (1e+308, 0, 0)"),
        ((goto(0, 4, target=(math.nan, 0.0, 0.0)),), "step 0 (goto P4): target position (nan, 0.0, 0.0) is not finite"),
        ((goto(0, 4, waypoints=((math.inf, 0.0, 0.0),), waypoint_symbols=("P0",)),),
         "step 0 (goto P4): a waypoint position is not finite"),
        ((goto(0, 4, cost=math.inf),), "step 0 (goto P4): cost inf is not finite"),
        ((goto(0, 9),), "step 0 (goto P9): target 'P9' is not in the database"),
        ((goto(0, 4, waypoint_symbols=()),), "step 0 (goto P4): its waypoints name no place symbols"),
        # A pick of an object far from where the robot stands, naming the object's real place.
        ((pick(),), "step 0 (pick O2): the robot will stand at P0, not at P4: a pick needs the robot there"),
        # ... or naming the place the robot stands at, while the database has the object elsewhere.
        ((pick(place="P0"),), "step 0 (pick O2): the database has O2 in P4, not in P0"),
        ((goto(0, 4), pick(target=(400.0, 1.0, 0.5))), "step 1 (pick O2): target O2 is given at (400, 1, 0.5)"),
        ((goto(0, 2), pick("O4", "", (2.5, 1.0, 0.5))), "step 1 (pick O4): the robot will stand at P2, not at O4"),
        ((goto(0, 4), pick(), place(at="P3", target=(3.0, 0.0, 0.0))),
         "step 2 (place O2): the robot will stand at P4, not at P3: a place needs the robot there"),
        ((goto(0, 4), pick(), goto(4, 0), place(target=(0.0, 5.0, 0.0))), "step 3 (place O2): target P0 is given"),
        ((goto(0, 4), pick("O9", "P4")), "step 1 (pick O9): target 'O9' is not in the database"),
    ],
)
def test_a_plan_the_world_contradicts_is_refused_naming_the_step(actions, message):
    problems = check_plan(plan(*actions), AT_P0, WORLD, LIMITS)
    assert any(p.startswith(message) for p in problems), problems


def test_a_pick_within_the_tolerance_of_an_object_without_a_place_passes():
    near_o4 = RobotState((2.5, 0.8, 0.0), place="")
    assert check_plan(plan(pick("O4", "", (2.5, 1.0, 0.5))), near_o4, WORLD, LIMITS) == []


def test_steps_and_path_length_are_bounded_even_without_a_database():
    many = plan(*[goto(0, 1)] * 11)
    assert check_plan(many, AT_P0, WORLD, LIMITS) == ["the plan has 11 steps, more than max_plan_steps (10)"]
    # Twenty walks of 5 m: 100 m is the limit, one more metre is over it.
    roomy = PlanLimits(max_steps=30, max_path_length_m=100.0, tolerance_m=0.5)
    back_and_forth = plan(*[goto(0, 5), goto(5, 0)] * 10)
    assert check_plan(back_and_forth, AT_P0, None, roomy) == []
    back_and_forth.actions.append(goto(0, 1))
    assert check_plan(back_and_forth, AT_P0, None, roomy) == ["the plan walks 101 m, more than max_plan_path_m (100)"]
    far = plan(goto(0, 4, target=(1e308, 0.0, 0.0), waypoints=((-1e308, 0.0, 0.0), (1e308, 0.0, 0.0))))
    assert check_plan(far, AT_P0, None, LIMITS)[0].startswith("the plan walks inf m")


def test_a_refusal_lists_a_bounded_number_of_problems():
    bad = plan(*[goto(0, 4, target=(4.0, 50.0, 0.0))] * 10)
    problems = check_plan(bad, AT_P0, WORLD, LIMITS)
    # Each walk after the first also starts at P0 while the robot is at P4: two problems each, 19 in all.
    assert len(problems) == 9 and problems[-1] == "and 11 more problems"


def test_limits_are_validated():
    for kwargs, name in [({"max_steps": 0}, "max_plan_steps"), ({"max_path_length_m": 0.0}, "max_plan_path_m"),
                         ({"tolerance_m": -1.0}, "plan_tolerance_m"),
                         ({"max_hop_m": 0.0}, "plan_max_hop_m")]:  # fmt: skip
        with pytest.raises(ConfigError, match=name):
            PlanLimits(**kwargs)


def test_the_world_is_read_from_the_database(store):
    Mirror(store).reconcile(tiny_scene())
    true = plan(goto(0, 4), pick(), PlanAction("pick", ("O4",), "O4", (2.5, 1.0, 0.5)))
    symbols = plan_symbols(true)
    assert symbols == ["P4", "P0", "P1", "P2", "P3", "O2", "O4"]
    at_p5 = RobotState((5.0, 0.0, 0.0), place="P5")
    world = read_world(store, plan(goto(0, 4), pick(), goto(77, 77), pick("O4", "")), at_p5)
    assert set(world.located) == {*symbols, "P5"}  # P77 is not in the database; the robot's place is read
    assert world.located["P3"].layer is Layer.MESH_PLACE
    assert world.located["P3"].position == pytest.approx((3.0, 0.0, 0.0))
    assert world.located["O2"].layer is Layer.OBJECT and world.located["O2"].position == pytest.approx((4.0, 1.0, 0.5))
    assert world.located["O2"].containers == ("P4",) and world.located["O4"].containers == ()
    # The hops: P5 to P0 (where the walk starts) is no edge; P0 .. P4 are; P4 to P77 is not (P77 is nowhere).
    assert world.joined == {("P0", "P1"), ("P1", "P2"), ("P2", "P3"), ("P3", "P4")}
    # Read from the database, the same rules hold: the far pick is refused, the true plan passes.
    assert check_plan(plan(goto(0, 4), pick()), AT_P0, read_world(store, plan(goto(0, 4), pick()), AT_P0), LIMITS) == []
    assert check_plan(plan(pick()), AT_P0, read_world(store, plan(pick()), AT_P0), LIMITS)
    jump = plan(goto(0, 1), jumping(1, 4))
    assert check_plan(jump, AT_P0, read_world(store, jump, AT_P0), LIMITS) == [
        "step 1 (goto P4): P1 to P4 is not an edge of the place graph: the walk would leave it"
    ]
    backwards = plan(goto(4, 0))  # the edges are stored both ways; a walk may use either
    at_p4 = RobotState((4.0, 0.0, 0.0), place="P4")
    assert check_plan(backwards, at_p4, read_world(store, backwards, at_p4), LIMITS) == []


def jumping(a: int, b: int) -> PlanAction:
    """A walk from P``a`` straight to P``b``: its waypoints are exactly where the database has them."""
    points = ((float(a), 0.0, 0.0), (float(b), 0.0, 0.0))
    return PlanAction("goto", (f"P{a}", f"P{b}"), f"P{b}", points[-1], points, (f"P{a}", f"P{b}"))


@pytest.mark.parametrize(
    ("actions", "robot", "message"),
    [
        # The report's case: waypoints true to the database, but two of them joined by no edge.
        ((jumping(0, 5),), AT_P0, "step 0 (goto P5): P0 to P5 is not an edge of the place graph"),
        ((goto(0, 1), jumping(1, 5)), AT_P0, "step 1 (goto P5): P1 to P5 is not an edge of the place graph"),
        # A walk that starts at another place than the one the last walk ended at.
        ((goto(0, 2), goto(4, 5)), AT_P0, "step 1 (goto P5): P2 to P4 is not an edge of the place graph"),
        # A walk with no waypoints is a straight line from the robot's place to the target.
        ((PlanAction("goto", ("P0", "P5"), "P5", (5.0, 0.0, 0.0)),), AT_P0,
         "step 0 (goto P5): P0 to P5 is not an edge"),
        ((goto(0, 4, waypoint_symbols=("P0", "P1", "P2", "P3", "P3")),), AT_P0,
         "step 0 (goto P4): its path ends at P3, not at its target"),
        # From no known place, the robot may step onto the graph from at most max_hop_m away.
        ((goto(0, 2),), RobotState((30.0, 0.0, 0.0)),
         "step 0 (goto P2): the robot stands on no known place, 30 m from P0 where the walk starts"),
        # A 3D place hangs off the mesh place nearest it; one far from every mesh place is off the graph.
        ((PlanAction("goto", ("P1", "p9"), "p9", (1.0, 9.0, 1.0), ((1.0, 0.0, 0.0), (1.0, 9.0, 1.0)), ("P1", "p9")),),
         RobotState((1.0, 0.0, 0.0), place="P1"), "step 0 (goto p9): P1 to p9 is not an edge"),
    ],
)
def test_a_walk_that_leaves_the_place_graph_is_refused(actions, robot, message):
    problems = check_plan(plan(*actions), robot, WORLD, LIMITS)
    assert any(p.startswith(message) for p in problems), problems


def test_walks_along_edges_onto_the_graph_and_to_a_3d_place_pass():
    up = PlanAction("goto", ("P1", "p0"), "p0", (1.0, 0.5, 1.0), ((1.0, 0.0, 0.0), (1.0, 0.5, 1.0)), ("P1", "p0"))
    assert check_plan(plan(goto(0, 1), up), AT_P0, WORLD, LIMITS) == []
    beside_p0 = RobotState((-2.5, 1.0, 0.0))  # on no place, 2.7 m from P0: within max_hop_m (3 m)
    assert check_plan(plan(goto(0, 3)), beside_p0, WORLD, LIMITS) == []
    assert check_plan(plan(goto(0, 3)), beside_p0, WORLD, PlanLimits(max_hop_m=2.0, tolerance_m=0.5)) != []


def test_the_hops_read_are_the_walks_from_the_robots_place():
    hops = plan_hops(plan(goto(0, 2), pick(), goto(4, 5)), AT_P0)
    assert hops == [("P0", "P1"), ("P1", "P2"), ("P2", "P4"), ("P4", "P5")]
    assert plan_hops(plan(goto(2, 3)), RobotState((0.0, 0.0, 0.0))) == [("P2", "P3")]


def test_a_step_is_checked_alone_against_the_world_as_it_is_now():
    """What the runner does before each step: the object a pick names is gone (Hydra lost it, an addition
    was reverted) and the step is refused, naming it; the same step passes while the object is there."""
    at_p4 = RobotState((4.0, 0.0, 0.0), place="P4")
    assert check_step(pick(), 3, at_p4, WORLD, LIMITS) == []
    gone = World({s: where for s, where in WORLD.located.items() if s != "O2"}, WORLD.joined)
    assert check_step(pick(), 3, at_p4, gone, LIMITS) == ["step 3 (pick O2): target 'O2' is not in the database"]
    assert check_step(goto(4, 5), 4, at_p4, WORLD, LIMITS) == []
    at_p0 = RobotState((0.0, 0.0, 0.0), place="P0")
    assert check_step(place(), 3, at_p0, gone, LIMITS) == ["step 3 (place O2): no object 'O2' in the database"]
    # Putting down what the robot holds goes ahead though the database lost it (Hydra may, while it is carried).
    assert check_step(place(), 3, replace(at_p0, holding="O2"), gone, LIMITS) == []
    assert check_step(place(target=(0.0, 5.0, 0.0)), 3, replace(at_p0, holding="O2"), gone, LIMITS) != []
    cut = World(WORLD.located, WORLD.joined - {("P4", "P5")})
    assert check_step(goto(4, 5), 4, at_p4, cut, LIMITS) == [
        "step 4 (goto P5): P4 to P5 is not an edge of the place graph: the walk would leave it"
    ]


def test_a_plan_is_checked_with_what_the_robot_will_hold_at_each_step():
    gone = World({s: where for s, where in WORLD.located.items() if s != "O2"}, WORLD.joined)
    holding = RobotState((4.0, 0.0, 0.0), place="P4", holding="O2")
    assert check_plan(plan(goto(4, 0), place()), holding, gone, LIMITS) == []
    # Picked up in the plan, then put down: the pick needs the object, so the plan is refused at the pick only.
    problems = check_plan(plan(goto(0, 4), pick(), goto(4, 0), place()), AT_P0, gone, LIMITS)
    assert problems == ["step 1 (pick O2): target 'O2' is not in the database"]
