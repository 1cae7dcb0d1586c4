"""The language_server's ``execute_command`` action: one instruction, from words to a finished task.

Goal: an instruction and its options (execute or plan only, confirmation,
session). Acceptance is decided at once: a goal is rejected when another
command runs (one robot, one task), the instruction is empty, no model can be
built, or, to execute, no dispatcher serves ``execute_plan``. An action's goal
response carries only ``accepted``, so the reason goes out on
``command_rejections`` (heracles_ros/msg/CommandRejection) under the goal's
``command_id`` before the response is sent.

Feedback, in order: ``grounding`` (once at the start, then once per Cypher
query the model runs, with the queries so far), ``goal`` (the checked goal and
the same in words), ``plan``, ``confirm`` (only when confirmation is required:
the goal in words and the plan; the command then waits, bounded, for the
``confirm`` service or a cancel), ``executing`` (the dispatcher accepted the
plan), then ``step`` for every dispatcher event with the robot's position.

Result: the outcome (succeeded, planned, clarify, failed, cancelled, refused,
rejected), the reason, the goal, the plan, and how far the robot got.
Cancelling the goal stops this command only: during grounding it ends after
the model's current turn, during execution it cancels the dispatcher's goal,
which stops the robot.

Execution goes through the dispatcher's ``execute_plan`` action, so whether a
plan was taken is known from the dispatcher's own acceptance.
"""
from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Header

from heracles_ros.action import ExecuteCommand, ExecutePlan
from heracles_ros.agent.loop import Agent
from heracles_ros.agent.results import Candidate, CommandResult
from heracles_ros.errors import HeraclesError, describe
from heracles_ros.msg import Candidate as CandidateMsg
from heracles_ros.msg import CommandRejection
from heracles_ros.nodes.plan_msgs import plan_to_msg
from heracles_ros.nodes.qos import latched
from heracles_ros.plan_types import PlanResult
from heracles_ros.srv import Confirm

