"""Run a plan step by step through a driver, recovering from failed steps by replanning.

This is the dispatcher's whole behaviour, free of ROS so it can be tested with
the simulator and a real database; the ``dispatcher`` node only feeds it plans
and publishes what it reports.

Order of events for one plan: ``started`` / ``succeeded`` per step; on a failed
step ``failed``, then ``replanning``, then the new plan's steps from index 0
(``replans`` in every event says which plan they belong to); ``cancelled`` when
the operator stops it. While a goto runs, ``walking`` events follow the robot
(one per ``progress_period_s``). Every event carries the walking the plan has
left and its estimated time (:mod:`~heracles_ros.execution.remaining`). After
every step the robot's pose, place and held object are written to the
database, before any replan reads them; before every step the world is read
again and the step checked against it, so a step on something gone since the
plan was checked (an object Hydra lost, a reverted addition, a place) fails
with the reason instead of reaching the robot.
"""
from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from heracles_ros import planar
from heracles_ros.errors import ConfigError, DriverError, HeraclesError
from heracles_ros.execution.driver import (
    ACTIONS,
    CancelToken,
    Pose,
    RobotDriver,
    StepOutcome,
    goto_path,
)
from heracles_ros.execution.plan_check import PlanLimits, check_plan, check_step, object_of, place_of, read_world
from heracles_ros.execution.remaining import (
    NOT_KNOWN,
    Remaining,
    SpeedMeter,
    WalkProgress,
    estimate,
    later_walks_m,
)
from heracles_ros.execution.robot_state import RobotState, RobotStateStore
from heracles_ros.outcomes import DispatchStatus, DriverOutcome, PlanStatus, StepState
from heracles_ros.plan_types import PlanAction, PlanResult, Point3
from heracles_ros.schema import Layer, is_scene_symbol

log = logging.getLogger(__name__)

#: ``replan(goal, from_symbol)``: a new plan for the same goal from where the robot is
#: (``from_symbol`` None when its place is unknown: the planner reads the database).
Replanner = Callable[[str, str | None], PlanResult]


@dataclass(frozen=True)
class ProgressEvent:
    plan_id: str
    state: StepState
    step_index: int
    step_count: int
    action: str
    target_symbol: str
    message: str
    position: Point3
    #: Replans so far; after a replan, step indices refer to the new plan.
    replans: int
    #: The plan the step belongs to (the replanned one after a replan).
    plan: PlanResult = field(repr=False, compare=False)
    #: Walking left for the whole plan from ``position``, and its estimated time.
    remaining: Remaining = NOT_KNOWN


@dataclass(frozen=True)
class DispatchOutcome:
    plan_id: str
    status: DispatchStatus
    reason: str
    steps_completed: int
    replans: int
    robot: RobotState

    @property
    def success(self) -> bool:
        return self.status is DispatchStatus.SUCCEEDED


@dataclass(frozen=True)
class DispatchConfig:
    #: Time limit of every step; a walk gets ``timeout_per_metre_s`` more per metre of path.
    step_timeout_s: float = 60.0
    timeout_per_metre_s: float = 2.0
    #: Replans allowed for one plan before giving up.
    max_replans: int = 2
    #: Seconds between ``walking`` events while the robot walks (the feedback of a long walk).
    progress_period_s: float = 0.5
    #: What every plan and replan is checked against before the robot moves.
    limits: PlanLimits = field(default_factory=PlanLimits)

    def __post_init__(self) -> None:
        if not self.step_timeout_s > 0:
            raise ConfigError(f"step_timeout_s must be > 0, got {self.step_timeout_s}")
        if not self.timeout_per_metre_s >= 0:
            raise ConfigError(f"timeout_per_metre_s must be >= 0, got {self.timeout_per_metre_s}")
        if self.max_replans < 0:
            raise ConfigError(f"max_replans must be >= 0, got {self.max_replans}")
        if not self.progress_period_s > 0:
            raise ConfigError(f"progress_period_s must be > 0, got {self.progress_period_s}")


