"""The agent's ``find_objects`` tool: the operator's words -> the scene's objects they name, best first.

For words that are not a class of the scene ("something to sit on", "a lorry", "the thing that keeps food
cold") the model would otherwise guess a class in its Cypher, which a small local model often gets wrong and
nothing checks. This tool asks the same resolver ``heracles find`` uses (:mod:`heracles_ros.meaning.resolver`:
offline word vectors by default, the objects read live), so the model gets symbols, classes and positions it
can then query, answer or plan with; its answers still go through the same checks. Rows are cut to the same
token budget as the Cypher tool's.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from heracles_ros.agent.llm import ToolSpec
from heracles_ros.agent.tool import ToolOutput, format_rows, tool_error
from heracles_ros.errors import HeraclesError, describe
from heracles_ros.graphdb.store import CappedRows
from heracles_ros.meaning.resolver import Resolver

FIND_TOOL_NAME = "find_objects"
#: Objects one call returns by default, and at most.
DEFAULT_K = 10
MAX_K = 50

FIND_TOOL = ToolSpec(
    name=FIND_TOOL_NAME,
    description=(
        "The scene's objects some words describe (synonyms, kinds, uses: 'something to sit on'), best first, with "
        "class, score, position and room."
    ),
    parameters={
        "type": "object",
        "properties": {
            "text": {"type": "string", "description": "the operator's words"},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_K, "description": f"default {DEFAULT_K}"},
        },
        "required": ["text"],
        "additionalProperties": False,
    },
)


class FindTool:
    """Runs ``find_objects`` calls through one resolver, made on first use (loading word vectors costs ~0.5 s)."""

    def __init__(self, resolver: Callable[[], Resolver], *, token_budget: int = 2000):
        self._resolver = resolver
        self.token_budget = token_budget

    def run(self, arguments: dict[str, Any]) -> ToolOutput:
        unknown = sorted(set(arguments) - {"text", "k"})
        text, k = arguments.get("text"), arguments.get("k", DEFAULT_K)
        if unknown:
            return tool_error(f"{FIND_TOOL_NAME} takes 'text' and optionally 'k', not {', '.join(map(repr, unknown))}.")
        if not isinstance(text, str) or not text.strip():
            return tool_error(f"{FIND_TOOL_NAME} needs 'text': the words naming what to find, e.g. "
                              "'something to sit on'.")
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
            return tool_error(f"'k' must be a whole number from 1 to {MAX_K}, got {k!r}.")
        try:
            found = self._resolver().find(text, k=k)
        except HeraclesError as exc:
            return tool_error(f"{FIND_TOOL_NAME} failed: {describe(exc)}")
        if not found.objects:
            return ToolOutput(f"[] (no object of the scene matches {text!r}; the scene's classes are listed above)")
        rows = [{"symbol": f.symbol, "class": f.cls, "score": round(f.score, 2), "x": f.x, "y": f.y, "z": f.z,
                 "room": f.room} for f in found.objects]
        output = format_rows(CappedRows(rows, len(rows)), token_budget=self.token_budget,
                             advice="ask for fewer objects (k) or name a room")
        notes = []
        if found.uncertain:
            notes.append("(note: uncertain: the words match no class of the scene well; check with a query, or ask "
                         "the operator back)")
        if not found.whole:
            notes.append("(note: the mirror wrote a new snapshot during the read; these rows may mix two of them)")
        return replace(output, text="\n".join([output.text, *notes])) if notes else output
