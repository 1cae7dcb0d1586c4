"""``heracles command --execute`` and ``heracles cancel``: the running system's execute_command action.

Only the running ``language_server`` can reach the dispatcher and the robot,
so execution is a goal of its ``execute_command`` action. The CLI prints one
line per feedback message (grounding queries, goal, plan, each step with the
robot's position) on stderr, asks on the terminal when the command waits for
confirmation (only an explicit yes approves), and exits by the outcome:
0 succeeded (or planned), 3 the model asks back (clarify), 1 anything else.
``--json`` prints the result on stdout.

Stopping: Ctrl-C, SIGTERM and SIGHUP (the terminal closing) cancel the command
at any moment (a goal whose response has not arrived yet is cancelled as soon
as it does), the CLI says what it cancelled and where the robot stopped, and
exits 130; a second one leaves at once, the cancel already sent. The goal
names this CLI's node (``client_node``), so a CLI killed outright is noticed
by the server, which cancels the command. Every wait is bounded, and a server
that disappears is reported within seconds.
"""
from __future__ import annotations

import argparse
import os
import queue
import signal
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from heracles_ros.cli.common import print_json
from heracles_ros.errors import ConfigError
from heracles_ros.outcomes import SUCCESSFUL_COMMANDS, CommandOutcome

#: heracles.launch.py's default namespace (robot_name:=spot).
DEFAULT_NAMESPACE = "/spot"
#: Exit codes by outcome; 130 (128 + SIGINT, the shell's convention) when the operator interrupted.
EXIT_OK, EXIT_FAILED, EXIT_CLARIFY, EXIT_INTERRUPTED = 0, 1, 3, 130
#: Seconds to wait for the server to accept or reject the goal.
GOAL_RESPONSE_TIMEOUT_S = 10.0
#: After a cancel, seconds to wait for the command's result (it says where the robot stopped).
CANCEL_RESULT_WAIT_S = 10.0
#: The language server's action gone from the graph this long: the server is reported dead.
SERVER_LOST_S = 3.0
#: Seconds to wait for the confirm service's answer.
CONFIRM_ANSWER_S = 10.0
#: The signals that cancel the command: Ctrl-C, a kill, the terminal closing.
CANCEL_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
#: What a feedback stage means for "cancelled while ...".
_STAGES = {"goal": "planning", "plan": "planning", "confirm": "waiting for confirmation"}
#: How often the CLI's one waiting loop looks at everything it waits for, seconds.
_TICK_S = 0.05
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


class Interrupts:
    """Cancelling signals, counted; the handlers only record (the main loop acts on them)."""

    def __init__(self) -> None:
        self.first = threading.Event()
        self.again = threading.Event()
        self.name = ""
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for number in CANCEL_SIGNALS:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        if self.first.is_set():
            self.again.set()
        else:
            self.name = "Ctrl-C" if number == signal.SIGINT else signal.Signals(number).name
            self.first.set()


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
    from heracles_ros.nodes.liveliness import prefer_short_lease
    from heracles_ros.nodes.runner import BackgroundSpinner

    # rclpy's signal handler would shut the context down on Ctrl-C, before the goal could be cancelled.
    prefer_short_lease()  # killed outright, this CLI leaves the graph in seconds: the server then cancels
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    try:
        # One name per process: the server watches this node's presence, and two CLIs must not share it.
        node = rclpy.create_node(f"{name}_{os.getpid()}")
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

    with Interrupts() as interrupts, _ros_node("heracles_cli") as node:
        follower = _Follower(node, args.namespace, interrupts)
        deadline = time.monotonic() + args.server_timeout
        while not follower.actions.server_is_ready():
            if interrupts.first.is_set():
                _err(f"{interrupts.name}: nothing was sent")
                return EXIT_INTERRUPTED
            if time.monotonic() > deadline:
                raise ConfigError(
                    f"no language_server serves {follower.action_name} within {args.server_timeout:g} s: start "
                    "the system (ros2 launch heracles_ros heracles.launch.py) or name its namespace with --namespace"
                )
            time.sleep(_TICK_S)
        goal = ExecuteCommand.Goal(
            instruction=args.instruction, execute=True, require_confirmation=args.confirm,
            session=args.session, command_id=f"cli-{uuid.uuid4().hex[:8]}",
            client_node=node.get_fully_qualified_name(),
        )
        return follower.run(goal, as_json=args.json)