def plan_problems(plan: PlanResult, kinds: Mapping[str, Layer] | None = None) -> list[str]:
    """Everything that stops a plan from being executed, each naming the step and field."""
    if plan.status is not PlanStatus.SOLVED:
        detail = f": {plan.reason}" if plan.reason else ""
        return [f"plan status is {plan.status.value}, not solved{detail}"]
    problems = []
    for i, action in enumerate(plan.actions):
        where = f"step {i} ({action.name} {action.target_symbol})"
        if action.name not in ACTIONS:
            problems.append(f"{where}: unknown action {action.name!r}, expected one of {', '.join(ACTIONS)}")
        if action.waypoint_symbols and len(action.waypoint_symbols) != len(action.waypoints):
            problems.append(
                f"{where}: {len(action.waypoint_symbols)} waypoint symbols for {len(action.waypoints)} waypoints"
            )
        if action.name == "goto":
            kind = (kinds or {}).get(action.target_symbol)
            if not is_scene_symbol(action.target_symbol):
                problems.append(f"{where}: goto target {action.target_symbol!r} is not a place symbol")
            elif kind is not None and kind not in (Layer.MESH_PLACE, Layer.PLACE):
                problems.append(
                    f"{where}: goto target {action.target_symbol!r} is not a place symbol "
                    f"(the database holds it as {kind.value})"
                )
        if action.name in ("pick", "place") and object_of(action) == "":
            problems.append(f"{where}: names no object symbol")
    return problems


def path_length(start: Point3, action: PlanAction) -> float:
    """Metres a goto walks from ``start`` through its waypoints (planar)."""
    return planar.path_length([start, *goto_path(action)[0]])


