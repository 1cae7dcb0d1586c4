"""The README and docs/ are what newcomers follow: their commands, parameter tables and shell lines must stay true.

Every line of a fenced ``bash``/``sh`` block in README.md and docs/*.md is accounted for: a ``heracles``
line is run here (in-process, against a fresh FalkorDB graph holding the example scene, in a scratch
folder), a ``ros2`` line is run by test_readme_ros2.py, and a line that cannot run here is in
:data:`NOT_RUN` with its reason. A new line that is none of these fails
:func:`test_every_shell_line_of_the_docs_is_run_or_listed`.
"""
from __future__ import annotations

import importlib
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.cli import heracles

from heracles_ros.graphdb.store import GraphStore

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PARAMETERS = REPO / "docs" / "parameters.md"
CI = REPO / ".ci" / "run"
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
EXAMPLE_SCENE = REPO / "heracles_ros" / "data" / "example_scene.json"

#: Shell lines the docs show that cannot run in this test, by how they start, and why.
NOT_RUN: dict[str, str] = {
    "./run.sh demo": "the demo itself; heracles demo is run by test/cli/test_demo.py",
    "./run.sh test": "the test suite itself",
    "./run.sh up": "starts the local system until Ctrl-C (a long-running supervisor); its own test starts and stops it",
    "source .venv/bin/activate": "puts the environment's commands on a terminal's PATH; the tests run inside it",
    "cd ~/ws": "robot workspace set-up: needs a ROS 2 install with colcon and rosdep "
               "(test/test_colcon_build.py builds the package)",
    "pip install -r heracles_ros/requirements.txt": "robot workspace set-up: the environment here is built by ./run.sh",
    "colcon build": "robot workspace set-up: needs a ROS 2 install (test/test_colcon_build.py builds the package)",
    "export OPENAI_API_KEY": "a secret for a hosted model; the tests use a scripted model server",
    "export NEO4J_USERNAME": "Neo4j set-up: no Neo4j server runs in the tests (the Bolt path runs against ArcadeDB)",
    "docker run": "starts a Neo4j server in Docker, which the tests do not have",
    "heracles load scene.json --db neo4j://": "needs the Neo4j server started above",
    "heracles cypher \"MATCH (o:Object) RETURN o.class AS class, count(o) AS n\" --db neo4j://":
        "needs the Neo4j server",
    "heracles command ": "goes to the running language_server over ROS (--execute): run against the nodes by test/cli",
    "heracles confirm": "answers a command waiting in the running language_server over ROS",
    "heracles ask ": "needs a language model (and, with --live, the running language_server)",
    "heracles corrections list --live": "asks the running language_server over ROS: run against the node by "
                                        "test/client/test_system.py",
    "heracles changes --since 10m --live": "asks the running dsg_mirror over ROS: run against the node by "
                                           "test/client/test_system.py",
    "heracles cancel": "calls the running dispatcher over ROS: run against the node by test/cli/test_control.py",
    "heracles stop": "calls the running dispatcher over ROS: run against the node by test/cli/test_control.py",
    "heracles demo": "the demo, run by test/cli/test_demo.py (the --llm forms need a hosted or Ollama model)",
    "heracles up": "starts the local system until Ctrl-C; test/cli/test_up.py starts it, uses it and stops it",
    "heracles search \"fire extinguisher\" --execute": "walks the robot through its running dispatcher over ROS: "
                                                     "test/cli/test_search.py runs it against the nodes",
    "heracles replay": "publishes to the running mirror over ROS: test/cli/test_replay.py runs it against the node",
    "export ROS_AUTOMATIC_DISCOVERY_RANGE": "a setting for the operator's terminal; the tests set it for the run",
    "python - <<": "writes a scene with one object moved for the replay after it (test/cli/test_replay.py moves "
                   "an object the same way)",
    "heracles resume": "calls the running dispatcher over ROS: run against the node by test/cli/test_control.py",
    "heracles console": "serves the web console until Ctrl-C: test/console/test_app.py and test_bridge.py run its "
                        "server against the nodes",
    "export HERACLES_CONSOLE_SECRET": "a secret for the operator's shell; test/console/test_app.py sets one",
}


@dataclass(frozen=True)
class Block:
    """One fenced shell block of a page: its commands in order (continuations joined, comments cut)."""

    page: str
    index: int
    commands: tuple[str, ...]

    @property
    def id(self) -> str:
        return f"{self.page}#{self.index}"


def shell_blocks() -> list[Block]:
    blocks = []
    for page in PAGES:
        fenced = re.findall(r"^ *```(?:bash|sh)\n(.*?)^ *```", page.read_text(), re.S | re.M)
        for index, text in enumerate(fenced):
            commands = []
            heredoc_end = None  # a here-document's lines belong to the command that opened it
            for line in text.replace("\\\n", " ").splitlines():
                if heredoc_end is not None:
                    commands[-1] += "\n" + line
                    heredoc_end = None if line.strip() == heredoc_end else heredoc_end
                    continue
                command = line.strip().partition("  #")[0].strip()
                if (opened := re.search(r"<<-?\s*'?(\w+)'?", command)) is not None:
                    heredoc_end = opened[1]
                if command and not command.startswith("#"):
                    commands.append(" ".join(command.split()).replace("./run.sh heracles ", "heracles "))
            blocks.append(Block(page.relative_to(REPO).as_posix(), index, tuple(commands)))
    return blocks


def not_run_reason(command: str) -> str | None:
    return next((why for prefix, why in NOT_RUN.items() if command.startswith(prefix)), None)


def runnable(block: Block) -> list[str]:
    return [c for c in block.commands if c.startswith("heracles ") and not_run_reason(c) is None]


