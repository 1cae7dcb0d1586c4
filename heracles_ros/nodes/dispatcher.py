"""The ``dispatcher`` node: runs plans on the robot, one at a time, and reports.

Interface (names relative, so a robot namespace applies):

- serves the ``execute_plan`` action (heracles_ros/action/ExecutePlan): the goal
  is a plan, the feedback every step event, the result how the dispatch ended;
  cancelling the goal stops the robot; every plan and replan is first checked
  against the database (:mod:`~heracles_ros.execution.plan_check`), a plan that
  fails the check is rejected naming the step and nothing moves;
- publishes ``dispatch_progress`` (heracles_ros/msg/DispatchProgress, in order),
  ``dispatch_result`` (heracles_ros/msg/DispatchResult, one per plan sent, the
  rejected ones included, with the reason and the driver), ``plan_markers``
  (visualization_msgs/msg/MarkerArray, see :mod:`.markers`), ``stop_state``
  (heracles_ros/msg/StopState, latched: on start and on every change) and
  ``robot_pose`` (geometry_msgs/PoseStamped, latched: the pose it starts from, at
  once, then every change);
- serves ``cancel`` (std_srvs/srv/Trigger): stops the running plan, whoever sent
  it; its result then says ``cancelled``;
- serves the latched stop: ``stop`` and ``hard_stop`` (std_srvs/srv/Trigger)
  cancel the running plan, stop the robot (``hard_stop``: the driver's gentle
  e-stop) and refuse every plan with status ``stopped`` until ``resume``
  (heracles_ros/srv/Resume, naming the operator, who is logged and published).
  These and ``cancel`` have their own callback group and the executor has
  threads to spare, so they are never queued behind a plan or a query; the
  stop reaches the driver before anything else is done, touches no database,
  and is kept on disk, so a restarted dispatcher is still stopped until someone
  resumes (:mod:`.stop_latch`).

A goal naming its sender (``client_node``) is given up once that node has been
gone from the ROS graph for ``client_lost_s``: the plan is cancelled, the robot
stops, the result says ``cancelled`` with reason ``client_lost``. One
dispatcher per robot: a second one started in the same namespace, on this
machine or another, finds the first's claim and refuses to start, or stops the
robot and exits when it finds it late (:mod:`~heracles_ros.ros.claims`).
Shutting down (:meth:`DispatcherNode.close`) cancels the plan, stops the robot
and releases the driver (the lease) within ``shutdown_timeout_s``.

Parameters: :mod:`.dispatcher_settings` (the driver's, ``sim_<setting>`` and
``spot_<setting>``, straight from the driver factory's tables). With the sim
driver and ``sim_world``, the node is also a simulated Hydra: it publishes what
the simulated robot has seen of that world as Hydra's snapshots on
``sim_dsg_topic`` (:mod:`.sim_hydra_feed`). What the
robot holds and where it starts come from its record in the database, never from
parameters (:mod:`.dispatcher_robot`). At start the record takes the robot's real
pose from its driver. The robot is claimed, powered on and stood
up when the first plan starts (``start_robot_at_launch``: when the node starts).

One plan at a time (decision): a goal that arrives while another plan runs is
rejected at once (the goal response says accepted: false; the reason, naming
the running plan, goes out on ``dispatch_result`` with status ``rejected``,
since an action's goal response carries no reason). The robot never abandons
a task because a second goal arrived (a duplicate, or a second operator);
replacing a task is explicit: cancel, then send the new plan.

Plans run on a worker thread; the action's execute callback (reentrant group,
one executor thread while a plan runs) only waits for the worker's outcome,
and every other callback only hands work over or flips a cancel token. All behaviour (steps, timeouts,
replanning, robot state in the database) is the library's
:class:`~heracles_ros.execution.plan_runner.PlanRunner`.
"""
from __future__ import annotations

import itertools
import logging
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from rclpy.action import CancelResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.clock import Clock, ClockType
from rclpy.duration import Duration
from std_srvs.srv import Trigger