class PlanRunner:
    """Executes plans on one driver, keeping the robot's recorded state true."""

    def __init__(
        self,
        driver: RobotDriver,
        *,
        state_store: RobotStateStore | None = None,
        replan: Replanner | None = None,
        config: DispatchConfig | None = None,
        on_progress: Callable[[ProgressEvent], None] | None = None,
        on_pose: Callable[[Pose], None] | None = None,
        initial: RobotState | None = None,
    ):
        self.driver = driver
        self.state_store = state_store
        self.replan = replan
        self.config = config or DispatchConfig()
        self.on_progress = on_progress
        self.on_pose = on_pose
        self._robot = initial or RobotState(driver.pose().position)

    @property
    def robot(self) -> RobotState:
        """What the dispatcher knows of the robot now (pose, place, held object)."""
        return self._robot

    def pose(self) -> Pose:
        """The driver's pose, or the last recorded position when the driver cannot tell (no odometry)."""
        try:
            return self.driver.pose()
        except DriverError:
            return Pose(*self._robot.position)

    def check(self, plan: PlanResult) -> list[str]:
        """Everything that stops ``plan`` from starting where the robot is now ([] when it may run).

        Its shape (:func:`plan_problems`), then its numbers and geometry against the
        database (:func:`~heracles_ros.execution.plan_check.check_plan`); a database
        that cannot be read refuses the plan, so nothing moves on an unchecked plan.
        """
        shape = plan_problems(plan)
        if shape and plan.status is not PlanStatus.SOLVED:
            return shape
        limits = self.config.limits
        if len(plan.actions) > limits.max_steps or self.state_store is None:
            return shape + check_plan(plan, self._robot, None, limits)
        try:
            world = read_world(self.state_store.store, plan, self._robot)
        except HeraclesError as exc:
            return [f"the plan cannot be checked against the database: {exc}"]
        kinds = {symbol: located.layer for symbol, located in world.located.items()}
        return plan_problems(plan, kinds) + check_plan(plan, self._robot, world, limits)

    def recheck(self, action: PlanAction, index: int) -> list[str]:
        """What the world, read again now, says against starting step ``index`` ([] when it may start).

        The plan was checked when it arrived, but the scene moves on: an object Hydra lost, or an
        addition reverted, since then must fail its step, not "succeed" on a symbol that is gone.
        """
        if self.state_store is None:
            return []
        single = PlanResult(PlanStatus.SOLVED, "", actions=[action])
        try:
            world = read_world(self.state_store.store, single, self._robot)
        except HeraclesError as exc:
            return [f"step {index} ({action.name} {action.target_symbol}): the world cannot be read again: {exc}"]
        return check_step(action, index, self._robot, world, self.config.limits)

    def adopt_real_pose(self, timeout_s: float, place_tolerance_m: float = 1.0) -> None:
        """Record where the robot really is (its driver's pose), before anything moves.

        The recorded place is kept only if the robot stands within
        ``place_tolerance_m`` of it; otherwise it becomes unknown and the planner
        starts from the place nearest the real position.
        """
        pose = self.driver.wait_pose(timeout_s)
        if pose is None:
            log.warning("robot pose unknown at start: keeping the recorded position %s", self._robot.position)
            return
        place = self._robot.place
        try:
            if place and self.state_store is not None:
                position = self.state_store.position_of(place)
                if position is None or pose.distance_to(position) > place_tolerance_m:
                    place = ""
            self._robot = replace(self._robot, position=pose.position, place=place)
            if self.state_store is not None:
                self.state_store.write(self._robot)
        except HeraclesError as exc:
            log.warning("robot state not recorded: %s", exc)

    def timeout_for(self, action: PlanAction) -> float:
        timeout = self.config.step_timeout_s
        if action.name == "goto":
            timeout += self.config.timeout_per_metre_s * path_length(self.pose().position, action)
        return timeout

    # -- running ---------------------------------------------------------------------
    def run(
        self, plan: PlanResult, *, plan_id: str = "", cancel: CancelToken | None = None, checked: bool = False
    ) -> DispatchOutcome:
        """Execute ``plan`` to the end, a cancel, or giving up; never raises for robot failures.

        ``checked``: the caller has just had :meth:`check` pass it (before starting the robot).
        """
        cancel = cancel or CancelToken()
        problems = [] if checked else self.check(plan)
        if problems:
            return self._outcome(plan_id, DispatchStatus.REJECTED, "; ".join(problems), 0, 0)
        run = _PlanRun(self, plan_id, cancel)
        current = plan
        while True:
            failure = run.execute(current)
            if failure is None:
                return self._outcome(plan_id, DispatchStatus.SUCCEEDED, "", run.completed, run.replans)
            if failure.outcome is DriverOutcome.CANCELLED:
                return self._outcome(plan_id, DispatchStatus.CANCELLED, failure.reason, run.completed, run.replans)
            if run.driver_broken:
                return self._outcome(plan_id, DispatchStatus.FAILED, failure.reason, run.completed, run.replans)
            if self.replan is None or run.replans >= self.config.max_replans:
                tried = f"; gave up after {run.replans} replan(s)" if self.replan is not None else ""
                return self._outcome(
                    plan_id, DispatchStatus.FAILED, f"{failure.reason}{tried}", run.completed, run.replans
                )
            next_plan, reason = run.replan(self.replan, plan.goal, failure.reason)
            if next_plan is None:
                status = DispatchStatus.CANCELLED if cancel.cancelled else DispatchStatus.FAILED
                return self._outcome(plan_id, status, reason, run.completed, run.replans)
            current = next_plan

    def _outcome(
        self, plan_id: str, status: DispatchStatus, reason: str, completed: int, replans: int
    ) -> DispatchOutcome:
        return DispatchOutcome(plan_id, status, reason, completed, replans, self._robot)

    # -- robot state -------------------------------------------------------------------
    def _record(self, action: PlanAction, outcome: StepOutcome) -> str:
        """Update what the robot is known to be and do; "" or why the database missed it."""
        state = replace(self._robot, position=outcome.pose.position)
        placed: tuple[str, str] | None = None
        if action.name == "goto":
            if outcome.ok:
                state = replace(state, place=action.target_symbol)
            elif outcome.reached_symbol:
                state = replace(state, place=outcome.reached_symbol)
        elif action.name == "pick" and outcome.ok:
            state = replace(state, holding=object_of(action))
        elif action.name == "place" and outcome.ok:
            placed = (object_of(action), place_of(action) or state.place)
            state = replace(state, holding="")
        self._robot = state
        if self.state_store is None:
            return ""
        try:
            self.state_store.write(state)
            if placed is not None and placed[1]:
                self.state_store.record_placed(placed[0], placed[1], action.target)
        except HeraclesError as exc:
            log.warning("robot state not recorded: %s", exc)
            return f" (robot state not recorded: {exc})"
        return ""


