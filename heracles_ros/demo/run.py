"""``heracles demo``: the whole system on the bundled example scene, from database to picture.

Steps: start the database; mirror the example scene through the ``dsg_mirror``
node; start the ``dispatcher`` with the simulated Spot; then talk to the ``language_server``
(a question, and a command that is planned and executed) through the real agent
loop, Cypher tool, goal checker and planner, with the configured model or,
without one, the scripted model turns (:mod:`.scripted_model`, labelled as
such in every line they produce); follow execution over DDS; check what the database recorded; draw
the scene with the path walked. Everything printed goes to ``out``.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from heracles_ros.client.words import plan_lines, progress_line
from heracles_ros.demo.goal import EXAMPLE_SCENE, START_ROOM_CLASS, Anchor, candidate_goals, room_anchor
from heracles_ros.demo.language import HOW_TO_ENABLE, LanguageChoice
from heracles_ros.demo.plot import Overlay, Target, render_scene
from heracles_ros.demo.scripted_model import LABEL, MODEL_NAME, QUESTION, ScriptedModelServer
from heracles_ros.demo.session import NAMESPACE, DemoSession
from heracles_ros.errors import ExecutionError, HeraclesError
from heracles_ros.outcomes import DispatchStatus, StepState
from heracles_ros.plan_types import PlanResult, Point3

if TYPE_CHECKING:
    from heracles_ros.execution.robot_state import RobotStateStore

#: The demo's own graph: a FalkorDB server may hold the user's real scene under another name.
GRAPH_NAME = "heracles_demo"
PICTURE_NAME = "heracles_demo.png"
#: Printed before every scripted line of the output.
SCRIPTED_TAG = "scripted"
#: Seconds the demo waits, after the plan's end, for the language server's result of the command.
COMMAND_RESULT_S = 10.0
_NO_MODEL_HINT = (" (to run the demo without a language model, unset OPENAI_API_KEY and OLLAMA_HOST and leave out "
                  "--llm / --base-url)")


@dataclass
class DemoOptions:
    out_dir: Path
    #: None: an embedded database under ``out_dir``.
    db_uri: str | None = None
    language: LanguageChoice | None = None
    scene_file: Path = EXAMPLE_SCENE
    #: Simulated seconds per wall-clock second of the simulated Spot.
    time_scale: float = 10.0
    mirror_timeout_s: float = 60.0
    planner_timeout_s: float = 30.0
    execution_timeout_s: float = 180.0
    llm_timeout_s: float = 300.0
    #: ROS domain of the in-process nodes (None: ROS_DOMAIN_ID or 0).
    domain_id: int | None = None
    #: Show the nodes' and the library's informational log lines between the demo's own output.
    verbose: bool = False


@dataclass
class DemoReport:
    """What happened, for tests and callers; the printed text says the same."""

    db_description: str = ""
    mirrored_nodes: int = 0
    mirrored_edges: int = 0
    answer: str = ""
    #: The task in words (the command given).
    task: str = ""
    goal: str = ""
    plan: PlanResult | None = None
    status: str = ""
    reason: str = ""
    robot_place: str = ""
    holding: str = ""
    path: list[Point3] = field(default_factory=list)
    picture: Path | None = None
    #: The model's turns were the scripted ones (no language model configured).
    scripted: bool = False

    @property
    def success(self) -> bool:
        return self.status == DispatchStatus.SUCCEEDED

    def to_dict(self) -> dict[str, Any]:
        """What ``heracles demo --json`` prints: the same facts as the text, the plan's steps in words."""
        return {
            "success": self.success, "status": self.status, "reason": self.reason, "scripted": self.scripted,
            "database": self.db_description, "mirrored": {"nodes": self.mirrored_nodes, "edges": self.mirrored_edges},
            "answer": self.answer, "task": self.task, "goal": self.goal,
            "plan": [f"{a.name} {' '.join(a.args)}" for a in self.plan.actions] if self.plan is not None else [],
            "robot_place": self.robot_place, "holding": self.holding,
            "path": [list(point) for point in self.path], "picture": str(self.picture) if self.picture else "",
        }


