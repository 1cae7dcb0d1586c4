"""The dispatcher's simulated Hydra over DDS: a walk past a hidden object reaches the real mirror.

The dispatcher (sim driver, ``sim_world`` = the small scene plus a fire extinguisher the map lacks) and the
dsg_mirror run as real nodes on one namespaced topic; the plan comes from the real planner.
"""
from __future__ import annotations

import pytest
import rclpy
from heracles_ros.action import ExecutePlan
from heracles_ros.msg import MirrorStatus
from hydra_msgs.msg import DsgUpdate
from rclpy.parameter import Parameter
from support.actions import goal_result, send_goal
from support.ros import Collector, action_client, qos, ros_session, spinning, wait_until

from heracles_ros.nodes.dispatcher import DispatcherNode
from heracles_ros.nodes.dsg_mirror import DsgMirrorNode
from heracles_ros.planning.planner import Planner
from heracles_ros.ros.plan_msgs import plan_to_msg
from heracles_ros.scene.synthetic import generate_scene
from heracles_ros.search.worlds import hide_objects

pytestmark = pytest.mark.backends("falkordb")

NS = "/seer"
TOPIC = f"{NS}/hydra/backend/dsg"


def fire_extinguishers(store) -> list[dict]:
    return store.query("MATCH (o:Object) WHERE o.class = 'fire extinguisher' RETURN o.nodeSymbol AS symbol")


def test_a_walk_past_a_hidden_object_reaches_the_mirror_in_hydras_numbered_snapshots(
        ros_domain_id, falkordb_uri, graph_name, small_store, tmp_path):
    world = generate_scene("small", 0)
    hidden = hide_objects(world, "fire extinguisher", ["P77"])  # R3, (7, 7); the robot starts at P0 in R0
    world.save(str(tmp_path / "world.json"))
    common = {"db_uri": falkordb_uri, "graph_name": graph_name}
    with ros_session(ros_domain_id):
        mirror = DsgMirrorNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in {
            **common, "dsg_topic": TOPIC}.items()])
        dispatcher = DispatcherNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in {
            **common, "start_place": "P0", "sim_world": str(tmp_path / "world.json"), "sim_dsg_topic": TOPIC,
            "sim_hydra_period_s": 0.2, "sim_time_scale": 10.0}.items()])
        probe = rclpy.create_node("probe")
        snapshots = Collector(probe, DsgUpdate, TOPIC, qos(50))
        status = Collector(probe, MirrorStatus, f"{NS}/mirror_status", 50)
        plans = action_client(probe, ExecutePlan, f"{NS}/execute_plan")
        with spinning(mirror), spinning(dispatcher, num_threads=dispatcher.executor_threads()), spinning(probe):
            assert plans.wait_for_server(timeout_sec=10.0)
            wait_until(lambda: snapshots.count >= 2, 10.0, "the simulated Hydra's first snapshots")
            assert fire_extinguishers(small_store) == []  # not seen yet: the snapshots hold the map only
            plan = Planner(small_store).plan("(at-place P77)", from_symbol="P0")
            assert plan.ok, plan.reason
            handle = send_goal(plans, ExecutePlan.Goal(plan=plan_to_msg(plan, plan_id="walk", frame_id="map")))
            assert handle.accepted
            _, result = goal_result(handle, 30.0)
            assert result.result.status == "succeeded"
            wait_until(lambda: fire_extinguishers(small_store), 15.0, "the fire extinguisher in the mirror")
            assert [row["symbol"] for row in fire_extinguishers(small_store)] == hidden
            assert dispatcher.hydra_feed is not None and dispatcher.hydra_feed.hydra.seen == hidden
            numbers = [m.sequence_number for m in snapshots.messages]
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers))) and numbers[0] in (1, 2)
            assert all(m.full_update and m.header.frame_id == "map" for m in snapshots.messages)
            assert status.latest is not None and status.latest.last_error == ""


def test_without_a_world_the_dispatcher_publishes_no_snapshots(ros_domain_id, falkordb_uri, graph_name, small_store):
    with ros_session(ros_domain_id):
        dispatcher = DispatcherNode(namespace=NS, parameter_overrides=[Parameter(k, value=v) for k, v in {
            "db_uri": falkordb_uri, "graph_name": graph_name, "start_place": "P0", "sim_dsg_topic": TOPIC,
            }.items()])
        try:
            assert dispatcher.hydra_feed is None
            assert dispatcher.count_publishers(TOPIC) == 0
        finally:
            dispatcher.destroy_node()
