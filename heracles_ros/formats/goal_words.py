"""A checked PDDL goal in plain words, for the operator who confirms it before the robot moves.

``(and (holding O14) (not (visited-room R2)))`` with O14 a box and R2 a lounge
reads "hold O14 (box), and do not visit room R2 (lounge)". The words follow
the predicates of ``data/domain.pddl``; an unknown predicate is shown as
written, so nothing is hidden from the operator.
"""
from __future__ import annotations

from collections.abc import Mapping

from heracles_ros.formats.goal_ast import And, Atom, GoalExpr, Not, Or

#: predicate -> template over its arguments (each argument shown with its class).
_TEMPLATES = {
    "visited-place": "visit place {0}",
    "at-place": "end at place {0}",
    "visited-object": "go to {0}",
    "at-object": "end next to {0}",
    "safe": "inspect {0}",
    "visited-room": "visit room {0}",
    "in-room": "end in room {0}",
    "holding": "hold {0}",
    "object-in-place": "put {0} at place {1}",
}


def goal_in_words(goal: GoalExpr, classes: Mapping[str, str] | None = None) -> str:
    """The goal as one sentence; ``classes`` maps symbols to their class (shown in brackets)."""
    classes = classes or {}

    def name(symbol: str) -> str:
        return f"{symbol} ({classes[symbol]})" if classes.get(symbol) else symbol

    def words(expr: GoalExpr) -> str:
        if isinstance(expr, Atom):
            template = _TEMPLATES.get(expr.predicate)
            args = [name(a) for a in expr.args]
            if template is None or template.count("{") != len(args):
                return str(expr)
            return template.format(*args)
        if isinstance(expr, Not):
            return f"do not {words(expr.item)}"
        parts = [words(item) for item in expr.items]
        if isinstance(expr, Or):
            return "either " + ", or ".join(parts)
        assert isinstance(expr, And)
        return ", and ".join(parts)

    return words(goal)
