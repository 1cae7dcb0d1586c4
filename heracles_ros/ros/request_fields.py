"""The bound of every field a request to our services and actions carries, and its one check.

Anything on the robot's DDS domain can call them, so no field is taken on
trust: text has a length (a paragraph for an instruction or a question, a line
for an id or a name), names and ids are single lines (a newline would forge log
lines), numbers are finite and in range, and a type is one the answer checker
knows. Each check returns why a value is refused ('' when it is taken), in words
that name the field and the bound, so a node answers with it and goes on.
docs/limits.md lists the same bounds.

Plain Python: the three nodes and their tests use it without ROS.
"""
from __future__ import annotations

import math
import unicodedata
from typing import Any

from heracles_ros.errors import ConfigError
from heracles_ros.formats.pddl_goal import MAX_GOAL_CHARS
from heracles_ros.formats.sldp import parse_type
from heracles_ros.meaning.resolver import MAX_TEXT_CHARS as MAX_FIND_TEXT_CHARS
from heracles_ros.mirror.text_values import has_control

#: Longest free text taken (an instruction, a question), characters: a paragraph; a model prompt is bounded by it.
MAX_TEXT_CHARS = 4000
#: Longest id or name taken (command_id, session, client_node, a correction's id, a room), characters.
MAX_ID_CHARS = 256
#: Longest operator name (resume's operator_name), characters.
MAX_NAME_CHARS = 128
#: Longest reason (resume's reason), characters: a sentence or two, kept in the stop state and the log.
MAX_REASON_CHARS = 1000
#: Longest SLDP answer type (``dict[set[string]]`` is 17), characters.
MAX_ANSWER_TYPE_CHARS = 64
#: Most events one ``changes`` request returns (0 asks for :data:`DEFAULT_CHANGES`); each is a JSON line
#: of about 300 bytes, so a reply stays near 3 MB.
MAX_CHANGES = 10_000
DEFAULT_CHANGES = 1000
#: Largest ``since_s`` either way, seconds: epoch seconds up to the year 2286, or that long ago.
MAX_SINCE_S = 1e10
#: Most waypoints one plan (ExecutePlan.action) carries, all steps together: the longest walk a plan may ask for
#: (``max_plan_path_m``, 5 km) through places about a metre apart, four times over.
MAX_PLAN_WAYPOINTS = 20_000
#: Most arguments of one plan step (the domain's actions take two or three).
MAX_STEP_ARGS = 16

#: Free text: may span lines (a plan's goal is PDDL, bounded as every goal is).
_TEXT = {"instruction": MAX_TEXT_CHARS, "question": MAX_TEXT_CHARS, "reason": MAX_REASON_CHARS,
         "goal": MAX_GOAL_CHARS, "text": MAX_FIND_TEXT_CHARS}
#: One line each.
_LINES = {"command_id": MAX_ID_CHARS, "session": MAX_ID_CHARS, "client_node": MAX_ID_CHARS, "id": MAX_ID_CHARS,
          "room": MAX_ID_CHARS, "action": MAX_ID_CHARS, "operator_name": MAX_NAME_CHARS,
          "answer_type": MAX_ANSWER_TYPE_CHARS, "plan_id": MAX_ID_CHARS, "start_symbol": MAX_ID_CHARS,
          "symbol": MAX_ID_CHARS, "like_symbol": MAX_ID_CHARS, "class_name": MAX_ID_CHARS,
          "search_for": MAX_ID_CHARS}
#: The longest bound of each field, by its name in the interface files.
LIMITS = {**_TEXT, **_LINES}


def text_problem(**fields: str) -> str:
    """Why one of ``fields`` (named as in the .srv/.action file) is refused, or '': its length, a control
    character in a one-line field."""
    for name, value in fields.items():
        limit = LIMITS[name]
        if len(value) > limit:
            return f"{name} is {len(value):,} characters long; at most {limit:,} are taken"
        if name in _LINES and not _one_line(value):
            return f"{name} must be one line of printable characters (it holds a control character)"
    return ""


