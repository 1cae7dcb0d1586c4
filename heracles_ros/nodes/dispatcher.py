"""The ``dispatcher`` node: runs plans on the robot, one at a time, and reports.

Interface (names relative, so a robot namespace applies):

- serves the ``execute_plan`` action (heracles_ros/action/ExecutePlan): the goal
  is a plan, the feedback every step event, the result how the dispatch ended;
  cancelling the goal stops the robot;
- publishes ``dispatch_progress`` (heracles_ros/msg/DispatchProgress, in order),
  ``dispatch_result`` (heracles_ros/msg/DispatchResult, one per plan sent, the
  rejected ones included, with the reason) and ``plan_markers``
  (visualization_msgs/msg/MarkerArray, see :mod:`.markers`);
- serves ``cancel`` (std_srvs/srv/Trigger): stops the running plan, whoever sent
  it; its result then says ``cancelled``.

Parameters: :data:`PARAMETERS`. The driver's settings come straight from the
driver factory's tables, as ``sim_<setting>`` and ``spot_<setting>``; what the
robot holds and where it starts come from its record in the database (or
``start_place``), never from parameters, and at start the record takes the
robot's real pose from its driver. The robot is claimed, powered on and stood
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
:class:`~heracles_ros.execution.dispatcher.Dispatcher`.
"""
from __future__ import annotations

import itertools
import logging
import queue
import sys
import threading
from dataclasses import dataclass, field, replace
from typing import Any

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.duration import Duration
from rclpy.node import Node
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

from heracles_ros.action import ExecutePlan
from heracles_ros.errors import ConfigError, ExecutionError, HeraclesError
from heracles_ros.execution.dispatcher import (
    DispatchConfig,
    Dispatcher,
    DispatchOutcome,
    DispatchStatus,
    ProgressEvent,
    Replanner,
    StepState,
)
from heracles_ros.execution.driver import CancelToken, RobotDriver
from heracles_ros.execution.driver_factory import DRIVER_KINDS, checked_settings, make_driver
from heracles_ros.execution.driver_factory import SETTINGS as DRIVER_SETTINGS
from heracles_ros.execution.robot_state import RobotState, RobotStateStore, check_symbol
from heracles_ros.graphdb import open_store
from heracles_ros.graphdb.store import GraphStore
from heracles_ros.msg import DispatchProgress, DispatchResult
from heracles_ros.nodes.markers import MarkerBook, plan_markers, robot_markers
from heracles_ros.nodes.parameters import SNAPSHOT_WAIT, declare
from heracles_ros.nodes.plan_msgs import outcome_to_msg, plan_from_msg, progress_to_msg
from heracles_ros.nodes.qos import reliable
from heracles_ros.nodes.runner import run_node
from heracles_ros.plan_types import PlanResult
from heracles_ros.settings import Setting

log = logging.getLogger(__name__)

NODE_NAME = "dispatcher"
#: Executor threads: one waits on the running plan, the rest serve cancels, markers and the driver's calls.
EXECUTOR_THREADS = 4
#: Seconds between marker refreshes (robot pose, remaining path); well within the robot marker's lifetime.
MARKER_PERIOD_S = 0.2

#: How long the node waits for the robot's real pose at start before keeping the recorded one.
REAL_POSE_WAIT_S = 5.0
#: Seconds a shutting-down node waits for its last dispatch_result to be acknowledged.
RESULT_ACK_WAIT_S = 2.0

#: Driver settings the node fills in itself (from the robot's recorded state), not parameters.
_FROM_STATE = {"start_pose", "holding"}


def _driver_parameter(kind: str, name: str) -> str:
    """ROS parameter name of one driver setting: sim_<name> / spot_<name> (spot_name stays)."""
    prefix = "sim_" if kind == "sim" else "spot_"
    return name if name.startswith(prefix) else prefix + name


#: kind -> {parameter name: driver setting name}, straight from the driver factory's tables.
DRIVER_PARAMETERS: dict[str, dict[str, str]] = {
    kind: {_driver_parameter(kind, s.name): s.name for s in table if s.name not in _FROM_STATE}
    for kind, table in DRIVER_SETTINGS.items()
}