class _PlanRun:
    """Counters and event emission shared by the plans of one dispatch (original + replans)."""

    def __init__(self, dispatcher: PlanRunner, plan_id: str, cancel: CancelToken):
        self.d = dispatcher
        self.plan_id = plan_id
        self.cancel = cancel
        self.completed = 0
        self.replans = 0
        self.driver_broken = False
        self._plan: PlanResult | None = None
        #: The first step of the plan not done yet, and its walk while it is a goto that has started.
        self._next = 0
        self._walk: WalkProgress | None = None
        self._speed = SpeedMeter()
        self._last_event = -math.inf

    def _distance_m(self, position: Point3) -> float:
        """Metres the plan has left to walk from ``position``."""
        assert self._plan is not None
        actions = self._plan.actions
        if self._walk is None:
            return later_walks_m(actions, self._next, position)
        return self._walk.remaining_m(position) + later_walks_m(actions, self._next + 1, self._walk.end)

    def _remaining(self, distance_m: float) -> Remaining:
        return estimate(distance_m, self._speed.speed_mps(), self.d.driver.nominal_speed_mps())

    def _on_pose(self, index: int, action: PlanAction, pose: Pose) -> None:
        """The driver's pose while a step runs: measures the speed; a ``walking`` event once a period."""
        if self.d.on_pose is not None:
            self.d.on_pose(pose)
        if self.d.on_progress is None:
            return
        now = time.monotonic()
        distance = self._distance_m(pose.position)
        self._speed.add(now, distance)
        if self._walk is not None and now - self._last_event >= self.d.config.progress_period_s:
            self.emit(StepState.WALKING, index, action, _describe(action), pose.position, self._remaining(distance))

    def emit(
        self,
        state: StepState,
        index: int,
        action: PlanAction | None,
        message: str,
        position: Point3 | None = None,
        remaining: Remaining | None = None,
    ) -> None:
        """One event; ``position`` defaults to the recorded one, ``remaining`` to the plan's from there."""
        if self.d.on_progress is None or self._plan is None:
            return
        position = self.d.robot.position if position is None else position
        if remaining is None:
            remaining = NOT_KNOWN if state is StepState.REPLANNING else self._remaining(self._distance_m(position))
        self._last_event = time.monotonic()
        event = ProgressEvent(
            plan_id=self.plan_id,
            state=state,
            step_index=index,
            step_count=len(self._plan.actions),
            action=action.name if action else "",
            target_symbol=action.target_symbol if action else "",
            message=message,
            position=position,
            replans=self.replans,
            plan=self._plan,
            remaining=remaining,
        )
        try:
            self.d.on_progress(event)
        except Exception:  # a broken listener must not stop the robot mid-plan
            log.exception("progress listener failed")

    def execute(self, plan: PlanResult) -> StepOutcome | None:
        """Run every step; None when all succeeded, else the outcome that ended the plan."""
        self._plan, self._walk = plan, None
        self._speed.clear()  # a replan's plan is walked from a new count
        for index, action in enumerate(plan.actions):
            self._next = index
            if self.cancel.cancelled:
                reason = self.cancel.reason or "cancelled"
                self.emit(StepState.CANCELLED, index, action, reason)
                return StepOutcome(DriverOutcome.CANCELLED, self.d.pose(), reason)
            changed = self.d.recheck(action, index)
            if changed:
                reason = f"{'; '.join(changed)} (the world changed since the plan was made)"
                self.emit(StepState.FAILED, index, action, reason)
                return StepOutcome(DriverOutcome.FAILED, self.d.pose(), reason)
            self._walk = WalkProgress(self.d.pose().position, action) if action.name == "goto" else None
            self.emit(StepState.STARTED, index, action, _describe(action))
            try:
                outcome = self.d.driver.execute(
                    action, cancel=self.cancel, timeout_s=self.d.timeout_for(action),
                    feedback=functools.partial(self._on_pose, index, action),
                )
            except DriverError as exc:
                self.driver_broken = True
                outcome = StepOutcome(DriverOutcome.FAILED, self.d.pose(), f"driver error: {exc}")
            note = self.d._record(action, outcome)
            if outcome.ok:
                self.completed += 1
                self._next, self._walk = index + 1, None
                self.emit(StepState.SUCCEEDED, index, action, _done(action) + note)
                continue
            if outcome.outcome is DriverOutcome.CANCELLED:
                self.emit(StepState.CANCELLED, index, action, outcome.reason + note)
                return outcome
            reason = f"step {index} ({action.name} {action.target_symbol}) {outcome.outcome.value}: {outcome.reason}"
            self.emit(StepState.FAILED, index, action, reason + note)
            return replace(outcome, reason=reason)
        return None

    def replan(self, replanner: Replanner, goal: str, failure: str) -> tuple[PlanResult | None, str]:
        """A new plan from the robot's current state, or None and why not."""
        self.replans += 1
        start = self.d.robot.place or None
        self.emit(
            StepState.REPLANNING,
            0,
            None,
            f"replanning {goal} from {start or 'the recorded robot state'} "
            f"(attempt {self.replans} of {self.d.config.max_replans})",
        )
        try:
            plan = _unless_cancelled(lambda: replanner(goal, start), self.cancel)
        except HeraclesError as exc:
            return None, f"{failure}; replanning failed: {exc}"
        if plan is None or self.cancel.cancelled:
            return None, self.cancel.reason or "cancelled"
        if not plan.ok:
            detail = f": {plan.reason}" if plan.reason else ""
            return None, f"{failure}; replan {self.replans} is {plan.status.value}{detail}"
        problems = self.d.check(plan)
        if problems:
            return None, f"{failure}; replan {self.replans} cannot be executed: {'; '.join(problems)}"
        return plan, ""


