"""``execute_command`` with ``search_for`` over real DDS: the language_server's command searches for what the map
lacks through the dispatcher (sim Spot with a simulated Hydra whose world holds fire extinguishers the map lacks),
the real dsg_mirror on the namespace's own topic, then grounds the instruction (scripted model) and carries it out.
FalkorDB holds the map; Fast Downward plans every leg and the command's plan."""
from __future__ import annotations

import json
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
from heracles_ros.msg import CommandRejection
from heracles_ros.srv import Confirm
from rclpy.action import ActionClient
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger
from support.actions import FeedbackLog, cancel_goal, goal_result, send_goal
from support.ros import Collector, action_client, call_service, ros_session, spinning, wait_until
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, say

from heracles_ros.client import HeraclesClient
from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.dsg_mirror import DsgMirrorNode
from heracles_ros.nodes.language_server import LanguageServerNode
from heracles_ros.ros.qos import latched
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.search.worlds import hide_objects

pytestmark = pytest.mark.backends("falkordb")

NS = "/seeker"
TOPIC = f"{NS}/hydra/backend/dsg"
#: The hidden fire extinguishers: O900 at P77 (room R3), O901 at P47 (room R1).
HIDDEN_ROOMS = {"O900": "R3", "O901": "R1"}


def of_class(name: str) -> str:
    return f"MATCH (o:Object {{class: '{name}'}}) RETURN o.nodeSymbol AS o ORDER BY o"


def fetch(request: RecordedRequest) -> Turn:
    """The model as it grounds "bring me a fire extinguisher" (or a chair): a query, then the goal."""
    asked = " ".join(str(m.get("content")) for m in request.messages if m.get("role") == "user")
    wanted = "chair" if "chair" in asked else "fire extinguisher"
    if not request.tool_results():
        return call(of_class(wanted))
    rows, _ = json.JSONDecoder().raw_decode(request.tool_results()[-1])  # an empty result carries a hint after
    return say(f"<answer>(holding {rows[0]['o']})</answer>" if rows else
               f'<answer>CLARIFY("The map has no {wanted}; search for one?", <>, "{wanted}")</answer>')


@dataclass
class Rig:
    language: LanguageServerNode
    dispatcher: DispatcherNode
    probe: Node
    server: ScriptedLLMServer
    commands: ActionClient
    rejections: Collector[CommandRejection]

    def send(self, instruction: str, feedback: FeedbackLog | None = None, **options: Any) -> Any:
        goal = ExecuteCommand.Goal(instruction=instruction, **{"execute": True, **options})
        return send_goal(self.commands, goal, feedback=feedback)

    def robot_xy(self, store: Any) -> tuple[float, float]:
        row = store.query("MATCH (r:Robot {nodeSymbol: 'robot'}) RETURN r.x AS x, r.y AS y")[0]
        return float(row["x"]), float(row["y"])


@pytest.fixture
def rig_factory(ros_domain_id, falkordb_uri, graph_name, small_store, tmp_path: Path) -> Iterator:
    """``start(time_scale, **language_params)``: mirror, dispatcher with the world, language server in NS."""
    world = generate_scene("small", 0)
    assert hide_objects(world, "fire extinguisher", ["P77", "P47"]) == list(HIDDEN_ROOMS)
    world.save(str(tmp_path / "world.json"))
    stack = ExitStack()

    def start(time_scale: float, **params: Any) -> Rig:
        server = ScriptedLLMServer(fetch).start()
        stack.callback(server.stop)
        db = {"db_uri": falkordb_uri, "graph_name": graph_name}
        mirror = DsgMirrorNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in {
            **db, "dsg_topic": TOPIC, "instance_check_s": 0.0}.items()])
        robot = DispatcherNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in {
            **db, "start_place": "P0", "sim_world": str(tmp_path / "world.json"), "sim_dsg_topic": TOPIC,
            "sim_hydra_period_s": 0.2, "sim_time_scale": time_scale}.items()])
        language = LanguageServerNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in {
            **db, "llm": "openai", "model": server.model, "base_url": server.openai_base_url, "instance_check_s": 0.0,
            **params}.items()])
        probe = rclpy.create_node("probe")
        rig = Rig(language, robot, probe, server, action_client(probe, ExecuteCommand, f"{NS}/execute_command"),
                  Collector(probe, CommandRejection, f"{NS}/command_rejections", latched(10)))
        stack.enter_context(spinning(mirror, robot, language, probe, num_threads=10))
        assert rig.commands.wait_for_server(timeout_sec=10.0)
        wait_until(lambda: language.commands.plans.server_is_ready(), 10.0, "the dispatcher's execute_plan")
        wait_until(lambda: language.count_subscribers(f"{NS}/command_rejections") >= 1, 10.0,
                   "the probe on command_rejections")
        return rig

    with ros_session(ros_domain_id), stack:
        yield start


