"""Every ``ros2 ...`` line of the README and docs/, run as written against the system sim.launch.py starts.

Only the namespace (``/spot/`` becomes this test's) and the domain (the environment's
ROS_DOMAIN_ID) differ; the model is scripted (support/scripted_llm.py). A line that cannot
run here carries ``# not run by the tests: WHY`` and is listed, not run. A line shown on several
pages is one line. A new ``ros2`` line in the README or docs/ fails
:func:`test_every_readme_ros2_line_is_run_or_marked` until it is run here.
"""
from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.ports import free_port
from support.ros2_cli import REPO, launched, require_ros2, require_service_call, retry_ros2, ros2_env, stop_daemon
from support.run_guard import pick_domain
from support.scripted_llm import RecordedRequest, ScriptedLLMServer, Turn, call, say

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
NAMESPACE = "readme_spot"
NOT_RUN = "# not run by the tests:"
UP_S = 90.0
FIRST_OBJECT = "MATCH (o:Object {class: 'box'}) RETURN o.nodeSymbol AS box ORDER BY box LIMIT 1"


def readme_ros2_lines() -> list[tuple[str, str]]:
    """(command, comment) of every ``ros2`` line: fenced shell blocks (continuations joined) and inline code."""
    found: dict[str, str] = {}
    for page in PAGES:
        text = page.read_text()
        for block in re.findall(r"```(?:bash|sh)\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command, _, comment = line.strip().partition("  #")
                if command.startswith("ros2 "):
                    found.setdefault(" ".join(command.split()), comment.strip())
        for inline in re.findall(r"`(ros2 [a-z]+ [a-z_]+ [^`]+)`", text):
            found.setdefault(" ".join(inline.split()), "")
    return list(found.items())


def model(request: RecordedRequest) -> Turn:
    """Questions get an answer, a command one query and a goal, a correction its triple."""
    user = str(request.last("user").get("content") or "")  # the request itself, not the session's history
    results = request.tool_results()
    if "actually a bag" in user or "corrected list" in request.text():
        return say('<answer>[["O14", "class", "bag"]]</answer>')
    if "Bring the box" in user:
        if not results:
            return call(FIRST_OBJECT)
        return say(f"<answer>(holding {json.loads(results[-1])[0]['box']})</answer>")
    return say('<answer>"R1"</answer>')


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    require_ros2()
    if shutil.which("ros2", path=os.path.dirname(sys.executable)):  # the copy from ../shared/ros2-tools
        require_service_call()
    domain = pick_domain(os.getpid() + 1, os.environ.get("ROS_DOMAIN_ID"))
    tmp = tmp_path_factory.mktemp("readme_ros2")
    with ScriptedLLMServer(model) as llm, launched(
            REPO / "launch" / "sim.launch.py",
            [f"robot_name:={NAMESPACE}", f"db_uri:=embedded:{tmp / 'db'}", "start_rviz:=false",
             "llm:=openai", f"base_url:={llm.openai_base_url}", "model:=scripted-model",
             f"console_port:={free_port()}"],
            domain, tmp / "launch.log") as launch:
        retry_ros2(["action", "list"], domain, UP_S, expect=f"/{NAMESPACE}/execute_plan")
        yield domain
        launch.interrupt(30.0)
        subprocess.run(["python", "-m", "heracles_ros.cli", "db", "stop", "--db", f"embedded:{tmp / 'db'}"],
                       cwd=REPO, timeout=60, capture_output=True, env=ros2_env(domain))
    stop_daemon(domain)


def as_run(command: str) -> list[str]:
    return shlex.split(command.replace("/spot/", f"/{NAMESPACE}/"))


def readme_line(prefix: str) -> list[str]:
    matches = [command for command, _ in readme_ros2_lines() if command.startswith(prefix)]
    assert len(matches) == 1, f"README/docs lines starting {prefix!r}: {matches}"
    return as_run(matches[0])


def run(args: list[str], domain: int, timeout_s: float = 60.0) -> str:
    result = subprocess.run(args, env=ros2_env(domain), capture_output=True, text=True, timeout=timeout_s)
    assert result.returncode == 0, f"{shlex.join(args)}: {result.stdout}{result.stderr}"
    return result.stdout


class Background:
    """A README line that runs until stopped (``topic echo``, a goal waiting for confirmation)."""

    def __init__(self, args: list[str], domain: int, log: Path):
        self.log = log
        self._file = log.open("w")
        self.process = subprocess.Popen(args, env=ros2_env(domain), stdout=self._file, stderr=subprocess.STDOUT,
                                        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))

    def wait_for(self, text: str, timeout_s: float) -> str:
        deadline = time.monotonic() + timeout_s
        while text not in (out := self.log.read_text(errors="replace")):
            assert time.monotonic() < deadline, f"no {text!r} within {timeout_s:g} s in:\n{out[-3000:]}"
            assert self.process.poll() is None or text in self.log.read_text(), f"ended early:\n{out[-3000:]}"
            time.sleep(0.2)
        return out

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> str:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if not self._file.closed:
            self._file.close()
        return self.log.read_text(errors="replace")


