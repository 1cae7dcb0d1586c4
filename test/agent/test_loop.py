"""The agent loop end to end: scripted model, real FalkorDB, real tool, validators, checker and overlay."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest
import spark_dsg
from support.scripted_llm import RecordedRequest, Turn, adapter, call, calls, garbage, say, slow

from heracles_ros.agent.loop import Agent, extract_answer, parse_changes
from heracles_ros.agent.settings import AgentSettings
from heracles_ros.errors import ConfigError, CorrectionError
from heracles_ros.mirror.reconcile import Mirror

COUNT_ALL = "MATCH (n) RETURN count(n) AS n"


def _one(store, query):
    return store.query(query)[0]


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_multi_step_tool_use(small_store, llm_server, provider):
    """Two dependent queries, the second built from the first's result, then a typed answer."""
    truth = _one(small_store, "MATCH (o:Object {class: 'bicycle'}) RETURN count(o) AS n")["n"]

    def model(request: RecordedRequest) -> Turn:
        results = request.tool_results()
        if not results:
            return call("MATCH (r:Room {class: 'lounge'}) RETURN r.nodeSymbol AS room", text="Find the lounge first.")
        if len(results) == 1:
            room = json.loads(results[0])[0]["room"]
            return call(f"MATCH (:Room {{nodeSymbol: '{room}'}})-[:CONTAINS*]->(o:Object) RETURN count(o) AS n")
        if len(results) == 2:
            return call("MATCH (o:Object {class: 'bicycle'}) RETURN count(o) AS n")
        total = json.loads(results[2])[0]["n"]
        return say(f"There are {total} bicycles in all.\n<answer>{total}</answer>")

    server = llm_server(model)
    agent = Agent(small_store, adapter(server, provider))
    result = agent.ask("How many bicycles are there?", answer_type="number")

    assert result.ok, result.error
    assert result.answer == str(truth)
    assert result.explanation == f"There are {truth} bicycles in all."
    assert result.usage.tool_calls == 3 and len(result.usage.queries) == 3
    assert "'R1'" in result.usage.queries[1] or "nodeSymbol: 'R" in result.usage.queries[1]
    assert result.usage.input_tokens == sum(i for i, _ in server.reported)
    assert result.usage.output_tokens == sum(o for _, o in server.reported)
    assert result.usage.latency_s > 0
    first = server.requests[0]
    assert first.messages[0]["role"] == "system" and "<database>" in first.messages[0]["content"]
    assert first.messages[1]["content"].startswith("Question: How many bicycles are there?")
    assert [t["function"]["name"] for t in first.tools] == ["run_cypher_query", "find_objects", "scene_at"]


def test_cypher_syntax_error_is_fed_back_and_repaired(small_store, llm_server):
    server = llm_server([
        call("MATCH (o:Object {class: 'box'} RETURN count(o) AS n"),
        call("MATCH (o:Object {class: 'box'}) RETURN count(o) AS n", text="Fixing the missing parenthesis."),
        say("<answer>5</answer>"),
    ])
    result = Agent(small_store, adapter(server)).ask("How many boxes?")
    assert result.ok, result.error
    error_seen = server.requests[1].tool_results()[0]
    assert error_seen.startswith("ERROR: database rejected the query")
    fixed = json.loads(server.requests[2].tool_results()[1])
    assert fixed == [{"n": _one(small_store, "MATCH (o:Object {class: 'box'}) RETURN count(o) AS n")["n"]}]
    assert result.usage.tool_calls == 2


@pytest.mark.arcadedb_deviation("read_only")
@pytest.mark.parametrize("task", ["ask", "command"])
def test_write_attempt_is_refused_by_the_server(small_store, llm_server, task):
    before = _one(small_store, COUNT_ALL)["n"]
    classes_before = small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c ORDER BY s")
    bicycle = _one(small_store, "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS s LIMIT 1")["s"]
    final = "<answer>3</answer>" if task == "ask" else f"<answer>(holding {bicycle})</answer>"
    server = llm_server([
        calls(
            "MATCH (o:Object {class: 'bicycle'}) SET o.class = 'bag' RETURN o.nodeSymbol",
            "CREATE (:Object {nodeSymbol: 'O999', class: 'bag'})",
        ),
        call("MATCH (o:Object) DETACH DELETE o"),
        say(final),
    ])
    agent = Agent(small_store, adapter(server))
    result = agent.ask("Relabel the bicycles") if task == "ask" else agent.command("Take a bicycle")
    assert result.ok, result.error
    refusals = server.requests[2].tool_results()
    assert len(refusals) == 3
    assert all(r.startswith("ERROR: the query tried to write; this tool is read-only") for r in refusals)
    assert _one(small_store, COUNT_ALL)["n"] == before
    assert small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c ORDER BY s") == classes_before


