"""The running system's ROS messages in the console's protocol (:mod:`.protocol`, docs/console.md).

Read by attribute, so this module imports no ROS package: the bridge hands in
what its subscriptions and its command clients received, and gets back the
message :mod:`.protocol` builds from it, as the plain dict its callbacks carry
(:data:`Emitted`).
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heracles_ros.client.words import remaining_words
from heracles_ros.console import protocol
from heracles_ros.console.protocol import Candidate, MirrorHealth, Plan, Step
from heracles_ros.outcomes import CommandOutcome

#: A protocol message as the bridge's callbacks carry it (its ``Emit``): a plain dict.
Emitted = dict[str, Any]
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
    snapshots_missed: int = 0
    snapshots_late: int = 0
    gaps_detectable: bool = False
    last_gap: str = ""

    def to_json(self, now_s: float | None = None) -> MirrorHealth:
        now_s = time.time() if now_s is None else now_s
        return {"sequence": self.sequence, "nodes": self.nodes, "lag_s": self.lag_s, "last_error": self.last_error,
                "age_s": round(max(0.0, now_s - self.stamp_s), 3), "snapshots_missed": self.snapshots_missed,
                "snapshots_late": self.snapshots_late, "gaps_detectable": self.gaps_detectable,
                "last_gap": self.last_gap}


def mirror_report(status: Any) -> MirrorReport:
    stamp = status.header.stamp
    stamp_s = stamp.sec + stamp.nanosec * 1e-9 or time.time()
    return MirrorReport(int(status.sequence), int(status.nodes), float(status.last_latency_s),
                        str(status.last_error), stamp_s,
                        (int(status.snapshots_applied), int(status.corrections_active), int(status.nodes)),
                        snapshots_missed=int(status.snapshots_missed), snapshots_late=int(status.snapshots_late),
                        gaps_detectable=bool(status.gaps_detectable), last_gap=str(status.last_gap))


def stop_message(state: Any) -> Emitted:
    return dict(protocol.stop(bool(state.stopped), bool(state.hard), str(state.reason), str(state.operator_name)))


def robot_message(progress: Any, place: str) -> Emitted | None:
    """Where a dispatch event puts the robot (None without a finite position)."""
    point = progress.robot_position
    if not (math.isfinite(point.x) and math.isfinite(point.y)):
        return None
    return dict(protocol.robot(float(point.x), float(point.y), place))


def pose_message(pose: Any, place: str) -> Emitted:
    """Where the dispatcher's latched ``robot_pose`` (a PoseStamped) puts the robot."""
    point = pose.pose.position
    return dict(protocol.robot(float(point.x), float(point.y), place))


def reached_place(progress: Any) -> str:
    """The place a finished goto step reached ('' for any other event)."""
    return str(progress.target_symbol) if progress.action == "goto" and progress.state == "succeeded" else ""


def stage_message(feedback: Any) -> Emitted:
    """One ExecuteCommand feedback message."""
    return dict(protocol.stage(str(feedback.command_id), str(feedback.stage), str(feedback.message),
                               [str(q) for q in feedback.queries], str(feedback.goal), str(feedback.goal_text),
                               plan_json(feedback.plan, feedback.plan_summary) if feedback.plan.steps else None,
                               step_json(feedback.step) if feedback.stage == "step" else None))


def step_json(event: Any) -> Step:
    """A step's progress (a DispatchProgress event)."""
    return {"index": int(event.step_index), "count": int(event.step_count), "action": str(event.action),
            "state": str(event.state), "message": str(event.message), "robot": _finite_xy(event.robot_position),
            "distance_remaining_m": float(event.distance_remaining_m),
            "time_remaining_s": float(event.time_remaining_s),
            "remaining": remaining_words(event.distance_remaining_m, event.time_remaining_s)}


def plan_json(plan: Any, summary: str) -> Plan:
    return {"steps": [{"action": str(s.action), "args": [str(a) for a in s.args],
                       "target": [float(s.target.x), float(s.target.y)] if s.target_symbol else None,
                       "waypoints": [[float(p.x), float(p.y)] for p in s.waypoints]} for s in plan.steps],
            "summary": str(summary)}


def result_message(result: Any, locate: Locate) -> Emitted:
    """An ExecuteCommand result; candidates placed on the map through ``locate``."""
    candidates: list[Candidate] = []
    for candidate in result.candidates:
        where = locate(str(candidate.symbol))
        candidates.append({"symbol": str(candidate.symbol), "cls": str(candidate.class_name),
                           "room": str(candidate.room), "description": str(candidate.description),
                           "x": where[0] if where else None, "y": where[1] if where else None})
    return dict(protocol.result(str(result.command_id), str(result.outcome), str(result.reason),
                                goal_text=str(result.goal_text), clarification=str(result.clarification),
                                candidates=candidates, steps_completed=int(result.steps_completed)))


def ended_message(command_id: str, outcome: str, reason: str) -> Emitted:
    """A command that ended without a result from the server (rejected, or nothing answered)."""
    known = {o.value for o in CommandOutcome}
    return dict(protocol.result(command_id, outcome if outcome in known else CommandOutcome.REJECTED.value, reason))


def _finite_xy(point: Any) -> list[float] | None:
    return [float(point.x), float(point.y)] if math.isfinite(point.x) and math.isfinite(point.y) else None
