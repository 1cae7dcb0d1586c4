"""``heracles command --execute``: the running system's execute_command action, on the terminal.

Only the running ``language_server`` can reach the dispatcher and the robot,
so execution is a goal of its ``execute_command`` action, sent and followed
through :class:`heracles_ros.client.HeraclesClient`. The CLI prints one
time-stamped line per feedback message (grounding queries, goal, the plan in
words, each step with the walking left, its estimated time and the robot's
position, updated while the robot walks) on stderr, asks on the terminal
when the command waits for confirmation (only an explicit yes approves), ends
with a line on stdout saying how it ended, where the robot is and what it
holds, and exits by the outcome: 0 succeeded (or planned), 3 the model asks
back (clarify), 1 anything else, 4 no language server answered. ``--json``
prints the result on stdout instead, with the last step event as ``progress``
(``distance_remaining_m``, ``time_remaining_s`` and ``speed_basis`` among its
fields; null when no step ran).

Stopping: Ctrl-C, SIGTERM and SIGHUP (the terminal closing) cancel the command
at any moment (a goal whose response has not arrived yet is cancelled as soon
as it does), the CLI says what it cancelled and where the robot stopped, and
exits 130; a second one leaves at once, the cancel already sent. A server that
has not answered the goal within 10 s gets it cancelled should it take it in
the next 30 s (the CLI waits for that, then exits 1), so a goal accepted late
never walks the robot until the server notices the CLI is gone. The goal
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
from types import FrameType
from typing import TYPE_CHECKING, Any

from heracles_ros.cli.common import print_json
from heracles_ros.client.words import final_line, message_dict, plan_lines, progress_line, stamped, where_robot_is
from heracles_ros.errors import HeraclesError, SystemUnavailable
from heracles_ros.outcomes import SUCCESSFUL_COMMANDS, CommandOutcome

if TYPE_CHECKING:
    from heracles_ros.client import HeraclesClient

#: Exit codes by outcome; 130 (128 + SIGINT, the shell's convention) when the operator interrupted.
EXIT_OK, EXIT_FAILED, EXIT_CLARIFY, EXIT_INTERRUPTED = 0, 1, 3, 130
#: Seconds to wait for the server to accept or reject the goal.
GOAL_RESPONSE_TIMEOUT_S = 10.0
#: Then seconds more, the goal's cancel already wanted, for an answer that comes late: a goal the server takes
#: meanwhile is cancelled at once, not left to walk until the server notices this CLI is gone.
LATE_ANSWER_WAIT_S = 30.0
#: After a cancel, seconds to wait for the command's result (it says where the robot stopped).
CANCEL_RESULT_WAIT_S = 10.0
#: The language server's action gone from the graph this long: the server is reported dead.
SERVER_LOST_S = 3.0
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
    "replans", "robot_place", "holding", "tool_calls", "input_tokens", "output_tokens", "latency_s", "missing",
    "found", "found_where", "searched", "search_distance_m",
)


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


def execute(args: argparse.Namespace) -> int:
    """Send the instruction as an ExecuteCommand goal and follow it to its result."""
    from heracles_ros.client import HeraclesClient

    with Interrupts() as interrupts, HeraclesClient(
        args.namespace, node_name="heracles_cli", find_timeout_s=args.server_timeout,
        answer_timeout_s=GOAL_RESPONSE_TIMEOUT_S,
    ) as client:
        follower = _Follower(client, interrupts)
        deadline = time.monotonic() + args.server_timeout
        while not client.command_server_present():
            if interrupts.first.is_set():
                _err(f"{interrupts.name}: nothing was sent")
                return EXIT_INTERRUPTED
            if time.monotonic() > deadline:
                raise SystemUnavailable(
                    f"no language_server serves {client.action_name} within {args.server_timeout:g} s: start "
                    "the system (heracles up, or ros2 launch heracles_ros heracles.launch.py) or name its "
                    "namespace with --namespace", name=client.action_name)
            time.sleep(_TICK_S)
        command_id = client.command(args.instruction, execute=True, require_confirmation=args.confirm,
                                    session=args.session, command_id=f"cli-{uuid.uuid4().hex[:8]}", wait=False,
                                    search_for=args.search)
        return follower.run(command_id, args.instruction, as_json=args.json)


class _Follower:
    """One command's life on the terminal: progress lines, confirmation, signals, the result.

    Everything is waited for in one loop on the main thread that also looks at the
    signals, so no wait blocks a cancel and none is unbounded.
    """

    def __init__(self, client: HeraclesClient, interrupts: Interrupts):
        self.client = client
        self.interrupts = interrupts
        self.answers: queue.Queue[str] = queue.Queue()
        self.confirmations: queue.Queue[str] = queue.Queue()
        #: What the command was doing as last heard, and where the robot was.
        self.stage = "waiting for the server to accept it"
        self.position: Any = None
        #: The last step event (heracles_ros/DispatchProgress), for --json.
        self.progress: Any = None
        self.cancel_sent = False
        #: The goal's answer did not come within GOAL_RESPONSE_TIMEOUT_S: its cancel was sent for a late one.
        self.gave_up = False

    def run(self, command_id: str, instruction: str, *, as_json: bool) -> int:
        client = self.client
        if not self._answered(command_id):
            return EXIT_INTERRUPTED if self.interrupts.first.is_set() else EXIT_FAILED
        if not client.accepted():
            code = self._rejected(command_id, as_json)
            return EXIT_INTERRUPTED if self.interrupts.first.is_set() else code
        _err(stamped(f"accepted as {command_id}"))
        self.stage = "accepted"
        lost_since = None
        cancel_deadline = time.monotonic() + CANCEL_RESULT_WAIT_S if self.cancel_sent else None
        confirming = False
        while not client.is_task_complete():
            self._leave_if_asked_again()
            now = time.monotonic()
            if self.interrupts.first.is_set() and not self.cancel_sent:
                self._cancel(command_id)
                cancel_deadline = now + CANCEL_RESULT_WAIT_S
            event = client.feedback(timeout_s=_TICK_S)
            if event is not None:
                self._show(event)
            if event is not None and event.stage == "confirm" and not self.cancel_sent:
                self._ask_confirmation()
            confirming = self._confirm_if_answered(command_id, confirming)
            lost_since = None if client.command_server_present() else (lost_since or now)
            if lost_since is not None and now - lost_since > SERVER_LOST_S:
                _err(f"the language_server of {client.action_name} is gone (not on the ROS graph for "
                     f"{SERVER_LOST_S:g} s) while the command was {self.stage}; what happened since is unknown")
                return EXIT_INTERRUPTED if self.cancel_sent else EXIT_FAILED
            if cancel_deadline is not None and now > cancel_deadline:
                _err(f"cancel of {command_id} sent while {self.stage}; no result came within "
                     f"{CANCEL_RESULT_WAIT_S:g} s (robot last seen at {where_robot_is('', self.position)})")
                return EXIT_INTERRUPTED
        self._show_late_feedback()
        result = client.result()
        if result is None:
            _err(f"the language_server sent no result for {command_id}")
            return EXIT_INTERRUPTED if self.cancel_sent else EXIT_FAILED
        code = self._report(result, as_json)
        if not self.cancel_sent:
            return code
        _err(f"cancelled {command_id} ({instruction.strip()[:80]!r}) while {self.stage}: "
             f"{result.outcome}; the robot stopped at {where_robot_is(result.robot_place, self.position)}")
        return EXIT_INTERRUPTED if self.interrupts.first.is_set() or not self.gave_up else EXIT_FAILED

    def _answered(self, command_id: str) -> bool:
        """Wait for the server to accept or reject the goal; False when no answer came (or the operator left).

        Past :data:`GOAL_RESPONSE_TIMEOUT_S` the goal's cancel is wanted and the wait goes on for
        :data:`LATE_ANSWER_WAIT_S`, so a goal the server takes late is cancelled at once (a signal
        after that point, or a second one, leaves at once: the server cancels it once this CLI is gone).
        """
        client = self.client
        deadline = time.monotonic() + GOAL_RESPONSE_TIMEOUT_S
        signalled = False
        while client.accepted() is None:
            self._leave_if_asked_again()
            if self.gave_up and self.interrupts.first.is_set() and not signalled:
                _err(f"{self.interrupts.name}: leaving; the server cancels {command_id} once this CLI is gone")
                return False
            if self.interrupts.first.is_set() and not self.cancel_sent:
                self._cancel(command_id)  # sent as soon as the goal is accepted
            now = time.monotonic()
            if now > deadline and self.gave_up:
                _err(f"no answer to the goal within {GOAL_RESPONSE_TIMEOUT_S + LATE_ANSWER_WAIT_S:g} s; leaving: if "
                     "the server takes it later, it cancels it once this CLI is gone")
                return False
            if now > deadline:
                self.gave_up, signalled = True, self.interrupts.first.is_set()
                if not self.cancel_sent:
                    client.cancel_command()
                    self.cancel_sent = True
                deadline = now + LATE_ANSWER_WAIT_S
                _err(f"the language_server did not answer the goal within {GOAL_RESPONSE_TIMEOUT_S:g} s: it is "
                     f"cancelled should the server take it in the next {LATE_ANSWER_WAIT_S:g} s (Ctrl-C to leave "
                     "now; the server then cancels it once this CLI is gone)")
            time.sleep(_TICK_S)
        if self.gave_up and client.accepted():
            _err(stamped(f"accepted as {command_id} after all, and cancelled at once"))
        return True

    def _cancel(self, command_id: str) -> None:
        self.client.cancel_command()  # sent at once (the reply is not needed: the result says)
        self.cancel_sent = True
        _err(f"{self.interrupts.name}: cancelling {command_id} while {self.stage} "
             "(again to leave at once, the cancel is sent)")

    def _leave_if_asked_again(self) -> None:
        """A second signal: leave now. The cancel is sent (or the server cancels once this CLI is gone)."""
        if not self.interrupts.again.is_set():
            return
        accepted = self.client.accepted()
        if accepted and not self.cancel_sent:
            self.client.cancel_command()
        _err("leaving at once: the cancel is sent" if accepted is not None else
             "leaving at once: the server cancels the command once this CLI is gone")
        sys.stdout.flush()
        os._exit(EXIT_INTERRUPTED)

    def _show_late_feedback(self) -> None:
        """Feedback sent before the result can arrive after it (a topic and a service reply are not
        ordered): show what comes within a short quiet spell, so the last step's lines are not lost."""
        deadline = time.monotonic() + LATE_FEEDBACK_MAX_S
        while (left := deadline - time.monotonic()) > 0:
            event = self.client.feedback(timeout_s=min(LATE_FEEDBACK_QUIET_S, left))
            if event is None:
                return
            self._show(event)

    def _rejected(self, command_id: str, as_json: bool) -> int:
        code, reason = self.client.rejection(REJECTION_WAIT_S)
        if as_json:
            print_json({"outcome": CommandOutcome.REJECTED.value, "code": code, "reason": reason,
                        "command_id": command_id})
        else:
            _err(f"rejected ({code}): {reason}")
        return EXIT_FAILED

    def _show(self, feedback: Any) -> None:
        if feedback.stage == "step":
            self.position = feedback.step.robot_position
            self.progress = feedback.step
            self.stage = f"executing step {feedback.step.step_index + 1}/{feedback.step.step_count}"
            _err(stamped(progress_line(feedback.step)))
            return
        self.stage = _STAGES.get(feedback.stage, feedback.stage)
        if feedback.stage == "plan" and feedback.plan.steps:
            lines = plan_lines(feedback.plan)
            _err("\n".join([stamped(lines[0]), *lines[1:]]))
            return
        _err(stamped(feedback.message if feedback.stage == "confirm" else f"{feedback.stage}: {feedback.message}"))

    def _ask_confirmation(self) -> None:
        """Ask on the terminal; the answer is read in a thread, so signals and the result still count."""
        print("Go ahead? Type yes to let the robot move [y/N] ", end="", file=sys.stderr, flush=True)

        def read() -> None:
            try:
                self.answers.put(sys.stdin.readline())
            except (OSError, ValueError):
                self.answers.put("")

        threading.Thread(target=read, name="confirm-input", daemon=True).start()

    def _confirm_if_answered(self, command_id: str, confirming: bool) -> bool:
        """Send the operator's answer once typed, in a thread (its call is bounded); report its reply.

        Returns whether a confirm call is in flight.
        """
        if confirming:
            try:
                _err(self.confirmations.get_nowait())
            except queue.Empty:
                return True
            return False
        try:
            answer = self.answers.get_nowait()
        except queue.Empty:
            return False
        approve = answer.strip().lower() in ("y", "yes")  # Enter, end of input or anything else: no
        if self.interrupts.first.is_set():  # a signal came first: the cancel, not this answer, decides
            return False

        def send() -> None:
            try:
                self.confirmations.put(self.client.confirm(approve, command_id).message)
            except HeraclesError as exc:
                self.confirmations.put(str(exc))

        threading.Thread(target=send, name="confirm-call", daemon=True).start()
        return True

    def _report(self, result: Any, as_json: bool) -> int:
        data = {name: getattr(result, name) for name in _RESULT_FIELDS}
        data["queries"] = list(result.queries)
        data["candidates"] = [c.description for c in result.candidates]
        data["progress"] = message_dict(self.progress) if self.progress is not None else None
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
            if result.outcome not in (CommandOutcome.CLARIFY, CommandOutcome.PLANNED):
                print(final_line(result, self.position))
        if result.outcome in SUCCESSFUL_COMMANDS:
            return EXIT_OK
        return EXIT_CLARIFY if result.outcome == CommandOutcome.CLARIFY else EXIT_FAILED


def _err(text: str) -> None:
    print(text, file=sys.stderr, flush=True)
