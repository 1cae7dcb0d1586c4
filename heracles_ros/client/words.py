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
