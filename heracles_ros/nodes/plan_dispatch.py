"""A command's plan at the dispatcher: sent to its ``execute_plan`` action, the feedback forwarded as the command's
``executing`` and ``step`` stages, followed to the dispatcher's result.

Whether the plan was taken is known from the dispatcher's own acceptance. Every wait is bounded: the goal
response by :data:`DISPATCH_ACCEPT_TIMEOUT_S`, the dispatcher's presence by :data:`DISPATCHER_LOST_S`, a
cancelled plan's result by :data:`CANCEL_CONFIRM_S`. A command interrupted while its plan runs (its cancel, its
client gone, the node closing) cancels the plan, which stops the robot.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.node import Node

from heracles_ros.action import ExecuteCommand, ExecutePlan
from heracles_ros.outcomes import CommandOutcome

#: Seconds to wait for the dispatcher to accept or reject a plan.
DISPATCH_ACCEPT_TIMEOUT_S = 10.0
#: Seconds without the dispatcher's action server before a running command gives its plan up as lost.
DISPATCHER_LOST_S = 5.0
#: After cancelling its plan, a command waits this long for the dispatcher's result before it reports
#: the cancel as sent but unconfirmed.
CANCEL_CONFIRM_S = 3.0
#: How often a waiting command looks for a cancel, seconds.
POLL_S = 0.05

#: ``feedback(stage, message, **fields)``: one feedback message of the command.
Feedback = Callable[..., None]
#: ``interruption(stage)``: why the command must stop now ('' = it goes on).
Interruption = Callable[[str], str]
#: ``stopped(result, when)``: True, with the result's outcome set, when the robot's latched stop is on.
StopCheck = Callable[[ExecuteCommand.Result, str], bool]


class PlanDispatch:
    """One command's plan through the dispatcher's action ``plans``, filling the command's result."""

    def __init__(self, node: Node, plans: ActionClient, closing: threading.Event, *, feedback: Feedback,
                 interruption: Interruption, stopped: StopCheck):
        self.node = node
        self.plans = plans
        #: The node is closing: a plan not yet answered is given up on after a grace.
        self.closing = closing
        self._feedback = feedback
        self._interruption = interruption
        self._stopped = stopped
        self._order = threading.Lock()
        self._executing = False

    def run(self, plan: Any, result: ExecuteCommand.Result) -> None:
        """Send ``plan`` (a heracles_ros/msg/Plan), follow it to its end, and say how it ended in ``result``."""
        if not self.plans.server_is_ready():
            result.outcome = CommandOutcome.FAILED.value
            result.reason = "the dispatcher went away before the plan could be sent"
            return
        plan_goal = self._send(plan, result)
        if plan_goal is None:
            return
        if not plan_goal.accepted:
            if self._stopped(result, "as the plan was sent"):
                return
            result.outcome = CommandOutcome.REJECTED.value
            result.reason = (f"the dispatcher rejected plan {plan.plan_id} (it runs another plan, is stopped or "
                             "is shutting down; its dispatch_result says which)")
            return
        self._announce_executing(plan)
        self._follow(plan, plan_goal, result)

    def _announce_executing(self, plan: Any) -> None:
        """The ``executing`` stage, once, before any step (the first step can beat the goal response)."""
        with self._order:
            if not self._executing:
                self._executing = True
                self._feedback("executing", f"the dispatcher runs plan {plan.plan_id}")

    def _forward(self, plan: Any, message: Any) -> None:
        step = message.feedback.progress
        self._announce_executing(plan)
        self._feedback("step", f"step {step.step_index + 1}/{step.step_count} {step.state}: {step.message}",
                       step=step)

    def _send(self, plan: Any, result: ExecuteCommand.Result) -> ClientGoalHandle | None:
        """The dispatcher's answer to the plan; None, with the result's outcome set, when none came in time."""
        answered = threading.Event()
        # The dispatcher watches us in turn: if this node dies, it cancels the plan (the robot stops).
        sent = self.plans.send_goal_async(
            ExecutePlan.Goal(plan=plan, client_node=self.node.get_fully_qualified_name()),
            feedback_callback=lambda message: self._forward(plan, message))
        sent.add_done_callback(lambda _: answered.set())
        # Not given up on a cancel (the plan's handle is what a cancel needs), but on closing after a
        # grace: a plan accepted after this node is gone is cancelled by the dispatcher (client_lost).
        deadline = time.monotonic() + DISPATCH_ACCEPT_TIMEOUT_S
        while not answered.wait(POLL_S):
            if self.closing.is_set():
                deadline = min(deadline, time.monotonic() + CANCEL_CONFIRM_S)
            if time.monotonic() > deadline:
                break
        plan_goal = sent.result() if answered.is_set() else None
        if plan_goal is None:
            result.outcome = CommandOutcome.FAILED.value
            result.reason = "the dispatcher did not answer the plan in time" + (
                " (the language server is shutting down)" if self.closing.is_set() else
                f" ({DISPATCH_ACCEPT_TIMEOUT_S:g} s)")
        return plan_goal

    def _follow(self, plan: Any, plan_goal: ClientGoalHandle, result: ExecuteCommand.Result) -> None:
        """Wait for the plan's result, cancelling the plan once the command is interrupted; the dispatcher's
        result, or why it did not come (a cancel it did not confirm, the dispatcher gone)."""
        finished = threading.Event()
        outcome = plan_goal.get_result_async()
        outcome.add_done_callback(lambda _: finished.set())
        interrupted = ""
        cancel_sent_at = 0.0
        lost_since: float | None = None
        while not finished.wait(POLL_S):
            now = time.monotonic()
            if not interrupted:
                interrupted = self._interruption("executing")
                if interrupted:
                    self.node.get_logger().warning(f"cancelling plan {plan.plan_id}: {interrupted}")
                    plan_goal.cancel_goal_async()  # sent at once, executor or not
                    cancel_sent_at = now
            if interrupted and now - cancel_sent_at > CANCEL_CONFIRM_S:
                result.outcome = CommandOutcome.CANCELLED.value
                result.reason = (f"{interrupted}; the cancel of plan {plan.plan_id} was sent, but the dispatcher "
                                 f"did not confirm it within {CANCEL_CONFIRM_S:g} s")
                return
            lost_since = None if self.plans.server_is_ready() else (lost_since or now)
            if lost_since is not None and now - lost_since > DISPATCHER_LOST_S:
                result.outcome = CommandOutcome.FAILED.value
                result.reason = (f"the dispatcher went away while running plan {plan.plan_id}; "
                                 "what the robot did since is unknown")
                return
        response = outcome.result()
        assert response is not None
        _fill(result, response.result.result, interrupted)


def _fill(result: ExecuteCommand.Result, dispatched: Any, interrupted: str) -> None:
    """The command's result from the dispatcher's (a heracles_ros/msg/DispatchResult)."""
    result.outcome = dispatched.status or CommandOutcome.FAILED.value
    result.reason = dispatched.reason
    if interrupted and result.outcome == CommandOutcome.CANCELLED:
        result.reason = f"{interrupted}; the dispatcher stopped the robot" + (
            f" ({dispatched.reason})" if dispatched.reason else "")
    result.steps_completed = dispatched.steps_completed
    result.replans = dispatched.replans
    result.robot_place = dispatched.robot_place
    result.holding = dispatched.holding
    result.driver = dispatched.driver
