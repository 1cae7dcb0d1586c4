"""Conversions between the library's plan / dispatch types and the package's messages.

One place for them, so the language server (which publishes plans) and the
dispatcher (which runs them and reports) agree field by field. A ``Plan``
message carries only solved plans: it has no status, so converting anything
else is refused rather than silently turned into a runnable plan.
"""
from __future__ import annotations

from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point
from std_msgs.msg import Header

from heracles_ros.errors import PlanningError
from heracles_ros.execution.plan_runner import DispatchOutcome, ProgressEvent
from heracles_ros.msg import DispatchProgress, DispatchResult, Plan, PlanStep
from heracles_ros.outcomes import PlanStatus
from heracles_ros.plan_types import PlanAction, PlanResult, Point3


def _header(frame_id: str, stamp: Time | None) -> Header:
    return Header(frame_id=frame_id, stamp=stamp if stamp is not None else Time())


def point_msg(p: Point3) -> Point:
    return Point(x=float(p[0]), y=float(p[1]), z=float(p[2]))


def point_of(msg: Point) -> Point3:
    return (float(msg.x), float(msg.y), float(msg.z))


def plan_to_msg(plan: PlanResult, *, plan_id: str, frame_id: str = "map", stamp: Time | None = None) -> Plan:
    """The ``Plan`` message for a solved plan; PlanningError for any other status."""
    if plan.status is not PlanStatus.SOLVED:
        detail = f": {plan.reason}" if plan.reason else ""
        raise PlanningError(f"only a solved plan can be sent for execution; this one is {plan.status.value}{detail}")
    return Plan(
        header=_header(frame_id, stamp),
        plan_id=plan_id,
        goal=plan.goal,
        start_symbol=plan.start_symbol,
        steps=[step_to_msg(action) for action in plan.actions],
        total_cost=float(plan.total_cost),
    )


def step_to_msg(action: PlanAction) -> PlanStep:
    return PlanStep(
        action=action.name,
        args=list(action.args),
        target_symbol=action.target_symbol,
        target=point_msg(action.target),
        waypoints=[point_msg(p) for p in action.waypoints],
        waypoint_symbols=list(action.waypoint_symbols),
        cost=float(action.cost),
    )


def plan_from_msg(msg: Plan) -> PlanResult:
    """The solved plan a message carries (its plan_id is ``msg.plan_id``).

    The conversion is faithful, not a check: the dispatcher validates the result
    (``plan_problems``) and reports what is wrong with it.
    """
    return PlanResult(
        status=PlanStatus.SOLVED,
        goal=msg.goal,
        start_symbol=msg.start_symbol,
        actions=[step_from_msg(step) for step in msg.steps],
        total_cost=float(msg.total_cost),
    )


def step_from_msg(msg: PlanStep) -> PlanAction:
    return PlanAction(
        name=msg.action,
        args=tuple(msg.args),
        target_symbol=msg.target_symbol,
        target=point_of(msg.target),
        waypoints=tuple(point_of(p) for p in msg.waypoints),
        waypoint_symbols=tuple(msg.waypoint_symbols),
        cost=float(msg.cost),
    )


def progress_to_msg(event: ProgressEvent, *, frame_id: str = "map", stamp: Time | None = None) -> DispatchProgress:
    """One progress event; ``robot_position`` is in ``frame_id`` (the plan's map frame)."""
    return DispatchProgress(
        header=_header(frame_id, stamp),
        plan_id=event.plan_id,
        step_index=event.step_index,
        step_count=event.step_count,
        action=event.action,
        target_symbol=event.target_symbol,
        state=event.state.value,
        message=event.message,
        robot_position=point_msg(event.position),
        replans=event.replans,
        distance_remaining_m=event.remaining.distance_m,
        time_remaining_s=event.remaining.time_s,
        speed_basis=event.remaining.basis.value,
    )


def outcome_to_msg(outcome: DispatchOutcome, *, frame_id: str = "map", stamp: Time | None = None) -> DispatchResult:
    """The final result of one dispatch, with where the robot ended and what it holds."""
    return DispatchResult(
        header=_header(frame_id, stamp),
        plan_id=outcome.plan_id,
        status=outcome.status.value,
        success=outcome.success,
        reason=outcome.reason,
        steps_completed=outcome.steps_completed,
        replans=outcome.replans,
        robot_place=outcome.robot.place,
        holding=outcome.robot.holding,
    )
