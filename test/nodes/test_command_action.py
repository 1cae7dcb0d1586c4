"""The ``execute_command`` action over real DDS: language_server + dispatcher (sim Spot), real FalkorDB.

Only the model is scripted (test/support/scripted_llm.py); goals are checked,
planned by Fast Downward and executed by the dispatcher's ``execute_plan``
action on the simulated robot. Everything is observed the way an operator's
tools see it: goal responses, feedback, results, ``command_rejections``, the
``confirm`` service.
"""
from __future__ import annotations

import json
import math
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rclpy
from action_msgs.msg import GoalStatus
from heracles_ros.action import ExecuteCommand
from heracles_ros.msg import CommandRejection, DispatchProgress
from heracles_ros.srv import Ask, Confirm
from rclpy.action import ActionClient
from rclpy.client import Client
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String
from support.actions import FeedbackLog, cancel_goal, goal_result, send_goal
from support.ros import Collector, action_client, call_service, ros_session, spinning, wait_until
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, say, slow

from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.language_server import LanguageServerNode
from heracles_ros.ros.fastdds_profile import LEASE_S
from heracles_ros.ros.qos import latched

# Node plumbing on FalkorDB; the Neo4j path through all three nodes is test/system/test_end_to_end.py[bolt].
pytestmark = pytest.mark.backends("falkordb")

NS = "/spot1"
START = "P0"
REPO = Path(__file__).resolve().parents[2]
BOXES = "MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS box ORDER BY box"
BICYCLES = (
    "MATCH (r:Room)-[:CONTAINS*1..2]->(o:Object {class: 'bicycle'}) "
    "RETURN o.nodeSymbol AS id, r.nodeSymbol AS room ORDER BY id"
)
#: The box farthest from P0: a walk long enough to interrupt.
FARTHEST_BOX = (
    "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'box'}) WHERE p.x < 12 "
    "RETURN o.nodeSymbol AS box, p.x * p.x + p.y * p.y AS d2 ORDER BY d2 DESC, box LIMIT 1"
)
NEAREST_BOX_TO_BICYCLE = (
    "MATCH (b:Object {class: 'bicycle'}), (o:Object {class: 'box'}) "
    "RETURN o.nodeSymbol AS box, (o.x - b.x) * (o.x - b.x) + (o.y - b.y) * (o.y - b.y) AS d2 "
    "ORDER BY d2, box LIMIT 1"
)
LOUNGE_PLACE = (
    "MATCH (:Room {class: 'lounge'})-[:CONTAINS]->(p:MeshPlace) RETURN p.nodeSymbol AS place ORDER BY place LIMIT 1"
)


def user_request(request: RecordedRequest) -> str:
    """The request of this conversation (its last user message that names one)."""
    for message in reversed(request.messages):
        if message.get("role") == "user" and re.match(r"(Question|Instruction): ", str(message.get("content"))):
            return str(message["content"])
    return ""


def rows(request: RecordedRequest) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = json.loads(request.tool_results()[-1])
    return result


def fetch_farthest_box(request: RecordedRequest) -> Turn:
    if not request.tool_results():
        return call(FARTHEST_BOX, text="The farthest box.")
    return say(f"<answer>(holding {rows(request)[0]['box']})</answer>")


@dataclass
class Rig:
    language: LanguageServerNode
    probe: Node
    server: ScriptedLLMServer
    commands: ActionClient
    confirm: Client
    ask: Client
    rejections: Collector[CommandRejection]
    progress: Collector[DispatchProgress]
    dispatcher: DispatcherNode | None
    answers: Collector[String]

    def send(self, instruction: str, *, feedback: FeedbackLog | None = None, **options: Any) -> Any:
        goal = ExecuteCommand.Goal(instruction=instruction, **{"execute": True, **options})
        return send_goal(self.commands, goal, feedback=feedback)

    def rejection(self, command_id: str) -> CommandRejection:
        return self.rejections.wait(lambda r: r.command_id == command_id, 5.0, what=f"the rejection of {command_id}")


@pytest.fixture
def robot_at_start(small_store) -> None:
    states = RobotStateStore(small_store)
    position = states.position_of(START)
    assert position is not None
    states.write(RobotState(position, place=START))


@pytest.fixture
def rig_factory(ros_domain_id, falkordb_uri, graph_name, small_store, robot_at_start) -> Iterator:
    """``start(script, dispatcher=True, sim_time_scale=..., **language_params)``."""
    stack = ExitStack()  # closed in reverse: spinning nodes first, then the model servers

    def start(script: Any, *, dispatcher: bool = True, sim_time_scale: float = 40.0, **params: Any) -> Rig:
        server = ScriptedLLMServer(script).start()
        stack.callback(server.stop)
        db = {"db_uri": falkordb_uri, "graph_name": graph_name}
        language = LanguageServerNode(namespace=NS, parameter_overrides=[
            Parameter(k, value=v) for k, v in {**db, "llm": "openai", "model": server.model,
                                               "base_url": server.openai_base_url, "instance_check_s": 0.0,
                                               **params}.items()])
        nodes: list[Node] = [language]
        robot = None
        if dispatcher:
            robot = DispatcherNode(namespace=NS, parameter_overrides=[
                Parameter(k, value=v) for k, v in {**db, "start_place": START, "sim_time_scale": sim_time_scale,
                                                   "sim_speed_mps": 1.0}.items()])
            nodes.append(robot)
        probe = rclpy.create_node("probe")
        rig = Rig(
            language, probe, server,
            action_client(probe, ExecuteCommand, f"{NS}/execute_command"),
            probe.create_client(Confirm, f"{NS}/confirm"),
            probe.create_client(Ask, f"{NS}/ask"),
            Collector(probe, CommandRejection, f"{NS}/command_rejections", latched(10)),
            Collector(probe, DispatchProgress, f"{NS}/dispatch_progress", 100),
            robot,
            Collector(probe, String, f"{NS}/last_answer", latched(1)),
        )
        stack.enter_context(spinning(*nodes, probe, num_threads=8))
        assert rig.commands.wait_for_server(timeout_sec=10.0)
        if dispatcher:
            wait_until(lambda: language.commands.plans.server_is_ready(), 10.0, "the dispatcher's execute_plan")
        wait_until(lambda: language.count_subscribers(f"{NS}/command_rejections") >= 1, 10.0,
                   "the probe on command_rejections")
        return rig

    with ros_session(ros_domain_id), stack:
        yield start


