"""The ``language_server`` node: questions, commands and corrections in plain language.

Interface (names relative, so a robot namespace applies):

- serves ``ask`` (heracles_ros/srv/Ask), ``command`` (heracles_ros/srv/Command,
  plan only) and ``correct`` (heracles_ros/srv/Correct); each takes a
  ``session`` that keeps the conversation (:mod:`~heracles_ros.agent.sessions`),
  and ``ask`` / ``command`` may answer with a clarification and its candidates;
- serves ``corrections`` (heracles_ros/srv/ManageCorrections: list, revert,
  clear, no model involved);
- serves ``find`` (heracles_ros/srv/Find): the scene's objects some words
  name, best first, through the same resolver as the model's ``find_objects``
  tool (:mod:`~heracles_ros.meaning.resolver`; no model involved);
- serves the ``execute_command`` action (heracles_ros/action/ExecuteCommand) and
  the ``confirm`` service, publishes ``command_rejections``, and sends plans to
  the dispatcher's ``execute_plan`` action (see :mod:`.command_action`);
- publishes ``last_answer`` (std_msgs/msg/String) and ``answer_marker``
  (visualization_msgs/msg/MarkerArray): the outcome of the latest request, as
  text and as one RViz text marker above the robot's recorded position
  (namespace :data:`NS_ANSWER`, id 0, so each replaces the one before). Both
  are transient-local, depth 1: a console that starts later still gets it.

Parameters: :mod:`.language_settings`. API keys come only from the environment
(``OPENAI_API_KEY``), never from parameters.

One language server per robot: a second one in the same namespace refuses to
start, or stops once it finds the first's claim late (``instance_check_s``,
:mod:`~heracles_ros.ros.claims`).

Every request is one conversation with the model, run by the library's
:class:`~heracles_ros.agent.loop.Agent`; failures (model down or garbled, a
goal that stays invalid, no plan, no dispatcher listening) come back in the
response's ``error`` field and the node keeps serving.

Concurrency (decision): a model can take minutes, so the services sit in one
ReentrantCallbackGroup and each request runs on the executor thread that took
it; :func:`main` gives the MultiThreadedExecutor ``request_workers`` + 3
threads. At most ``request_workers`` requests run at once; one more is answered
at once with a "busy" error rather than queueing behind slow models, so
executor threads always remain for everything else. The ``execute_command``
action runs one command at a time outside those slots, on one more thread.
One agent serves all
requests: each call keeps its conversation to itself, and what calls share
(schema-facts cache, the planner's place-graph cache, the model's and the
database's clients) is locked or thread-safe.
"""
from __future__ import annotations

import json
import logging
import sys
import textwrap
import threading
import time
from collections.abc import Callable
from typing import Any

from rclpy.callback_groups import ReentrantCallbackGroup
from std_msgs.msg import Header, String
from visualization_msgs.msg import Marker, MarkerArray

from heracles_ros.agent.llm import LLM
from heracles_ros.agent.loop import Agent
from heracles_ros.agent.results import AskResult, CommandResult, CorrectResult, Usage
from heracles_ros.agent.sessions import Sessions
from heracles_ros.command_pipeline import CommandPipeline
from heracles_ros.errors import HeraclesError, describe
from heracles_ros.execution.robot_state import RobotStateStore
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.meaning.resolver import Resolver
from heracles_ros.mirror.corrections import Corrections
from heracles_ros.nodes.command_action import CommandAction, candidate_msgs, clip
from heracles_ros.nodes.language_settings import PARAMETERS, LanguageSettings
from heracles_ros.nodes.markers import make_marker
from heracles_ros.plan_types import PlanResult
from heracles_ros.planning.planner import Planner
from heracles_ros.ros import interfaces
from heracles_ros.ros.node_base import HeraclesNode
from heracles_ros.ros.node_settings import settings_from
from heracles_ros.ros.request_fields import answer_type_problem, text_problem
from heracles_ros.ros.runner import CLOSE_SHARE
from heracles_ros.schema import is_scene_symbol
from heracles_ros.srv import Ask, Command, Correct, Find, ManageCorrections

