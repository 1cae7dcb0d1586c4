"""The console against the running nodes: real DDS, FalkorDB, Fast Downward, uvicorn; only the model is scripted.

The language server and the dispatcher (simulated Spot) run in this process under
a namespace of their own; the console talks to them as the operator's page
would, over its WebSocket.
"""
from __future__ import annotations

import contextlib
import fnmatch
import json
import math
import re
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import psutil
import pytest
import rclpy
from heracles_ros.msg import MirrorStatus
from hydra_msgs.msg import DsgUpdate
from rclpy.parameter import Parameter
from support.console_server import Served, console_process, console_server, receive_until
from support.history_scene import MOVED_TO, NUDGED_TO, changed_scene
from support.ros import ros_session, spinning, wait_for_subscribers, wait_until
from support.running_nodes import running_nodes
from support.scripted_llm import RecordedRequest, Turn, call, say
from support.tiny_scene import tiny_scene

from heracles_ros.console.protocol import CLIENT_LOST_S
from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.dsg_mirror import DsgMirrorNode

pytestmark = pytest.mark.backends("falkordb")

START = "P0"
FARTHEST_BOX = (
    "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'box'}) WHERE p.x < 12 "
    "RETURN o.nodeSymbol AS box, p.x * p.x + p.y * p.y AS d2 ORDER BY d2 DESC, box LIMIT 1"
)
INSTRUCTION = "Bring me the farthest box."


TWO_BOXES = "MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS box ORDER BY box LIMIT 2"
AMBIGUOUS = "Bring me a box."


QUESTION = "How many boxes are there?"
BOXES = "MATCH (o:Object {class: 'box'}) RETURN count(o) AS n"
#: A question's model turn waits for this (at most 30 s): a slow model, to show nothing waits behind it.
ANSWER_NOW = threading.Event()


def model(request: RecordedRequest) -> Turn:
    """The farthest box for INSTRUCTION; for AMBIGUOUS, a question back naming two boxes; "(I mean O3)": O3;
    QUESTION: the count of boxes, once ANSWER_NOW is set."""
    instruction = str(request.last("user").get("content"))
    if QUESTION in instruction:
        if not request.tool_results():
            return call(BOXES)
        ANSWER_NOW.wait(30.0)
        return say(f"<answer>{json.loads(request.tool_results()[-1])[0]['n']}</answer>")
    last_user = max(i for i, m in enumerate(request.messages) if m.get("role") == "user")
    results = [str(m.get("content")) for m in request.messages[last_user:] if m.get("role") == "tool"]
    if (meant := re.search(r"\(I mean (\w+)\)", instruction)) is not None:
        return say(f"<answer>(holding {meant[1]})</answer>")
    if AMBIGUOUS in instruction:
        if not results:
            return call(TWO_BOXES)
        boxes = ", ".join(row["box"] for row in json.loads(results[-1]))
        return say(f'<answer>CLARIFY("Which box?", <{boxes}>)</answer>')
    if not results:
        return call(FARTHEST_BOX)
    return say(f"<answer>(holding {json.loads(results[-1])[0]['box']})</answer>")


@contextlib.contextmanager
def nodes_of_a_console(ros_domain_id: int, falkordb_uri: str, graph_name: str, store: Any, *,
                       sim_time_scale: float = 4.0) -> Iterator[dict[str, Any]]:
    """The running nodes (this file's scripted model; the simulated Spot 1 m/s at ``sim_time_scale`` times real
    time) in a namespace of their own, by the names the tests look them up."""
    ns = f"/cons_{uuid.uuid4().hex[:6]}"
    db = {"db_uri": falkordb_uri, "graph_name": graph_name}
    with running_nodes(ros_domain_id, db, store, model, namespace=ns, start_place=START,
                       sim_time_scale=sim_time_scale) as nodes:
        yield {"namespace": ns, "language": nodes.language, "robot": nodes.robot, "store": store,
               "model": nodes.model}


