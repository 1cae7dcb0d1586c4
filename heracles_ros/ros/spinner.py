"""An executor spun in a background thread (:class:`BackgroundSpinner`): a node's, a client's.

Two traps shape it. rclpy's ``Executor.shutdown()`` called from another
thread can leave the spinning thread blocked for ever in a wait set it rebuilt
without the wake-up guard; at interpreter exit that thread is torn down inside
C++ code and the process aborts ("terminate called without an active
exception"). And on Python 3.11 a ``Thread.join()`` interrupted by Ctrl-C can
leave ``is_alive()`` false for a thread that still runs. So the spinner polls a
stop flag between short ``spin_once`` calls, is stopped and joined *before* the
executor is shut down, and whoever waits for it waits on Events, never a join.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from rclpy.executors import Executor

log = logging.getLogger(__name__)

#: Of what is left to stop the executor, the share it may keep spinning for tasks close() left behind.
SETTLE_SHARE = 0.5
#: Seconds :meth:`BackgroundSpinner.between_spins` waits for the spinning thread to park.
PARK_WAIT_S = 2.0


class BackgroundSpinner:
    """Spins ``executor`` in a daemon thread until :meth:`stop`."""

    def __init__(self, executor: Executor, *, name: str = "executor", period_s: float = 0.1):
        self.executor = executor
        self.period_s = period_s
        self.finished = threading.Event()
        #: The exception that ended spinning while nobody asked it to stop (a callback's bug), else None.
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, name=name, daemon=True)
        self._holders = threading.Lock()
        self._hold = threading.Event()
        self._parked = threading.Event()

    def start(self) -> BackgroundSpinner:
        self._thread.start()
        return self

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Stop spinning, wait for the thread, then shut the executor down; safe to call twice.

        Returns True when everything ended within ``timeout_s``; a callback still
        running then is left behind (it holds a pool thread, not the caller).
        """
        deadline = time.monotonic() + timeout_s
        self._settle(time.monotonic() + timeout_s * SETTLE_SHARE)
        self._stop.set()
        if self._thread.is_alive():
            self.finished.wait(timeout_s)
        # rclpy's Executor.shutdown destroys its guard condition before the pool has run what was
        # handed to it, and a callback starting after that fails on it; let the pool drain first,
        # but only until the deadline: a callback that never returns must not hold the node.
        drained = self.finished.is_set()
        pool = getattr(self.executor, "_executor", None)
        if drained and isinstance(pool, ThreadPoolExecutor):
            pool.shutdown(wait=False)
            for worker in list(getattr(pool, "_threads", ())):
                worker.join(max(0.0, deadline - time.monotonic()))
                drained = drained and not worker.is_alive()
        if drained:
            self.executor.shutdown(timeout_sec=max(0.0, deadline - time.monotonic()))
        return drained

    def _settle(self, until: float) -> None:
        """Keep spinning, until ``until`` at most, while the executor holds tasks not yet done.

        What a node's close() ended still needs the executor once more: an aborted goal's result goes
        to a client that asked for it as a task rclpy creates when the goal's callback returns, and
        a spinner stopped before that task ran leaves the client waiting for a result that never comes.
        """
        tasks = getattr(self.executor, "_tasks", None)
        lock = getattr(self.executor, "_tasks_lock", None)
        if tasks is None or lock is None:  # not rclpy's Executor: nothing to wait for
            return
        while self._thread.is_alive() and not self.finished.is_set() and time.monotonic() < until:
            with lock:
                pending = any(not task.done() for task, *_ in tasks)
            if not pending:
                return
            time.sleep(0.01)

    @contextlib.contextmanager
    def between_spins(self) -> Iterator[None]:
        """The spinning thread parked between two spins for the block (waiting at most PARK_WAIT_S for it).

        rclpy's ``ActionClient`` registers itself with its node before it is whole (``add_waitable`` before its
        ``_lock``): an executor spinning that node meanwhile fails with AttributeError and stops serving it. A
        client made from the spinning thread itself (a callback) needs no parking.
        """
        if threading.current_thread() is self._thread or not self._thread.is_alive():
            yield
            return
        with self._holders:
            self._hold.set()
            try:
                self._parked.wait(PARK_WAIT_S)
                yield
            finally:
                self._hold.clear()

    def _spin(self) -> None:
        try:
            context = self.executor.context
            while not self._stop.is_set() and context.ok():
                if self._hold.is_set():
                    self._parked.set()
                    while self._hold.is_set() and not self._stop.is_set():
                        time.sleep(0.002)
                    self._parked.clear()
                    continue
                self.executor.spin_once(timeout_sec=self.period_s)
        except Exception as exc:
            if self._stop.is_set() or not self.executor.context.ok():  # shut down under us, e.g. end of a test
                log.debug("executor stopped: %r", exc)
            else:  # a callback raised: the node no longer serves anything
                self.error = exc
                log.error("%s stopped by an exception in a callback: %r", self._thread.name, exc, exc_info=exc)
        finally:
            self.finished.set()
