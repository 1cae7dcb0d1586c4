"""The eval runner with the model's other tools: an item answered through find_objects and scene_at is judged like
any other, and its record lists every tool call (real agent loop, FalkorDB, resolver, history; scripted model)."""
from __future__ import annotations

import json

import pytest
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, adapter, find, say, scene_at
from support.tiny_scene import tiny_scene

from heracles_ros.agent.loop import Agent
from heracles_ros.eval.dataset import EvalItem
from heracles_ros.eval.runner import run_item
from heracles_ros.mirror.reconcile import Mirror

pytestmark = pytest.mark.backends("falkordb")


def test_items_answered_through_find_objects_and_scene_at_are_judged_and_their_calls_recorded(store) -> None:
    Mirror(store).reconcile(tiny_scene(), stamp_s=1_800_000_000.0)

    def model(request: RecordedRequest) -> Turn:
        results, question = request.tool_results(), request.messages[1]["content"]
        if "sit on" in question:
            if not results:
                return find("something to sit on", k=1)
            first, _ = json.JSONDecoder().raw_decode(results[-1])
            return say(f"<answer>{first[0]['symbol']}</answer>")
        if not results:
            return scene_at("now", symbol="O3")
        return say("<answer>true</answer>" if '"present":true' in results[-1] else "<answer>false</answer>")

    items = [EvalItem("seat", "ask", "Which object is something to sit on?", answer='"O4"', answer_type="string"),
             EvalItem("box-there", "ask", "Is O3 in the scene now?", answer="true")]
    with ScriptedLLMServer(model) as server:
        records = [run_item(item, Agent(store, adapter(server)), "agentic") for item in items]
    seat, there = records
    assert (seat.success, seat.output, seat.tool_calls) == (True, 'O4', 1), seat
    assert seat.queries == ['find_objects {"k": 1, "text": "something to sit on"}']
    assert (there.success, there.queries) == (True, ['scene_at {"symbol": "O3", "time": "now"}']), there