@pytest.fixture
def system(ros_domain_id, falkordb_uri, graph_name, small_store, tmp_path) -> Iterator[dict[str, Any]]:
    """Language server, dispatcher and the console in a namespace of their own, over the small real graph."""
    (tmp_path / "index.html").write_text("<!doctype html>")
    with nodes_of_a_console(ros_domain_id, falkordb_uri, graph_name, small_store) as nodes, \
            console_server(nodes["namespace"], falkordb_uri, graph_name, static_dir=tmp_path,
                           find_timeout_s=20.0) as served:
        yield {**nodes, "console": served}


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
        taken = receive_until(ws, lambda m: m["type"] == "command", 10.0)
        stages: list[dict[str, Any]] = []
        confirm = receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "confirm", 90.0, stages)
        names = [m["stage"] for m in stages if m["type"] == "stage"]
        assert "grounding" in names and "plan" in names, names
        assert FARTHEST_BOX in [q for m in stages if m["type"] == "stage" for q in m["queries"]]
        assert {m["command_id"] for m in stages if m["type"] == "stage"} == {taken["command_id"]}
        assert confirm["command_id"] == taken["command_id"] and taken["text"] == INSTRUCTION
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
        assert all(s["robot"] is not None for s in steps)
        # A start and an end per step; while the robot walks, what is left of the walk, in the CLI's words.
        assert len([s for s in steps if s["state"] != "walking"]) == 2 * len(plan["steps"])
        walking = [s for s in steps if s["state"] == "walking"]
        assert walking and all((s["remaining"].endswith(" s") and " m left, about " in s["remaining"])
                               or s["remaining"] == "no walking left" for s in walking), walking
        assert steps[0]["distance_remaining_m"] > 0 and steps[-1]["distance_remaining_m"] == 0.0
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


def test_a_clarification_offers_candidates_and_choosing_one_continues_the_conversation(system):
    store = system["store"]
    boxes = [row["box"] for row in store.query(TWO_BOXES)]
    where = {row["s"]: (row["x"], row["y"]) for row in store.query(
        "MATCH (o:Object) WHERE o.nodeSymbol IN $boxes RETURN o.nodeSymbol AS s, o.x AS x, o.y AS y",
        {"boxes": boxes})}
    with opened(system["console"]) as ws:
        ws.send(json.dumps({"op": "command", "text": AMBIGUOUS}))
        result = receive_until(ws, lambda m: m["type"] == "result", 90.0)
        assert (result["outcome"], result["clarification"]) == ("clarify", "Which box?"), result
        assert [c["symbol"] for c in result["candidates"]] == boxes
        for candidate in result["candidates"]:
            assert (candidate["x"], candidate["y"]) == pytest.approx(where[candidate["symbol"]], abs=1e-3)
            assert candidate["cls"] == "box" and candidate["description"]

        ws.send(json.dumps({"op": "choose", "command_id": result["command_id"], "symbol": boxes[1]}))
        follow_up = receive_until(ws, lambda m: m["type"] == "command", 10.0)
        assert follow_up["text"] == f"{AMBIGUOUS} (I mean {boxes[1]})"
        confirm = receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "confirm", 90.0)
        assert confirm["command_id"] == follow_up["command_id"] and confirm["goal"] == f"(holding {boxes[1]})"
        ws.send(json.dumps({"op": "refuse", "command_id": follow_up["command_id"]}))
        refused = receive_until(ws, lambda m: m["type"] == "result", 30.0)
        assert (refused["outcome"], refused["command_id"]) == ("refused", follow_up["command_id"])
        ws.send(json.dumps({"op": "choose", "command_id": "console-nobody-9", "symbol": boxes[0]}))
        assert receive_until(ws, lambda m: m["type"] == "error", 10.0)["about"] == "choose"