def run_demo(options: DemoOptions, out: TextIO | None = None) -> DemoReport:
    """Run the demo, printing to ``out`` (default stdout); raises a HeraclesError subclass naming what went wrong."""
    from heracles_ros.embedded.server import EmbeddedServer
    from heracles_ros.execution.robot_state import RobotStateStore
    from heracles_ros.graphdb import open_store, parse_db_uri

    printer = _Printer(out if out is not None else sys.stdout)
    report = DemoReport()
    options.out_dir.mkdir(parents=True, exist_ok=True)
    db_uri = options.db_uri or f"embedded:{options.out_dir / 'db'}"
    target = parse_db_uri(db_uri)
    server = EmbeddedServer(target.data_dir) if target.kind == "embedded" and target.data_dir else None
    owner = f"heracles demo (pid {os.getpid()})"
    started_server = server is not None and server.running() is None

    printer.step("database")
    if server is not None and started_server:
        server.ensure_started(owner=owner)  # the demo's own database: started again on every run
    store = open_store(db_uri, graph=GRAPH_NAME, timeout_s=30.0)
    try:
        store.ping()
        report.db_description = store.description
        printer.line(f"{store.description}" + (" (started for this demo)" if started_server else ""))
        states = RobotStateStore(store)
        states.forget()  # a fresh robot: the example scene, not what an earlier run left behind

        start = _run_system(store, db_uri, options, printer, report)
        _recorded(states, printer, report)

        printer.step("picture")
        report.picture = _draw(options, report, start)
        printer.line(f"wrote {report.picture}")
    finally:
        store.close()
        if started_server and server is not None:
            server.stop_if_started_by(owner)

    if report.scripted:
        printer.blank()
        printer.text(HOW_TO_ENABLE)
    printer.blank()
    printer.text(f"demo {'finished' if report.success else 'FAILED'}: {report.status}"
                 + (f" ({report.reason})" if report.reason else ""))
    return report


def _run_system(store: Any, db_uri: str, options: DemoOptions, printer: _Printer, report: DemoReport) -> Anchor:
    """The three nodes on the example scene: mirror it, start the dispatcher with the simulated Spot, ask and
    command through the language server, follow the plan to its end. Returns where the robot started."""
    with DemoSession(domain_id=options.domain_id, log_level="info" if options.verbose else "warn") as session:
        common = {"db_uri": db_uri, "graph_name": GRAPH_NAME}
        printer.step("mirror the example scene")
        session.start_mirror({**common, "scene_file": str(options.scene_file), "status_period_s": 0.5})
        status = _wait_mirrored(session, options.mirror_timeout_s)
        report.mirrored_nodes, report.mirrored_edges = int(status.nodes), int(status.edges)
        printer.line(f"{options.scene_file.name}: {status.nodes} nodes and {status.edges} edges in the database "
                     f"({status.last_latency_s:.2f} s); node {NAMESPACE}/dsg_mirror")

        start = room_anchor(store, START_ROOM_CLASS)
        printer.step("start the dispatcher with the simulated Spot")
        session.start_dispatcher({
            **common, "driver": "sim", "start_place": start.place,
            "sim_time_scale": float(options.time_scale), "planner_timeout_s": float(options.planner_timeout_s),
        })
        printer.line(f"robot at {start.place} in the {start.room_class} ({start.room}); simulated time runs "
                     f"{options.time_scale:g}x; node {NAMESPACE}/dispatcher")

        with contextlib.ExitStack() as scripted:
            language = options.language
            if language is None:  # no model configured: the same loop, with the scripted turns
                model = scripted.enter_context(ScriptedModelServer())
                language = LanguageChoice("openai", MODEL_NAME, model.base_url, "no language model configured")
                report.scripted = True
            plan_msg = _language_path(session, store, start, options, language, printer, report, common)

        printer.step("execute")
        _follow(session, plan_msg, options.execution_timeout_s, printer, report, start)
        session.command_result(timeout_s=COMMAND_RESULT_S)
    return start