def test_hallucinated_symbol_is_rejected_fed_back_and_fixed(small_store, llm_server):
    bag = _one(small_store, "MATCH (o:Object {class: 'bag'}) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")["s"]
    server = llm_server([
        say("<answer>(and (holding O999) (visited-room R77))</answer>"),
        call("MATCH (o:Object {class: 'bag'}) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1"),
        say(f"<answer>(holding {bag})</answer>"),
    ])
    result = Agent(small_store, adapter(server)).command("Pick up the bag")
    assert result.ok, result.error
    assert result.goal == f"(holding {bag})"
    feedback = server.requests[1].last("user")["content"]
    assert "rejected by the goal checker" in feedback
    assert "unknown symbol 'O999'" in feedback and "unknown symbol 'R77'" in feedback
    assert [t["function"]["name"] for t in server.requests[1].tools] == [  # may query again
        "run_cypher_query", "find_objects", "scene_at"]


def test_malformed_goal_gets_the_syntax_problem(small_store, llm_server):
    room = _one(small_store, "MATCH (r:Room) RETURN r.nodeSymbol AS s LIMIT 1")["s"]
    server = llm_server([say("<answer>(visited-room R0</answer>"), say(f"<answer>(visited-room {room})</answer>")])
    result = Agent(small_store, adapter(server)).command("Go to the room")
    assert result.goal == f"(visited-room {room})"
    assert "missing ')'" in server.requests[1].last("user")["content"]


def test_oversized_result_reaches_the_model_trimmed(small_store, llm_server):
    everything = call("MATCH (p:MeshPlace) RETURN p.nodeSymbol AS s, p.x AS x, p.y AS y")
    server = llm_server([everything, say("<answer>104</answer>")])
    agent = Agent(small_store, adapter(server), AgentSettings(result_token_budget=250))
    result = agent.ask("How many mesh places?")
    assert result.ok
    seen = server.requests[1].tool_results()[0]
    total = _one(small_store, "MATCH (p:MeshPlace) RETURN count(p) AS n")["n"]
    assert f"of {total} rows cut to fit the 250-token result budget" in seen


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_slow_model_times_out_with_a_clear_error(small_store, llm_server, provider):
    server = llm_server([slow(20.0)])
    agent = Agent(small_store, adapter(server, provider, timeout_s=0.5))
    started = time.monotonic()
    result = agent.ask("How many boxes?")
    elapsed = time.monotonic() - started
    assert result.error.startswith("LLMTimeout: ") and "did not answer within 0.5 s" in result.error
    # Given up at the model's 0.5 s, long before its answer (20 s); the rest is the prompt's database reads,
    # which a loaded machine slows (2.96 s seen at load average 17).
    assert elapsed < 10.0 and result.usage.latency_s < 10.0


def test_request_deadline_covers_the_whole_conversation(small_store, llm_server):
    server = llm_server([slow(0.4, call("MATCH (n) RETURN count(n) AS n"))] * 4)
    agent = Agent(small_store, adapter(server), AgentSettings(request_timeout_s=1.0))
    result = agent.ask("How many nodes?")
    assert result.error.startswith("LLMTimeout: the request took longer than its 1 s limit")
    assert result.usage.latency_s < 1.8


def test_garbage_from_the_provider_is_a_clear_error(small_store, llm_server):
    server = llm_server([garbage()])
    result = Agent(small_store, adapter(server)).ask("How many boxes?")
    assert result.error.startswith("LLMOutputError: ") and "not a chat completion" in result.error
    assert result.answer == ""


def test_reply_without_answer_tags_is_fed_back_once_then_fails(small_store, llm_server):
    server = llm_server([say("I think there are five."), say("Five, definitely.")])
    result = Agent(small_store, adapter(server)).ask("How many boxes?")
    assert "no final answer" in server.requests[1].last("user")["content"]
    assert result.error == "LLMOutputError: the model's reply has no <answer> tags: 'Five, definitely.'"


def test_bad_sldp_is_fed_back_once_and_the_type_enforced(small_store, llm_server):
    server = llm_server([say("<answer><R1, R2></answer>"), say("<answer>2</answer>")])
    result = Agent(small_store, adapter(server)).ask("How many rooms have bags?", answer_type="number")
    assert result.ok and result.answer == "2" and result.answer_type == "number"
    assert "expected a number, got a set" in server.requests[1].last("user")["content"]

    server = llm_server([say("<answer>{unclosed: 1</answer>"), say("<answer>[1, 2</answer>")])
    result = Agent(small_store, adapter(server)).ask("Counts?", answer_type="dict")
    assert result.error.startswith("AnswerFormatError: not valid SLDP")


