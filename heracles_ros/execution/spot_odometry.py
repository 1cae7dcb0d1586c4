"""Spot's body pose from the driver's odometry, in the frame its commands are given in.

A walk is judged on these poses, never on a clock: arrival needs a pose within tolerance, a waypoint counts as
passed when some pose since the last look came near it, and odometry that stops ends the walk.
"""
from __future__ import annotations

import math
import threading
import time
from collections import deque

from heracles_ros.execution.driver import Pose


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
