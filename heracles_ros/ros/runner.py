"""How our nodes spin and stop: an executor in a background thread (:mod:`.spinner`), signals that only ask
to stop; the main thread waits on Events, never a join.

Stopping is bounded (``shutdown_timeout_s``, a parameter of every node run
here): SIGINT and SIGTERM only set an Event, so a second one (``ros2 launch``
and a process-group Ctrl-C send several) cannot raise inside the node's
clean-up; the node's ``close()`` gets most of the budget while the executor
still serves what closing needs (cancelling a plan, the robot's services),
then the executor stops. A thread still busy at the deadline (a model call, a
stuck driver) does not keep the process: it exits without it. A node ended by
an exception logs it at ERROR and the process exits 1, so a supervisor
restarts it.
"""
from __future__ import annotations

import faulthandler
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from rclpy.signals import SignalHandlerOptions

from heracles_ros.errors import HeraclesError
from heracles_ros.ros.executor import NodeExecutor
from heracles_ros.ros.fastdds_profile import use_fastdds_profile
from heracles_ros.ros.params_files import read_params_files
from heracles_ros.ros.rclpy_compat import ros_initialized
from heracles_ros.ros.spinner import BackgroundSpinner
from heracles_ros.settings import Setting

log = logging.getLogger(__name__)

#: Every node run by :func:`run_node` declares this parameter (include it in the node's PARAMETERS).
SHUTDOWN_TIMEOUT = Setting(
    "shutdown_timeout_s", 5.0,
    "On SIGINT or SIGTERM the node ends within this many seconds, whatever it is doing (work in flight is "
    "cancelled first)", minimum=0.5, maximum=600.0,
)
#: Of the shutdown budget, this share goes to the node's close(); the rest stops the executor.
CLOSE_SHARE = 0.7
#: The signals that stop a node.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: After ``shutdown_timeout_s``, what destroying the node, shutting rclpy down and the interpreter's exit may still
#: take before the process is ended outright (nothing bounds those; a dispatcher was once seen stuck after its
#: stop for good, under heracles up).
EXIT_GRACE_S = 0.5


class StopRequests:
    """SIGINT / SIGTERM set :attr:`requested`; a repeated one is only logged (the stop under way goes on)."""

    def __init__(self, signals: tuple[signal.Signals, ...] = STOP_SIGNALS):
        self.requested = threading.Event()
        self.signal_name = ""
        self._signals = signals
        self._previous: dict[signal.Signals, Any] = {}

    def __enter__(self) -> StopRequests:
        if threading.current_thread() is threading.main_thread():  # Python installs handlers only there
            for number in self._signals:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for number, handler in self._previous.items():
            # Stopping: the process is about to end, and Python's finalization would put back the
            # default action, under which one more Ctrl-C kills it mid-exit.
            signal.signal(number, signal.SIG_IGN if self.requested.is_set() else handler)

    def _handle(self, number: int, frame: FrameType | None) -> None:
        name = signal.Signals(number).name
        if self.requested.is_set():
            log.warning("%s again: already stopping (%s), the stop goes on", name, self.signal_name)
            return
        self.signal_name = name
        self.requested.set()


def shutdown_timeout_of(node: Any) -> float:
    """The node's ``shutdown_timeout_s`` parameter, or the default where the node declares none."""
    try:
        if node.has_parameter(SHUTDOWN_TIMEOUT.name):
            return float(node.get_parameter(SHUTDOWN_TIMEOUT.name).value)
    except Exception:  # not an rclpy node (or destroyed): the default bound still holds
        pass
    return float(SHUTDOWN_TIMEOUT.default)


