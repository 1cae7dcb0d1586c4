"""A command from words to a plan: the agent grounds with the planner's checker, the pipeline plans with the
same planner, and a cancel or a question back stops it before planning. Real database, real Fast Downward;
only the model is scripted."""
from __future__ import annotations

from typing import Any

import pytest
from support.scripted_llm import ScriptedLLMServer, adapter, call, say, slow

from heracles_ros.agent.loop import Agent
from heracles_ros.agent.settings import AgentSettings
from heracles_ros.command_pipeline import CommandPipeline
from heracles_ros.plan_types import PlanResult
from heracles_ros.planning.planner import Planner

COUNT_ALL = "MATCH (n) RETURN count(n) AS n"


class CountingPlanner:
    """The real planner, with the goals it was asked to plan recorded."""

    def __init__(self, planner: Planner):
        self.planner = planner
        self.planned: list[str] = []

    def check(self, text: str) -> Any:
        return self.planner.check(text)

    def plan(self, goal: str) -> PlanResult:
        self.planned.append(goal)
        return self.planner.plan(goal)


def _symbol(store: Any, query: str) -> str:
    return str(store.query(query)[0]["s"])


def _setup(
    store: Any, server: ScriptedLLMServer, settings: AgentSettings | None = None
) -> tuple[Agent, CommandPipeline, CountingPlanner]:
    planner = CountingPlanner(Planner(store))
    agent = Agent(store, adapter(server), settings, checker=planner)
    return agent, CommandPipeline(planner), planner


def test_a_checked_goal_is_planned_by_the_planner_it_was_checked_with(small_store, llm_server) -> None:
    bag = _symbol(small_store, "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'bag'}) RETURN o.nodeSymbol AS s "
                               "LIMIT 1")
    agent, pipeline, planner = _setup(small_store, llm_server([say(f"<answer>(visited-object {bag})</answer>")]))
    result = pipeline.command(agent, "Go to the bag")
    assert result.ok, result.error
    assert result.plan is not None and result.plan.ok and result.plan.actions
    assert planner.planned == [f"(visited-object {bag})"]


def test_the_agent_alone_only_grounds_and_plan_false_plans_nothing(small_store, llm_server) -> None:
    bag = _symbol(small_store, "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'bag'}) RETURN o.nodeSymbol AS s "
                               "LIMIT 1")
    answer = say(f"<answer>(visited-object {bag})</answer>")
    agent, pipeline, planner = _setup(small_store, llm_server([answer, answer]))
    assert agent.command("Go to the bag").goal == f"(visited-object {bag})"
    result = pipeline.command(agent, "Go to the bag", plan=False)
    assert result.goal == f"(visited-object {bag})" and result.plan is None
    assert planner.planned == []


def test_goal_retries_are_bounded_and_nothing_reaches_the_planner(small_store, llm_server) -> None:
    server = llm_server([say("<answer>(holding O999)</answer>")] * 3)
    agent, pipeline, planner = _setup(small_store, server, AgentSettings(max_goal_retries=2))
    result = pipeline.command(agent, "Pick up the unicorn")
    assert result.error.startswith("GoalError: unknown symbol 'O999'")
    assert result.goal == "" and result.plan is None and planner.planned == []
    assert len(server.requests) == 3 and server.remaining == 0


def test_a_command_that_asks_back_is_not_planned(small_store, llm_server) -> None:
    server = llm_server([say('<answer>CLARIFY("Nothing here is a unicorn; what should I fetch?", <>)</answer>')])
    agent, pipeline, planner = _setup(small_store, server)
    result = pipeline.command(agent, "Fetch the unicorn.")
    assert result.ok and (result.goal, result.plan, result.candidates) == ("", None, [])
    assert result.clarification == "Nothing here is a unicorn; what should I fetch?"
    assert planner.planned == []


@pytest.mark.parametrize("cancel_after", [1, 2])
def test_a_cancel_ends_a_command_within_the_current_turn_and_nothing_after_it_runs(
    small_store, llm_server, cancel_after: int
) -> None:
    """Cancelled during turn 1: no query, no second turn. Cancelled during turn 2 (the answer): no planning."""
    bag = _symbol(small_store, "MATCH (o:Object {class: 'bag'}) RETURN o.nodeSymbol AS s LIMIT 1")
    server = llm_server([slow(0.5, call(COUNT_ALL)), slow(0.5, say(f"<answer>(visited-object {bag})</answer>"))])
    agent, pipeline, planner = _setup(small_store, server)
    result = pipeline.command(agent, "Go to the bag.", cancelled=lambda: len(server.requests) >= cancel_after)
    assert result.error.startswith("RequestCancelled: cancelled before"), result.error
    assert len(server.requests) == cancel_after and result.plan is None and planner.planned == []
    # Cancelled during the turn that asks for the query: it never runs; during the answer: it ran once.
    assert result.usage.tool_calls == cancel_after - 1
