"""One client of the running system: every service and action of the three nodes, each call bounded.

:class:`HeraclesClient` holds one rclpy node in a context of its own, spun in a
background thread (:class:`~heracles_ros.ros.client_context.ClientContext`), so
it can be used from a script, a test or a console next to any other rclpy code;
every name, type and QoS comes from :mod:`heracles_ros.ros.interfaces`. Every
call first finds its service or action (within ``find_timeout_s``), then waits
for the answer (within ``answer_timeout_s``, or the call's own ``timeout_s``);
when either runs out it raises
:class:`~heracles_ros.errors.SystemUnavailable` naming what did not answer. An
answer carrying an error (``changes``, ``corrections``) raises
:class:`~heracles_ros.errors.RequestFailed`.

Commands follow ``nav2_simple_commander``'s shape: :meth:`command` sends the
goal, then :meth:`is_task_complete`, :meth:`feedback` and :meth:`result` follow
it, :meth:`confirm` answers a confirmation and :meth:`cancel_command` cancels
it (at any moment, even before the server accepted it). Unlike Nav2's client,
the goal names this client's node, so the language server cancels the command
when the client dies, and the client announces a short DDS lease
(:mod:`heracles_ros.ros.fastdds_profile`) so that a killed client is noticed
within seconds. ``stop``, ``resume`` and ``cancel_plan`` go to the robot's
dispatcher directly, never through the language server.
"""
from __future__ import annotations

import json
import math
import os
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import CommandRejected, RequestFailed, SystemUnavailable
from heracles_ros.outcomes import CommandOutcome
from heracles_ros.ros import interfaces

#: heracles.launch.py's default robot namespace (robot_name:=spot).
DEFAULT_NAMESPACE = "/spot"
#: Seconds to find a service or action on the graph.
FIND_TIMEOUT_S = 5.0
#: Seconds to wait for a control service's answer (stop, resume, cancel, confirm, changes, corrections).
ANSWER_TIMEOUT_S = 10.0
#: Seconds to wait for a language request (ask, plan, correct): the model's turns, queries and planning.
LANGUAGE_TIMEOUT_S = 300.0
#: Seconds to wait for a find's answer: the first loads the word vectors; a provider's embeddings take a call.
FIND_ANSWER_TIMEOUT_S = 60.0
#: Seconds between looks at the graph while waiting for a service (rclpy's own wait looks every 0.25 s).
_POLL_S = 0.01


@dataclass(frozen=True)
class PastScene:
    """The mirror's answer of a time: its nodes, and for a scene the history's range it came from (epoch seconds,
    None without a history) and whether the read saw one snapshot."""

    nodes: list[dict[str, Any]]
    kept_from: float | None
    newest: float | None
    whole: bool


