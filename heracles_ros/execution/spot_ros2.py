"""Spot through the bdaiinstitute ``spot_ros2`` driver, behind :class:`RobotDriver`.

The driver node (namespaced by ``spot_name``) offers std_srvs/Trigger services
(claim, power_on, stand, stop, sit, release, arm_stow, arm_carry,
open_gripper, close_gripper), the ``robot_command`` service and action and the
``manipulation`` action (bosdyn protos converted with ``bosdyn_msgs.conversions``)
and ``<spot_name>/odometry`` (nav_msgs/Odometry in its odom or vision frame).
What each action asks of Spot is built in :mod:`spot_commands`; this module
sends it and watches, with every wait bounded on the client side, because the
driver's actions have no timeout of their own.

A goto never hands the robot more than a second of walking: it is a stream of
SE2 trajectory commands through the ``robot_command`` SERVICE, each valid for
:data:`~.spot_commands.COMMAND_HORIZON_S` (its ``duration`` becomes the mobility
command's end time) and carrying the path still ahead, renewed every
:data:`RENEW_EVERY_S` while the robot walks (:class:`_Walk`). A newer command
replaces the running one where the robot is; the ``robot_command`` action is not
used for walks, because spot_ros2 stops the robot on every pre-emption of it and
runs its goals for 1e5 s (docs/known-issues.md#spot-ros2-preemption). So a
dispatcher that dies, hangs or loses the network leaves Spot standing within the
horizon. Commands are given in Spot's odom (or vision) frame, converted from the
scene graph's map frame with the latest map->odom (:mod:`map_frame`: TF from
Hydra, or a fixed transform when configured); a missing or stale transform
fails the step. Arrival is checked, not assumed: the latest odometry pose must
lie within tolerance of the goal. Cancel, a step timeout, a walk overrunning its
time budget, a refused or unanswered command and odometry that stops end the
walk *and* call ``stop``; :meth:`SpotRos2Driver.stop` (from any thread) ends the
running step the same way. Gazes, arm poses and grasps (turns on the spot and
arm motions that end at their targets) still go as action goals.

Power and lease: :meth:`start` claims the lease, powers on and stands (the
dispatcher calls it when the first plan starts, or at launch if configured);
a lease this adapter did not claim is never released, and a start that fails
half-way sits the robot down (if it stood) and releases what it claimed.

Threads: :meth:`start`, :meth:`execute` and :meth:`shutdown` block their calling
thread on futures that the node's executor completes, so they must run in a
worker thread while a (multi-threaded) executor spins the node elsewhere;
never call them from an executor callback.

rclpy, nav_msgs, spot_msgs, bosdyn_msgs (and tf2_ros, for the TF map frame)
are imported only when a driver is built, so the library imports without ROS;
a missing package is a :class:`DriverError` naming it and how to get it.
"""
from __future__ import annotations

import importlib
import logging
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import ConfigError, DriverError, ExecutionError
from heracles_ros.execution import spot_commands as sc
from heracles_ros.execution.driver import CancelToken, FeedbackCallback, Pose, RobotDriver, StepOutcome
from heracles_ros.execution.map_frame import FixedMapFrame, MapFrameSource, Tf2MapFrame
from heracles_ros.execution.spot_config import SpotConfig
from heracles_ros.execution.spot_frames import SE2Transform, yaw_from_quaternion
from heracles_ros.outcomes import DriverOutcome
from heracles_ros.plan_types import PlanAction

log = logging.getLogger(__name__)

SPOT_ROS2_HINT = (
    "build bdaiinstitute/spot_ros2 in your ROS 2 workspace (it brings spot_msgs and bosdyn_msgs) "
    "and source its install/setup.bash"
)

#: What the driver imports when it is built, and how to get each package.
REQUIRED_MODULES: tuple[tuple[str, str], ...] = (
    ("rclpy", "source a ROS 2 installation"),
    ("rclpy.action", "source a ROS 2 installation"),
    ("action_msgs.msg", "source a ROS 2 installation"),
    ("std_srvs.srv", "install ros-$ROS_DISTRO-std-srvs (wheel: ros-std-srvs)"),
    ("nav_msgs.msg", "install ros-$ROS_DISTRO-nav-msgs (wheel: ros-nav-msgs)"),
    ("spot_msgs.action", SPOT_ROS2_HINT),
    ("spot_msgs.srv", SPOT_ROS2_HINT),
)
#: Converts bosdyn protos into the driver's ROS goal messages (spot_ros2's proto2ros conversions).
CONVERSIONS_MODULE = ("bosdyn_msgs.conversions", SPOT_ROS2_HINT)

