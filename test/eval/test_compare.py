"""Comparators: SLDP answers by the paper's rules, goals by logical equivalence, agent errors as failures."""
from __future__ import annotations

import pytest

from heracles_ros.agent.results import AskResult, CommandResult
from heracles_ros.eval.compare import compare_answer, compare_goal, compare_item
from heracles_ros.eval.dataset import EvalItem


@pytest.mark.parametrize(
    ("gold", "answer", "answer_type", "success", "reason"),
    [
        ("<O2, O26>", "<O26, O2>", "set[string]", True, ""),
        ("<O2, O26>", "<O2>", "set[string]", False, "expected <O2, O26>, got <O2>"),
        ("4", "4.004", "number", True, ""),
        ("4", "[4]", "number", False, "wrong answer type: expected a number, got a list"),
        ("4", "four apples", "", False, "answer is not valid SLDP"),
        ("4", "", "number", False, "no answer"),
        ("POINT(1 2 3)", "point(1.005, 2, 3)", "point", True, ""),
        ("[O29, O26]", "[O26, O29]", "list", False, "expected [O29, O26], got [O26, O29]"),
        ('{bag: 4, "trash can": 4}', "{'trash can': 4, bag: 4}", "dict[number]", True, ""),
    ],
)
def test_answers(gold: str, answer: str, answer_type: str, success: bool, reason: str) -> None:
    verdict = compare_answer(gold, answer, answer_type)
    assert verdict.success is success
    assert reason in verdict.reason
    assert bool(verdict.reason) is not success


def test_goals_by_equivalence_not_text() -> None:
    gold = "(and (or (visited-room R0) (visited-room R2)) (not (visited-room R4)))"
    same = "(or (and (not (visited-room R4)) (visited-room R2)) (and (visited-room R0) (not (visited-room R4))))"
    assert compare_goal(gold, same).success
    verdict = compare_goal(gold, "(or (visited-room R0) (visited-room R2))")
    assert not verdict.success
    assert "(visited-room R4) true" in verdict.reason
    assert "the answer holds and the gold goal does not" in verdict.reason
    assert "does not parse" in compare_goal(gold, "(and (visited-room R0)").reason
    assert compare_goal(gold, "  ").reason == "no goal"


def test_items_use_their_kind_and_agent_errors_fail() -> None:
    ask = EvalItem(id="a", kind="ask", input="How many bags?", answer="4", answer_type="number")
    command = EvalItem(id="c", kind="command", input="Pick up the bag.", goal="(holding O22)")
    assert compare_item(ask, AskResult(answer="4", answer_type="number")).success
    assert compare_item(command, CommandResult(goal="(HOLDING O22)")).success  # predicates are case-insensitive
    failed = compare_item(command, CommandResult(error="LLMTimeout: no reply in 30 s"))
    assert not failed.success and failed.reason == "agent error: LLMTimeout: no reply in 30 s"
    unplannable = CommandResult(goal="(holding O22)", error="PlanningError: no plan (unsolvable)")
    assert compare_item(command, unplannable).success  # judged on the goal, as in the paper