from heracles_ros.action import ExecutePlan
from heracles_ros.errors import HeraclesError
from heracles_ros.execution.driver import CancelToken
from heracles_ros.execution.plan_runner import DispatchOutcome, ProgressEvent
from heracles_ros.execution.stop_record import StopRecord, default_path
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.msg import DispatchResult
from heracles_ros.nodes.dispatcher_robot import open_robot
from heracles_ros.nodes.dispatcher_settings import (
    DRIVER_PARAMETER_NAMES,
    PARAMETERS,
    DispatcherSettings,
    driver_settings,
)
from heracles_ros.nodes.robot_view import RobotView
from heracles_ros.nodes.sim_hydra_feed import SimHydraFeed
from heracles_ros.nodes.stop_latch import StopLatch
from heracles_ros.outcomes import DispatchStatus, StepState
from heracles_ros.plan_types import PlanResult
from heracles_ros.ros import interfaces
from heracles_ros.ros.client_presence import ClientPresence
from heracles_ros.ros.node_base import HeraclesNode
from heracles_ros.ros.node_settings import settings_from
from heracles_ros.ros.plan_msgs import outcome_to_msg, plan_from_msg, progress_to_msg
from heracles_ros.ros.request_fields import plan_problem, text_problem
from heracles_ros.ros.single_goal import SingleGoalServer, end_goal, wait_until_done

log = logging.getLogger(__name__)

NODE_NAME = "dispatcher"
#: Executor threads: one waits on the running plan, one may be taken by each other long callback (markers,
#: a driver's service reply, a burst of goals); the stop services always find one free.
EXECUTOR_THREADS = 8
#: Seconds a starting dispatcher listens for another one's claim on its robot (discovery is not instant).
CLAIM_WAIT_S = 3.0
#: Seconds between checks of a running goal's client (client_lost_s) and of the shutdown deadline.
GOAL_POLL_S = 0.1
#: Seconds between marker refreshes (robot pose, remaining path); well within the robot marker's lifetime.
MARKER_PERIOD_S = 0.2

#: How long the node waits for the robot's real pose at start before keeping the recorded one.
REAL_POSE_WAIT_S = 5.0
#: Seconds a shutting-down node waits for its last dispatch_result to be acknowledged.
RESULT_ACK_WAIT_S = 2.0


@dataclass
class _Job:
    plan_id: str
    plan: PlanResult
    cancel: CancelToken
    goal: ServerGoalHandle | None = None
    #: Set by the worker with the outcome when the plan has ended.
    done: threading.Event = field(default_factory=threading.Event)
    outcome: DispatchOutcome | None = None
    #: Cut short by the latched stop (its result says stopped, not cancelled).
    stopped: bool = False


