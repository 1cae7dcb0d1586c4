"""The agent's tool table through the real loop: scripted model, real databases (FalkorDB and Bolt), the real
resolver with the offline word vectors, the real history after ``heracles load`` of two snapshots."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.history_scene import MOVED_FROM, T0, load_both
from support.scripted_llm import RecordedRequest, Turn, adapter, find, say, scene_at, use
from support.tiny_scene import tiny_scene

from heracles_ros.agent.loop import Agent
from heracles_ros.agent.settings import AgentSettings
from heracles_ros.mirror.reconcile import Mirror

BETWEEN = "2027-01-15T08:00:30Z"
TOOLS = ["run_cypher_query", "find_objects", "scene_at"]


def rows(request: RecordedRequest, index: int = -1) -> list[dict]:
    """The JSON rows of a tool result (notes may follow them)."""
    text = request.tool_results()[index]
    assert not text.startswith("ERROR"), text
    value, _ = json.JSONDecoder().raw_decode(text)
    return list(value)


@pytest.fixture
def two_loads(store, db_uri: str, graph_name: str, tmp_path: Path, capsys) -> object:
    """Issue 37's scenario through ``heracles load``: the tiny scene at T0, a minute later the changed one (O0
    moved 3 m, O1 nudged 0.1 m, O3 gone, O5 new)."""
    load_both(capsys, ["--db", db_uri, "--graph", graph_name], tmp_path)
    return store


def test_words_that_are_no_class_reach_the_chairs_through_find_objects(store, llm_server):
    """"Something to sit on" names no class; find_objects ranks the chair first and the model answers with it."""
    Mirror(store).reconcile(tiny_scene())

    def model(request: RecordedRequest) -> Turn:
        if not request.tool_results():
            return find("something to sit on", k=3, text="These words are no class of the scene: I look them up.")
        chairs = [row["symbol"] for row in rows(request) if row["class"] == "chair"]
        return say(f"<answer><{', '.join(chairs)}></answer>")

    server = llm_server(model)
    result = Agent(store, adapter(server)).ask("Is there something to sit on?", answer_type="set[string]")
    assert result.ok, result.error
    assert result.answer == "<O4>"
    first, second = server.requests
    assert [tool["function"]["name"] for tool in first.tools] == TOOLS
    found = rows(second)
    assert found[0]["symbol"] == "O4" and set(found[0]) == {"symbol", "class", "score", "x", "y", "z", "room"}
    assert (found[0]["x"], found[0]["y"], found[0]["z"]) == (2.5, 1.0, 0.5)
    assert result.usage.tool_calls == 1
    assert result.usage.queries == ['find_objects {"k": 3, "text": "something to sit on"}']
    assert "find_objects: when the operator's words are not a class" in first.messages[0]["content"]


def test_time_questions_are_answered_from_the_history_after_two_loads(two_loads, llm_server):
    """Where was O0 between the loads (the first snapshot's position), when was O3 last seen (it is gone now),
    and which objects were in R1 then (O3 among them, though it is gone)."""
    store = two_loads

    def model(request: RecordedRequest) -> Turn:
        question, results = request.messages[1]["content"], request.tool_results()
        if "Where was O0" in question:
            if not results:
                return scene_at("30s", symbol="O0", text="Thirty seconds before the newest snapshot.")
            (row,) = rows(request)
            return say(f"<answer>POINT({row['x']} {row['y']} {row['z']})</answer>")
        if "last see O3" in question:
            if not results:
                return scene_at("now", symbol="O3")
            (row,) = rows(request)
            return say(f"<answer>{row['last_seen']}</answer>")
        if not results:
            return scene_at(BETWEEN, room="R1")
        return say(f"<answer><{', '.join(row['symbol'] for row in rows(request))}></answer>")

    agent = Agent(store, adapter(llm_server(model)))
    where = agent.ask("Where was O0 thirty seconds ago?", answer_type="point")
    assert where.ok, where.error
    assert where.answer == "POINT({:g} {:g} {:g})".format(*MOVED_FROM)
    assert where.usage.queries == ['scene_at {"symbol": "O0", "time": "30s"}']
    last = agent.ask("When did you last see O3?", answer_type="number")
    assert last.ok, last.error
    assert float(last.answer) == T0
    then = agent.ask(f"Which objects were in R1 at {BETWEEN}?", answer_type="set[string]")
    assert then.ok, then.error
    assert then.answer == "<O2, O3>"


def test_a_goal_naming_what_has_left_the_scene_is_refused_and_the_model_told_so(two_loads, llm_server):
    """Goals stay about the present: a goal for where O3 was is refused, the feedback says O3 is gone and when it
    was last seen, and the model asks back instead."""
    store = two_loads
    server = llm_server([
        scene_at(BETWEEN, symbol="O3"),
        say("<answer>(visited-object O3)</answer>"),
        say('<answer>CLARIFY("The box O3 is no longer in the scene. Where should I go instead?", <>)</answer>'),
    ])
    result = Agent(store, adapter(server)).command("Go to where the box O3 was half a minute ago.")
    assert result.ok, result.error
    assert result.goal == "" and result.clarification.startswith("The box O3 is no longer in the scene")
    feedback = server.requests[2].last("user")["content"]
    assert "unknown symbol 'O3'" in feedback
    assert "O3 (box) is no longer in the scene, last seen 2027-01-15T08:00:00.000Z." in feedback
    assert "Goals are about the scene now" in server.requests[0].messages[0]["content"]


@pytest.mark.backends("falkordb")
def test_bad_tool_calls_get_clear_errors_count_against_the_limit_and_the_loop_goes_on(two_loads, llm_server):
    store = two_loads
    server = llm_server([
        Turn(tool_calls=[("find_objects", {}), ("find_objects", {"text": "a chair", "k": 0}),
                         ("find_objects", {"text": "a chair", "limit": 3})]),
        Turn(tool_calls=[("scene_at", {"time": "yesterday-ish", "symbol": "O0"}),
                         ("scene_at", {"time": "2020-01-01T00:00:00Z", "symbol": "O0"}),
                         ("scene_at", {"time": "now", "symbol": "O99"}),
                         ("scene_at", {"time": "now", "symbol": "O0", "room": "R1"})]),
        Turn(tool_calls=[("teleport", {"to": "R1"}), ("scene_at", '{"time": "now"'), ("find_objects", {"text": "x"})]),
        say("<answer>0</answer>"),
    ])
    settings = adapter(server, max_tool_calls=9)
    result = Agent(store, settings).ask("How many things?")
    assert result.ok, result.error
    errors = server.requests[3].tool_results()
    expected = [
        "find_objects needs 'text'",
        "'k' must be a whole number from 1 to 50, got 0",
        "find_objects takes 'text' and optionally 'k', not 'limit'",
        "'yesterday-ish' is neither a duration (30s, 10m, 2h, 1d), an ISO time nor epoch seconds",
        "2020-01-01T00:00:00.000Z is before the history began: it answers from 2027-01-15T08:00:00.000Z",
        "O99: no such node in the scene, nor in the history it keeps",
        "give either 'symbol' (one node) or 'class' / 'room' (objects), not both",
        "there is no tool 'teleport'; the tools are run_cypher_query, find_objects, scene_at",
        "the arguments must be a JSON object of the tool's named arguments, got '{\"time\": \"now\"'",
    ]
    for text, words in zip(errors, expected, strict=False):
        assert text.startswith("ERROR: ") and words in text, (words, text)
    assert errors[-1].startswith("NOT RUN: the limit of 9 queries is reached")
    assert result.usage.tool_calls == 9
    assert len(result.usage.queries) == 7  # every call that ran a tool; the unknown tool and broken JSON ran none


@pytest.mark.backends("falkordb")
def test_the_single_query_method_offers_only_cypher_and_refuses_the_other_tools(small_store, llm_server):
    server = llm_server([find("a seat"), say("<answer>0</answer>")])
    result = Agent(small_store, adapter(server), AgentSettings(method="single")).ask("How many seats?")
    assert result.ok, result.error
    assert [tool["function"]["name"] for tool in server.requests[0].tools] == ["run_cypher_query"]
    assert server.requests[1].tool_results() == [
        "ERROR: there is no tool 'find_objects'; the only tool is run_cypher_query."]


@pytest.mark.backends("falkordb")
def test_find_objects_rows_are_cut_to_the_result_budget(small_store, llm_server):
    server = llm_server([find("a box", k=50), say("<answer>0</answer>")])
    settings = AgentSettings(result_token_budget=120)
    result = Agent(small_store, adapter(server), settings).ask("How many boxes?")
    assert result.ok, result.error
    text = server.requests[1].tool_results()[0]
    assert "-token result budget; ask for fewer objects (k) or name a room)" in text and "120" in text
    shown = json.JSONDecoder().raw_decode(text)[0]
    assert 0 < len(shown) < 50


@pytest.mark.backends("falkordb")
def test_an_agent_given_a_resolver_uses_it(small_store, llm_server):
    from heracles_ros.meaning.resolver import Resolver

    resolver = Resolver(small_store)
    agent = Agent(small_store, adapter(llm_server([use("find_objects", {"text": "bag"}), say("<answer>1</answer>")])),
                  resolver=lambda: resolver)
    assert agent.resolver() is resolver
    assert agent.ask("How many bags?").ok
