"""The scripted model turns on their own: what they ask the database for, and how they answer from its rows.

The whole loop with them (the real agent, database, checker, planner and dispatcher) is
test/cli/test_demo.py and test/cli/test_up.py.
"""
from __future__ import annotations

import json
import math
import urllib.request
from collections.abc import Iterator

import pytest

from heracles_ros.agent.loop import Agent, extract_answer
from heracles_ros.demo.scripted_model import (
    KNOWN_SENTENCES,
    MODEL_NAME,
    QUESTION,
    UNKNOWN_REPLY,
    ScriptedModelServer,
    command_for,
    next_turn,
)
from heracles_ros.formats.sldp import parse_clarification
from heracles_ros.graphdb.cypher import demo as cypher
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.scene.io import load_scene


def conversation(request: str, *results: object) -> list[dict[str, object]]:
    """The agent's messages: system, user (with its request line), then one tool message per result."""
    messages: list[dict[str, object]] = [
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": f"{request}\n\nGive your final answer between <answer> tags."},
    ]
    for result in results:
        text = result if isinstance(result, str) else json.dumps(result)
        messages.append({"role": "tool", "content": text})
    return messages


def test_the_question_runs_one_count_query_and_answers_the_count_the_database_returned():
    first = next_turn(conversation(f"Question: {QUESTION}"))
    assert first.queries == (cypher.SCRIPTED_BOXES_IN_LOUNGE,)
    assert next_turn(conversation(f"Question: {QUESTION}", [{"boxes": 3}])).text == "<answer>3</answer>"


def test_the_command_takes_the_box_of_the_named_room_nearest_the_robot_to_the_lounges_middle_place():
    request = f"Instruction: {command_for('office')}"
    first = next_turn(conversation(request))
    assert first.queries == (cypher.SCRIPTED_BOXES_OUTSIDE_LOUNGE, cypher.SCRIPTED_LOUNGE_PLACES,
                             cypher.SCRIPTED_ROBOT)
    boxes = [{"box": "O1", "x": 9.0, "y": 0.0, "room_class": "office"},
             {"box": "O2", "x": 1.0, "y": 0.0, "room_class": "office"},
             {"box": "O3", "x": 0.0, "y": 0.0, "room_class": "storage"}]  # nearest of all, but not in the office
    places = [{"room": "R1", "place": f"P{k}", "x": float(k), "y": 5.0} for k in range(5)]  # middle: P2
    places.append({"room": "R7", "place": "P9", "x": 2.0, "y": 5.0})  # a second lounge: not the first
    robot = [{"x": 0.0, "y": 0.0}]
    answer = next_turn(conversation(request, boxes, json.dumps(places) + "\n(note: rows trimmed)", robot))
    assert answer.queries == ()
    assert answer.text == "<answer>(object-in-place O2 P2)</answer>"


def test_a_failed_query_or_any_other_request_gets_an_answer_that_says_so():
    request = f"Instruction: {command_for('office')}"
    failed = next_turn(conversation(request, "ERROR: the database stopped", "ERROR", "ERROR"))
    assert "no box in a office" in failed.text
    assert next_turn(conversation("Question: How many chairs are there?")).text == UNKNOWN_REPLY
    assert next_turn(conversation("Correction: that box is a crate")).text == UNKNOWN_REPLY
    clarification = parse_clarification(extract_answer(UNKNOWN_REPLY) or "")
    assert clarification is not None and clarification.candidates == ()
    assert all(sentence in clarification.question for sentence in KNOWN_SENTENCES)


# --- the README's examples through the real agent, tool and database (issue 33 F3) ----------------------
@pytest.fixture
def example_agent(store: GraphStore) -> Iterator[Agent]:
    from heracles_ros.agent.factory import make_llm
    from heracles_ros.agent.llm import LLMSettings
    from heracles_ros.demo.goal import EXAMPLE_SCENE
    from heracles_ros.mirror.reconcile import Mirror
    from heracles_ros.planning.planner import Planner

    Mirror(store).reconcile(load_scene(EXAMPLE_SCENE))
    with ScriptedModelServer() as server:
        llm = make_llm(LLMSettings(provider="openai", model=MODEL_NAME, base_url=server.base_url))
        yield Agent(store, llm, checker=Planner(store))


def test_the_readmes_question_is_asked_back_and_the_operators_choice_answered(example_agent, store):
    bicycles = {r["s"]: r["room"] for r in store.query(
        "MATCH (r:Room)-[:CONTAINS]->(:MeshPlace)-[:CONTAINS]->(o:Object {class: 'bicycle'}) "
        "RETURN o.nodeSymbol AS s, r.class AS room")}
    assert len(bicycles) > 1  # the example scene has several: the question cannot name one
    asked = example_agent.ask("Which room is the bicycle in?", answer_type="string", session="op1")
    assert asked.ok, asked.error
    assert asked.clarification.startswith("Which bicycle do you mean?")
    assert {c.symbol for c in asked.candidates} == set(bicycles)
    chosen = sorted(bicycles)[1]
    answered = example_agent.ask(chosen, answer_type="string", session="op1")
    assert answered.ok and not answered.clarification, answered
    assert answered.answer.strip('"') == bicycles[chosen]


def test_the_readmes_command_is_asked_back_then_becomes_a_checked_goal(example_agent, store):
    from heracles_ros.execution.robot_state import RobotState, RobotStateStore

    def where(cls: str) -> dict[str, tuple[float, float]]:
        rows = store.query(f"MATCH (:MeshPlace)-[:CONTAINS]->(o:Object {{class: '{cls}'}}) "
                           "RETURN o.nodeSymbol AS s, o.x AS x, o.y AS y")
        return {r["s"]: (r["x"], r["y"]) for r in rows}

    bicycles, boxes = where("bicycle"), where("box")
    robot = (30.0, -20.0)  # somewhere: "the one nearest you" is the bicycle nearest this
    RobotStateStore(store).write(RobotState(position=(*robot, 0.0)))
    asked = example_agent.command("Bring the box nearest the bicycle to the lounge", session="op1")
    assert asked.clarification.startswith("Which bicycle do you mean?"), asked
    nearest = example_agent.command("The one nearest you.", session="op1")
    assert nearest.goal.startswith("(object-in-place O"), nearest
    obj = nearest.goal.split()[1]
    bicycle = min(bicycles, key=lambda s: math.dist(bicycles[s], robot))
    assert obj == min(boxes, key=lambda s: math.dist(boxes[s], bicycles[bicycle]))
    place = nearest.goal.split()[2].rstrip(")")
    rooms = store.query(f"MATCH (r:Room)-[:CONTAINS]->(:MeshPlace {{nodeSymbol: '{place}'}}) RETURN r.class AS c")
    assert rooms == [{"c": "lounge"}]


def test_the_server_speaks_the_openai_chat_completions_protocol():
    with ScriptedModelServer() as server:
        body = json.dumps({"model": "x", "messages": conversation(f"Question: {QUESTION}")}).encode()
        request = urllib.request.Request(f"{server.base_url}/chat/completions", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as response:
            reply = json.loads(response.read())
    message = reply["choices"][0]["message"]
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    [call] = message["tool_calls"]
    assert call["function"]["name"] == "run_cypher_query"
    assert json.loads(call["function"]["arguments"]) == {"query": cypher.SCRIPTED_BOXES_IN_LOUNGE}
    assert reply["usage"]["prompt_tokens"] > 0