#: Seconds between looks at the cancel token while a replan runs.
_REPLAN_POLL_S = 0.05


def _unless_cancelled(work: Callable[[], PlanResult], cancel: CancelToken) -> PlanResult | None:
    """``work()``'s plan, or None as soon as ``cancel`` is requested (the planner cannot be interrupted,
    so it is left to finish on its own thread, bounded by its own time limit, and its plan is dropped)."""
    done = threading.Event()
    box: list[PlanResult | BaseException] = []

    def run() -> None:
        try:
            box.append(work())
        except BaseException as exc:  # handed to the waiting thread, which raises it
            box.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name="replan", daemon=True).start()
    while not done.wait(_REPLAN_POLL_S):
        if cancel.cancelled:
            return None
    result = box[0]
    if isinstance(result, BaseException):
        raise result
    return result


def _describe(action: PlanAction) -> str:
    if action.name == "goto":
        via = f" via {len(action.waypoints)} places" if len(action.waypoints) > 1 else ""
        return f"walking to {action.target_symbol}{via}"
    verbs = {"inspect": "inspecting", "pick": "picking up", "place": "placing"}
    where = place_of(action)
    at = f" at {where}" if where and action.name == "place" else ""
    return f"{verbs.get(action.name, action.name)} {action.target_symbol}{at}"


def _done(action: PlanAction) -> str:
    verbs = {"goto": "reached", "inspect": "inspected", "pick": "holding", "place": "placed"}
    return f"{verbs.get(action.name, action.name)} {action.target_symbol}"