#: Trigger services of the spot_ros2 driver this adapter calls.
TRIGGER_SERVICES: tuple[str, ...] = (
    "claim",
    "release",
    "power_on",
    "stand",
    "sit",
    "stop",
    "estop/gentle",
    "arm_stow",
    "arm_carry",
    "open_gripper",
    "close_gripper",
)



_NAMESPACE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(/[A-Za-z_][A-Za-z0-9_]*)*")


def robot_namespace(spot_name: str) -> str:
    """Absolute ROS namespace of the driver ("/spot", or "" for none)."""
    name = spot_name.strip("/")
    if name and not _NAMESPACE.fullmatch(name):
        raise ConfigError(f"spot_name must be a ROS name like 'spot' or 'robots/spot1', got {spot_name!r}")
    return f"/{name}" if name else ""


def load_ros_interfaces(*, conversions: bool = True) -> dict[str, Any]:
    """Import the ROS packages the adapter needs; DriverError naming every missing one."""
    modules: dict[str, Any] = {}
    missing: list[str] = []
    for module, hint in (*REQUIRED_MODULES, *([CONVERSIONS_MODULE] if conversions else [])):
        try:
            modules[module] = importlib.import_module(module)
        except ImportError as exc:
            missing.append(f"{module} is missing ({exc}): {hint}")
    if missing:
        raise DriverError("the spot_ros2 driver cannot be used: " + "; ".join(missing))
    return modules


# --- waiting on rclpy futures from a worker thread -----------------------------------------
def _done_event(future: Any) -> threading.Event:
    event = threading.Event()
    future.add_done_callback(lambda _future: event.set())
    if future.done():
        event.set()
    return event


def wait_future(future: Any, timeout_s: float, cancel: CancelToken | None = None, tick_s: float = 0.05) -> bool:
    """Wait for an rclpy future; False on timeout or cancel. The executor spinning elsewhere completes it."""
    done = _done_event(future)
    deadline = time.monotonic() + max(0.0, timeout_s)
    while not future.done():
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (cancel is not None and cancel.cancelled):
            return future.done()
        done.wait(min(tick_s, remaining))
    return True


@dataclass(frozen=True)
class TriggerReply:
    ok: bool
    message: str


class TriggerServices:
    """Clients of the driver's std_srvs/Trigger services, each call bounded by a timeout."""

    def __init__(self, node: Any, namespace: str, names: Sequence[str], *, callback_group: Any = None):
        from std_srvs.srv import Trigger

        self._request = Trigger.Request
        self._clients = {
            name: node.create_client(Trigger, f"{namespace}/{name}", callback_group=callback_group) for name in names
        }

    def name_of(self, service: str) -> str:
        return str(self._clients[service].srv_name)

    def call(self, service: str, timeout_s: float, cancel: CancelToken | None = None) -> TriggerReply:
        """Call ``service``; a failed reply (never an exception) when absent, slow, refused or cancelled."""
        client = self._clients[service]
        deadline = time.monotonic() + timeout_s
        if not client.service_is_ready() and not client.wait_for_service(timeout_sec=timeout_s):
            return TriggerReply(False, f"service {client.srv_name} is not available (waited {timeout_s:g} s)")
        future = client.call_async(self._request())
        if not wait_future(future, deadline - time.monotonic(), cancel):
            client.remove_pending_request(future)
            if cancel is not None and cancel.cancelled:
                return TriggerReply(False, f"service {client.srv_name} call cancelled: {cancel.reason or 'cancelled'}")
            return TriggerReply(False, f"service {client.srv_name} did not answer within {timeout_s:g} s")
        response = future.result()
        return TriggerReply(bool(response.success), str(response.message))