def _driver_spec(kind: str, setting: Setting) -> Setting:
    return replace(
        setting,
        name=_driver_parameter(kind, setting.name),
        description=f"{kind}: {setting.description}",
        items=setting.item_type,
    )


PARAMETERS: tuple[Setting, ...] = (
    Setting("db_uri", "embedded", "Graph database: embedded[:DIR] | falkordb://host:port | neo4j://host:port[/db]"),
    Setting("graph_name", "heracles", "FalkorDB graph holding the mirrored scene (ignored by Neo4j)"),
    Setting("robot_symbol", "robot", "nodeSymbol of the robot's node in the database"),
    Setting("driver", "sim", "Robot driver: sim (kinematic simulator) or spot_ros2", choices=DRIVER_KINDS),
    Setting("map_frame", "map", "Frame of plan positions, progress and markers"),
    Setting("start_place", "", "Place symbol the robot starts at (recorded in the database); '' keeps the record"),
    Setting("start_robot_at_launch", False,
            "Claim, power on and stand the robot when the node starts (else when the first plan starts)"),
    Setting("step_timeout_s", 60.0, "Time limit of every step, seconds", minimum=0.1),
    Setting("timeout_per_metre_s", 2.0, "Extra time a walk gets per metre of path, seconds", minimum=0.0),
    Setting("max_replans", 2, "Replans allowed after failed steps before a plan fails", minimum=0, maximum=20),
    Setting("planner_timeout_s", 10.0, "Time limit of one replan (Fast Downward included), seconds", minimum=0.1),
    SNAPSHOT_WAIT,
    *(
        _driver_spec(kind, setting)
        for kind, table in DRIVER_SETTINGS.items()
        for setting in table
        if setting.name not in _FROM_STATE
    ),
)


@dataclass(frozen=True)
class DispatcherSettings:
    """The node's parameters, checked and grouped for the library."""

    db_uri: str
    graph_name: str
    robot_symbol: str
    driver: str
    map_frame: str
    start_place: str
    start_robot_at_launch: bool
    planner_timeout_s: float
    snapshot_wait_s: float
    dispatch: DispatchConfig
    #: Checked settings of every driver kind, by kind (robot-state settings not included).
    drivers: dict[str, dict[str, Any]]

    @classmethod
    def from_values(cls, v: dict[str, Any]) -> DispatcherSettings:
        """ConfigError naming the parameter for anything the library refuses."""
        for name in ("robot_symbol", "map_frame"):
            if not v[name].strip():
                raise ConfigError(f"parameter {name} must not be empty")
        if v["start_place"]:
            try:
                check_symbol(v["start_place"])
            except ExecutionError as exc:
                raise ConfigError(f"parameter start_place: {exc}") from exc
        return cls(
            db_uri=v["db_uri"],
            graph_name=v["graph_name"],
            robot_symbol=v["robot_symbol"],
            driver=v["driver"],
            map_frame=v["map_frame"],
            start_place=v["start_place"],
            start_robot_at_launch=v["start_robot_at_launch"],
            planner_timeout_s=v["planner_timeout_s"],
            snapshot_wait_s=v["snapshot_wait_s"],
            dispatch=DispatchConfig(
                step_timeout_s=v["step_timeout_s"],
                timeout_per_metre_s=v["timeout_per_metre_s"],
                max_replans=v["max_replans"],
            ),
            drivers=_driver_settings(v),
        )