def test_every_shell_line_of_the_docs_is_run_or_listed() -> None:
    blocks = shell_blocks()
    assert any(runnable(block) for block in blocks), "no docs command is run: is the block parser broken?"
    unaccounted = [f"{block.id}: {command}" for block in blocks for command in block.commands
                   if not command.startswith(("heracles ", "ros2 ")) and not_run_reason(command) is None]
    assert not unaccounted, ("shell lines in README/docs neither run by test/test_readme.py (heracles), "
                             f"nor by test/test_readme_ros2.py (ros2), nor listed in NOT_RUN: {unaccounted}")
    shown = {command for block in blocks for command in block.commands}
    stale = [prefix for prefix in NOT_RUN if not any(command.startswith(prefix) for command in shown)]
    assert not stale, f"NOT_RUN lists lines the docs no longer show: {stale}"


_TAKES_DB = ("load", "summary", "cypher", "changes", "where", "scene", "corrections", "goal", "plan", "find", "search")


@pytest.mark.backends("falkordb")
@pytest.mark.parametrize("block", [b for b in shell_blocks() if runnable(b)], ids=lambda b: b.id)
def test_the_docs_heracles_lines_run_as_written(
        block: Block, store: GraphStore, db_uri: str, graph_name: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Each line exits 0; only the database (``--db``, ``--graph``) is this test's.

    A block that loads no scene of its own runs on the example scene (what ``./run.sh demo`` mirrors).
    """
    monkeypatch.chdir(tmp_path)
    target = ["--db", db_uri, "--graph", graph_name]
    if not any(command.startswith("heracles load ") for command in runnable(block)):
        status, _, err = heracles(capsys, "load", "--json", str(EXAMPLE_SCENE), *target)
        assert status == 0, err
    for command in runnable(block):
        argv = shlex.split(command)[1:]
        status, out, err = heracles(capsys, *argv, *(target if argv[0] in _TAKES_DB else []))
        assert status == 0, f"{block.id}: {command!r} exited {status}:\n{out}\n{err}"


def _rows(node: str) -> dict[str, str]:
    """parameter -> default cell of docs/parameters.md's table for ``node``."""
    text = PARAMETERS.read_text()
    section = text.split(f"\n### `{node}`", 1)[1].split("\n\n", 2)[1]
    return {m[1]: m[2] for m in re.finditer(r"^\| `([a-z0-9_]+)` \| `([^`]*)` \|", section, re.MULTILINE)}


@pytest.mark.parametrize("node", ["dsg_mirror", "language_server", "dispatcher"])
def test_every_declared_parameter_is_documented_with_its_default(node: str) -> None:
    specs = importlib.import_module(f"heracles_ros.nodes.{node}").PARAMETERS
    rows = _rows(node)
    assert set(rows) == {spec.name for spec in specs}
    for spec in specs:
        default = spec.default
        shown = (str(default).lower() if isinstance(default, bool) else f'"{default}"' if isinstance(default, str)
                 else "[" + ", ".join(map(str, default)) + "]" if isinstance(default, list) else str(default))
        assert rows[spec.name] == shown, spec.name


def test_the_two_commands_are_the_ones_ci_runs() -> None:
    text = README.read_text()
    block = text.split("## The two commands", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line.split("#")[0].strip() for line in block.strip().splitlines()]
    assert commands == ["./run.sh demo", "./run.sh test"]
    assert "./run.sh test" in CI.read_text()


def test_the_readme_stays_a_front_door() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) < 200, f"README.md has {len(lines)} lines: move reference into docs/"
    missing = [link for link in re.findall(r"\]\((docs/[^)#]+)", "\n".join(lines))
               if not (REPO / link).exists()]
    assert not missing, f"README links to missing docs: {missing}"


def _known_issue_anchors() -> set[str]:
    return set(re.findall(r'<a id="([a-z0-9-]+)"></a>', (REPO / "docs" / "known-issues.md").read_text()))


def test_every_link_between_the_docs_resolves() -> None:
    anchors = _known_issue_anchors()
    broken = []
    for page in PAGES:
        links = re.findall(r"\]\(((?:\.\./|docs/)?[A-Za-z0-9_./-]+\.md)(?:#([a-z0-9-]+))?\)", page.read_text())
        for target, anchor in links:
            path = (page.parent / target).resolve()
            if not path.exists() or (path.name == "known-issues.md" and anchor and anchor not in anchors):
                broken.append(f"{page.relative_to(REPO)}: {target}#{anchor}")
    assert not broken, f"links to missing pages or anchors: {broken}"


def test_every_workaround_comment_points_at_a_known_issue() -> None:
    anchors = _known_issue_anchors()
    sources = [*REPO.glob("heracles_ros/**/*.py"), *REPO.glob("test/**/*.py"), *REPO.glob("launch/*.py"),
               REPO / "pyproject.toml"]
    cited = {(path.relative_to(REPO).as_posix(), anchor) for path in sources
             for anchor in re.findall(r"docs/known-issues\.md#([a-z0-9-]+)", path.read_text())}
    assert {anchor for _, anchor in cited} >= {"falkordb-directed-ranges", "rclpy-init-context-manager"}
    dangling = sorted(f"{path} -> #{anchor}" for path, anchor in cited if anchor not in anchors)
    assert not dangling, f"code points at known issues that docs/known-issues.md does not define: {dangling}"
    uncited = sorted(anchors - {anchor for _, anchor in cited} - {"fastdds-no-security", "spot-ros2-humble-only"})
    assert not uncited, f"known issues no code comment points at (a workaround removed? delete the entry): {uncited}"