def _one_line(text: str) -> bool:
    """No control, format, surrogate or unassigned character, and no line or paragraph separator."""
    return not has_control(text) and not any(unicodedata.category(c) in ("Zl", "Zp") for c in text)


def answer_type_problem(answer_type: str) -> str:
    """Why ``answer_type`` (Ask.srv; '' = any) is refused, or ''."""
    problem = text_problem(answer_type=answer_type)
    if problem or not answer_type.strip():
        return problem
    try:
        parse_type(answer_type)
    except ConfigError as exc:
        return f"answer_type: {exc}"
    return ""


def since_problem(since_s: float) -> str:
    """Why ``since_s`` (Changes.srv: epoch seconds when > 0, seconds before now when <= 0) is refused, or ''."""
    return _time_problem("since_s", since_s, "epoch seconds, or <= 0: seconds before now")


def at_problem(at_s: float) -> str:
    """Why ``at_s`` (SceneAt.srv: epoch seconds when > 0, seconds before now when < 0, now when 0) is refused."""
    return _time_problem("at_s", at_s, "epoch seconds, or <= 0: seconds before now, 0: now")


def _time_problem(name: str, value: float, meaning: str) -> str:
    if not math.isfinite(value) or abs(value) > MAX_SINCE_S:
        return f"{name} must be a finite number of seconds within ±{MAX_SINCE_S:g} ({meaning}), got {value!r}"
    return ""


def changes_limit(limit: int) -> tuple[int, str]:
    """(events to return, '') for Changes.srv's ``limit`` (0: :data:`DEFAULT_CHANGES`), or (0, why it is refused)."""
    if limit > MAX_CHANGES:
        return 0, (f"limit is {limit:,}; at most {MAX_CHANGES:,} events are returned at once "
                   "(ask again from a later since_s)")
    return (limit or DEFAULT_CHANGES), ""


def resume_problem(operator_name: str, reason: str) -> str:
    """Why a resume (Resume.srv) is refused, or '': the operator's name is required, both are bounded."""
    problem = text_problem(operator_name=operator_name, reason=reason)
    if problem:
        return problem
    if not operator_name.strip():
        return "resume needs the operator's name (who resumes)"
    return ""


def plan_problem(plan: Any) -> str:
    """Why a plan sent to ``execute_plan`` (heracles_ros/msg/Plan) is refused before it is read, or '': its id,
    goal and symbols bounded, at most :data:`MAX_PLAN_WAYPOINTS` waypoints, each named by a symbol, every number
    finite. Whether the plan fits the world (steps, path length, places) is the dispatcher's plan check."""
    problem = text_problem(plan_id=plan.plan_id, goal=plan.goal, start_symbol=plan.start_symbol)
    if problem:
        return f"plan: {problem}"
    if not math.isfinite(plan.total_cost):
        return f"plan: total_cost must be finite, got {plan.total_cost!r}"
    waypoints = 0
    for index, step in enumerate(plan.steps, start=1):
        where = f"plan step {index}"
        if len(step.args) > MAX_STEP_ARGS:
            return f"{where}: {len(step.args)} arguments; at most {MAX_STEP_ARGS} are taken"
        for symbol in (step.target_symbol, *step.args, *step.waypoint_symbols):
            problem = text_problem(symbol=symbol)
            if problem:
                return f"{where}: {problem}"
        problem = text_problem(action=step.action)
        if problem:
            return f"{where}: {problem}"
        waypoints += len(step.waypoints)
        if waypoints > MAX_PLAN_WAYPOINTS:
            return f"plan: more than {MAX_PLAN_WAYPOINTS:,} waypoints; a plan that long is not one the planner makes"
        if len(step.waypoint_symbols) != len(step.waypoints):
            return (f"{where}: {len(step.waypoints)} waypoints but {len(step.waypoint_symbols)} waypoint_symbols; "
                    "each waypoint names its place")
        points = (step.target, *step.waypoints)
        if not all(math.isfinite(v) for p in points for v in (p.x, p.y, p.z)) or not math.isfinite(step.cost):
            return f"{where}: its target, waypoints and cost must be finite numbers"
    return ""
