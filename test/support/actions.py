"""Helpers for tests that talk to ROS 2 action servers from the test thread (nodes spun by ``spinning``)."""
from __future__ import annotations

import threading
from typing import Any

from rclpy.action import ActionClient


class FeedbackLog:
    """Keeps every feedback message of the goals it is given to (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[Any] = []

    def __call__(self, message: Any) -> None:
        with self._lock:
            self._messages.append(message.feedback)

    @property
    def messages(self) -> list[Any]:
        with self._lock:
            return list(self._messages)


def _wait(future: Any, timeout_s: float, what: str) -> Any:
    done = threading.Event()
    future.add_done_callback(lambda _: done.set())
    if not done.wait(timeout_s):
        raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")
    return future.result()


def send_goal(client: ActionClient, goal: Any, *, feedback: FeedbackLog | None = None, timeout_s: float = 10.0) -> Any:
    """Send ``goal`` and return the goal handle once the server accepted or rejected it."""
    if not client.wait_for_server(timeout_sec=timeout_s):
        raise AssertionError(f"no action server for {client._action_name} after {timeout_s:g} s")
    return _wait(client.send_goal_async(goal, feedback_callback=feedback), timeout_s, "the goal response")


def goal_result(handle: Any, timeout_s: float = 30.0) -> tuple[int, Any]:
    """(status, result) of an accepted goal, waiting up to ``timeout_s``."""
    response = _wait(handle.get_result_async(), timeout_s, "the goal's result")
    return response.status, response.result


def cancel_goal(handle: Any, timeout_s: float = 10.0) -> Any:
    """Request the goal's cancellation; the server's CancelGoal response."""
    return _wait(handle.cancel_goal_async(), timeout_s, "the cancel response")
