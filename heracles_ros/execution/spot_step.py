"""One step of a plan on Spot (:meth:`SpotRos2Driver.execute`): its deadline and cancel token, the goals and
services it runs, and the walk, a stream of short-horizon commands renewed until the robot stands at its end.

Every way a step can end early (cancel, the step's own timeout, a goal over its budget, a refused or
unanswered command, odometry that stops) cancels what runs and calls the driver's ``stop``, so the robot
stands now rather than at a command's end time (module docstring of :mod:`heracles_ros.execution.spot_ros2`).
"""
from __future__ import annotations

import logging
import math
import time
from typing import Any, Protocol

from heracles_ros.errors import ExecutionError
from heracles_ros.execution import spot_commands as sc
from heracles_ros.execution.driver import CancelToken, FeedbackCallback, Pose, StepOutcome
from heracles_ros.execution.map_frame import MapFrameSource
from heracles_ros.execution.spot_config import SpotConfig
from heracles_ros.execution.spot_frames import SE2Transform
from heracles_ros.execution.spot_links import SpotLinks, cancel_if_accepted, done_event, status_name, wait_future
from heracles_ros.execution.spot_odometry import PoseTracker
from heracles_ros.outcomes import DriverOutcome
from heracles_ros.plan_types import PlanAction

log = logging.getLogger(__name__)


class StepHost(Protocol):
    """What a step needs of its driver (:class:`~heracles_ros.execution.spot_ros2.SpotRos2Driver`)."""

    config: SpotConfig
    links: SpotLinks
    odometry: PoseTracker
    map_frame: MapFrameSource

    @property
    def holding(self) -> str: ...

    def hold(self, symbol: str) -> None: ...

    def pose(self) -> Pose: ...

    def to_map(self, odom: Pose) -> Pose: ...