# --- odometry -----------------------------------------------------------------------------
class PoseTracker:
    """Latest body pose from odometry, in Spot's command frame; waits for a message newer than a count.

    Only a message stamped later than the latest one counts: a repeated or
    reordered old message (DDS delivers topics independently) never passes for
    a fresh pose.
    """

    #: How many recent poses :meth:`since` can give back (seconds of odometry at Spot's rates).
    RECENT = 512

    def __init__(self, frame: str):
        self.frame = frame
        self._changed = threading.Condition()
        self._pose: Pose | None = None
        self._recent: deque[tuple[int, Pose]] = deque(maxlen=self.RECENT)
        self._stamp_s = -math.inf
        self._count = 0
        self._received_at = -math.inf
        self.frame_error = ""

    def update(self, frame_id: str, x: float, y: float, z: float, yaw: float, stamp_s: float) -> None:
        """One odometry message (pose in ``frame_id``, e.g. "spot/odom"); other frames and old stamps are refused."""
        with self._changed:
            if frame_id.rsplit("/", 1)[-1] != self.frame:
                self.frame_error = (
                    f"odometry is in frame {frame_id!r} but goals are sent in {self.frame!r}: set the spot_ros2 "
                    f"driver's preferred_odom_frame and this adapter's frame to the same frame"
                )
                return
            if stamp_s <= self._stamp_s:
                return
            self._pose, self._stamp_s = Pose(x, y, z, yaw), stamp_s
            self._received_at = time.monotonic()
            self._count += 1
            self._recent.append((self._count, self._pose))
            self._changed.notify_all()

    @property
    def count(self) -> int:
        with self._changed:
            return self._count

    def latest(self) -> Pose | None:
        with self._changed:
            return self._pose

    @property
    def received_at(self) -> float:
        """``time.monotonic()`` when the latest pose arrived (-inf before the first)."""
        with self._changed:
            return self._received_at

    def since(self, count: int) -> tuple[list[Pose], int]:
        """Every pose received after the first ``count`` (the last :attr:`RECENT` at most), and the new count."""
        with self._changed:
            return [pose for number, pose in self._recent if number > count], self._count

    def wait_newer(self, count: int, timeout_s: float) -> Pose | None:
        """The pose once more than ``count`` messages have arrived; None after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._changed:
            while self._count <= count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._changed.wait(remaining)
            return self._pose


# --- the driver ---------------------------------------------------------------------------
#: Converts a bosdyn proto into a ROS message in place (``bosdyn_msgs.conversions.convert``).
Convert = Callable[[Any, Any], Any]


class SpotRos2Driver(RobotDriver):
    """Carries out plan actions on Spot through a running spot_ros2 driver."""

    name = "spot_ros2"

    def __init__(
        self,
        node: Any,
        *,
        spot_name: str = "",
        config: SpotConfig | None = None,
        holding: str = "",
        map_frame: MapFrameSource | None = None,
        convert: Convert | None = None,
    ):
        self.config = config or SpotConfig()
        self.namespace = robot_namespace(spot_name)
        if node is None:
            raise ConfigError("the spot_ros2 driver needs the rclpy node it runs in (node=...)")
        ros = load_ros_interfaces(conversions=convert is None)
        self._goal_status = ros["action_msgs.msg"].GoalStatus
        self._convert: Convert = convert or ros[CONVERSIONS_MODULE[0]].convert
        actions = ros["spot_msgs.action"]
        self._RobotCommand = actions.RobotCommand
        self._Manipulation = actions.Manipulation
        self.map_frame = map_frame or self._default_map_frame(node)
        group = importlib.import_module("rclpy.callback_groups").ReentrantCallbackGroup()
        self._node = node
        self._services = TriggerServices(node, self.namespace, TRIGGER_SERVICES, callback_group=group)
        action_client = ros["rclpy.action"].ActionClient
        self._robot_command = action_client(
            node, self._RobotCommand, self._topic("robot_command"), callback_group=group
        )
        self._manipulation = action_client(node, self._Manipulation, self._topic("manipulation"), callback_group=group)
        self._RobotCommandService = ros["spot_msgs.srv"].RobotCommand
        self._walk_commands = node.create_client(
            self._RobotCommandService, self._topic("robot_command"), callback_group=group
        )
        self.odometry = PoseTracker(self.config.frame)
        self._subscription = node.create_subscription(
            ros["nav_msgs.msg"].Odometry,
            self._topic("odometry"),
            self._on_odometry,
            importlib.import_module("rclpy.qos").qos_profile_sensor_data,
            callback_group=group,
        )
        self._holding = holding
        self._started = False
        #: True while this adapter holds a lease it claimed itself (the only one it ever releases).
        self._claimed = False
        self._last_map_pose: Pose | None = None
        #: The execute() call running now, so that stop() can end it from any thread.
        self._running: _Step | None = None

    def _default_map_frame(self, node: Any) -> MapFrameSource:
        cfg = self.config
        if cfg.map_frame_source == "fixed":
            return FixedMapFrame(cfg.map_to_frame)
        odom = cfg.tf_odom_frame or f"{self.namespace.strip('/')}/{cfg.frame}".lstrip("/")
        return Tf2MapFrame(node, map_frame=cfg.tf_map_frame, odom_frame=odom, max_age_s=cfg.map_frame_max_age_s)

    def _topic(self, name: str) -> str:
        return f"{self.namespace}/{name}"

    def _on_odometry(self, msg: Any) -> None:
        position, q = msg.pose.pose.position, msg.pose.pose.orientation
        yaw = yaw_from_quaternion(q.x, q.y, q.z, q.w)
        stamp = msg.header.stamp
        stamp_s = float(stamp.sec) + float(stamp.nanosec) * 1e-9
        self.odometry.update(msg.header.frame_id, position.x, position.y, position.z, yaw, stamp_s)

    @property
    def holding(self) -> str:
        """Symbol of the object in the gripper, "" when empty."""
        return self._holding

    @property
    def claimed(self) -> bool:
        """Whether this adapter holds the lease it claimed."""
        return self._claimed

    # -- RobotDriver -------------------------------------------------------------------------
    def start(self) -> None:
        """Claim the lease, power on and stand; DriverError if any of it fails or no odometry arrives.

        A failure half-way leaves nothing behind: a robot that stood is sat down,
        and the lease this call claimed is released.
        """
        if self._started:
            return
        cfg = self.config
        reply = self._services.call("claim", cfg.service_timeout_s)
        if not reply.ok:
            raise DriverError(f"spot_ros2 claim failed: {reply.message}")
        self._claimed = True
        for service, timeout in (("power_on", cfg.power_on_timeout_s), ("stand", cfg.service_timeout_s)):
            reply = self._services.call(service, timeout)
            if not reply.ok:
                self._undo_start(stood=False)
                raise DriverError(f"spot_ros2 {service} failed: {reply.message}")
        if self.odometry.wait_newer(0, cfg.pose_timeout_s) is None:
            self._undo_start(stood=True)  # do not leave a standing robot nobody commands
            raise DriverError(
                self.odometry.frame_error
                or f"no odometry on {self._topic('odometry')} within {cfg.pose_timeout_s:g} s"
            )
        self._started = True
        log.info("spot_ros2 driver %s claimed, powered on and standing", self.namespace or "/")

    def _undo_start(self, *, stood: bool) -> None:
        for service in (["sit"] if stood else []) + ["release"]:
            reply = self._services.call(service, self.config.service_timeout_s)
            if not reply.ok:
                log.warning("spot_ros2 %s after a failed start failed: %s", service, reply.message)
        self._claimed = False

    def shutdown(self) -> None:
        """Stop (ending any running step), sit (if configured), then release the lease this adapter claimed.

        Each call is bounded by ``service_timeout_s``; failures are logged and the
        next call is still made, so a dead driver delays shutdown but never blocks it.
        """
        if not self._started:
            return
        self._started = False
        self.stop()
        services = [*(["sit"] if self.config.sit_on_shutdown else []), *(["release"] if self._claimed else [])]
        for service in services:
            reply = self._services.call(service, self.config.service_timeout_s)
            if not reply.ok:
                log.warning("spot_ros2 %s at shutdown failed: %s", service, reply.message)
        self._claimed = False

    def stop(self, *, hard: bool = False) -> None:
        """End the running step, then spot_ros2's ``stop`` (``hard``: its gentle e-stop ``estop/gentle`` after it).

        The running step cancels its goal and returns CANCELLED at its next tick
        whatever the driver does; each service call is bounded by ``service_timeout_s``
        and a failed ``stop`` does not keep the e-stop from being tried.
        """
        running = self._running
        if running is not None:
            running.halt("stopped" + (" (hard)" if hard else ""))
        for service in ["stop", *(["estop/gentle"] if hard else [])]:
            reply = self._services.call(service, self.config.service_timeout_s)
            if not reply.ok:
                log.warning("spot_ros2 %s failed: %s", service, reply.message)

    def pose(self) -> Pose:
        """Odometry in the map frame (latest map->odom); the last such pose while the transform is missing."""
        odom = self.odometry.latest()
        if odom is None:
            raise DriverError(
                self.odometry.frame_error or f"no odometry received yet on {self._topic('odometry')} (call start())"
            )
        try:
            return self.to_map(odom)
        except ExecutionError as exc:
            if self._last_map_pose is None:
                raise DriverError(f"robot pose unknown in the map frame: {exc}") from exc
            return self._last_map_pose

    def to_map(self, odom: Pose) -> Pose:
        """A pose in Spot's command frame, in the map frame; ExecutionError without a current map->odom."""
        pose = self.map_frame.current().pose_to_map(odom.x, odom.y, odom.z, odom.yaw)
        self._last_map_pose = pose
        return pose

    def nominal_speed_mps(self) -> float:
        """The speed walk trajectories are timed for (``expected_speed_mps``), under the limit sent with them."""
        cfg = self.config
        return min(cfg.expected_speed_mps, cfg.max_speed_mps) if cfg.max_speed_mps > 0 else cfg.expected_speed_mps

    def wait_pose(self, timeout_s: float) -> Pose | None:
        """The real pose in the map frame once odometry (and map->odom) is there; None after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        odom = self.odometry.wait_newer(0, timeout_s)
        while odom is not None:
            try:
                return self.to_map(self.odometry.latest() or odom)
            except ExecutionError as exc:
                if time.monotonic() >= deadline:
                    log.warning("robot pose unknown in the map frame: %s", exc)
                    return None
                time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        return None

    def execute(
        self,
        action: PlanAction,
        *,
        cancel: CancelToken,
        timeout_s: float,
        feedback: FeedbackCallback | None = None,
    ) -> StepOutcome:
        if not self._started:
            raise DriverError("spot_ros2 driver used before start()")
        step = _Step(self, cancel, timeout_s, feedback)
        handlers: dict[str, Callable[[PlanAction], StepOutcome]] = {
            "goto": step.walk,
            "inspect": step.inspect,
            "pick": step.pick,
            "place": step.place,
        }
        handler = handlers.get(action.name)
        if handler is None:
            return step.end(DriverOutcome.FAILED, f"spot_ros2 driver cannot execute unknown action {action.name!r}")
        self._running = step
        try:
            return handler(action)
        finally:
            self._running = None

    # -- used by _Step ---------------------------------------------------------------------
    def _command_goal(self, command: Any) -> Any:
        goal = self._RobotCommand.Goal()
        self._convert(command, goal.command)
        return goal

    def _manipulation_goal(self, request: Any) -> Any:
        goal = self._Manipulation.Goal()
        self._convert(request, goal.command)
        return goal


def _cancel_if_accepted(sent: Any) -> None:
    handle = sent.result()
    if handle is not None and handle.accepted:
        handle.cancel_goal_async()


class _Step:
    """One execute() call: its deadline, cancel token, feedback and the goals it runs."""

    def __init__(
        self, driver: SpotRos2Driver, cancel: CancelToken, timeout_s: float, feedback: FeedbackCallback | None
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
        reply = self.d._services.call("stop", min(self.cfg.service_timeout_s, 3.0))
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
            sent.add_done_callback(_cancel_if_accepted)
            ended = self._interrupt()
            if ended is not None:
                return ended
            return self.end(DriverOutcome.FAILED, f"{what}: goal not accepted within {accept_s:.1f} s{self._stop()}")
        handle = sent.result()
        if not handle.accepted:
            return self.end(DriverOutcome.FAILED, f"{what}: the driver rejected the goal")
        result = handle.get_result_async()
        done = _done_event(result)
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
        if response.status == self.d._goal_status.STATUS_SUCCEEDED and reply.success:
            return None
        status = _status_name(self.d._goal_status, response.status)
        return self.end(DriverOutcome.FAILED, f"{what} failed: {reply.message or 'goal ' + status}")

    def _trigger(self, service: str) -> StepOutcome | None:
        """Call a Trigger service within the step; None on success, else the outcome ending the step."""
        if (ended := self._interrupt()) is not None:
            return ended
        reply = self.d._services.call(service, min(self.cfg.arm_timeout_s, self._remaining()), self.cancel)
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
        client = self.d._walk_commands
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
        failed = self.run_goal(self.d._robot_command, self.d._command_goal(command), what, cfg.arm_timeout_s)
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
        failed = self.run_goal(self.d._manipulation, self.d._manipulation_goal(request), what, cfg.pick_timeout_s)
        if failed is not None:
            return failed
        self.d._holding = action.target_symbol
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
                    self.d._robot_command, self.d._command_goal(step.command), step.what, cfg.arm_timeout_s
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
                self.d._holding = ""
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

    def __init__(self, step: _Step, start: Pose, path: list[sc.PathPoint], what: str):
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
            self.driver._walk_commands.remove_pending_request(self.pending)
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
        request = self.driver._RobotCommandService.Request()
        self.driver._convert(command, request.command)
        request.duration.sec, request.duration.nanosec = divmod(round(sc.COMMAND_HORIZON_S * 1e9), 10**9)
        self.pending = self.driver._walk_commands.call_async(request)
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


def _status_name(goal_status: Any, status: int) -> str:
    """``aborted`` for action_msgs/GoalStatus.STATUS_ABORTED and so on."""
    for attribute in dir(goal_status):
        if attribute.startswith("STATUS_") and getattr(goal_status, attribute) == status:
            return attribute.removeprefix("STATUS_").lower()
    return f"status {status}"
