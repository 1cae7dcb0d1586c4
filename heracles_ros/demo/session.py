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

if TYPE_CHECKING:
    from heracles_ros.ros.runner import BackgroundSpinner

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
        self._context: Any = None
        self._executor: Any = None
        self._spinner: BackgroundSpinner | None = None
        self._nodes: list[Any] = []
        self.events: queue.Queue[Event] = queue.Queue()
        self._console: Any = None
        self._command_result: Any = None  # the last command's result future

    # -- lifecycle ---------------------------------------------------------------------
    def open(self) -> DemoSession:
        rclpy = _import_rclpy()
        from rclpy.context import Context
        from rclpy.signals import SignalHandlerOptions

        self._context = Context()
        kwargs: dict[str, Any] = {
            "context": self._context,
            "signal_handler_options": SignalHandlerOptions.NO,
            "args": ["--ros-args", "--log-level", self._log_level],
        }
        if self._domain_id is not None:
            kwargs["domain_id"] = self._domain_id
        with _environment(_LOCAL_DISCOVERY):
            rclpy.init(**kwargs)
        from heracles_ros.ros.executor import NodeExecutor
        from heracles_ros.ros.runner import BackgroundSpinner

        self._executor = NodeExecutor(num_threads=6, context=self._context)

        self._spinner = BackgroundSpinner(self._executor, name="demo-executor").start()
        self._console = _Console(self)
        self._add(self._console.node)
        return self

    def close(self) -> None:
        """Destroy the nodes (a running plan is cancelled by the dispatcher) and shut rclpy down."""
        if self._context is None:
            return
        for node in reversed(self._nodes):
            if self._executor is not None:
                self._executor.remove_node(node)
            with contextlib.suppress(Exception):
                node.destroy_node()
        self._nodes.clear()
        if self._spinner is not None:
            self._spinner.stop()
        rclpy = _import_rclpy()
        with contextlib.suppress(Exception):
            rclpy.shutdown(context=self._context)
        self._context = None

    def __enter__(self) -> DemoSession:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _add(self, node: Any) -> Any:
        self._nodes.append(node)
        self._executor.add_node(node)
        return node

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
            "context": self._context,
            "namespace": NAMESPACE,
            "use_global_arguments": False,
            "parameter_overrides": [Parameter(name, value=value) for name, value in params.items()],
        }

    # -- nodes -------------------------------------------------------------------------
    def start_mirror(self, params: Mapping[str, Any]) -> None:
        from heracles_ros.nodes import dsg_mirror

        self._add(dsg_mirror.DsgMirrorNode(**self._node_kwargs(dsg_mirror, params)))

    def start_dispatcher(self, params: Mapping[str, Any]) -> None:
        from heracles_ros.nodes import dispatcher

        self._add(dispatcher.DispatcherNode(**self._node_kwargs(dispatcher, params)))
        self._console.wait_for_dispatcher(timeout_s=15.0)

    def start_language_server(self, params: Mapping[str, Any]) -> None:
        try:
            module = importlib.import_module("heracles_ros.nodes.language_server")
        except ModuleNotFoundError as exc:
            if exc.name != "heracles_ros.nodes.language_server":
                raise
            raise ConfigError("this build has no language_server node; run the demo without a language model") from exc
        self._add(module.LanguageServerNode(**self._node_kwargs(module, params)))
        self._console.wait_for_language_services(timeout_s=30.0)

    # -- talking to the nodes ----------------------------------------------------------------
    def next_event(self, timeout_s: float) -> Event | None:
        try:
            return self.events.get(timeout=max(0.0, timeout_s))
        except queue.Empty:
            return None

    def send_plan(self, msg: Any, *, timeout_s: float = 10.0) -> None:
        """Send a plan to the dispatcher's execute_plan action; ExecutionError unless it is accepted."""
        from heracles_ros.action import ExecutePlan

        handle = self._console.wait(self._console.plans.send_goal_async(ExecutePlan.Goal(plan=msg)), timeout_s,
                                    "the dispatcher's answer to the plan")
        if not handle.accepted:
            raise ExecutionError(f"the dispatcher rejected plan {msg.plan_id} (see its dispatch_result)")

    def ask(self, question: str, *, timeout_s: float) -> Any:
        from heracles_ros.srv import Ask

        return self._console.call(self._console.ask, Ask.Request(question=question), timeout_s)

    def command(self, instruction: str, *, timeout_s: float) -> Any:
        """Send an execute_command goal; the feedback that carries its plan, or the result if it ended first.

        ExecutionError when the goal is rejected (with the language server's reason).
        """
        from heracles_ros.action import ExecuteCommand

        console = self._console
        goal = ExecuteCommand.Goal(instruction=instruction, execute=True, command_id="demo-command")
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

    def __init__(self, session: DemoSession):
        from rclpy.action import ActionClient
        from rclpy.node import Node

        from heracles_ros.action import ExecuteCommand, ExecutePlan
        from heracles_ros.msg import CommandRejection, DispatchProgress, DispatchResult, MirrorStatus
        from heracles_ros.nodes.command_action import REJECTIONS_KEPT
        from heracles_ros.ros.qos import latched, reliable
        from heracles_ros.srv import Ask

        self.node = Node("heracles_demo_console", context=session._context, namespace=NAMESPACE,
                         use_global_arguments=False)
        events = session.events

        def forward(kind: str) -> Callable[[Any], None]:
            return lambda msg: events.put(Event(kind, msg))

        for msg_type, topic, depth in (
            (MirrorStatus, "mirror_status", 10),
            (DispatchProgress, "dispatch_progress", 100),
            (DispatchResult, "dispatch_result", 10),
        ):
            self.node.create_subscription(msg_type, topic, forward(topic), reliable(depth))
        self._rejections: queue.Queue[Any] = queue.Queue()
        self.node.create_subscription(CommandRejection, "command_rejections", self._rejections.put,
                                      latched(REJECTIONS_KEPT))
        self.plans: Any = ActionClient(self.node, ExecutePlan, "execute_plan")
        self.commands: Any = ActionClient(self.node, ExecuteCommand, "execute_command")
        self.ask: Any = self.node.create_client(Ask, "ask")

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