#: Outcomes after which the action's status is SUCCEEDED (anything else: ABORTED, or CANCELED on a cancel).
SUCCESSFUL = ("succeeded", "planned")
#: Seconds to wait for the dispatcher to accept or reject a plan.
DISPATCH_ACCEPT_TIMEOUT_S = 10.0
#: How often a waiting command looks for a cancel, seconds.
_POLL_S = 0.05
#: A command slot reserved by an accepted goal that rclpy never handed over (it failed to create the goal
#: handle) is free again after this many seconds.
STALE_RESERVATION_S = 10.0
#: Rejections kept on command_rejections for subscribers that join late.
REJECTIONS_KEPT = 10
#: Seconds without the dispatcher's action server before a running command gives its plan up as lost.
DISPATCHER_LOST_S = 5.0


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
        summary: Callable[[PlanResult | None], str],
        announce: Callable[[str, str, str], None],
        require_confirmation: bool,
        confirm_timeout_s: float,
        map_frame: str,
    ):
        self.node = node
        self._get_agent = get_agent
        self._summary = summary
        self._announce = announce
        self.require_confirmation = require_confirmation
        self.confirm_timeout_s = confirm_timeout_s
        self.map_frame = map_frame
        self._lock = threading.Lock()
        self._running: _Running | None = None
        self._closed = False
        group = ReentrantCallbackGroup()
        # Kept for late joiners: a client that subscribed just before its goal still gets the reason.
        self._rejections = node.create_publisher(CommandRejection, "command_rejections", latched(REJECTIONS_KEPT))
        self._plan_action = f"{node.get_namespace().rstrip('/')}/execute_plan"
        # Its own exclusive group: the dispatcher's feedback is forwarded in the order it arrives.
        self.plans: ActionClient = ActionClient(node, ExecutePlan, "execute_plan",
                                                callback_group=MutuallyExclusiveCallbackGroup())
        self.server = ActionServer(
            node, ExecuteCommand, "execute_command", self._execute_unknown,
            goal_callback=self._on_goal, handle_accepted_callback=self._on_accepted,
            cancel_callback=lambda goal: CancelResponse.ACCEPT, callback_group=group,
        )
        self.confirm_service = node.create_service(Confirm, "confirm", self._on_confirm, callback_group=group)

    # -- acceptance --------------------------------------------------------------------
    def _on_goal(self, goal: ExecuteCommand.Goal) -> GoalResponse:
        goal.command_id = goal.command_id.strip() or f"cmd-{uuid.uuid4().hex[:8]}"
        code, reason = self._refusal(goal)
        if not code:
            return GoalResponse.ACCEPT
        self.node.get_logger().warning(f"command {goal.command_id} rejected ({code}): {reason}")
        self._rejections.publish(CommandRejection(
            header=Header(stamp=self.node.get_clock().now().to_msg()), command_id=goal.command_id,
            instruction=goal.instruction, code=code, reason=reason,
        ))
        return GoalResponse.REJECT

    def _refusal(self, goal: ExecuteCommand.Goal) -> tuple[str, str]:
        """(code, reason) why the goal cannot start, or ("", "") after reserving the one command slot."""
        if not goal.instruction.strip():
            return "invalid", "the instruction is empty"
        try:
            self._get_agent()
        except HeraclesError as exc:
            return "no_model", f"no language model: {describe(exc)}"
        if goal.execute and not self.plans.server_is_ready():
            return "no_dispatcher", (
                f"no dispatcher serves {self._plan_action}; start the dispatcher in this namespace, "
                "or send the goal with execute: false"
            )
        with self._lock:
            if self._closed:
                return "shutting_down", "the language server is shutting down"
            running = self._running
            if running is not None and not running.started and \
                    time.monotonic() - running.reserved_at > STALE_RESERVATION_S:
                running = self._running = None  # accepted, but never handed over: nothing runs
            if running is not None:
                return "busy", (
                    f"busy: command {running.command_id} ({running.instruction.strip()!r}) is running; "
                    "cancel it first to replace it"
                )
            self._running = _Running(goal.command_id, goal.instruction)
        return "", ""

    def _on_accepted(self, goal: ServerGoalHandle) -> None:
        with self._lock:
            running = self._running
            assert running is not None and running.command_id == goal.request.command_id
            running.started = True
        goal.execute(lambda handle: self._execute(running, handle))

    def _execute_unknown(self, goal: ServerGoalHandle) -> ExecuteCommand.Result:
        goal.abort()  # every accepted goal runs with its own record (see _on_accepted)
        return ExecuteCommand.Result()

    # -- confirmation ------------------------------------------------------------------
    def _on_confirm(self, request: Confirm.Request, response: Confirm.Response) -> Confirm.Response:
        with self._lock:
            running = self._running
        wanted = request.command_id.strip()
        if running is None or (wanted and wanted != running.command_id):
            response.success = False
            response.message = f"no command {wanted or ''} is running".replace("  ", " ")
            return response
        if running.decided.is_set() or not running.waiting:
            response.success = False
            response.message = f"command {running.command_id} is not waiting for confirmation"
            return response
        running.approved = request.approve
        running.decided.set()
        response.success = True
        response.message = f"command {running.command_id} {'confirmed' if request.approve else 'refused'}"
        return response

    # -- running -----------------------------------------------------------------------
    def _execute(self, running: _Running, goal: ServerGoalHandle) -> ExecuteCommand.Result:
        request = goal.request
        result = ExecuteCommand.Result(command_id=running.command_id)
        started = time.monotonic()
        try:
            self._run(running, goal, result)
        except Exception as exc:  # the node must outlive a bug in one command
            self.node.get_logger().error(f"command {running.command_id} failed with an internal error: {exc!r}")
            result.outcome, result.reason = "failed", f"internal error: {exc!r}"
        finally:
            with self._lock:
                self._running = None
        result.latency_s = time.monotonic() - started
        if result.outcome == "cancelled" and goal.is_cancel_requested:
            goal.canceled()
        elif result.outcome in SUCCESSFUL:
            goal.succeed()
        else:
            goal.abort()
        text = result.outcome + (f": {result.reason}" if result.reason else "")
        self.node.get_logger().info(f"command {running.command_id} {request.instruction.strip()!r} -> {text}")
        self._announce("command", request.instruction, result.goal if result.outcome in SUCCESSFUL else text)
        return result

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

        self._feedback(goal, "grounding", request.instruction.strip())
        command = self._get_agent().command(request.instruction, plan=True, session=request.session,
                                            on_query=on_query)
        _fill(result, command, self._summary(command.plan))
        if goal.is_cancel_requested:
            result.outcome, result.reason = "cancelled", "cancelled while grounding"
            return
        if command.clarification:
            result.outcome, result.reason = "clarify", command.clarification
            result.clarification = command.clarification
            result.candidates = candidate_msgs(command.candidates)
            return
        if not command.goal:
            result.outcome, result.reason = "failed", command.error
            return
        self._feedback(goal, "goal", f"{command.goal_text}  {command.goal}", goal=command.goal,
                       goal_text=command.goal_text)
        if command.plan is None or not command.plan.ok:
            result.outcome, result.reason = "failed", command.error or "no plan"
            return
        plan = plan_to_msg(command.plan, plan_id=f"{running.command_id}-plan", frame_id=self.map_frame,
                           stamp=self.node.get_clock().now().to_msg())
        result.plan = plan
        self._feedback(goal, "plan", result.plan_summary, goal=command.goal, goal_text=command.goal_text,
                       plan_summary=result.plan_summary, plan=plan)
        if not request.execute:
            result.outcome = "planned"
            return
        if (self.require_confirmation or request.require_confirmation) and not self._confirmed(
            running, goal, result
        ):
            return
        self._dispatch(goal, plan, result)

    def _confirmed(self, running: _Running, goal: ServerGoalHandle, result: ExecuteCommand.Result) -> bool:
        """Wait for the operator; False (with the result's outcome set) unless confirmed."""
        message = (
            f"confirm before the robot moves: {result.goal_text} ({result.goal}).\nPlan: {result.plan_summary}\n"
            f"Call confirm with command_id {running.command_id} and approve true or false, or cancel the goal "
            f"(waiting up to {self.confirm_timeout_s:g} s)"
        )
        running.waiting = True
        self._feedback(goal, "confirm", message, goal=result.goal, goal_text=result.goal_text,
                       plan_summary=result.plan_summary, plan=result.plan)
        deadline = time.monotonic() + self.confirm_timeout_s
        while not running.decided.wait(_POLL_S):
            if goal.is_cancel_requested:
                result.outcome, result.reason = "cancelled", "cancelled while waiting for confirmation"
                return False
            if time.monotonic() > deadline or self._closed:
                result.outcome = "refused"
                result.reason = f"not confirmed within {self.confirm_timeout_s:g} s; nothing moved"
                return False
        if not running.approved:
            result.outcome, result.reason = "refused", "the operator refused the plan; nothing moved"
            return False
        return True

    def _dispatch(self, goal: ServerGoalHandle, plan: Any, result: ExecuteCommand.Result) -> None:
        """Run the plan through the dispatcher's action, forwarding its feedback, until its result."""
        if not self.plans.server_is_ready():
            result.outcome, result.reason = "failed", "the dispatcher went away before the plan could be sent"
            return
        accepted = threading.Event()
        order = threading.Lock()
        executing = [False]

        def announce_executing() -> None:
            """The ``executing`` stage, once, before any step (the first step can beat the goal response)."""
            with order:
                if not executing[0]:
                    executing[0] = True
                    self._feedback(goal, "executing", f"the dispatcher runs plan {plan.plan_id}")

        def forward(message: Any) -> None:
            step = message.feedback.progress
            announce_executing()
            self._feedback(goal, "step", f"step {step.step_index + 1}/{step.step_count} {step.state}: {step.message}",
                           step=step)

        sent = self.plans.send_goal_async(ExecutePlan.Goal(plan=plan), feedback_callback=forward)
        sent.add_done_callback(lambda _: accepted.set())
        if not accepted.wait(DISPATCH_ACCEPT_TIMEOUT_S) or sent.result() is None:
            result.outcome = "failed"
            result.reason = f"the dispatcher did not answer within {DISPATCH_ACCEPT_TIMEOUT_S:g} s"
            return
        plan_goal = sent.result()
        assert plan_goal is not None
        if not plan_goal.accepted:
            result.outcome = "rejected"
            result.reason = (f"the dispatcher rejected plan {plan.plan_id} (it runs another plan, or is shutting "
                             "down; its dispatch_result says which)")
            return
        announce_executing()
        finished = threading.Event()
        outcome = plan_goal.get_result_async()
        outcome.add_done_callback(lambda _: finished.set())
        cancel_sent = False
        lost_since: float | None = None
        while not finished.wait(_POLL_S):
            if (goal.is_cancel_requested or self._closed) and not cancel_sent:
                plan_goal.cancel_goal_async()
                cancel_sent = True
            lost_since = None if self.plans.server_is_ready() else (lost_since or time.monotonic())
            if lost_since is not None and time.monotonic() - lost_since > DISPATCHER_LOST_S:
                result.outcome = "failed"
                result.reason = (f"the dispatcher went away while running plan {plan.plan_id}; "
                                 "what the robot did since is unknown")
                return
        response = outcome.result()
        assert response is not None
        dispatched = response.result.result
        result.outcome = dispatched.status or "failed"
        result.reason = dispatched.reason
        result.steps_completed = dispatched.steps_completed
        result.replans = dispatched.replans
        result.robot_place = dispatched.robot_place
        result.holding = dispatched.holding

    def close(self) -> None:
        """Refuse new goals; a running command stops waiting for confirmation and cancels its plan."""
        with self._lock:
            self._closed = True

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