def test_the_map_follows_the_mirror_status_and_the_health_panel_reports_it(system):
    store = system["store"]
    symbol = store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 1")[0]["s"]
    ns = system["console"].config.namespace
    probe = rclpy.create_node("mirror_probe")
    publisher = probe.create_publisher(MirrorStatus, f"{ns}/mirror_status", 10)
    try:
        with opened(system["console"]) as ws:
            receive_until(ws, lambda m: m["type"] == "scene" and m["upsert"], 30.0)  # the map, from the first read
            store.write("MATCH (o:Object {nodeSymbol: $s}) SET o.x = o.x + 3.0", {"s": symbol})
            x = store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.x AS x", {"s": symbol})[0]["x"]
            wait_for_subscribers(publisher)
            publisher.publish(MirrorStatus(sequence=7, nodes=123, snapshots_applied=2, last_latency_s=0.25))
            diff = receive_until(ws, lambda m: m["type"] == "scene" and m["upsert"], 10.0)
            assert [(i["symbol"], i["x"]) for i in diff["upsert"]] == [(symbol, pytest.approx(x, abs=1e-3))]
            assert diff["remove"] == [] and diff["edges"] == {"add": [], "remove": []}
            status = receive_until(ws, lambda m: m["type"] == "status" and m["mirror"] is not None, 10.0)
            mirror = status["mirror"]
            assert (mirror["sequence"], mirror["nodes"], mirror["lag_s"]) == (7, 123, 0.25)
            assert status["database"] == {"ok": True, "error": ""}
    finally:
        probe.destroy_node()


def test_stop_does_not_wait_behind_a_slow_question_which_still_gets_its_answer(system):
    boxes = system["store"].query(BOXES)[0]["n"]
    ANSWER_NOW.clear()
    try:
        with opened(system["console"]) as ws:
            ws.send(json.dumps({"op": "ask", "text": QUESTION, "request_id": "q1"}))
            wait_until(lambda: any(QUESTION in r.text() and r.tool_results() for r in system["model"].requests), 30.0,
                       "the question's last model turn to start (it waits for ANSWER_NOW)")
            ws.send(json.dumps({"op": "stop"}))
            seen: list[dict[str, Any]] = []
            receive_until(ws, lambda m: m["type"] == "stop" and m["stopped"], 10.0, seen)
            assert not [m for m in seen if m["type"] == "answer"] and not ANSWER_NOW.is_set()
            ANSWER_NOW.set()
            answer = receive_until(ws, lambda m: m["type"] == "answer", 60.0)
            assert (answer["request_id"], answer["text"], answer["error"]) == ("q1", str(boxes), "")
    finally:
        ANSWER_NOW.set()


def test_the_corrections_panel_lists_and_reverts_through_the_language_server(system):
    store = system["store"]
    symbol, original = next((r["s"], r["c"]) for r in store.query(
        "MATCH (o:Object) RETURN o.nodeSymbol AS s, o.class AS c ORDER BY s LIMIT 1"))
    Corrections(store).apply([(symbol, "class", "<img src=x onerror=alert(1)>")], author="dana")
    with opened(system["console"]) as ws:
        ws.send(json.dumps({"op": "corrections"}))
        listed = receive_until(ws, lambda m: m["type"] == "corrections", 30.0)
        assert [(c["id"], c["status"], c["value"]) for c in listed["items"]] == [
            (f"{symbol}.class", "active", "<img src=x onerror=alert(1)>")]
        ws.send(json.dumps({"op": "revert", "correction_id": f"{symbol}.class"}))
        after = receive_until(ws, lambda m: m["type"] == "corrections", 30.0)
        assert [c["status"] for c in after["items"]] != ["active"] and after["error"] == ""
        assert store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.class AS c", {"s": symbol})[0]["c"] == original
        ws.send(json.dumps({"op": "revert", "correction_id": "O99999.class"}))
        error = receive_until(ws, lambda m: m["type"] == "error", 30.0)
        assert error["about"] == "revert" and "O99999" in error["message"]


