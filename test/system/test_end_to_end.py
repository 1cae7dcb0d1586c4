"""The whole system over real DDS: Hydra snapshot -> mirror -> language server -> planner -> dispatcher -> database.

All three nodes (dsg_mirror, language_server, dispatcher with the sim driver)
run in this process under one robot namespace, talking only over topics,
services and actions (the operator's command is an ``execute_command`` goal,
the language server's plan an ``execute_plan`` goal), on a real FalkorDB
graph; the scene arrives the way Hydra sends it, as a ``hydra_msgs/DsgUpdate``
(the test-only copy of the interface). Only the hosted model is replaced, by
the scripted server; every query it asks for runs on the live database and its
answers are built from what came back.
"""
from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

import numpy as np
import rclpy
import spark_dsg as dsg
from action_msgs.msg import GoalStatus
from heracles_ros.action import ExecuteCommand
from heracles_ros.msg import DispatchProgress, DispatchResult, MirrorStatus
from heracles_ros.srv import Ask
from hydra_msgs.msg import DsgUpdate
from rclpy.parameter import Parameter
from support.actions import FeedbackLog, goal_result, send_goal
from support.ros import (
    Collector,
    action_client,
    call_service,
    qos,
    ros_session,
    spinning,
    wait_for_subscribers,
    wait_until,
)
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, say

from heracles_ros.formats.sldp import parse_sldp
from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.dsg_mirror import DsgMirrorNode
from heracles_ros.nodes.language_server import LanguageServerNode
from heracles_ros.scene.synthetic import generate_scene

NS = "/spot1"
DSG_TOPIC = "/hydra/backend/dsg"
START = "P0"

COUNT_BOXES = "MATCH (o:Object {class: 'box'}) RETURN count(o) AS n"
#: The office box whose place is farthest from where the robot is recorded: a walk long enough to interrupt.
FARTHEST_BOX = (
    "MATCH (r:Robot {nodeSymbol: 'robot'}), "
    "(:Room {class: 'office'})-[:CONTAINS]->(p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'box'}) "
    "RETURN o.nodeSymbol AS box, (p.x - r.x) * (p.x - r.x) + (p.y - r.y) * (p.y - r.y) AS d2 "
    "ORDER BY d2 DESC, box LIMIT 1"
)
HELD = "MATCH (:Robot {nodeSymbol: 'robot'})-[:HOLDING]->(o:Object) RETURN o.nodeSymbol AS held"
ROBOT_LINKS = (
    "MATCH (r:Robot {nodeSymbol: 'robot'}) "
    "OPTIONAL MATCH (r)-[:HOLDING]->(o) OPTIONAL MATCH (r)-[:AT]->(p) "
    "RETURN r.holding AS holding, r.place AS place, o.nodeSymbol AS held, p.nodeSymbol AS at"
)


def model(request: RecordedRequest) -> Turn:
    """The scripted model: one query per request, then an answer built from the rows it got back."""
    question = request.messages[1]["content"]
    results = request.tool_results()
    if "How many boxes" in question:
        if not results:
            return call(COUNT_BOXES)
        return say(f"<answer>{json.loads(results[-1])[0]['n']}</answer>")
    if "Bring me the box" in question:
        if not results:
            return call(FARTHEST_BOX, text="The box farthest from me.")
        return say(f"<answer>(holding {json.loads(results[-1])[0]['box']})</answer>")
    if "What are you holding" in question:
        if not results:
            return call(HELD)
        rows = json.loads(results[-1])
        return say(f"<answer>{rows[0]['held'] if rows else 'nothing'}</answer>")
    return say("<answer>unknown</answer>")


def snapshot(graph: dsg.DynamicSceneGraph, sequence: int) -> DsgUpdate:
    msg = DsgUpdate()
    msg.header.frame_id = "map"
    msg.layer_contents = graph.to_binary(include_mesh=False)
    msg.full_update = True
    msg.sequence_number = sequence
    return msg


@contextlib.contextmanager
def destroyed(executor: Any, nodes: list[Any]) -> Iterator[None]:
    """Take every node in ``nodes`` (filled inside the block) off ``executor`` and destroy it on the way out,
    so none leaks into later tests."""
    try:
        yield
    finally:
        for node in reversed(nodes):
            executor.remove_node(node)
            node.destroy_node()


def params(**values: Any) -> list[Parameter]:
    return [Parameter(name, value=value) for name, value in values.items()]