def run_node(
    name: str,
    make_node: Callable[[], Any],
    args: list[str] | None = None,
    *,
    threads: Callable[[Any], int | None] = lambda node: None,
) -> int:
    """Create the node, spin it until SIGINT/SIGTERM or ROS shutdown, then close it within its
    ``shutdown_timeout_s``; 1 if it cannot start or an exception ended it, else the node's ``exit_code``
    attribute (a node that stops itself for a reason, e.g. a second dispatcher, sets it), or 0. A node's
    ``stop_requested`` Event, once set, stops it as SIGINT does.

    rclpy's own signal handler is off: it would shut the context down on Ctrl-C
    before the node could stop the robot or finish a request. Once a stop is
    requested the process ends within ``shutdown_timeout_s`` + :data:`EXIT_GRACE_S`
    whatever hangs (exit 1, the threads' stacks logged), so this is for a
    process's main only.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    use_fastdds_profile()  # before rclpy.init: a killed node leaves the graph in seconds, not 20 s
    try:
        read_params_files(sys.argv if args is None else args)  # a YAML error named by file and line, not rcl's
    except HeraclesError as exc:
        log.error("%s cannot start: %s", name, exc)
        return 1
    code = 0
    with StopRequests() as stop, ros_initialized(args, signal_handler_options=SignalHandlerOptions.NO):
        try:
            node = make_node()
        except HeraclesError as exc:
            log.error("%s cannot start: %s", name, exc)
            return 1
        except Exception as exc:
            log.error("%s failed to start: %r", name, exc, exc_info=exc)
            return 1
        timeout_s = shutdown_timeout_of(node)
        executor = NodeExecutor(num_threads=threads(node))
        executor.add_node(node)
        spinner = BackgroundSpinner(executor, name=f"{name}-executor").start()
        # A node that steps down (another of its kind holds the robot) asks to be closed like this.
        stepped_down: threading.Event = getattr(node, "stop_requested", None) or threading.Event()
        while not stop.requested.wait(0.2) and not spinner.finished.is_set() and not stepped_down.is_set():
            pass
        if spinner.error is not None:
            code = 1
            log.error("%s ended by an exception (%r); stopping", name, spinner.error)
        else:
            why = stop.signal_name or ("it stepped down" if stepped_down.is_set() else "ROS shutdown")
            log.info("%s stopping (%s), within %g s", name, why, timeout_s)
        watchdog = threading.Timer(timeout_s + EXIT_GRACE_S, _exit_now, args=(name, timeout_s + EXIT_GRACE_S))
        watchdog.daemon = True
        watchdog.start()
        code = max(code, _stop_node(name, node, spinner, timeout_s), int(getattr(node, "exit_code", 0)))
    # The watchdog stays armed through the interpreter's own exit (it joins threads): run_node is a process's
    # main, and the process is over once it returns.
    return code


def _exit_now(name: str, after_s: float) -> None:
    """The process is still here past its shutdown bound: say where each thread is, then end it (exit 1)."""
    log.error("%s did not exit within %.1f s of the stop; ending the process. Its threads:", name, after_s)
    for handler in logging.getLogger().handlers:
        handler.flush()
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    sys.stderr.flush()
    os._exit(1)


def _stop_node(name: str, node: Any, spinner: BackgroundSpinner, timeout_s: float) -> int:
    """Close the node while the executor still serves, stop the executor, destroy the node: all within
    ``timeout_s``; 0, or 1 when something was left running at the deadline."""
    deadline = time.monotonic() + timeout_s
    code = 0
    close = getattr(node, "close", None)
    if close is not None:
        closed = threading.Event()

        def run_close() -> None:
            try:
                close()
            except Exception as exc:
                log.error("%s failed to close: %r", name, exc, exc_info=exc)
            finally:
                closed.set()

        # A daemon thread: a close() stuck on a dead peer must not keep the process past its bound.
        threading.Thread(target=run_close, name=f"{name}-close", daemon=True).start()
        if not closed.wait(timeout_s * CLOSE_SHARE):
            log.error("%s did not finish closing within %.1f s; stopping without it", name, timeout_s * CLOSE_SHARE)
            code = 1
    if not spinner.stop(max(0.1, deadline - time.monotonic())):
        log.warning("%s: callbacks still running at the shutdown deadline are abandoned", name)
    try:
        node.destroy_node()
    except Exception as exc:
        log.debug("%s: destroy_node: %r", name, exc)
    busy = [t.name for t in threading.enumerate() if t.is_alive() and not t.daemon and t is not threading.main_thread()]
    if busy:
        # Python would wait for these at exit (thread-pool workers are not daemons): leave now.
        log.warning("%s exits with threads still busy after %g s: %s", name, timeout_s, ", ".join(busy))
        for handler in logging.getLogger().handlers:
            handler.flush()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