def test_the_running_mirror_drives_the_map_and_the_history_panel(ros_domain_id, falkordb_uri, graph_name, store,
                                                                 tmp_path):
    """No language server or dispatcher: a real dsg_mirror takes two snapshots; the page sees the second as a diff
    (O0 moved, O3 gone, O5 new, the nudged O1 moved a little) and its history through the changes service."""
    ns = f"/consm_{uuid.uuid4().hex[:6]}"
    topic = f"{ns}/dsg_update"
    (tmp_path / "index.html").write_text("<!doctype html>")
    params = {"db_uri": falkordb_uri, "graph_name": graph_name, "dsg_topic": topic, "status_period_s": 0.0}
    now = int(time.time())
    with ros_session(ros_domain_id):
        node = DsgMirrorNode(namespace=ns, parameter_overrides=[Parameter(k, value=v) for k, v in params.items()])
        probe = rclpy.create_node("snapshot_probe")
        publisher = probe.create_publisher(DsgUpdate, topic, 1)
        try:
            with spinning(node, probe), console_server(ns, falkordb_uri, graph_name, static_dir=tmp_path,
                                                       find_timeout_s=20.0) as served, opened(served) as ws:
                wait_for_subscribers(publisher)
                # The status is published once per snapshot here (status_period_s 0): the console must be listening.
                wait_until(lambda: node.count_subscribers(f"{ns}/mirror_status") >= 1, 20.0,
                           "the console's subscription")
                for sequence, graph in ((1, tiny_scene()), (2, changed_scene())):
                    message = DsgUpdate(layer_contents=graph.to_binary(include_mesh=False), full_update=True,
                                        sequence_number=sequence)
                    message.header.stamp.sec = now - 120 + 60 * sequence
                    publisher.publish(message)
                    seen: list[dict[str, Any]] = []
                    diff = receive_until(ws, lambda m: m["type"] == "scene" and (m["upsert"] or m["remove"]), 30.0,
                                         seen)
                    if sequence == 1:  # rooms and objects, then the places (as symbols and numbers) in pieces
                        pieces = [diff]
                        while pieces[-1].get("more"):
                            pieces.append(receive_until(ws, lambda m: m["type"] == "scene", 30.0))
                        assert {i["symbol"] for i in diff["upsert"]} >= {"O0", "O1", "O2", "O3", "R0"}
                        assert "P0" in {s for piece in pieces for s in piece["places"]["symbols"]}
                        continue
                    moved = {i["symbol"]: (i["x"], i["y"]) for i in diff["upsert"]}
                    assert moved == {"O0": MOVED_TO[:2], "O1": NUDGED_TO[:2], "O5": (2.0, 1.0)}, diff
                    assert diff["remove"] == ["O3"] and diff["edges"] == {"add": [], "remove": []}
                ws.send(json.dumps({"op": "changes", "since_s": 600}))
                changes = receive_until(ws, lambda m: m["type"] == "changes", 30.0)
                assert [(e["kind"], e["symbol"]) for e in changes["events"]] == [
                    ("moved", "O0"), ("disappeared", "O3"), ("appeared", "O5")] and changes["error"] == ""
                status = receive_until(ws, lambda m: m["type"] == "status" and m["mirror"] is not None, 10.0)
                assert status["mirror"]["sequence"] == 2 and status["mirror"]["last_error"] == ""
        finally:
            probe.destroy_node()
            node.destroy_node()


def test_cancel_stops_a_walking_robot_and_a_closing_console_cancels_what_it_started(system, tmp_path):
    robot, language = system["robot"], system["language"]
    with opened(system["console"]) as ws:
        ws.send(json.dumps({"op": "cancel", "command_id": "console-nobody-1"}))
        assert receive_until(ws, lambda m: m["type"] == "error", 10.0)["about"] == "cancel"
        ws.send(json.dumps({"op": "command", "text": INSTRUCTION}))
        confirm = receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "confirm", 90.0)
        ws.send(json.dumps({"op": "approve", "command_id": confirm["command_id"]}))
        receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "step", 60.0)
        ws.send(json.dumps({"op": "cancel", "command_id": confirm["command_id"]}))
        result = receive_until(ws, lambda m: m["type"] == "result", 30.0)
        assert (result["outcome"], result["command_id"]) == ("cancelled", confirm["command_id"]), result
        here = robot.driver.pose()
        wait_until(lambda: language.commands._running is None, 10.0, "the language server to be free")
        assert robot.driver.pose() == here

    config = system["console"].config
    with ros_graph() as nodes:
        with console_server(config.namespace, config.db_uri, config.graph_name, static_dir=tmp_path,
                            find_timeout_s=20.0) as second, opened(second) as ws:
            node = health(second)["node"]
            assert node != health(system["console"])["node"]
            wait_until(lambda: nodes(node.lstrip("/")) == [node], 10.0, "the second console on the graph")
            ws.send(json.dumps({"op": "command", "text": INSTRUCTION}))
            receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "confirm", 90.0)
            assert language.commands._running is not None
        # The second console is gone: what it started was cancelled, the robot never moved, it left the graph.
        wait_until(lambda: language.commands._running is None, 15.0, "the closed console's command to end")
        assert robot.driver.pose() == here
        wait_until(lambda: not nodes(node.lstrip("/")), 5.0, "the closed console to leave the ROS graph")


