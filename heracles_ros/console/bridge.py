"""The console's ROS side: the running system's calls and topics, for the web server.

One :class:`heracles_ros.client.HeraclesClient` for the console's whole life: one
context (one DDS participant), one node, one executor thread, however many
commands and tabs come and go (a client per command left a participant and a
dozen threads behind each time: 650 MB after 38 commands). Every call on it is
bounded. Its node holds the subscriptions (``stop_state`` and ``robot_pose``,
latched: the robot the dispatcher works with, from the console's first moment;
``dispatch_progress``, the robot's steps; ``mirror_status``;
``command_rejections``) and one ``execute_command`` action client that follows
every command at once, each goal naming this node, so the language server
cancels them all if the console dies; a tab that goes away has its own commands
cancelled by :meth:`ConsoleBridge.cancel_session`.

The service calls block: the web server calls them from threads, never on its
loop, the stop from a pool of its own (on the robot's side the stop has its own
callback group; here nothing in the executor takes more than a moment, so a
stop's answer never waits behind another). :meth:`ConsoleBridge.command` and
:meth:`ConsoleBridge.cancel` return at once. Topic messages and command events
reach the server through callbacks, from the executor's thread.
"""
from __future__ import annotations

import collections
import concurrent.futures
import itertools
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from heracles_ros.client import HeraclesClient
from heracles_ros.client.system import ANSWER_TIMEOUT_S, where_to_look
from heracles_ros.console import ros_messages
from heracles_ros.console.ros_messages import Locate, MirrorReport
from heracles_ros.outcomes import CommandOutcome
from heracles_ros.ros import interfaces

log = logging.getLogger(__name__)

Emit = Callable[[dict[str, Any]], None]
#: Seconds a closing console gives its running commands to end after their cancel.
CLOSE_WAIT_S = 3.0
#: Seconds a rejected command's reason may take to arrive on ``command_rejections`` after the rejection.
REJECTION_WAIT_S = 3.0
#: Commands being sent at once (finding the server, waiting for it to accept); more wait their turn.
SENDERS = 4
#: Instructions of ended commands kept for ``choose`` (a clarification's follow-up names the instruction).
INSTRUCTIONS_KEPT = 200
#: Rejection reasons kept while their goal responses are on the way.
REJECTIONS_KEPT = 50
#: Seconds between looks for the language server's action while sending a command.
_FIND_POLL_S = 0.02


