"""The dispatcher's latched stop: ``stop`` and ``hard_stop`` cancel the running plan and stop the robot, then
every plan is refused with status ``stopped`` until ``resume`` names an operator.

The stop reaches the driver before anything else is done and touches no database. It is served on ROS in the
operator's own callback group (never queued behind a plan or a query) and, for ``heracles stop`` on this
machine, on a local socket without rclpy (:mod:`~heracles_ros.ros.stop_socket`). It is kept on disk
(:mod:`~heracles_ros.execution.stop_record`), so a restarted dispatcher is still stopped until someone resumes:
beside the driver's stop, never before it, so that a slow disk cannot delay the robot, nor a driver slow to
answer its stop leave the latch unkept meanwhile.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from std_msgs.msg import Header

from heracles_ros.execution.driver import CancelToken
from heracles_ros.execution.stop_record import LatchedStop, StopRecord
from heracles_ros.msg import StopState
from heracles_ros.ros import interfaces
from heracles_ros.ros.node_base import HeraclesNode
from heracles_ros.ros.request_fields import resume_problem
from heracles_ros.ros.stop_socket import StopSocket
from heracles_ros.srv import Resume

#: Seconds the stop waits, after the driver's stop, for the latched stop to be kept on disk.
KEEP_STOP_WAIT_S = 2.0


class RunningPlan(Protocol):
    """The plan a stop cuts short: cancelled, and marked so that its result says stopped, not cancelled."""

    plan_id: str
    cancel: CancelToken
    stopped: bool


class StopLatch:
    """One robot's latched stop, served on ``node``; :attr:`state` is read and changed under the node's ``lock``.

    ``stop_robot(hard)`` stops the robot now ("" or why the driver could not); ``on_latch(hard)``, called under
    the lock as a stop latches, hands over the running plan (None when none runs).
    """

    def __init__(self, node: HeraclesNode, lock: threading.Lock, record: StopRecord, *, frame: str,
                 driver_name: str, stop_robot: Callable[[bool], str],
                 on_latch: Callable[[bool], RunningPlan | None]):
        self.node = node
        self._lock = lock
        self._record = record
        self._frame = frame
        self._driver_name = driver_name
        self._stop_robot = stop_robot
        self._on_latch = on_latch
        #: The stop as it stands; at start, the one kept from before this dispatcher started (or not stopped).
        self.state = self._kept()
        self._publisher = interfaces.STOP_STATE.publisher(node)

    def label(self) -> str:
        """How the robot's marker shows the stop ('' when none is on)."""
        state = self.state
        return ("HARD STOP" if state.hard else "STOPPED") if state.stopped else ""

    def serve(self, callback_group: Any) -> None:
        """``stop``, ``hard_stop`` and ``resume`` in ``callback_group``, and the stop's local socket."""
        interfaces.STOP.serve(self.node, lambda request, response: self._answer(response, hard=False),
                              callback_group=callback_group)
        interfaces.HARD_STOP.serve(self.node, lambda request, response: self._answer(response, hard=True),
                                   callback_group=callback_group)
        interfaces.RESUME.serve(self.node, self._on_resume, callback_group=callback_group)
        try:  # the same stop without ROS, for heracles stop on this machine (no rclpy start-up, no discovery)
            self.node.destroyed_with_node(StopSocket(
                self.node.get_namespace(), self.node.context.get_domain_id(),
                lambda hard: self.stop(hard=hard, via="on the local socket")))
        except OSError as exc:
            self.node.get_logger().warning(f"no local fast path for the stop ({exc}): heracles stop goes through ROS")

    def _answer(self, response: Any, *, hard: bool) -> Any:
        response.success, response.message = self.stop(hard=hard)
        return response

    def stop(self, *, hard: bool, via: str = "service") -> tuple[bool, str]:
        """Latch the stop, cancel the plan, stop the robot; stopping twice is fine (and may harden it). Whether
        the driver stopped, and what the stop service answers."""
        service = "hard_stop" if hard else "stop"
        reason = f"stopped by the operator ({service} {via})"
        with self._lock:
            before = self.state
            changed = not before.stopped or (hard and not before.hard)
            if changed:
                self.state = LatchedStop(stopped=True, hard=hard or before.hard, reason=reason)
            stop = self.state
            job = self._on_latch(hard)
            if job is not None:
                job.stopped = True
        if job is not None:
            job.cancel.cancel(reason)  # first, so the plan's result carries this reason
        keeping: list[str] = []
        keeper = threading.Thread(target=lambda: keeping.append(self._keep(stop)), name="keep-stop",
                                  daemon=True) if changed else None  # fmt: skip
        if keeper is not None:
            keeper.start()
        error = self._stop_robot(hard)
        unkept = ""
        if keeper is not None:
            keeper.join(KEEP_STOP_WAIT_S)
            unkept = keeping[0] if keeping else f"the disk did not take it within {KEEP_STOP_WAIT_S:g} s"
        if not changed:
            text = "already stopped" + (" (hard)" if before.hard else "")
        else:
            self.node.get_logger().warning(reason + (f"; plan {job.plan_id} cancelled" if job is not None else ""))
            self.publish()
            text = ("hard-stopped" if hard else "stopped") + (f"; plan {job.plan_id} cancelled" if job else "")
        return not error, f"{text}; plans are refused until resume" + (
            f"; but the {self._driver_name} driver's stop failed: {error}" if error else ""
        ) + (f"; a restarted dispatcher would not know of this stop: {unkept}" if unkept else "")

    def _on_resume(self, request: Resume.Request, response: Resume.Response) -> Resume.Response:
        problem = resume_problem(request.operator_name, request.reason)
        if problem:
            response.success, response.message = False, problem
            return response
        operator, why = request.operator_name.strip(), request.reason.strip()
        said = f"resumed by {operator}" + (f": {why}" if why else "")
        with self._lock:
            before = self.state
            if before.stopped:
                self.state = LatchedStop(stopped=False, hard=False, reason=said, operator=operator)
        if not before.stopped:
            response.success, response.message = False, "not stopped: nothing to resume"
            return response
        self.node.get_logger().warning(f"{said} (was {before.reason})")
        self.publish()
        kept = ""
        try:
            self._record.clear()
        except OSError as exc:
            self.node.get_logger().error(f"the kept stop {self._record.path} could not be removed: {exc}")
            kept = f"; but a restarted dispatcher would still be stopped ({exc})"
        response.success, response.message = True, f"{said}; plans are accepted again{kept}"
        return response

    def _kept(self) -> LatchedStop:
        """The stop kept from before this dispatcher started (or not stopped)."""
        kept = self._record.read()
        if not kept.stopped:
            return kept
        return replace(kept, reason=f"{kept.reason}; kept from before this dispatcher started")

    def _keep(self, stop: LatchedStop) -> str:
        """Keep the latched stop on disk for a restarted dispatcher (after the robot was stopped); "" or why not."""
        try:
            self._record.keep(stop)
        except OSError as exc:
            self.node.get_logger().error(f"the stop could not be kept in {self._record.path}: {exc}")
            return str(exc)
        return ""

    def publish(self) -> None:
        """The stop as it stands on the latched ``stop_state`` (at start and on every change)."""
        with self._lock:
            stop = self.state
        self._publisher.publish(StopState(
            header=Header(frame_id=self._frame, stamp=self.node.get_clock().now().to_msg()),
            stopped=stop.stopped, hard=stop.hard, reason=stop.reason, operator_name=stop.operator,
            driver=self._driver_name,
        ))  # fmt: skip
