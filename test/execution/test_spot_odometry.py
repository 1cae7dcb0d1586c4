"""Odometry as the adapter reads it: only the command frame, only fresher stamps, every pose since a look."""
from __future__ import annotations

import threading
import time

import pytest

from heracles_ros.execution.spot_odometry import PoseTracker


def test_pose_tracker_keeps_odometry_in_the_command_frame():
    tracker = PoseTracker("odom")
    assert tracker.latest() is None
    tracker.update("spot/odom", 4.0, -2.0, 0.1, 0.5, 10.0)
    pose = tracker.latest()
    assert pose is not None
    assert (pose.x, pose.y, pose.z, pose.yaw) == pytest.approx((4.0, -2.0, 0.1, 0.5))
    assert tracker.count == 1


def test_pose_tracker_refuses_odometry_in_another_frame():
    tracker = PoseTracker("odom")
    tracker.update("spot/vision", 1.0, 2.0, 0.0, 0.0, 10.0)
    assert tracker.latest() is None
    assert "preferred_odom_frame" in tracker.frame_error
    assert "'spot/vision'" in tracker.frame_error


def test_pose_tracker_waits_for_a_fresh_message():
    tracker = PoseTracker("vision")
    tracker.update("vision", 0.0, 0.0, 0.0, 0.0, 10.0)
    seen = tracker.count
    started = time.monotonic()
    assert tracker.wait_newer(seen, 0.1) is None
    assert time.monotonic() - started >= 0.09
    timer = threading.Timer(0.05, tracker.update, args=("vision", 3.0, 4.0, 0.0, 1.0, 10.5))
    timer.start()
    pose = tracker.wait_newer(seen, 5.0)
    timer.join()
    assert pose is not None and (pose.x, pose.y, pose.yaw) == pytest.approx((3.0, 4.0, 1.0))


def test_pose_tracker_gives_back_every_pose_since_a_count_so_no_waypoint_passed_is_missed():
    tracker = PoseTracker("odom")
    tracker.update("spot/odom", 0.0, 0.0, 0.0, 0.0, 1.0)
    poses, seen = tracker.since(0)
    assert [p.x for p in poses] == [0.0] and seen == 1
    for i in range(1, 4):
        tracker.update("spot/odom", float(i), 0.0, 0.0, 0.0, 1.0 + i)
    poses, seen = tracker.since(seen)
    assert [p.x for p in poses] == [1.0, 2.0, 3.0] and seen == 4
    assert tracker.since(seen) == ([], 4)
    for i in range(PoseTracker.RECENT + 10):  # far more than a tick ever sees: the oldest are dropped
        tracker.update("spot/odom", 100.0 + i, 0.0, 0.0, 0.0, 10.0 + i)
    poses, _ = tracker.since(seen)
    assert len(poses) == PoseTracker.RECENT and poses[-1].x == 100.0 + PoseTracker.RECENT + 9


def test_pose_tracker_takes_no_repeated_or_reordered_message_for_a_fresh_one():
    tracker = PoseTracker("odom")
    tracker.update("spot/odom", 1.0, 0.0, 0.0, 0.0, 20.0)
    seen = tracker.count
    tracker.update("spot/odom", 9.0, 0.0, 0.0, 0.0, 19.5)  # published earlier, delivered late
    tracker.update("spot/odom", 9.0, 0.0, 0.0, 0.0, 20.0)  # the same stamp again
    assert tracker.count == seen
    assert tracker.wait_newer(seen, 0.05) is None
    latest = tracker.latest()
    assert latest is not None and latest.x == 1.0
