"""``ros2 param`` against the three nodes, each in its own process as ``ros2 run`` starts them.

An operator (or any DDS participant) may set parameters on a running node. Each
node refuses, with its reason, a set of rclpy's own ``use_sim_time`` (which
killed the mirror, and on the language server stopped the client-lost watch), of
a name it lacks and of one it reads only at start, through ``ros2 param set``
and ``ros2 param load`` alike; every node runs on, on wall-clock time; and the
language server still cancels the command of a client killed with -9 within
``client_lost_s`` + 2 s. Malformed requests (a value of no ParameterType) are in
test_node_base.py; the real ``ros2`` tool needs no ROS install (support/ros2_cli.py).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rclpy
from heracles_ros.action import ExecuteCommand, ExecutePlan
from heracles_ros.msg import DispatchProgress
from support.ros import Collector, action_client, ros_session, spinning
from support.ros2_cli import require_ros2, ros2_env, stop_daemon
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, say

from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.ros.fastdds_profile import LEASE_S

pytestmark = pytest.mark.backends("falkordb")

REPO = Path(__file__).resolve().parents[2]
NS = "/spot1"
START = "P0"
CLIENT_LOST_S = 2.0
#: The box farthest from P0 on the small scene: a walk long enough to be interrupted.
FARTHEST_BOX = (
    "MATCH (p:MeshPlace)-[:CONTAINS]->(o:Object {class: 'box'}) WHERE p.x < 12 "
    "RETURN o.nodeSymbol AS box, p.x * p.x + p.y * p.y AS d2 ORDER BY d2 DESC, box LIMIT 1"
)


def fetch_farthest_box(request: RecordedRequest) -> Turn:
    import json

    if not request.tool_results():
        return call(FARTHEST_BOX, text="The farthest box.")
    return say(f"<answer>(holding {json.loads(request.tool_results()[-1])[0]['box']})</answer>")


class NodeProcess:
    """One node program (``python -m heracles_ros.nodes.NAME``) in the robot namespace; its output kept."""

    def __init__(self, domain: int, name: str, params: dict[str, Any]):
        self.name = name
        args = [arg for key, value in params.items() for arg in ("-p", f"{key}:={value}")]
        self.process = subprocess.Popen(
            [sys.executable, "-m", f"heracles_ros.nodes.{name}", "--ros-args", "-r", f"__ns:={NS}", *args],
            env={**os.environ, "ROS_DOMAIN_ID": str(domain), "PYTHONPATH": str(REPO)},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        self.lines: list[str] = []
        stdout = self.process.stdout
        assert stdout is not None
        threading.Thread(target=lambda: self.lines.extend(iter(stdout.readline, "")), daemon=True).start()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def alive(self) -> bool:
        return self.process.poll() is None

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def ros2_run(domain: int, *args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess[str]:
    """``ros2 ARGS`` to its end; status and both outputs (a refused set prints on stderr and exits 0)."""
    return subprocess.run(["ros2", *args], env=ros2_env(domain), capture_output=True, text=True, timeout=timeout_s)


@pytest.fixture
def three_nodes(ros_domain_id: int, falkordb_uri: str, graph_name: str, small_store: Any) -> Iterator[Any]:
    """dsg_mirror, dispatcher (simulated Spot, real time) and language_server (scripted model) as processes."""
    require_ros2()
    states = RobotStateStore(small_store)
    position = states.position_of(START)
    assert position is not None
    states.write(RobotState(position, place=START))
    model = ScriptedLLMServer(fetch_farthest_box).start()
    db = {"db_uri": falkordb_uri, "graph_name": graph_name}
    nodes: dict[str, NodeProcess] = {}
    try:
        nodes["dsg_mirror"] = NodeProcess(ros_domain_id, "dsg_mirror", {**db, "dsg_topic": "/test/dsg"})
        nodes["dispatcher"] = NodeProcess(ros_domain_id, "dispatcher", {
            **db, "start_place": START, "sim_time_scale": 1.0, "sim_speed_mps": 1.0})
        nodes["language_server"] = NodeProcess(ros_domain_id, "language_server", {
            **db, "llm": "openai", "model": model.model, "base_url": model.openai_base_url,
            "instance_check_s": 0.0, "client_lost_s": CLIENT_LOST_S})
        yield nodes
    finally:
        for node in nodes.values():
            node.end()
        model.stop()
        stop_daemon(ros_domain_id)


def first_answer(domain: int, node: NodeProcess, fqn: str, name: str, value: str) -> subprocess.CompletedProcess[str]:
    """``ros2 param set`` until the node answers it (a starting node is not found at first, or its services not
    yet there); AssertionError if the node dies or has not answered within 60 s."""
    deadline = time.monotonic() + 60.0
    while True:
        result = ros2_run(domain, "param", "set", fqn, name, value)
        if "Setting parameter failed" in result.stderr or "Set parameter successful" in result.stdout:
            return result
        assert node.alive(), node.output
        assert time.monotonic() < deadline, (result.stdout, result.stderr)
        time.sleep(0.5)


def refusal(result: subprocess.CompletedProcess[str]) -> str:
    """What ``ros2 param set`` said of a refused set (it prints the reason on stderr)."""
    assert "Setting parameter failed: " in result.stderr, (result.stdout, result.stderr)
    return result.stderr.split("Setting parameter failed: ", 1)[1].strip()


def test_ros2_param_set_of_use_sim_time_and_unknown_names_is_refused_and_the_client_watch_still_cancels(
    ros_domain_id: int, three_nodes: dict[str, NodeProcess], tmp_path: Path
) -> None:
    for name, node in three_nodes.items():
        fqn = f"{NS}/{name}"
        set_sim = first_answer(ros_domain_id, node, fqn, "use_sim_time", "true")
        assert refusal(set_sim).startswith(f"use_sim_time cannot change while {fqn} runs"), set_sim.stderr
        unknown = refusal(ros2_run(ros_domain_id, "param", "set", fqn, "client_lost", "0.0"))
        assert unknown.startswith(f"{fqn} has no parameter 'client_lost'"), unknown
        at_start = refusal(ros2_run(ros_domain_id, "param", "set", fqn, "db_uri", "falkordb://elsewhere:1"))
        assert at_start.startswith(f"parameter db_uri is read only at start: restart {fqn}"), at_start
    # A params file through `ros2 param load` (the per-parameter set service): only the mirror's run-time one takes.
    (tmp_path / "site.yaml").write_text(
        "/**:\n  ros__parameters:\n    use_sim_time: true\n    retry_period_s: 3.0\n")
    loaded = ros2_run(ros_domain_id, "param", "load", f"{NS}/dsg_mirror", str(tmp_path / "site.yaml"))
    assert "Set parameter use_sim_time failed: use_sim_time cannot change" in loaded.stderr, loaded
    assert "Set parameter retry_period_s successful" in loaded.stdout, loaded
    for name, node in three_nodes.items():
        assert node.alive(), f"{name} died:\n{node.output}"
        got = ros2_run(ros_domain_id, "param", "get", f"{NS}/{name}", "use_sim_time")
        assert got.stdout.strip() == "Boolean value is: False", got
        assert "Traceback" not in node.output, node.output

    with ros_session(ros_domain_id):
        probe = rclpy.create_node("probe")
        progress = Collector(probe, DispatchProgress, f"{NS}/dispatch_progress", 100)
        commands = action_client(probe, ExecuteCommand, f"{NS}/execute_command")
        plans = action_client(probe, ExecutePlan, f"{NS}/execute_plan")
        with spinning(probe):
            assert commands.wait_for_server(timeout_sec=30.0) and plans.wait_for_server(timeout_sec=30.0)
            cli = start_command(progress)
            killed = time.monotonic()
            cli.kill()
            cli.communicate(timeout=10)
            progress.wait(lambda p: p.state == "cancelled", CLIENT_LOST_S + LEASE_S + 1.0,
                          what="the plan to be cancelled")
            assert time.monotonic() - killed < CLIENT_LOST_S + LEASE_S + 1.0
    language = three_nodes["language_server"]
    wait_for_line(language, "client_lost: /heracles_cli_")
    assert all(node.alive() for node in three_nodes.values())


def start_command(progress: Collector[DispatchProgress]) -> subprocess.Popen[str]:
    """``heracles command --execute`` in a process of its own, once the robot walks its plan (a command
    refused because the language server had not seen the dispatcher yet is sent again)."""
    for _ in range(3):
        cli = subprocess.Popen(
            [sys.executable, "-m", "heracles_ros.cli", "command", "Bring me the farthest box.", "--execute",
             "--namespace", NS], cwd=REPO, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        with contextlib.suppress(AssertionError):
            progress.wait(lambda p: p.state == "started", 60.0, what="the robot to start walking")
            return cli
        out, err = cli.communicate(timeout=30)
        if "no_dispatcher" not in err:
            raise AssertionError(f"the command did not start the robot: {out}{err}")
        time.sleep(1.0)
    raise AssertionError("the language server never saw the dispatcher")


def wait_for_line(node: NodeProcess, text: str, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in node.output:
        assert time.monotonic() < deadline, f"no {text!r} in {node.name}'s output:\n{node.output}"
        time.sleep(0.1)
