"""The language_server node over real DDS: scripted model, real FalkorDB, real agent, checker and planner.

Only the hosted model is replaced (test/support/scripted_llm.py, over real
HTTP with the real openai / ollama clients). The node runs under a robot
namespace, so every name it uses must be relative; a probe node calls its
services and listens to what it publishes.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rclpy
import yaml
from heracles_ros.msg import Plan
from heracles_ros.srv import Ask, Command, Correct
from rclpy.client import Client
from rclpy.context import Context
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String
from support.ros import Collector, call_service, qos, ros_session, spinning, wait_until
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, garbage, say, slow
from visualization_msgs.msg import Marker, MarkerArray

from heracles_ros.errors import ConfigError
from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.nodes.language_server import ANSWER_LIFT_M, NS_ANSWER, PARAMETERS, LanguageServerNode
from heracles_ros.nodes.parameters import declare

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
    plans: Collector[Plan] | None

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
    """``start(script, provider=..., listen_plans=..., **params)``: the node on a scripted model, and a probe."""
    stack: list[Any] = []

    def start(script: Any, *, provider: str = "openai", listen_plans: bool = True, **params: Any) -> Rig:
        server = ScriptedLLMServer(script).start()
        stack.append(server)
        url = server.openai_base_url if provider == "openai" else server.ollama_host
        overrides = {"db_uri": falkordb_uri, "graph_name": graph_name, "llm": provider, "model": server.model,
                     "base_url": url, "map_frame": "world", **params}
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
            Collector(probe, Plan, f"{NS}/plan", 10) if listen_plans else None,
        )
        context = spinning(node, probe, num_threads=6)
        context.__enter__()
        stack.append(context)
        for client in (rig.ask, rig.command, rig.correct):
            assert client.wait_for_service(timeout_sec=10.0), client.srv_name
        if listen_plans:
            wait_until(lambda: node.count_subscribers(f"{NS}/plan") >= 1, 10.0, "the probe on plan")
        return rig

    with ros_session(ros_domain_id):
        yield start
        for item in reversed(stack):
            if isinstance(item, ScriptedLLMServer):
                item.stop()
            else:
                item.__exit__(None, None, None)


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


# -- command ----------------------------------------------------------------------------------------
def holding_first_box(rows: list[dict[str, Any]]) -> str:
    return f"The first box will do.\n<answer>(holding {rows[0]['box']})</answer>"


def test_command_without_execute_returns_the_goal_and_plan_summary_and_sends_nothing(rig_factory, small_store):
    box = small_store.query(BOXES)[0]["box"]
    rig = rig_factory(query_then(BOXES, holding_first_box))
    reply = rig.call(rig.command, Command.Request(instruction="Pick up a box.", execute=False))

    assert reply.error == "", reply.error
    assert reply.goal == f"(holding {box})"
    assert reply.plan_id == ""
    lines = reply.plan_summary.splitlines()
    assert lines[0].startswith(f"{len(lines) - 1} steps from {ROBOT_PLACE}, cost ")
    assert lines[-1].startswith(f"{len(lines) - 1}. pick {box} ")
    assert (list(reply.queries), reply.tool_calls) == ([BOXES], 1)
    assert reply.input_tokens > 0 and reply.output_tokens > 0
    assert rig.answers.wait(lambda m: m.data == reply.goal, 5.0, what="the goal on last_answer")
    time.sleep(0.3)
    assert rig.plans is not None and rig.plans.count == 0


def test_command_with_execute_publishes_the_plan_for_the_dispatcher(rig_factory, small_store):
    box = small_store.query(BOXES)[0]["box"]
    rig = rig_factory(query_then(BOXES, holding_first_box))
    reply = rig.call(rig.command, Command.Request(instruction="Fetch a box.", execute=True))

    assert reply.error == "", reply.error
    assert reply.plan_id
    assert rig.plans is not None
    plan = rig.plans.wait(lambda p: p.plan_id == reply.plan_id, 5.0, what="the plan on plan")
    assert (plan.goal, plan.start_symbol, plan.header.frame_id) == (f"(holding {box})", ROBOT_PLACE, "world")
    steps = [f"{i}. {s.action} {' '.join(s.args)}" for i, s in enumerate(plan.steps, start=1)]
    assert reply.plan_summary.splitlines()[1:] == steps
    assert plan.steps[-1].action == "pick" and plan.steps[-1].target_symbol == box
    walk = plan.steps[0]
    assert walk.action == "goto" and walk.waypoint_symbols[0] == ROBOT_PLACE and len(walk.waypoints) >= 2


def test_a_hallucinated_symbol_is_fed_back_and_an_unplannable_execute_sends_nothing(rig_factory, small_store):
    box = small_store.query(BOXES)[0]["box"]

    def model(request: RecordedRequest) -> Turn:
        if "rejected by the goal checker" in request.text():
            return say(f"<answer>(holding {box})</answer>")
        return say("<answer>(holding O99999)</answer>")

    rig = rig_factory(model, listen_plans=False)
    reply = rig.call(rig.command, Command.Request(instruction="Fetch a box.", execute=True))
    assert reply.goal == f"(holding {box})"  # fixed after the checker's feedback
    assert "O99999" in rig.server.requests[1].last("user")["content"]
    # The goal and plan are fine, but nobody would run it: refused with a clear error, no plan id.
    assert reply.plan_id == "" and f"steps from {ROBOT_PLACE}" in reply.plan_summary.splitlines()[0]
    assert reply.error.startswith("ExecutionError: no dispatcher subscribes to /spot1/plan")


def test_the_cli_executes_a_command_through_the_running_node(rig_factory, small_store):
    """``heracles command --execute`` in its own process reaches this node's command service over DDS."""
    box = small_store.query(BOXES)[0]["box"]
    rig = rig_factory(query_then(BOXES, holding_first_box))
    proc = subprocess.run(
        [sys.executable, "-c", "from heracles_ros.cli import main; raise SystemExit(main())", "command",
         "Fetch a box.", "--execute", "--service", f"{NS}/command", "--service-timeout", "60", "--json"],
        cwd=REPO, env=dict(os.environ), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["error"] == "" and out["goal"] == f"(holding {box})" and out["queries"] == [BOXES]
    assert rig.plans is not None
    rig.plans.wait(lambda p: p.plan_id == out["plan_id"], 5.0, what="the CLI's plan on plan")


# -- correct ------------------------------------------------------------------------------------------
def test_correct_applies_a_narrow_change_visible_in_the_database(rig_factory, small_store):
    bicycle = small_store.query(BICYCLES)[0]["id"]
    rig = rig_factory(query_then(BICYCLES, lambda rows: f'<answer>[["{rows[0]["id"]}", "class", "bag"]]</answer>'))
    reply = rig.call(rig.correct, Correct.Request(instruction="That bicycle is actually a bag."))

    assert reply.error == "", reply.error
    assert list(reply.changes) == [f"{bicycle}.class: 'bicycle' -> 'bag'"]
    assert reply.tool_calls == 1 and reply.input_tokens > 0
    assert small_store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c", {"s": bicycle}) == [{"c": "bag"}]
    assert rig.answers.wait(lambda m: m.data == reply.changes[0], 5.0, what="the change on last_answer")


# -- failures ---------------------------------------------------------------------------------------------
def test_a_failing_model_is_an_error_in_the_response_and_the_node_answers_the_next_request(rig_factory, small_store):
    truth = len(small_store.query(BICYCLES))
    rig = rig_factory([garbage()])
    reply = rig.call(rig.ask, Ask.Request(question="How many bicycles?"))
    assert reply.answer == "" and reply.error.startswith("LLMOutputError"), reply.error

    # Script exhausted: the server answers HTTP 500.
    reply = rig.call(rig.command, Command.Request(instruction="Fetch a box.", execute=True))
    assert reply.goal == "" and reply.plan_id == "" and reply.error.startswith("LLMUnavailable")
    assert "script exhausted" in reply.error and "HTTP 500" in reply.error
    assert rig.plans is not None and rig.plans.count == 0
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
    ]
    with ros_session(ros_domain_id):
        for params, message in cases:
            overrides = [Parameter(k, value=v) for k, v in {**base, **params}.items()]
            with pytest.raises(ConfigError, match=message):
                LanguageServerNode(parameter_overrides=overrides).destroy_node()


