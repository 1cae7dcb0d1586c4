"""The multi-threaded executor our nodes spin on: rclpy's, less a loop that can stall a whole process.

rclpy's ``MultiThreadedExecutor`` (Jazzy's and Kilted's) hands a ready task to
its thread pool, and on the next turn finds the same task ready again while it
still waits in the pool's queue: it hands it over again and again, each time
lengthening the list it scans after every turn. That loop holds the GIL, so
the pool's threads hardly start the task that would end it: a test's client
took 1 to 3 s to read a goal result the dispatcher had sent at once, and a
stop service behind that loop would answer as late
(docs/known-issues.md#rclpy-executor-requeue). This executor hands each task
over once per run and, while it waits for a thread, lets go of the GIL.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from rclpy.executors import (
    ConditionReachedException,
    ExternalShutdownException,
    MultiThreadedExecutor,
    ShutdownException,
    TimeoutException,
)


class NodeExecutor(MultiThreadedExecutor):
    """A ``MultiThreadedExecutor`` that never queues a task twice (see the module's docstring)."""

    def __init__(self, num_threads: int | None = None, *, context: Any = None):
        super().__init__(num_threads=num_threads, context=context)
        self._queued: set[Any] = set()  # tasks handed to the pool that no thread has started yet
        self._queued_lock = threading.Lock()

    def _spin_once_impl(self, timeout_sec: Any = None, wait_condition: Callable[[], bool] = lambda: False) -> None:
        try:
            task, _, _ = self.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
        except (ExternalShutdownException, ShutdownException, TimeoutException, ConditionReachedException):
            return
        with self._queued_lock:
            waiting = task in self._queued
            self._queued.add(task)
        if waiting:
            time.sleep(0)  # lets go of the GIL for the pool thread about to start it (a pause would cost
            # every callback that pause: the same task comes back on the very next turn)
        else:
            self._futures.append(task)
            self._executor.submit(self._start, task)
        for future in self._futures[:]:  # as rclpy does: a finished callback's exception is raised here
            if future.done():
                self._futures.remove(future)
                future.result()

    def _start(self, task: Any) -> None:
        with self._queued_lock:
            self._queued.discard(task)
        task()