def test_answer_is_normalised_to_canonical_sldp(small_store, llm_server):
    server = llm_server([say("Rooms: <answer> < R3 ,R1,R1 > </answer>")])
    result = Agent(small_store, adapter(server)).ask("Which rooms?", answer_type="set[string]")
    assert result.answer == "<R1, R3>" and result.explanation == "Rooms:"


def test_tool_call_limit_is_enforced(small_store, llm_server):
    server = llm_server([call(f"RETURN {i} AS i") for i in range(7)] + [say("<answer>0</answer>")])
    result = Agent(small_store, adapter(server, max_tool_calls=3)).ask("Count to seven")
    assert result.usage.tool_calls == 3 and result.usage.queries == ["RETURN 0 AS i", "RETURN 1 AS i", "RETURN 2 AS i"]
    after_limit = server.requests[3]
    assert after_limit.tools == []  # the tool is withdrawn
    assert "no queries left" in after_limit.last("user")["content"]
    assert after_limit.tool_results()[-1] == '[{"i":2}]'
    denied = server.requests[4].tool_results()[-1]
    assert denied.startswith("NOT RUN: the limit of 3 queries is reached")
    assert result.ok and result.answer == "0"

    server = llm_server(lambda request: call("RETURN 1 AS i"))  # a model that never stops querying
    result = Agent(small_store, adapter(server, max_tool_calls=2)).ask("Loop forever")
    assert result.error.startswith("LLMOutputError: the model gave no acceptable final answer in")
    assert result.usage.tool_calls == 2 and len(server.requests) < 12


def test_single_query_method_runs_exactly_one_query(small_store, llm_server):
    server = llm_server([
        calls("MATCH (o:Object {class: 'box'}) RETURN count(o) AS n", "RETURN 1 AS one"),
        say("<answer>5</answer>"),
    ])
    result = Agent(small_store, adapter(server), AgentSettings(method="single")).ask("How many boxes?")
    assert result.ok and result.usage.tool_calls == 1
    results = server.requests[1].tool_results()
    assert results[1].startswith("NOT RUN: the limit of 1 query is reached")
    assert server.requests[1].tools == []
    assert "exactly one Cypher query" in server.requests[0].messages[0]["content"]


def test_context_window_method_sends_the_scene_and_no_tool(small_store, llm_server):
    server = llm_server([say("<answer>5</answer>")])
    result = Agent(small_store, adapter(server), AgentSettings(method="context")).ask("How many boxes?")
    assert result.ok and result.usage.tool_calls == 0
    request = server.requests[0]
    assert request.tools == []
    system = request.messages[0]["content"]
    for row in small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c"):
        assert f"({row['s']}, {row['c']}, " in system
    assert "<database>" not in system


def test_correction_is_applied_and_survives_the_next_snapshot(small_store, small_scene, llm_server):
    bicycle = _one(small_store, "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")["s"]

    def model(request: RecordedRequest) -> Turn:
        if not request.tool_results():
            return call("MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")
        found = json.loads(request.tool_results()[0])[0]["s"]
        return say(f'It is {found}.\n<answer>[["{found}", "class", "bag"]]</answer>')

    server = llm_server(model)
    result = Agent(small_store, adapter(server)).correct("That bicycle is actually a bag.")
    assert result.ok, result.error
    assert result.changes == [f"{bicycle}.class: 'bicycle' -> 'bag'"]
    assert result.explanation == f"It is {bicycle}."
    query = f"MATCH (o:Object {{nodeSymbol: '{bicycle}'}}) RETURN o.class AS c"
    assert _one(small_store, query)["c"] == "bag"
    # Hydra's next snapshot still calls it a bicycle, and moved it: the mirror rewrites the node from Hydra's
    # view (class included), and the correction is set again on top.
    node = small_scene.get_node(spark_dsg.NodeSymbol(bicycle[0], int(bicycle[1:])))
    node.attributes.position = node.attributes.position + np.array([1.0, 0.0, 0.0])
    report = Mirror(small_store).reconcile(small_scene)
    assert report.nodes_changed >= 1 and report.corrections_reapplied >= 1
    assert _one(small_store, query)["c"] == "bag"
    # The same snapshot once more changes nothing, and the correction still holds.
    Mirror(small_store).reconcile(small_scene)
    assert _one(small_store, query)["c"] == "bag"


