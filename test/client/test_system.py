"""HeraclesClient and the CLI's live forms against the running nodes: real DDS, FalkorDB, Fast Downward.

The three nodes run in this process under a robot namespace; the client opens
its own rclpy context, as a script or console would. Only the model is scripted.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.cli import heracles
from support.history_scene import changed_scene
from support.mirror_node import mirror_node
from support.ros import wait_until
from support.running_nodes import running_nodes
from support.scripted_llm import RecordedRequest, Turn, call, say
from support.tiny_scene import tiny_scene

from heracles_ros.client import HeraclesClient
from heracles_ros.errors import RequestFailed, SystemUnavailable
from heracles_ros.mirror.corrections import Corrections

pytestmark = pytest.mark.backends("falkordb")

NS = "/spotc"
ROOT = Path(__file__).resolve().parents[2]
START = "P0"
T0 = 1_700_000_000
BOXES = "MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS box ORDER BY box"
FARTHEST_BOX = (
    "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'box'}) WHERE p.x < 12 "
    "RETURN o.nodeSymbol AS box, p.x * p.x + p.y * p.y AS d2 ORDER BY d2 DESC, box LIMIT 1"
)


def kind_of(request: RecordedRequest) -> str:
    """Question, Instruction or Correction: the label of the conversation's request."""
    for message in reversed(request.messages):
        found = re.match(r"(Question|Instruction|Correction): ", str(message.get("content")))
        if message.get("role") == "user" and found:
            return found.group(1)
    return ""


def model(request: RecordedRequest) -> Turn:
    """Counts boxes for a question, fetches the farthest box for an instruction, relabels O1 for a correction."""
    results = request.tool_results()
    if kind_of(request) == "Correction":
        return say('<answer>[["O1", "class", "crate"]]</answer>')
    if kind_of(request) == "Question":
        if not results:
            return call(BOXES)
        return say(f"<answer>{len(json.loads(results[-1]))}</answer>")
    if not results:
        return call(FARTHEST_BOX)
    return say(f"<answer>(holding {json.loads(results[-1])[0]['box']})</answer>")


@pytest.fixture
def system(ros_domain_id, falkordb_uri, graph_name, small_store) -> Iterator[dict[str, Any]]:
    """Language server and dispatcher (simulated Spot) in NS, over the small real graph."""
    db = {"db_uri": falkordb_uri, "graph_name": graph_name}
    with running_nodes(ros_domain_id, db, small_store, model, namespace=NS, start_place=START) as nodes:
        yield {"language": nodes.language, "robot": nodes.robot, "server": nodes.model, "store": small_store}


def test_ask_plan_and_correct_go_through_the_language_server(system, capsys):
    boxes = len(system["store"].query(BOXES))
    with HeraclesClient(NS, find_timeout_s=20.0, answer_timeout_s=30.0) as client:
        reply = client.ask("How many boxes are there?", session="op1")
        assert (reply.error, reply.answer, list(reply.queries)) == ("", str(boxes), [BOXES])
        planned = client.plan_command("Bring me the farthest box.")
        assert planned.error == "" and planned.goal.startswith("(holding O") and "steps from P0" in planned.plan_summary
        was = system["store"].query("MATCH (o:Object {nodeSymbol: 'O1'}) RETURN o.class AS c")[0]["c"]
        corrected = client.correct("O1 is actually a crate.")
        assert (corrected.error, list(corrected.changes)) == ("", [f"O1.class: {was!r} -> 'crate'"])
    code, out, err = heracles(capsys, "ask", "How many boxes are there?", "--live", "--namespace", NS,
                              "--session", "op1", "--json")
    assert code == 0 and out["answer"] == str(boxes) and out["queries"] == [BOXES], err
    code, out, err = heracles(capsys, "ask", "How many boxes are there?", "--live", "--namespace", NS)
    assert (code, out) == (0, boxes) and "1 queries" in err  # the answer alone on stdout
    code, out, err = heracles(capsys, "command", "Bring me the farthest box.", "--live", "--namespace", NS)
    assert code == 0 and out.splitlines()[0] == f"{planned.goal}  ({planned.goal_text})", err
    assert out.splitlines()[1:] == planned.plan_summary.splitlines()
    code, _, err = heracles(capsys, "ask", "How many boxes?", "--session", "op1")
    assert code == 1 and "--session continues a conversation of the running language_server: add --live" in err