class Step:
    """One execute() call: its deadline, cancel token, feedback and the goals it runs."""

    def __init__(
        self, driver: StepHost, cancel: CancelToken, timeout_s: float, feedback: FeedbackCallback | None
    ):
        self.d = driver
        self.cfg = driver.config
        self.cancel = cancel
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s
        self.feedback = feedback
        self.reached = ""
        self._reported = driver.odometry.count
        #: Set by the driver's stop(), which calls spot_ros2's ``stop`` itself.
        self._halted = False

    def halt(self, reason: str) -> None:
        """End this step at its next tick (from any thread); the caller stops the robot."""
        self._halted = True
        self.cancel.cancel(reason)

    def end(self, outcome: DriverOutcome, reason: str = "") -> StepOutcome:
        self._report()
        return StepOutcome(outcome, self.d.pose(), reason, self.reached)

    def _report(self) -> None:
        count = self.d.odometry.count
        if self.feedback is not None and count != self._reported:
            self._reported = count
            self.feedback(self.d.pose())

    def _remaining(self) -> float:
        return max(0.0, self.deadline - time.monotonic())

    def _interrupted(self) -> StepOutcome | None:
        if self.cancel.cancelled:
            return self.end(DriverOutcome.CANCELLED, self.cancel.reason or "cancelled")
        if time.monotonic() > self.deadline:
            return self.end(DriverOutcome.TIMEOUT, f"step exceeded its {self.timeout_s:.1f} s limit")
        return None

    def _stop(self, handle: Any = None) -> str:
        """Cancel a running goal and stop the robot; a note for the reason if ``stop`` failed."""
        if handle is not None:
            handle.cancel_goal_async()
        if self._halted:
            return ""
        reply = self.d.links.services.call("stop", min(self.cfg.service_timeout_s, 3.0))
        if reply.ok:
            return ""
        log.warning("spot_ros2 stop failed: %s", reply.message)
        return f" (stop failed: {reply.message})"

    def _interrupt(self, handle: Any = None) -> StepOutcome | None:
        ended = self._interrupted()
        if ended is None:
            return None
        note = self._stop(handle)
        return StepOutcome(ended.outcome, ended.pose, ended.reason + note, ended.reached_symbol)

    def _map_frame(self, what: str) -> SE2Transform | StepOutcome:
        """The current map->odom, or the failed step's outcome naming why there is none."""
        try:
            return self.d.map_frame.current()
        except ExecutionError as exc:
            return self.end(DriverOutcome.FAILED, f"{what}: {exc}")

    def run_goal(
        self,
        client: Any,
        goal: Any,
        what: str,
        budget_s: float,
    ) -> StepOutcome | None:
        """Send one action goal and see it through: None on success, else the outcome ending the step."""
        if (ended := self._interrupt()) is not None:
            return ended
        accept_s = min(self.cfg.accept_timeout_s, self._remaining())
        if not client.server_is_ready() and not client.wait_for_server(timeout_sec=accept_s):
            return self.end(DriverOutcome.FAILED, f"{what}: action server not available within {accept_s:.1f} s")
        sent = client.send_goal_async(goal)
        if not wait_future(sent, accept_s, self.cancel, self.cfg.tick_s):
            # Cancel the goal should it be accepted after all, then make sure the robot stands still.
            sent.add_done_callback(cancel_if_accepted)
            ended = self._interrupt()
            if ended is not None:
                return ended
            return self.end(DriverOutcome.FAILED, f"{what}: goal not accepted within {accept_s:.1f} s{self._stop()}")
        handle = sent.result()
        if not handle.accepted:
            return self.end(DriverOutcome.FAILED, f"{what}: the driver rejected the goal")
        result = handle.get_result_async()
        done = done_event(result)
        budget_end = time.monotonic() + budget_s
        while not result.done():
            self._report()
            if (ended := self._interrupt(handle)) is not None:
                return ended
            if time.monotonic() > budget_end:
                return self.end(
                    DriverOutcome.FAILED,
                    f"{what} did not finish within {budget_s:.1f} s (blocked?){self._stop(handle)}",
                )
            done.wait(self.cfg.tick_s)
        response = result.result()
        reply = response.result
        if response.status == self.d.links.goal_status.STATUS_SUCCEEDED and reply.success:
            return None
        status = status_name(self.d.links.goal_status, response.status)
        return self.end(DriverOutcome.FAILED, f"{what} failed: {reply.message or 'goal ' + status}")

    def _trigger(self, service: str) -> StepOutcome | None:
        """Call a Trigger service within the step; None on success, else the outcome ending the step."""
        if (ended := self._interrupt()) is not None:
            return ended
        reply = self.d.links.services.call(service, min(self.cfg.arm_timeout_s, self._remaining()), self.cancel)
        if reply.ok:
            return None
        if (ended := self._interrupt()) is not None:
            return ended
        return self.end(DriverOutcome.FAILED, f"{service} failed: {reply.message}")

    def _pause(self, seconds: float) -> StepOutcome | None:
        self.cancel.wait(min(seconds, self._remaining()))
        return self._interrupt()

    # -- actions ---------------------------------------------------------------------------
    def walk(self, action: PlanAction) -> StepOutcome:
        """The path as a stream of short-horizon commands (:class:`_Walk`) until the robot stands at its end."""
        cfg = self.cfg
        what = f"walk to {action.target_symbol or 'the goal'}"
        transform = self._map_frame(what)
        if isinstance(transform, StepOutcome):
            return transform
        start = self.d.pose()
        path, self.reached = sc.walk_path(
            start, action, skip_within_m=cfg.waypoint_tolerance_m, speed_mps=cfg.expected_speed_mps
        )
        try:
            budget_s = sc.walk_time_budget(path[-1].time_s, cfg.walk_margin_s)
        except ExecutionError as exc:
            return self.end(DriverOutcome.FAILED, f"{what}: {exc}")
        if (ended := self._interrupt()) is not None:
            return ended
        client = self.d.links.walk_commands
        wait_s = min(cfg.accept_timeout_s, self._remaining())
        if not client.service_is_ready() and not client.wait_for_service(timeout_sec=wait_s):
            unavailable = f"the driver's robot_command service is not available within {wait_s:.1f} s"
            return self.end(DriverOutcome.FAILED, f"{what}: {unavailable}")
        return _Walk(self, start, path, what).run(budget_s)

    def inspect(self, action: PlanAction) -> StepOutcome:
        cfg = self.cfg
        what = f"gaze at {action.target_symbol}"
        transform = self._map_frame(what)
        if isinstance(transform, StepOutcome):
            return transform
        command = sc.inspect_command(self.d.pose(), action.target, frame=cfg.frame, map_to_frame=transform)
        links = self.d.links
        failed = self.run_goal(links.robot_command, links.command_goal(command), what, cfg.arm_timeout_s)
        if failed is not None:
            return failed
        if (ended := self._pause(cfg.inspect_dwell_s)) is not None:
            return ended
        # A held object is carried, not stowed.
        if (failed := self._trigger("arm_carry" if self.d.holding else "arm_stow")) is not None:
            return failed
        return self.end(DriverOutcome.SUCCEEDED)

    def pick(self, action: PlanAction) -> StepOutcome:
        cfg = self.cfg
        what = f"pick {action.target_symbol}"
        if self.d.holding:
            return self.end(
                DriverOutcome.FAILED, f"cannot pick {action.target_symbol}: already holding {self.d.holding}"
            )
        transform = self._map_frame(what)
        if isinstance(transform, StepOutcome):
            return transform
        request = sc.pick_request(
            self.d.pose(),
            action.target,
            frame=cfg.frame,
            map_to_frame=transform,
            ray_back_m=cfg.ray_back_m,
            ray_up_m=cfg.ray_up_m,
        )
        links = self.d.links
        failed = self.run_goal(links.manipulation, links.manipulation_goal(request), what, cfg.pick_timeout_s)
        if failed is not None:
            return failed
        self.d.hold(action.target_symbol)
        # The grasp is what the plan needs; an arm left out of the carry pose is only reported.
        failed = self._trigger("arm_carry")
        return self.end(DriverOutcome.SUCCEEDED, "" if failed is None else f"grasped, but {failed.reason}")

    def place(self, action: PlanAction) -> StepOutcome:
        cfg = self.cfg
        holding = self.d.holding
        if not holding:
            return self.end(DriverOutcome.FAILED, f"cannot place {action.target_symbol}: the gripper is empty")
        if action.target_symbol and action.target_symbol != holding:
            return self.end(DriverOutcome.FAILED, f"cannot place {action.target_symbol}: the gripper holds {holding}")
        transform = self._map_frame(f"place {holding}")
        if isinstance(transform, StepOutcome):
            return transform
        try:
            steps = sc.place_steps(
                self.d.pose(),
                action.target,
                frame=cfg.frame,
                map_to_frame=transform,
                min_reach_m=cfg.min_reach_m,
                max_reach_m=cfg.max_reach_m,
                hand_height_m=cfg.hand_height_m,
                release_pause_s=cfg.release_pause_s,
            )
        except ExecutionError as exc:
            return self.end(DriverOutcome.FAILED, f"cannot place {holding}: {exc}")
        for step in steps:
            ended: StepOutcome | None
            if isinstance(step, sc.CommandStep):
                ended = self.run_goal(
                    self.d.links.robot_command, self.d.links.command_goal(step.command), step.what, cfg.arm_timeout_s
                )
            elif isinstance(step, sc.TriggerStep):
                ended = self._trigger(step.service)
            else:
                ended = self._pause(step.seconds)
            if ended is not None:
                if self.d.holding:
                    return ended
                # Released already: the object is placed whatever the arm does next.
                return self.end(DriverOutcome.SUCCEEDED, f"placed {holding}, but {ended.reason}")
            if isinstance(step, sc.TriggerStep) and step.service == "open_gripper":
                self.d.hold("")
        return self.end(DriverOutcome.SUCCEEDED)