def _recorded(states: RobotStateStore, printer: _Printer, report: DemoReport) -> None:
    """What the database holds after the run: the robot's place and load, and where each placed object is."""
    printer.step("what the database recorded")
    robot = states.read()
    if robot is None:
        raise ExecutionError("the database holds no robot record after execution")
    report.robot_place, report.holding = robot.place, robot.holding
    printer.line(f"robot at {robot.place or 'an unknown place'} "
                 f"({robot.position[0]:.1f}, {robot.position[1]:.1f}), "
                 f"holding {robot.holding or 'nothing'}")
    if report.plan is not None:
        for action in report.plan.actions:
            if action.name == "place":
                obj = action.args[0] if action.args else action.target_symbol
                where = states.position_of(obj)
                if where is not None:
                    printer.line(f"{obj} is now at ({where[0]:.1f}, {where[1]:.1f})")


# -- the language layer ----------------------------------------------------------------
def _language_path(session: DemoSession, store: Any, start: Anchor, options: DemoOptions, language: LanguageChoice,
                   printer: _Printer, report: DemoReport, common: dict[str, Any]) -> Any:
    """A question and a command in plain language through the language_server's services."""
    from heracles_ros.ros.plan_msgs import plan_from_msg

    label = f"[{SCRIPTED_TAG}] " if report.scripted else ""
    printer.step(f"language layer: {LABEL if report.scripted else language.description}")
    session.start_language_server({
        **common, "llm": language.provider, "model": language.model, "base_url": language.base_url,
    })
    printer.line(f"node {NAMESPACE}/language_server up")

    printer.line(f"{label}ask: {QUESTION}")
    answer = session.ask(QUESTION, timeout_s=options.llm_timeout_s)
    if answer.error:
        raise HeraclesError(f"the question failed: {answer.error}{_NO_MODEL_HINT}")
    report.answer = answer.answer
    printer.line(f"{label}answer: {answer.answer}" + (f"  ({answer.explanation})" if answer.explanation else ""))
    printer.line(f"        {answer.tool_calls} Cypher quer{'y' if answer.tool_calls == 1 else 'ies'}, "
                 f"{answer.input_tokens} + {answer.output_tokens} tokens, {answer.latency_s:.1f} s")

    instruction = candidate_goals(store, start)[0].instruction
    report.task = instruction
    printer.line(f"{label}command: {instruction}")
    reply = session.command(instruction, timeout_s=options.llm_timeout_s)
    if not reply.plan.steps:  # the command ended before a plan: its result says why
        raise HeraclesError(f"the command did not reach a plan: {reply.outcome}: {reply.reason}{_NO_MODEL_HINT}")
    report.goal = reply.goal
    printer.line(f"{label}goal: {reply.goal}  ({reply.goal_text})")
    plan_msg = reply.plan
    report.plan = plan_from_msg(plan_msg)
    _print_plan(printer, plan_msg, report.plan)
    return plan_msg


# -- following execution -------------------------------------------------------------------
#: The progress events that end a step (the robot is somewhere the path should include).
_STEP_ENDS = (StepState.SUCCEEDED, StepState.FAILED, StepState.CANCELLED)


def _follow(session: DemoSession, plan_msg: Any, timeout_s: float, printer: _Printer, report: DemoReport,
            start: Anchor) -> None:
    """Print progress as it arrives until the plan's result; the path walked goes into the report."""
    plan_id = plan_msg.plan_id
    steps = list(plan_msg.steps)
    report.path = [start.position]
    began = time.monotonic()
    deadline = began + timeout_s
    while True:
        event = session.next_event(deadline - time.monotonic())
        if event is None:
            raise ExecutionError(f"no result for plan {plan_id} within {timeout_s:g} s")
        msg = event.msg
        if getattr(msg, "plan_id", None) != plan_id:
            continue
        if event.kind == "dispatch_progress":
            printer.line(f"{time.monotonic() - began:6.2f} s  {progress_line(msg)}")
            if msg.state in _STEP_ENDS:
                _extend_path(report.path, msg, steps)
        elif event.kind == "dispatch_result":
            report.status, report.reason = msg.status, msg.reason
            printer.line(f"result: {msg.status}, {msg.steps_completed} steps, {msg.replans} replans; "
                         f"robot at {msg.robot_place or '?'} holding {msg.holding or 'nothing'}"
                         + (f"; {msg.reason}" if msg.reason else ""))
            return