def test_a_closed_tab_s_walking_command_is_cancelled_after_client_lost_s(ros_domain_id, falkordb_uri, graph_name,
                                                                          small_store, tmp_path):
    """The robot walks in real time (a walk of many seconds); the tab that approved it closes while the console
    lives on: the command ends, and the robot stands short of its goal, client_lost_s later."""
    (tmp_path / "index.html").write_text("<!doctype html>")
    with nodes_of_a_console(ros_domain_id, falkordb_uri, graph_name, small_store, sim_time_scale=1.0) as nodes, \
            console_server(nodes["namespace"], falkordb_uri, graph_name, static_dir=tmp_path,
                           find_timeout_s=20.0) as served:
        robot, language = nodes["robot"], nodes["language"]
        with opened(served) as ws:
            ws.send(json.dumps({"op": "command", "text": INSTRUCTION}))
            confirm = receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "confirm", 90.0)
            goal = confirm["plan"]["steps"][0]["waypoints"][-1]
            ws.send(json.dumps({"op": "approve", "command_id": confirm["command_id"]}))
            receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "step"
                          and m["step"]["state"] == "walking", 60.0)
        closed = time.monotonic()  # the tab is gone; the console, and so the command's client node, lives on
        wait_until(lambda: language.commands._running is None, CLIENT_LOST_S + 5.0, "the closed tab's command to end")
        ended_after = time.monotonic() - closed
        assert CLIENT_LOST_S - 0.5 <= ended_after <= CLIENT_LOST_S + 2.0, ended_after
        here = robot.driver.pose()
        time.sleep(1.0)
        assert robot.driver.pose() == here  # the robot stands
        assert math.dist((here.x, here.y), goal) > 1.0, (here, goal)  # short of where it was going


#: Commands over which the console's process must not grow, after WARM_UP commands.
COMMANDS, WARM_UP = 100, 10


@pytest.mark.timeout(600)
def test_the_console_s_memory_threads_and_ros_nodes_stay_flat_over_100_commands(ros_domain_id, falkordb_uri,
                                                                                  graph_name, small_store):
    """``heracles console`` in its own process, against the running nodes: commands (each a clarification:
    goal, feedback, result) from one long-lived tab and from a new tab every fourth; its resident memory and
    its threads after COMMANDS more are where they were after WARM_UP, and it is one node on the ROS graph."""
    with nodes_of_a_console(ros_domain_id, falkordb_uri, graph_name, small_store) as nodes, \
            console_process(nodes["namespace"], falkordb_uri, graph_name) as (process, served), \
            opened(served) as long_lived:
        console = psutil.Process(process.pid)

        def one_command(index: int) -> None:
            with contextlib.ExitStack() as tab:
                ws = long_lived if index % 4 else tab.enter_context(opened(served))
                ws.send(json.dumps({"op": "command", "text": AMBIGUOUS}))
                result = receive_until(ws, lambda m: m["type"] == "result", 60.0)
                assert result["outcome"] == "clarify", result

        for index in range(WARM_UP):
            one_command(index)
        time.sleep(1.0)
        rss, threads = console.memory_info().rss, console.num_threads()
        for index in range(COMMANDS):
            one_command(index)
        time.sleep(1.0)
        grown_mb = (console.memory_info().rss - rss) / 2**20
        assert console.num_threads() <= threads + 2, (threads, console.num_threads())
        assert grown_mb < 20.0, grown_mb
        with ros_graph() as nodes:
            node = health(served)["node"]
            wait_until(lambda: node in nodes("heracles_console_*"), 10.0, "the console's node on the graph")
            assert nodes(f"heracles_console_*_{process.pid}") == [node]


@contextlib.contextmanager
def ros_graph() -> Iterator[Callable[[str], list[str]]]:
    """For the ``with`` block: the fully qualified names of the nodes on the ROS graph whose name matches a
    pattern (fnmatch), as a node of this test sees them (discovery takes a moment: wait for a change)."""
    probe = rclpy.create_node(f"graph_probe_{uuid.uuid4().hex[:6]}")
    try:
        yield lambda pattern: [f"{ns.rstrip('/')}/{name}" for name, ns in probe.get_node_names_and_namespaces()
                               if fnmatch.fnmatch(name, pattern)]
    finally:
        probe.destroy_node()


