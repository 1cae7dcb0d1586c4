"""How our nodes spin: an executor in a background thread that stops without racing rclpy.

Two traps shape this module. rclpy's ``Executor.shutdown()`` called from another
thread can leave the spinning thread blocked for ever in a wait set it rebuilt
without the wake-up guard; at interpreter exit that thread is torn down inside
C++ code and the process aborts ("terminate called without an active
exception"). And on Python 3.11 a ``Thread.join()`` interrupted by Ctrl-C can
leave ``is_alive()`` false for a thread that still runs. So the spinner polls a
stop flag between short ``spin_once`` calls, is stopped and joined *before* the
executor is shut down, and Ctrl-C is awaited on an Event, never a join.
"""
from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from rclpy.executors import Executor, MultiThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from heracles_ros.errors import HeraclesError
from heracles_ros.nodes.rclpy_compat import ros_initialized

log = logging.getLogger(__name__)


class BackgroundSpinner:
    """Spins ``executor`` in a daemon thread until :meth:`stop`."""

    def __init__(self, executor: Executor, *, name: str = "executor", period_s: float = 0.1):
        self.executor = executor
        self.period_s = period_s
        self.finished = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name=name, daemon=True)

    def start(self) -> BackgroundSpinner:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop spinning, wait for the thread, then shut the executor down; safe to call twice."""
        self._stop.set()
        if self._thread.is_alive():
            self.finished.wait(timeout_s)
        # rclpy's Executor.shutdown destroys its guard condition before the pool has run what was
        # handed to it, and a callback starting after that fails on it; let the pool drain first.
        pool = getattr(self.executor, "_executor", None)
        if self.finished.is_set() and isinstance(pool, ThreadPoolExecutor):
            pool.shutdown(wait=True)
        self.executor.shutdown(timeout_sec=timeout_s)

    def _spin(self) -> None:
        try:
            context = self.executor.context
            while not self._stop.is_set() and context.ok():
                self.executor.spin_once(timeout_sec=self.period_s)
        except Exception as exc:  # the context shut down under us, e.g. at the end of a test
            log.debug("executor stopped: %r", exc)
        finally:
            self.finished.set()


def run_node(
    name: str,
    make_node: Callable[[], Any],
    args: list[str] | None = None,
    *,
    threads: Callable[[Any], int | None] = lambda node: None,
) -> int:
    """Create the node, spin it until Ctrl-C or ROS shutdown, then close it; 1 if it cannot start.

    rclpy's own signal handler is off: it would shut the context down on Ctrl-C
    before the node could stop the robot or finish a request.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    with ros_initialized(args, signal_handler_options=SignalHandlerOptions.NO):
        try:
            node = make_node()
        except HeraclesError as exc:
            log.error("%s cannot start: %s", name, exc)
            return 1
        executor = MultiThreadedExecutor(num_threads=threads(node))
        executor.add_node(node)
        spinner = BackgroundSpinner(executor, name=f"{name}-executor").start()
        try:
            while not spinner.finished.wait(0.5):
                pass
        except KeyboardInterrupt:
            log.info("%s stopping", name)
        finally:
            close = getattr(node, "close", None)
            if close is not None:
                close()  # while the executor still serves what closing needs (e.g. the robot's services)
            spinner.stop()
            with contextlib.suppress(Exception):
                node.destroy_node()
    return 0
