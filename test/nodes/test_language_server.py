"""The language_server node over real DDS: scripted model, real FalkorDB, real agent, checker and planner.

Only the hosted model is replaced (test/support/scripted_llm.py, over real
HTTP with the real openai / ollama clients). The node runs under a robot
namespace, so every name it uses must be relative; a probe node calls its
services and listens to what it publishes.
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rclpy
from heracles_ros.srv import Ask, Command, Correct, Find, ManageCorrections
from rclpy.client import Client
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String
from support.node_config import shipped_parameters, values_rcl_gives
from support.node_program import params, start_node, stop_node
from support.ros import Collector, call_service, qos, ros_session, spinning, wait_until
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, find, garbage, say, slow
from visualization_msgs.msg import Marker, MarkerArray

from heracles_ros.errors import ConfigError
from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.graphdb.cypher import mirror as mirror_q
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.nodes.language_server import ANSWER_LIFT_M, NS_ANSWER, PARAMETERS, LanguageServerNode

# Node plumbing on FalkorDB; the Neo4j path through all three nodes is test/system/test_end_to_end.py[bolt].
pytestmark = pytest.mark.backends("falkordb")

NS = "/spot1"
ROBOT_PLACE = "P0"
REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "config" / "language_server.yaml"
BOXES = "MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS box ORDER BY box"
BICYCLES = "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS id ORDER BY id"


def rows_of(request: RecordedRequest, index: int = -1) -> list[dict[str, Any]]:
    """The JSON rows of one tool result the model was sent (the newest by default)."""
    text = request.tool_results()[index]
    assert not text.startswith("ERROR"), text
    rows: list[dict[str, Any]] = json.loads(text)
    return rows


def query_then(query: str, answer: Callable[[list[dict[str, Any]]], str]) -> Callable[[RecordedRequest], Turn]:
    """A model that runs ``query`` once, then answers from the rows the database returned."""

    def model(request: RecordedRequest) -> Turn:
        if not request.tool_results():
            return call(query, text="Let me look that up.")
        return say(answer(rows_of(request)))

    return model


@dataclass
class Rig:
    node: LanguageServerNode
    probe: Node
    server: ScriptedLLMServer
    ask: Client
    command: Client
    correct: Client
    answers: Collector[String]
    markers: Collector[MarkerArray]

    def call(self, client: Client, request: Any, timeout_s: float = 30.0) -> Any:
        return call_service(client, request, timeout_s)


@pytest.fixture
def robot_position(small_store) -> tuple[float, float, float]:
    """The robot recorded at P0, as the dispatcher leaves it: plans start there, the marker floats above it."""
    states = RobotStateStore(small_store)
    position = states.position_of(ROBOT_PLACE)
    assert position is not None
    states.write(RobotState(position, place=ROBOT_PLACE))
    return position


@pytest.fixture
def rig_factory(ros_domain_id, falkordb_uri, graph_name, small_store, robot_position) -> Iterator:
    """``start(script, provider=..., **params)``: the node on a scripted model, and a probe."""
    stack = ExitStack()  # closed in reverse: spinning nodes first, then the model servers

    def start(script: Any, *, provider: str = "openai", **params: Any) -> Rig:
        server = ScriptedLLMServer(script).start()
        stack.callback(server.stop)
        url = server.openai_base_url if provider == "openai" else server.ollama_host
        overrides = {"db_uri": falkordb_uri, "graph_name": graph_name, "llm": provider, "model": server.model,
                     "base_url": url, "map_frame": "world", "instance_check_s": 0.0, **params}
        node = LanguageServerNode(
            namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()]
        )
        probe = rclpy.create_node("probe")
        rig = Rig(
            node, probe, server,
            probe.create_client(Ask, f"{NS}/ask"),
            probe.create_client(Command, f"{NS}/command"),
            probe.create_client(Correct, f"{NS}/correct"),
            Collector(probe, String, f"{NS}/last_answer", qos(10, transient_local=True)),
            Collector(probe, MarkerArray, f"{NS}/answer_marker", qos(10, transient_local=True)),
        )
        stack.enter_context(spinning(node, probe, num_threads=6))
        for client in (rig.ask, rig.command, rig.correct):
            assert client.wait_for_service(timeout_sec=10.0), client.srv_name
        return rig

    with ros_session(ros_domain_id), stack:
        yield start


def only_marker(array: MarkerArray) -> Marker:
    assert len(array.markers) == 1
    return array.markers[0]


# -- ask ------------------------------------------------------------------------------------------
def test_ask_returns_a_checked_answer_with_its_queries_and_tokens_and_shows_it(rig_factory, small_store,
                                                                               robot_position):
    truth = len(small_store.query(BICYCLES))
    assert truth > 0
    rig = rig_factory(query_then(BICYCLES, lambda rows: f"I counted the rows.\n<answer>{len(rows)}</answer>"))
    reply = rig.call(rig.ask, Ask.Request(question="How many bicycles are there?", answer_type="number"))

    assert reply.error == ""
    assert (reply.answer, reply.explanation) == (str(truth), "I counted the rows.")
    assert (list(reply.queries), reply.tool_calls) == ([BICYCLES], 1)
    # The token figures are exactly what the provider reported, summed over both model turns.
    assert len(rig.server.reported) == 2
    assert reply.input_tokens == sum(i for i, _ in rig.server.reported) > 0
    assert reply.output_tokens == sum(o for _, o in rig.server.reported) > 0
    assert reply.latency_s > 0
    # The model saw the live schema and the requested answer type.
    first = rig.server.requests[0]
    assert first.messages[1]["content"].startswith("Question: How many bicycles are there?")
    assert "number" in first.messages[1]["content"]

    answer = rig.answers.wait(lambda m: m.data == str(truth), 5.0, what="the answer on last_answer")
    assert answer.data == str(truth)
    marker = only_marker(rig.markers.wait(what="the answer marker"))
    assert (marker.header.frame_id, marker.ns, marker.id) == ("world", NS_ANSWER, 0)
    assert (marker.type, marker.action) == (Marker.TEXT_VIEW_FACING, Marker.ADD)
    assert marker.text.splitlines() == ["ask: How many bicycles are there?", str(truth)]
    x, y, z = robot_position
    assert (marker.pose.position.x, marker.pose.position.y) == pytest.approx((x, y))
    assert marker.pose.position.z == pytest.approx(z + ANSWER_LIFT_M)
    assert (marker.lifetime.sec, marker.lifetime.nanosec) == (0, 0) and marker.scale.z > 0


def test_ask_over_the_ollama_protocol_and_a_wrong_type_is_an_error(rig_factory, small_store):
    boxes = [row["box"] for row in small_store.query(BOXES)]
    assert boxes
    rig = rig_factory(query_then(BOXES, lambda rows: f"<answer><{', '.join(r['box'] for r in rows)}></answer>"),
                      provider="ollama")
    reply = rig.call(rig.ask, Ask.Request(question="Which boxes are there?", answer_type="set[string]"))
    assert reply.error == "", reply.error
    assert reply.answer == "<" + ", ".join(sorted(boxes)) + ">"
    assert all(r.protocol == "ollama" for r in rig.server.requests)
    assert reply.input_tokens == sum(i for i, _ in rig.server.reported)

    # The same answer for a question that needs a number: rejected, fed back once, rejected again.
    reply = rig.call(rig.ask, Ask.Request(question="How many boxes are there?", answer_type="number"))
    assert reply.answer == "" and reply.error.startswith("AnswerFormatError")
    assert "number" in reply.error
    assert reply.tool_calls == 1  # the question's own query; the retry re-used what the model knew
    last = rig.answers.wait(lambda m: m.data.startswith("error:"), 5.0, what="the error on last_answer")
    assert last.data == f"error: {reply.error}"


BICYCLE_ROOMS = (
    "MATCH (r:Room)-[:CONTAINS*1..2]->(o:Object {class: 'bicycle'}) "
    "RETURN o.nodeSymbol AS id, r.nodeSymbol AS room ORDER BY id"
)


def test_an_ambiguous_question_is_asked_back_and_the_reply_in_the_same_session_is_answered(
    rig_factory, small_store, robot_position
):
    bicycles = small_store.query(BICYCLE_ROOMS)
    assert len(bicycles) > 1
    x, y, _ = robot_position

    def model(request: RecordedRequest) -> Turn:
        question = [m["content"] for m in request.messages if str(m["content"]).startswith("Question: ")][-1]
        if question.startswith("Question: Which room is the bicycle in?"):
            if not request.tool_results():
                return call(BICYCLE_ROOMS)
            symbols = ", ".join(row["id"] for row in rows_of(request))
            return say(f'<answer>CLARIFY("There are {len(bicycles)} bicycles; which one?", <{symbols}>)</answer>')
        # The reply: the model reads its question, and the candidates' facts, from the conversation.
        assert "Question: Which room is the bicycle in?" in request.text(), question
        facts = re.findall(r"(O\d+) \(bicycle\) in (R\d+) \(\w+\), ([\d.]+) m from the robot", request.text())
        nearest = min(facts, key=lambda fact: float(fact[2]))
        return say(f"<answer>{nearest[1]}</answer>")

    rig = rig_factory(model)
    reply = rig.call(rig.ask, Ask.Request(question="Which room is the bicycle in?", answer_type="string",
                                          session="op"))
    assert (reply.error, reply.answer) == ("", "")
    assert reply.clarification == f"There are {len(bicycles)} bicycles; which one?"
    assert [c.symbol for c in reply.candidates] == [row["id"] for row in bicycles]
    positions = {row["id"]: (row["x"], row["y"]) for row in small_store.query(
        "MATCH (o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS id, o.x AS x, o.y AS y")}
    for candidate, row in zip(reply.candidates, bicycles, strict=True):
        assert (candidate.room, candidate.class_name) == (row["room"], "bicycle")
        bx, by = positions[candidate.symbol]
        assert candidate.distance_m == pytest.approx(((bx - x) ** 2 + (by - y) ** 2) ** 0.5)
    assert rig.answers.wait(lambda m: m.data.startswith("clarify: There are"), 5.0, what="the question back")

    nearest = min(reply.candidates, key=lambda c: c.distance_m)
    answer = rig.call(rig.ask, Ask.Request(question="The one nearest you.", answer_type="string", session="op"))
    assert (answer.error, answer.answer, answer.clarification) == ("", nearest.room, "")


# -- command ----------------------------------------------------------------------------------------
def holding_first_box(rows: list[dict[str, Any]]) -> str:
    return f"The first box will do.\n<answer>(holding {rows[0]['box']})</answer>"


def test_command_returns_the_goal_in_symbols_and_words_and_the_plan_summary(rig_factory, small_store):
    box = small_store.query(BOXES)[0]["box"]
    rig = rig_factory(query_then(BOXES, holding_first_box))
    reply = rig.call(rig.command, Command.Request(instruction="Pick up a box."))

    assert reply.error == "", reply.error
    assert reply.goal == f"(holding {box})"
    assert reply.goal_text == f"hold {box} (box)"
    assert (reply.clarification, list(reply.candidates)) == ("", [])
    lines = reply.plan_summary.splitlines()
    assert lines[0].startswith(f"{len(lines) - 1} steps from {ROBOT_PLACE}, cost ")
    assert lines[-1].startswith(f"{len(lines) - 1}. pick {box} ")
    assert (list(reply.queries), reply.tool_calls) == ([BOXES], 1)
    assert reply.input_tokens > 0 and reply.output_tokens > 0
    assert rig.answers.wait(lambda m: m.data == reply.goal, 5.0, what="the goal on last_answer")


def test_a_hallucinated_symbol_is_fed_back_to_the_model(rig_factory, small_store):
    box = small_store.query(BOXES)[0]["box"]

    def model(request: RecordedRequest) -> Turn:
        if "rejected by the goal checker" in request.text():
            return say(f"<answer>(holding {box})</answer>")
        return say("<answer>(holding O99999)</answer>")

    rig = rig_factory(model)
    reply = rig.call(rig.command, Command.Request(instruction="Fetch a box."))
    assert reply.goal == f"(holding {box})" and reply.error == ""  # fixed after the checker's feedback
    assert "O99999" in rig.server.requests[1].last("user")["content"]
    assert f"steps from {ROBOT_PLACE}" in reply.plan_summary.splitlines()[0]


# -- correct ------------------------------------------------------------------------------------------
def test_the_models_find_objects_asks_the_nodes_own_resolver_the_one_its_find_service_uses(rig_factory, small_store):
    def model(request: RecordedRequest) -> Turn:
        if not request.tool_results():
            return find("a carton", k=2)
        return say(f"<answer>{rows_of(request)[0]['symbol']}</answer>")

    rig = rig_factory(model)
    reply = rig.call(rig.ask, Ask.Request(question="Which carton is there?"))
    assert reply.error == "" and reply.queries == ['find_objects {"k": 2, "text": "a carton"}'], reply
    assert small_store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c", {"s": reply.answer.strip('"')}
                             )[0]["c"] == "box"
    assert rig.node._get_agent().resolver() is rig.node._get_resolver()
    find_client = rig.probe.create_client(Find, f"{NS}/find")
    assert find_client.wait_for_service(timeout_sec=10.0)
    found = rig.call(find_client, Find.Request(text="a carton"))
    assert found.error == "" and len(found.objects) == 5 and json.loads(found.objects[0])["class"] == "box"
    refused = rig.call(find_client, Find.Request(text="a carton", like_symbol="O1"))
    assert refused.error == "ConfigError: give either text or like_symbol" and not refused.objects


def test_correct_applies_a_narrow_change_visible_in_the_database(rig_factory, small_store):
    bicycle = small_store.query(BICYCLES)[0]["id"]
    rig = rig_factory(query_then(BICYCLES, lambda rows: f'<answer>[["{rows[0]["id"]}", "class", "bag"]]</answer>'))
    reply = rig.call(rig.correct, Correct.Request(instruction="That bicycle is actually a bag."))

    assert reply.error == "", reply.error
    assert list(reply.changes) == [f"{bicycle}.class: 'bicycle' -> 'bag'"]
    assert reply.tool_calls == 1 and reply.input_tokens > 0
    assert small_store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c", {"s": bicycle}) == [{"c": "bag"}]
    assert rig.answers.wait(lambda m: m.data == reply.changes[0], 5.0, what="the change on last_answer")


def test_correct_adds_an_object_and_the_corrections_service_lists_and_reverts_it(rig_factory, small_store):
    near = "MATCH (p)-[:CONTAINS]->(o:Object {class: 'bicycle'}) RETURN o.nodeSymbol AS id, o.x AS x, o.y AS y, " \
           "o.z AS z ORDER BY id LIMIT 1"

    def answer(rows: list[dict[str, Any]]) -> str:
        bike = rows[0]
        addition = {"add": "fire extinguisher", "at": [bike["x"] + 0.5, bike["y"], bike["z"]], "near": bike["id"]}
        return f"<answer>{json.dumps([addition])}</answer>"

    rig = rig_factory(query_then(near, answer))
    reply = rig.call(rig.correct, Correct.Request(instruction="There is a fire extinguisher next to the bicycle."))
    assert reply.error == "", reply.error
    [line] = reply.changes
    assert line.startswith("A1 added: 'fire extinguisher' at ")
    client = rig.probe.create_client(ManageCorrections, f"{NS}/corrections")
    assert client.wait_for_service(timeout_sec=10.0)
    [record] = [json.loads(text) for text in rig.call(client, ManageCorrections.Request(action="list")).corrections]
    assert (record["id"], record["class"], record["status"], record["author"]) == (
        "A1", "fire extinguisher", "active", "operator")
    reverted = rig.call(client, ManageCorrections.Request(action="revert", id="A1"))
    assert reverted.error == "" and list(reverted.changes) == [
        "A1 ('fire extinguisher', added by the operator) removed"]
    assert small_store.query("MATCH (o:Object {nodeSymbol: 'A1'}) RETURN o") == []


def test_a_correction_that_asks_back_names_its_candidates(rig_factory, small_store):
    bicycles = [r["id"] for r in small_store.query(BICYCLES)]
    rig = rig_factory([say(f'<answer>CLARIFY("Which bicycle?", <{", ".join(bicycles)}>)</answer>')])
    reply = rig.call(rig.correct, Correct.Request(instruction="There is a fire extinguisher by the bicycle."))
    assert reply.error == "" and list(reply.changes) == [] and list(reply.added) == []
    assert reply.clarification == "Which bicycle?"
    assert [candidate.symbol for candidate in reply.candidates] == bicycles
    assert small_store.query("MATCH (o:Object {class: 'fire extinguisher'}) RETURN o") == []


# -- failures ---------------------------------------------------------------------------------------------
def test_corrections_service_lists_reverts_and_clears(rig_factory, small_store):
    rig = rig_factory([])
    first, second = (r["s"] for r in small_store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 2"))
    Corrections(small_store).apply([(first, "class", "bag"), (second, "name", "blue box")], author="dana")
    client = rig.probe.create_client(ManageCorrections, f"{NS}/corrections")
    assert client.wait_for_service(timeout_sec=10.0)
    listed = rig.call(client, ManageCorrections.Request(action="list"))
    assert listed.error == ""
    records = [json.loads(text) for text in listed.corrections]
    assert [(r["id"], r["status"], r["author"]) for r in records] == [
        (f"{first}.class", "active", "dana"), (f"{second}.name", "active", "dana")
    ]
    reverted = rig.call(client, ManageCorrections.Request(action="revert", id=f"{first}.class"))
    assert reverted.error == "" and list(reverted.changes) == [f"{first}.class: 'bag' -> {records[0]['original']!r}"]
    active = rig.call(client, ManageCorrections.Request(action="list", active_only=True))
    assert [json.loads(text)["id"] for text in active.corrections] == [f"{second}.name"]
    cleared = rig.call(client, ManageCorrections.Request(action="clear"))
    assert cleared.error == "" and len(cleared.changes) == 1
    assert rig.call(client, ManageCorrections.Request(action="list")).corrections == []
    wrong = rig.call(client, ManageCorrections.Request(action="undo"))
    assert wrong.error == "CorrectionError: unknown corrections action 'undo'; use list, revert or clear"
    assert rig.server.requests == []  # no model involved


def test_every_request_field_out_of_its_bound_is_refused_naming_it_before_any_model_call(rig_factory):
    """docs/limits.md's bounds on ask, command, correct and corrections: each field, no model turn, and the node
    answers the next request."""
    rig = rig_factory(lambda request: say("<answer>3</answer>"))
    corrections = rig.probe.create_client(ManageCorrections, f"{NS}/corrections")
    cases = [
        (rig.ask, Ask.Request(question="q" * 4001), "question is 4,001 characters long; at most 4,000 are taken"),
        (rig.ask, Ask.Request(question="How many?", answer_type="vector"),
         "answer_type: unknown SLDP type 'vector': expected one of string, number, point, list, set, dict"),
        (rig.ask, Ask.Request(question="How many?", answer_type="list[" * 13 + "string" + "]" * 13),
         "answer_type is 84 characters long; at most 64 are taken"),
        (rig.ask, Ask.Request(question="How many?", answer_type="set[string"),
         "answer_type: bad SLDP type 'set[string'"),
        (rig.ask, Ask.Request(question="How many?", session="op1\nFORGED log line"),
         "session must be one line of printable characters"),
        (rig.command, Command.Request(instruction="i" * 4001),
         "instruction is 4,001 characters long; at most 4,000 are taken"),
        (rig.correct, Correct.Request(instruction="O1 is a bag", session="s" * 257),
         "session is 257 characters long; at most 256 are taken"),
        (corrections, ManageCorrections.Request(action="revert", id="O1." + "c" * 254),
         "id is 257 characters long; at most 256 are taken"),
        (corrections, ManageCorrections.Request(action="l" * 257), "action is 257 characters long"),
    ]
    for client, request, says in cases:
        reply = rig.call(client, request)
        assert reply.error.startswith(f"ConfigError: {says}"), (request, reply.error)
    assert rig.server.requests == []
    reply = rig.call(rig.ask, Ask.Request(question="How many?", answer_type="number", session="op1"))
    assert (reply.error, reply.answer) == ("", "3")


def test_snapshot_wait_s_bounds_how_long_the_model_s_query_waits_for_a_mirror_update(rig_factory, small_store):
    small_store.write(mirror_q.BEGIN_UPDATE)  # a mirror stopped between its first and last statement
    rig = rig_factory([call(BICYCLES), say("<answer>0</answer>")], snapshot_wait_s=0.2)
    started = time.monotonic()
    reply = rig.call(rig.ask, Ask.Request(question="How many bicycles?"))
    assert reply.error == "" and time.monotonic() - started < 3.0  # the parameter, not the 3 s default
    (result,) = rig.server.requests[-1].tool_results()
    assert "may mix two of them" in result, result


def test_a_failing_model_is_an_error_in_the_response_and_the_node_answers_the_next_request(rig_factory, small_store):
    truth = len(small_store.query(BICYCLES))
    rig = rig_factory([garbage()])
    reply = rig.call(rig.ask, Ask.Request(question="How many bicycles?"))
    assert reply.answer == "" and reply.error.startswith("LLMOutputError"), reply.error

    # Script exhausted: the server answers HTTP 500.
    reply = rig.call(rig.command, Command.Request(instruction="Fetch a box."))
    assert reply.goal == "" and reply.plan_summary == "" and reply.error.startswith("LLMUnavailable")
    assert "script exhausted" in reply.error and "HTTP 500" in reply.error
    marker = only_marker(rig.markers.wait(lambda a: "script exhausted" in a.markers[0].text, 5.0,
                                          what="the error on the marker"))
    assert marker.text.startswith("command: Fetch a box.\nerror: LLMUnavailable")

    rig.server.extend([call(BICYCLES), say(f"<answer>{truth}</answer>")])
    reply = rig.call(rig.ask, Ask.Request(question="How many bicycles?"))
    assert (reply.error, reply.answer) == ("", str(truth))


def test_without_an_api_key_the_node_still_runs_and_says_what_is_missing(
    ros_domain_id, falkordb_uri, graph_name, small_store, monkeypatch
):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    overrides = {"db_uri": falkordb_uri, "graph_name": graph_name, "llm": "openai", "base_url": ""}
    with ros_session(ros_domain_id):
        node = LanguageServerNode(parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
        probe = rclpy.create_node("probe")
        ask = probe.create_client(Ask, "/ask")
        with spinning(node, probe):
            for _ in range(2):  # the node retries building the model client, and says the same again
                reply = call_service(ask, Ask.Request(question="How many bicycles?"))
                assert reply.error.startswith("LLMUnavailable: OPENAI_API_KEY is not set"), reply.error


# -- concurrency ---------------------------------------------------------------------------------------------
def slow_or_quick(delay_s: float) -> Callable[[RecordedRequest], Turn]:
    """A model that takes ``delay_s`` over the slow question and answers everything else at once."""

    def model(request: RecordedRequest) -> Turn:
        if "slow question" in request.text():
            return slow(delay_s, say("<answer>slow</answer>"))
        return say("<answer>quick</answer>")

    return model


def start_async(client: Client, request: Any) -> threading.Event:
    """Send a request without waiting; the event is set when its answer arrives."""
    done = threading.Event()
    client.call_async(request).add_done_callback(lambda _: done.set())
    return done


def test_a_slow_model_does_not_block_other_requests(rig_factory):
    rig = rig_factory(slow_or_quick(3.0))
    slow_done = start_async(rig.ask, Ask.Request(question="The slow question?"))
    wait_until(lambda: len(rig.server.requests) >= 1, 5.0, "the slow request to reach the model")

    began = time.monotonic()
    quick = rig.call(rig.ask, Ask.Request(question="A quick question?"), timeout_s=2.5)
    assert quick.error == "" and quick.answer == "quick"
    assert time.monotonic() - began < 2.0
    assert not slow_done.is_set(), "the slow request finished before the quick one was answered"
    # The executor is free as well: a correction (here refused by the model's answer) is answered at once.
    refused = rig.call(rig.correct, Correct.Request(instruction="A quick correction."), timeout_s=2.5)
    assert refused.error.startswith("CorrectionError") and not slow_done.is_set()

    assert slow_done.wait(5.0), "the slow request never finished"
    assert rig.answers.wait(lambda m: m.data == "slow", 5.0, what="the slow answer on last_answer")


def test_beyond_the_request_workers_a_request_is_refused_at_once_as_busy(rig_factory):
    rig = rig_factory(slow_or_quick(2.0), request_workers=1)
    slow_done = start_async(rig.ask, Ask.Request(question="The slow question?"))
    wait_until(lambda: len(rig.server.requests) >= 1, 5.0, "the slow request to reach the model")
    began = time.monotonic()
    busy = rig.call(rig.ask, Ask.Request(question="A quick question?"), timeout_s=2.0)
    assert time.monotonic() - began < 1.0
    assert busy.error.startswith("busy: all 1 request workers are answering") and busy.answer == ""
    assert len(rig.server.requests) == 1  # the refused request never reached the model
    assert slow_done.wait(5.0)
    again = rig.call(rig.ask, Ask.Request(question="A quick question?"))
    assert (again.error, again.answer) == ("", "quick")
    assert [m.data for m in rig.answers.messages] == ["slow", "quick"]  # the refusal is not an answer


# -- parameters -------------------------------------------------------------------------------------------------
def test_bad_parameters_are_refused_naming_the_parameter(ros_domain_id, falkordb_uri, graph_name):
    base = {"db_uri": falkordb_uri, "graph_name": graph_name, "base_url": "http://127.0.0.1:9/v1"}
    cases = [
        ({"llm": "claude"}, "parameter llm must be one of openai, ollama"),
        ({"method": "magic"}, "parameter method must be one of agentic, single, context"),
        ({"temperature": 3.0}, "parameter temperature must be <= 2.0"),
        ({"request_workers": 0}, "parameter request_workers must be >= 1"),
        ({"map_frame": " "}, "parameter map_frame must not be empty"),
        ({"max_tool_calls": "five"}, "max_tool_calls"),
        ({"embeddings": "bert"}, "parameter embeddings must be one of wordllama, openai, ollama"),
        ({"embeddings": "ollama"}, "parameter embedding_model must name the provider's model when embeddings is"),
    ]
    with ros_session(ros_domain_id):
        for params, message in cases:
            overrides = [Parameter(k, value=v) for k, v in {**base, **params}.items()]
            with pytest.raises(ConfigError, match=message):
                LanguageServerNode(parameter_overrides=overrides).destroy_node()


def test_the_shipped_config_sets_every_declared_parameter_and_rcl_accepts_it(ros_domain_id):
    params = shipped_parameters(CONFIG)
    declared = {spec.name for spec in PARAMETERS}
    assert set(params) == declared, set(params) ^ declared
    assert "api_key" not in CONFIG.read_text().lower().replace("openai_api_key", "")  # keys only from the environment
    assert values_rcl_gives(CONFIG, "language_server", NS, PARAMETERS, ros_domain_id) == params


# -- the entry point ------------------------------------------------------------------------------------------
def run_language_server(domain: int, *values: str) -> subprocess.Popen[str]:
    """The node's console entry point (``main``) in a process of its own, on ``domain``, under NS."""
    return start_node("language_server", domain, "-r", f"__ns:={NS}", *params(*values))


