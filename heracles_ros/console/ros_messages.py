"""The running system's ROS messages in the console's protocol (CONSOLE-PROTOCOL.md).

Read by attribute, so this module imports no ROS package: the bridge hands in
what its subscriptions and its command clients received.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heracles_ros.client.words import remaining_words
from heracles_ros.console import protocol
from heracles_ros.outcomes import CommandOutcome

#: A candidate's position on the map by symbol (None when the map does not hold it).
Locate = Callable[[str], "tuple[float, float] | None"]


@dataclass(frozen=True)
class MirrorReport:
    """The mirror's last status; ``revision`` changes whenever what the map shows may have changed."""

    sequence: int
    nodes: int
    lag_s: float
    last_error: str
    stamp_s: float
    revision: tuple[int, int, int]

    def to_json(self, now_s: float | None = None) -> dict[str, Any]:
        now_s = time.time() if now_s is None else now_s
        return {"sequence": self.sequence, "nodes": self.nodes, "lag_s": self.lag_s, "last_error": self.last_error,
                "age_s": round(max(0.0, now_s - self.stamp_s), 3)}


def mirror_report(status: Any) -> MirrorReport:
    stamp = status.header.stamp
    stamp_s = stamp.sec + stamp.nanosec * 1e-9 or time.time()
    return MirrorReport(int(status.sequence), int(status.nodes), float(status.last_latency_s),
                        str(status.last_error), stamp_s,
                        (int(status.snapshots_applied), int(status.corrections_active), int(status.nodes)))


def stop_message(state: Any) -> dict[str, Any]:
    return protocol.stop(bool(state.stopped), bool(state.hard), str(state.reason), str(state.operator_name))


def robot_message(progress: Any, place: str) -> dict[str, Any] | None:
    """Where a dispatch event puts the robot (None without a finite position)."""
    point = progress.robot_position
    if not (math.isfinite(point.x) and math.isfinite(point.y)):
        return None
    return protocol.robot(float(point.x), float(point.y), place)


def pose_message(pose: Any, place: str) -> dict[str, Any]:
    """Where the dispatcher's latched ``robot_pose`` (a PoseStamped) puts the robot."""
    point = pose.pose.position
    return protocol.robot(float(point.x), float(point.y), place)


def reached_place(progress: Any) -> str:
    """The place a finished goto step reached ('' for any other event)."""
    return str(progress.target_symbol) if progress.action == "goto" and progress.state == "succeeded" else ""


def stage_message(feedback: Any) -> dict[str, Any]:
    """One ExecuteCommand feedback message."""
    step = None
    if feedback.stage == "step":
        event = feedback.step
        point = event.robot_position
        step = {"index": int(event.step_index), "count": int(event.step_count), "action": str(event.action),
                "state": str(event.state), "message": str(event.message),
                "robot": [float(point.x), float(point.y)] if math.isfinite(point.x) and math.isfinite(point.y)
                else None,
                "distance_remaining_m": float(event.distance_remaining_m),
                "time_remaining_s": float(event.time_remaining_s),
                "remaining": remaining_words(event.distance_remaining_m, event.time_remaining_s)}
    return {"type": "stage", "command_id": str(feedback.command_id), "stage": str(feedback.stage),
            "message": str(feedback.message), "queries": [str(q) for q in feedback.queries],
            "goal": str(feedback.goal), "goal_text": str(feedback.goal_text),
            "plan": plan_json(feedback.plan, feedback.plan_summary) if feedback.plan.steps else None, "step": step}


def plan_json(plan: Any, summary: str) -> dict[str, Any]:
    return {"steps": [{"action": str(s.action), "args": [str(a) for a in s.args],
                       "target": [float(s.target.x), float(s.target.y)] if s.target_symbol else None,
                       "waypoints": [[float(p.x), float(p.y)] for p in s.waypoints]} for s in plan.steps],
            "summary": str(summary)}


def result_message(result: Any, locate: Locate) -> dict[str, Any]:
    """An ExecuteCommand result; candidates placed on the map through ``locate``."""
    candidates = []
    for candidate in result.candidates:
        where = locate(str(candidate.symbol))
        candidates.append({"symbol": str(candidate.symbol), "cls": str(candidate.class_name),
                           "room": str(candidate.room), "description": str(candidate.description),
                           "x": where[0] if where else None, "y": where[1] if where else None})
    return {"type": "result", "command_id": str(result.command_id), "outcome": str(result.outcome),
            "reason": str(result.reason), "goal_text": str(result.goal_text),
            "clarification": str(result.clarification), "candidates": candidates,
            "steps_completed": int(result.steps_completed)}


def ended_message(command_id: str, outcome: str, reason: str) -> dict[str, Any]:
    """A command that ended without a result from the server (rejected, or nothing answered)."""
    known = {o.value for o in CommandOutcome}
    return {"type": "result", "command_id": command_id,
            "outcome": outcome if outcome in known else CommandOutcome.REJECTED.value, "reason": reason,
            "goal_text": "", "clarification": "", "candidates": [], "steps_completed": 0}
