"""The adapter's links to a running spot_ros2 driver: the ROS packages they need, the Trigger services, the action
and service clients, the odometry subscription, and waiting on their futures from a worker thread.

Every call here is bounded on the client side: the driver's actions have no timeout of their own, and a
driver that is dead or slow must never hold up a stop (see :mod:`heracles_ros.execution.spot_ros2`).
rclpy and the message packages are imported only when links are made, so the library imports without ROS.
"""
from __future__ import annotations

import importlib
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from heracles_ros.errors import ConfigError, DriverError
from heracles_ros.execution.driver import CancelToken
from heracles_ros.execution.spot_frames import yaw_from_quaternion
from heracles_ros.execution.spot_odometry import PoseTracker

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

#: Converts a bosdyn proto into a ROS message in place (``bosdyn_msgs.conversions.convert``).
Convert = Callable[[Any, Any], Any]


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
def done_event(future: Any) -> threading.Event:
    event = threading.Event()
    future.add_done_callback(lambda _future: event.set())
    if future.done():
        event.set()
    return event


def wait_future(future: Any, timeout_s: float, cancel: CancelToken | None = None, tick_s: float = 0.05) -> bool:
    """Wait for an rclpy future; False on timeout or cancel. The executor spinning elsewhere completes it."""
    done = done_event(future)
    deadline = time.monotonic() + max(0.0, timeout_s)
    while not future.done():
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (cancel is not None and cancel.cancelled):
            return future.done()
        done.wait(min(tick_s, remaining))
    return True


def cancel_if_accepted(sent: Any) -> None:
    """Done-callback of a goal sent too late: cancel it should the driver have accepted it after all."""
    handle = sent.result()
    if handle is not None and handle.accepted:
        handle.cancel_goal_async()


def status_name(goal_status: Any, status: int) -> str:
    """``aborted`` for action_msgs/GoalStatus.STATUS_ABORTED and so on."""
    for attribute in dir(goal_status):
        if attribute.startswith("STATUS_") and getattr(goal_status, attribute) == status:
            return attribute.removeprefix("STATUS_").lower()
    return f"status {status}"


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


class SpotLinks:
    """The clients one adapter holds on a spot_ros2 driver (one reentrant callback group), and the goals and
    requests it sends through them, built from bosdyn protos."""

    def __init__(self, node: Any, namespace: str, ros: dict[str, Any], convert: Convert, odometry: PoseTracker):
        self.namespace = namespace
        self.goal_status = ros["action_msgs.msg"].GoalStatus
        self.convert = convert
        actions = ros["spot_msgs.action"]
        self._robot_command_action, self._manipulation_action = actions.RobotCommand, actions.Manipulation
        self._robot_command_service = ros["spot_msgs.srv"].RobotCommand
        group = importlib.import_module("rclpy.callback_groups").ReentrantCallbackGroup()
        self.services = TriggerServices(node, namespace, TRIGGER_SERVICES, callback_group=group)
        action_client = ros["rclpy.action"].ActionClient
        self.robot_command = action_client(
            node, self._robot_command_action, self.topic("robot_command"), callback_group=group
        )
        self.manipulation = action_client(
            node, self._manipulation_action, self.topic("manipulation"), callback_group=group
        )
        #: The robot_command SERVICE: the walks' command stream (docs/known-issues.md#spot-ros2-preemption).
        self.walk_commands = node.create_client(
            self._robot_command_service, self.topic("robot_command"), callback_group=group
        )
        self.odometry = odometry
        self._subscription = node.create_subscription(
            ros["nav_msgs.msg"].Odometry,
            self.topic("odometry"),
            self._on_odometry,
            importlib.import_module("rclpy.qos").qos_profile_sensor_data,
            callback_group=group,
        )

    def topic(self, name: str) -> str:
        return f"{self.namespace}/{name}"

    def command_goal(self, command: Any) -> Any:
        goal = self._robot_command_action.Goal()
        self.convert(command, goal.command)
        return goal

    def manipulation_goal(self, request: Any) -> Any:
        goal = self._manipulation_action.Goal()
        self.convert(request, goal.command)
        return goal

    def walk_request(self, command: Any, duration_s: float) -> Any:
        """A robot_command service request whose ``duration`` becomes the mobility command's end time."""
        request = self._robot_command_service.Request()
        self.convert(command, request.command)
        request.duration.sec, request.duration.nanosec = divmod(round(duration_s * 1e9), 10**9)
        return request

    def _on_odometry(self, msg: Any) -> None:
        position, q = msg.pose.pose.position, msg.pose.pose.orientation
        yaw = yaw_from_quaternion(q.x, q.y, q.z, q.w)
        stamp = msg.header.stamp
        stamp_s = float(stamp.sec) + float(stamp.nanosec) * 1e-9
        self.odometry.update(msg.header.frame_id, position.x, position.y, position.z, yaw, stamp_s)
