"""What the dispatcher shows of the robot: its pose on the latched ``robot_pose`` whenever it changed, and the
running plan's remaining path with the robot (its label, what it holds, a latched stop) on ``plan_markers``.

From the first moment a console or RViz looks, they see the robot the dispatcher works with: the state it started
from, then its moves. The markers are refreshed by the node's timer and at every step event.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Callable

from geometry_msgs.msg import PoseStamped
from rclpy.node import Node
from std_msgs.msg import Header

from heracles_ros.execution.driver import Pose
from heracles_ros.execution.plan_runner import PlanRunner
from heracles_ros.nodes.markers import MarkerBook, plan_markers, robot_markers
from heracles_ros.plan_types import PlanResult
from heracles_ros.ros import interfaces


class RobotView:
    """The robot's pose and the plan's markers for ``runner``'s robot, in ``frame``; ``stop_label()`` says how a
    latched stop is drawn ('' when none is on)."""

    def __init__(self, node: Node, runner: PlanRunner, *, frame: str, robot_symbol: str,
                 stop_label: Callable[[], str]):
        self.node = node
        self.runner = runner
        self.frame = frame
        self.robot_symbol = robot_symbol
        self._stop_label = stop_label
        #: The book's view and the publish order must agree: one lock over both.
        self._lock = threading.Lock()
        self._book = MarkerBook()
        #: The plan shown and the step it is at (None: no plan).
        self._view: tuple[PlanResult | None, int] = (None, 0)
        self._pose_sent: Pose | None = None
        self._pose_pub = interfaces.ROBOT_POSE.publisher(node)
        self._markers_pub = interfaces.PLAN_MARKERS.publisher(node)

    def show(self, plan: PlanResult | None, step_index: int) -> None:
        """Draw ``plan`` from ``step_index`` on (None: delete the plan's markers), now."""
        with self._lock:
            self._view = (plan, step_index)
        self.publish()

    def publish_pose(self) -> None:
        """The robot's pose on ``robot_pose``, when it changed since the last one sent."""
        pose = self.runner.pose()
        with self._lock:
            if pose == self._pose_sent:
                return
            self._pose_sent = pose
            msg = PoseStamped(header=Header(frame_id=self.frame, stamp=self.node.get_clock().now().to_msg()))
            msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = pose.position
            msg.pose.orientation.z, msg.pose.orientation.w = math.sin(pose.yaw / 2), math.cos(pose.yaw / 2)
            self._pose_pub.publish(msg)

    def publish(self) -> None:
        """The pose, and the markers of the plan shown and of the robot."""
        self.publish_pose()
        robot, pose = self.runner.robot, self.runner.pose()
        label = self.robot_symbol + (f" holding {robot.holding}" if robot.holding else "")
        stamp = self.node.get_clock().now().to_msg()
        stop = self._stop_label()
        with self._lock:
            plan, step = self._view
            markers = plan_markers(plan, step, pose.position, frame_id=self.frame, stamp=stamp)
            markers += robot_markers(pose, label=label, frame_id=self.frame, stamp=stamp, stop=stop)
            self._markers_pub.publish(self._book.update(markers))