#: Seconds between walk commands; each keeps the robot moving for sc.COMMAND_HORIZON_S, so a few may be late or
#: lost before the robot stands, and a controller that stops sending leaves it standing within the horizon.
RENEW_EVERY_S = 0.25


class _Walk:
    """One goto: commands valid for :data:`~.spot_commands.COMMAND_HORIZON_S`, renewed until the robot arrives.

    Sent through spot_ros2's ``robot_command`` service, whose ``duration`` becomes
    the mobility command's end time: a newer command replaces the running one where
    the robot is (no stop, unlike the action's pre-emption), and when none comes
    the robot stands still at the end time. One command is in flight at a time;
    each carries the path still ahead from where odometry puts the robot. Arrival
    is judged on odometry, never assumed: the robot's latest pose within tolerance
    of the last point and its heading.
    """

    def __init__(self, step: Step, start: Pose, path: list[sc.PathPoint], what: str):
        self.step, self.start, self.path, self.what = step, start, path, what
        self.cfg = step.cfg
        self.driver = step.d
        #: Index of the first point not passed within the waypoint tolerance (the place reached so far).
        self.passed = 0
        #: Index of the point the robot walks toward (each command starts there); the odometry count looked at.
        self.toward = 0
        self.seen = self.driver.odometry.count
        self.pending: Any = None
        #: When the last command was sent, and when its trajectory reaches the walk's end.
        self.sent_at = self.finish_at = -math.inf

    def run(self, budget_s: float) -> StepOutcome:
        step, cfg = self.step, self.cfg
        budget_end = time.monotonic() + budget_s
        while True:
            step._report()
            self._track()
            if (ended := step._interrupted()) is not None:
                return self._stopped(ended.outcome, ended.reason)
            if problem := self._reply_problem():
                return self._stopped(DriverOutcome.FAILED, f"{self.what}: {problem}")
            here = self._pose()
            if here is not None and not self._off_goal(here):
                return self._arrived()
            now = time.monotonic()
            silent_s = now - self.driver.odometry.received_at
            if silent_s > cfg.pose_timeout_s:
                silent = f"no odometry for {silent_s:.1f} s while walking"
                return self._stopped(DriverOutcome.FAILED, f"{self.what}: {silent}")
            if now > budget_end:
                off = self._off_goal(here) if here is not None else "its pose is not known in the map frame"
                return self._stopped(
                    DriverOutcome.FAILED, f"{self.what} did not arrive within {budget_s:.1f} s (blocked?): {off}"
                )
            if self.pending is None and now - self.sent_at >= RENEW_EVERY_S and (problem := self._send()):
                return self._stopped(DriverOutcome.FAILED, f"{self.what}: {problem}")
            step.cancel.wait(cfg.tick_s)

    def _arrived(self) -> StepOutcome:
        """Within tolerance of the end: no more commands; the last one brings the robot onto the end point
        (within its horizon), and the step ends once it has, so the next step starts from a robot standing."""
        step = self.step
        step.reached = self.path[-1].symbol or step.reached
        settled = min(self.finish_at, self.sent_at + sc.COMMAND_HORIZON_S)
        if step.cancel.wait(settled - time.monotonic()):
            return self._stopped(DriverOutcome.CANCELLED, step.cancel.reason or "cancelled")
        return step.end(DriverOutcome.SUCCEEDED)

    def _stopped(self, outcome: DriverOutcome, reason: str) -> StepOutcome:
        """End the walk: no more commands, and spot_ros2's ``stop`` so the robot stands now, not at the end time."""
        if self.pending is not None:
            self.driver.links.walk_commands.remove_pending_request(self.pending)
        return self.step.end(outcome, reason + self.step._stop())

    def _track(self) -> None:
        """Mark the waypoints passed, from every odometry pose since the last look (none is skipped)."""
        poses, self.seen = self.driver.odometry.since(self.seen)
        try:
            map_to_frame = self.driver.map_frame.current()
        except ExecutionError:
            return  # no map->odom now: the next command or the arrival check says so if it lasts
        for odom in poses:
            pose = map_to_frame.pose_to_map(odom.x, odom.y, odom.z, odom.yaw)
            while self.passed < len(self.path) and (
                pose.distance_to(self.path[self.passed].target) <= self.cfg.waypoint_tolerance_m
            ):
                self.step.reached = self.path[self.passed].symbol or self.step.reached
                self.passed += 1
            self.toward = sc.heading_for(pose.position, self.start.position, self.path, self.toward)

    def _pose(self) -> Pose | None:
        odom = self.driver.odometry.latest()
        if odom is None:
            return None
        try:
            return self.driver.to_map(odom)
        except ExecutionError:
            return None

    def _off_goal(self, pose: Pose) -> str:
        """Why ``pose`` has not arrived at the walk's end ("" when it has)."""
        final, cfg = self.path[-1], self.cfg
        return sc.arrival_error(pose, final.target, cfg.arrival_tolerance_m, final.heading, cfg.yaw_tolerance_rad)

    def _send(self) -> str:
        """The next command, from where the robot is now; "" or why it cannot be sent."""
        odom = self.driver.odometry.latest()
        try:
            map_to_frame = self.driver.map_frame.current()
        except ExecutionError as exc:
            return str(exc)
        if odom is None:
            return "no odometry to start the walk from"
        here = map_to_frame.pose_to_map(odom.x, odom.y, odom.z, odom.yaw)
        ahead = sc.path_ahead(here, self.path[self.toward:], speed_mps=self.cfg.expected_speed_mps)
        command = sc.trajectory_command(
            ahead, frame=self.cfg.frame, map_to_frame=map_to_frame, max_speed_mps=self.cfg.max_speed_mps
        )
        request = self.driver.links.walk_request(command, sc.COMMAND_HORIZON_S)
        self.pending = self.driver.links.walk_commands.call_async(request)
        self.sent_at = time.monotonic()
        self.finish_at = self.sent_at + ahead[-1].time_s
        return ""

    def _reply_problem(self) -> str:
        """"" while the driver takes the commands; why not once it refuses one or leaves it unanswered too long."""
        pending = self.pending
        if pending is None:
            return ""
        if pending.done():
            self.pending = None
            reply = pending.result()
            return "" if reply.success else f"the driver refused the walk command: {reply.message}"
        if time.monotonic() - self.sent_at > self.cfg.accept_timeout_s:
            return f"the driver did not answer a walk command within {self.cfg.accept_timeout_s:g} s"
        return ""