def test_corrections_list_revert_and_clear_through_the_running_server(system, capsys):
    store = system["store"]
    first, second = (r["s"] for r in store.query("MATCH (o:Object) RETURN o.nodeSymbol AS s ORDER BY s LIMIT 2"))
    Corrections(store).apply([(first, "class", "bag"), (second, "name", "blue box")], author="dana")
    with HeraclesClient(NS, find_timeout_s=20.0, answer_timeout_s=30.0) as client:
        listed = client.corrections()
        assert [(c["id"], c["status"], c["author"]) for c in listed] == [
            (f"{first}.class", "active", "dana"), (f"{second}.name", "active", "dana")]
        assert client.revert_correction(f"{first}.class") == [f"{first}.class: 'bag' -> {listed[0]['original']!r}"]
        assert [c["id"] for c in client.corrections(active_only=True)] == [f"{second}.name"]
        with pytest.raises(RequestFailed, match=r"corrections revert: .*O99999"):
            client.revert_correction("O99999.class")
    code, out, err = heracles(capsys, "corrections", "list", "--json", "--live", "--namespace", NS, "--active")
    assert code == 0 and [c["id"] for c in out] == [f"{second}.name"], err
    code, out, err = heracles(capsys, "corrections", "clear", "--json", "--live", "--yes", "--namespace", NS)
    assert code == 0 and out["cleared"] is True, err
    assert len(out["reverted"]) == 1 and out["reverted"][0].startswith(f"{second}.name: 'blue box' -> "), out
    assert Corrections(store).active() == []
    code, _, err = heracles(capsys, "corrections", "revert", "--json", "O99999.class", "--live", "--namespace", NS)
    assert code == 1 and "error: corrections revert:" in err


def test_a_command_is_followed_confirmed_and_ends_where_the_robot_is(system, capsys):
    box = system["store"].query(FARTHEST_BOX)[0]["box"]
    with HeraclesClient(NS, find_timeout_s=20.0, answer_timeout_s=30.0) as client:
        command_id = client.command("Bring me the farthest box.", require_confirmation=True, command_id="c-1")
        assert command_id == "c-1" and client.accepted() is True and not client.is_task_complete()
        stages = []
        deadline = time.monotonic() + 60.0
        while "confirm" not in stages and time.monotonic() < deadline:
            event = client.feedback(timeout_s=0.5)
            if event is not None:
                stages.append(event.stage)
        assert stages[-1] == "confirm" and "plan" in stages, stages
        assert system["robot"].driver.pose() == system["robot"].driver.pose()  # nothing moves before the yes
        assert client.confirm(True).success
        result = client.result(timeout_s=120.0)
        assert client.is_task_complete() and result is not None
        assert (result.outcome, result.holding, result.command_id, result.driver) == ("succeeded", box, "c-1", "sim")
        while (event := client.feedback()) is not None:
            stages.append(event.stage if event.stage != "step" else f"step {event.step.state}")
        # A start and an end per step (and, while the robot walks, what the walk has left).
        assert len([s for s in stages if s in ("step started", "step succeeded")]) == 2 * len(result.plan.steps)
        assert "step walking" in stages

        client.command("Bring me the farthest box.", require_confirmation=True, command_id="c-2", wait=False)
        wait_until(lambda: (r := system["language"].commands._running) is not None and r.waiting, 60.0,
                   "c-2 to wait for confirmation")
        code, out, err = heracles(capsys, "confirm", "c-2", "--refuse", "--namespace", NS, "--json")
        assert code == 0 and out["success"] is True, err
        assert client.result(timeout_s=30.0).outcome == "refused"
        code, out, err = heracles(capsys, "confirm", "--namespace", NS)
        assert (code, out) == (1, "no command is running\n"), (out, err)


