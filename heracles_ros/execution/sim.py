"""A kinematic Spot simulator behind the driver interface, for tests and the demo.

It walks the plan's waypoints at a set speed, takes a set time for pick, place
and inspect, keeps track of what it holds, and reports its pose the way the
real driver does. Everything is in *simulated* seconds: ``time_scale`` says how
many simulated seconds pass per wall-clock second, so tests run a 60 m walk in
a fraction of a second while durations and timeouts keep their meaning.

Like the Spot behind spot_ros2, the simulated robot walks only as far as its
controller's last command reaches: each tick of the walk loop renews it for
:data:`~.driver.COMMAND_HORIZON_S` of wall-clock time, so a loop held up (a
frozen process, a callback that hangs) finds the robot at most that much
further on, never where the clock alone would have put it.

Failures can be injected to exercise recovery: by step count (the n-th call of
:meth:`SimSpotDriver.execute` since :meth:`~SimSpotDriver.start`, so a retried
step after a replan is a new count and fails only if asked to) or by a seeded
probability. A failing walk stops part-way along its path ("blocked"); a
failing manipulation gives up part-way through its duration.
"""
from __future__ import annotations

import bisect
import itertools
import math
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from heracles_ros.errors import ConfigError, DriverError
from heracles_ros.execution.driver import (
    COMMAND_HORIZON_S,
    CancelToken,
    FeedbackCallback,
    Pose,
    RobotDriver,
    StepOutcome,
    goto_path,
)
from heracles_ros.outcomes import DriverOutcome
from heracles_ros.plan_types import PlanAction, Point3


@dataclass(frozen=True)
class SimConfig:
    """Simulator behaviour; durations in simulated seconds."""

    speed_mps: float = 1.0
    pick_s: float = 4.0
    place_s: float = 4.0
    inspect_s: float = 3.0
    #: Simulated seconds per wall-clock second (10 = ten times faster than real time).
    time_scale: float = 1.0
    #: Wall-clock seconds between pose updates; also how fast a cancel is noticed.
    tick_s: float = 0.02
    #: Execute-call counts (0-based, since start()) that fail.
    fail_steps: frozenset[int] = field(default_factory=frozenset)
    #: Chance that any step fails, drawn from a generator seeded with ``seed``.
    fail_probability: float = 0.0
    #: How far through a failing step (path length or duration) it gives up.
    fail_fraction: float = 0.5
    seed: int = 0

    def __post_init__(self) -> None:
        positive = {
            "speed_mps": self.speed_mps,
            "time_scale": self.time_scale,
            "tick_s": self.tick_s,
        }
        for name, value in positive.items():
            if not value > 0:
                raise ConfigError(f"sim_{name} must be > 0, got {value}")
        for name, value in {"pick_s": self.pick_s, "place_s": self.place_s, "inspect_s": self.inspect_s}.items():
            if not value >= 0:
                raise ConfigError(f"sim_{name} must be >= 0, got {value}")
        if not 0.0 <= self.fail_probability <= 1.0:
            raise ConfigError(f"sim_fail_probability must be within [0, 1], got {self.fail_probability}")
        if not 0.0 <= self.fail_fraction <= 1.0:
            raise ConfigError(f"sim_fail_fraction must be within [0, 1], got {self.fail_fraction}")
        if any(step < 0 for step in self.fail_steps):
            raise ConfigError(f"sim_fail_steps must be >= 0, got {sorted(self.fail_steps)}")


class _SimClock:
    """Simulated seconds since construction."""

    def __init__(self, time_scale: float):
        self._start = time.monotonic()
        self._scale = time_scale

    def now(self) -> float:
        return (time.monotonic() - self._start) * self._scale


