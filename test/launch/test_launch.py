"""The launch files, launched for real with ``ros2 launch`` as the README tells an operator to.

One launch of sim.launch.py serves every check of what came up (rviz2 is not installed here, so
its default start_rviz:=true is also the missing-part case; its world:= starts the simulated Hydra);
it ends with Ctrl-C, and the last check is that nothing it started is left. heracles.launch.py is
launched with its defaults to see the robot's safe defaults (spot_ros2, confirmation required).
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from support.ports import free_port
from support.ros2_cli import REPO, launched, require_ros2, retry_ros2, ros2, ros2_env, stop_daemon
from support.run_guard import pick_domain
from support.rviz_console import HYDRA_GRAPH_TOPIC, marker_displays

from heracles_ros.scene.io import load_scene
from heracles_ros.search.worlds import hide_objects

NAMESPACE = "launch_test_spot"
NODES = ("dsg_mirror", "language_server", "dispatcher")
UP_S = 90.0  # three nodes starting on a loaded machine, the embedded database first
STOP_S = 30.0  # Ctrl-C to every process gone: the nodes' shutdown_timeout_s (5 s) and launch's own escalation


@pytest.fixture(scope="module")
def domain() -> Iterator[int]:
    require_ros2()
    domain = pick_domain(os.getpid(), os.environ.get("ROS_DOMAIN_ID"))
    yield domain
    stop_daemon(domain)


def stop_database(data_dir: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "heracles_ros.cli", "db", "stop", "--db", f"embedded:{data_dir}"],
                            capture_output=True, text=True, timeout=60, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr


def param(domain: int, node: str, name: str) -> str:
    out = retry_ros2(["param", "get", node, name], domain, 30.0)
    return out.strip().split(": ", 1)[-1]


def example_world(path: Path) -> Path:
    """The example scene (sim.launch.py's map) with a fire extinguisher the map lacks."""
    world = load_scene(REPO / "heracles_ros" / "data" / "example_scene.json")
    hide_objects(world, "fire extinguisher", ["p1"])
    world.save(str(path))
    return path


def test_the_simulation_launch_comes_up_configured_and_ctrl_c_ends_everything(
        domain: int, tmp_path: Path) -> None:
    console_port = free_port()
    world = example_world(tmp_path / "world.json")
    hydra_topic = f"/{NAMESPACE}/hydra/backend/dsg"
    with launched(REPO / "launch" / "sim.launch.py",
                  [f"robot_name:={NAMESPACE}", f"db_uri:=embedded:{tmp_path / 'db'}", "llm:=ollama",
                   "base_url:=http://127.0.0.1:9", "model:=scripted-8b", f"console_port:={console_port}",
                   f"world:={world}", f"dsg_topic:={hydra_topic}"],
                  domain, tmp_path / "launch.log") as sim:
        # Up in the robot's namespace; rviz2 is not installed here: a warning, not a failed launch.
        nodes = retry_ros2(["node", "list"], domain, UP_S, expect=f"/{NAMESPACE}/language_server")
        for node in NODES:
            retry_ros2(["node", "list"], domain, 30.0, expect=f"/{NAMESPACE}/{node}")
        assert "RViz (start_rviz) not started: package 'rviz2' is not installed" in sim.output(), nodes

        # Each node's parameter file, and the launch arguments as parameters.
        commands = set(_command_lines(sim.processes()))
        for node in NODES:
            own = [c for c in commands if re.search(rf"lib/heracles_ros/{node}\b", c)]
            assert own and f"--params-file {REPO / 'config' / node}.yaml" in own[0], (node, commands)
        ns = f"/{NAMESPACE}"
        assert param(domain, f"{ns}/dispatcher", "driver") == "sim"
        assert param(domain, f"{ns}/language_server", "require_confirmation") == "False"  # the simulator's
        assert param(domain, f"{ns}/language_server", "llm") == "ollama"
        assert param(domain, f"{ns}/language_server", "model") == "scripted-8b"  # a string, not YAML
        for node in NODES:
            assert param(domain, f"{ns}/{node}", "db_uri") == f"embedded:{tmp_path / 'db'}"
        # world:= makes the dispatcher a simulated Hydra publishing where the mirror listens, and it does.
        assert param(domain, f"{ns}/dispatcher", "sim_world") == str(world)
        assert param(domain, f"{ns}/dispatcher", "sim_dsg_topic") == hydra_topic
        assert param(domain, f"{ns}/dsg_mirror", "dsg_topic") == hydra_topic
        retry_ros2(["topic", "echo", "--once", f"{ns}/mirror_status"], domain, 30.0, expect="gaps_detectable: true")

        # Services, actions and topics in the namespace.
        services = retry_ros2(["service", "list"], domain, 30.0, expect=f"{ns}/cancel").split()
        for name in ("ask", "command", "confirm", "cancel", "corrections", "changes"):
            assert f"{ns}/{name}" in services, services
        actions = retry_ros2(["action", "list"], domain, 30.0, expect=f"{ns}/execute_command").split()
        assert f"{ns}/execute_plan" in actions, actions
        topics = retry_ros2(["topic", "list", "-t"], domain, 30.0, expect=f"{ns}/command_rejections")
        assert f"{ns}/mirror_status [heracles_ros/msg/MirrorStatus]" in topics, topics
        # What the RViz console shows is published here (Hydra's graph comes from Hydra's visualizer).
        for topic in marker_displays():
            if topic != HYDRA_GRAPH_TOPIC:
                assert f"{ns}/{topic} [visualization_msgs/msg/MarkerArray]" in topics, (topic, topics)

        # The web console is on by default in the simulator, in the robot's namespace, on the port asked for.
        assert _console_answers(console_port, UP_S), sim.output()[-3000:]
        assert f"heracles console: open http://127.0.0.1:{console_port}/" in sim.output()
        assert any(re.search(r"lib/heracles_ros/console\b.*__ns:=/" + NAMESPACE, c) for c in commands), commands

        # Ctrl-C ends every node the launch started. The embedded database server (and its read
        # replica) outlive the nodes by design; `heracles db stop`, as the README says, ends them.
        started = sim.processes()
        nodes_started = _heracles_nodes(started)
        assert len(nodes_started) == 4, _command_lines(started)  # the three nodes and the console
        status = sim.interrupt(STOP_S)
        _, alive = psutil.wait_procs(nodes_started, timeout=STOP_S)
        assert not alive, f"nodes left running after Ctrl-C: {_command_lines(alive)}"
        assert status == 0, sim.output()[-3000:]
        stop_database(tmp_path / "db")
        _, alive = psutil.wait_procs(started, timeout=STOP_S)
        assert not alive, f"left running after `heracles db stop`: {_command_lines(alive)}"


def _console_answers(port: int, timeout_s: float) -> bool:
    """The console's /healthz answers {"ok": true} within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as response:
                return bool(json.loads(response.read())["ok"])
        except OSError:
            time.sleep(0.2)
    return False


def _command_lines(processes: list[psutil.Process]) -> list[str]:
    """The command lines of ``processes`` still running; one that exited meanwhile (a zombie: a launch's
    short-lived helper) or is gone has none and is skipped."""
    lines = []
    for process in processes:
        try:
            lines.append(" ".join(process.cmdline()))
        except psutil.Error:
            continue
    return lines


def _heracles_nodes(processes: list[psutil.Process]) -> list[psutil.Process]:
    """The package's nodes among ``processes``, alive: one that just exited (a zombie) or is gone is not."""
    nodes = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE and "lib/heracles_ros/" in " ".join(process.cmdline()):
                nodes.append(process)
        except psutil.Error:
            continue
    return nodes


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_the_robot_launch_defaults_to_spot_ros2_and_confirmation(domain: int, tmp_path: Path, ending: int) -> None:
    """Forgetting driver:= never runs the simulator on a robot: here, without spot_ros2, it says so.

    It also ends with SIGTERM (a service stop, a closed terminal) or SIGKILL to ``ros2 launch``: no process it
    started survives it, the web console included.
    """
    console_port = free_port()
    with launched(REPO / "launch" / "heracles.launch.py",
                  [f"robot_name:={NAMESPACE}_robot", f"db_uri:=embedded:{tmp_path / 'db'}", "llm:=ollama",
                   "base_url:=http://127.0.0.1:9", "start_console:=true", f"console_port:={console_port}"],
                  domain, tmp_path / "launch.log") as launch:
        ns = f"/{NAMESPACE}_robot"
        retry_ros2(["node", "list"], domain, UP_S, expect=f"{ns}/language_server")
        assert param(domain, f"{ns}/language_server", "require_confirmation") == "True"
        deadline = time.monotonic() + UP_S
        while "dispatcher cannot start" not in launch.output() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert "the spot_ros2 driver cannot be used" in launch.output(), launch.output()[-3000:]
        assert _console_answers(console_port, UP_S), launch.output()[-3000:]
        # SIGTERM (or SIGHUP, a closed terminal): launch exits at once without stopping its processes;
        # SIGKILL: it can do nothing at all. Every process must end all the same.
        # The dispatcher logs that it cannot start a moment before its process ends: wait for the end.
        while True:
            started = launch.processes()
            nodes = _heracles_nodes(started)
            if len(nodes) == 3 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        # The mirror, the language server and the web console; the dispatcher has exited.
        assert len(nodes) == 3, _command_lines(started)
        launch.process.send_signal(ending)
        launch.process.wait(STOP_S)
        _, alive = psutil.wait_procs(nodes, timeout=STOP_S)
        assert not alive, f"left running after {signal.Signals(ending).name} to ros2 launch: {_command_lines(alive)}"
        stop_database(tmp_path / "db")
        _, alive = psutil.wait_procs(started, timeout=STOP_S)
        assert not alive, f"left running after `heracles db stop`: {_command_lines(alive)}"


def test_confirmation_on_the_robot_can_be_turned_off(domain: int) -> None:
    out = ros2(["launch", str(REPO / "launch" / "heracles.launch.py"), "--show-args"], domain, timeout_s=60.0)
    assert re.search(r"'driver':.*?\(default: 'spot_ros2'\)", out, re.S), out
    assert re.search(r"'require_confirmation':.*?Valid choices are: \['true', 'false'\]", out, re.S), out


def test_launch_testing_sees_the_nodes_up_and_every_exit_clean(domain: int, tmp_path: Path) -> None:
    """launch_testing's runner on launch_testing_sim.py: the nodes come up, and exit 0 when launch stops them."""
    result = subprocess.run(
        ["launch_test", str(REPO / "test" / "launch" / "launch_testing_sim.py"), f"db_uri:=embedded:{tmp_path / 'db'}",
         f"console_port:={free_port()}"],
        env=ros2_env(domain), capture_output=True, text=True, timeout=UP_S + 2 * STOP_S)
    stop_database(tmp_path / "db")
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    for test in ("test_each_node_reports_what_it_serves", "test_each_node_answers_a_request",
                 "test_every_process_exited_with_status_0", "test_no_node_ended_with_a_traceback"):
        assert f"{test} " in output, output[-4000:]
    assert output.count("\nOK") == 2, output[-4000:]