log = logging.getLogger(__name__)

NODE_NAME = "language_server"
#: RViz namespace of the answer marker (one TEXT_VIEW_FACING, id 0).
NS_ANSWER = "heracles/answer"
#: The marker floats this high above the robot's recorded position (or the map origin), metres.
ANSWER_LIFT_M = 1.5
ANSWER_TEXT_HEIGHT_M = 0.3
_ANSWER_COLOUR = (1.0, 1.0, 0.6, 1.0)
_ERROR_COLOUR = (1.0, 0.35, 0.3, 1.0)
#: Characters per marker line, and at most this many lines (RViz text does not wrap by itself).
_MARKER_WIDTH = 60
_MARKER_LINES = 8
#: Executor threads beyond the request workers, so a full house of slow models blocks nothing else
#: (one of them runs the execute_command goal).
SPARE_THREADS = 3
#: Objects a find answers when the request's ``k`` is 0.
DEFAULT_FIND_K = 5
#: Time limit of the node's own database reads (planner, robot record), seconds; the model's
#: queries get ``query_timeout_s``.
STORE_TIMEOUT_S = 60.0


def plan_summary(plan: PlanResult | None) -> str:
    """One line per step after a headline, or why there is no plan ("" when planning was not reached)."""
    if plan is None:
        return ""
    if not plan.ok:
        return f"no plan ({plan.status.value})" + (f": {plan.reason}" if plan.reason else "")
    head = f"{len(plan.actions)} steps from {plan.start_symbol}, cost {plan.total_cost:g}"
    steps = [f"{i}. {a.name} {' '.join(a.args)}" for i, a in enumerate(plan.actions, start=1)]
    return "\n".join([head, *steps])


def outcome_text(result: AskResult | CommandResult | CorrectResult) -> str:
    """What ``last_answer`` says about a request: the answer, goal or changes, else the error."""
    if result.error:
        return f"error: {result.error}"
    if result.clarification:
        return f"clarify: {result.clarification}"
    if isinstance(result, AskResult):
        return result.answer
    if isinstance(result, CommandResult):
        return result.goal
    return "; ".join([*result.changes, *result.existing]) or "nothing changed"


def marker_text(kind: str, request: str, outcome: str) -> str:
    """The marker's text: the request and its outcome, wrapped to lines RViz can show."""
    lines: list[str] = []
    for paragraph in (f"{kind}: {request.strip()}", outcome):
        lines += textwrap.wrap(paragraph, _MARKER_WIDTH) or [""]
    if len(lines) > _MARKER_LINES:
        lines = [*lines[: _MARKER_LINES - 1], "..."]
    return "\n".join(lines)


