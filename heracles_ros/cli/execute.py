"""``heracles command --execute`` and ``heracles cancel``: the running system's execute_command action.

Only the running ``language_server`` can reach the dispatcher and the robot,
so execution is a goal of its ``execute_command`` action. The CLI prints one
line per feedback message (grounding queries, goal, plan, each step with the
robot's position) on stderr, asks on the terminal when the command waits for
confirmation, cancels the goal on Ctrl-C, and exits by the outcome:
0 succeeded (or planned), 3 the model asks back (clarify), 1 anything else.
``--json`` prints the result on stdout.
"""
from __future__ import annotations

import argparse
import queue
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from heracles_ros.cli.common import print_json
from heracles_ros.errors import ConfigError

#: heracles.launch.py's default namespace (robot_name:=spot).
DEFAULT_NAMESPACE = "/spot"
#: Exit codes by outcome.
EXIT_OK, EXIT_FAILED, EXIT_CLARIFY = 0, 1, 3
#: Seconds to wait for the reason of a rejected goal on command_rejections.
REJECTION_WAIT_S = 3.0
#: After the result: feedback still arriving within this quiet spell is shown, for at most the max.
LATE_FEEDBACK_QUIET_S = 0.3
LATE_FEEDBACK_MAX_S = 2.0
_RESULT_FIELDS = (
    "outcome", "reason", "command_id", "goal", "goal_text", "plan_summary", "clarification", "steps_completed",
    "replans", "robot_place", "holding", "tool_calls", "input_tokens", "output_tokens", "latency_s",
)


def _name(namespace: str, name: str) -> str:
    return f"{namespace.rstrip('/')}/{name}"


@contextmanager
def _ros_node(name: str) -> Iterator[Any]:
    """An rclpy node spun in the background for the block (ConfigError when rclpy is missing)."""
    try:
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.signals import SignalHandlerOptions
    except ImportError as exc:
        raise ConfigError(
            "this needs the running system: rclpy and the heracles_ros interfaces are not importable here "
            "(source ROS 2, or run ./run.sh heracles ...)"
        ) from exc
    from heracles_ros.nodes.runner import BackgroundSpinner

    # rclpy's signal handler would shut the context down on Ctrl-C; Python's raises KeyboardInterrupt instead,
    # and the goal can still be cancelled over that context.
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = rclpy.create_node(name)
        executor = MultiThreadedExecutor(num_threads=2)
        executor.add_node(node)
        spinner = BackgroundSpinner(executor, name=f"{name}-executor").start()
        try:
            yield node
        finally:
            spinner.stop()
            node.destroy_node()
    finally:
        rclpy.try_shutdown()


def _wait(future: Any, timeout_s: float | None = None) -> Any:
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    return future.result() if done.wait(timeout_s) else None


def execute(args: argparse.Namespace) -> int:
    """Send the instruction as an ExecuteCommand goal and follow it to its result."""
    from heracles_ros.action import ExecuteCommand

    with _ros_node("heracles_cli") as node:
        follower = _Follower(node, args.namespace)
        if not follower.actions.wait_for_server(timeout_sec=args.server_timeout):
            raise ConfigError(
                f"no language_server serves {follower.action_name} within {args.server_timeout:g} s: start the "
                "system (ros2 launch heracles_ros heracles.launch.py) or name its namespace with --namespace"
            )
        goal = ExecuteCommand.Goal(
            instruction=args.instruction, execute=True, require_confirmation=args.confirm,
            session=args.session, command_id=f"cli-{uuid.uuid4().hex[:8]}",
        )
        return follower.run(goal, as_json=args.json)


def cancel(args: argparse.Namespace) -> int:
    """Cancel every goal of the language_server's execute_command action (the robot stops)."""
    from action_msgs.srv import CancelGoal

    service = _name(args.namespace, "execute_command/_action/cancel_goal")
    with _ros_node("heracles_cancel") as node:
        client = node.create_client(CancelGoal, service)
        if not client.wait_for_service(timeout_sec=args.server_timeout):
            raise ConfigError(f"no language_server answers on {service}; is the system running (--namespace)?")
        response = _wait(client.call_async(CancelGoal.Request()), args.server_timeout)  # zero id + stamp: all
    if response is None:
        raise ConfigError(f"{service} gave no answer within {args.server_timeout:g} s")
    count = len(response.goals_canceling)
    print(f"cancelling {count} command{'' if count == 1 else 's'}" if count else "no command is running")
    return EXIT_OK if count else EXIT_FAILED