@dataclass(eq=False)
class ConsoleCommand:
    """One command of one tab: what it was, where its messages go, and its goal once the server took it."""

    command_id: str
    instruction: str
    session: str
    execute: bool
    emit: Emit
    locate: Locate
    #: The accepted goal's handle (None until then).
    handle: Any = None
    cancel_wanted: bool = False
    #: The console stopped waiting for the server's answer: a goal accepted after that is cancelled at once.
    given_up: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class ConsoleBridge:
    """The running system in one robot namespace (see the module's docstring)."""

    def __init__(self, namespace: str, *, on_stop: Emit, on_robot: Emit,
                 on_mirror: Callable[[MirrorReport], None], find_timeout_s: float = 5.0):
        self.namespace = namespace
        self.find_timeout_s = find_timeout_s
        self._closing = threading.Event()
        self._numbers = itertools.count(1)
        self._lock = threading.Lock()
        self._commands: dict[str, ConsoleCommand] = {}
        self._instructions: collections.OrderedDict[str, str] = collections.OrderedDict()
        self._rejections: collections.OrderedDict[str, tuple[str, str]] = collections.OrderedDict()
        self._rejected = threading.Condition(self._lock)
        self._place = ""
        # Named apart from any other console in the process (the client adds the process id): the language
        # server watches this name to cancel the console's commands once it is gone.
        self._ros = HeraclesClient(namespace, node_name=f"heracles_console_{uuid.uuid4().hex[:6]}",
                                   find_timeout_s=find_timeout_s)
        self._senders = concurrent.futures.ThreadPoolExecutor(max_workers=SENDERS,
                                                              thread_name_prefix="console-command")

        def progress(message: Any) -> None:
            self._place = ros_messages.reached_place(message) or self._place
            if (robot := ros_messages.robot_message(message, self._place)) is not None:
                on_robot(robot)

        node = self._ros.node
        for topic, callback in (
            (interfaces.STOP_STATE, lambda m: on_stop(ros_messages.stop_message(m))),
            (interfaces.ROBOT_POSE, lambda m: on_robot(ros_messages.pose_message(m, self._place))),
            (interfaces.DISPATCH_PROGRESS, progress),
            (interfaces.MIRROR_STATUS, lambda m: on_mirror(ros_messages.mirror_report(m))),
            (interfaces.COMMAND_REJECTIONS, self._on_rejection),
        ):
            topic.subscription(node, callback, namespace=namespace)
        # Destroyed before the node when the client closes (ClientContext): the console then leaves the graph.
        self._actions: Any = self._ros.ros.action_client(interfaces.EXECUTE_COMMAND, namespace)

    @property
    def node_name(self) -> str:
        """The console's one node, named by every command it sends."""
        return self._ros.node_name

    def close(self) -> None:
        """Cancel the commands still running (waiting at most CLOSE_WAIT_S for them to end), then leave the graph."""
        self._closing.set()
        with self._lock:
            running = list(self._commands.values())
        for command in running:
            self._cancel(command)
        deadline = time.monotonic() + CLOSE_WAIT_S
        for command in running:
            command.done.wait(max(0.0, deadline - time.monotonic()))
        self._senders.shutdown(wait=True, cancel_futures=True)  # each gives up at once: closing is set
        self._ros.close()

    # -- the dispatcher --------------------------------------------------------------------------------------
    def stop(self) -> tuple[bool, str]:
        response = self._ros.stop()
        return bool(response.success), str(response.message)

    def resume(self, operator: str, reason: str) -> tuple[bool, str]:
        response = self._ros.resume(operator, reason)
        return bool(response.success), str(response.message)

    # -- the language server and the mirror ------------------------------------------------------------------
    def ask(self, question: str, session: str) -> Any:
        return self._ros.ask(question, session=session)

    def confirm(self, command_id: str, approve: bool) -> tuple[bool, str]:
        response = self._ros.confirm(approve, command_id)
        return bool(response.success), str(response.message)

    def corrections(self) -> list[dict[str, Any]]:
        return self._ros.corrections()

    def revert(self, correction_id: str) -> list[str]:
        return self._ros.revert_correction(correction_id)

    def changes(self, since_s: float) -> list[dict[str, Any]]:
        """History events of the last ``since_s`` seconds, from the mirror's service."""
        return self._ros.changes(since_s=-since_s)

    # -- commands ---------------------------------------------------------------------------------------------
    def command(self, instruction: str, *, session: str, execute: bool, emit: Emit, locate: Locate) -> str:
        """Send a command (always asking for confirmation); its id at once.

        Its stages and its result go to ``emit`` (from ROS threads); a rejection, or a server that does not
        answer, ends it with a result message too.
        """
        command = ConsoleCommand(f"console-{session}-{next(self._numbers)}", instruction, session, execute, emit,
                                 locate)
        with self._lock:
            self._commands[command.command_id] = command
            self._instructions[command.command_id] = instruction
            while len(self._instructions) > INSTRUCTIONS_KEPT:
                self._instructions.popitem(last=False)
        try:
            self._senders.submit(self._send, command)
        except RuntimeError:  # the console is closing
            self._end(command, ros_messages.ended_message(command.command_id, CommandOutcome.FAILED.value,
                                                          "the console is closing"))
        return command.command_id

    def instruction_of(self, command_id: str) -> str | None:
        with self._lock:
            return self._instructions.get(command_id)

    def cancel(self, command_id: str) -> bool:
        """Cancel a running command (False: no such command runs)."""
        with self._lock:
            command = self._commands.get(command_id)
        if command is None:
            return False
        self._cancel(command)
        return True

    def cancel_session(self, session: str) -> list[str]:
        """Cancel every command a tab started (the tab went away); their ids."""
        with self._lock:
            running = [c for c in self._commands.values() if c.session == session]
        for command in running:
            self._cancel(command)
        return [c.command_id for c in running]

    def running(self) -> list[str]:
        """Ids of the commands not yet ended."""
        with self._lock:
            return list(self._commands)

    def _cancel(self, command: ConsoleCommand) -> None:
        with self._lock:
            command.cancel_wanted = True
            handle = command.handle
        if handle is not None:
            handle.cancel_goal_async()  # the result says how it ended

    def _send(self, command: ConsoleCommand) -> None:
        """In a sender thread: find the server, send the goal, wait (bounded) for it to be taken or refused."""
        try:
            failure = self._find_server()
            if failure:
                self._end(command, ros_messages.ended_message(command.command_id, CommandOutcome.FAILED.value,
                                                              failure))
                return
            goal = interfaces.EXECUTE_COMMAND.type.Goal(instruction=command.instruction, execute=command.execute,
                                       require_confirmation=True, session=command.session,
                                       command_id=command.command_id, client_node=self.node_name)
            answered = threading.Event()
            sent = self._actions.send_goal_async(goal, feedback_callback=self._on_feedback)
            sent.add_done_callback(lambda future: self._on_goal_response(command, future, answered))
            deadline = time.monotonic() + ANSWER_TIMEOUT_S
            while not answered.wait(0.1):
                if time.monotonic() >= deadline or self._closing.is_set():
                    break
            if not answered.is_set():
                with self._lock:
                    command.given_up = True
                    late = command.handle is not None  # answered in between: the goal response has it
                if not late:
                    self._end(command, ros_messages.ended_message(
                        command.command_id, CommandOutcome.FAILED.value,
                        f"the language_server did not take the command within {ANSWER_TIMEOUT_S:g} s (if it takes "
                        "it later, it is cancelled at once)"))
        except Exception as exc:  # reported to the page, never lost in a thread
            log.exception("command %s could not be sent", command.command_id)
            self._end(command, ros_messages.ended_message(command.command_id, CommandOutcome.FAILED.value,
                                                          f"{type(exc).__name__}: {exc}"))

    def _find_server(self) -> str:
        """'' once the language server's action is on the graph; else why not (within find_timeout_s)."""
        deadline = time.monotonic() + self.find_timeout_s
        while not self._actions.server_is_ready():
            if self._closing.is_set():
                return "the console is closing"
            if time.monotonic() >= deadline:
                return (f"no {interfaces.EXECUTE_COMMAND.server} answered on "
                        f"{interfaces.EXECUTE_COMMAND.full_name(self.namespace)} within "
                        f"{self.find_timeout_s:g} s ({where_to_look(self.namespace)})")
            self._closing.wait(_FIND_POLL_S)
        return ""

    def _on_goal_response(self, command: ConsoleCommand, future: Any, answered: threading.Event) -> None:
        """From the executor: the goal taken (follow its result) or refused (its reason, from a thread)."""
        try:
            handle = future.result()
        except Exception:  # the context went down under the call: the sender's wait runs out
            return
        if handle is None or not handle.accepted:
            answered.set()
            try:
                self._senders.submit(self._rejected_with_reason, command)
            except RuntimeError:  # the console is closing: no time to wait for the reason
                self._end(command, ros_messages.ended_message(command.command_id, CommandOutcome.REJECTED.value,
                                                              "the language_server refused the command"))
            return
        with self._lock:
            command.handle = handle
            cancel = command.cancel_wanted or command.given_up
        handle.get_result_async().add_done_callback(lambda result: self._on_result(command, result))
        if cancel:
            handle.cancel_goal_async()
        answered.set()

    def _rejected_with_reason(self, command: ConsoleCommand) -> None:
        """A refused command ends with the server's code and reason (they travel on command_rejections)."""
        deadline = time.monotonic() + REJECTION_WAIT_S
        with self._rejected:
            while (found := self._rejections.pop(command.command_id, None)) is None:
                left = deadline - time.monotonic()
                if left <= 0 or self._closing.is_set():
                    break
                self._rejected.wait(min(left, 0.1))
        code, reason = found or (CommandOutcome.REJECTED.value,
                                 "the language_server refused the command (its reason did not arrive)")
        self._end(command, ros_messages.ended_message(command.command_id, code, reason))

    def _on_rejection(self, message: Any) -> None:
        with self._rejected:
            self._rejections[str(message.command_id)] = (str(message.code), str(message.reason))
            while len(self._rejections) > REJECTIONS_KEPT:
                self._rejections.popitem(last=False)
            self._rejected.notify_all()

    def _on_feedback(self, message: Any) -> None:
        feedback = message.feedback
        with self._lock:
            command = self._commands.get(str(feedback.command_id))
        if command is not None:
            command.emit(ros_messages.stage_message(feedback))

    def _on_result(self, command: ConsoleCommand, future: Any) -> None:
        try:
            response = future.result()
        except Exception as exc:  # the context went down under the call
            response, reason = None, f"{type(exc).__name__}: {exc}"
        else:
            reason = "the language_server sent no result"
        if response is None:
            self._end(command, ros_messages.ended_message(command.command_id, CommandOutcome.FAILED.value, reason))
        else:
            self._end(command, ros_messages.result_message(response.result, command.locate))

    def _end(self, command: ConsoleCommand, message: dict[str, Any]) -> None:
        """The command's last message; it is no longer running."""
        with self._lock:
            if command.done.is_set():
                return
            command.done.set()
            self._commands.pop(command.command_id, None)
        command.emit(message)


def bridge_factory(namespace: str, *, find_timeout_s: float = 5.0) -> Callable[[Any], ConsoleBridge]:
    """What :func:`heracles_ros.console.app.create_app` calls with its hub when the server starts."""
    def make(hub: Any) -> ConsoleBridge:
        return ConsoleBridge(namespace, on_stop=hub.on_stop, on_robot=hub.on_robot, on_mirror=hub.on_mirror,
                             find_timeout_s=find_timeout_s)
    return make