def test_a_question_and_a_command_run_through_every_node_and_survive_a_new_snapshot(
    ros_domain_id, db_uri, graph_name, store
):
    db = {"db_uri": db_uri, "graph_name": graph_name}
    scene = generate_scene("small", seed=0)
    with ScriptedLLMServer(model) as llm, ros_session(ros_domain_id):
        probe = rclpy.create_node("operator")
        dsg_pub = probe.create_publisher(DsgUpdate, DSG_TOPIC, qos(1))
        statuses: Collector[MirrorStatus] = Collector(probe, MirrorStatus, f"{NS}/mirror_status")
        progress: Collector[DispatchProgress] = Collector(probe, DispatchProgress, f"{NS}/dispatch_progress", 100)
        results: Collector[DispatchResult] = Collector(probe, DispatchResult, f"{NS}/dispatch_result")
        ask = probe.create_client(Ask, f"{NS}/ask")
        commands = action_client(probe, ExecuteCommand, f"{NS}/execute_command")
        mirror = DsgMirrorNode(namespace=NS, parameter_overrides=params(**db, dsg_topic=DSG_TOPIC, status_period_s=0.0))
        joined: list[Any] = []  # nodes added to the running executor; spinning() destroys only its own

        with spinning(mirror, probe, num_threads=8) as executor, destroyed(executor, joined):
            # 1. Hydra's snapshot is mirrored.
            wait_for_subscribers(dsg_pub)
            wait_until(lambda: mirror.count_subscribers(f"{NS}/mirror_status") >= 1, 10.0, "the status subscriber")
            dsg_pub.publish(snapshot(scene, 1))
            first = statuses.wait(lambda s: s.sequence == 1, 20.0, what="the first snapshot mirrored")
            assert first.last_error == "" and first.nodes > 0
            boxes = store.query(COUNT_BOXES)[0]["n"]
            assert boxes > 0

            # The dispatcher (sim Spot at P0) and the language server join the running system.
            dispatcher = DispatcherNode(namespace=NS, parameter_overrides=params(
                **db, start_place=START, sim_time_scale=4.0, sim_speed_mps=1.0))
            language = LanguageServerNode(namespace=NS, parameter_overrides=params(
                **db, llm="openai", model=llm.model, base_url=llm.openai_base_url))
            for node in (dispatcher, language):
                joined.append(node)
                executor.add_node(node)
            assert ask.wait_for_service(timeout_sec=10.0) and commands.wait_for_server(timeout_sec=10.0)
            wait_until(language.commands.plans.server_is_ready, 10.0, "the dispatcher's execute_plan action")

            # 2. A question, answered from the database.
            reply = call_service(ask, Ask.Request(question="How many boxes are there?", answer_type="number"))
            assert reply.error == "", reply.error
            assert reply.answer == str(boxes) and list(reply.queries) == [COUNT_BOXES]

            # 3. A command, executed through the action: goal -> plan -> the dispatcher runs it on the sim robot.
            target = store.query(FARTHEST_BOX)[0]["box"]
            instruction = "Bring me the box in the office farthest from you."
            feedback = FeedbackLog()
            order = send_goal(commands, ExecuteCommand.Goal(instruction=instruction, execute=True,
                                                            command_id="e2e"), feedback=feedback)
            assert order.accepted
            wait_until(lambda: any(m.stage == "executing" for m in feedback.messages), 30.0, "the plan to be sent")
            plan = next(m for m in feedback.messages if m.stage == "plan").plan
            assert plan.goal == f"(holding {target})" and plan.plan_id == "e2e-plan"
            assert plan.steps[-1].action == "pick" and plan.steps[-1].target_symbol == target

            # 4. Mid-run, Hydra sends a new snapshot: another object moved.
            progress.wait(lambda p: p.plan_id == plan.plan_id and p.state == "started", 10.0,
                          what="the plan to start")
            moved = next(s for s in (r["o"] for r in store.query(
                "MATCH (o:Object) RETURN o.nodeSymbol AS o ORDER BY o")) if s != target)
            node = scene.get_node(int(dsg.NodeSymbol(moved[0], int(moved[1:])).value))
            node.attributes.position = np.array([1.25, 1.5, 0.5])
            dsg_pub.publish(snapshot(scene, 2))
            second = statuses.wait(lambda s: s.sequence == 2, 20.0, what="the mid-run snapshot mirrored")
            assert second.last_error == "" and second.nodes_changed >= 1
            assert results.count == 0, "the plan finished before the snapshot: the walk is too short to test this"
            assert store.query("MATCH (:Robot {nodeSymbol: 'robot'})-[:AT]->(p) RETURN count(p) AS n") == [{"n": 1}]
            assert store.query("MATCH (o:Object {nodeSymbol: $s}) RETURN o.x AS x, o.y AS y",
                               {"s": moved}) == [{"x": 1.25, "y": 1.5}]

            # 5. The plan completes; the command's result says so; the database records the held object.
            status, outcome = goal_result(order, 30.0)
            assert (status, outcome.outcome, outcome.goal) == (GoalStatus.STATUS_SUCCEEDED, "succeeded",
                                                               f"(holding {target})"), outcome.reason
            assert outcome.holding == target and list(outcome.queries) == [FARTHEST_BOX]
            result = results.wait(lambda r: r.plan_id == plan.plan_id, 5.0, what="the plan's result")
            assert (result.status, result.success, result.holding) == ("succeeded", True, target), result.reason
            assert outcome.robot_place == result.robot_place
            steps = [m.step for m in feedback.messages if m.stage == "step"]
            assert [(s.state, s.step_index) for s in steps] == [(p.state, p.step_index) for p in progress.messages
                                                                if p.plan_id == plan.plan_id]
            assert store.query(HELD) == [{"held": target}]

            # 6. Another snapshot after the pick (Hydra still sees the box where it was): the robot's state stays.
            dsg_pub.publish(snapshot(scene, 3))
            third = statuses.wait(lambda s: s.sequence == 3, 20.0, what="the snapshot after the pick")
            assert third.last_error == ""
            links = store.query(ROBOT_LINKS)
            assert links == [{"holding": target, "place": result.robot_place, "held": target,
                              "at": result.robot_place}]

            # 7. "What are you holding?" is answered from the database, by the query the model chose.
            held = call_service(ask, Ask.Request(question="What are you holding?", answer_type="string"))
            assert held.error == "", held.error
            assert list(held.queries) == [HELD]
            assert parse_sldp(held.answer) == target == store.query(HELD)[0]["held"]
            tool_rows = json.loads(llm.requests[-1].tool_results()[-1])
            assert tool_rows == [{"held": target}]