def stages(feedback: FeedbackLog) -> list[str]:
    """Feedback stages in order, repeats folded (grounding comes once per query)."""
    folded: list[str] = []
    for message in feedback.messages:
        if not folded or folded[-1] != message.stage:
            folded.append(message.stage)
    return folded


# -- a command from words to the robot ---------------------------------------------------------------
def test_feedback_goes_through_every_stage_in_order_and_the_result_carries_goal_plan_and_outcome(
    rig_factory, small_store
):
    box = small_store.query(FARTHEST_BOX)[0]["box"]
    rig = rig_factory(fetch_farthest_box)
    feedback = FeedbackLog()
    goal = rig.send("Bring me the farthest box.", feedback=feedback, command_id="fetch-1")
    assert goal.accepted
    status, result = goal_result(goal, 60.0)

    assert status == GoalStatus.STATUS_SUCCEEDED, result.reason
    assert (result.outcome, result.command_id, result.goal) == ("succeeded", "fetch-1", f"(holding {box})")
    assert result.goal_text == f"hold {box} (box)"
    assert result.plan.plan_id == "fetch-1-plan" and result.plan.steps[-1].target_symbol == box
    assert (result.holding, result.steps_completed) == (box, len(result.plan.steps))
    assert list(result.queries) == [FARTHEST_BOX] and result.input_tokens > 0

    assert stages(feedback) == ["grounding", "goal", "plan", "executing", "step"]
    messages = feedback.messages
    assert all(m.command_id == "fetch-1" for m in messages)
    grounding = [m for m in messages if m.stage == "grounding"]
    assert [list(m.queries) for m in grounding] == [[], [FARTHEST_BOX]]  # the start, then each query run
    planned = next(m for m in messages if m.stage == "plan")
    assert planned.plan.steps[-1].action == "pick" and planned.plan_summary.startswith(f"{len(planned.plan.steps)} ")
    steps = [(m.step.state, m.step.step_index) for m in messages if m.stage == "step" and m.step.state != "walking"]
    assert steps == [(s, i) for i in range(len(result.plan.steps)) for s in ("started", "succeeded")]
    positions = [(m.step.robot_position.x, m.step.robot_position.y) for m in messages if m.stage == "step"]
    assert len(set(positions)) > 1  # each step reports where the robot is


def test_a_second_command_is_rejected_while_the_first_runs_and_the_first_can_be_cancelled(rig_factory, small_store):
    def model(request: RecordedRequest) -> Turn:
        if "first" in user_request(request):
            return slow(2.0, say("<answer>(holding O1)</answer>"))
        return say("<answer>(holding O1)</answer>")

    rig = rig_factory(model)
    first = rig.send("The first command.", command_id="first")
    assert first.accepted
    wait_until(lambda: len(rig.server.requests) >= 1, 5.0, "the first command to reach the model")

    began = time.monotonic()
    second = rig.send("The second command.", command_id="second")
    assert not second.accepted and time.monotonic() - began < 1.5
    refusal = rig.rejection("second")
    assert refusal.code == "busy" and "first" in refusal.reason and refusal.instruction == "The second command."
    assert len(rig.server.requests) == 1  # the refused command never reached the model

    # Cancelling the first stops that goal (once its model turn is back); nothing reached the robot.
    cancel_goal(first)
    status, result = goal_result(first, 10.0)
    assert status == GoalStatus.STATUS_CANCELED
    assert (result.outcome, result.reason) == ("cancelled", "cancelled while grounding")
    assert rig.progress.count == 0
    # The node is free again.
    third = rig.send("The third command.", execute=False)
    assert third.accepted
    assert goal_result(third, 30.0)[1].outcome == "planned"


def test_without_a_dispatcher_an_execute_goal_is_rejected_at_once_and_plan_only_still_works(rig_factory):
    rig = rig_factory(lambda request: say("<answer>(holding O1)</answer>"), dispatcher=False)
    began = time.monotonic()
    goal = rig.send("Fetch O1.", command_id="lonely")
    assert not goal.accepted and time.monotonic() - began < 2.0
    refusal = rig.rejection("lonely")
    assert refusal.code == "no_dispatcher" and f"{NS}/execute_plan" in refusal.reason
    assert not rig.server.requests

    planned = rig.send("Fetch O1.", execute=False)
    assert planned.accepted
    status, result = goal_result(planned, 30.0)
    assert (status, result.outcome, result.goal) == (GoalStatus.STATUS_SUCCEEDED, "planned", "(holding O1)")


def test_an_empty_instruction_is_rejected_as_invalid(rig_factory):
    rig = rig_factory([])
    goal = rig.send("   ", command_id="empty")
    assert not goal.accepted
    assert rig.rejection("empty").code == "invalid"