class DispatcherNode(HeraclesNode):
    """Feeds received plans to the library dispatcher on a worker thread and publishes what it reports."""

    NODE_NAME = NODE_NAME
    PARAMETERS = PARAMETERS

    def setup(self, values: dict[str, Any]) -> None:
        self.settings = settings_from(DispatcherSettings, values, read_elsewhere=DRIVER_PARAMETER_NAMES)
        self.drivers = driver_settings(values)
        #: monotonic time by which closing must be done (None while running).
        self._deadline: float | None = None
        self.claim_robot(interfaces.DISPATCHER_CLAIM, CLAIM_WAIT_S)
        self.store: GraphStore = open_store(self.settings.db_uri, graph=self.settings.graph_name)
        robot = open_robot(self, self.store, self.settings, self.drivers, on_progress=self._on_progress)
        self.states, self.driver, self.dispatcher = robot.states, robot.driver, robot.runner
        self._active: _Job | None = None
        self.latch = StopLatch(
            self, self._lock, StopRecord(default_path(self.get_namespace(), self.settings.robot_symbol,
                                                      self.store.description)),
            frame=self.settings.map_frame, driver_name=self.driver.name,
            stop_robot=lambda hard: self._stop_driver(hard=hard), on_latch=self._on_latch,
        )
        self.view = RobotView(self, self.dispatcher, frame=self.settings.map_frame,
                              robot_symbol=self.settings.robot_symbol, stop_label=self.latch.label)
        self._ids = itertools.count(1)
        self._jobs: queue.Queue[_Job | None] = queue.Queue()
        self._presence = ClientPresence(self, self.settings.client_lost_s)
        #: Driver state, kept by the worker: started (claimed, powered) and whether a hard stop undid that.
        self._started = False
        self._restart = False
        self._driver_error = ""
        self._serve()
        #: The simulated Hydra's publisher (sim driver with sim_world only).
        self.hydra_feed = SimHydraFeed(self, *robot.hydra) if robot.hydra is not None else None
        self._worker = threading.Thread(target=self._work, name="dispatcher-worker", daemon=True)
        self.view.publish_pose()
        self._worker.start()
        self.latch.publish()
        self.get_logger().info(f"dispatching with the {self.driver.name} driver on {self.store.description}; "
                               f"robot {self.settings.robot_symbol!r} {robot.start.account}")
        if self.latch.state.stopped:
            self.get_logger().warning(f"{self.latch.state.reason}: plans are refused until resume")

    def _serve(self) -> None:
        """The node's topics, its action, the operator's controls and the markers' refresh."""
        self._progress_pub = interfaces.DISPATCH_PROGRESS.publisher(self)
        self._result_pub = interfaces.DISPATCH_RESULT.publisher(self)
        self._action = self.destroyed_with_node(SingleGoalServer(
            self, interfaces.EXECUTE_PLAN, judge=self._on_goal, start=self._on_accepted,
            cancel=self._on_cancel_goal, callback_group=ReentrantCallbackGroup(),
        ))  # fmt: skip
        # The operator's controls: their own group, never behind a plan, a query or the markers.
        controls = MutuallyExclusiveCallbackGroup()
        interfaces.CANCEL.serve(self, self._on_cancel, callback_group=controls)
        self.latch.serve(controls)
        # On the steady clock: a ROS clock switched to simulated time (use_sim_time) must not freeze the robot's view.
        self.create_timer(MARKER_PERIOD_S, self.view.publish, callback_group=MutuallyExclusiveCallbackGroup(),
                          clock=Clock(clock_type=ClockType.STEADY_TIME))

    # -- construction ------------------------------------------------------------
    def on_superseded(self) -> None:
        """Another dispatcher runs this robot: the running plan is cancelled and the robot stopped at once."""
        with self._lock:
            job = self._active
        if job is not None:
            job.cancel.cancel("another dispatcher runs this robot; this one is exiting")
        self._stop_driver(hard=False)

    # -- the execute_plan action -------------------------------------------------------
    def _refusal_locked(self) -> tuple[DispatchStatus, str] | None:
        """Why a new plan cannot start now (None when it can); call with the lock held."""
        if self._closed or self.superseded:
            return DispatchStatus.REJECTED, "the dispatcher is shutting down"
        latched = self.latch.state
        if latched.stopped:
            return DispatchStatus.STOPPED, (
                f"stopped: {latched.reason}; motion goals are refused until resume (heracles resume --operator NAME)"
            )
        if self._active is not None:
            return DispatchStatus.REJECTED, (
                f"busy: plan {self._active.plan_id} is running; cancel it first to replace it"
            )
        return None

    def _on_goal(self, goal: ExecutePlan.Goal) -> bool:
        """Accept (True) or reject at once; a rejection's reason goes out on dispatch_result. A plan with a field
        out of its bound (request_fields) is rejected before anything reads it."""
        problem = plan_problem(goal.plan) or text_problem(client_node=goal.client_node)
        if problem:  # under the plan's id unless that is what is wrong
            fresh = text_problem(plan_id=goal.plan.plan_id) or not goal.plan.plan_id
            self._reject(f"{self.get_name()}-{next(self._ids)}" if fresh else goal.plan.plan_id,
                         DispatchStatus.REJECTED, problem)
            return False
        plan_id = goal.plan.plan_id or f"{self.get_name()}-{next(self._ids)}"
        goal.plan.plan_id = plan_id  # the accepted goal keeps the id it was judged under
        with self._lock:
            refusal = self._refusal_locked()
        if refusal is None:
            return True
        self._reject(plan_id, *refusal)
        return False

    def _reject(self, plan_id: str, status: DispatchStatus, reason: str) -> DispatchOutcome:
        self.get_logger().warning(f"plan {plan_id} {status.value}: {reason}")
        outcome = DispatchOutcome(plan_id, status, reason, 0, 0, self.dispatcher.robot)
        self._publish_result(outcome)
        return outcome

    def _on_accepted(self, goal: ServerGoalHandle) -> Callable[[ServerGoalHandle], ExecutePlan.Result]:
        """The accepted goal's job, queued for the worker (or already ended, when judged again refused)."""
        msg = goal.request.plan
        job = _Job(msg.plan_id, plan_from_msg(msg), CancelToken(), goal=goal)
        with self._lock:
            # Two goals judged at the same moment, or a stop since this one was judged: judged again here.
            refusal = self._refusal_locked()
            if refusal is None:
                self._active = job
        if refusal is not None:
            status, reason = refusal
            job.outcome = self._reject(job.plan_id, status, reason)
            job.done.set()
        else:
            self.get_logger().info(f"plan {job.plan_id}: {len(msg.steps)} steps for {msg.goal}")
            self._jobs.put(job)
        return lambda handle: self._execute_goal(job, handle)

    def _on_cancel_goal(self, goal: ServerGoalHandle) -> CancelResponse:
        with self._lock:
            job = self._active
        if job is None or job.goal is not goal:
            return CancelResponse.REJECT  # not running (finished already)
        job.cancel.cancel("cancelled by the operator (goal cancelled)")
        return CancelResponse.ACCEPT

    def _execute_goal(self, job: _Job, goal: ServerGoalHandle) -> ExecutePlan.Result:
        """Wait (on this executor thread) for the worker to finish the goal's plan, then report it.

        Meanwhile it watches the goal's sender (``client_node``) and, once the node
        closes, the shutdown deadline, so this thread is never held past it.
        """
        client = goal.request.client_node

        def watch_client() -> bool:
            if client and not job.cancel.cancelled and self._presence.lost(client):
                self._client_lost(job, client)
            return False  # the plan's own end (its cancel included) is what this waits for

        try:
            if not wait_until_done(job.done, poll_s=GOAL_POLL_S, check=watch_client, deadline=lambda: self._deadline):
                job.outcome = job.outcome or DispatchOutcome(
                    job.plan_id, DispatchStatus.CANCELLED, "the dispatcher shut down before the plan ended",
                    0, 0, self.dispatcher.robot,
                )  # fmt: skip
        finally:
            if client:
                self._presence.forget(client)
        outcome = job.outcome
        assert outcome is not None
        end_goal(goal, cancelled=True, succeeded=outcome.success)
        return ExecutePlan.Result(result=self._result_msg(outcome))

    def _client_lost(self, job: _Job, client: str) -> None:
        reason = (f"client_lost: {client}, which sent this plan, has been gone from the ROS graph for "
                  f"{self._presence.lost_after_s:g} s")  # fmt: skip
        self.get_logger().warning(f"plan {job.plan_id} cancelled: {reason}")
        job.cancel.cancel(reason)
        self._stop_driver(hard=False)

    # -- the operator's controls (own callback group; never block on a plan or the database) ----------
    def _on_cancel(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            job = self._active
        if job is None:
            response.success = False
            response.message = "no plan is running: nothing to cancel"
            return response
        job.cancel.cancel("cancelled by the operator (cancel service)")
        response.success = True
        response.message = f"cancelling plan {job.plan_id}; its dispatch_result will say cancelled"
        return response

    def _on_latch(self, hard: bool) -> _Job | None:
        """As a stop latches (under the lock): the running plan it cuts short; a hard stop cut the robot's power."""
        if hard:
            self._restart = True  # the e-stop cut power: the next plan starts the robot again
        return self._active

    def _stop_driver(self, *, hard: bool) -> str:
        """Stop the robot now; "" or why the driver could not."""
        try:
            self.driver.stop(hard=hard)
        except Exception as exc:  # the latch holds whatever the driver says
            self.get_logger().error(f"the {self.driver.name} driver's stop failed: {exc!r}")
            return str(exc) or repr(exc)
        return ""

    def _on_progress(self, event: ProgressEvent) -> None:
        """Called on the worker thread, in order, for every step event."""
        msg = progress_to_msg(event, frame_id=self.settings.map_frame, stamp=self.get_clock().now().to_msg())
        self._progress_pub.publish(msg)
        with self._lock:
            job = self._active
        if job is not None and job.goal is not None and job.plan_id == event.plan_id:
            job.goal.publish_feedback(ExecutePlan.Feedback(progress=msg))
        if event.state is StepState.STARTED:
            self.view.show(event.plan, event.step_index)
        elif event.state is StepState.SUCCEEDED:
            self.view.show(event.plan, event.step_index + 1)

    # -- the worker --------------------------------------------------------------------
    def _work(self) -> None:
        """Start the robot, run queued plans one by one.

        Starting happens here, not in the constructor, because a real driver waits
        on service calls the executor must serve; :meth:`close` shuts it down.
        """
        self.dispatcher.adopt_real_pose(REAL_POSE_WAIT_S)
        self.view.publish_pose()
        if self.settings.start_robot_at_launch:
            self._start_driver()
        while (job := self._jobs.get()) is not None:
            with self._lock:
                restart, self._restart = self._restart, False
            # Checked before anything else: a plan that lies neither starts the robot nor is drawn.
            outcome = self._refused(job)
            if outcome is None:
                if restart or not self._started:
                    self._start_driver()
                self.view.show(job.plan, 0)
                outcome = self._run(job) if self._started else self._not_started(job)
            with self._lock:
                self._active = None
                if job.stopped and outcome.status is DispatchStatus.CANCELLED:
                    outcome = replace(outcome, status=DispatchStatus.STOPPED)
            self.view.show(None, 0)  # deletes the plan's markers before the result is out
            self._publish_result(outcome)
            job.outcome = outcome
            job.done.set()
            self.get_logger().info(
                f"plan {job.plan_id} {outcome.status.value}" + (f": {outcome.reason}" if outcome.reason else "")
            )

    def _start_driver(self) -> None:
        try:
            self.driver.start()
        except HeraclesError as exc:
            self._driver_error = str(exc)
            self.get_logger().error(f"the {self.driver.name} driver did not start: {exc}")
            self._started = False
            return
        self._driver_error = ""
        self._started = True

    def _not_started(self, job: _Job) -> DispatchOutcome:
        reason = f"the {self.driver.name} robot driver could not start: {self._driver_error}"
        return DispatchOutcome(job.plan_id, DispatchStatus.REJECTED, reason, 0, 0, self.dispatcher.robot)

    def _refused(self, job: _Job) -> DispatchOutcome | None:
        """The rejection of a plan the world contradicts (see plan_check), None when it may run."""
        try:
            problems = self.dispatcher.check(job.plan)
        except Exception as exc:  # the node must outlive a bug or a lost database; nothing moves
            problems = [f"the plan could not be checked: {exc}"]
        if not problems:
            return None
        return DispatchOutcome(job.plan_id, DispatchStatus.REJECTED, "; ".join(problems), 0, 0, self.dispatcher.robot)

    def _run(self, job: _Job) -> DispatchOutcome:
        try:
            return self.dispatcher.run(job.plan, plan_id=job.plan_id, cancel=job.cancel, checked=True)
        except Exception as exc:  # the node must outlive a bug or a lost database
            self.get_logger().error(f"plan {job.plan_id} stopped by an internal error: {exc!r}")
            return DispatchOutcome(
                job.plan_id, DispatchStatus.FAILED, f"internal error: {exc}", 0, 0, self.dispatcher.robot
            )

    def _result_msg(self, outcome: DispatchOutcome) -> DispatchResult:
        msg = outcome_to_msg(outcome, frame_id=self.settings.map_frame, stamp=self.get_clock().now().to_msg())
        msg.driver = self.driver.name
        return msg

    def _publish_result(self, outcome: DispatchOutcome) -> None:
        self._result_pub.publish(self._result_msg(outcome))

    # -- shutdown ----------------------------------------------------------------------
    def finish(self) -> None:
        """Cancel a running plan, stop the robot, release the driver (the lease), within shutdown_timeout_s.

        Runs while the executor still spins (the node's close), so a real driver can stop, sit the
        robot and return the lease; no plan is taken from the moment closing began.
        """
        with self._lock:
            job = self._active
        budget = self.shutdown_timeout_s
        self._deadline = deadline = time.monotonic() + budget
        if job is not None:
            job.cancel.cancel("the dispatcher is shutting down")
        _bounded(lambda: self._stop_driver(hard=False), deadline, "stopping the robot", self.get_logger())
        self._jobs.put(None)
        # The worker reports the cancelled plan; the driver's shutdown (the lease) keeps a share of the budget.
        self._worker.join(timeout=max(0.0, deadline - min(2.0, 0.4 * budget) - time.monotonic()))
        if self._worker.is_alive():
            self.get_logger().error("the plan did not end in time; shutting the driver down under it")
        if self._started or self._worker.is_alive():
            _bounded(self.driver.shutdown, deadline, f"shutting the {self.driver.name} driver down",
                     self.get_logger())  # fmt: skip
        # The cancelled plan's result must reach its subscribers before the process exits, which
        # can otherwise take a just-published message with it (seen once in a loaded test run).
        ack_s = max(0.0, min(RESULT_ACK_WAIT_S, deadline - time.monotonic()))
        if not self._result_pub.wait_for_all_acked(Duration(nanoseconds=int(ack_s * 1e9))):
            self.get_logger().warning(f"dispatch_result not acknowledged by every subscriber within {ack_s:.1f} s")

    def release(self) -> None:
        """The database (after the robot's last record was written)."""
        store = getattr(self, "store", None)
        if store is not None:
            deadline = getattr(self, "_deadline", None) or time.monotonic() + self.shutdown_timeout_s
            _bounded(store.close, deadline + 1.0, "closing the database", self.get_logger())

    def executor_threads(self) -> int:
        return EXECUTOR_THREADS


def _bounded(work: Callable[[], object], deadline: float, what: str, logger: Any) -> bool:
    """Run ``work`` on a helper thread until ``deadline`` (at least 0.1 s); False, logged, if it overran."""
    thread = threading.Thread(target=work, name=what, daemon=True)
    thread.start()
    thread.join(timeout=max(0.1, deadline - time.monotonic()))
    if thread.is_alive():
        logger.error(f"{what} did not finish within the shutdown budget")
        return False
    return True


main = DispatcherNode.main


if __name__ == "__main__":
    sys.exit(main())
