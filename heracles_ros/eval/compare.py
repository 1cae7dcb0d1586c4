"""Judge one output against its gold: SLDP answers by the paper's equality, goals by logical equivalence."""
from __future__ import annotations

from dataclasses import dataclass

from heracles_ros.agent.results import AskResult, CommandResult
from heracles_ros.errors import AnswerFormatError, GoalError
from heracles_ros.eval.dataset import EvalItem
from heracles_ros.formats.goal_equivalence import describe_difference, goals_equivalent
from heracles_ros.formats.sldp import check_type, parse_sldp, sldp_equal, to_sldp


@dataclass(frozen=True)
class Verdict:
    success: bool
    #: Why it failed ("" on success), in words a person can act on.
    reason: str = ""


def compare_answer(gold: str, answer: str, answer_type: str = "") -> Verdict:
    """An SLDP answer against the gold SLDP text (and the requested type, if any)."""
    if not answer.strip():
        return Verdict(False, "no answer")
    try:
        value = parse_sldp(answer)
    except AnswerFormatError as exc:
        return Verdict(False, f"answer is not valid SLDP: {exc}")
    if answer_type:
        try:
            check_type(value, answer_type)
        except AnswerFormatError as exc:
            return Verdict(False, f"wrong answer type: {exc}")
    expected = parse_sldp(gold)
    if sldp_equal(value, expected):
        return Verdict(True)
    return Verdict(False, f"expected {to_sldp(expected)}, got {to_sldp(value)}")


def compare_goal(gold: str, goal: str) -> Verdict:
    """A PDDL goal against the gold goal, by logical equivalence over the atoms."""
    if not goal.strip():
        return Verdict(False, "no goal")
    try:
        equivalent = goals_equivalent(gold, goal)
    except GoalError as exc:
        return Verdict(False, f"goal does not parse: {exc}")
    if equivalent:
        return Verdict(True)
    difference = describe_difference(gold, goal, names=("the gold goal", "the answer"))
    return Verdict(False, f"not equivalent to the gold goal {gold}: {difference}")


def compare_item(item: EvalItem, result: AskResult | CommandResult) -> Verdict:
    """Judge an agent's result for ``item``; an error with nothing to judge is a failure naming it.

    A goal that came back with an error (e.g. no plan for it) is still judged on
    the goal: the paper counts a goal correct when it is equivalent to the gold
    one, whether or not a plan exists.
    """
    output = result.answer if isinstance(result, AskResult) else result.goal
    if result.error and not output.strip():
        return Verdict(False, f"agent error: {result.error}")
    if isinstance(result, AskResult):
        return compare_answer(item.answer, result.answer, item.answer_type)
    return compare_goal(item.goal, result.goal)
