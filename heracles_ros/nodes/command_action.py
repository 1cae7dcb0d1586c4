"""The language_server's ``execute_command`` action: one instruction, from words to a finished task.

Goal: an instruction and its options (execute or plan only, confirmation,
session). Acceptance is decided at once: a goal is rejected when another
command runs (one robot, one task; ``busy``), the instruction is empty or a
field is out of its bound (``invalid``; :mod:`.request_fields`), no model can be built
(``no_model``), the node is closing (``shutting_down``), or, to execute, no
dispatcher serves ``execute_plan`` (``no_dispatcher``) or the dispatcher's
latched stop is on (``stopped``, from its ``stop_state`` topic). An action's
goal response carries only ``accepted``, so the reason goes out on
``command_rejections`` (heracles_ros/msg/CommandRejection) under the goal's
``command_id`` before the response is sent. The goal, cancel and result
services queue a burst of requests instead of dropping it, and a result is
kept for a late client (:data:`~heracles_ros.ros.interfaces.EXECUTE_COMMAND`).

With ``search_for`` (and ``execute``), what the map lacks is looked for first (:mod:`.command_search`):
feedback ``search`` (where it looks next, what it has ruled out, what it found where), the legs' plans
through the dispatcher like any plan (confirmed first as a tour when confirmation is required); once it is
seen, the instruction is grounded on the map that now holds it and goes on as below. A clarification that
matched nothing and names what the map lacks (CLARIFY's third field) proposes that search in its reason.

Feedback, in order: ``grounding`` (once at the start, then once per Cypher
query the model runs, with the queries so far), ``goal`` (the checked goal and
the same in words), ``plan``, ``confirm`` (only when confirmation is required:
the goal in words and the plan; the command then waits, bounded, for the
``confirm`` service or a cancel), ``executing`` (the dispatcher accepted the
plan), then ``step`` for every dispatcher event with the robot's position.

Result: the outcome (succeeded, planned, clarify, failed, cancelled, refused,
rejected, stopped), the reason, the goal, the plan, and how far the robot got.
Cancelling the goal stops this command only: during grounding it ends after
the model's current turn, while waiting for confirmation at once, during
execution it cancels the dispatcher's goal, which stops the robot. The same
happens, with outcome cancelled and the goal ABORTED, when the goal's
``client_node`` has left the ROS graph for ``client_lost_s`` (reason
``client_lost``) and when the node closes (reason ``shutting_down``). Every
wait is bounded and gives up when the node closes. The client watch and every
deadline here run on wall-clock (steady) time, whatever the ROS clock does.

Execution goes through the dispatcher's ``execute_plan`` action (:mod:`.plan_dispatch`).
"""
from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rclpy.action import ActionClient, CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.node import Node
from std_msgs.msg import Header

from heracles_ros.action import ExecuteCommand
from heracles_ros.agent.loop import Agent
from heracles_ros.agent.results import Candidate, CommandResult
from heracles_ros.command_pipeline import CommandPipeline
from heracles_ros.errors import HeraclesError, describe
from heracles_ros.meaning.resolver import Resolver
from heracles_ros.msg import Candidate as CandidateMsg
from heracles_ros.msg import CommandRejection, StopState
from heracles_ros.nodes.command_search import CommandSearch, search_proposal
from heracles_ros.nodes.plan_dispatch import POLL_S, PlanDispatch
from heracles_ros.outcomes import SUCCESSFUL_COMMANDS, CommandOutcome, RejectionCode
from heracles_ros.plan_types import PlanResult
from heracles_ros.planning.planner import Planner
from heracles_ros.ros import interfaces
from heracles_ros.ros.client_presence import GRAPH_READ_PERIOD_S, ClientPresence
from heracles_ros.ros.plan_msgs import plan_to_msg
from heracles_ros.ros.request_fields import MAX_ID_CHARS, MAX_TEXT_CHARS, text_problem
from heracles_ros.ros.single_goal import SingleGoalServer, end_goal
from heracles_ros.search.target import target_of
from heracles_ros.srv import Confirm