class LanguageServerNode(HeraclesNode):
    """Serves ask / command / correct and execute_command through one shared agent; publishes the last answer."""

    NODE_NAME = NODE_NAME
    PARAMETERS = PARAMETERS

    def setup(self, values: dict[str, Any]) -> None:
        self.settings = settings_from(LanguageSettings, values)
        self.claim_robot(interfaces.LANGUAGE_SERVER_CLAIM, self.settings.instance_check_s)
        self.store: GraphStore = open_store(
            self.settings.db_uri, graph=self.settings.graph_name, timeout_s=STORE_TIMEOUT_S
        )
        try:
            # Connect now, not in the first concurrent requests (the client is created lazily).
            self.store.ping()
        except HeraclesError as exc:  # every request will report it until the database is back
            self.get_logger().error(f"the database does not answer yet: {exc}")
        try:
            # The model's queries go to a read replica (embedded; other backends: a second connection),
            # so a query that crashes or starves its server cannot reach the one the mirror writes to.
            self.query_store: GraphStore = open_store(
                self.settings.db_uri, graph=self.settings.graph_name, timeout_s=STORE_TIMEOUT_S, read_replica=True
            )
        except HeraclesError as exc:
            self.get_logger().error(f"no read replica ({exc}); the model's queries run on {self.store.description}")
            self.query_store = self.store
        self._robot = RobotStateStore(self.store, symbol=self.settings.robot_symbol)
        self._planner = Planner(
            self.store, timeout_s=self.settings.planner_timeout_s, robot_symbol=self.settings.robot_symbol,
            snapshot_wait_s=self.settings.snapshot_wait_s,
        )
        self._planner.preload()  # the first command must not wait seconds for a kilometre-scale place graph
        #: Checks (through the agent), plans: the node's one planner, shared by both.
        self.pipeline = CommandPipeline(self._planner)
        self._agent_lock = threading.Lock()
        self._agent: Agent | None = None
        self._llm: LLM | None = None
        self._resolver_lock = threading.Lock()
        self._resolver: Resolver | None = None
        self._slots = threading.BoundedSemaphore(self.settings.request_workers)
        self._publish_lock = threading.Lock()
        self._sessions = Sessions(max_exchanges=self.settings.session_exchanges,
                                  max_sessions=self.settings.max_sessions)

        self._answer_pub = interfaces.LAST_ANSWER.publisher(self)
        self._marker_pub = interfaces.ANSWER_MARKER.publisher(self)
        requests = ReentrantCallbackGroup()
        interfaces.ASK.serve(self, self._on_ask, callback_group=requests)
        interfaces.COMMAND.serve(self, self._on_command, callback_group=requests)
        interfaces.CORRECT.serve(self, self._on_correct, callback_group=requests)
        interfaces.CORRECTIONS.serve(self, self._on_corrections, callback_group=requests)
        interfaces.FIND.serve(self, self._on_find, callback_group=requests)
        self.commands = self.destroyed_with_node(CommandAction(
            self, get_agent=self._get_agent, pipeline=self.pipeline, summary=plan_summary,
            announce=self._publish_answer,
            require_confirmation=self.settings.require_confirmation,
            confirm_timeout_s=self.settings.confirm_timeout_s, map_frame=self.settings.map_frame,
            client_lost_s=self.settings.client_lost_s, get_resolver=self._get_resolver,
        ))
        try:
            self._get_agent()
        except HeraclesError as exc:  # e.g. no API key yet: every request will say so, and retry
            self.get_logger().error(f"the language model is not usable yet: {exc}")
        model = self.settings.model_settings()
        self.get_logger().info(
            f"answering with {model.provider}:{model.model_name} ({self.settings.method}) on {self.store.description}"
        )

    # -- the agent -------------------------------------------------------------------
    def _get_agent(self) -> Agent:
        """The shared agent, built on first use (again after a failure, e.g. the SDK was missing)."""
        with self._agent_lock:
            if self._agent is None:
                from heracles_ros.agent.factory import make_llm

                llm = make_llm(self.settings.model_settings())
                self._agent = Agent(self.store, llm, self.settings.agent_settings(), checker=self._planner,
                                    sessions=self._sessions, query_store=self.query_store,
                                    resolver=self._get_resolver)
                self._llm = llm
            return self._agent

    def _get_resolver(self) -> Resolver:
        """The one resolver of ``find`` and the model's ``find_objects`` (word vectors from the ``embeddings``
        parameters), made on first use; made again after a failure (e.g. no key for the provider yet)."""
        with self._resolver_lock:
            if self._resolver is None:
                self._resolver = Resolver(self.query_store, self.settings.embedder(),
                                          wait_s=self.settings.snapshot_wait_s)
            return self._resolver

    # -- services (each runs on its executor thread, bounded by the request slots) ------------
    def _on_ask(self, request: Ask.Request, response: Ask.Response) -> Ask.Response:
        answer_type = request.answer_type.strip() or None
        result = self._serve(
            "ask", request.question, AskResult,
            lambda agent: agent.ask(request.question, answer_type=answer_type, session=request.session),
            text_problem(question=request.question, session=request.session)
            or answer_type_problem(request.answer_type),
        )
        response.answer = result.answer
        response.explanation = result.explanation
        return _answered(response, result)

    def _on_command(self, request: Command.Request, response: Command.Response) -> Command.Response:
        result = self._serve(
            "command", request.instruction, CommandResult,
            lambda agent: self.pipeline.command(agent, request.instruction, session=request.session),
            text_problem(instruction=request.instruction, session=request.session),
        )
        response.goal = result.goal
        response.goal_text = result.goal_text
        response.plan_summary = plan_summary(result.plan)
        return _answered(response, result)

    def _on_correct(self, request: Correct.Request, response: Correct.Response) -> Correct.Response:
        result = self._serve(
            "correct", request.instruction, CorrectResult,
            lambda agent: agent.correct(request.instruction, session=request.session),
            text_problem(instruction=request.instruction, session=request.session),
        )
        response.changes = list(result.changes)
        response.added = list(result.added)
        response.existing = list(result.existing)
        response.explanation = result.explanation
        return _answered(response, result)

    def _on_corrections(
        self, request: ManageCorrections.Request, response: ManageCorrections.Response
    ) -> ManageCorrections.Response:
        """List, revert or clear corrections directly (no model involved)."""
        malformed = text_problem(action=request.action, id=request.id)
        if malformed:
            response.error = f"ConfigError: {malformed}"
            return response
        try:
            records, changes = Corrections(self.store).manage(
                request.action, request.id, active_only=request.active_only, author="corrections service"
            )
        except HeraclesError as exc:
            response.error = describe(exc)
            return response
        response.corrections = [json.dumps(record.as_dict(), default=str) for record in records]
        response.changes = [str(change) for change in changes]
        return response

    def _on_find(self, request: Find.Request, response: Find.Response) -> Find.Response:
        """The objects the words name (or those like ``like_symbol``), best first; no model involved."""
        text, like = request.text, request.like_symbol
        problem = text_problem(text=text, like_symbol=like)
        if problem:
            response.error = f"ConfigError: {problem}"
            return response
        if bool(text.strip()) == bool(like):
            response.error = "ConfigError: give either text or like_symbol"
            return response
        if like and not is_scene_symbol(like):
            response.error = f"ConfigError: like_symbol {like[:40]!r} is not a scene symbol (e.g. O12)"
            return response
        refused = self._take_slot()
        if refused:
            response.error = refused
            return response

        def find() -> list[str]:
            resolver = self._get_resolver()
            k = request.k or DEFAULT_FIND_K
            found = resolver.like(like, k=k) if like else resolver.find(text, k=k)
            return [json.dumps(item.to_json()) for item in found.objects]

        objects, response.error = self._run_in_slot("find", find)
        response.objects = objects or []
        return response

    def _take_slot(self) -> str:
        """Take a free request slot: "" when one was taken, else why none was (shutting down, or all busy)."""
        if self._closed:
            return "ExecutionError: the language server is shutting down"
        if not self._slots.acquire(blocking=False):
            return (f"busy: all {self.settings.request_workers} request workers are answering; try again shortly "
                    "(or raise the request_workers parameter)")
        return ""

    def _run_in_slot(self, kind: str, run: Callable[[], Any]) -> tuple[Any, str]:
        """``run()`` in the slot taken, which is released after: (its value, "") or (None, what failed)."""
        try:
            return run(), ""
        except HeraclesError as exc:
            return None, describe(exc)
        except Exception as exc:  # the node must outlive a bug in one request
            self.get_logger().error(f"{kind} failed with an internal error: {exc!r}")
            return None, f"internal error: {exc!r}"
        finally:
            self._slots.release()

    def _serve(self, kind: str, text: str, result_type: Callable[[], Any], run: Callable[[Agent], Any],
               malformed: str) -> Any:
        """Run one request within a free slot; every failure becomes the result's error.

        Requests that ran publish their outcome as the last answer; refused ones
        (``malformed``: a field out of its bound, busy, shutting down) do not, so they never hide a real answer.
        """
        started = time.monotonic()
        result = result_type()
        if malformed:
            result.error = f"ConfigError: {malformed}"
            self.get_logger().warning(f"{kind} refused: {result.error}")
            return result
        refused = self._take_slot()
        if refused:
            result.error = refused
            self.get_logger().warning(f"{kind} refused: {result.error}")
            return result
        answered, failed = self._run_in_slot(kind, lambda: run(self._get_agent()))
        if failed:
            result.error = failed
        else:
            result = answered
        result.usage.latency_s = time.monotonic() - started  # the whole request, planning included
        outcome = outcome_text(result)
        self.get_logger().info(f"{kind} {clip(text)!r} -> {clip(outcome, 400)} ({result.usage.latency_s:.1f} s)")
        self._publish_answer(kind, text, outcome)
        return result

    # -- last answer -----------------------------------------------------------------
    def _publish_answer(self, kind: str, request: str, outcome: str) -> None:
        try:
            state = self._robot.read()
        except HeraclesError:
            state = None  # the database is down: the marker goes to the origin, the text still goes out
        x, y, z = state.position if state is not None else (0.0, 0.0, 0.0)
        colour = _ERROR_COLOUR if outcome.startswith("error:") else _ANSWER_COLOUR
        header = Header(frame_id=self.settings.map_frame, stamp=self.get_clock().now().to_msg())
        marker = make_marker(  # lifetime 0: stays until the next answer replaces it
            header, NS_ANSWER, 0, Marker.TEXT_VIEW_FACING, (x, y, z + ANSWER_LIFT_M),
            (0.0, 0.0, ANSWER_TEXT_HEIGHT_M), colour, text=marker_text(kind, request, outcome),
        )
        with self._publish_lock:  # text and marker of one request go out together, in request order
            self._answer_pub.publish(String(data=outcome))
            self._marker_pub.publish(MarkerArray(markers=[marker]))

    # -- shutdown ----------------------------------------------------------------------
    def finish(self) -> None:
        """New requests are refused from now; the running command ends (its plan is cancelled at the
        dispatcher, its goal aborted with reason shutting_down) within the shutdown budget."""
        budget_s = self.shutdown_timeout_s * CLOSE_SHARE * 0.8
        if not self.commands.close(budget_s):
            self.get_logger().error(f"the running command did not end within {budget_s:.1f} s of closing")

    def release(self) -> None:
        """The model client and the database connections."""
        if hasattr(self, "_agent_lock"):
            with self._agent_lock:
                if self._llm is not None:
                    self._llm.close()
                self._agent = self._llm = None
        store = getattr(self, "store", None)
        query_store = getattr(self, "query_store", store)
        if query_store is not store and query_store is not None:
            query_store.close()
        if store is not None:
            store.close()

    def executor_threads(self) -> int:
        """One per request worker, and spares so that a full house of slow models blocks nothing else."""
        return self.settings.request_workers + SPARE_THREADS


def _answered(response: Any, result: Any) -> Any:
    """``response`` with what every model-answered service returns: the question back with its candidates,
    what the model cost (queries, tool calls, tokens, time) and the error."""
    response.clarification = result.clarification
    response.candidates = candidate_msgs(result.candidates)
    usage: Usage = result.usage
    response.queries = [str(q) for q in usage.queries]
    response.tool_calls = usage.tool_calls
    response.input_tokens = usage.input_tokens
    response.output_tokens = usage.output_tokens
    response.latency_s = float(usage.latency_s)
    response.error = result.error
    return response


main = LanguageServerNode.main


if __name__ == "__main__":
    sys.exit(main())