def test_cancel_stop_and_resume_reach_the_robot_through_the_client(system):
    robot = system["robot"]
    with HeraclesClient(NS, find_timeout_s=20.0, answer_timeout_s=30.0) as client:
        client.command("Bring me the farthest box.", command_id="walk-1")
        while (event := client.feedback(timeout_s=60.0)) is not None and event.stage != "step":
            pass
        assert event is not None and event.stage == "step"
        client.cancel_command()
        result = client.result(timeout_s=30.0)
        assert result is not None and result.outcome == "cancelled"
        here = robot.driver.pose()
        time.sleep(0.5)
        assert robot.driver.pose() == here

        stopped = client.stop()
        assert stopped.success and stopped.message.startswith("stopped"), stopped.message
        language = system["language"]
        wait_until(lambda: language.commands.stopped() is not None, 10.0, "the stop to reach the language server")
        with pytest.raises(RequestFailed, match=r"rejected \(stopped\)"):
            client.command("Bring me the farthest box.", command_id="walk-2")
        assert client.is_task_complete() and client.accepted() is False
        assert not client.cancel_plan().success  # nothing runs
        assert client.resume("ana", "path clear").success
        assert not client.resume("ana").success  # nothing stopped any more
        wait_until(lambda: language.commands.stopped() is None, 10.0, "the resume to reach the language server")
        client.command("Bring me the farthest box.", command_id="walk-3")
        while (event := client.feedback(timeout_s=60.0)) is not None and event.stage != "step":
            pass
        assert client.cancel_plan().success  # the dispatcher's own cancel, past the language server
        assert client.result(timeout_s=30.0).outcome in ("cancelled", "failed")


def test_changes_through_the_running_mirror_read_as_the_database_does(ros_domain_id, db_uri, graph_name, store,
                                                                      capsys):
    db = {"db_uri": db_uri, "graph_name": graph_name}
    with mirror_node(ros_domain_id, topic=f"{NS}/dsg_update", namespace=NS, **db) as mirror:
        for sequence, graph in ((1, tiny_scene()), (2, changed_scene())):
            mirror.send(graph, sequence, stamp_s=T0 + 60 * sequence)
        with HeraclesClient(NS, find_timeout_s=20.0, answer_timeout_s=30.0) as client:
            events = client.changes(since_s=T0)
            assert [(e["kind"], e["symbol"]) for e in events] == [
                ("moved", "O0"), ("disappeared", "O3"), ("appeared", "O5")]
            assert [e["symbol"] for e in client.changes(since_s=T0, room="R1")] == ["O3"]
        since = ["--since", str(T0)]
        live = heracles(capsys, "changes", *since, "--live", "--namespace", NS, "--json")
        offline = heracles(capsys, "changes", *since, "--db", db_uri, "--graph", graph_name, "--json")
        assert live[0] == 0 and live[1] == offline[1] == events, live
        live_text = heracles(capsys, "changes", *since, "--live", "--namespace", NS)
        offline_text = heracles(capsys, "changes", *since, "--db", db_uri, "--graph", graph_name)
        moved = "moved       O0 (box) in R0 from (0.00, 1.00, 0.50) to (3.00, 1.00, 0.50) (3.0 m)"
        assert live_text[1] == offline_text[1] and moved in live_text[1]


def test_when_nothing_answers_every_call_names_what_within_its_bound(ros_domain_id, capsys):
    with HeraclesClient("/nobody", find_timeout_s=0.5) as client:
        calls = {
            "/nobody/ask": lambda: client.ask("How many?"),
            "/nobody/command": lambda: client.plan_command("Go."),
            "/nobody/correct": lambda: client.correct("O1 is a bag."),
            "/nobody/corrections": client.corrections,
            "/nobody/changes": client.changes,
            "/nobody/confirm": client.confirm,
            "/nobody/stop": client.stop,
            "/nobody/resume": lambda: client.resume("ana"),
            "/nobody/cancel": client.cancel_plan,
            "/nobody/execute_command": lambda: client.command("Go."),
            "/nobody/scene_at": client.scene_at,
            "/nobody/find": lambda: client.find("something to sit on"),
        }
        for name, request in calls.items():
            started = time.monotonic()
            with pytest.raises(SystemUnavailable, match=f"on {name} within 0.5 s") as raised:
                request()
            assert raised.value.name == name and time.monotonic() - started < 0.5 + 1.0
            # Issue 33 F8: a terminal on another domain or discovery range is told to look there.
            assert f"on ROS_DOMAIN_ID {ros_domain_id}" in str(raised.value), raised.value
            assert "discovery range (LOCALHOST)" in str(raised.value), raised.value
    for argv in (["ask", "How many?"], ["command", "Go."], ["correct", "O1 is a bag."], ["changes"],
                 ["corrections", "list"], ["where", "O1"], ["scene"], ["find", "something to sit on"]):
        started = time.monotonic()
        code, _, err = heracles(capsys, *argv, "--live", "--namespace", "/nobody", "--server-timeout", "0.5")
        assert code == 4 and "answered on /nobody/" in err and "within 0.5 s" in err, (argv, err)
        assert time.monotonic() - started < 0.5 + 2.0