#: A command slot reserved by an accepted goal that rclpy never handed over (it failed to create the goal
#: handle) is free again after this many seconds.
STALE_RESERVATION_S = 10.0
#: Characters of an instruction that reach the log.
LOGGED_CHARS = 120
#: Seconds a command waits for the model's database (a read replica) to hold what its search found.
REPLICA_WAIT_S = 5.0


@dataclass
class _Running:
    """The one command in progress (accepted, not yet finished)."""

    command_id: str
    instruction: str
    decided: threading.Event = field(default_factory=threading.Event)
    #: True while the command waits for the confirm service.
    waiting: bool = False
    approved: bool = False
    #: Set when rclpy hands the accepted goal over (until then the slot is only reserved).
    started: bool = False
    reserved_at: float = field(default_factory=time.monotonic)
    #: The goal's client_node ('' = not watched) and, once it has been gone for client_lost_s, why.
    client_node: str = ""
    client_lost: str = ""


def clip(text: str, limit: int = LOGGED_CHARS) -> str:
    """``text`` cut to ``limit`` characters (with a note of how much was cut) for logs and messages."""
    text = text.strip()
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def candidate_msgs(candidates: list[Candidate]) -> list[CandidateMsg]:
    return [
        CandidateMsg(
            symbol=c.symbol, class_name=c.class_name, room=c.room, room_class=c.room_class,
            distance_m=-1.0 if c.distance_m is None else float(c.distance_m), description=c.description,
        )
        for c in candidates
    ]


