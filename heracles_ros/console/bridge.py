"""The console's ROS side: the running system's calls and topics, for the web server.

Built on :class:`heracles_ros.client.HeraclesClient`, so every call is bounded and
a command names its client node (the language server cancels it when the
console dies). Three kinds of clients, so nothing waits behind anything else:

- one for ``stop`` alone (its own node and thread: a stop never queues behind an
  ask, a confirm or a command);
- one for the other services (ask, confirm, resume, changes, corrections), whose
  node also holds the subscriptions: ``stop_state`` (latched), ``dispatch_progress``
  (the robot's position) and ``mirror_status``;
- one per running command (a client follows one command at a time), closed when
  the command ends.

Every method blocks: the web server calls them from threads, never on its loop.
Topic messages and command events reach the server through callbacks, from ROS
threads.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from heracles_ros.client import HeraclesClient
from heracles_ros.client.system import topic_name
from heracles_ros.console import ros_messages
from heracles_ros.console.ros_messages import Locate, MirrorReport
from heracles_ros.errors import CommandRejected, SystemUnavailable
from heracles_ros.outcomes import CommandOutcome

log = logging.getLogger(__name__)

Emit = Callable[[dict[str, Any]], None]
#: Seconds a closing console gives each running command to end after its cancel.
CLOSE_WAIT_S = 3.0
#: Seconds between looks at a running command's feedback.
_FEEDBACK_POLL_S = 0.2


class ConsoleBridge:
    """The running system in one robot namespace (see the module's docstring)."""

    def __init__(self, namespace: str, *, on_stop: Emit, on_robot: Emit,
                 on_mirror: Callable[[MirrorReport], None], find_timeout_s: float = 5.0):
        from heracles_ros.msg import DispatchProgress, MirrorStatus, StopState
        from heracles_ros.nodes.qos import latched, reliable

        self.namespace = namespace
        self.find_timeout_s = find_timeout_s
        self._closing = threading.Event()
        self._numbers = itertools.count(1)
        self._commands: dict[str, RunningCommand] = {}
        self._lock = threading.Lock()
        self._place = ""
        self._stopper = HeraclesClient(namespace, node_name="heracles_console_stop", find_timeout_s=find_timeout_s)
        try:
            self._services = HeraclesClient(namespace, node_name="heracles_console", find_timeout_s=find_timeout_s)
        except BaseException:
            self._stopper.close()
            raise

        def progress(message: Any) -> None:
            self._place = ros_messages.reached_place(message) or self._place
            if (robot := ros_messages.robot_message(message, self._place)) is not None:
                on_robot(robot)

        node = self._services.node
        node.create_subscription(StopState, topic_name(namespace, "stop_state"),
                                 lambda m: on_stop(ros_messages.stop_message(m)), latched())
        node.create_subscription(DispatchProgress, topic_name(namespace, "dispatch_progress"), progress, reliable(100))
        node.create_subscription(MirrorStatus, topic_name(namespace, "mirror_status"),
                                 lambda m: on_mirror(ros_messages.mirror_report(m)), 10)

    def close(self) -> None:
        """Cancel the commands still running (each waits at most CLOSE_WAIT_S), then leave the graph."""
        self._closing.set()
        with self._lock:
            running = list(self._commands.values())
        for command in running:
            command.cancel()
        deadline = time.monotonic() + CLOSE_WAIT_S + 1.0
        for command in running:
            command.join(max(0.0, deadline - time.monotonic()))
        self._services.close()
        self._stopper.close()

    # -- the dispatcher --------------------------------------------------------------------------------------
    def stop(self) -> tuple[bool, str]:
        """The latched stop, through a client used for nothing else."""
        response = self._stopper.stop()
        return bool(response.success), str(response.message)

    def resume(self, operator: str, reason: str) -> tuple[bool, str]:
        response = self._services.resume(operator, reason)
        return bool(response.success), str(response.message)

    # -- the language server -----------------------------------------------------------------------------------
    def ask(self, question: str, session: str) -> Any:
        return self._services.ask(question, session=session)

    def confirm(self, command_id: str, approve: bool) -> tuple[bool, str]:
        response = self._services.confirm(approve, command_id)
        return bool(response.success), str(response.message)

    def corrections(self) -> list[dict[str, Any]]:
        return self._services.corrections()

    def revert(self, correction_id: str) -> list[str]:
        return self._services.revert_correction(correction_id)

    def changes(self, since_s: float) -> list[dict[str, Any]]:
        """History events of the last ``since_s`` seconds, from the mirror's service."""
        return self._services.changes(since_s=-since_s)

    # -- commands ---------------------------------------------------------------------------------------------
    def command(self, instruction: str, *, session: str, execute: bool, emit: Emit, locate: Locate) -> str:
        """Start a command (always asking for confirmation) in a thread of its own; its id at once.

        Its stages and its result go to ``emit``; a rejection or a server that does not answer ends it
        with a result message too.
        """
        command_id = f"console-{session}-{next(self._numbers)}"
        command = RunningCommand(self, command_id, instruction, session, execute, emit, locate)
        with self._lock:
            self._commands[command_id] = command
        command.start()
        return command_id

    def instruction_of(self, command_id: str) -> str | None:
        with self._lock:
            command = self._commands.get(command_id)
        return command.instruction if command is not None else None

    def cancel(self, command_id: str) -> bool:
        """Cancel a running command (False: no such command runs)."""
        with self._lock:
            command = self._commands.get(command_id)
        if command is None or command.done.is_set():
            return False
        command.cancel()
        return True

    def _finished(self, command: RunningCommand) -> None:
        with self._lock:
            # Kept for ``choose`` (a clarification names the original instruction): the newest 100 at least.
            if len(self._commands) > 200:
                for key in [k for k, c in self._commands.items() if c.done.is_set()][:100]:
                    del self._commands[key]


class RunningCommand:
    """One command followed by a client of its own, in a thread of its own."""

    def __init__(self, bridge: ConsoleBridge, command_id: str, instruction: str, session: str, execute: bool,
                 emit: Emit, locate: Locate):
        self.bridge = bridge
        self.command_id = command_id
        self.instruction = instruction
        self.session = session
        self.execute = execute
        self.emit = emit
        self.locate = locate
        self.done = threading.Event()
        self._cancel = threading.Event()
        self._client: HeraclesClient | None = None
        self._thread = threading.Thread(target=self._run, name=f"console-{command_id}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)

    def cancel(self) -> None:
        self._cancel.set()
        client = self._client
        if client is not None:
            client.cancel_command()

    def _run(self) -> None:
        try:
            self._follow()
        except Exception as exc:  # reported to the page, never lost in a thread
            log.exception("command %s failed", self.command_id)
            self.emit(ros_messages.ended_message(self.command_id, CommandOutcome.FAILED.value, str(exc)))
        finally:
            self.done.set()
            self.bridge._finished(self)

    def _follow(self) -> None:
        number = self.command_id.rsplit("-", 1)[-1]
        with HeraclesClient(self.bridge.namespace, node_name=f"heracles_console_command{number}",
                            find_timeout_s=self.bridge.find_timeout_s) as client:
            self._client = client
            try:
                client.command(self.instruction, execute=self.execute, require_confirmation=True, session=self.session,
                               command_id=self.command_id)
            except CommandRejected as exc:
                self.emit(ros_messages.ended_message(self.command_id, exc.code, exc.reason))
                return
            except SystemUnavailable as exc:
                self.emit(ros_messages.ended_message(self.command_id, CommandOutcome.FAILED.value, str(exc)))
                return
            if self._cancel.is_set():  # cancelled while it was being sent
                client.cancel_command()
            while not client.is_task_complete():
                if self.bridge._closing.is_set():
                    client.cancel_command()
                    if client.result(timeout_s=CLOSE_WAIT_S) is None:
                        return  # the server cancels it anyway once this client is gone
                    break
                feedback = client.feedback(timeout_s=_FEEDBACK_POLL_S)
                if feedback is not None:
                    self.emit(ros_messages.stage_message(feedback))
            while (feedback := client.feedback()) is not None:
                self.emit(ros_messages.stage_message(feedback))
            result = client.result()
            if result is None:
                code, reason = client.rejection()
                self.emit(ros_messages.ended_message(self.command_id, code, reason))
            else:
                self.emit(ros_messages.result_message(result, self.locate))


def bridge_factory(namespace: str, *, find_timeout_s: float = 5.0) -> Callable[[Any], ConsoleBridge]:
    """What :func:`heracles_ros.console.app.create_app` calls with its hub when the server starts."""
    def make(hub: Any) -> ConsoleBridge:
        return ConsoleBridge(namespace, on_stop=hub.on_stop, on_robot=hub.on_robot, on_mirror=hub.on_mirror,
                             find_timeout_s=find_timeout_s)
    return make
