"""``heracles up`` as a user runs it: one process that starts the database and the nodes, and Ctrl-C ends it all.

The system runs as its own process (``python -m heracles_ros.cli up``), no model
configured (so the language server gets the scripted model turns); a question
goes to its language server over DDS and a command through ``heracles command
--execute``, both real processes. The pids come from the runner's own log lines
and are checked with psutil after the stop.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import rclpy
from heracles_ros.srv import Ask
from support.mirror_checks import assert_mirrors
from support.ports import free_port
from support.ros import call_service, ros_session, spinning

from heracles_ros.demo.scripted_model import QUESTION, command_for
from heracles_ros.embedded.server import EmbeddedServer
from heracles_ros.graphdb import open_store
from heracles_ros.scene.io import load_scene

pytestmark = pytest.mark.timeout(300)

ROOT = Path(__file__).resolve().parents[2]
LANGUAGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST", "HERACLES_DB")
SHUTDOWN_S = 5.0
#: What the stop may take past the nodes' shutdown_timeout_s: the database's clean stop after them, on a busy machine.
MARGIN_S = 10.0
#: Boxes standing in the example scene's lounge (O7 and O15), and the office's nearest box's room.
LOUNGE_BOXES = 2
START_WAIT_S = 120.0


class System:
    """``heracles up`` running, its output collected line by line."""

    def __init__(self, argv: list[str], env: dict[str, str]):
        self.process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()

    @property
    def text(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

    def wait_line(self, pattern: str, timeout_s: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while True:
                for line in self.lines:
                    if match := re.search(pattern, line):
                        return match
                left = deadline - time.monotonic()
                if left <= 0 or (self.process.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(f"no line matching {pattern!r}:\n" + "\n".join(self.lines))
                self._changed.wait(min(left, 0.5))

    def pids(self) -> dict[str, int]:
        """Every process the runner started (name -> pid), and the database server itself as 'falkordb'."""
        found = {m[1]: int(m[2]) for m in re.finditer(r"\| (\w+) started \(pid=(\d+)\)", self.text)}
        server = re.search(r"embedded FalkorDB at \S+ \(pid (\d+)\)", self.text)
        if server:
            found["falkordb"] = int(server[1])
        return found

    def end(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30.0)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10.0)
        for pid in self.pids().values():  # whatever a failed test left behind
            if alive(pid):
                psutil.Process(pid).kill()
        self._reader.join(10.0)


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def env_for(domain: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in LANGUAGE_ENV}
    return {**env, "ROS_DOMAIN_ID": str(domain), "PYTHONPATH": str(ROOT)}


def up_argv(db: Path, *extra: str, namespace: str = "/desk") -> list[str]:
    return [sys.executable, "-m", "heracles_ros.cli", "up", "--db", f"embedded:{db}", "--namespace", namespace,
            "--time-scale", "20", "--shutdown-timeout", str(SHUTDOWN_S), "--console-port", str(free_port()), *extra]


@pytest.fixture
def up(tmp_path, ros_domain_id) -> Iterator[System]:
    system = System(up_argv(tmp_path / "db"), env_for(ros_domain_id))
    try:
        yield system
    finally:
        system.end()


def wait_for_nodes(system: System) -> None:
    system.wait_line(r"dsg_mirror .*mirrored scene file .*example_scene\.json", START_WAIT_S)
    system.wait_line(r"dispatcher .*dispatching with the sim driver", START_WAIT_S)
    system.wait_line(r"language_server .*answering with openai:scripted", START_WAIT_S)


def test_up_runs_a_question_and_a_command_and_ctrl_c_stops_every_process_cleanly(up, ros_domain_id):
    wait_for_nodes(up)
    with ros_session(ros_domain_id):
        probe = rclpy.create_node("up_probe")
        ask = probe.create_client(Ask, "/desk/ask")
        with spinning(probe):
            assert ask.wait_for_service(timeout_sec=30.0), "no ask service"
            reply = call_service(ask, Ask.Request(question=QUESTION), timeout_s=60.0)
    assert (reply.error, reply.answer) == ("", str(LOUNGE_BOXES)), reply
    assert reply.tool_calls == 1

    command = subprocess.run(
        [sys.executable, "-m", "heracles_ros.cli", "command", "--execute", command_for("office"),
         "--namespace", "/desk", "--server-timeout", "30"],
        env=env_for(ros_domain_id), capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    tail = "\n".join(up.lines[-80:])
    assert command.returncode == 0, f"stdout: {command.stdout}\nstderr: {command.stderr}\nthe system's log:\n{tail}"
    assert re.match(r"\(object-in-place O(14|28) P\d+\)", command.stdout), command.stdout
    assert "succeeded" in command.stderr
    up.wait_line(r"dispatcher .*succeeded", 10.0)

    pids = up.pids()
    assert set(pids) == {"db", "scripted_model", "dsg_mirror", "language_server", "dispatcher", "console",
                         "falkordb"}, pids
    console = up.wait_line(r"console .*heracles console: open (http://127\.0\.0\.1:\d+/)", 10.0)
    with urllib.request.urlopen(console[1] + "healthz", timeout=10) as health:
        assert json.loads(health.read())["ok"] is True
    assert all(alive(pid) for pid in pids.values()), pids
    up.process.send_signal(signal.SIGINT)
    started = time.monotonic()
    code = up.process.wait(SHUTDOWN_S + MARGIN_S)
    took = time.monotonic() - started
    up._reader.join(5.0)
    assert code == 0, up.text
    assert "every process exited cleanly" in up.text
    left = {name: pid for name, pid in pids.items() if alive(pid)}
    assert left == {}, f"still running {took:.1f} s after Ctrl-C: {left}"
    # The database stopped after the nodes: none of them lost it while finishing.
    order = [line for line in up.lines if re.search(r"\| (db|dsg_mirror|language_server|dispatcher) stopped", line)]
    assert order and "| db stopped" in order[-1], order


def test_a_node_that_dies_stops_the_rest_and_the_runner_names_it(up):
    wait_for_nodes(up)
    pids = up.pids()
    os.kill(pids["language_server"], signal.SIGKILL)
    code = up.process.wait(SHUTDOWN_S + MARGIN_S)
    up._reader.join(5.0)
    assert code == 1, up.text
    assert re.search(r"heracles up: language_server \(exit status -9\) ended on its own; stopped the others", up.text)
    left = {name: pid for name, pid in pids.items() if alive(pid)}
    assert left == {}, left


def test_the_database_follows_an_operators_stop_and_start_and_a_crash_stops_the_system(up, tmp_path, ros_domain_id):
    wait_for_nodes(up)
    db = ["--db", f"embedded:{tmp_path / 'db'}"]
    env = env_for(ros_domain_id)
    heracles = [sys.executable, "-m", "heracles_ros.cli", "db"]
    stop = subprocess.run([*heracles, "stop", *db], env=env, capture_output=True, text=True, timeout=60)
    assert stop.returncode == 0, stop.stderr
    up.wait_line(r"db +\| the database was stopped with 'heracles db stop'", 10.0)
    assert up.process.poll() is None and alive(up.pids()["db"])  # an operator's stop is not a crash
    start = subprocess.run([*heracles, "start", "--json", *db], env=env, capture_output=True, text=True, timeout=60)
    assert start.returncode == 0, start.stderr
    up.wait_line(r"db +\| the database is back", 10.0)

    server = int(re.search(r'"pid": (\d+)', start.stdout)[1])  # type: ignore[index]
    os.kill(server, signal.SIGKILL)
    code = up.process.wait(SHUTDOWN_S + MARGIN_S)
    up._reader.join(5.0)
    assert code == 1, up.text
    assert re.search(r"db +\| the database server exited", up.text), up.text
    assert re.search(r"heracles up: db \(exit status 1\) ended on its own; stopped the others", up.text), up.text
    left = {name: pid for name, pid in up.pids().items() if alive(pid)}
    assert left == {}, left
    # The read replica the language server started is a server of its own: it goes with the system.
    deadline = time.monotonic() + SHUTDOWN_S + MARGIN_S
    while (servers := _servers_under(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not servers, f"database servers left running: {servers}"


def _servers_under(directory: Path) -> list[str]:
    """Command lines of the live processes working in ``directory`` (the database servers started there)."""
    found = []
    for process in psutil.process_iter():
        try:
            if process.status() != psutil.STATUS_ZOMBIE and process.cwd().startswith(str(directory)):
                found.append(" ".join(process.cmdline()))
        except psutil.Error:
            continue
    return found


def test_a_bad_scene_is_named_before_anything_starts(tmp_path, ros_domain_id):
    notes = tmp_path / "notes.json"
    notes.write_text("{not a scene")
    for scene, message in ((tmp_path / "missing.json", f"--scene {tmp_path / 'missing.json'}: no such file"),
                           (notes, str(notes))):
        done = subprocess.run([sys.executable, "-m", "heracles_ros.cli", "up", "--db", f"embedded:{tmp_path / 'db'}",
                               "--scene", str(scene)], env=env_for(ros_domain_id), capture_output=True, text=True,
                              timeout=60)  # fmt: skip
        assert done.returncode == 1, done.stdout
        assert message in done.stderr and done.stderr.startswith("error: "), done.stderr
        assert "started (pid=" not in done.stdout
        assert not (tmp_path / "db").exists(), "a database was started for a system that could not start"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_a_closed_terminal_stop_every_process_cleanly_too(up, signum):
    wait_for_nodes(up)
    pids = up.pids()
    up.process.send_signal(signum)
    code = up.process.wait(SHUTDOWN_S + MARGIN_S)
    up._reader.join(5.0)
    assert code == 0, up.text
    assert f"heracles up: stopped on {signal.Signals(signum).name}; every process exited cleanly" in up.text
    left = {name: pid for name, pid in pids.items() if alive(pid)}
    assert left == {}, left


def _generate_other_scene(path: Path, env: dict[str, str]) -> None:
    """A scene the example's is not: other symbols for its mesh places (Q, Hydra's code default)."""
    subprocess.run([sys.executable, "-m", "heracles_ros.cli", "generate-scene", "--kind", "small", "--seed", "3",
                    "--mesh-prefix", "Q", "--out", str(path)], env=env, check=True, capture_output=True, timeout=120)


def _summary(db: Path, env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-m", "heracles_ros.cli", "summary", "--json", "--db", f"embedded:{db}"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def _stop(system: System) -> None:
    system.process.send_signal(signal.SIGINT)
    assert system.process.wait(SHUTDOWN_S + MARGIN_S) == 0, system.text
    system._reader.join(5.0)


def test_a_second_up_for_a_running_robot_or_graph_is_refused_and_changes_nothing(up, tmp_path, ros_domain_id):
    """Issue 33 F7 and item 2: refused before anything is started or written; the first system keeps its
    database (same server, never stopped), its scene and its nodes."""
    wait_for_nodes(up)
    env = env_for(ros_domain_id)
    pids = up.pids()
    before = _summary(tmp_path / "db", env)
    other_scene = tmp_path / "other.json"
    _generate_other_scene(other_scene, env)
    cases = {
        "the same robot and graph": (tmp_path / "db", "/desk", "another heracles up runs on graph 'heracles'"),
        "the same robot, another database": (tmp_path / "db2", "/desk", "a system already runs for this robot: /desk/"),
        "another robot, the same graph": (tmp_path / "db", "/other", "another heracles up runs on graph 'heracles'"),
    }
    for case, (db, namespace, message) in cases.items():
        second = subprocess.run(up_argv(db, "--scene", str(other_scene), "--replace-scene", namespace=namespace),
                                env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 1, (case, second.stdout, second.stderr)
        assert message in second.stderr, (case, second.stderr)
        assert "started (pid=" not in second.stdout, case
    console = up.wait_line(r"console .*heracles console: open http://127\.0\.0\.1:(\d+)/", 30.0)
    taken = subprocess.run(up_argv(tmp_path / "db3", "--console-port", console[1], namespace="/third"),
                           env=env, capture_output=True, text=True, timeout=60)
    assert taken.returncode == 1 and f"port {console[1]} on 127.0.0.1 is in use" in taken.stderr, taken.stderr
    assert not (tmp_path / "db2").exists() or not (tmp_path / "db2" / "server.json").exists()
    assert not (tmp_path / "db3" / "server.json").exists()
    assert all(alive(pid) for pid in pids.values()), pids
    assert _summary(tmp_path / "db", env) == before  # the first system's scene, untouched
    assert not (tmp_path / "db" / "stopped").exists()
    assert up.process.poll() is None and "the database was stopped" not in up.text


def test_up_starts_again_after_a_stop_and_switches_scenes_only_when_asked(tmp_path, ros_domain_id):
    """Issue 33 items 1 and 3, F5: up, Ctrl-C, up again on the same database; another scene is refused with the
    way to switch, and --replace-scene switches to exactly that scene."""
    env = env_for(ros_domain_id)
    db = tmp_path / "db"
    other_scene = tmp_path / "other.json"
    _generate_other_scene(other_scene, env)
    for run in range(2):
        system = System(up_argv(db), env)
        try:
            wait_for_nodes(system)
            system.wait_line(r"db +\| embedded FalkorDB at .* started by heracles up", 10.0)
            _stop(system)
        finally:
            system.end()
        assert "database stopped" in system.text, (run, system.text)
        assert EmbeddedServer(db).running() is None and EmbeddedServer(db).stopped_by() is not None
        assert not EmbeddedServer(db).stopped_by_operator()
    example = _summary(db, env)

    refused = subprocess.run(up_argv(db, "--scene", str(other_scene)), env=env, capture_output=True, text=True,
                             timeout=120)
    assert refused.returncode == 1, refused.stdout
    assert "holds another scene" in refused.stderr and "--replace-scene" in refused.stderr, refused.stderr
    assert _summary(db, env) == example

    system = System(up_argv(db, "--scene", str(other_scene), "--replace-scene"), env)
    try:
        system.wait_line(r"heracles up: other\.json in the database \(\d+ nodes, \d+ edges, replacing \d+ nodes", 60.0)
        system.wait_line(r"dispatcher .*dispatching with the sim driver", START_WAIT_S)
        _stop(system)
        # The summary above started the database (a command that opens it may): this up left it running.
        assert "database left running" in system.text
        with open_store(f"embedded:{db}", graph="heracles") as store:
            assert_mirrors(store, load_scene(other_scene))  # exactly the other scene, nothing of the example's
    finally:
        system.end()
        EmbeddedServer(db).stop()


def test_a_switch_from_the_kilometre_scale_scene_back_to_the_papers_graph_twice_leaves_exactly_it(
    tmp_path, ros_domain_id
):
    """Issue 33 F4: with the system's nodes and the read replica attached, ``heracles load --force`` from the
    kilometre-scale scene back to the paper's graph (twice) crashed the embedded server and left a mix."""
    from heracles_ros.demo.goal import EXAMPLE_SCENE
    from heracles_ros.embedded.replica import ReadReplica
    from heracles_ros.scene.tables import extract_tables, symbol_of
    from heracles_ros.schema import Layer

    env = env_for(ros_domain_id)
    large = tmp_path / "large.sparkdsg"
    subprocess.run([sys.executable, "-m", "heracles_ros.cli", "generate-scene", "--kind", "large", "--out", str(large)],
                   env=env, check=True, capture_output=True, timeout=180)
    rows = extract_tables(load_scene(large)).nodes
    start = next(symbol_of(node) for node, row in rows.items() if row[0] == Layer.MESH_PLACE)
    db = tmp_path / "db"
    system = System(up_argv(db, "--scene", str(large), "--start-place", start), env)
    try:
        system.wait_line(r"dispatcher .*dispatching with the sim driver", START_WAIT_S)
        system.wait_line(r"language_server .*answering with openai:scripted", START_WAIT_S)
        with ros_session(ros_domain_id):  # a question: the language server's read replica is attached
            probe = rclpy.create_node("up_probe")
            ask = probe.create_client(Ask, "/desk/ask")
            with spinning(probe):
                assert ask.wait_for_service(timeout_sec=30.0), "no ask service"
                assert call_service(ask, Ask.Request(question=QUESTION), timeout_s=60.0).error == ""
        server = EmbeddedServer(db)
        primary, replica = server.running(), ReadReplica(server).running()
        assert primary is not None and replica is not None
        for scene in (EXAMPLE_SCENE, large, EXAMPLE_SCENE):
            load = subprocess.run([sys.executable, "-m", "heracles_ros.cli", "load", "--json", "--force", str(scene),
                                   "--db", f"embedded:{db}"], env=env, capture_output=True, text=True, timeout=300)
            assert load.returncode == 0, load.stderr
            assert server.running() == primary, f"the database server went away: {db / 'falkordb.log'}"
            with open_store(f"embedded:{db}", graph="heracles") as store:
                assert_mirrors(store, load_scene(scene))  # the new scene exactly: nothing of the other one
        # The same replica process, in sync with the paper's graph: not crashed, not restarted. (It may apply the
        # kilometre-scale scene's writes for a while on a busy machine and answer nothing meanwhile.)
        assert ReadReplica(server).caught_up(120.0), f"the replica fell behind: {db / 'read-replica' / 'falkordb.log'}"
        assert ReadReplica(server).current() == replica
        assert system.process.poll() is None and all(alive(pid) for pid in system.pids().values())
        _stop(system)
    finally:
        system.end()