def test_the_example_of_the_client_api_document_runs_against_the_running_system(system):
    """docs/client-api.md's first example, as a user copies it (only its namespace is the test's)."""
    document = (ROOT / "docs" / "client-api.md").read_text()
    example = re.findall(r"```python\n(.*?)```", document, re.S)[0]
    assert 'HeraclesClient("/spot")' in example
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", example.replace('"/spot"', repr(NS))], env=env, capture_output=True,
                          text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    box = system["store"].query(FARTHEST_BOX)[0]["box"]
    assert lines[0] == f"boxes: {len(system['store'].query(BOXES))}"
    assert re.fullmatch(r"plan: \d+ steps, \d+\.\d m of walking", lines[1]), lines
    assert lines[-1].startswith("succeeded, ") and lines[-1].endswith(f"holding {box}"), lines
    assert any(line.startswith("step 1/") for line in lines)


def hold_goal_answers(language: Any) -> tuple[threading.Event, threading.Event]:
    """The language server takes the next goals only when released (a server busy for a while): (held, release)."""
    held, release = threading.Event(), threading.Event()
    decide = language.commands._refusal

    def late(goal: Any) -> tuple[str, str]:
        held.set()
        release.wait(30.0)
        return decide(goal)

    language.commands._refusal = late
    return held, release


def test_a_command_cancelled_before_the_server_accepted_it_is_cancelled_once_it_is(system):
    holding, release = hold_goal_answers(system["language"])
    with HeraclesClient(NS, find_timeout_s=20.0, answer_timeout_s=30.0) as client:
        client.command("Bring me the farthest box.", command_id="early", wait=False)
        assert holding.wait(30.0), "the goal never reached the server"
        assert client.accepted() is None
        client.cancel_command()
        release.set()
        result = client.result(timeout_s=30.0)
        assert result is not None and result.outcome == "cancelled", result
        assert result.steps_completed == 0 and len(system["server"].requests) <= 1  # within the model's first turn


def test_a_client_that_gave_up_waiting_for_acceptance_cancels_the_goal_the_server_takes_later(system):
    held, release = hold_goal_answers(system["language"])
    with HeraclesClient(NS, find_timeout_s=20.0, answer_timeout_s=1.0) as client:
        with pytest.raises(SystemUnavailable, match="did not answer the goal on /spotc/execute_command within 1 s"):
            client.command("Bring me the farthest box.", command_id="late")
        assert held.is_set()
        release.set()  # the server takes it after all, the client still alive
        result = client.result(timeout_s=30.0)
        assert result is not None and result.outcome == "cancelled", result
        assert result.steps_completed == 0 and system["robot"].driver.steps_executed == 0


def test_the_cli_that_gave_up_waiting_for_acceptance_cancels_the_goal_taken_late_and_nothing_moves(
    system, capsys, monkeypatch
):
    """The issue's case: the server took a goal 11.7 s after the CLI gave up on it, and the robot walked
    until the server noticed the CLI was gone. Now the CLI waits on a while, and cancels it at once."""
    from heracles_ros.cli import execute

    monkeypatch.setattr(execute, "GOAL_RESPONSE_TIMEOUT_S", 1.0)
    held, release = hold_goal_answers(system["language"])

    def answer_late() -> None:  # two seconds after the goal reached the server: a second after the CLI gave up
        if held.wait(30.0):
            time.sleep(2.0)
        release.set()

    threading.Thread(target=answer_late, daemon=True).start()
    started = time.monotonic()
    code, out, err = heracles(capsys, "command", "Bring me the farthest box.", "--execute", "--live",
                              "--namespace", NS)  # fmt: skip
    assert held.is_set()
    assert code == 1, (out, err)
    assert "the language_server did not answer the goal within 1 s: it is cancelled should the server take it" in err
    assert "after all, and cancelled at once" in err
    assert re.search(r"cancelled cli-\w+ \('Bring me the farthest box\.'\) while .*: cancelled", err), err
    assert time.monotonic() - started < 30.0
    assert system["robot"].driver.steps_executed == 0  # the robot never took a step
