"""map->odom sources: the fixed one, message conversion and the staleness rule (TF itself: see test_spot_ros2)."""
from __future__ import annotations

import math

import pytest
from geometry_msgs.msg import Transform

from heracles_ros.errors import ExecutionError
from heracles_ros.execution import spot_commands as sc
from heracles_ros.execution.map_frame import FixedMapFrame, check_age, stamp_seconds, transform_from_msg


def test_a_fixed_map_frame_is_the_configured_transform():
    transform = sc.SE2Transform(x=1.0, y=2.0, yaw=0.5)
    source = FixedMapFrame(transform)
    assert source.current() is transform
    assert "fixed" in source.description


def test_a_transform_message_becomes_the_pose_of_odom_in_the_map():
    msg = Transform()
    msg.translation.x, msg.translation.y, msg.translation.z = 10.0, 5.0, 0.3
    msg.rotation.z, msg.rotation.w = math.sin(math.pi / 4), math.cos(math.pi / 4)
    transform = transform_from_msg(msg)
    assert (transform.x, transform.y, transform.yaw, transform.z) == pytest.approx((10.0, 5.0, math.pi / 2, 0.3))
    # A point 4 m ahead of odom's origin along odom's x lies 4 m north of (10, 5) in the map.
    assert transform.to_map((4.0, 0.0, 0.0)) == pytest.approx((10.0, 9.0, 0.3))


def test_a_transform_older_than_the_limit_is_stale():
    check_age(100.0, 104.9, 5.0, "map->odom")
    with pytest.raises(ExecutionError, match=r"map->odom transform is stale: last one is 6.0 s old \(limit 5 s\)"):
        check_age(100.0, 106.0, 5.0, "map->odom")
    check_age(0.0, 1e6, 0.0, "map->odom")  # 0: any age


def test_stamp_seconds():
    class Stamp:
        sec, nanosec = 12, 500_000_000

    assert stamp_seconds(Stamp()) == pytest.approx(12.5)
