"""Plans checked against the world: the rules on a hand-made world, and the world read from a real database.

The tiny scene: places P0..P5 on a line at x = 0..5, O2 (a bicycle) in P4 at (4, 1, 0.5),
O4 in no place. Each refusal must name the step and what was wrong with it.
"""
from __future__ import annotations

import math

import pytest
from support.tiny_scene import tiny_scene

from heracles_ros.errors import ConfigError
from heracles_ros.execution.plan_check import Located, PlanLimits, check_plan, plan_symbols, read_world
from heracles_ros.execution.robot_state import RobotState
from heracles_ros.mirror.reconcile import Mirror
from heracles_ros.outcomes import PlanStatus
from heracles_ros.plan_types import PlanAction, PlanResult
from heracles_ros.schema import Layer

LIMITS = PlanLimits(max_steps=10, max_path_length_m=100.0, tolerance_m=0.5)
AT_P0 = RobotState((0.0, 0.0, 0.0), place="P0")
WORLD = {
    **{f"P{i}": Located(Layer.MESH_PLACE, (float(i), 0.0, 0.0), ("R0",)) for i in range(6)},
    "O2": Located(Layer.OBJECT, (4.0, 1.0, 0.5), ("P4",)),
    "O4": Located(Layer.OBJECT, (2.5, 1.0, 0.5)),
}


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
    assert len(problems) == 9 and problems[-1] == "and 2 more problems"


def test_limits_are_validated():
    for kwargs, name in [({"max_steps": 0}, "max_plan_steps"), ({"max_path_length_m": 0.0}, "max_plan_path_m"),
                         ({"tolerance_m": -1.0}, "plan_tolerance_m")]:  # fmt: skip
        with pytest.raises(ConfigError, match=name):
            PlanLimits(**kwargs)


def test_the_world_is_read_from_the_database(store):
    Mirror(store).reconcile(tiny_scene())
    symbols = plan_symbols(plan(goto(0, 4), pick(), PlanAction("pick", ("O4",), "O4", (2.5, 1.0, 0.5))))
    assert symbols == ["P4", "P0", "P1", "P2", "P3", "O2", "O4"]
    world = read_world(store, [*symbols, "P77"])
    assert set(world) == set(symbols)  # P77 is not in the database
    assert world["P3"].layer is Layer.MESH_PLACE and world["P3"].position == pytest.approx((3.0, 0.0, 0.0))
    assert world["O2"].layer is Layer.OBJECT and world["O2"].position == pytest.approx((4.0, 1.0, 0.5))
    assert world["O2"].containers == ("P4",) and world["O4"].containers == ()
    # Read from the database, the same rules hold: the far pick is refused, the true plan passes.
    assert check_plan(plan(goto(0, 4), pick()), AT_P0, world, LIMITS) == []
    assert check_plan(plan(pick()), AT_P0, world, LIMITS)