@dataclass(frozen=True)
class _Path:
    """A polyline with cumulative lengths, to place the robot at any distance along it."""

    points: tuple[Point3, ...]
    symbols: tuple[str, ...]  # "" where unknown; index i names points[i]
    cumulative: tuple[float, ...]  # cumulative[i] = length from points[0] to points[i]

    @classmethod
    def build(cls, points: list[Point3], symbols: list[str]) -> _Path:
        cumulative = [0.0]
        for a, b in itertools.pairwise(points):
            cumulative.append(cumulative[-1] + math.dist(a, b))
        return cls(tuple(points), tuple(symbols), tuple(cumulative))

    @property
    def length(self) -> float:
        return self.cumulative[-1]

    def at(self, s: float) -> tuple[Point3, float, int]:
        """Point at arc length ``s``, heading of the segment there, index of the last point passed."""
        s = min(max(s, 0.0), self.length)
        i = max(0, bisect.bisect_right(self.cumulative, s) - 1)
        if i >= len(self.points) - 1:
            return self.points[-1], self._heading(len(self.points) - 2), len(self.points) - 1
        a, b = self.points[i], self.points[i + 1]
        seg = self.cumulative[i + 1] - self.cumulative[i]
        t = (s - self.cumulative[i]) / seg if seg > 0 else 1.0
        point = (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]), a[2] + t * (b[2] - a[2]))
        return point, self._heading(i), i

    def _heading(self, i: int) -> float:
        # Heading of the nearest segment at or before i that has planar length.
        for j in range(min(i, len(self.points) - 2), -1, -1):
            a, b = self.points[j], self.points[j + 1]
            if math.hypot(b[0] - a[0], b[1] - a[1]) > 1e-9:
                return math.atan2(b[1] - a[1], b[0] - a[0])
        return math.nan


class SimSpotDriver(RobotDriver):
    """Kinematic stand-in for Spot: exact, deterministic, cancellable."""

    name = "sim"

    def __init__(self, config: SimConfig | None = None, *, start: Pose | None = None, holding: str = "",
                 observer: Callable[[Pose, Pose], None] | None = None):
        self.config = config or SimConfig()
        self._pose = start or Pose(0.0, 0.0, 0.0)
        #: Told every move (from, to) on the walking thread: the simulated Hydra looks along it.
        self.observer = observer
        self._holding = holding
        self._lock = threading.Lock()
        self._steps = 0
        self._rng = random.Random(self.config.seed)
        self._started = False
        #: The step running now, so that stop() can end it from any thread.
        self._running: CancelToken | None = None

    # -- RobotDriver -------------------------------------------------------------
    def start(self) -> None:
        self._steps = 0
        self._rng = random.Random(self.config.seed)
        self._started = True

    def shutdown(self) -> None:
        self.stop()
        self._started = False

    def stop(self, *, hard: bool = False) -> None:
        running = self._running
        if running is not None:
            running.cancel("stopped" + (" (hard)" if hard else ""))

    def pose(self) -> Pose:
        with self._lock:
            return self._pose

    def nominal_speed_mps(self) -> float:
        """The walking speed in wall-clock time: ``speed_mps`` simulated metres per second, ``time_scale`` times."""
        return self.config.speed_mps * self.config.time_scale

    @property
    def holding(self) -> str:
        """Symbol of the object in the gripper, "" when empty."""
        return self._holding

    @property
    def steps_executed(self) -> int:
        return self._steps

    def execute(
        self,
        action: PlanAction,
        *,
        cancel: CancelToken,
        timeout_s: float,
        feedback: FeedbackCallback | None = None,
    ) -> StepOutcome:
        if not self._started:
            raise DriverError("sim driver used before start()")
        step = self._steps
        self._steps += 1
        inject = step in self.config.fail_steps
        if self.config.fail_probability > 0 and self._rng.random() < self.config.fail_probability:
            inject = True
        self._running = cancel
        try:
            return self._execute(_Run(self, cancel, timeout_s, feedback, inject), action)
        finally:
            self._running = None

    def _execute(self, run: _Run, action: PlanAction) -> StepOutcome:
        if action.name == "goto":
            return run.walk(action)
        if action.name == "inspect":
            return run.manipulate(action, self.config.inspect_s, on_success=None)
        if action.name == "pick":
            if self._holding:
                return run.end(
                    DriverOutcome.FAILED, f"cannot pick {action.target_symbol}: already holding {self._holding}"
                )
            return run.manipulate(action, self.config.pick_s, on_success=self._grasp)
        if action.name == "place":
            if not self._holding:
                return run.end(DriverOutcome.FAILED, f"cannot place {action.target_symbol}: the gripper is empty")
            if action.target_symbol and action.target_symbol != self._holding:
                return run.end(
                    DriverOutcome.FAILED, f"cannot place {action.target_symbol}: the gripper holds {self._holding}"
                )
            return run.manipulate(action, self.config.place_s, on_success=self._release)
        return run.end(DriverOutcome.FAILED, f"sim driver cannot execute unknown action {action.name!r}")

    # -- state changes (called from _Run) ------------------------------------------
    def _set_pose(self, pose: Pose) -> None:
        with self._lock:
            before, self._pose = self._pose, pose
        if self.observer is not None:
            self.observer(before, pose)

    def _grasp(self, action: PlanAction) -> None:
        self._holding = action.target_symbol

    def _release(self, action: PlanAction) -> None:
        self._holding = ""