def _driver_settings(v: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every driver kind's settings checked by the driver factory, whichever driver is chosen."""
    checked: dict[str, dict[str, Any]] = {}
    for kind, names in DRIVER_PARAMETERS.items():
        values = checked_settings(kind, {setting: v[param] for param, setting in names.items()})
        checked[kind] = {name: value for name, value in values.items() if name not in _FROM_STATE}
    return checked


def initial_state(states: RobotStateStore, start_place: str) -> RobotState:
    """Where the robot starts: at ``start_place`` if given (keeping what it holds), else as recorded."""
    recorded = states.read()
    if not start_place:
        return recorded or RobotState((0.0, 0.0, 0.0))
    try:
        position = states.place_position(start_place)
    except ExecutionError as exc:
        raise ConfigError(f"parameter start_place: {exc}") from exc
    if position is None:
        raise ConfigError(f"parameter start_place: no place {start_place!r} in the database")
    return RobotState(position, place=start_place, holding=recorded.holding if recorded else "")


@dataclass
class _Job:
    plan_id: str
    plan: PlanResult
    cancel: CancelToken
    goal: ServerGoalHandle | None = None
    #: Set by the worker with the outcome when the plan has ended.
    done: threading.Event = field(default_factory=threading.Event)
    outcome: DispatchOutcome | None = None


class DispatcherNode(Node):
    """Feeds received plans to the library dispatcher on a worker thread and publishes what it reports."""

    def __init__(self, **kwargs: Any):
        self._lock = threading.Lock()
        self._closed = True  # until _setup completes there is nothing of ours to release
        super().__init__(NODE_NAME, **kwargs)
        try:
            self._setup()
        except BaseException:
            super().destroy_node()
            raise

    def _setup(self) -> None:
        values = declare(self, PARAMETERS)
        self.settings = DispatcherSettings.from_values(values)
        self.store: GraphStore = open_store(self.settings.db_uri, graph=self.settings.graph_name)
        try:
            self.states = RobotStateStore(self.store, symbol=self.settings.robot_symbol)
            initial = initial_state(self.states, self.settings.start_place)
            self.driver = self._make_driver(initial)
            self.states.write(initial)
            replan = self._make_replanner()
        except BaseException:
            self.store.close()
            raise
        self.dispatcher = Dispatcher(
            self.driver,
            state_store=self.states,
            replan=replan,
            config=self.settings.dispatch,
            on_progress=self._on_progress,
            initial=initial,
        )
        self._active: _Job | None = None
        self._ids = itertools.count(1)
        self._book = MarkerBook()
        self._view: tuple[PlanResult | None, int] = (None, 0)
        self._jobs: queue.Queue[_Job | None] = queue.Queue()

        self._progress_pub = self.create_publisher(DispatchProgress, "dispatch_progress", reliable(100))
        self._result_pub = self.create_publisher(DispatchResult, "dispatch_result", reliable(10))
        self._markers_pub = self.create_publisher(MarkerArray, "plan_markers", reliable(10))
        commands = MutuallyExclusiveCallbackGroup()
        self._action = ActionServer(
            self, ExecutePlan, "execute_plan", self._execute_unknown,
            goal_callback=self._on_goal, handle_accepted_callback=self._on_accepted,
            cancel_callback=self._on_cancel_goal, callback_group=ReentrantCallbackGroup(),
        )
        self.create_service(Trigger, "cancel", self._on_cancel, callback_group=commands)
        self.create_timer(MARKER_PERIOD_S, self._publish_markers, callback_group=MutuallyExclusiveCallbackGroup())

        self._driver_error = ""
        self._worker = threading.Thread(target=self._work, name="dispatcher-worker", daemon=True)
        self._worker.start()
        self._closed = False
        self.get_logger().info(
            f"dispatching with the {self.driver.name} driver on {self.store.description}; "
            f"robot {self.settings.robot_symbol!r} at {initial.place or initial.position}"
            + (f" holding {initial.holding}" if initial.holding else "")
        )

    # -- construction ------------------------------------------------------------
    def _make_driver(self, initial: RobotState) -> RobotDriver:
        kind = self.settings.driver
        settings = {**self.settings.drivers[kind], "holding": initial.holding}
        if kind == "sim":
            settings["start_pose"] = list(initial.position)
        return make_driver(kind, node=self, **settings)

    def _make_replanner(self) -> Replanner:
        # Imported here: the planner pulls in Fast Downward's runner, which only this path needs.
        from heracles_ros.planning.planner import Planner

        planner = Planner(
            self.store, timeout_s=self.settings.planner_timeout_s, robot_symbol=self.settings.robot_symbol,
            snapshot_wait_s=self.settings.snapshot_wait_s,
        )
        planner.preload()  # a replan must not wait seconds for a kilometre-scale place graph
        return lambda goal, start: planner.plan(goal, from_symbol=start)

    # -- the execute_plan action -------------------------------------------------------
    def _refusal(self) -> str:
        """Why a new plan cannot start now ("" when it can)."""
        with self._lock:
            if self._closed:
                return "the dispatcher is shutting down"
            if self._active is not None:
                return f"busy: plan {self._active.plan_id} is running; cancel it first to replace it"
        return ""

    def _on_goal(self, goal: ExecutePlan.Goal) -> GoalResponse:
        """Accept or reject at once; a rejection's reason goes out on dispatch_result."""
        plan_id = goal.plan.plan_id or f"{self.get_name()}-{next(self._ids)}"
        goal.plan.plan_id = plan_id  # the accepted goal keeps the id it was judged under
        reason = self._refusal()
        if not reason:
            return GoalResponse.ACCEPT
        self._reject(plan_id, reason)
        return GoalResponse.REJECT

    def _reject(self, plan_id: str, reason: str) -> DispatchOutcome:
        self.get_logger().warning(f"plan {plan_id} rejected: {reason}")
        outcome = DispatchOutcome(plan_id, DispatchStatus.REJECTED, reason, 0, 0, self.dispatcher.robot)
        self._publish_result(outcome)
        return outcome

    def _on_accepted(self, goal: ServerGoalHandle) -> None:
        msg = goal.request.plan
        job = _Job(msg.plan_id, plan_from_msg(msg), CancelToken(), goal=goal)
        with self._lock:
            # Two goals judged at the same moment: the first to get here runs, the other ends as rejected.
            running = self._active
            if running is None and not self._closed:
                self._active = job
        if self._active is not job:
            job.outcome = self._reject(job.plan_id, self._refusal() or "busy: another plan was accepted first")
            job.done.set()
        else:
            self.get_logger().info(f"plan {job.plan_id}: {len(msg.steps)} steps for {msg.goal}")
            self._jobs.put(job)
        goal.execute(lambda handle: self._execute_goal(job, handle))

    def _execute_unknown(self, goal: ServerGoalHandle) -> ExecutePlan.Result:
        goal.abort()  # every accepted goal is executed with its own job (see _on_accepted)
        return ExecutePlan.Result()

    def _on_cancel_goal(self, goal: ServerGoalHandle) -> CancelResponse:
        with self._lock:
            job = self._active
        if job is None or job.goal is not goal:
            return CancelResponse.REJECT  # not running (finished already)
        job.cancel.cancel("cancelled by the operator (goal cancelled)")
        return CancelResponse.ACCEPT

    def _execute_goal(self, job: _Job, goal: ServerGoalHandle) -> ExecutePlan.Result:
        """Wait (on this executor thread) for the worker to finish the goal's plan, then report it."""
        job.done.wait()
        outcome = job.outcome
        assert outcome is not None
        if goal.is_cancel_requested:
            goal.canceled()
        elif outcome.success:
            goal.succeed()
        else:
            goal.abort()
        return ExecutePlan.Result(result=self._result_msg(outcome))

    # -- callbacks (never block) ------------------------------------------------------
    def _on_cancel(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        with self._lock:
            job = self._active
        if job is None:
            response.success = False
            response.message = "no plan is running"
            return response
        job.cancel.cancel("cancelled by the operator (cancel service)")
        response.success = True
        response.message = f"cancelling plan {job.plan_id}; its dispatch_result will say cancelled"
        return response

    def _on_progress(self, event: ProgressEvent) -> None:
        """Called on the worker thread, in order, for every step event."""
        msg = progress_to_msg(event, frame_id=self.settings.map_frame, stamp=self.get_clock().now().to_msg())
        self._progress_pub.publish(msg)
        with self._lock:
            job = self._active
        if job is not None and job.goal is not None and job.plan_id == event.plan_id:
            job.goal.publish_feedback(ExecutePlan.Feedback(progress=msg))
        if event.state is StepState.STARTED:
            self._set_view(event.plan, event.step_index)
        elif event.state is StepState.SUCCEEDED:
            self._set_view(event.plan, event.step_index + 1)

    # -- the worker --------------------------------------------------------------------
    def _work(self) -> None:
        """Start the robot, run queued plans one by one, shut the robot down.

        Starting and stopping happen here, not in the constructor or destroy_node,
        because a real driver waits on service calls the executor must serve.
        """
        self.dispatcher.adopt_real_pose(REAL_POSE_WAIT_S)
        started = self.settings.start_robot_at_launch and self._start_driver()
        while (job := self._jobs.get()) is not None:
            started = started or self._start_driver()
            self._set_view(job.plan, 0)
            outcome = self._run(job) if started else self._not_started(job)
            with self._lock:
                self._active = None
            self._set_view(None, 0)  # deletes the plan's markers before the result is out
            self._publish_result(outcome)
            job.outcome = outcome
            job.done.set()
            self.get_logger().info(
                f"plan {job.plan_id} {outcome.status.value}" + (f": {outcome.reason}" if outcome.reason else "")
            )
        if started:
            self.driver.shutdown()

    def _start_driver(self) -> bool:
        try:
            self.driver.start()
        except HeraclesError as exc:
            self._driver_error = str(exc)
            self.get_logger().error(f"the {self.driver.name} driver did not start: {exc}")
            return False
        self._driver_error = ""
        return True

    def _not_started(self, job: _Job) -> DispatchOutcome:
        reason = f"the {self.driver.name} robot driver could not start: {self._driver_error}"
        return DispatchOutcome(job.plan_id, DispatchStatus.REJECTED, reason, 0, 0, self.dispatcher.robot)

    def _run(self, job: _Job) -> DispatchOutcome:
        try:
            return self.dispatcher.run(job.plan, plan_id=job.plan_id, cancel=job.cancel)
        except Exception as exc:  # the node must outlive a bug or a lost database
            self.get_logger().error(f"plan {job.plan_id} stopped by an internal error: {exc!r}")
            return DispatchOutcome(
                job.plan_id, DispatchStatus.FAILED, f"internal error: {exc}", 0, 0, self.dispatcher.robot
            )

    def _result_msg(self, outcome: DispatchOutcome) -> DispatchResult:
        return outcome_to_msg(outcome, frame_id=self.settings.map_frame, stamp=self.get_clock().now().to_msg())

    def _publish_result(self, outcome: DispatchOutcome) -> None:
        self._result_pub.publish(self._result_msg(outcome))

    # -- markers ---------------------------------------------------------------------
    def _set_view(self, plan: PlanResult | None, step_index: int) -> None:
        with self._lock:
            self._view = (plan, step_index)
        self._publish_markers()

    def _publish_markers(self) -> None:
        robot, pose = self.dispatcher.robot, self.dispatcher.pose()
        label = self.settings.robot_symbol + (f" holding {robot.holding}" if robot.holding else "")
        frame, stamp = self.settings.map_frame, self.get_clock().now().to_msg()
        with self._lock:  # the book's view and the publish order must agree
            plan, step = self._view
            markers = plan_markers(plan, step, pose.position, frame_id=frame, stamp=stamp)
            markers += robot_markers(pose, label=label, frame_id=frame, stamp=stamp)
            self._markers_pub.publish(self._book.update(markers))

    # -- shutdown ----------------------------------------------------------------------
    def close(self) -> None:
        """Cancel a running plan, let the worker shut the robot down, release the database.

        Call it while the executor still spins, so a real driver can stop and
        sit the robot; :meth:`destroy_node` calls it too. Safe to call twice.
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            job = self._active
        if job is not None:
            job.cancel.cancel("the dispatcher is shutting down")
        self._jobs.put(None)
        self._worker.join(timeout=60.0)
        if self._worker.is_alive():
            self.get_logger().error("the worker did not stop within 60 s; the robot may not have been shut down")
        # The cancelled plan's result must reach its subscribers before the process exits, which
        # can otherwise take a just-published message with it (seen once in a loaded test run).
        if not self._result_pub.wait_for_all_acked(Duration(seconds=RESULT_ACK_WAIT_S)):
            self.get_logger().warning(
                f"dispatch_result not acknowledged by every subscriber within {RESULT_ACK_WAIT_S:g} s"
            )
        self.store.close()

    def destroy_node(self) -> None:
        self.close()
        self._action.destroy()
        super().destroy_node()


def main(args: list[str] | None = None) -> int:
    return run_node("dispatcher", DispatcherNode, args, threads=lambda node: EXECUTOR_THREADS)


if __name__ == "__main__":
    sys.exit(main())