def _seconds(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def where_to_look(namespace: str) -> str:
    """What a client that found nothing should check: the namespace, and this shell's ROS domain and discovery
    range, which must be the running system's (``heracles up`` keeps discovery on its host)."""
    domain = os.environ.get("ROS_DOMAIN_ID") or "0"
    reach = os.environ.get("ROS_AUTOMATIC_DISCOVERY_RANGE") or "SUBNET (the default)"
    return (f"is the system running in namespace {namespace!r}, on ROS_DOMAIN_ID {domain}, and does this shell's "
            f"discovery range ({reach}) reach it? heracles up keeps discovery on its host: "
            "export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST and its ROS_DOMAIN_ID here too")


class HeraclesClient:
    """The running system's services and actions in one robot namespace (see the module's docstring).

    Use it as a context manager, or call :meth:`close`. Not for several threads at once, except
    :meth:`cancel_command`, :meth:`stop` and the waits, which may come from a signal-watching loop.
    """

    _goal: Any
    _handle: Any
    _result: Any
    _feedback: queue.Queue[Any]

    def __init__(self, namespace: str = DEFAULT_NAMESPACE, *, node_name: str = "heracles_client",
                 find_timeout_s: float = FIND_TIMEOUT_S, answer_timeout_s: float = ANSWER_TIMEOUT_S,
                 short_lease: bool = True):
        from heracles_ros.ros.client_context import ClientContext

        self.namespace = namespace
        self.find_timeout_s = find_timeout_s
        self.answer_timeout_s = answer_timeout_s
        # One name per process: the server watches this node's presence, and two clients must not share it.
        #: The client's rclpy context and its one node (a console adds its subscriptions there).
        self.ros = ClientContext(f"{node_name}_{os.getpid()}", short_lease=short_lease)
        self.node: Any = self.ros.node
        self._closing = threading.Event()
        self._clients: dict[str, Any] = {}
        self._command_client: Any = None
        self._clients_lock = threading.Lock()  # two threads asking one service first make one client, not two
        self._lock = threading.Lock()
        self._reset_command()

    # -- life ------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Leave the graph (a command still running is then cancelled by its server after client_lost_s)."""
        self._closing.set()  # every wait gives up
        self.ros.close()

    def __enter__(self) -> HeraclesClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def node_name(self) -> str:
        """This client's fully qualified node name, the one its commands are watched by."""
        return str(self.node.get_fully_qualified_name())

    # -- the dispatcher: stop, resume, cancel ------------------------------------------------------------
    def stop(self, *, hard: bool = False) -> Any:
        """Latched stop (``hard``: the robot's gentle e-stop); std_srvs Trigger response (success, message)."""
        link = interfaces.HARD_STOP if hard else interfaces.STOP
        return self._call(link, link.type.Request())

    def resume(self, operator_name: str, reason: str = "") -> Any:
        """Clear the latched stop; Resume response (success false: nothing was stopped)."""
        return self._call(interfaces.RESUME, interfaces.RESUME.type.Request(operator_name=operator_name,
                                                                              reason=reason))

    def cancel_plan(self) -> Any:
        """Cancel whatever plan the dispatcher runs, whoever sent it; Trigger response."""
        return self._call(interfaces.CANCEL, interfaces.CANCEL.type.Request())

    # -- the language server's requests ------------------------------------------------------------------
    def ask(self, question: str, *, answer_type: str = "", session: str = "",
            timeout_s: float = LANGUAGE_TIMEOUT_S) -> Any:
        """A question about the scene; Ask response (answer, or clarification and candidates, or error)."""
        request = interfaces.ASK.type.Request(question=question, answer_type=answer_type, session=session)
        return self._call(interfaces.ASK, request, timeout_s)

    def plan_command(self, instruction: str, *, session: str = "", timeout_s: float = LANGUAGE_TIMEOUT_S) -> Any:
        """Ground and plan an instruction, nothing moves; Command response (goal, plan_summary, ...)."""
        request = interfaces.COMMAND.type.Request(instruction=instruction, session=session)
        return self._call(interfaces.COMMAND, request, timeout_s)

    def correct(self, instruction: str, *, session: str = "", timeout_s: float = LANGUAGE_TIMEOUT_S) -> Any:
        """A correction or addition in plain language; Correct response (changes, added, existing, explanation,
        or a clarification with candidates; error)."""
        request = interfaces.CORRECT.type.Request(instruction=instruction, session=session)
        return self._call(interfaces.CORRECT, request, timeout_s)

    def corrections(self, *, active_only: bool = False) -> list[dict[str, Any]]:
        """Every correction (id, symbol, property, value, original, status, author, ...), oldest first."""
        return [json.loads(entry) for entry in self._manage("list", active_only=active_only).corrections]

    def revert_correction(self, correction_id: str) -> list[str]:
        """Give a node back its value from before the correction ``O14.class``; what changed."""
        return list(self._manage("revert", correction_id=correction_id).changes)

    def clear_corrections(self) -> list[str]:
        """Revert every active correction and delete all records; what changed."""
        return list(self._manage("clear").changes)

    def _manage(self, action: str, *, correction_id: str = "", active_only: bool = False) -> Any:
        request = interfaces.CORRECTIONS.type.Request(action=action, id=correction_id, active_only=active_only)
        response = self._call(interfaces.CORRECTIONS, request)
        if response.error:
            raise RequestFailed(f"corrections {action}: {response.error}")
        return response

    def find(self, text: str = "", *, like_symbol: str = "", k: int = 0,
             timeout_s: float = FIND_ANSWER_TIMEOUT_S) -> list[dict[str, Any]]:
        """The scene's objects ``text`` names (or, with ``like_symbol``, the ones most like it by Hydra's features),
        best first, at most ``k`` (0: 5); each a dict with symbol, class, name, score, x, y, z, room."""
        request = interfaces.FIND.type.Request(text=text, like_symbol=like_symbol, k=int(k))
        response = self._call(interfaces.FIND, request, timeout_s)
        if response.error:
            raise RequestFailed(f"find: {response.error}")
        return [json.loads(entry) for entry in response.objects]

    # -- the mirror ---------------------------------------------------------------------------------------
    def changes(self, *, since_s: float = 0.0, room: str = "", limit: int = 0) -> list[dict[str, Any]]:
        """The mirror's history since ``since_s`` (epoch seconds; <= 0: that many seconds ago, 0: an hour)."""
        request = interfaces.CHANGES.type.Request(since_s=float(since_s), room=room, limit=int(limit))
        response = self._call(interfaces.CHANGES, request)
        if response.error:
            raise RequestFailed(f"changes: {response.error}")
        return [json.loads(entry) for entry in response.changes]

    def scene_at(self, *, at_s: float = 0.0, symbol: str = "", class_name: str = "", room: str = "") -> PastScene:
        """One node (``symbol``), or the objects there (of ``class_name``, in ``room``), as of ``at_s`` (epoch seconds;
        < 0: that many seconds ago; 0: now), each as ``heracles where``/``scene --json`` prints it."""
        request = interfaces.SCENE_AT.type.Request(at_s=float(at_s), symbol=symbol, class_name=class_name, room=room)
        response = self._call(interfaces.SCENE_AT, request)
        if response.error:
            raise RequestFailed(f"scene_at: {response.error}")
        return PastScene([json.loads(entry) for entry in response.nodes], _seconds(response.kept_from_s),
                         _seconds(response.newest_s), bool(response.whole))

    # -- a command through the execute_command action ----------------------------------------------------
    def command(self, instruction: str, *, execute: bool = True, require_confirmation: bool = False,
                session: str = "", command_id: str = "", wait: bool = True, search_for: str = "") -> str:
        """Send an instruction as an ExecuteCommand goal; its command id. ``search_for``: what to go and look
        for first when the map lacks it (with ``execute``; the result says what was found where).

        ``wait``: return once the server accepted it (within ``answer_timeout_s``; a rejection raises
        CommandRejected with the server's code and reason), else at once (:meth:`accepted` says when).
        One command per client at a time.
        """
        actions = self._action_client()
        self._find(actions.server_is_ready, self.action_name, interfaces.EXECUTE_COMMAND.server)
        self._reset_command()
        if self._rejections is None:
            self._subscribe_rejections()
        goal = interfaces.EXECUTE_COMMAND.type.Goal(
            instruction=instruction, execute=execute, require_confirmation=require_confirmation, session=session,
            command_id=command_id or f"client-{os.getpid()}-{time.monotonic_ns() % 10**8}",
            client_node=self.node_name, search_for=search_for,
        )
        self._goal = goal
        sent = actions.send_goal_async(goal, feedback_callback=lambda message: self._feedback.put(message.feedback))
        sent.add_done_callback(self._on_goal_response)
        if wait:
            if not self._wait(self._answered, self.answer_timeout_s):
                self.cancel_command()  # should the server take it later while this client lives, it is cancelled
                raise SystemUnavailable(
                    f"the language_server did not answer the goal on {self.action_name} within "
                    f"{self.answer_timeout_s:g} s (if it takes it later, this client cancels it, or the server "
                    "does once this client is gone)", name=self.action_name)
            if not self._accepted:
                raise CommandRejected(*self.rejection())
        return str(goal.command_id)

    @property
    def action_name(self) -> str:
        return interfaces.EXECUTE_COMMAND.full_name(self.namespace)

    def accepted(self) -> bool | None:
        """True once the server accepted the command, False when it rejected it, None while it has not said."""
        return self._accepted if self._answered.is_set() else None

    def rejection(self, timeout_s: float = 3.0) -> tuple[str, str]:
        """The rejected command's (code, reason), read from ``command_rejections`` within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                rejection = self._rejection_queue.get(timeout=left)
            except queue.Empty:
                break
            if self._goal is not None and rejection.command_id == self._goal.command_id:
                return str(rejection.code), str(rejection.reason)
        return CommandOutcome.REJECTED.value, "the language_server rejected the command (its reason did not arrive)"

    def cancel_command(self) -> None:
        """Cancel the command at any moment; one not yet accepted is cancelled as soon as it is."""
        with self._lock:
            self._cancel_wanted = True
            handle = self._handle
        if handle is not None and handle.accepted:
            handle.cancel_goal_async()  # the reply is not needed: the result says how it ended

    def confirm(self, approve: bool = True, command_id: str = "") -> Any:
        """Answer a command waiting for confirmation ('' = the one waiting); Confirm response."""
        return self._call(interfaces.CONFIRM, interfaces.CONFIRM.type.Request(command_id=command_id, approve=approve))

    def is_task_complete(self) -> bool:
        """True once the command has a result, or was rejected."""
        return self._finished.is_set() or self.accepted() is False

    def feedback(self, timeout_s: float = 0.0) -> Any:
        """The next feedback message not yet read (stage, message, plan, step), or None within ``timeout_s``."""
        try:
            return self._feedback.get(timeout=timeout_s) if timeout_s > 0 else self._feedback.get_nowait()
        except queue.Empty:
            return None

    def result(self, timeout_s: float = 0.0) -> Any:
        """The command's ExecuteCommand result (outcome, reason, robot_place, holding, ...), or None yet."""
        if timeout_s > 0:
            self._wait(self._finished, timeout_s)
        return self._result if self._finished.is_set() else None

    def command_server_present(self) -> bool:
        """Whether the language server's execute_command action is on the graph now."""
        return bool(self._action_client().server_is_ready())

    def _reset_command(self) -> None:
        self._goal = None
        self._handle = None
        self._accepted = False
        self._cancel_wanted = False
        self._answered = threading.Event()
        self._finished = threading.Event()
        self._result = None
        self._feedback = queue.Queue()
        if not hasattr(self, "_rejection_queue"):
            self._rejection_queue: queue.Queue[Any] = queue.Queue()
            self._rejections: Any = None

    def _subscribe_rejections(self) -> None:
        self._rejections = interfaces.COMMAND_REJECTIONS.subscription(self.node, self._rejection_queue.put,
                                                                      namespace=self.namespace)

    def _on_goal_response(self, future: Any) -> None:
        try:
            handle = future.result()
        except Exception:  # the context went down under the call: no answer (the waits run out)
            return
        with self._lock:
            self._handle = handle
            self._accepted = handle is not None and bool(handle.accepted)
            cancel = self._cancel_wanted
        if self._accepted:
            handle.get_result_async().add_done_callback(self._on_result)
            if cancel:
                handle.cancel_goal_async()
        self._answered.set()

    def _on_result(self, future: Any) -> None:
        response = future.result()
        self._result = response.result if response is not None else None
        self._finished.set()

    def _action_client(self) -> Any:
        with self._clients_lock:
            if self._command_client is None:
                self._command_client = self.ros.action_client(interfaces.EXECUTE_COMMAND, self.namespace)
            return self._command_client

    # -- one bounded service call -------------------------------------------------------------------------
    def _call(self, service: interfaces.Service, request: Any, timeout_s: float | None = None) -> Any:
        name, server = service.full_name(self.namespace), service.server
        with self._clients_lock:
            client = self._clients.get(name)
            if client is None:
                client = self._clients[name] = service.client(self.node, namespace=self.namespace)
        self._find(client.service_is_ready, name, server)
        answer_s = self.answer_timeout_s if timeout_s is None else timeout_s
        answered = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _: answered.set())
        if not self._wait(answered, answer_s) or future.result() is None:
            future.cancel()
            raise SystemUnavailable(f"no {server} answered on {name} within {answer_s:g} s", name=name)
        return future.result()

    def _wait(self, event: threading.Event, timeout_s: float) -> bool:
        """``event.wait(timeout_s)`` that also gives up once this client closes."""
        deadline = time.monotonic() + timeout_s
        while not event.is_set() and not self._closing.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            event.wait(min(left, 0.1))
        return event.is_set()

    def _find(self, ready: Any, name: str, server: str) -> None:
        deadline = time.monotonic() + self.find_timeout_s
        while not ready():
            if time.monotonic() >= deadline or self._closing.is_set():
                hint = where_to_look(self.namespace)
                raise SystemUnavailable(f"no {server} answered on {name} within {self.find_timeout_s:g} s ({hint})",
                                        name=name)
            time.sleep(_POLL_S)