class CommandAction:
    """Serves ``execute_command`` and ``confirm`` on ``node``; sends plans to ``execute_plan``."""

    def __init__(
        self,
        node: Node,
        *,
        get_agent: Callable[[], Agent],
        pipeline: CommandPipeline,
        get_resolver: Callable[[], Resolver] | None = None,
        summary: Callable[[PlanResult | None], str],
        announce: Callable[[str, str, str], None],
        require_confirmation: bool,
        confirm_timeout_s: float,
        map_frame: str,
        client_lost_s: float = 0.0,
    ):
        self.node = node
        self._get_agent = get_agent
        self._pipeline = pipeline
        #: The language server's meaning resolver: a search_for read by meaning (None: WHAT's own classes).
        self._get_resolver = get_resolver
        self._summary = summary
        self._announce = announce
        self.require_confirmation = require_confirmation
        self.confirm_timeout_s = confirm_timeout_s
        self.map_frame = map_frame
        self._lock = threading.Lock()
        self._running: _Running | None = None
        #: Set by close(): every wait below gives up and a running command cancels its plan.
        self.closing = threading.Event()
        #: Set while no command runs (close() waits on it, bounded).
        self.idle = threading.Event()
        self.idle.set()
        self.presence = ClientPresence(node, client_lost_s)
        self._stop_state: StopState | None = None
        group = ReentrantCallbackGroup()
        # Kept for late joiners: a client that subscribed just before its goal still gets the reason.
        self._rejections = interfaces.COMMAND_REJECTIONS.publisher(node)
        self._plan_action = interfaces.EXECUTE_PLAN.full_name(node.get_namespace())
        # Its own exclusive group: the dispatcher's feedback is forwarded in the order it arrives.
        self.plans: ActionClient = interfaces.EXECUTE_PLAN.client(node, callback_group=MutuallyExclusiveCallbackGroup())
        # The dispatcher's latched stop: while it is on, motion goals are refused at once.
        interfaces.STOP_STATE.subscription(node, self._on_stop_state, callback_group=group)
        self.server = SingleGoalServer(
            node, interfaces.EXECUTE_COMMAND, judge=self._on_goal, start=self._on_accepted,
            cancel=lambda goal: CancelResponse.ACCEPT, callback_group=group,
        )
        self.confirm_service = interfaces.CONFIRM.serve(node, self._on_confirm, callback_group=group)
        # On the steady clock: a ROS clock on simulated time (use_sim_time given at start) stands still
        # without /clock, and a watchdog on it would never fire.
        self._client_watch = node.create_timer(GRAPH_READ_PERIOD_S, self._watch_client,
                                               callback_group=MutuallyExclusiveCallbackGroup(),
                                               clock=Clock(clock_type=ClockType.STEADY_TIME))

    def _watch_client(self) -> None:
        """Look at the graph for the running command's client (absence counts from the first look
        that misses it, so the look is regular, not only when the command happens to check)."""
        running = self._running
        if running is None or not running.started or not running.client_node or running.client_lost:
            return
        if self.presence.lost(running.client_node):
            running.client_lost = (f"client_lost: {running.client_node} has been gone from the ROS graph for "
                                   f"{self.presence.lost_after_s:g} s")
            self.node.get_logger().warning(f"command {running.command_id}: {running.client_lost}; cancelling it")

    def _on_stop_state(self, state: StopState) -> None:
        self._stop_state = state

    def stopped(self) -> StopState | None:
        """The dispatcher's latched stop when it is on, else None."""
        state = self._stop_state
        return state if state is not None and state.stopped else None

    # -- acceptance --------------------------------------------------------------------
    def _on_goal(self, goal: ExecuteCommand.Goal) -> bool:
        """Accept (True), or refuse with the reason published on command_rejections."""
        code, reason = self._refusal(goal)
        if code is None:
            return True
        command_id = clip(goal.command_id, MAX_ID_CHARS)
        self.node.get_logger().warning(f"command {clip(command_id)} rejected ({code.value}): {reason}")
        self._rejections.publish(CommandRejection(
            header=Header(stamp=self.node.get_clock().now().to_msg()), command_id=command_id,
            instruction=clip(goal.instruction, MAX_TEXT_CHARS), code=code.value, reason=reason,
        ))
        return False

    def _refusal(self, goal: ExecuteCommand.Goal) -> tuple[RejectionCode | None, str]:
        """(code, reason) why the goal cannot start, or (None, "") after reserving the one command slot."""
        malformed = text_problem(instruction=goal.instruction, command_id=goal.command_id, session=goal.session,
                                 client_node=goal.client_node, search_for=goal.search_for)
        if malformed:
            return RejectionCode.INVALID, malformed
        goal.command_id = goal.command_id.strip() or f"cmd-{uuid.uuid4().hex[:8]}"
        if not goal.instruction.strip():
            return RejectionCode.INVALID, "the instruction is empty"
        if goal.search_for.strip() and not goal.execute:
            return RejectionCode.INVALID, "search_for walks the robot: send it with execute: true"
        if self.closing.is_set():
            return RejectionCode.SHUTTING_DOWN, "the language server is shutting down"
        try:
            self._get_agent()
        except HeraclesError as exc:
            return RejectionCode.NO_MODEL, f"no language model: {describe(exc)}"
        if goal.execute and not self.plans.server_is_ready():
            return RejectionCode.NO_DISPATCHER, (
                f"no dispatcher serves {self._plan_action}; start the dispatcher in this namespace, "
                "or send the goal with execute: false"
            )
        stop = self.stopped() if goal.execute else None
        if stop is not None:
            return RejectionCode.STOPPED, (
                f"the robot is stopped ({stop.reason or 'latched stop'}); nothing moves until an operator "
                "resumes it (heracles resume), or send the goal with execute: false"
            )
        with self._lock:
            if self.closing.is_set():
                return RejectionCode.SHUTTING_DOWN, "the language server is shutting down"
            running = self._running
            if running is not None and not running.started and \
                    time.monotonic() - running.reserved_at > STALE_RESERVATION_S:
                running = self._running = None  # accepted, but never handed over: nothing runs
                self.idle.set()
            if running is not None:
                return RejectionCode.BUSY, (
                    f"busy: command {running.command_id} ({clip(running.instruction)!r}) is running; "
                    "cancel it first to replace it"
                )
            self._running = _Running(goal.command_id, goal.instruction, client_node=goal.client_node.strip())
            self.idle.clear()
        return None, ""

    def _on_accepted(self, goal: ServerGoalHandle) -> Callable[[ServerGoalHandle], ExecuteCommand.Result]:
        """The accepted goal's command: the slot its judgement reserved."""
        with self._lock:
            running = self._running
            assert running is not None and running.command_id == goal.request.command_id
            running.started = True
        return lambda handle: self._execute(running, handle)

    # -- confirmation ------------------------------------------------------------------
    def _on_confirm(self, request: Confirm.Request, response: Confirm.Response) -> Confirm.Response:
        with self._lock:
            running = self._running
        malformed = text_problem(command_id=request.command_id)
        if malformed:
            response.success, response.message = False, malformed
            return response
        wanted = request.command_id.strip()
        if running is None or (wanted and wanted != running.command_id):
            response.success = False
            response.message = f"no command {wanted} is running".replace("  ", " ")
            return response
        if running.decided.is_set() or not running.waiting:
            response.success = False
            response.message = (f"command {running.command_id} is not waiting for confirmation "
                                "(its plan has not been shown yet, or it was decided already)")
            return response
        running.approved = request.approve
        running.decided.set()
        response.success = True
        response.message = f"command {running.command_id} {'confirmed' if request.approve else 'refused'}"
        return response

    # -- running -----------------------------------------------------------------------
    def _interruption(self, running: _Running, goal: ServerGoalHandle, stage: str) -> str:
        """Why this command must stop now ('' = it goes on): its cancel, its client gone, the node closing."""
        if goal.is_cancel_requested:
            return f"cancelled while {stage}"
        if self.closing.is_set():
            return f"shutting_down: the language server is shutting down (while {stage})"
        if running.client_lost:
            return f"{running.client_lost} (while {stage})"
        return ""

    def _execute(self, running: _Running, goal: ServerGoalHandle) -> ExecuteCommand.Result:
        """Run the command; the goal is marked finished only as its result is returned (rclpy forgets a
        finished goal after a while, and a result that comes later raises inside the executor)."""
        request = goal.request
        result = ExecuteCommand.Result(command_id=running.command_id)
        started = time.monotonic()
        try:
            self._run(running, goal, result)
        except Exception as exc:  # the node must outlive a bug in one command
            self.node.get_logger().error(f"command {running.command_id} failed with an internal error: {exc!r}")
            result.outcome, result.reason = CommandOutcome.FAILED.value, f"internal error: {exc!r}"
        finally:
            self.presence.forget(running.client_node)
            with self._lock:
                self._running = None
                self.idle.set()
        result.latency_s = time.monotonic() - started
        text = result.outcome + (f": {result.reason}" if result.reason else "")
        line = f"command {running.command_id} {clip(request.instruction)!r} -> {clip(text, 400)}"
        # Two call sites: an rclpy logger raises when one call site logs at two severities.
        if result.reason.startswith(("client_lost", RejectionCode.SHUTTING_DOWN.value)):
            self.node.get_logger().warning(line)
        else:
            self.node.get_logger().info(line)
        announced = result.goal if result.outcome in SUCCESSFUL_COMMANDS else text
        # The answer marker reads the robot's record (a database read): off this thread, after the result.
        threading.Thread(target=self._announce_quietly, args=(request.instruction, announced),
                         name=f"announce-{running.command_id}", daemon=True).start()
        end_goal(goal, cancelled=result.outcome == CommandOutcome.CANCELLED,
                 succeeded=result.outcome in SUCCESSFUL_COMMANDS)
        return result

    def _announce_quietly(self, instruction: str, outcome: str) -> None:
        try:
            self._announce("command", clip(instruction, MAX_TEXT_CHARS), outcome)
        except Exception as exc:  # the node may be closing under it: the answer is a courtesy
            self.node.get_logger().debug(f"answer not announced: {exc!r}")

    def _feedback(self, handle: ServerGoalHandle, stage: str, message: str, **fields: Any) -> None:
        handle.publish_feedback(ExecuteCommand.Feedback(
            command_id=handle.request.command_id, stage=stage, message=message, **fields
        ))

    def _run(self, running: _Running, goal: ServerGoalHandle, result: ExecuteCommand.Result) -> None:
        request = goal.request
        queries: list[str] = []

        def on_query(query: str) -> None:
            queries.append(query)
            self._feedback(goal, "grounding", f"query {len(queries)}: {query}", queries=list(queries))

        if request.search_for.strip():
            if not self._searched(running, goal, result):
                return
            self._await_model_sees(goal, result.found)
        self._feedback(goal, "grounding", request.instruction.strip())
        command = self._pipeline.command(
            self._get_agent(), request.instruction, session=request.session, on_query=on_query,
            cancelled=lambda: bool(self._interruption(running, goal, "grounding")),
        )
        _fill(result, command, self._summary(command.plan))
        interrupted = self._interruption(running, goal, "grounding")
        if interrupted:
            result.outcome, result.reason = CommandOutcome.CANCELLED.value, interrupted
            return
        if command.clarification:
            result.outcome, result.reason = CommandOutcome.CLARIFY.value, command.clarification
            result.clarification = command.clarification
            result.candidates = candidate_msgs(command.candidates)
            if command.missing and not command.candidates:  # the map lacks it: propose the search
                result.missing = command.missing
                result.reason += f"; {search_proposal(command.missing)}"
            return
        if not command.goal:
            result.outcome, result.reason = CommandOutcome.FAILED.value, command.error
            return
        self._feedback(goal, "goal", f"{command.goal_text}  {command.goal}", goal=command.goal,
                       goal_text=command.goal_text)
        if command.plan is None or not command.plan.ok:
            result.outcome, result.reason = CommandOutcome.FAILED.value, command.error or "no plan"
            return
        plan = plan_to_msg(command.plan, plan_id=f"{running.command_id}-plan", frame_id=self.map_frame,
                           stamp=self.node.get_clock().now().to_msg())
        result.plan = plan
        self._feedback(goal, "plan", result.plan_summary, goal=command.goal, goal_text=command.goal_text,
                       plan_summary=result.plan_summary, plan=plan)
        if not request.execute:
            result.outcome = CommandOutcome.PLANNED.value
            return
        if (self.require_confirmation or request.require_confirmation) and not self._confirmed(
            running, goal, result
        ):
            return
        if self._stopped_before_moving(result, "before the plan was sent"):
            return
        interrupted = self._interruption(running, goal, "planning")
        if interrupted:
            result.outcome, result.reason = CommandOutcome.CANCELLED.value, f"{interrupted}; nothing moved"
            return
        PlanDispatch(self.node, self.plans, self.closing, feedback=functools.partial(self._feedback, goal),
                     interruption=functools.partial(self._interruption, running, goal),
                     stopped=self._stopped_before_moving).run(plan, result)

    def _searched(self, running: _Running, goal: ServerGoalHandle, result: ExecuteCommand.Result) -> bool:
        """Look for ``search_for`` first when the map lacks it: True when it is there (or was found), else False
        with the result's outcome set (not found, stopped, cancelled, refused, ...)."""
        what = " ".join(goal.request.search_for.split())
        resolver = self._get_resolver() if self._get_resolver is not None else None
        planner = self._pipeline.planner
        if not isinstance(planner, Planner):
            raise TypeError("a command's search needs the node's Planner")
        search = CommandSearch(
            planner, target_of(what, resolver.rank_terms if resolver is not None else None),
            command_id=running.command_id, map_frame=self.map_frame, stamp=lambda: self.node.get_clock().now().to_msg(),
            dispatch=lambda feedback, interruption: PlanDispatch(
                self.node, self.plans, self.closing, feedback=feedback, interruption=interruption,
                stopped=self._stopped_before_moving),
            feedback=functools.partial(self._feedback, goal),
            interruption=functools.partial(self._interruption, running, goal), stopped=self._stopped_before_moving)
        there = search.on_the_map()
        if there is not None:
            result.found, result.found_where = str(there["symbol"]), ""
            self._feedback(goal, "search", f"{what}: {there['symbol']} ({there['class']}) is on the map; no search")
            return True
        rooms = search.first_rooms()
        message = (f"confirm before the robot moves: look for {what}, in {', '.join(rooms) or 'no room'} first "
                   f"(at most {search.search.max_rooms} rooms).\nCall confirm with command_id {running.command_id} "
                   f"and approve true or false, or cancel the goal (waiting up to {self.confirm_timeout_s:g} s)")
        if (self.require_confirmation or goal.request.require_confirmation) and not self._confirmed(
                running, goal, result, message):
            return False
        if self._stopped_before_moving(result, "before the search"):
            return False
        found = search.run()
        result.searched, result.search_distance_m = list(found.visited), found.distance_m
        looked = f"looked in {', '.join(found.visited) or 'no room'}, {found.distance_m:.1f} m walked"
        if found.outcome == "found" and found.found:
            result.found, result.found_where = found.found, found.where
            self._feedback(goal, "search", f"found {found.found} in {found.where or 'an unnamed room'}; {looked}")
            return True
        outcomes = {"not_found": CommandOutcome.FAILED.value}
        result.outcome = outcomes.get(found.outcome, found.outcome or CommandOutcome.FAILED.value)
        result.reason = (f"{what} not found: {found.reason}; {looked}" if found.outcome == "not_found"
                         else f"the search for {what} ended {found.outcome}: {found.reason}; {looked}")
        return False

    def _await_model_sees(self, goal: ServerGoalHandle, symbol: str) -> None:
        """The search read the primary; the model grounds on its own store, maybe a read replica a little behind:
        wait, bounded, until it holds what was found, or say that it may not."""
        try:
            store = self._get_agent().store
        except HeraclesError:
            return  # grounding asks for the agent again and reports why
        if not store.caught_up(REPLICA_WAIT_S):
            self._feedback(goal, "search", f"the model's database ({store.description}) did not catch up within "
                                           f"{REPLICA_WAIT_S:g} s: it may not see {symbol} yet")

    def _stopped_before_moving(self, result: ExecuteCommand.Result, when: str) -> bool:
        stop = self.stopped()
        if stop is None:
            return False
        result.outcome = CommandOutcome.STOPPED.value
        result.reason = f"the robot was stopped {when} ({stop.reason or 'latched stop'}); nothing moved"
        return True

    def _confirmed(self, running: _Running, goal: ServerGoalHandle, result: ExecuteCommand.Result,
                   message: str = "") -> bool:
        """Wait for the operator; False (with the result's outcome set) unless confirmed. ``message``: what is
        confirmed (default: the goal and its plan)."""
        message = message or (
            f"confirm before the robot moves: {result.goal_text} ({result.goal}).\nPlan: {result.plan_summary}\n"
            f"Call confirm with command_id {running.command_id} and approve true or false, or cancel the goal "
            f"(waiting up to {self.confirm_timeout_s:g} s)"
        )
        self._feedback(goal, "confirm", message, goal=result.goal, goal_text=result.goal_text,
                       plan_summary=result.plan_summary, plan=result.plan)
        running.decided.clear()  # a command may ask twice: its search's tour, then its plan
        running.waiting = True  # only now: an approval before the plan was shown approves nothing seen
        deadline = time.monotonic() + self.confirm_timeout_s
        while not running.decided.wait(POLL_S):
            interrupted = self._interruption(running, goal, "waiting for confirmation")
            if interrupted:
                result.outcome, result.reason = CommandOutcome.CANCELLED.value, f"{interrupted}; nothing moved"
                return False
            if self._stopped_before_moving(result, "while waiting for confirmation"):
                return False
            if time.monotonic() > deadline:
                result.outcome = CommandOutcome.REFUSED.value
                result.reason = f"not confirmed within {self.confirm_timeout_s:g} s; nothing moved"
                return False
        running.waiting = False
        if not running.approved:
            result.outcome, result.reason = CommandOutcome.REFUSED.value, "the operator refused the plan; nothing moved"
            return False
        return True

    def close(self, timeout_s: float = 0.0) -> bool:
        """Refuse new goals; a running command stops waiting (for the model's next turn, a confirmation, the
        dispatcher) and cancels its plan. Waits up to ``timeout_s`` for it to end; True once none runs."""
        with self._lock:
            self.closing.set()
        return self.idle.wait(timeout_s)

    def destroy(self) -> None:
        self.server.destroy()
        self.plans.destroy()


def _fill(result: ExecuteCommand.Result, command: CommandResult, summary: str) -> None:
    result.goal = command.goal
    result.goal_text = command.goal_text
    result.plan_summary = summary
    usage = command.usage
    result.queries = [str(q) for q in usage.queries]
    result.tool_calls = usage.tool_calls
    result.input_tokens = usage.input_tokens
    result.output_tokens = usage.output_tokens