class _Run:
    """One execute() call: clock, deadline, cancel and feedback in one place."""

    def __init__(
        self,
        sim: SimSpotDriver,
        cancel: CancelToken,
        timeout_s: float,
        feedback: FeedbackCallback | None,
        inject: bool,
    ):
        self.sim = sim
        self.cancel = cancel
        self.timeout_s = timeout_s
        self.feedback = feedback
        self.inject = inject
        self.clock = _SimClock(sim.config.time_scale)
        self.reached = ""

    def end(self, outcome: DriverOutcome, reason: str = "") -> StepOutcome:
        return StepOutcome(outcome, self.sim.pose(), reason, self.reached)

    def _tick(self) -> StepOutcome | None:
        """Sleep one tick; the outcome if the step was cancelled meanwhile."""
        if self.cancel.wait(self.sim.config.tick_s):
            return self.end(DriverOutcome.CANCELLED, self.cancel.reason or "cancelled")
        return None

    def _now(self) -> float:
        """Simulated seconds into the step, never past its limit: a late tick (a loaded machine) sees
        what had happened by the deadline, so a step that ended in time is not turned into a timeout."""
        return min(self.clock.now(), self.timeout_s)

    def _timed_out(self) -> StepOutcome | None:
        if self.clock.now() > self.timeout_s:
            return self.end(DriverOutcome.TIMEOUT, f"step exceeded its {self.timeout_s:.1f} s limit")
        return None

    def _report(self, pose: Pose) -> None:
        self.sim._set_pose(pose)
        if self.feedback is not None:
            self.feedback(pose)

    def walk(self, action: PlanAction) -> StepOutcome:
        here = self.sim.pose()
        targets, symbols = goto_path(action)
        path = _Path.build([here.position, *targets], ["", *symbols])
        stop_at = path.length * self.sim.config.fail_fraction if self.inject else math.inf
        yaw = here.yaw
        horizon_s = COMMAND_HORIZON_S * self.sim.config.time_scale  # in simulated seconds
        s, commanded = 0.0, 0.0
        while True:
            if (ended := self._tick()) is not None:
                return ended
            now = self._now()
            # The robot walked on only within the horizon of the last tick's command.
            walked = min(now - commanded, horizon_s)
            commanded = now
            s = min(s + walked * self.sim.config.speed_mps, path.length, stop_at)
            point, heading, passed = path.at(s)
            yaw = yaw if math.isnan(heading) else heading
            for i in range(1, passed + 1):
                if path.symbols[i]:
                    self.reached = path.symbols[i]
            self._report(Pose(point[0], point[1], point[2], yaw))
            if s >= stop_at:
                where = f" after reaching {self.reached}" if self.reached else ""
                return self.end(
                    DriverOutcome.FAILED,
                    f"injected failure: path to {action.target_symbol} blocked{where}, "
                    f"{s:.1f} m of {path.length:.1f} m walked",
                )
            if s >= path.length:
                return self.end(DriverOutcome.SUCCEEDED)
            if (ended := self._timed_out()) is not None:
                return ended

    def manipulate(
        self, action: PlanAction, duration_s: float, on_success: Callable[[PlanAction], None] | None
    ) -> StepOutcome:
        here = self.sim.pose()
        self._report(Pose(here.x, here.y, here.z, here.bearing_to(action.target)))  # turn to face the target
        give_up_at = duration_s * self.sim.config.fail_fraction if self.inject else math.inf
        while True:
            if (ended := self._tick()) is not None:
                return ended
            now = self._now()
            self._report(self.sim.pose())
            if now >= give_up_at:
                return self.end(
                    DriverOutcome.FAILED, f"injected failure: {action.name} of {action.target_symbol} did not succeed"
                )
            if now >= duration_s:
                if on_success is not None:
                    on_success(action)
                return self.end(DriverOutcome.SUCCEEDED)
            if (ended := self._timed_out()) is not None:
                return ended
