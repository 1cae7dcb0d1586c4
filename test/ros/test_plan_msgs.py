"""Plan / progress / result conversions: lossless round trips and refusals."""
from __future__ import annotations

import pytest

from heracles_ros.errors import PlanningError
from heracles_ros.execution.plan_runner import DispatchOutcome, ProgressEvent
from heracles_ros.execution.remaining import Remaining, SpeedBasis
from heracles_ros.execution.robot_state import RobotState
from heracles_ros.outcomes import DispatchStatus, PlanStatus, StepState
from heracles_ros.plan_types import PlanAction, PlanResult
from heracles_ros.ros.plan_msgs import outcome_to_msg, plan_from_msg, plan_to_msg, progress_to_msg

PLAN = PlanResult(
    PlanStatus.SOLVED,
    "(object-in-place O2 P0)",
    "P0",
    [
        PlanAction(
            "goto", ("P0", "P4"), "P4", (4.0, 0.0, 0.25),
            ((0.0, 0.0, 0.0), (2.5, -1.0, 0.0), (4.0, 0.0, 0.25)), ("P0", "p17", "P4"), cost=4.25,
        ),
        PlanAction("pick", ("O2", "P4"), "O2", (4.0, 1.0, 0.5), cost=1.0),
        PlanAction("goto", ("P4", "P0"), "P0", (0.0, 0.0, 0.0), ((4.0, 0.0, 0.25), (0.0, 0.0, 0.0)), ("P4", "P0"), 4.0),
        PlanAction("place", ("O2", "P0"), "O2", (0.0, 0.0, 0.0), cost=1.0),
    ],
    total_cost=10.25,
    timings={"total": 0.3},
)


def test_a_solved_plan_survives_the_round_trip_field_by_field():
    msg = plan_to_msg(PLAN, plan_id="cmd-7", frame_id="world")
    assert msg.plan_id == "cmd-7" and msg.header.frame_id == "world"
    assert msg.goal == PLAN.goal and msg.start_symbol == "P0" and len(msg.steps) == 4
    assert msg.steps[0].waypoint_symbols == ["P0", "p17", "P4"]  # case kept: p17 and P17 differ
    assert (msg.steps[0].waypoints[1].x, msg.steps[0].waypoints[1].y) == (2.5, -1.0)
    back = plan_from_msg(msg)
    assert back.status is PlanStatus.SOLVED
    assert back.actions == PLAN.actions  # tuples, floats and symbols all equal
    assert (back.goal, back.start_symbol, back.total_cost) == (PLAN.goal, PLAN.start_symbol, PLAN.total_cost)


def test_an_unsolved_plan_is_not_turned_into_a_runnable_message():
    unsolvable = PlanResult(PlanStatus.UNSOLVABLE, "(holding O9)", reason="O9 is unreachable", unreachable=["O9"])
    with pytest.raises(PlanningError, match="unsolvable: O9 is unreachable"):
        plan_to_msg(unsolvable, plan_id="x")


def test_progress_and_result_carry_every_field():
    event = ProgressEvent(
        plan_id="cmd-7", state=StepState.FAILED, step_index=1, step_count=4, action="pick",
        target_symbol="O2", message="step 1 (pick O2) failed: missed", position=(4.0, 0.5, 0.0), replans=1,
        plan=PLAN, remaining=Remaining(4.5, 9.0, SpeedBasis.NOMINAL),
    )  # fmt: skip
    msg = progress_to_msg(event, frame_id="map")
    assert (msg.plan_id, msg.state, msg.step_index, msg.step_count) == ("cmd-7", "failed", 1, 4)
    assert (msg.action, msg.target_symbol, msg.replans) == ("pick", "O2", 1)
    assert msg.message == event.message and msg.header.frame_id == "map"
    assert (msg.robot_position.x, msg.robot_position.y, msg.robot_position.z) == (4.0, 0.5, 0.0)
    assert (msg.distance_remaining_m, msg.time_remaining_s, msg.speed_basis) == (4.5, 9.0, "nominal")

    outcome = DispatchOutcome(
        "cmd-7", DispatchStatus.SUCCEEDED, "", 5, 1, RobotState((0.0, 0.0, 0.0), place="P0", holding="O2")
    )
    result = outcome_to_msg(outcome)
    assert (result.plan_id, result.status, result.success) == ("cmd-7", "succeeded", True)
    assert (result.steps_completed, result.replans, result.robot_place, result.holding) == (5, 1, "P0", "O2")
    cancelled = outcome_to_msg(DispatchOutcome("c", DispatchStatus.CANCELLED, "stop", 0, 0, RobotState((0, 0, 0))))
    assert (cancelled.status, cancelled.success, cancelled.reason) == ("cancelled", False, "stop")