def test_the_entry_point_serves_over_dds_and_exits_cleanly_on_ctrl_c(
    ros_domain_id, falkordb_uri, graph_name, small_store
):
    truth = len(small_store.query(BICYCLES))
    with ScriptedLLMServer(query_then(BICYCLES, lambda rows: f"<answer>{len(rows)}</answer>")) as server:
        process = run_language_server(
            ros_domain_id, f"db_uri:={falkordb_uri}", f"graph_name:={graph_name}", f"base_url:={server.openai_base_url}"
        )
        try:
            with ros_session(ros_domain_id):
                probe = rclpy.create_node("probe")
                ask = probe.create_client(Ask, f"{NS}/ask")
                with spinning(probe):
                    reply = call_service(ask, Ask.Request(question="How many bicycles?"), timeout_s=30.0)
            process.send_signal(signal.SIGINT)
            output, _ = process.communicate(timeout=15.0)
        finally:
            stop_node(process)
    assert (reply.error, reply.answer) == ("", str(truth))
    assert process.returncode == 0, output
    assert "language_server stopping" in output


def test_the_entry_point_exits_non_zero_naming_a_bad_parameter(ros_domain_id, falkordb_uri):
    process = run_language_server(ros_domain_id, f"db_uri:={falkordb_uri}", "method:=magic")
    output, _ = process.communicate(timeout=30.0)
    assert process.returncode == 1
    expected = "language_server cannot start: parameter method must be one of agentic, single, context, got 'magic'"
    assert expected in output