def test_the_shipped_config_sets_every_declared_parameter_and_rcl_accepts_it(ros_domain_id):
    text = CONFIG.read_text()
    (params,) = [entry["ros__parameters"] for entry in yaml.safe_load(text).values()]
    declared = {spec.name: spec for spec in PARAMETERS}
    assert set(params) == set(declared), set(params) ^ set(declared)
    assert "api_key" not in text.lower().replace("openai_api_key", "")  # keys only from the environment
    context = Context()
    rclpy.init(args=["--ros-args", "--params-file", str(CONFIG)], context=context, domain_id=ros_domain_id)
    try:
        node = rclpy.create_node("language_server", namespace=NS, context=context)
        values = declare(node, PARAMETERS)
        node.destroy_node()
    finally:
        rclpy.shutdown(context=context)
    assert {name: values[name] for name in params} == params


# -- the entry point ------------------------------------------------------------------------------------------
def run_language_server(domain: int, *params: str) -> subprocess.Popen[str]:
    """The node's console entry point (``main``) in a process of its own, on ``domain``."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONPATH": str(REPO)}
    args = [arg for param in params for arg in ("-p", param)]
    return subprocess.Popen(
        [sys.executable, "-m", "heracles_ros.nodes.language_server", "--ros-args", "-r", f"__ns:={NS}", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )


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
            if process.poll() is None:
                process.kill()
                process.communicate()
    assert (reply.error, reply.answer) == ("", str(truth))
    assert process.returncode == 0, output
    assert "language_server stopping" in output


def test_the_entry_point_exits_non_zero_naming_a_bad_parameter(ros_domain_id, falkordb_uri):
    process = run_language_server(ros_domain_id, f"db_uri:={falkordb_uri}", "method:=magic")
    output, _ = process.communicate(timeout=30.0)
    assert process.returncode == 1
    expected = "language_server cannot start: parameter method must be one of agentic, single, context, got 'magic'"
    assert expected in output