def test_a_command_searches_for_what_the_map_lacks_then_grounds_and_carries_it_out(rig_factory, small_store):
    rig = rig_factory(10.0)
    feedback = FeedbackLog()
    goal = rig.send("Bring me a fire extinguisher.", feedback, search_for="fire extinguisher", command_id="fe")
    assert goal.accepted
    status, result = goal_result(goal, 150.0)
    assert (status, result.outcome) == (GoalStatus.STATUS_SUCCEEDED, "succeeded"), result.reason
    assert result.found in HIDDEN_ROOMS and result.found_where == HIDDEN_ROOMS[result.found], result
    assert result.searched and result.search_distance_m > 3.0
    # Then the instruction, grounded on the map that now holds it, planned and carried out.
    assert (result.goal, result.holding) == (f"(holding {result.found})", result.found)
    stages = [m.stage for m in feedback.messages]
    assert stages[0] == "search" and "looking in R" in feedback.messages[0].message
    assert stages.index("grounding") > max(i for i, s in enumerate(stages) if s == "search")
    assert "executing" in stages[:stages.index("grounding")]  # the legs ran as plans at the dispatcher
    assert any(m.stage == "search" and m.message.startswith(f"found {result.found} in ") for m in feedback.messages)
    plans = [m.plan.plan_id for m in feedback.messages if m.stage == "plan"]
    assert plans == ["fe-plan"]  # the legs' plans are the search's own, not shown as the command's

    # What the map holds already is not searched for; search_for without execute is refused at once.
    chair = small_store.query(of_class("chair"))[0]["o"]
    status, result = goal_result(rig.send("Bring me a chair.", search_for="chairs"), 60.0)
    assert (result.outcome, result.found, list(result.searched)) == ("succeeded", chair, []), result.reason
    refused = rig.send("Bring me a fire extinguisher.", search_for="fire extinguisher", execute=False,
                       command_id="planned-search")
    assert not refused.accepted
    rejection = rig.rejections.wait(lambda r: r.command_id == "planned-search", 5.0, what="the rejection")
    assert rejection.code == "invalid" and "search_for" in rejection.reason


def test_a_command_for_what_the_map_lacks_asks_back_proposing_the_search_and_the_approval_runs_it(rig_factory):
    """The ask-back: without search_for the model finds no fire extinguisher and names what the map lacks; the
    result says so and proposes the search; the operator's yes is the same command with search_for."""
    rig = rig_factory(10.0)
    status, result = goal_result(rig.send("Bring me a fire extinguisher.", command_id="ask"), 60.0)
    assert (result.outcome, result.missing, list(result.candidates)) == ("clarify", "fire extinguisher", []), result
    assert "The map has no fire extinguisher" in result.clarification
    assert 'search_for "fire extinguisher"' in result.reason and "--search 'fire extinguisher'" in result.reason
    assert rig.dispatcher._active is None and result.searched == []  # asked, nothing moved
    status, result = goal_result(rig.send("Bring me a fire extinguisher.", search_for=result.missing), 150.0)
    assert (status, result.outcome) == (GoalStatus.STATUS_SUCCEEDED, "succeeded"), result.reason
    assert result.found in HIDDEN_ROOMS and result.holding == result.found


def test_heracles_stop_during_a_command_s_search_stops_it_and_the_command_is_never_grounded(rig_factory, small_store):
    rig = rig_factory(1.0)  # real time: the first leg is still walking when the stop comes
    stop = rig.probe.create_client(Trigger, f"{NS}/stop")
    goal = rig.send("Bring me a fire extinguisher.", search_for="fire extinguisher")
    assert goal.accepted
    wait_until(lambda: rig.dispatcher._active is not None, 60.0, "the search's first leg running")
    assert call_service(stop, Trigger.Request(), 10.0).success
    status, result = goal_result(goal, 30.0)
    assert (status, result.outcome) == (GoalStatus.STATUS_ABORTED, "stopped"), result.reason
    assert "the search for fire extinguisher ended stopped" in result.reason and len(result.searched) == 1
    assert rig.server.requests == []  # the instruction never reached the model
    still = rig.robot_xy(small_store)
    time.sleep(1.0)
    assert rig.robot_xy(small_store) == still


def test_a_confirmed_search_cancelled_while_walking_ends_cancelled_with_the_robot_still(rig_factory, small_store):
    rig = rig_factory(1.0, require_confirmation=True)
    confirm = rig.probe.create_client(Confirm, f"{NS}/confirm")
    feedback = FeedbackLog()
    goal = rig.send("Bring me a fire extinguisher.", feedback, search_for="fire extinguisher", command_id="c1")
    assert goal.accepted
    wait_until(lambda: any(m.stage == "confirm" for m in feedback.messages), 30.0, "the tour to confirm")
    asked = next(m for m in feedback.messages if m.stage == "confirm")
    assert "look for fire extinguisher, in R" in asked.message and rig.dispatcher._active is None  # nothing moved
    assert call_service(confirm, Confirm.Request(command_id="c1", approve=True), 10.0).success
    wait_until(lambda: rig.dispatcher._active is not None, 30.0, "the confirmed search walking")
    cancel_goal(goal)
    status, result = goal_result(goal, 30.0)
    assert (status, result.outcome) == (GoalStatus.STATUS_CANCELED, "cancelled"), result.reason
    assert "cancelled while executing" in result.reason and rig.server.requests == []
    still = rig.robot_xy(small_store)
    time.sleep(1.0)
    assert rig.robot_xy(small_store) == still


def test_a_command_s_search_for_what_the_world_lacks_ends_not_found_listing_the_rooms(rig_factory):
    """Through the client API (HeraclesClient.command's search_for), as the CLI and the console send it."""
    rig = rig_factory(20.0)
    started = time.monotonic()
    with HeraclesClient(NS, node_name="search_client") as client:
        client.command("Bring me a unicorn.", search_for="unicorn")
        result = client.result(180.0)
    assert result is not None and result.outcome == "failed", result
    assert result.reason.startswith("unicorn not found: ") and result.found == ""
    assert sorted(result.searched) == ["R0", "R1", "R2", "R3"], result  # the shed cannot be reached
    assert rig.server.requests == [] and time.monotonic() - started < 150