def test_every_readme_ros2_line_is_run_or_marked() -> None:
    run_here = ("ros2 action send_goal --feedback /spot/execute_command", "ros2 service call /spot/confirm",
                "ros2 topic echo /spot/command_rejections", "ros2 topic echo /spot/mirror_status",
                "ros2 service call /spot/ask",
                "ros2 service call /spot/command", "ros2 service call /spot/correct ",
                "ros2 service call /spot/corrections", "ros2 service call /spot/cancel",
                "ros2 service call /spot/changes", "ros2 service call /spot/find", "ros2 service call /spot/scene_at",
                "ros2 param get", "ros2 param set",
                "ros2 service call /spot/stop ", "ros2 service call /spot/hard_stop",
                "ros2 service call /spot/resume", "ros2 topic echo /spot/stop_state",
                "ros2 launch heracles_ros sim.launch.py")
    unaccounted = [command for command, comment in readme_ros2_lines()
                   if not command.startswith(run_here) and not comment.startswith(NOT_RUN[2:])]
    assert not unaccounted, f"README/docs ros2 lines neither run by this test nor marked '{NOT_RUN}': {unaccounted}"


@pytest.fixture
def background() -> Iterator[contextlib.ExitStack]:
    with contextlib.ExitStack() as stack:
        yield stack


def test_the_readme_ros2_lines_work_on_the_simulated_system(
        system: int, tmp_path: Path, background: contextlib.ExitStack) -> None:
    domain = system
    # Parameters: the simulator's launch does not ask for confirmation; a runtime one can be changed.
    assert run(readme_line("ros2 param get"), domain).strip().endswith("False")
    assert "Set parameter successful" in run(readme_line("ros2 param set"), domain)

    # A command as an action, waiting for the operator's confirm; a second one meanwhile is refused.
    rejections = background.enter_context(
        Background(readme_line("ros2 topic echo /spot/command_rejections"), domain, tmp_path / "echo.log"))
    goal = background.enter_context(
        Background(readme_line("ros2 action send_goal --feedback"), domain, tmp_path / "goal.log"))
    goal.wait_for("stage: confirm", UP_S)
    second = subprocess.run(readme_line("ros2 action send_goal --feedback"), env=ros2_env(domain),
                            capture_output=True, text=True, timeout=60.0)
    assert "Goal was rejected" in second.stdout, second.stdout + second.stderr
    rejections.wait_for("code: busy", 30.0)
    assert "success=True" in run(readme_line("ros2 service call /spot/confirm"), domain)
    goal.wait_for("stage: executing", 60.0)

    # Cancel stops the plan the dispatcher runs; the goal ends and says so.
    assert "success=True" in run(readme_line("ros2 service call /spot/cancel"), domain)
    assert goal.process.wait(60) == 0
    out = goal.stop()
    assert "Goal accepted" in out and "Feedback:" in out and "Result:" in out, out
    rejections.stop()

    # Questions in a session, a plan-only command, a correction and the corrections list, the changes.
    for prefix in ("ros2 service call /spot/ask heracles_ros/srv/Ask \"{question: 'Which",
                   "ros2 service call /spot/ask heracles_ros/srv/Ask \"{question: 'The one"):
        answer = run(readme_line(prefix), domain, timeout_s=120.0)
        assert "answer='\"R1\"'" in answer or "answer='R1'" in answer, answer
    planned = run(readme_line("ros2 service call /spot/command"), domain, timeout_s=120.0)
    assert "error=''" in planned and "holding O" in planned, planned
    corrected = run(readme_line("ros2 service call /spot/correct "), domain, timeout_s=120.0)
    assert "O14.class" in corrected and "error=''" in corrected, corrected
    listed = run(readme_line("ros2 service call /spot/corrections"), domain)
    assert "O14.class" in listed, listed
    with Background(readme_line("ros2 topic echo /spot/mirror_status"), domain, tmp_path / "status.log") as status:
        seen = status.wait_for("last_error", 30.0)
    assert re.search(r"^nodes: 159$", seen, re.M) and "snapshots_applied: 1" in seen, seen  # the example scene
    changes = run(readme_line("ros2 service call /spot/changes"), domain)
    # The scene mirrored at start is the history's beginning, not a change: an empty list, no error.
    assert "Changes_Response(changes=[], error='')" in changes, changes
    # The objects some words name, offline; where O3 was ten minutes ago (or, on a history younger than that,
    # the refusal naming what it keeps).
    found = run(readme_line("ros2 service call /spot/find"), domain, timeout_s=120.0)
    assert "error=''" in found and '"symbol": "O' in found, found
    past = run(readme_line("ros2 service call /spot/scene_at"), domain)
    assert ('"symbol": "O3"' in past and "error=''" in past) or "is before the history began" in past, past

    # The latched stop: state latched on stop_state, every motion goal refused until resume names who.
    with Background(readme_line("ros2 topic echo /spot/stop_state"), domain, tmp_path / "stop.log") as state:
        state.wait_for("stopped: false", 30.0)  # latched: the state since start reaches a late subscriber
        assert "success=True" in run(readme_line("ros2 service call /spot/stop "), domain)
        state.wait_for("stopped: true", 30.0)
        refused = subprocess.run(readme_line("ros2 action send_goal --feedback"), env=ros2_env(domain),
                                 capture_output=True, text=True, timeout=60.0)
        assert "Goal was rejected" in refused.stdout, refused.stdout + refused.stderr
        assert "success=True" in run(readme_line("ros2 service call /spot/hard_stop"), domain)
        state.wait_for("hard: true", 30.0)
        assert "success=True" in run(readme_line("ros2 service call /spot/resume"), domain)
        out = state.wait_for("operator_name: ana", 30.0)
    assert "driver: sim" in out, out