def test_refused_correction_is_fed_back_then_fixed(small_store, llm_server):
    box = _one(small_store, "MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")["s"]
    server = llm_server([
        say('<answer>[["O999", "class", "bag"], ["' + box + '", "nodeSymbol", "O1"]]</answer>'),
        say(f'<answer>[["{box}", "x", 1.5]]</answer>'),
    ])
    before = _one(small_store, COUNT_ALL)["n"]
    result = Agent(small_store, adapter(server)).correct(f"The box {box} is at x 1.5")
    assert result.ok, result.error
    feedback = server.requests[1].last("user")["content"]
    assert "node O999 does not exist" in feedback and "'nodeSymbol' cannot be corrected" in feedback
    assert result.changes[0].startswith(f"{box}.x: ") and result.changes[0].endswith("-> 1.5")
    assert _one(small_store, f"MATCH (o:Object {{nodeSymbol: '{box}'}}) RETURN o.x AS x")["x"] == 1.5
    assert _one(small_store, COUNT_ALL)["n"] == before + 1  # only the Correction bookkeeping node


def test_correction_that_stays_refused_changes_nothing(small_store, llm_server):
    server = llm_server([
        say('<answer>[["O1", "x", 1e999]]</answer>'),  # refused by the checker, fed back
        say('<answer>[["O999", "class", "bag"]]</answer>'),
    ])
    before = small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c ORDER BY s")
    result = Agent(small_store, adapter(server)).correct("The unicorn is a bag")
    assert result.error == "CorrectionError: node O999 does not exist in the scene graph" and result.changes == []
    assert small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c ORDER BY s") == before


def test_correction_that_matches_nothing_ends_with_the_models_explanation(small_store, llm_server):
    server = llm_server([
        call("MATCH (o:Object {class: 'unicorn'}) RETURN o.nodeSymbol AS s"),
        say("There is no unicorn in the scene graph, so nothing was changed.\n<answer>[]</answer>"),
    ])
    before = small_store.query("MATCH (n) RETURN count(n) AS n")
    result = Agent(small_store, adapter(server)).correct("The unicorn is a bag")
    assert result.ok and result.error == "" and result.changes == []
    assert result.explanation == "There is no unicorn in the scene graph, so nothing was changed."
    assert small_store.query("MATCH (n) RETURN count(n) AS n") == before


def test_empty_request_and_bad_method(small_store, llm_server):
    server = llm_server([])
    result = Agent(small_store, adapter(server)).ask("   ")
    assert result.error == "ConfigError: empty ask request" and server.requests == []
    with pytest.raises(ConfigError, match="unknown agent method"):
        AgentSettings(method="python")
    refused = Agent(small_store, adapter(server), AgentSettings(method="context")).correct("The bicycle is a bag")
    assert refused.error.startswith("ConfigError: corrections need the database tool") and refused.changes == []
    assert server.requests == []


def test_answer_and_change_parsing():
    assert extract_answer("a <answer>1</answer> b <ANSWER> 2 </ANSWER>") == "2"
    assert extract_answer("no tags") is None
    assert parse_changes('[["O1", "class", "bag"]]') == [("O1", "class", "bag")]
    assert parse_changes('["O1", "x", 2]') == [("O1", "x", 2)]
    assert parse_changes('{"symbol": "O1", "property": "name", "value": "red bag"}') == [("O1", "name", "red bag")]
    assert parse_changes("[[O1, class, bag], [O2, x, 2.5]]") == [("O1", "class", "bag"), ("O2", "x", 2.5)]
    with pytest.raises(CorrectionError, match="change 1 is not a"):
        parse_changes('[["O1", "class"]]')
    with pytest.raises(CorrectionError, match="neither JSON nor SLDP"):
        parse_changes("set O1 to bag")


# -- asking back and sessions ------------------------------------------------------------------------
BICYCLES = "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS id ORDER BY id"


