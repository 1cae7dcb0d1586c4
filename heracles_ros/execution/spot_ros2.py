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

import logging
import time
from collections.abc import Callable
from typing import Any

from heracles_ros.errors import ConfigError, DriverError, ExecutionError
from heracles_ros.execution.driver import CancelToken, FeedbackCallback, Pose, RobotDriver, StepOutcome
from heracles_ros.execution.map_frame import FixedMapFrame, MapFrameSource, Tf2MapFrame
from heracles_ros.execution.spot_config import SpotConfig
from heracles_ros.execution.spot_links import (
    CONVERSIONS_MODULE,
    Convert,
    SpotLinks,
    load_ros_interfaces,
    robot_namespace,
)
from heracles_ros.execution.spot_odometry import PoseTracker
from heracles_ros.execution.spot_step import Step
from heracles_ros.outcomes import DriverOutcome
from heracles_ros.plan_types import PlanAction

log = logging.getLogger(__name__)


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
        self.map_frame = map_frame or self._default_map_frame(node)
        self.odometry = PoseTracker(self.config.frame)
        self.links = SpotLinks(
            node, self.namespace, ros, convert or ros[CONVERSIONS_MODULE[0]].convert, self.odometry
        )
        self._services = self.links.services
        self._holding = holding
        self._started = False
        #: True while this adapter holds a lease it claimed itself (the only one it ever releases).
        self._claimed = False
        self._last_map_pose: Pose | None = None
        #: The execute() call running now, so that stop() can end it from any thread.
        self._running: Step | None = None

    def _default_map_frame(self, node: Any) -> MapFrameSource:
        cfg = self.config
        if cfg.map_frame_source == "fixed":
            return FixedMapFrame(cfg.map_to_frame)
        odom = cfg.tf_odom_frame or f"{self.namespace.strip('/')}/{cfg.frame}".lstrip("/")
        return Tf2MapFrame(node, map_frame=cfg.tf_map_frame, odom_frame=odom, max_age_s=cfg.map_frame_max_age_s)

    def _topic(self, name: str) -> str:
        return self.links.topic(name)

    @property
    def holding(self) -> str:
        """Symbol of the object in the gripper, "" when empty."""
        return self._holding

    def hold(self, symbol: str) -> None:
        """What the gripper holds now, as a step found it ("" once it let go)."""
        self._holding = symbol

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
        step = Step(self, cancel, timeout_s, feedback)
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