def health(served: Served) -> dict[str, Any]:
    with urllib.request.urlopen(served.base + "/healthz", timeout=10) as response:
        answer: dict[str, Any] = json.loads(response.read())
    return answer


def test_the_robot_is_where_the_dispatcher_says_from_the_first_message_never_where_the_database_had_it(
        ros_domain_id, falkordb_uri, graph_name, small_store, tmp_path):
    """The database still holds the last run's robot (at START) when the console starts; the dispatcher then
    starts the robot elsewhere. The page never shows the database's robot, and shows the dispatcher's at once."""
    states = RobotStateStore(small_store)
    states.write(RobotState(states.position_of(START), place=START))
    elsewhere = small_store.query("MATCH (p:MeshPlace) WHERE p.nodeSymbol <> $s RETURN p.nodeSymbol AS s "
                                  "ORDER BY p.x DESC, s LIMIT 1", {"s": START})[0]["s"]
    where = states.position_of(elsewhere)[:2]
    assert math.dist(where, states.position_of(START)[:2]) > 1.0
    (tmp_path / "index.html").write_text("<!doctype html>")
    ns = f"/consr_{uuid.uuid4().hex[:6]}"
    with ros_session(ros_domain_id), console_server(ns, falkordb_uri, graph_name, static_dir=tmp_path) as served, \
            opened(served) as ws:
        seen: list[dict[str, Any]] = []
        receive_until(ws, lambda m: m["type"] == "status" and m["database"]["ok"], 20.0, seen)  # map read
        assert not [m for m in seen if m["type"] == "robot"], seen  # no dispatcher: no robot at all
        robot = DispatcherNode(namespace=ns, parameter_overrides=[
            Parameter(k, value=v) for k, v in {"db_uri": falkordb_uri, "graph_name": graph_name,
                                               "start_place": elsewhere}.items()])
        with spinning(robot):
            seen.clear()
            first = receive_until(ws, lambda m: m["type"] == "robot", 20.0, seen)
            assert [first["x"], first["y"]] == pytest.approx(where, abs=1e-6), first
            with opened(served) as late:  # a page opened now gets it among its first messages
                early: list[dict[str, Any]] = []
                again = receive_until(late, lambda m: m["type"] == "robot", 5.0, early)
                assert [again["x"], again["y"]] == pytest.approx(where, abs=1e-6)
                # The stop state goes ahead of a map still being sent; both come before the robot.
                assert {m["type"] for m in early} - {"hello"} == {"scene", "stop"}, early


def test_a_page_back_within_client_lost_s_takes_over_its_session_and_its_command_runs_on(system):
    language, served = system["language"], system["console"]
    with opened(served) as ws:
        ws.send(json.dumps({"op": "command", "text": INSTRUCTION}))
        session = receive_until(ws, lambda m: m["type"] == "command", 10.0)["command_id"].split("-")[1]
        confirm = receive_until(ws, lambda m: m["type"] == "stage" and m["stage"] == "confirm", 90.0)
    time.sleep(CLIENT_LOST_S / 3)  # a reconnection, a reload
    with served.socket(query=f"?session={session}") as back:
        hello = json.loads(back.recv(timeout=10))
        assert hello["session"] == session, hello
        with served.socket(query=f"?session={session}") as another:  # an open tab's session is its own
            assert json.loads(another.recv(timeout=10))["session"] != session
        time.sleep(CLIENT_LOST_S + 1.0)
        assert language.commands._running is not None  # not cancelled: its page is back
        back.send(json.dumps({"op": "approve", "command_id": confirm["command_id"]}))
        result = receive_until(back, lambda m: m["type"] == "result", 120.0)
        assert (result["command_id"], result["outcome"]) == (confirm["command_id"], "succeeded"), result
    with served.socket(query="?session=0123456789ab") as stranger:  # no such session: a new one
        assert json.loads(stranger.recv(timeout=10))["session"] != "0123456789ab"