def test_an_ambiguous_question_ends_with_a_clarification_whose_candidates_come_from_the_database(
    small_store, llm_server
):
    from heracles_ros.execution.robot_state import RobotState, RobotStateStore

    RobotStateStore(small_store).write(RobotState((0.0, 0.0, 0.0), place="P0"))
    bicycles = [row["id"] for row in small_store.query(BICYCLES)]
    facts = {row["id"]: row for row in small_store.query(
        "MATCH (o:Object {class: 'bicycle'}) OPTIONAL MATCH (r:Room)-[:CONTAINS*1..2]->(o) "
        "RETURN o.nodeSymbol AS id, r.nodeSymbol AS room, r.class AS room_class, o.x AS x, o.y AS y")}
    assert any(row["room"] is None for row in facts.values())  # an object without a parent: no room to tell
    server = llm_server([call(BICYCLES), say(f'<answer>CLARIFY("Which bicycle?", <{", ".join(bicycles)}>)</answer>')])
    agent = Agent(small_store, adapter(server))
    result = agent.ask("Which room is the bicycle in?", answer_type="string", session="op")
    assert result.ok and result.answer == "" and result.clarification == "Which bicycle?"
    assert [c.symbol for c in result.candidates] == bicycles
    for candidate in result.candidates:
        fact = facts[candidate.symbol]
        assert (candidate.class_name, candidate.room, candidate.room_class) == (
            "bicycle", fact["room"] or "", fact["room_class"] or "")
        assert candidate.distance_m == pytest.approx((fact["x"] ** 2 + fact["y"] ** 2) ** 0.5)
    # The session remembers the question back, with the facts the operator was shown.
    (exchange,) = agent.sessions.history("op")
    assert exchange.answer.startswith('CLARIFY("Which bicycle?"')
    assert exchange.note == "Candidates: " + "; ".join(c.description for c in result.candidates)


def test_a_correction_may_ask_back(small_store, llm_server):
    server = llm_server([say('<answer>CLARIFY("Which one?", <O1>)</answer>')])
    before = small_store.query("MATCH (n) RETURN count(n) AS n")
    result = Agent(small_store, adapter(server)).correct("That is a bag.")
    assert result.ok and result.clarification == "Which one?" and [c.symbol for c in result.candidates] == ["O1"]
    assert result.changes == [] and small_store.query("MATCH (n) RETURN count(n) AS n") == before


def test_a_session_carries_earlier_exchanges_to_the_model_and_queries_are_reported_as_they_run(
    small_store, llm_server
):
    box = small_store.query("MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS b ORDER BY b LIMIT 1")[0]["b"]
    server = llm_server([say(f"<answer>{box}</answer>"), call(BICYCLES), say(f"<answer>(holding {box})</answer>")])
    agent = Agent(small_store, adapter(server))
    assert agent.ask("Which box is the first?", session="s").answer == box
    seen: list[str] = []
    result = agent.command("Bring it.", session="s", on_query=seen.append)
    assert result.goal == f"(holding {box})" and result.goal_text == f"hold {box} (box)"
    assert seen == [BICYCLES]
    sent = server.requests[1].messages
    assert [m["role"] for m in sent[:4]] == ["system", "user", "assistant", "user"]
    assert (sent[1]["content"], sent[2]["content"]) == ("Question: Which box is the first?", f"<answer>{box}</answer>")
    assert sent[3]["content"].startswith("Instruction: Bring it.")
    # Another session starts afresh.
    server.extend([say("<answer>x</answer>")])
    agent.ask("Anything?", session="other")
    assert [m["role"] for m in server.requests[-1].messages] == ["system", "user"]


def test_the_sessions_given_are_the_ones_kept_even_while_empty(small_store, llm_server):
    """A node's Sessions (its session_exchanges) is used from the first request: an empty one is no reason to
    make a default one, which would remember 6 exchanges instead of 1."""
    from heracles_ros.agent.sessions import Sessions

    sessions = Sessions(max_exchanges=1)
    server = llm_server([say("<answer>5</answer>"), say("<answer>6</answer>"), say("<answer>7</answer>")])
    agent = Agent(small_store, adapter(server), sessions=sessions)
    for question in ("How many boxes?", "And bags?", "And chairs?"):
        assert agent.ask(question, session="op").ok
    earlier = [m["content"] for m in server.requests[-1].messages if m["role"] in ("user", "assistant")][:-1]
    assert earlier == ["Question: And bags?", "<answer>6</answer>"], earlier
    assert agent.sessions is sessions and len(sessions) == 1


@pytest.mark.backends("falkordb")
def test_a_misspelt_or_empty_graph_is_named_before_the_model_is_asked(small_store, llm_server, falkordb_uri,
                                                                     graph_name):
    """A wrong graph must not read as an empty room ("0 bags"): the request fails naming the graph."""
    from heracles_ros.graphdb import open_store

    server = llm_server(lambda request: say("<answer>0</answer>"))
    with open_store(falkordb_uri, graph=f"{graph_name}_typo") as typo:
        result = Agent(typo, adapter(server)).ask("How many bags are there?", answer_type="number")
        command = Agent(typo, adapter(server)).command("Pick up the bag")
    assert not result.ok and result.answer == "" and f"'{graph_name}_typo'" in result.error
    assert "does not exist" in result.error and f"'{graph_name}'" in result.error  # where the scene is
    assert not command.ok and command.goal == "" and "does not exist" in command.error
    assert server.requests == []
