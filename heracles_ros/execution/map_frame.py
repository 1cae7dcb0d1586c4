"""Where Spot's odom frame lies in the scene graph's map frame, right now.

Hydra builds the scene graph in its map frame and, after every backend update
(loop closures included), re-estimates map->odom and broadcasts it on TF. Spot
walks in its own odom (or vision) frame. So every goal and every arrival check
converts with the *latest* map->odom, and a missing or stale transform is a
clear :class:`ExecutionError` (a failed step), never a silently wrong goal.

Sources, behind one interface:

- :class:`Tf2MapFrame`: the transform from TF through tf2_ros (imported lazily,
  like spot_msgs: only the robot has it);
- :class:`FixedMapFrame`: a configured constant (``spot_map_to_frame``), for a
  scene graph built in the robot's odom frame or a map without Hydra's TF.
"""
from __future__ import annotations

import importlib
import time
from abc import ABC, abstractmethod
from typing import Any

from heracles_ros.errors import DriverError, ExecutionError
from heracles_ros.execution.spot_frames import SE2Transform, yaw_from_quaternion


class MapFrameSource(ABC):
    """The current pose of Spot's command frame in the map frame."""

    #: Short words for logs and errors ("TF map->spot/odom").
    description: str = ""

    @abstractmethod
    def current(self) -> SE2Transform:
        """The latest transform; ExecutionError naming the frames when it is missing or stale."""


class FixedMapFrame(MapFrameSource):
    """A configured transform that never changes."""

    def __init__(self, transform: SE2Transform):
        self.transform = transform
        self.description = f"fixed map_to_frame ({transform.x:g}, {transform.y:g}, {transform.yaw:g})"

    def current(self) -> SE2Transform:
        return self.transform


def transform_from_msg(transform: Any) -> SE2Transform:
    """A geometry_msgs/Transform (pose of the child frame in the parent), as the planar transform we use."""
    t, q = transform.translation, transform.rotation
    return SE2Transform(x=float(t.x), y=float(t.y), yaw=yaw_from_quaternion(q.x, q.y, q.z, q.w), z=float(t.z))


def check_age(stamp_s: float, now_s: float, max_age_s: float, what: str) -> None:
    """ExecutionError when a transform stamped ``stamp_s`` is older than ``max_age_s`` (0: any age)."""
    age = now_s - stamp_s
    if max_age_s > 0 and age > max_age_s:
        raise ExecutionError(
            f"the {what} transform is stale: last one is {age:.1f} s old (limit {max_age_s:g} s); "
            "is Hydra's backend still publishing TF?"
        )


def stamp_seconds(stamp: Any) -> float:
    """A builtin_interfaces/Time in seconds."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def check_fresh(stamp: Any, max_age_s: float, what: str) -> None:
    """:func:`check_age` of a message stamped ``stamp`` (builtin_interfaces/Time) against the wall clock now.

    Never the node's ROS clock: ``use_sim_time`` can be set from outside, and a
    simulated clock that stands still would make any transform look fresh.
    """
    check_age(stamp_seconds(stamp), time.time(), max_age_s, what)


class Tf2MapFrame(MapFrameSource):
    """map->odom from TF, through a tf2_ros buffer fed by the node's executor."""

    def __init__(self, node: Any, *, map_frame: str, odom_frame: str, max_age_s: float):
        try:
            tf2_ros = importlib.import_module("tf2_ros")
        except ImportError as exc:
            raise DriverError(
                f"tf2_ros is missing ({exc}): source a ROS 2 installation with tf2_ros, "
                "or set spot_map_frame_source:=fixed to use spot_map_to_frame"
            ) from exc
        self._tf2 = tf2_ros
        self._node = node
        self.map_frame, self.odom_frame, self.max_age_s = map_frame, odom_frame, max_age_s
        self.description = f"TF {map_frame}->{odom_frame}"
        self._buffer = tf2_ros.Buffer()
        self._listener = tf2_ros.TransformListener(self._buffer, node, spin_thread=False)

    def current(self) -> SE2Transform:
        from rclpy.time import Time

        what = f"{self.map_frame}->{self.odom_frame}"
        try:
            stamped = self._buffer.lookup_transform(self.map_frame, self.odom_frame, Time())
        except self._tf2.TransformException as exc:
            raise ExecutionError(f"no {what} transform on TF ({exc}); is Hydra's backend publishing TF?") from exc
        check_fresh(stamped.header.stamp, self.max_age_s, what)
        return transform_from_msg(stamped.transform)
