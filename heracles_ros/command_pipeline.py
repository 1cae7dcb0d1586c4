"""A command from words to a plan: the agent grounds it to a checked goal, the planner plans it.

The agent only grounds (its goals are checked by the planner's goal checker as
the model writes them); planning is this pipeline's step, with the one
:class:`~heracles_ros.planning.planner.Planner` its owner (a node, or the CLI
for one request) builds and passes in, so one process plans with one planner
and its place-graph cache. Dispatching stays with the caller: a node sends the
plan to the dispatcher, the CLI prints it.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from heracles_ros.agent.results import CommandResult
from heracles_ros.errors import HeraclesError, RequestCancelled, describe
from heracles_ros.plan_types import PlanResult


class Grounder(Protocol):
    """What the pipeline needs of the agent."""

    def command(self, instruction: str, *, session: str = "", on_query: Callable[[str], None] | None = None,
                cancelled: Callable[[], bool] | None = None) -> CommandResult: ...


class GoalPlanner(Protocol):
    """What the pipeline needs of the planner."""

    def plan(self, goal: str) -> PlanResult: ...


class CommandPipeline:
    """Grounds with the agent, then plans the checked goal with ``planner``."""

    def __init__(self, planner: GoalPlanner):
        self.planner = planner

    def command(
        self, agent: Grounder, instruction: str, *, plan: bool = True, session: str = "",
        on_query: Callable[[str], None] | None = None, cancelled: Callable[[], bool] | None = None,
    ) -> CommandResult:
        """The agent's goal (or its question back); with ``plan`` also the plan, unless ``cancelled`` is
        true by then (the result's error then says so and nothing is planned)."""
        result = agent.command(instruction, session=session, on_query=on_query, cancelled=cancelled)
        if not plan or not result.goal:
            return result
        if cancelled is not None and cancelled():
            result.error = describe(RequestCancelled("cancelled before planning"))
            return result
        self.plan_into(result)
        return result

    def plan_into(self, result: CommandResult) -> None:
        """Plan ``result.goal``; the plan, or why there is none, goes into ``result``."""
        try:
            found: Any = self.planner.plan(result.goal)
        except HeraclesError as exc:
            result.error = describe(exc)
            return
        result.plan = found
        if not found.ok:
            result.error = f"PlanningError: no plan ({found.status.value}){': ' + found.reason if found.reason else ''}"
