"""Helpers for tests that run real rclpy nodes over DDS.

Typical use::

    with ros_session(ros_domain_id):
        node = MyNode()
        probe = rclpy.create_node("probe")
        status = Collector(probe, MirrorStatus, "/dsg_mirror/mirror_status")
        with spinning(node, probe):
            wait_until(lambda: status.count > 0, 5.0, "a first status message")

``spinning`` runs a NodeExecutor (the nodes' MultiThreadedExecutor) in a background thread, so the test
thread stays free to publish, call services and wait on conditions.
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

import rclpy
from rclpy.context import Context
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from heracles_ros.ros.executor import NodeExecutor
from heracles_ros.ros.runner import BackgroundSpinner

T = TypeVar("T")


@contextlib.contextmanager
def ros_session(domain_id: int | None = None, *, context: Context | None = None) -> Iterator[Context]:
    """rclpy initialised (on ``domain_id`` if given) for the ``with`` block, shut down after it.

    Without ``context`` the default (global) context is used, so nodes need no
    ``context=`` argument.
    """
    own = context
    kwargs: dict[str, Any] = {"context": own}
    if domain_id is not None:
        kwargs["domain_id"] = domain_id
    rclpy.init(**kwargs)
    context = own if own is not None else rclpy.get_default_context()
    try:
        yield context
        leftover = live_nodes(context)
    finally:
        # context=None also retires the default context, so the next session can init a fresh one.
        with contextlib.suppress(Exception):  # already shut down, e.g. by a node under test
            rclpy.shutdown(context=own)
    # Shutting down destroyed them; a test that relies on that leaks them into its own later steps.
    assert not leftover, f"nodes the test did not destroy: {', '.join(leftover)}"


def live_nodes(context: Context) -> list[str]:
    """Names of the nodes of ``context`` not destroyed yet (rclpy's context tracks each one)."""
    tracked = getattr(context, "_Context__node_weak_ref_list", [])
    return sorted(node.get_fully_qualified_name() for ref in tracked if (node := ref()) is not None)


@contextlib.contextmanager
def spinning(*nodes: Node, num_threads: int = 4, destroy: bool = True) -> Iterator[NodeExecutor]:
    """Spin ``nodes`` in a background NodeExecutor for the ``with`` block.

    On exit the executor stops, and the nodes are destroyed unless ``destroy=False``.
    """
    context = nodes[0].context if nodes else None
    executor = NodeExecutor(num_threads=num_threads, context=context)
    for node in nodes:
        executor.add_node(node)
    spinner = BackgroundSpinner(executor, name="test-executor").start()
    for node in nodes:
        _SPINNERS[id(node)] = spinner
    try:
        yield executor
    finally:
        for node in nodes:
            _SPINNERS.pop(id(node), None)
        spinner.stop()
        if destroy:
            for node in nodes:
                with contextlib.suppress(Exception):
                    node.destroy_node()


#: The spinner of each node :func:`spinning` spins, by the node's id.
_SPINNERS: dict[int, BackgroundSpinner] = {}


def action_client(node: Node, action_type: Any, name: str, **options: Any) -> Any:
    """rclpy's ActionClient on ``node``, made between two spins when :func:`spinning` spins it (Kilted's joins
    its node before it is whole: docs/known-issues.md#rclpy-action-client-half-built)."""
    from rclpy.action import ActionClient

    spinner = _SPINNERS.get(id(node))
    with spinner.between_spins() if spinner is not None else contextlib.nullcontext():
        return ActionClient(node, action_type, name, **options)


def wait_for(condition: Callable[[], Any], timeout_s: float, *, interval_s: float = 0.02) -> bool:
    """Poll ``condition`` until it is truthy; False if ``timeout_s`` passes first."""
    deadline = time.monotonic() + timeout_s
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(interval_s)


def wait_until(condition: Callable[[], Any], timeout_s: float, what: str, *, interval_s: float = 0.02) -> None:
    """Like :func:`wait_for`, but fail the test naming ``what`` was awaited."""
    if not wait_for(condition, timeout_s, interval_s=interval_s):
        raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


def qos(depth: int = 10, *, reliable: bool = True, transient_local: bool = False) -> QoSProfile:
    """A keep-last QoS profile (Hydra's DSG topic: depth 1, reliable, volatile)."""
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST,
        depth=depth,
        reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if transient_local else DurabilityPolicy.VOLATILE,
    )


class Collector(Generic[T]):
    """Keeps every message received on one topic; waits for ones that match."""

    def __init__(self, node: Node, msg_type: type[T], topic: str, qos_profile: QoSProfile | int = 10):
        self._lock = threading.Lock()
        self._messages: list[T] = []
        self._arrived = threading.Condition(self._lock)
        self.subscription = node.create_subscription(msg_type, topic, self._on_message, qos_profile)

    def _on_message(self, msg: T) -> None:
        with self._arrived:
            self._messages.append(msg)
            self._arrived.notify_all()

    @property
    def messages(self) -> list[T]:
        with self._lock:
            return list(self._messages)

    @property
    def count(self) -> int:
        with self._lock:
            return len(self._messages)

    @property
    def latest(self) -> T | None:
        with self._lock:
            return self._messages[-1] if self._messages else None

    def wait(self, predicate: Callable[[T], Any] = lambda msg: True, timeout_s: float = 10.0, *,
             after: int = 0, what: str = "") -> T:
        """The first message at index >= ``after`` that satisfies ``predicate``; AssertionError on timeout."""
        deadline = time.monotonic() + timeout_s
        index = after
        with self._arrived:
            while True:
                while index < len(self._messages):
                    msg = self._messages[index]
                    index += 1
                    if predicate(msg):
                        return msg
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    last = self._messages[-1] if self._messages else None
                    raise AssertionError(
                        f"timed out after {timeout_s:g} s waiting for {what or 'a matching message'} "
                        f"on {self.subscription.topic_name}; last message: {last!r}"
                    )
                self._arrived.wait(remaining)


def wait_for_subscribers(publisher: Any, count: int = 1, timeout_s: float = 10.0) -> None:
    """Block until ``count`` subscriptions matched ``publisher`` (volatile topics lose earlier messages)."""
    wait_until(lambda: publisher.get_subscription_count() >= count, timeout_s,
               f"{count} subscriber(s) on {publisher.topic_name}")


def call_service(client: Any, request: Any, timeout_s: float = 10.0) -> Any:
    """Call a service from the test thread while ``spinning`` serves the client's node."""
    if not client.wait_for_service(timeout_sec=timeout_s):
        raise AssertionError(f"service {client.srv_name} not available after {timeout_s:g} s")
    future = client.call_async(request)
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout_s):
        client.remove_pending_request(future)
        raise AssertionError(f"service {client.srv_name} did not answer within {timeout_s:g} s")
    return future.result()
