"""The console against the running nodes: real DDS, FalkorDB, Fast Downward, uvicorn; only the model is scripted.

The language server and the dispatcher (simulated Spot) run in this process under
a namespace of their own; the console talks to them as the operator's page
would, over its WebSocket.
"""
from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
from rclpy.parameter import Parameter
from support.console_server import Served, console_server, receive_until
from support.ros import ros_session, spinning, wait_until
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, say

from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.language_server import LanguageServerNode

pytestmark = pytest.mark.backends("falkordb")

START = "P0"
FARTHEST_BOX = (
    "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'box'}) WHERE p.x < 12 "
    "RETURN o.nodeSymbol AS box, p.x * p.x + p.y * p.y AS d2 ORDER BY d2 DESC, box LIMIT 1"
)
INSTRUCTION = "Bring me the farthest box."


def model(request: RecordedRequest) -> Turn:
    """Fetches the farthest box, then asks to hold it."""
    results = request.tool_results()
    if not results:
        return call(FARTHEST_BOX)
    return say(f"<answer>(holding {json.loads(results[-1])[0]['box']})</answer>")


@pytest.fixture
def system(ros_domain_id, falkordb_uri, graph_name, small_store, tmp_path) -> Iterator[dict[str, Any]]:
    """Language server, dispatcher and the console in a namespace of their own, over the small real graph."""
    ns = f"/cons_{uuid.uuid4().hex[:6]}"
    states = RobotStateStore(small_store)
    states.write(RobotState(states.position_of(START), place=START))
    (tmp_path / "index.html").write_text("<!doctype html>")
    with ExitStack() as stack:
        server = ScriptedLLMServer(model).start()
        stack.callback(server.stop)
        stack.enter_context(ros_session(ros_domain_id))
        db = {"db_uri": falkordb_uri, "graph_name": graph_name}
        language = LanguageServerNode(namespace=ns, parameter_overrides=[
            Parameter(k, value=v) for k, v in {**db, "llm": "openai", "model": server.model,
                                               "base_url": server.openai_base_url, "instance_check_s": 0.0,
                                               "require_confirmation": False}.items()])
        robot = DispatcherNode(namespace=ns, parameter_overrides=[
            Parameter(k, value=v) for k, v in {**db, "start_place": START, "sim_time_scale": 4.0,
                                               "sim_speed_mps": 1.0}.items()])
        stack.enter_context(spinning(language, robot, num_threads=8))
        wait_until(lambda: language.commands.plans.server_is_ready(), 20.0, "the dispatcher's execute_plan")
        served = stack.enter_context(console_server(ns, falkordb_uri, graph_name, static_dir=tmp_path,
                                                    find_timeout_s=20.0))
        yield {"language": language, "robot": robot, "store": small_store, "console": served}


@contextlib.contextmanager
def opened(served: Served) -> Iterator[Any]:
    """A page's socket, past its hello."""
    with served.socket() as ws:
        assert json.loads(ws.recv(timeout=10))["type"] == "hello"
        yield ws


def test_a_command_shows_its_stages_waits_for_approval_then_moves_the_robot(system):
    box = system["store"].query(FARTHEST_BOX)[0]["box"]
    robot = system["robot"]
    with opened(system["console"]) as ws:
        ws.send(json.dumps({"op": "command", "text": INSTRUCTION}))
        stages: list[dict[str, Any]] = []
        confirm = receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "confirm", 90.0, stages)
        names = [m["stage"] for m in stages if m["type"] == "stage"]
        assert "grounding" in names and "plan" in names, names
        assert FARTHEST_BOX in [q for m in stages if m["type"] == "stage" for q in m["queries"]]
        plan = confirm["plan"]
        assert plan is not None and plan["steps"][-1]["action"] == "pick" and box in plan["steps"][-1]["args"]
        goto = plan["steps"][0]
        assert goto["action"] == "goto" and len(goto["waypoints"]) >= 2 and goto["target"] is not None
        here = robot.driver.pose()
        wait_until(lambda: (r := system["language"].commands._running) is not None and r.waiting, 30.0,
                   "the command to wait for confirmation")
        assert robot.driver.pose() == here  # nothing moves before the approval

        ws.send(json.dumps({"op": "approve", "command_id": confirm["command_id"]}))
        seen: list[dict[str, Any]] = []
        result = receive_until(ws, lambda m: m["type"] == "result", 120.0, seen)
        assert (result["outcome"], result["command_id"]) == ("succeeded", confirm["command_id"]), result
        steps = [m["step"] for m in seen if m["type"] == "stage" and m["stage"] == "step"]
        assert len(steps) == 2 * len(plan["steps"]) and all(s["robot"] is not None for s in steps)
        end = robot.driver.pose()
        assert steps[-1]["robot"] == pytest.approx([end.x, end.y], abs=1e-6)
        robots = [m for m in seen if m["type"] == "robot"]
        assert robots and robots[-1]["place"] == goto["args"][-1], robots
        assert [robots[-1]["x"], robots[-1]["y"]] == pytest.approx([end.x, end.y], abs=1e-6)


def test_stop_reaches_every_console_refuses_commands_until_resume(system):
    with opened(system["console"]) as first, opened(system["console"]) as second:
        first.send(json.dumps({"op": "stop"}))
        for ws in (first, second):
            stop = receive_until(ws, lambda m: m["type"] == "stop" and m["stopped"], 20.0)
            assert stop["reason"], stop
        language = system["language"]
        wait_until(lambda: language.commands.stopped() is not None, 10.0, "the stop to reach the language server")
        second.send(json.dumps({"op": "command", "text": INSTRUCTION}))
        result = receive_until(second, lambda m: m["type"] == "result", 30.0)
        assert result["outcome"] == "stopped" and "the robot is stopped" in result["reason"], result

        second.send(json.dumps({"op": "resume", "operator": "ana", "reason": "path clear"}))
        for ws in (first, second):
            resumed = receive_until(ws, lambda m: m["type"] == "stop" and not m["stopped"], 20.0)
            assert resumed["operator"] == "ana", resumed
        second.send(json.dumps({"op": "resume", "operator": "ana"}))
        assert receive_until(second, lambda m: m["type"] == "error", 10.0)["about"] == "resume"