class _Follower:
    """One goal's life on the terminal: progress lines, confirmation, signals, the result.

    Everything is waited for in one loop on the main thread that also looks at the
    signals, so no wait blocks a cancel and none is unbounded.
    """

    def __init__(self, node: Any, namespace: str, interrupts: Interrupts):
        from rclpy.action import ActionClient

        from heracles_ros.action import ExecuteCommand
        from heracles_ros.msg import CommandRejection
        from heracles_ros.nodes.command_action import REJECTIONS_KEPT
        from heracles_ros.nodes.qos import latched
        from heracles_ros.srv import Confirm

        self.node = node
        self.interrupts = interrupts
        self.action_name = _name(namespace, "execute_command")
        self.actions: Any = ActionClient(node, ExecuteCommand, self.action_name)
        self.confirm = node.create_client(Confirm, _name(namespace, "confirm"))
        self.rejections: queue.Queue[Any] = queue.Queue()
        node.create_subscription(CommandRejection, _name(namespace, "command_rejections"), self.rejections.put,
                                 latched(REJECTIONS_KEPT))
        self.events: queue.Queue[Any] = queue.Queue()
        self.answers: queue.Queue[str] = queue.Queue()
        #: What the command was doing as last heard, and where the robot was.
        self.stage = "waiting for the server to accept it"
        self.position: Any = None
        self.handle: Any = None
        self.cancel_sent = False

    def run(self, goal: Any, *, as_json: bool) -> int:
        sent = self.actions.send_goal_async(goal, feedback_callback=lambda m: self.events.put(m.feedback))
        deadline = time.monotonic() + GOAL_RESPONSE_TIMEOUT_S
        while not sent.done():
            self._leave_if_asked_again()
            if time.monotonic() > deadline:
                _err(f"the language_server did not answer the goal within {GOAL_RESPONSE_TIMEOUT_S:g} s; if it "
                     "takes it later, it cancels it once this CLI is gone")
                return EXIT_INTERRUPTED if self.interrupts.first.is_set() else EXIT_FAILED
            time.sleep(_TICK_S)
        self.handle = sent.result()
        if self.handle is None or not self.handle.accepted:
            code = self._rejected(goal, as_json)
            return EXIT_INTERRUPTED if self.interrupts.first.is_set() else code
        _err(f"accepted as {goal.command_id}")
        self.stage = "accepted"
        finished = self.handle.get_result_async()
        confirming: Any = None  # the confirm service call in flight, with its deadline
        cancel_deadline = lost_since = None
        while not finished.done():
            self._leave_if_asked_again()
            now = time.monotonic()
            if self.interrupts.first.is_set() and not self.cancel_sent:
                self._cancel(goal.command_id)
                cancel_deadline = now + CANCEL_RESULT_WAIT_S
            try:
                event = self.events.get(timeout=_TICK_S)
            except queue.Empty:
                event = None
            if event is not None:
                self._show(event)
            if event is not None and event.stage == "confirm" and not self.cancel_sent:
                self._ask_confirmation()
            confirming = self._confirm_if_answered(goal.command_id, confirming)
            lost_since = None if self.actions.server_is_ready() else (lost_since or now)
            if lost_since is not None and now - lost_since > SERVER_LOST_S:
                _err(f"the language_server of {self.action_name} is gone (not on the ROS graph for "
                     f"{SERVER_LOST_S:g} s) while the command was {self.stage}; what happened since is unknown")
                return EXIT_INTERRUPTED if self.cancel_sent else EXIT_FAILED
            if cancel_deadline is not None and now > cancel_deadline:
                _err(f"cancel of {goal.command_id} sent while {self.stage}; no result came within "
                     f"{CANCEL_RESULT_WAIT_S:g} s (robot last seen at {self._where()})")
                return EXIT_INTERRUPTED
        self._show_late_feedback()
        result = finished.result().result
        code = self._report(result, as_json)
        if not self.cancel_sent:
            return code
        _err(f"cancelled {goal.command_id} ({goal.instruction.strip()[:80]!r}) while {self.stage}: "
             f"{result.outcome}; the robot stopped at {self._where(result)}")
        return EXIT_INTERRUPTED

    def _cancel(self, command_id: str) -> None:
        self.handle.cancel_goal_async()  # sent at once (the reply is not needed: the result says)
        self.cancel_sent = True
        _err(f"{self.interrupts.name}: cancelling {command_id} while {self.stage} "
             "(again to leave at once, the cancel is sent)")

    def _leave_if_asked_again(self) -> None:
        """A second signal: leave now. The cancel is sent (or the server cancels once this CLI is gone)."""
        if not self.interrupts.again.is_set():
            return
        if self.handle is not None and self.handle.accepted and not self.cancel_sent:
            self.handle.cancel_goal_async()
        _err("leaving at once: the cancel is sent" if self.handle is not None else
             "leaving at once: the server cancels the command once this CLI is gone")
        sys.stdout.flush()
        os._exit(EXIT_INTERRUPTED)

    def _where(self, result: Any = None) -> str:
        place = getattr(result, "robot_place", "") if result is not None else ""
        p = self.position
        at = f"({p.x:.1f}, {p.y:.1f})" if p is not None else ""
        if place and at:
            return f"{place} {at}"
        return place or at or "its start (it had not moved)"

    def _show_late_feedback(self) -> None:
        """Feedback sent before the result can arrive after it (a topic and a service reply are not
        ordered): show what comes within a short quiet spell, so the last step's lines are not lost."""
        deadline = time.monotonic() + LATE_FEEDBACK_MAX_S
        while (left := deadline - time.monotonic()) > 0:
            try:
                event = self.events.get(timeout=min(LATE_FEEDBACK_QUIET_S, left))
            except queue.Empty:
                return
            if event is not None:
                self._show(event)

    def _rejected(self, goal: Any, as_json: bool) -> int:
        deadline = time.monotonic() + REJECTION_WAIT_S
        reason = "the language_server rejected the command (its reason did not arrive)"
        code = CommandOutcome.REJECTED.value
        while time.monotonic() < deadline:
            try:
                rejection = self.rejections.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if rejection.command_id == goal.command_id:
                reason, code = rejection.reason, rejection.code
                break
        if as_json:
            print_json({"outcome": CommandOutcome.REJECTED.value, "code": code, "reason": reason,
                        "command_id": goal.command_id})
        else:
            _err(f"rejected ({code}): {reason}")
        return EXIT_FAILED

    def _show(self, feedback: Any) -> None:
        if feedback.stage == "step":
            p = self.position = feedback.step.robot_position
            self.stage = f"executing step {feedback.step.step_index + 1}/{feedback.step.step_count}"
            _err(f"step {feedback.step.step_index + 1}/{feedback.step.step_count} {feedback.step.state:<10} "
                 f"{feedback.step.message}  robot ({p.x:.1f}, {p.y:.1f})")
            return
        self.stage = _STAGES.get(feedback.stage, feedback.stage)
        _err(feedback.message if feedback.stage == "confirm" else f"{feedback.stage}: {feedback.message}")

    def _ask_confirmation(self) -> None:
        """Ask on the terminal; the answer is read in a thread, so signals and the result still count."""
        print("Go ahead? Type yes to let the robot move [y/N] ", end="", file=sys.stderr, flush=True)

        def read() -> None:
            try:
                self.answers.put(sys.stdin.readline())
            except (OSError, ValueError):
                self.answers.put("")

        threading.Thread(target=read, name="confirm-input", daemon=True).start()

    def _confirm_if_answered(self, command_id: str, confirming: Any) -> Any:
        """Send the operator's answer once typed; report the service's reply (bounded); the call in flight."""
        from heracles_ros.srv import Confirm

        if confirming is not None:
            future, deadline = confirming
            if future.done():
                response = future.result()
                _err(response.message if response is not None else "the confirm service gave no answer")
                return None
            if time.monotonic() > deadline:
                _err(f"the confirm service did not answer within {CONFIRM_ANSWER_S:g} s")
                return None
            return confirming
        try:
            answer = self.answers.get_nowait()
        except queue.Empty:
            return None
        approve = answer.strip().lower() in ("y", "yes")  # Enter, end of input or anything else: no
        if self.interrupts.first.is_set():  # a signal came first: the cancel, not this answer, decides
            return None
        request = Confirm.Request(command_id=command_id, approve=approve)
        return self.confirm.call_async(request), time.monotonic() + CONFIRM_ANSWER_S

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
        if result.outcome in SUCCESSFUL_COMMANDS:
            return EXIT_OK
        return EXIT_CLARIFY if result.outcome == CommandOutcome.CLARIFY else EXIT_FAILED


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