def _extend_path(path: list[Point3], msg: Any, steps: list[Any]) -> None:
    """The walked path: a finished walk of the sent plan adds its waypoints; anything else, where the robot is."""
    here = (msg.robot_position.x, msg.robot_position.y, msg.robot_position.z)
    if msg.replans == 0 and msg.state == StepState.SUCCEEDED and msg.action == "goto" and msg.step_index < len(steps):
        path.extend((p.x, p.y, p.z) for p in steps[msg.step_index].waypoints)
    path.append(here)


def _wait_mirrored(session: DemoSession, timeout_s: float) -> Any:
    status = _wait_for(session, "mirror_status", lambda m: m.snapshots_applied >= 1 or m.last_error, timeout_s,
                       "the example scene in the database")
    if status.last_error:
        raise HeraclesError(f"the mirror could not load the scene: {status.last_error}")
    return status


def _wait_for(session: DemoSession, kind: str, predicate: Any, timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        event = session.next_event(deadline - time.monotonic())
        if event is None:
            raise ExecutionError(f"timed out after {timeout_s:g} s waiting for {what}")
        if event.kind == kind and predicate(event.msg):
            return event.msg


# -- output -----------------------------------------------------------------------------------
def _print_plan(printer: _Printer, plan_msg: Any, plan: PlanResult) -> None:
    """The plan in the CLI's words (client/words.py), with the planner's time on the headline."""
    headline, *steps = plan_lines(plan_msg)
    search = plan.timings.get("total")
    printer.line(headline + (f", planned in {search:.2f} s" if search is not None else ""))
    for line in steps:
        printer.line(line)


def _draw(options: DemoOptions, report: DemoReport, start: Anchor) -> Path:
    from heracles_ros.scene.io import load_scene
    from heracles_ros.scene.tables import extract_tables, id_of
    from heracles_ros.schema import is_scene_symbol

    tables = extract_tables(load_scene(options.scene_file))
    targets = []
    if report.plan is not None:
        for action in report.plan.actions:
            if action.name == "goto":
                continue
            row = tables.nodes.get(id_of(action.target_symbol)) if is_scene_symbol(action.target_symbol) else None
            what = f" ({row[1]})" if row else ""
            where = f" at {action.args[1]}" if action.name == "place" and len(action.args) > 1 else ""
            targets.append(Target(action.target_symbol, f"{action.name} {action.target_symbol}{what}{where}",
                                  action.target))
    overlay = Overlay(
        title=f"heracles demo, {'scripted model turns' if report.scripted else 'language model'}: "
        f"{report.task or 'no task'}",
        subtitle=f"goal {report.goal}: {report.status or 'not run'}" if report.goal else "",
        path=report.path,
        targets=targets,
        start=start.position,
        end=report.path[-1] if len(report.path) > 1 else None,
    )
    return render_scene(tables, overlay, options.out_dir / PICTURE_NAME)


class _Printer:
    """Numbered steps and indented lines, flushed at once so progress shows live."""

    def __init__(self, out: TextIO):
        self.out = out
        self.count = 0

    def step(self, title: str) -> None:
        self.count += 1
        self.text(f"[{self.count}] {title}")

    def line(self, text: str) -> None:
        self.text(f"    {text}")

    def blank(self) -> None:
        self.text("")

    def text(self, text: str) -> None:
        self.out.write(text + "\n")
        self.out.flush()