# -- the database's lifecycle ----------------------------------------------------------------------------------
def test_a_node_started_while_the_database_is_stopped_runs_the_model_s_queries_on_the_replica_once_it_is_back(
    ros_domain_id, tmp_path, small_scene
):
    """Started while ``heracles db stop`` holds, the node keeps its read-replica store (no fall-back to the
    server the mirror writes to): once ``heracles db start`` ran, the model's queries reach the replica."""
    from heracles_ros.embedded.process import redis_client
    from heracles_ros.embedded.replica import ReadReplica, ensure_read_replica
    from heracles_ros.embedded.server import EmbeddedServer
    from heracles_ros.graphdb import open_store
    from heracles_ros.mirror.reconcile import Mirror

    uri = f"embedded:{tmp_path}"
    server = EmbeddedServer(tmp_path)
    with open_store(uri, graph="g") as store:
        Mirror(store).reconcile(small_scene)
        truth = len(store.query(BICYCLES))
    ensure_read_replica(server)
    server.stop()  # `heracles db stop`: database and replica
    llm = ScriptedLLMServer(query_then(BICYCLES, lambda rows: f"<answer>{len(rows)}</answer>")).start()
    overrides = {"db_uri": uri, "graph_name": "g", "llm": "openai", "model": llm.model,
                 "base_url": llm.openai_base_url, "instance_check_s": 0.0}
    try:
        with ros_session(ros_domain_id):
            node = LanguageServerNode(parameter_overrides=[Parameter(k, value=v) for k, v in overrides.items()])
            probe = rclpy.create_node("probe")
            ask = probe.create_client(Ask, "/ask")
            with spinning(node, probe, num_threads=4):
                assert ask.wait_for_service(timeout_sec=10.0)
                stopped = call_service(ask, Ask.Request(question="How many bicycles?"), 30.0)
                server.ensure_started()  # `heracles db start`, which brings the replica back
                replica = ensure_read_replica(server)
                redis_client(replica).config_set("slowlog-log-slower-than", 0)  # the replica logs every command
                reply = call_service(ask, Ask.Request(question="How many bicycles?"), 30.0)
        assert stopped.error.startswith("DatabaseUnavailable: the database is not running: start it with heracles "
                                        "db start"), stopped.error
        assert reply.error == "" and reply.answer == str(truth)
        logged = [bytes(entry["command"]).decode(errors="replace") for entry in redis_client(replica).slowlog_get(128)]
        assert any(BICYCLES in command for command in logged), logged  # the model's query ran on the replica
        assert ReadReplica(server).running() == replica
    finally:
        llm.stop()
        server.stop()
