"""The agent's tool table: which tools the model is offered, and how each call is run and recorded.

Three tools: ``run_cypher_query`` (:mod:`.tool`, read-only Cypher), ``find_objects`` (:mod:`.find_tool`, the
operator's words -> objects, through the resolver ``heracles find`` uses) and ``scene_at``
(:mod:`.time_tool`, the scene or a node at a past time). The agentic method offers all three; the single-query
method only the Cypher tool (its one query, as in the reference paper); the context method none. Every call
counts against the request's query limit, whatever the tool; a call of a tool not offered, or with
arguments that are not a JSON object, gets a tool error naming what was wrong and the conversation goes on.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from heracles_ros.agent.find_tool import FIND_TOOL, FindTool
from heracles_ros.agent.llm import ToolCall, ToolSpec
from heracles_ros.agent.time_tool import TIME_TOOL, TimeTool
from heracles_ros.agent.tool import CYPHER_TOOL, TOOL_NAME, CypherTool, ToolOutput, tool_error


@dataclass(frozen=True)
class Tool:
    """One tool: what the model is told, and how a call with JSON-object arguments runs."""

    spec: ToolSpec
    run: Callable[[dict[str, Any]], ToolOutput]
    #: What the request's ``usage.queries`` records for a call (the Cypher text itself for the Cypher tool).
    record: Callable[[dict[str, Any]], str]


class Toolbox:
    """The tools of one agent, by name, and the ones each method offers."""

    def __init__(self, cypher: CypherTool, find: FindTool, time: TimeTool):
        self.cypher = cypher
        self.find = find
        self.time = time
        self.tools = {tool.spec.name: tool for tool in (
            Tool(CYPHER_TOOL, lambda args: cypher.run(args.get("query")), lambda args: str(args.get("query"))),
            Tool(FIND_TOOL, find.run, lambda args: _recorded(FIND_TOOL.name, args)),
            Tool(TIME_TOOL, time.run, lambda args: _recorded(TIME_TOOL.name, args)),
        )}

    def offered(self, method: str) -> list[ToolSpec]:
        """The tools ``method`` offers the model (agentic: all; single: the Cypher tool; context: none)."""
        if method == "context":
            return []
        if method == "single":
            return [CYPHER_TOOL]
        return [tool.spec for tool in self.tools.values()]

    def tool_for(self, call: ToolCall, offered: list[ToolSpec]) -> Tool | ToolOutput:
        """The offered tool ``call`` names, or the tool error it gets instead: a tool not offered, or arguments
        that are not a JSON object (the call still counts against the limit)."""
        names = [spec.name for spec in offered]
        if call.name not in names:
            listed = f"the only tool is {names[0]}" if len(names) == 1 else f"the tools are {', '.join(names)}"
            return tool_error(f"there is no tool {call.name!r}; {listed}.")
        if call.arguments is None:
            raw = call.raw_arguments[:200]
            shape = '{"query": "..."}' if call.name == TOOL_NAME else "of the tool's named arguments"
            return tool_error(f"the arguments must be a JSON object {shape}, got {raw!r}.")
        return self.tools[call.name]


def _recorded(name: str, arguments: dict[str, Any]) -> str:
    return f"{name} {json.dumps(arguments, ensure_ascii=False, sort_keys=True, default=str)}"