def test_without_a_usable_model_a_goal_is_rejected_saying_what_is_missing(rig_factory, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    rig = rig_factory([], base_url="")
    goal = rig.send("Fetch O1.", command_id="no-model")
    assert not goal.accepted
    refusal = rig.rejection("no-model")
    assert refusal.code == "no_model" and "OPENAI_API_KEY is not set" in refusal.reason


def test_cancel_during_execution_stops_the_robot_and_only_that_goal(rig_factory, small_store):
    rig = rig_factory(fetch_farthest_box, sim_time_scale=1.0)
    feedback = FeedbackLog()
    goal = rig.send("Bring me the farthest box.", feedback=feedback)
    assert goal.accepted
    rig.progress.wait(lambda p: p.state == "started", 20.0, what="the robot to start walking")
    time.sleep(0.5)
    cancel_goal(goal)
    status, result = goal_result(goal, 10.0)
    assert status == GoalStatus.STATUS_CANCELED
    assert result.outcome == "cancelled" and result.steps_completed == 0 and result.holding == ""
    assert rig.dispatcher is not None
    stopped = rig.dispatcher.driver.pose()
    time.sleep(0.3)
    assert rig.dispatcher.driver.pose() == stopped and 0.1 < math.hypot(stopped.x, stopped.y) < 5.0
    assert [m.stage for m in feedback.messages][-1] == "step"
    assert feedback.messages[-1].step.state == "cancelled"
    # The dispatcher and the server are free again: the next command runs.
    again = rig.send("Bring me the farthest box.", execute=False)
    assert goal_result(again, 30.0)[1].outcome == "planned"


# -- confirmation ---------------------------------------------------------------------------------------
def wait_for_confirm(feedback: FeedbackLog) -> Any:
    wait_until(lambda: any(m.stage == "confirm" for m in feedback.messages), 30.0, "the confirm stage")
    return next(m for m in feedback.messages if m.stage == "confirm")


def test_a_confirmed_command_runs_and_a_refused_one_moves_nothing(rig_factory, small_store):
    box = small_store.query(FARTHEST_BOX)[0]["box"]
    rig = rig_factory(fetch_farthest_box, require_confirmation=True)

    refused_feedback = FeedbackLog()
    refused = rig.send("Bring me the farthest box.", feedback=refused_feedback, command_id="ask-first")
    prompt = wait_for_confirm(refused_feedback)
    assert prompt.goal == f"(holding {box})" and prompt.goal_text == f"hold {box} (box)"
    assert f"hold {box} (box)" in prompt.message and "confirm" in prompt.message and prompt.plan.steps
    time.sleep(0.3)
    assert rig.progress.count == 0  # waiting: the robot has not moved
    wrong = call_service(rig.confirm, Confirm.Request(command_id="other", approve=True))
    assert not wrong.success
    answer = call_service(rig.confirm, Confirm.Request(command_id="ask-first", approve=False))
    assert answer.success and "refused" in answer.message
    status, result = goal_result(refused, 10.0)
    assert (status, result.outcome) == (GoalStatus.STATUS_ABORTED, "refused")
    assert "nothing moved" in result.reason and result.plan.steps
    assert rig.progress.count == 0

    confirmed_feedback = FeedbackLog()
    confirmed = rig.send("Bring me the farthest box.", feedback=confirmed_feedback)
    wait_for_confirm(confirmed_feedback)
    answer = call_service(rig.confirm, Confirm.Request(approve=True))  # '' = the one waiting
    assert answer.success and "confirmed" in answer.message
    status, result = goal_result(confirmed, 60.0)
    assert (status, result.outcome, result.holding) == (GoalStatus.STATUS_SUCCEEDED, "succeeded", box)
    assert stages(confirmed_feedback) == ["grounding", "goal", "plan", "confirm", "executing", "step"]


def test_confirmation_per_goal_and_its_time_limit(rig_factory):
    rig = rig_factory(lambda request: say("<answer>(holding O1)</answer>"), confirm_timeout_s=0.5)
    goal = rig.send("Fetch O1.", require_confirmation=True)
    status, result = goal_result(goal, 30.0)
    assert (status, result.outcome) == (GoalStatus.STATUS_ABORTED, "refused")
    assert result.reason == "not confirmed within 0.5 s; nothing moved"
    assert rig.progress.count == 0


def test_a_lost_client_s_command_after_an_ordinary_one_still_ends_with_its_result(rig_factory):
    """The end of a command is logged at INFO, of a lost client's at WARN: rclpy refuses two severities from
    one call site, which once left the second goal without its result."""
    rig = rig_factory(lambda request: say("<answer>(holding O1)</answer>"), confirm_timeout_s=0.5,
                      client_lost_s=0.3, require_confirmation=True)
    status, result = goal_result(rig.send("Fetch O1."), 30.0)
    assert (status, result.reason) == (GoalStatus.STATUS_ABORTED, "not confirmed within 0.5 s; nothing moved")
    rig.language.commands.confirm_timeout_s = 30.0  # the next command ends by its client, not the clock
    status, result = goal_result(rig.send("Fetch O1.", client_node="/gone_operator"), 30.0)
    assert result.reason.startswith("client_lost: /gone_operator"), (status, result)
    assert rig.progress.count == 0


# -- asking back and sessions -------------------------------------------------------------------------------
def test_an_ambiguous_command_ends_with_a_clarification_and_the_reply_continues_it(rig_factory, small_store):
    bicycles = small_store.query(BICYCLES)
    assert len(bicycles) > 1
    chosen = bicycles[-1]["id"]

    def model(request: RecordedRequest) -> Turn:
        if "Instruction: Go to the bicycle." in user_request(request):
            if not request.tool_results():
                return call(BICYCLES)
            symbols = ", ".join(row["id"] for row in rows(request))
            return say(f'<answer>CLARIFY("Which bicycle do you mean?", <{symbols}>)</answer>')
        # The reply: the earlier exchange (with its candidates) is in the conversation.
        assert "Which bicycle do you mean?" in request.text() and "Candidates: " in request.text()
        return say(f"<answer>(visited-object {chosen})</answer>")

    rig = rig_factory(model)
    goal = rig.send("Go to the bicycle.", session="operator-1")
    status, result = goal_result(goal, 30.0)
    assert (status, result.outcome) == (GoalStatus.STATUS_ABORTED, "clarify")
    assert result.clarification == "Which bicycle do you mean?" == result.reason
    assert [c.symbol for c in result.candidates] == [row["id"] for row in bicycles]
    rooms = {row["id"]: row["room"] for row in bicycles}
    assert all(c.room == rooms[c.symbol] and c.room_class and c.class_name == "bicycle" for c in result.candidates)
    assert all(c.distance_m > 0 and f"{c.distance_m:.1f} m from the robot" in c.description
               for c in result.candidates)
    assert rig.progress.count == 0

    reply = rig.send(f"The one in {rooms[chosen]}.", session="operator-1", execute=False)
    status, result = goal_result(reply, 30.0)
    assert (result.outcome, result.goal) == ("planned", f"(visited-object {chosen})"), result.reason


def test_it_is_resolved_from_the_session_and_the_model_sees_the_earlier_exchange(rig_factory, small_store):
    box = small_store.query(NEAREST_BOX_TO_BICYCLE)[0]["box"]
    lounge = small_store.query(LOUNGE_PLACE)[0]["place"]

    def model(request: RecordedRequest) -> Turn:
        current = user_request(request)
        if current.startswith("Question: Which box is nearest the bicycle?"):
            if not request.tool_results():
                return call(NEAREST_BOX_TO_BICYCLE)
            return say(f"<answer>{rows(request)[0]['box']}</answer>")
        # "it": only the earlier answer in this conversation says which box.
        earlier = re.findall(r"<answer>(O\d+)</answer>", " ".join(
            str(m.get("content")) for m in request.messages if m.get("role") == "assistant"))
        if not earlier:
            return say('<answer>CLARIFY("What should I bring?", <>)</answer>')
        if not request.tool_results():
            return call(LOUNGE_PLACE)
        return say(f"<answer>(object-in-place {earlier[-1]} {rows(request)[0]['place']})</answer>")

    rig = rig_factory(model)
    answer = call_service(rig.ask, Ask.Request(question="Which box is nearest the bicycle?", session="s1"),
                          timeout_s=30.0)
    assert (answer.error, answer.answer) == ("", box)

    goal = rig.send("Bring it to the lounge.", session="s1", execute=False)
    status, result = goal_result(goal, 30.0)
    assert status == GoalStatus.STATUS_SUCCEEDED
    assert (result.outcome, result.goal) == ("planned", f"(object-in-place {box} {lounge})"), result.reason
    sent = rig.server.requests[-1].messages
    roles = [m["role"] for m in sent]
    # system, the earlier question and its answer, then this instruction (and its query).
    assert roles[:4] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "Question: Which box is nearest the bicycle?"
    assert sent[2]["content"] == f"<answer>{box}</answer>"
    assert sent[3]["content"].startswith("Instruction: Bring it to the lounge.")

    # Without the session the model has nothing to resolve "it" with, and asks back.
    alone = rig.send("Bring it to the lounge.", execute=False)
    status, result = goal_result(alone, 30.0)
    assert status == GoalStatus.STATUS_ABORTED
    assert (result.outcome, result.clarification, list(result.candidates)) == (
        "clarify", "What should I bring?", [])


def test_a_clarification_naming_unknown_symbols_goes_back_to_the_model(rig_factory, small_store):
    bicycles = [row["id"] for row in small_store.query(BICYCLES)]

    def model(request: RecordedRequest) -> Turn:
        if "names symbols not in the scene graph" in request.text():
            return say(f'<answer>CLARIFY("Which bicycle?", <{", ".join(bicycles)}>)</answer>')
        return say('<answer>CLARIFY("Which bicycle?", <O1, O99999>)</answer>')

    rig = rig_factory(model)
    reply = call_service(rig.ask, Ask.Request(question="Which room is the bicycle in?"), timeout_s=30.0)
    assert reply.error == "" and reply.answer == ""
    assert reply.clarification == "Which bicycle?"
    assert sorted(c.symbol for c in reply.candidates) == sorted(bicycles)
    assert "O99999" in rig.server.requests[-1].text()



# -- the CLI ------------------------------------------------------------------------------------------------
def heracles(*args: str, stdin: Any = subprocess.DEVNULL) -> subprocess.Popen[str]:
    """The ``heracles`` CLI in a process of its own (same DDS domain as the test)."""
    return subprocess.Popen(
        [sys.executable, "-c", "from heracles_ros.cli import main; raise SystemExit(main())", *args],
        cwd=REPO, env=dict(os.environ), stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


#: The wall-clock time in front of every progress line.
STAMP = re.compile(r"^\d\d:\d\d:\d\d\.\d\d ")


#: A progress line of the robot walking (they come by the clock, as many as the walk lasts).
WALKING_LINE = re.compile(r"^step \d+/\d+ walking ")


def progress_lines(err: str) -> list[str]:
    """The CLI's time-stamped progress lines on stderr, without their stamps."""
    return [STAMP.sub("", line) for line in err.splitlines() if STAMP.match(line)]


def test_the_cli_follows_a_command_through_the_action_and_exits_by_its_outcome(rig_factory, small_store):
    box = small_store.query(FARTHEST_BOX)[0]["box"]
    rig = rig_factory(fetch_farthest_box)
    cli = heracles("command", "Bring me the farthest box.", "--execute", "--namespace", NS, "--json")
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    result = json.loads(out)
    assert (result["outcome"], result["goal"], result["holding"]) == ("succeeded", f"(holding {box})", box)
    assert result["queries"] == [FARTHEST_BOX] and result["command_id"].startswith("cli-")
    lines = progress_lines(err)
    assert lines[0] == f"accepted as {result['command_id']}"
    assert any(line.startswith("grounding: query 1: MATCH") for line in lines)
    assert any(line.startswith(f"goal: hold {box} (box)") for line in lines)
    steps = [line for line in lines if line.startswith("step ") and not WALKING_LINE.match(line)]
    assert len(steps) == 2 * len(result["plan_summary"].splitlines()[1:]) and "robot (" in steps[-1]
    assert len([p for p in rig.progress.messages if p.state != "walking"]) == len(steps)
    # --json: the last step event, with the walking left (none) and its time.
    last = result["progress"]
    assert (last["state"], last["step_index"], last["distance_remaining_m"], last["time_remaining_s"]) == (
        "succeeded", len(steps) // 2 - 1, 0.0, 0.0)


def test_the_cli_in_words_stamps_progress_says_the_plan_and_ends_where_the_robot_is(rig_factory, small_store):
    box = small_store.query(FARTHEST_BOX)[0]["box"]
    rig_factory(fetch_farthest_box)
    cli = heracles("command", "Bring me the farthest box.", "--execute", "--namespace", NS)
    out, err = cli.communicate(timeout=120)
    assert cli.returncode == 0, err
    lines = err.splitlines()
    plan_at = next(i for i, line in enumerate(lines) if STAMP.sub("", line).startswith("plan: "))
    headline = re.fullmatch(r"plan: (\d+) steps, (\d+\.\d) m of walking", STAMP.sub("", lines[plan_at]))
    assert headline is not None and float(headline.group(2)) > 0, lines[plan_at]
    words = lines[plan_at + 1: plan_at + 1 + int(headline.group(1))]
    assert re.fullmatch(r"  1\. goto  P0 -> P\d+  \d+\.\d m through \d+ places", words[0]), words
    assert re.fullmatch(rf"  \d+\. pick  {box} at P\d+", words[-1]), words
    steps = [line for line in lines if STAMP.match(line) and " step " in line]
    assert steps and all(STAMP.match(line) for line in steps)
    # Each step line says the walking left: at the start the plan's whole walk, at the end none.
    first = re.fullmatch(r"step 1/\d+ started +walking to P\d+ via \d+ places — (\d+\.\d) m left, about \d+ s  "
                         r"robot \(0\.0, 0\.0\)", STAMP.sub("", steps[0]))
    assert first is not None and first.group(1) == headline.group(2), steps[0]
    last = f"step {len(words)}/{len(words)} succeeded  holding {box} — no walking left  robot ("
    assert STAMP.sub("", steps[-1]).startswith(last), steps[-1]
    where = re.fullmatch(rf"succeeded, (\d+) steps; robot at (P\d+) \((-?\d+\.\d), (-?\d+\.\d)\), holding {box}",
                         out.splitlines()[-1])
    assert where is not None and int(where.group(1)) == len(words), out
    place = small_store.query("MATCH (p:MeshPlace {nodeSymbol: $s}) RETURN p.x AS x, p.y AS y", {"s": where.group(2)})
    assert words[-1].endswith(f"at {where.group(2)}") and place, (words, where.group(2))


def test_the_cli_asks_on_the_terminal_and_ctrl_c_or_heracles_cancel_stop_the_robot(rig_factory, small_store):
    rig = rig_factory(fetch_farthest_box, sim_time_scale=1.0)

    refused = heracles("command", "Bring me the farthest box.", "--execute", "--confirm", "--namespace", NS,
                       stdin=subprocess.PIPE)
    out, err = refused.communicate("\n", timeout=60)  # Enter alone is not a yes
    assert refused.returncode == 1, err
    assert "[y/N]" in err and "refused" in err and rig.progress.count == 0

    interrupted = heracles("command", "Bring me the farthest box.", "--execute", "--namespace", NS, "--json")
    rig.progress.wait(lambda p: p.state == "started", 30.0, what="the robot to start walking")
    interrupted.send_signal(signal.SIGINT)
    out, err = interrupted.communicate(timeout=60)
    assert interrupted.returncode == 130, err
    assert json.loads(out)["outcome"] == "cancelled" and "Ctrl-C: cancelling cli-" in err
    assert "while executing step 1/" in err and "the robot stopped at" in err
    assert rig.progress.messages[-1].state == "cancelled"

    started = rig.progress.count
    running = heracles("command", "Bring me the farthest box.", "--execute", "--namespace", NS, "--json")
    rig.progress.wait(lambda p: p.state == "started", 30.0, after=started, what="the robot to walk again")
    busy = heracles("command", "Another thing.", "--execute", "--namespace", NS)
    _, busy_err = busy.communicate(timeout=60)
    assert busy.returncode == 1 and "rejected (busy): busy: command cli-" in busy_err
    stop = heracles("cancel", "--namespace", NS)
    stop_out, stop_err = stop.communicate(timeout=60)
    assert stop.returncode == 0 and stop_out.startswith("cancelling plan "), stop_err  # the dispatcher's cancel
    out, err = running.communicate(timeout=60)
    assert running.returncode == 1 and json.loads(out)["outcome"] == "cancelled", err


def hold_acceptance(rig: Rig) -> tuple[Any, Any]:
    """Make the server hold every goal response until ``release`` is set; ``holding`` is set meanwhile."""
    import threading

    holding, release = threading.Event(), threading.Event()
    decide = rig.language.commands._refusal

    def held(goal: Any) -> tuple[str, str]:
        holding.set()
        release.wait(20.0)
        return decide(goal)

    rig.language.commands._refusal = held  # type: ignore[method-assign]
    return holding, release


def test_ctrl_c_before_the_goal_response_cancels_the_goal_once_it_is_accepted(rig_factory):
    rig = rig_factory(lambda request: slow(3.0, say("<answer>(holding O1)</answer>")))
    holding, release = hold_acceptance(rig)
    cli = heracles("command", "Fetch O1.", "--execute", "--namespace", NS, "--json")
    assert holding.wait(30.0), "the goal never reached the server"
    cli.send_signal(signal.SIGINT)  # the CLI has no goal handle yet
    time.sleep(0.5)
    release.set()
    out, err = cli.communicate(timeout=30)
    assert cli.returncode == 130, err
    assert json.loads(out)["outcome"] == "cancelled" and "Ctrl-C: cancelling cli-" in err
    assert "cancelled cli-" in err and ("while accepted" in err or "while grounding" in err)
    assert "the robot stopped at its start (it had not moved)" in err
    assert rig.progress.count == 0 and len(rig.server.requests) <= 1


def test_a_second_ctrl_c_leaves_at_once_and_the_server_still_cancels_the_command(rig_factory):
    rig = rig_factory(lambda request: slow(5.0, say("<answer>(holding O1)</answer>")), client_lost_s=1.0)
    holding, release = hold_acceptance(rig)
    cli = heracles("command", "Fetch O1.", "--execute", "--namespace", NS)
    assert holding.wait(30.0), "the goal never reached the server"
    cli.send_signal(signal.SIGINT)
    time.sleep(0.3)
    sent_again = time.monotonic()
    cli.send_signal(signal.SIGINT)  # the goal response is still held: only leaving at once ends it now
    _, err = cli.communicate(timeout=10)
    assert time.monotonic() - sent_again < 2.0 and cli.returncode == 130, err
    assert "leaving at once" in err
    release.set()  # accepted after its client left: the server gives it up as client_lost
    rejection_or_result = wait_for_command_end(rig, 20.0)
    assert rejection_or_result.startswith("client_lost"), rejection_or_result
    assert rig.progress.count == 0


def wait_for_command_end(rig: Rig, timeout_s: float) -> str:
    """The reason the server's one command ended with (read from its log of outcomes via the answer topic)."""
    answers = rig.answers
    message = answers.wait(lambda m: "cancelled" in m.data, timeout_s, what="the command's end")
    return message.data.split("cancelled: ", 1)[-1]


def test_ctrl_c_while_waiting_for_confirmation_cancels_and_nothing_moves(rig_factory):
    rig = rig_factory(fetch_farthest_box, require_confirmation=True)
    cli = heracles("command", "Bring me the farthest box.", "--execute", "--namespace", NS, "--json",
                   stdin=subprocess.PIPE)
    assert cli.stderr is not None and cli.stdout is not None
    shown: list[str] = []  # the CLI's terminal, read as it is written
    reader = threading.Thread(target=lambda: shown.extend(iter(lambda: cli.stderr.read(1), "")), daemon=True)
    reader.start()
    # Ctrl-C when the operator sees the question (the server waits from a moment before).
    wait_until(lambda: "Go ahead?" in "".join(shown), 60.0, "the CLI to ask for confirmation")
    assert (running := rig.language.commands._running) is not None and running.waiting
    interrupted = time.monotonic()
    cli.send_signal(signal.SIGINT)
    out = cli.stdout.read()
    cli.wait(timeout=30)
    reader.join(timeout=10)
    err = "".join(shown)
    assert cli.returncode == 130, err
    assert time.monotonic() - interrupted < 5.0
    result = json.loads(out)
    assert result["outcome"] == "cancelled" and result["reason"].startswith("cancelled while waiting for confirmation")
    assert "while waiting for confirmation" in err and rig.progress.count == 0


@pytest.mark.parametrize("signal_number", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_cancel_like_ctrl_c(rig_factory, signal_number):
    rig = rig_factory(fetch_farthest_box, sim_time_scale=1.0)
    cli = heracles("command", "Bring me the farthest box.", "--execute", "--namespace", NS, "--json")
    rig.progress.wait(lambda p: p.state == "started", 60.0, what="the robot to start walking")
    cli.send_signal(signal_number)
    out, err = cli.communicate(timeout=30)
    assert cli.returncode == 130, err
    assert json.loads(out)["outcome"] == "cancelled" and f"{signal.Signals(signal_number).name}: cancelling" in err
    assert rig.progress.messages[-1].state == "cancelled"
    assert rig.dispatcher is not None
    stopped = rig.dispatcher.driver.pose()
    time.sleep(0.5)
    assert rig.dispatcher.driver.pose() == stopped


@pytest.mark.parametrize("use_sim_time", [False, True], ids=["ros-time", "sim-time-without-clock"])
def test_a_killed_cli_loses_its_command_and_the_robot_stops(rig_factory, use_sim_time):
    """Also with use_sim_time given at start and no /clock (a ROS clock that stands still): the watch runs on
    wall-clock time."""
    client_lost_s = 2.0
    rig = rig_factory(fetch_farthest_box, sim_time_scale=1.0, client_lost_s=client_lost_s, use_sim_time=use_sim_time)
    assert rig.language.get_clock().ros_time_is_active == use_sim_time
    cli = heracles("command", "Bring me the farthest box.", "--execute", "--namespace", NS)
    rig.progress.wait(lambda p: p.state == "started", 60.0, what="the robot to start walking")
    killed = time.monotonic()
    cli.kill()
    cli.communicate(timeout=10)
    rig.progress.wait(lambda p: p.state == "cancelled", client_lost_s + LEASE_S + 1.0, what="the plan to be cancelled")
    assert time.monotonic() - killed < client_lost_s + LEASE_S + 1.0
    reason = wait_for_command_end(rig, 5.0)
    assert reason.startswith("client_lost: /heracles_cli_"), reason


# -- acceptance under pressure ------------------------------------------------------------------------------
def test_a_burst_of_goals_and_cancels_is_answered_every_one(rig_factory):
    from action_msgs.srv import CancelGoal
    from rclpy.qos import QoSProfile

    rig = rig_factory(lambda request: slow(1.0, say("<answer>(holding O1)</answer>")))
    roomy = QoSProfile(depth=100)
    client = action_client(rig.probe, ExecuteCommand, f"{NS}/execute_command", goal_service_qos_profile=roomy,
                          cancel_service_qos_profile=roomy, result_service_qos_profile=roomy)
    cancels = rig.probe.create_client(CancelGoal, f"{NS}/execute_command/_action/cancel_goal", qos_profile=roomy)
    assert client.wait_for_server(timeout_sec=10.0) and cancels.wait_for_service(timeout_sec=10.0)
    goals = [client.send_goal_async(ExecuteCommand.Goal(instruction="Fetch O1.", command_id=f"burst-{i}"))
             for i in range(20)]
    asked = [cancels.call_async(CancelGoal.Request()) for _ in range(50)]
    wait_until(lambda: all(f.done() for f in goals), 30.0, "an answer to every goal")
    wait_until(lambda: all(f.done() for f in asked), 30.0, "an answer to every cancel")
    accepted = [f.result() for f in goals if f.result().accepted]
    assert accepted  # (one at a time: the cancels free the slot, so a later goal of the burst may run too)
    for handle in accepted:
        status, _ = goal_result(handle, 30.0)
        assert status in (GoalStatus.STATUS_CANCELED, GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_ABORTED)
    refused = {f"burst-{i}" for i, f in enumerate(goals) if not f.result().accepted}
    wait_until(lambda: refused <= {r.command_id for r in rig.rejections.messages}, 10.0,
               "a published reason for every refused goal")
    assert all(f.result() is not None for f in asked)
    client.destroy()


def test_an_8_mb_instruction_is_refused_as_invalid_and_the_node_goes_on(rig_factory):
    rig = rig_factory(lambda request: say("<answer>(holding O1)</answer>"))
    huge = rig.send("Fetch O1. " * 800_000, command_id="huge", execute=False)
    assert not huge.accepted
    refusal = rig.rejection("huge")
    assert refusal.code == "invalid" and "characters long; at most 4,000 are taken" in refusal.reason
    assert len(refusal.instruction) < 5000
    after = rig.send("Fetch O1.", execute=False)
    assert after.accepted and goal_result(after, 30.0)[1].outcome == "planned"


def test_an_id_or_client_node_out_of_its_bound_is_refused_and_confirm_names_the_bound(rig_factory):
    rig = rig_factory(lambda request: say("<answer>(holding O1)</answer>"))
    forged = rig.send("Fetch O1.", command_id="forged", client_node="/cli\n[INFO] all clear", execute=False)
    assert not forged.accepted
    refusal = rig.rejection("forged")
    assert (refusal.code, refusal.reason) == (
        "invalid", "client_node must be one line of printable characters (it holds a control character)")
    long_id = rig.send("Fetch O1.", command_id="c" * 257, execute=False)
    assert not long_id.accepted
    refusal = rig.rejections.wait(lambda r: r.reason.startswith("command_id is 257 characters long"), 5.0)
    assert refusal.code == "invalid"
    reply = call_service(rig.confirm, Confirm.Request(command_id="c" * 10_000, approve=True))
    assert not reply.success and reply.message == "command_id is 10,000 characters long; at most 256 are taken"
    assert rig.server.requests == []


def test_two_goals_arriving_together_never_both_run(rig_factory):
    import threading

    rig = rig_factory(lambda request: slow(1.0, say("<answer>(holding O1)</answer>")))
    together = threading.Barrier(2, timeout=10.0)
    get_agent = rig.language.commands._get_agent

    def meet(*args: Any) -> Any:
        together.wait()  # both goal callbacks are inside acceptance at the same moment
        return get_agent(*args)

    rig.language.commands._get_agent = meet  # type: ignore[method-assign]
    futures = [rig.commands.send_goal_async(ExecuteCommand.Goal(instruction="Fetch O1.", command_id=f"twin-{i}"))
               for i in range(2)]
    wait_until(lambda: all(f.done() for f in futures), 20.0, "both goal responses")
    assert sorted(f.result().accepted for f in futures) == [False, True]
    loser = next(f"twin-{i}" for i, f in enumerate(futures) if not f.result().accepted)
    assert rig.rejection(loser).code == "busy"


def test_a_command_while_the_robot_is_stopped_is_refused_at_once(rig_factory):
    from heracles_ros.msg import StopState

    rig = rig_factory(lambda request: say("<answer>(holding O1)</answer>"))
    stop = rig.probe.create_publisher(StopState, f"{NS}/stop_state", latched(1))
    stop.publish(StopState(stopped=True, reason="operator pressed stop", driver="sim"))
    wait_until(lambda: rig.language.commands.stopped() is not None, 10.0, "the stop to reach the language server")
    began = time.monotonic()
    goal = rig.send("Fetch O1.", command_id="while-stopped")
    assert not goal.accepted and time.monotonic() - began < 2.0
    refusal = rig.rejection("while-stopped")
    assert refusal.code == "stopped" and "operator pressed stop" in refusal.reason
    assert not rig.server.requests and rig.progress.count == 0
    cli = heracles("command", "Fetch O1.", "--execute", "--namespace", NS)
    _, err = cli.communicate(timeout=60)
    assert cli.returncode == 1 and "rejected (stopped): the robot is stopped (operator pressed stop)" in err, err
    planned = rig.send("Fetch O1.", execute=False)  # planning moves nothing: still served
    assert goal_result(planned, 30.0)[1].outcome == "planned"
    stop.publish(StopState(stopped=False, reason="resumed by test", driver="sim"))
    wait_until(lambda: rig.language.commands.stopped() is None, 10.0, "the resume")
    resumed = rig.send("Fetch O1.")
    assert resumed.accepted and goal_result(resumed, 60.0)[1].outcome == "succeeded"


def test_a_stop_while_the_model_plans_ends_the_command_before_any_plan_is_sent(rig_factory):
    from heracles_ros.msg import StopState

    rig = rig_factory(lambda request: slow(2.0, say("<answer>(holding O1)</answer>")))
    stop = rig.probe.create_publisher(StopState, f"{NS}/stop_state", latched(1))
    goal = rig.send("Fetch O1.", command_id="stopped-while-planning")
    assert goal.accepted
    stop.publish(StopState(stopped=True, reason="operator pressed stop", driver="sim"))  # the model is thinking
    _, result = goal_result(goal, 30.0)
    assert result.outcome == "stopped"
    assert result.reason == "the robot was stopped before the plan was sent (operator pressed stop); nothing moved"
    time.sleep(0.3)
    assert rig.progress.count == 0  # the dispatcher (not stopped itself here) never got the plan


# -- confirmation and cancel timing -------------------------------------------------------------------------
def test_a_cancel_while_waiting_for_confirmation_ends_canceled_within_a_second(rig_factory):
    rig = rig_factory(fetch_farthest_box, require_confirmation=True)
    feedback = FeedbackLog()
    goal = rig.send("Bring me the farthest box.", feedback=feedback)
    wait_for_confirm(feedback)
    began = time.monotonic()
    cancel_goal(goal)
    status, result = goal_result(goal, 5.0)
    assert time.monotonic() - began < 1.0
    assert (status, result.outcome) == (GoalStatus.STATUS_CANCELED, "cancelled")
    assert result.reason == "cancelled while waiting for confirmation; nothing moved"
    time.sleep(0.3)
    assert rig.progress.count == 0


def test_confirm_is_taken_only_after_the_plan_was_shown(rig_factory):
    rig = rig_factory(fetch_farthest_box, require_confirmation=True)
    early: list[Any] = []
    publish = rig.language.commands._feedback

    def confirm_too_early(handle: Any, stage: str, message: str, **fields: Any) -> None:
        if stage == "confirm":  # the plan is about to be shown: an approval now approves nothing seen
            early.append(call_service(rig.confirm, Confirm.Request(approve=True), timeout_s=5.0))
        publish(handle, stage, message, **fields)

    rig.language.commands._feedback = confirm_too_early  # type: ignore[method-assign]
    feedback = FeedbackLog()
    goal = rig.send("Bring me the farthest box.", feedback=feedback)
    wait_for_confirm(feedback)
    assert len(early) == 1 and not early[0].success and "not waiting for confirmation" in early[0].message
    time.sleep(0.3)
    assert rig.progress.count == 0
    assert call_service(rig.confirm, Confirm.Request(approve=True)).success
    assert goal_result(goal, 60.0)[1].outcome == "succeeded"


def test_a_cancel_while_grounding_ends_within_the_current_model_turn(rig_factory):
    turn_s = 2.0
    rig = rig_factory(lambda request: slow(turn_s, call(BOXES)), max_tool_calls=5)
    goal = rig.send("Fetch a box.")
    wait_until(lambda: len(rig.server.requests) >= 1, 10.0, "the first model turn")
    time.sleep(0.2)
    began = time.monotonic()
    cancel_goal(goal)
    status, result = goal_result(goal, 20.0)
    elapsed = time.monotonic() - began
    assert (status, result.outcome) == (GoalStatus.STATUS_CANCELED, "cancelled")
    assert elapsed < turn_s + 1.5, f"the cancel took {elapsed:.1f} s"
    assert len(rig.server.requests) == 1 and rig.progress.count == 0


# -- the language server as its own process: shutdown with work in flight, one per robot ------------------------
@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    lines: list[str]
    commands: ActionClient
    progress: Collector[DispatchProgress]
    dispatcher: DispatcherNode
    model: ScriptedLLMServer

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def send(self, goal: ExecuteCommand.Goal, timeout_s: float) -> Any:
        """:func:`send_goal`, failing with what the server process said when its answer does not come."""
        try:
            return send_goal(self.commands, goal, timeout_s=timeout_s)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; the language server's output:\n{self.output}") from exc


def start_language_server(domain: int, *params: str) -> tuple[subprocess.Popen[str], list[str]]:
    import threading

    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONPATH": str(REPO)}
    args = [arg for param in params for arg in ("-p", param)]
    process = subprocess.Popen(
        [sys.executable, "-m", "heracles_ros.nodes.language_server", "--ros-args", "-r", f"__ns:={NS}", *args],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    lines: list[str] = []
    threading.Thread(target=lambda: lines.extend(iter(process.stdout.readline, "")), daemon=True).start()  # type: ignore[union-attr]
    return process, lines


@pytest.fixture
def server_process(ros_domain_id, falkordb_uri, graph_name, small_store, robot_at_start) -> Iterator:
    """``start(script, *params)``: the dispatcher (sim, real time) here, the language server in its own process."""
    stack = ExitStack()

    def start(script: Any, *params: str) -> ServerProcess:
        server = ScriptedLLMServer(script).start()
        stack.callback(server.stop)
        db = {"db_uri": falkordb_uri, "graph_name": graph_name}
        process, lines = start_language_server(
            ros_domain_id, *(f"{k}:={v}" for k, v in db.items()), f"base_url:={server.openai_base_url}",
            f"model:={server.model}", *params)

        def end() -> None:
            if process.poll() is None:
                process.kill()
                process.wait(10)
        stack.callback(end)
        robot = DispatcherNode(namespace=NS, parameter_overrides=[
            Parameter(k, value=v) for k, v in {**db, "start_place": START, "sim_time_scale": 1.0,
                                               "sim_speed_mps": 1.0}.items()])
        probe = rclpy.create_node("probe")
        rig = ServerProcess(process, lines, action_client(probe, ExecuteCommand, f"{NS}/execute_command"),
                            Collector(probe, DispatchProgress, f"{NS}/dispatch_progress", 100), robot, server)
        stack.enter_context(spinning(robot, probe, num_threads=8))
        assert rig.commands.wait_for_server(timeout_sec=60.0), rig.output
        return rig

    with ros_session(ros_domain_id), stack:
        yield start


@pytest.mark.parametrize("signals", [[signal.SIGINT], [signal.SIGINT, signal.SIGINT], [signal.SIGTERM]],
                         ids=["sigint", "sigint-twice", "sigterm"])
def test_stopping_the_language_server_mid_walk_cancels_the_plan_and_exits_within_its_bound(server_process, signals):
    rig = server_process(fetch_farthest_box)
    goal = rig.send(ExecuteCommand.Goal(instruction="Bring me the farthest box.", execute=True), timeout_s=30.0)
    assert goal.accepted
    finished = goal.get_result_async()  # asked before the stop: the server answers it as it aborts the goal
    rig.progress.wait(lambda p: p.state == "started", 60.0, what="the robot to start walking")
    began = time.monotonic()
    for number in signals:
        rig.process.send_signal(number)
        time.sleep(0.05)  # a second one lands while the first stop runs (it cancels a plan: a round trip)
    code = rig.process.wait(timeout=10.0)
    took = time.monotonic() - began
    assert took < 5.0 + 0.5, f"the language server took {took:.1f} s to exit:\n{rig.output}"
    assert code == 0, rig.output
    rig.progress.wait(lambda p: p.state == "cancelled", 5.0, what="the dispatcher to cancel the plan")
    stopped = rig.dispatcher.driver.pose()
    time.sleep(0.5)
    assert rig.dispatcher.driver.pose() == stopped
    assert "Traceback" not in rig.output and "KeyboardInterrupt" not in rig.output, rig.output
    if len(signals) > 1:
        assert "SIGINT again: already stopping (SIGINT), the stop goes on" in rig.output, rig.output
    wait_until(finished.done, 5.0, "the aborted goal's result")
    response = finished.result()
    assert response.status == GoalStatus.STATUS_ABORTED and response.result.outcome == "cancelled"
    assert response.result.reason.startswith("shutting_down: the language server is shutting down (while executing)")


def test_a_second_language_server_for_the_same_robot_refuses_to_start(server_process, falkordb_uri, graph_name,
                                                                        ros_domain_id):
    rig = server_process(lambda request: say("<answer>(holding O1)</answer>"))
    second, lines = start_language_server(ros_domain_id, f"db_uri:={falkordb_uri}", f"graph_name:={graph_name}",
                                          "base_url:=http://127.0.0.1:9")
    try:
        code = second.wait(timeout=60.0)
    finally:
        if second.poll() is None:
            second.kill()
            second.wait()
    time.sleep(0.2)
    output = "".join(lines)
    assert code == 1, output
    assert f"another language_server already runs for this robot ({NS}/language_server, on " in output, output
    assert "one language_server per robot" in output
    assert rig.process.poll() is None  # the first one serves on


def test_the_cli_says_so_within_seconds_when_the_language_server_dies(server_process):
    rig = server_process(lambda request: slow(30.0, say("<answer>(holding O1)</answer>")))
    cli = heracles("command", "Fetch O1.", "--execute", "--namespace", NS, "--server-timeout", "60")
    wait_until(lambda: len(rig.model.requests) >= 1, 60.0, "the command to reach the model")  # a 30 s turn
    killed = time.monotonic()
    rig.process.kill()
    _, err = cli.communicate(timeout=30)
    assert time.monotonic() - killed < 8.0, err
    assert cli.returncode == 1 and "the language_server of /spot1/execute_command is gone" in err, err


def test_a_result_stays_available_for_a_late_client(rig_factory):
    """Kilted's rclpy forgets a finished goal after 10 s by default; a reconnecting CLI must still get it."""
    rig = rig_factory(lambda request: say("<answer>(holding O1)</answer>"))
    goal = rig.send("Fetch O1.", execute=False)
    assert goal_result(goal, 30.0)[1].outcome == "planned"
    time.sleep(12.0)
    status, result = goal_result(goal, 10.0)  # asked again, as a late client would
    assert (status, result.outcome) == (GoalStatus.STATUS_SUCCEEDED, "planned")
