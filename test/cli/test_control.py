"""``heracles stop|resume|cancel`` as an operator runs them: separate processes, straight to a running dispatcher.

The dispatcher runs as its own process under a robot namespace (its console entry
point), so nothing but the dispatcher answers; the CLI is started the way a shell
starts it. Where the robot is comes from the dispatcher's robot marker.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import rclpy
from heracles_ros.action import ExecutePlan
from heracles_ros.msg import DispatchProgress, DispatchResult
from support.actions import goal_result, send_goal
from support.node_program import node_program, params
from support.ros import Collector, action_client, ros_session, spinning
from visualization_msgs.msg import MarkerArray

from heracles_ros.nodes.markers import NS_ROBOT
from heracles_ros.planning.planner import Planner
from heracles_ros.ros.plan_msgs import plan_to_msg

pytestmark = pytest.mark.backends("falkordb")


NS = "/spot7"
ROOT = Path(__file__).resolve().parents[2]


def heracles(domain: int, *argv: str) -> tuple[int, str, str, float]:
    """(exit status, stdout, stderr, seconds) of ``heracles ARGV`` run as its own process."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "heracles_ros.cli", *argv], env=env, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def robot_xy(markers: Collector[MarkerArray]) -> tuple[float, float]:
    for array in reversed(markers.messages):
        for marker in array.markers:
            if (marker.ns, marker.id) == (NS_ROBOT, 0) and marker.action == marker.ADD:
                return (marker.pose.position.x, marker.pose.position.y)
    raise AssertionError("no robot marker yet")


@pytest.fixture
def dispatcher(ros_domain_id, falkordb_uri, graph_name, small_store) -> Iterator[subprocess.Popen[str]]:
    with node_program("dispatcher", ros_domain_id, "-r", f"__ns:={NS}", *params(
            f"db_uri:={falkordb_uri}", f"graph_name:={graph_name}", "start_place:=P0")) as process:
        yield process


def test_stop_resume_and_cancel_reach_the_dispatcher_directly(ros_domain_id, dispatcher, small_store):
    far = small_store.query(
        "MATCH (p:MeshPlace) WHERE p.x < 12 RETURN p.nodeSymbol AS s, p.x + p.y AS d ORDER BY d DESC LIMIT 1"
    )
    plan = Planner(small_store).plan(f"(at-place {far[0]['s']})", from_symbol="P0")
    assert plan.ok, plan.reason
    with ros_session(ros_domain_id):
        probe = rclpy.create_node("probe")
        progress = Collector(probe, DispatchProgress, f"{NS}/dispatch_progress", 100)
        results = Collector(probe, DispatchResult, f"{NS}/dispatch_result", 10)
        markers = Collector(probe, MarkerArray, f"{NS}/plan_markers", 100)
        actions = action_client(probe, ExecutePlan, f"{NS}/execute_plan")
        with spinning(probe):
            assert actions.wait_for_server(timeout_sec=30.0), "the dispatcher did not come up"
            idle = heracles(ros_domain_id, "cancel", "--namespace", NS)
            assert idle[:2] == (1, "no plan is running: nothing to cancel\n"), idle
            goal = send_goal(actions, ExecutePlan.Goal(plan=plan_to_msg(plan, plan_id="walk")), timeout_s=30.0)
            assert goal.accepted
            progress.wait(lambda p: p.state == "started", 10.0, what="the walk to start")

            code, out, err, took = heracles(ros_domain_id, "stop", "--namespace", NS)
            assert code == 0 and out.startswith("stopped; plan walk cancelled"), (out, err)
            # On the dispatcher's machine the stop takes its local socket: no rclpy start-up, no discovery.
            assert took < 0.5, took
            assert goal_result(goal, 10.0)[1].result.reason == "stopped by the operator (stop on the local socket)"
            assert goal_result(goal, 10.0)[1].result.status == "stopped"
            time.sleep(0.3)  # markers published before the stop may still be on their way
            here = robot_xy(markers)
            time.sleep(1.0)
            assert robot_xy(markers) == here
            refused = send_goal(actions, ExecutePlan.Goal(plan=plan_to_msg(plan, plan_id="again")))
            assert not refused.accepted
            assert results.wait(lambda r: r.plan_id == "again", 5.0).status == "stopped"

            code, out, _, _ = heracles(ros_domain_id, "stop", "--namespace", NS, "--hard")
            assert (code, out) == (0, "hard-stopped; plans are refused until resume\n")  # a soft stop hardened
            code, out, _, _ = heracles(ros_domain_id, "stop", "--namespace", NS)
            assert (code, out) == (0, "already stopped (hard); plans are refused until resume\n")
            code, out, _, _ = heracles(ros_domain_id, "resume", "--namespace", NS, "--operator", "ana",
                                       "--reason", "path clear")  # fmt: skip
            assert (code, out) == (0, "resumed by ana: path clear; plans are accepted again\n")
            code, out, _, _ = heracles(ros_domain_id, "resume", "--namespace", NS, "--operator", "ana", "--json")
            assert code == 1 and json.loads(out) == {"success": False, "message": "not stopped: nothing to resume"}
            code, _, err, _ = heracles(ros_domain_id, "resume", "--namespace", NS)
            assert code == 2 and "--operator" in err  # who resumes is required

            walking = send_goal(actions, ExecutePlan.Goal(plan=plan_to_msg(plan, plan_id="walk-2")))
            assert walking.accepted
            progress.wait(lambda p: p.plan_id == "walk-2" and p.state == "started", 10.0, what="the second walk")
            code, out, _, _ = heracles(ros_domain_id, "cancel", "--namespace", NS)
            assert code == 0 and out.startswith("cancelling plan walk-2")
            assert goal_result(walking, 10.0)[1].result.status == "cancelled"


def test_with_no_dispatcher_the_commands_say_where_they_looked_within_the_bound(ros_domain_id):
    for argv in (["stop"], ["resume", "--operator", "ana"], ["cancel"], ["confirm"]):
        code, _, err, took = heracles(ros_domain_id, *argv, "--namespace", "/nobody", "--server-timeout", "1")
        assert code == 4, err
        server = "language_server" if argv[0] == "confirm" else "dispatcher"
        assert f"no {server} answered on /nobody/{argv[0]} within 1 s" in err
        assert took < 1.0 + 5.0  # the bound, plus a loaded machine's interpreter start


def test_stop_imports_nothing_of_the_package_it_does_not_need(ros_domain_id):
    """The operator's fast path: no database client, no model, no planner, no scene graph library."""
    env = {**os.environ, "ROS_DOMAIN_ID": str(ros_domain_id), "PYTHONPATH": str(ROOT)}
    script = ("import sys; from heracles_ros.cli import main; "
              "main(['stop', '--namespace', '/nobody', '--server-timeout', '0.2']); "
              "print(' '.join(sorted(sys.modules)))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    imported = set(done.stdout.split())
    ours = sorted(m for m in imported if m.startswith("heracles_ros."))
    assert ours == ["heracles_ros.cli", "heracles_ros.cli.control", "heracles_ros.client", "heracles_ros.client.system",
                    "heracles_ros.errors", "heracles_ros.outcomes", "heracles_ros.ros",
                    "heracles_ros.ros.client_context", "heracles_ros.ros.interfaces", "heracles_ros.ros.spinner",
                    "heracles_ros.ros.stop_socket",
                    "heracles_ros.scene"], ours  # the package alone: Hydra's topic name, which the link table uses
    assert not {"falkordb", "redis", "neo4j", "spark_dsg", "openai", "httpx"} & imported