class _Follower:
    """One goal's life on the terminal: progress lines, confirmation, Ctrl-C, the result."""

    def __init__(self, node: Any, namespace: str):
        from rclpy.action import ActionClient

        from heracles_ros.action import ExecuteCommand
        from heracles_ros.msg import CommandRejection
        from heracles_ros.nodes.command_action import REJECTIONS_KEPT
        from heracles_ros.nodes.qos import latched
        from heracles_ros.srv import Confirm

        self.node = node
        self.action_name = _name(namespace, "execute_command")
        self.actions: Any = ActionClient(node, ExecuteCommand, self.action_name)
        self.confirm = node.create_client(Confirm, _name(namespace, "confirm"))
        self.rejections: queue.Queue[Any] = queue.Queue()
        node.create_subscription(CommandRejection, _name(namespace, "command_rejections"), self.rejections.put,
                                 latched(REJECTIONS_KEPT))
        self.events: queue.Queue[Any] = queue.Queue()

    def run(self, goal: Any, *, as_json: bool) -> int:
        handle = _wait(self.actions.send_goal_async(goal, feedback_callback=lambda m: self.events.put(m.feedback)))
        if handle is None or not handle.accepted:
            return self._rejected(goal, as_json)
        _err(f"accepted as {goal.command_id}")
        finished = handle.get_result_async()
        finished.add_done_callback(lambda _: self.events.put(None))
        cancelled = False
        while True:
            try:
                event = self.events.get()
                if event is None:
                    break
                self._show(event, goal.command_id)
            except KeyboardInterrupt:
                if cancelled:
                    raise  # a second Ctrl-C: leave at once
                cancelled = True
                _err("cancelling (Ctrl-C again to leave without waiting)")
                handle.cancel_goal_async()
        self._show_late_feedback(goal.command_id)
        result = finished.result().result
        return self._report(result, as_json)

    def _show_late_feedback(self, command_id: str) -> None:
        """Feedback sent before the result can arrive after it (a topic and a service reply are not
        ordered): show what comes within a short quiet spell, so the last step's lines are not lost."""
        deadline = time.monotonic() + LATE_FEEDBACK_MAX_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = self.events.get(timeout=min(LATE_FEEDBACK_QUIET_S, left))
            except queue.Empty:
                return
            if event is not None:
                self._show(event, command_id)

    def _rejected(self, goal: Any, as_json: bool) -> int:
        deadline = time.monotonic() + REJECTION_WAIT_S
        reason, code = "the language_server rejected the command (its reason did not arrive)", "rejected"
        while time.monotonic() < deadline:
            try:
                rejection = self.rejections.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if rejection.command_id == goal.command_id:
                reason, code = rejection.reason, rejection.code
                break
        if as_json:
            print_json({"outcome": "rejected", "code": code, "reason": reason, "command_id": goal.command_id})
        else:
            _err(f"rejected ({code}): {reason}")
        return EXIT_FAILED

    def _show(self, feedback: Any, command_id: str) -> None:
        if feedback.stage == "step":
            p = feedback.step.robot_position
            _err(f"step {feedback.step.step_index + 1}/{feedback.step.step_count} {feedback.step.state:<10} "
                 f"{feedback.step.message}  robot ({p.x:.1f}, {p.y:.1f})")
        elif feedback.stage == "confirm":
            _err(feedback.message)
            self._ask_confirmation(command_id)
        else:
            _err(f"{feedback.stage}: {feedback.message}")

    def _ask_confirmation(self, command_id: str) -> None:
        from heracles_ros.srv import Confirm

        try:
            answer = input("Go ahead? [y/N] ").strip().lower()
        except EOFError:
            answer = ""
        approve = answer in ("y", "yes")
        response = _wait(self.confirm.call_async(Confirm.Request(command_id=command_id, approve=approve)), 10.0)
        _err(response.message if response is not None else "the confirm service did not answer")

    def _report(self, result: Any, as_json: bool) -> int:
        data = {name: getattr(result, name) for name in _RESULT_FIELDS}
        data["queries"] = list(result.queries)
        data["candidates"] = [c.description for c in result.candidates]
        if as_json:
            print_json(data)
        else:
            if result.goal:
                print(f"{result.goal}  ({result.goal_text})")
            if result.clarification:
                print(result.clarification)
                for candidate in data["candidates"]:
                    print(f"  - {candidate}")
            _err(f"{result.outcome}" + (f": {result.reason}" if result.reason and not result.clarification else ""))
        if result.outcome in ("succeeded", "planned"):
            return EXIT_OK
        return EXIT_CLARIFY if result.outcome == "clarify" else EXIT_FAILED


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
