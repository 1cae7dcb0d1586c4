"""The running system's messages in words, one style for the CLI and the console.

The plan reads as ``heracles demo`` prints it (a headline with the steps and
metres of walking, then one line per step), progress lines carry the wall-clock
time, and an executed command ends with where the robot is and what it holds.
"""
from __future__ import annotations

import itertools
import math
import time
from typing import Any


def stamped(text: str, at: float | None = None) -> str:
    """``text`` after the local wall-clock time it happened at (``14:05:09.27 ``)."""
    at = time.time() if at is None else at
    return time.strftime("%H:%M:%S", time.localtime(at)) + f".{int(at % 1 * 100):02d} {text}"


def plan_lines(plan: Any) -> list[str]:
    """A ``heracles_ros/Plan`` message in words: ``plan: 3 steps, 7.2 m of walking`` and one line per step."""
    steps = list(plan.steps)
    walk = sum(_walk_m(step) for step in steps)
    lines = [f"plan: {len(steps)} steps, {walk:.1f} m of walking"]
    lines += [f"  {k}. {step_words(step)}" for k, step in enumerate(steps, start=1)]
    return lines


def step_words(step: Any) -> str:
    """One ``heracles_ros/PlanStep``: ``goto  P0 -> P12  5.3 m through 7 places`` or ``pick  O3 at P12``."""
    if step.action == "goto":
        source = step.args[0] if step.args else "?"
        return (f"goto  {source} -> {step.target_symbol}  {_walk_m(step):.1f} m through "
                f"{len(step.waypoint_symbols)} places")
    where = step.args[1] if len(step.args) > 1 else ""
    return f"{step.action:<5} {step.target_symbol}" + (f" at {where}" if where else "")


def progress_line(step: Any) -> str:
    """One ``heracles_ros/DispatchProgress``: ``step 1/4 walking    walking to P12 — 14.2 m left, about 12 s  robot
    (3.0, 4.1)``; the walking left is left out when unknown (a replan), its time when no speed is known."""
    left = remaining_words(step.distance_remaining_m, step.time_remaining_s)
    p = step.robot_position
    return (f"step {step.step_index + 1}/{step.step_count} {step.state:<10} {step.message}"
            + (f" — {left}" if left else "") + f"  robot ({p.x:.1f}, {p.y:.1f})")


def remaining_words(distance_m: float, time_s: float) -> str:
    """``14.2 m left, about 12 s``, ``3.0 m left`` (time unknown), ``no walking left``; "" when unknown (< 0)."""
    if distance_m < 0:
        return ""
    if round(distance_m, 1) == 0:
        return "no walking left"
    return f"{distance_m:.1f} m left" + (f", about {duration_words(time_s)}" if time_s >= 0 else "")


def duration_words(seconds: float) -> str:
    """``12 s``, ``2 min 05 s``, ``14 min`` (past ten minutes the seconds are noise), ``1 h 03 min``."""
    total = round(seconds)
    if total < 60:
        return f"{total} s"
    minutes, secs = divmod(total, 60)
    if minutes < 10:
        return f"{minutes} min {secs:02d} s"
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60:02d} min"


def where_robot_is(place: str, position: Any = None) -> str:
    """``P12 (3.1, 4.0)``, the place or the position alone, or that it had not moved."""
    at = f"({position.x:.1f}, {position.y:.1f})" if position is not None else ""
    if place and at:
        return f"{place} {at}"
    return place or at or "its start (it had not moved)"


def final_line(result: Any, position: Any = None) -> str:
    """The last line of an executed command: how it ended, where the robot is, what it holds."""
    ended = f"{result.outcome}, {result.steps_completed} steps" + (
        f", {result.replans} replans" if result.replans else "")
    return f"{ended}; robot at {where_robot_is(result.robot_place, position)}, holding {result.holding or 'nothing'}"


def message_dict(message: Any) -> dict[str, Any]:
    """A ROS message as plain JSON-able data (nested messages and arrays too), for ``--json``."""
    def plain(value: Any) -> Any:
        if hasattr(value, "get_fields_and_field_types"):
            return message_dict(value)
        if isinstance(value, (list, tuple)) or hasattr(value, "tolist"):
            return [plain(item) for item in (value.tolist() if hasattr(value, "tolist") else value)]
        return value

    return {name: plain(getattr(message, name)) for name in message.get_fields_and_field_types()}


def _walk_m(step: Any) -> float:
    if step.action != "goto" or len(step.waypoints) < 2:
        return 0.0
    points = [(p.x, p.y, p.z) for p in step.waypoints]
    return sum(math.dist(a, b) for a, b in itertools.pairwise(points))
